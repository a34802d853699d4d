"""Classification losses with integer targets and hand-written backward passes (plain torch).

Cross-entropy (mean and per-sample), weighted NLL, multi-class focal loss and label smoothing.
Blind corpus: see README.md.
"""
import torch
import torch.nn.functional as F

CLASSES = 5


def _logits_targets(seed=41, n=4):
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, CLASSES, generator=gen, dtype=torch.float64)
    target = torch.tensor([1, 4, 0, 2][:n] + [3] * max(0, n - 4), dtype=torch.long)
    return logits, target


# ------------------------------------------------------------------- mean cross-entropy
class CrossEntropyMean(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).mean()

    @staticmethod
    def backward(ctx, grad_loss):
        logp, target = ctx.saved_tensors
        onehot = F.one_hot(target, logp.shape[1]).to(logp.dtype)
        return grad_loss * (logp.exp() - onehot) / logp.shape[0], None

    @staticmethod
    def example_inputs():
        return _logits_targets()


class CrossEntropyMeanMissingBatchDivide(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits",
           "note": "the loss is a batch mean but backward leaves out the 1/N"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).mean()

    @staticmethod
    def backward(ctx, grad_loss):
        logp, target = ctx.saved_tensors
        onehot = F.one_hot(target, logp.shape[1]).to(logp.dtype)
        return grad_loss * (logp.exp() - onehot), None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_targets()


class CrossEntropyMeanTargetMinusProb(torch.autograd.Function):
    bug = {"kind": "sign", "input": "logits",
           "note": "writes (onehot - softmax), the gradient of the log-likelihood, not of the loss"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).mean()

    @staticmethod
    def backward(ctx, grad_loss):
        logp, target = ctx.saved_tensors
        onehot = F.one_hot(target, logp.shape[1]).to(logp.dtype)
        return grad_loss * (onehot - logp.exp()) / logp.shape[0], None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_targets()


# --------------------------------------------------------------- per-sample cross-entropy
class CrossEntropyPerSample(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).squeeze(1)

    @staticmethod
    def backward(ctx, grad_loss):
        logp, target = ctx.saved_tensors
        onehot = F.one_hot(target, logp.shape[1]).to(logp.dtype)
        return grad_loss[:, None] * (logp.exp() - onehot), None

    @staticmethod
    def example_inputs():
        return _logits_targets(seed=42)


class CrossEntropyPerSampleIgnoresUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "logits",
           "note": "copied from the reduced version: the per-sample upstream gradient is never used"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).squeeze(1)

    @staticmethod
    def backward(ctx, grad_loss):
        logp, target = ctx.saved_tensors
        onehot = F.one_hot(target, logp.shape[1]).to(logp.dtype)
        return logp.exp() - onehot, None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_targets(seed=42)


# ------------------------------------------------------------------------- weighted NLL
def _nll_inputs():
    logits, target = _logits_targets(seed=43)
    logp = torch.log_softmax(logits, dim=1)
    weight = torch.tensor([0.5, 2.0, 1.0, 1.5, 0.8], dtype=torch.float64)
    # the class weights are constants: only logp requires grad
    return logp.requires_grad_(), target, weight


class WeightedNLL(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logp, target, weight):
        w = weight[target]
        ctx.save_for_backward(target, w)
        ctx.classes = logp.shape[1]
        return -(w * logp.gather(1, target[:, None]).squeeze(1)).sum() / w.sum()

    @staticmethod
    def backward(ctx, grad_loss):
        target, w = ctx.saved_tensors
        grad = torch.zeros(target.shape[0], ctx.classes, dtype=w.dtype)
        grad.scatter_(1, target[:, None], (-w / w.sum())[:, None])
        return grad * grad_loss, None, None

    @staticmethod
    def example_inputs():
        return _nll_inputs()


class WeightedNLLDividesByBatchSize(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logp",
           "note": "backward normalises by the batch size N instead of the sum of the target "
                   "weights that forward divides by"}

    @staticmethod
    def forward(ctx, logp, target, weight):
        w = weight[target]
        ctx.save_for_backward(target, w)
        ctx.classes = logp.shape[1]
        return -(w * logp.gather(1, target[:, None]).squeeze(1)).sum() / w.sum()

    @staticmethod
    def backward(ctx, grad_loss):
        target, w = ctx.saved_tensors
        grad = torch.zeros(target.shape[0], ctx.classes, dtype=w.dtype)
        grad.scatter_(1, target[:, None], (-w / target.shape[0])[:, None])  # BUG
        return grad * grad_loss, None, None

    @staticmethod
    def example_inputs():
        return _nll_inputs()


