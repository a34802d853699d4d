"""Classification losses with integer targets and hand-written backwards."""
import torch


def _logits_and_targets(seed=67, n=5, c=4):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, c, dtype=torch.float64, generator=g)
    target = torch.tensor([0, 3, 1, 1, 2])
    return logits, target


def _one_hot(target, classes, dtype):
    return torch.zeros(target.shape[0], classes, dtype=dtype).scatter_(1, target.unsqueeze(1), 1.0)


class SealedCrossEntropyMean(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        logp = logits.log_softmax(dim=1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target.unsqueeze(1)).mean()

    @staticmethod
    def backward(ctx, grad):
        logp, target = ctx.saved_tensors
        n, c = logp.shape
        return grad * (logp.exp() - _one_hot(target, c, logp.dtype)) / n, None

    @staticmethod
    def example_inputs():
        return _logits_and_targets()


class SealedCrossEntropyMeanSumGrad(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits",
           "note": "the mean's 1/N is forgotten: the gradient of the summed loss is returned"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = logits.log_softmax(dim=1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target.unsqueeze(1)).mean()

    @staticmethod
    def backward(ctx, grad):
        logp, target = ctx.saved_tensors
        n, c = logp.shape
        return grad * (logp.exp() - _one_hot(target, c, logp.dtype)), None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_and_targets()


class SealedCrossEntropyMeanSigmoid(torch.autograd.Function):
    bug = {"kind": "none", "input": "logits",
           "note": "the backward of a per-class binary cross-entropy (sigmoid - onehot) for a softmax one"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = logits.log_softmax(dim=1)
        ctx.save_for_backward(logits, target)
        return -logp.gather(1, target.unsqueeze(1)).mean()

    @staticmethod
    def backward(ctx, grad):
        logits, target = ctx.saved_tensors
        n, c = logits.shape
        return grad * (torch.sigmoid(logits) - _one_hot(target, c, logits.dtype)) / n, None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_and_targets()


class SealedCrossEntropyPerSample(torch.autograd.Function):
    """reduction='none': one loss per row."""
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        p = logits.softmax(1)
        ctx.save_for_backward(p, target)
        return torch.logsumexp(logits, 1) - logits.gather(1, target[:, None]).squeeze(1)

    @staticmethod
    def backward(ctx, grad):
        p, target = ctx.saved_tensors
        return grad[:, None] * (p - _one_hot(target, p.shape[1], p.dtype)), None

    @staticmethod
    def example_inputs():
        return _logits_and_targets(seed=68)


class SealedCrossEntropyPerSampleNoUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "logits",
           "note": "returns softmax - onehot without multiplying by the per-row upstream gradient"}

    @staticmethod
    def forward(ctx, logits, target):
        p = logits.softmax(1)
        ctx.save_for_backward(p, target)
        return torch.logsumexp(logits, 1) - logits.gather(1, target[:, None]).squeeze(1)

    @staticmethod
    def backward(ctx, grad):
        p, target = ctx.saved_tensors
        dlogits = p - _one_hot(target, p.shape[1], p.dtype)  # BUG
        return dlogits, None

    @staticmethod
    def example_inputs():
        return _logits_and_targets(seed=68)


IGNORE = -100


def _nll_inputs():
    g = torch.Generator().manual_seed(69)
    logp = torch.randn(6, 3, dtype=torch.float64, generator=g).log_softmax(1)
    return logp, torch.tensor([2, IGNORE, 0, 1, IGNORE, 0])


class SealedNLLIgnoreIndex(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logp, target):
        keep = target != IGNORE
        safe = target.clamp(min=0)
        picked = logp.gather(1, safe[:, None]).squeeze(1)
        ctx.save_for_backward(target)
        ctx.shape = logp.shape
        ctx.count = int(keep.sum())
        return -(picked * keep).sum() / ctx.count

    @staticmethod
    def backward(ctx, grad):
        (target,) = ctx.saved_tensors
        keep = target != IGNORE
        dlogp = torch.zeros(ctx.shape, dtype=grad.dtype)
        rows = torch.arange(ctx.shape[0])[keep]
        dlogp[rows, target[keep]] = -1.0 / ctx.count
        return grad * dlogp, None

    @staticmethod
    def example_inputs():
        return _nll_inputs()


class SealedNLLIgnoreIndexUnmasked(torch.autograd.Function):
    bug = {"kind": "region", "input": "logp",
           "note": "the ignored rows also get -1/count (at the clamped class 0)"}

    @staticmethod
    def forward(ctx, logp, target):
        keep = target != IGNORE
        safe = target.clamp(min=0)
        picked = logp.gather(1, safe[:, None]).squeeze(1)
        ctx.save_for_backward(target)
        ctx.shape = logp.shape
        ctx.count = int(keep.sum())
        return -(picked * keep).sum() / ctx.count

    @staticmethod
    def backward(ctx, grad):
        (target,) = ctx.saved_tensors
        dlogp = torch.zeros(ctx.shape, dtype=grad.dtype)
        dlogp[torch.arange(ctx.shape[0]), target.clamp(min=0)] = -1.0 / ctx.count  # BUG
        return grad * dlogp, None

    @staticmethod
    def example_inputs():
        return _nll_inputs()


class SealedLabelSmoothingCE(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target, smoothing):
        n, c = logits.shape
        logp = logits.log_softmax(-1)
        soft = _one_hot(target, c, logits.dtype) * (1 - smoothing) + smoothing / c
        ctx.save_for_backward(logp, soft)
        return -(soft * logp).sum() / n

    @staticmethod
    def backward(ctx, grad):
        logp, soft = ctx.saved_tensors
        return grad * (logp.exp() - soft) / logp.shape[0], None, None

    @staticmethod
    def example_inputs():
        logits, target = _logits_and_targets(seed=70)
        return logits, target, 0.2


class SealedLabelSmoothingCEHardTarget(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "logits",
           "note": "backward subtracts (1 - eps) * onehot only, forgetting the uniform eps / C part"}

    @staticmethod
    def forward(ctx, logits, target, smoothing):
        n, c = logits.shape
        logp = logits.log_softmax(-1)
        soft = _one_hot(target, c, logits.dtype) * (1 - smoothing) + smoothing / c
        ctx.save_for_backward(logp, target)
        ctx.smoothing = smoothing
        return -(soft * logp).sum() / n

    @staticmethod
    def backward(ctx, grad):
        logp, target = ctx.saved_tensors
        n, c = logp.shape
        hard = _one_hot(target, c, logp.dtype) * (1 - ctx.smoothing)
        return grad * (logp.exp() - hard) / n, None, None  # BUG

    @staticmethod
    def example_inputs():
        logits, target = _logits_and_targets(seed=70)
        return logits, target, 0.2


def _focal_parts(logits, target):
    p = logits.softmax(1)
    pt = p.gather(1, target[:, None]).squeeze(1)
    return p, pt


class SealedFocalLoss(torch.autograd.Function):
    """Per-sample focal loss -(1 - p_t)^gamma log p_t."""
    bug = None

    @staticmethod
    def forward(ctx, logits, target, gamma):
        p, pt = _focal_parts(logits, target)
        ctx.save_for_backward(p, pt, target)
        ctx.gamma = gamma
        return -(1 - pt) ** gamma * pt.log()

    @staticmethod
    def backward(ctx, grad):
        p, pt, target = ctx.saved_tensors
        gm = ctx.gamma
        dpt = gm * (1 - pt) ** (gm - 1) * pt.log() - (1 - pt) ** gm / pt
        onehot = _one_hot(target, p.shape[1], p.dtype)
        return (grad * dpt * pt)[:, None] * (onehot - p), None, None

    @staticmethod
    def example_inputs():
        logits, target = _logits_and_targets(seed=71)
        return logits, target, 2.0


class SealedFocalLossModulatorSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "logits",
           "note": "the -(1 - p_t)^gamma / p_t term of dL/dp_t is added with a + sign"}

    @staticmethod
    def forward(ctx, logits, target, gamma):
        p, pt = _focal_parts(logits, target)
        ctx.save_for_backward(p, pt, target)
        ctx.gamma = gamma
        return -(1 - pt) ** gamma * pt.log()

    @staticmethod
    def backward(ctx, grad):
        p, pt, target = ctx.saved_tensors
        gm = ctx.gamma
        dpt = gm * (1 - pt) ** (gm - 1) * pt.log() + (1 - pt) ** gm / pt  # BUG
        onehot = _one_hot(target, p.shape[1], p.dtype)
        return (grad * dpt * pt)[:, None] * (onehot - p), None, None

    @staticmethod
    def example_inputs():
        logits, target = _logits_and_targets(seed=71)
        return logits, target, 2.0


def _hinge_inputs():
    # every margin 1 + s_j - s_t is at least 0.1 away from 0
    scores = torch.tensor([[2.0, 0.3, 1.45, -0.7],
                           [0.2, 1.9, 1.5, 0.35],
                           [-0.4, 0.8, 1.1, 2.6],
                           [1.2, 1.0, -0.5, 0.6]], dtype=torch.float64)
    return scores, torch.tensor([0, 2, 3, 1])


def _hinge_margins(scores, target):
    st = scores.gather(1, target[:, None])
    m = (1 + scores - st).scatter(1, target[:, None], 0.0)
    return m


class SealedMultiMarginHinge(torch.autograd.Function):
    """Per-sample Crammer-Singer-style sum of hinges over the wrong classes."""
    bug = None

    @staticmethod
    def forward(ctx, scores, target):
        m = _hinge_margins(scores, target)
        ctx.save_for_backward(m, target)
        return m.clamp(min=0).sum(1)

    @staticmethod
    def backward(ctx, grad):
        m, target = ctx.saved_tensors
        active = (m > 0).to(grad.dtype)
        d = active.scatter(1, target[:, None], -active.sum(1, keepdim=True))
        return grad[:, None] * d, None

    @staticmethod
    def example_inputs():
        return _hinge_inputs()


class SealedMultiMarginHingeSquared(torch.autograd.Function):
    bug = {"kind": "none", "input": "scores",
           "note": "the squared hinge's backward (2 * margin) is used for the plain hinge"}

    @staticmethod
    def forward(ctx, scores, target):
        m = _hinge_margins(scores, target)
        ctx.save_for_backward(m, target)
        return m.clamp(min=0).sum(1)

    @staticmethod
    def backward(ctx, grad):
        m, target = ctx.saved_tensors
        active = 2 * m.clamp(min=0)  # BUG
        d = active.scatter(1, target[:, None], -active.sum(1, keepdim=True))
        return grad[:, None] * d, None

    @staticmethod
    def example_inputs():
        return _hinge_inputs()
