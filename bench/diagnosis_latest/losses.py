"""Losses with integer targets: cross-entropy, NLL with ignore_index, label smoothing, focal, hinge."""
import torch
import torch.nn.functional as F


def _ce_inputs():
    gen = torch.Generator().manual_seed(41)
    return (torch.randn(5, 4, dtype=torch.float64, generator=gen),
            torch.tensor([0, 3, 1, 0, 2]))


def _one_hot(target, classes, dtype):
    return F.one_hot(target, classes).to(dtype)


class LatestCrossEntropyMean(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        logp = logits.log_softmax(1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).mean()

    @staticmethod
    def backward(ctx, g):
        logp, target = ctx.saved_tensors
        grad = (logp.exp() - _one_hot(target, logp.shape[1], logp.dtype)) / logp.shape[0]
        return g * grad, None

    example_inputs = staticmethod(_ce_inputs)


class LatestCrossEntropyMeanNoBatchDivide(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits", "note": "forgets to divide by the batch size of the mean"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = logits.log_softmax(1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).mean()

    @staticmethod
    def backward(ctx, g):
        logp, target = ctx.saved_tensors
        grad = logp.exp() - _one_hot(target, logp.shape[1], logp.dtype)  # BUG
        return g * grad, None

    example_inputs = staticmethod(_ce_inputs)


class LatestCrossEntropyPerSample(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        logp = logits.log_softmax(1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).squeeze(1)

    @staticmethod
    def backward(ctx, g):
        logp, target = ctx.saved_tensors
        return g[:, None] * (logp.exp() - _one_hot(target, logp.shape[1], logp.dtype)), None

    example_inputs = staticmethod(_ce_inputs)


class LatestCrossEntropyPerSampleNoUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "logits",
           "note": "returns softmax - onehot without the per-sample upstream gradient"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = logits.log_softmax(1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).squeeze(1)

    @staticmethod
    def backward(ctx, g):
        logp, target = ctx.saved_tensors
        grad = logp.exp() - _one_hot(target, logp.shape[1], logp.dtype)  # BUG
        return grad, None

    example_inputs = staticmethod(_ce_inputs)


def _nll_inputs():
    gen = torch.Generator().manual_seed(42)
    logp = torch.randn(6, 4, dtype=torch.float64, generator=gen).log_softmax(1)
    return logp, torch.tensor([2, -100, 0, 1, 0, 3])


class LatestNLLIgnoreIndex(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logp, target):
        keep = target != -100
        safe = target.clamp_min(0)
        picked = logp.gather(1, safe[:, None]).squeeze(1)
        ctx.save_for_backward(keep, safe)
        ctx.count = int(keep.sum())
        ctx.shape = logp.shape
        return -(picked * keep).sum() / ctx.count

    @staticmethod
    def backward(ctx, g):
        keep, safe = ctx.saved_tensors
        grad = torch.zeros(ctx.shape, dtype=g.dtype)
        grad.scatter_(1, safe[:, None], -(keep.to(g.dtype) / ctx.count)[:, None])
        return grad * g, None

    example_inputs = staticmethod(_nll_inputs)


class LatestNLLIgnoreIndexPositiveMask(torch.autograd.Function):
    bug = {"kind": "region", "input": "logp",
           "note": "backward keeps rows with target > 0, dropping class 0 along with the ignored ones"}

    @staticmethod
    def forward(ctx, logp, target):
        keep = target != -100
        safe = target.clamp_min(0)
        picked = logp.gather(1, safe[:, None]).squeeze(1)
        ctx.save_for_backward(target, safe)
        ctx.count = int(keep.sum())
        ctx.shape = logp.shape
        return -(picked * keep).sum() / ctx.count

    @staticmethod
    def backward(ctx, g):
        target, safe = ctx.saved_tensors
        keep = target > 0  # BUG
        grad = torch.zeros(ctx.shape, dtype=g.dtype)
        grad.scatter_(1, safe[:, None], -(keep.to(g.dtype) / ctx.count)[:, None])
        return grad * g, None

    example_inputs = staticmethod(_nll_inputs)


class LatestNLLIgnoreIndexLogitsGrad(torch.autograd.Function):
    bug = {"kind": "none", "input": "logp",
           "note": "uses cross-entropy-on-logits' gradient exp(logp) - onehot for an NLL on log-probs"}

    @staticmethod
    def forward(ctx, logp, target):
        keep = target != -100
        safe = target.clamp_min(0)
        picked = logp.gather(1, safe[:, None]).squeeze(1)
        ctx.save_for_backward(logp, keep, safe)
        ctx.count = int(keep.sum())
        return -(picked * keep).sum() / ctx.count

    @staticmethod
    def backward(ctx, g):
        logp, keep, safe = ctx.saved_tensors
        onehot = _one_hot(safe, logp.shape[1], logp.dtype)
        grad = (logp.exp() - onehot) * keep[:, None] / ctx.count  # BUG
        return grad * g, None

    example_inputs = staticmethod(_nll_inputs)


def _smooth_inputs():
    logits, target = _ce_inputs()
    return logits, target, 0.1


class LatestLabelSmoothingCE(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target, smoothing):
        classes = logits.shape[1]
        q = _one_hot(target, classes, logits.dtype) * (1 - smoothing) + smoothing / classes
        logp = logits.log_softmax(1)
        ctx.save_for_backward(logp, q)
        return -(q * logp).sum(1)

    @staticmethod
    def backward(ctx, g):
        logp, q = ctx.saved_tensors
        return g[:, None] * (logp.exp() - q), None, None

    example_inputs = staticmethod(_smooth_inputs)


class LatestLabelSmoothingCEHardTarget(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "logits",
           "note": "the backward target keeps (1-eps)*onehot but drops the uniform eps/C part"}

    @staticmethod
    def forward(ctx, logits, target, smoothing):
        classes = logits.shape[1]
        q = _one_hot(target, classes, logits.dtype) * (1 - smoothing) + smoothing / classes
        logp = logits.log_softmax(1)
        ctx.save_for_backward(logp, target)
        ctx.smoothing = smoothing
        return -(q * logp).sum(1)

    @staticmethod
    def backward(ctx, g):
        logp, target = ctx.saved_tensors
        q = _one_hot(target, logp.shape[1], logp.dtype) * (1 - ctx.smoothing)  # BUG
        return g[:, None] * (logp.exp() - q), None, None

    example_inputs = staticmethod(_smooth_inputs)


def _focal_inputs():
    gen = torch.Generator().manual_seed(43)
    return (torch.randn(3, 4, dtype=torch.float64, generator=gen),
            torch.tensor([[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0]]), 2.0)


class LatestBinaryFocal(torch.autograd.Function):
    """Per-element binary focal loss of logits z against 0/1 integer labels."""
    bug = None

    @staticmethod
    def forward(ctx, z, labels, gamma):
        s = torch.sigmoid(z)
        pt = torch.where(labels == 1, s, 1 - s)
        ctx.save_for_backward(s, pt, labels)
        ctx.gamma = gamma
        return -(1 - pt) ** gamma * pt.log()

    @staticmethod
    def backward(ctx, g):
        s, pt, labels = ctx.saved_tensors
        gamma = ctx.gamma
        dpt = s * (1 - s) * torch.where(labels == 1, 1.0, -1.0)
        dl_dpt = gamma * (1 - pt) ** (gamma - 1) * pt.log() - (1 - pt) ** gamma / pt
        return g * dl_dpt * dpt, None, None

    example_inputs = staticmethod(_focal_inputs)


class LatestBinaryFocalConstantWeight(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "z",
           "note": "treats the modulating factor (1-pt)^gamma as a constant, dropping its derivative"}

    @staticmethod
    def forward(ctx, z, labels, gamma):
        s = torch.sigmoid(z)
        pt = torch.where(labels == 1, s, 1 - s)
        ctx.save_for_backward(s, pt, labels)
        ctx.gamma = gamma
        return -(1 - pt) ** gamma * pt.log()

    @staticmethod
    def backward(ctx, g):
        s, pt, labels = ctx.saved_tensors
        dpt = s * (1 - s) * torch.where(labels == 1, 1.0, -1.0)
        dl_dpt = -(1 - pt) ** ctx.gamma / pt  # BUG
        return g * dl_dpt * dpt, None, None

    example_inputs = staticmethod(_focal_inputs)


def _hinge_inputs():
    scores = torch.tensor([[0.2, 1.5, -0.4, 0.9],
                           [2.0, 0.3, 0.65, -1.0],
                           [-0.5, 0.1, 1.2, 0.55]], dtype=torch.float64)
    return scores, torch.tensor([1, 0, 2])


class LatestMultiClassHinge(torch.autograd.Function):
    """Per-sample sum over j != y of max(0, 1 + s_j - s_y)."""
    bug = None

    @staticmethod
    def forward(ctx, scores, target):
        true = scores.gather(1, target[:, None])
        margins = (1 + scores - true).scatter(1, target[:, None], 0.0)
        active = margins > 0
        ctx.save_for_backward(active, target)
        return margins.clamp_min(0).sum(1)

    @staticmethod
    def backward(ctx, g):
        active, target = ctx.saved_tensors
        grad = active.to(g.dtype)
        grad = grad.scatter(1, target[:, None], -grad.sum(1, keepdim=True))
        return g[:, None] * grad, None

    example_inputs = staticmethod(_hinge_inputs)


class LatestMultiClassHingeNoMargin(torch.autograd.Function):
    bug = {"kind": "region", "input": "scores",
           "note": "backward's active set tests s_j - s_y > 0, forgetting the margin of 1"}

    @staticmethod
    def forward(ctx, scores, target):
        true = scores.gather(1, target[:, None])
        margins = (1 + scores - true).scatter(1, target[:, None], 0.0)
        ctx.save_for_backward(scores, target)
        return margins.clamp_min(0).sum(1)

    @staticmethod
    def backward(ctx, g):
        scores, target = ctx.saved_tensors
        true = scores.gather(1, target[:, None])
        active = (scores - true > 0).scatter(1, target[:, None], False)  # BUG
        grad = active.to(g.dtype)
        grad = grad.scatter(1, target[:, None], -grad.sum(1, keepdim=True))
        return g[:, None] * grad, None

    example_inputs = staticmethod(_hinge_inputs)