# --------------------------------------------------------------------------- focal loss
GAMMA = 2.0


def _focal_forward(ctx, logits, target):
    logp = torch.log_softmax(logits, dim=1)
    logpt = logp.gather(1, target[:, None]).squeeze(1)
    pt = logpt.exp()
    ctx.save_for_backward(logp, target, logpt, pt)
    return (-(1 - pt) ** GAMMA * logpt).sum()


class FocalLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        return _focal_forward(ctx, logits, target)

    @staticmethod
    def backward(ctx, grad_loss):
        logp, target, logpt, pt = ctx.saved_tensors
        # dL/dpt, then dpt/dz = pt (onehot - p)
        dl_dpt = GAMMA * (1 - pt) ** (GAMMA - 1) * logpt - (1 - pt) ** GAMMA / pt
        onehot = F.one_hot(target, logp.shape[1]).to(logp.dtype)
        return grad_loss * (dl_dpt * pt)[:, None] * (onehot - logp.exp()), None

    @staticmethod
    def example_inputs():
        return _logits_targets(seed=44)


class FocalLossModulatorHeldConstant(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "logits",
           "note": "the modulating factor (1-pt)^gamma is treated as a constant: the product "
                   "rule's term through it is gone"}

    @staticmethod
    def forward(ctx, logits, target):
        return _focal_forward(ctx, logits, target)

    @staticmethod
    def backward(ctx, grad_loss):
        logp, target, logpt, pt = ctx.saved_tensors
        dl_dpt = -(1 - pt) ** GAMMA / pt  # BUG
        onehot = F.one_hot(target, logp.shape[1]).to(logp.dtype)
        return grad_loss * (dl_dpt * pt)[:, None] * (onehot - logp.exp()), None

    @staticmethod
    def example_inputs():
        return _logits_targets(seed=44)


class FocalLossModulatorTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "logits",
           "note": "the term through the modulating factor gets the wrong sign (d(1-pt)/dpt = -1 "
                   "counted twice)"}

    @staticmethod
    def forward(ctx, logits, target):
        return _focal_forward(ctx, logits, target)

    @staticmethod
    def backward(ctx, grad_loss):
        logp, target, logpt, pt = ctx.saved_tensors
        dl_dpt = -GAMMA * (1 - pt) ** (GAMMA - 1) * logpt - (1 - pt) ** GAMMA / pt  # BUG
        onehot = F.one_hot(target, logp.shape[1]).to(logp.dtype)
        return grad_loss * (dl_dpt * pt)[:, None] * (onehot - logp.exp()), None

    @staticmethod
    def example_inputs():
        return _logits_targets(seed=44)


# ---------------------------------------------------------------------- label smoothing
SMOOTHING = 0.1


def _smoothed_forward(ctx, logits, target):
    classes = logits.shape[1]
    logp = torch.log_softmax(logits, dim=1)
    onehot = F.one_hot(target, classes).to(logits.dtype)
    soft = onehot * (1 - SMOOTHING) + SMOOTHING / classes
    ctx.save_for_backward(logp, onehot, soft)
    return -(soft * logp).sum(1).mean()


class LabelSmoothingCrossEntropy(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        return _smoothed_forward(ctx, logits, target)

    @staticmethod
    def backward(ctx, grad_loss):
        logp, onehot, soft = ctx.saved_tensors
        return grad_loss * (logp.exp() - soft) / logp.shape[0], None

    @staticmethod
    def example_inputs():
        return _logits_targets(seed=45)


class LabelSmoothingBackwardUsesHardTargets(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "logits",
           "note": "backward subtracts the hard one-hot targets, not the smoothed ones forward used"}

    @staticmethod
    def forward(ctx, logits, target):
        return _smoothed_forward(ctx, logits, target)

    @staticmethod
    def backward(ctx, grad_loss):
        logp, onehot, soft = ctx.saved_tensors
        return grad_loss * (logp.exp() - onehot) / logp.shape[0], None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_targets(seed=45)
