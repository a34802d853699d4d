"""Classification losses with integer targets: cross entropy, NLL with ignore_index, label smoothing,
focal loss, multi-class hinge. Every loss is a mean over the batch (a scalar)."""
import torch

IGNORE = -100


def _logits_targets(seed, n=5, c=4, ignore=False):
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, c, dtype=torch.float64, generator=gen)
    target = torch.randint(0, c, (n,), generator=gen)
    if ignore:
        target[1] = IGNORE
        target[3] = IGNORE
    return logits, target


class NovelCrossEntropy(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).mean()

    @staticmethod
    def backward(ctx, g):
        logp, target = ctx.saved_tensors
        onehot = torch.zeros_like(logp).scatter_(1, target[:, None], 1.0)
        return g * (logp.exp() - onehot) / logp.shape[0], None

    @staticmethod
    def example_inputs():
        return _logits_targets(30)


class NovelCrossEntropyUnaveraged(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits",
           "note": "the backward drops the 1/N of the batch mean"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).mean()

    @staticmethod
    def backward(ctx, g):
        logp, target = ctx.saved_tensors
        onehot = torch.zeros_like(logp).scatter_(1, target[:, None], 1.0)
        return g * (logp.exp() - onehot), None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_targets(31)


class NovelNLLIgnoreIndex(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logp, target):
        valid = target != IGNORE
        safe = target.clamp(min=0)
        picked = logp.gather(1, safe[:, None]).squeeze(1)
        ctx.save_for_backward(safe, valid)
        ctx.count = int(valid.sum())
        ctx.shape = logp.shape
        return -(picked * valid).sum() / ctx.count

    @staticmethod
    def backward(ctx, g):
        safe, valid = ctx.saved_tensors
        weight = -g * valid.to(g.dtype) / ctx.count
        grad = torch.zeros(ctx.shape, dtype=g.dtype).scatter_(1, safe[:, None], weight[:, None])
        return grad, None

    @staticmethod
    def example_inputs():
        return _logits_targets(32, n=6, ignore=True)


class NovelNLLIgnoreIndexLeaks(torch.autograd.Function):
    bug = {"kind": "region", "input": "logp",
           "note": "the ignored rows are not masked out in backward: they get -g/count at the clamped class 0"}

    @staticmethod
    def forward(ctx, logp, target):
        valid = target != IGNORE
        safe = target.clamp(min=0)
        picked = logp.gather(1, safe[:, None]).squeeze(1)
        ctx.save_for_backward(safe, valid)
        ctx.count = int(valid.sum())
        ctx.shape = logp.shape
        return -(picked * valid).sum() / ctx.count

    @staticmethod
    def backward(ctx, g):
        safe, valid = ctx.saved_tensors
        weight = -g * torch.ones_like(safe, dtype=g.dtype) / ctx.count  # BUG
        grad = torch.zeros(ctx.shape, dtype=g.dtype).scatter_(1, safe[:, None], weight[:, None])
        return grad, None

    @staticmethod
    def example_inputs():
        return _logits_targets(33, n=6, ignore=True)


SMOOTH = 0.1


def _smoothed(logits, target):
    c = logits.shape[1]
    q = torch.full_like(logits, SMOOTH / c)
    q.scatter_add_(1, target[:, None], torch.full((logits.shape[0], 1), 1.0 - SMOOTH, dtype=logits.dtype))
    return q


class NovelLabelSmoothingCE(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=-1)
        q = _smoothed(logits, target)
        ctx.save_for_backward(logp, q)
        return -(q * logp).sum(dim=-1).mean()

    @staticmethod
    def backward(ctx, g):
        logp, q = ctx.saved_tensors
        return (logp.exp() - q) * (g / logp.shape[0]), None

    @staticmethod
    def example_inputs():
        return _logits_targets(34)


class NovelLabelSmoothingForgetsUniform(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "logits",
           "note": "the backward subtracts only the (1 - eps) one-hot part of the target, not the eps / C spread"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=-1)
        ctx.save_for_backward(logp, target)
        return -(_smoothed(logits, target) * logp).sum(dim=-1).mean()

    @staticmethod
    def backward(ctx, g):
        logp, target = ctx.saved_tensors
        hot = torch.zeros_like(logp).scatter_(1, target[:, None], 1.0 - SMOOTH)
        grad = (logp.exp() - hot) * (g / logp.shape[0])  # BUG
        return grad, None

    @staticmethod
    def example_inputs():
        return _logits_targets(35)


GAMMA = 2.0


class NovelFocalLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        p = torch.softmax(logits, dim=1)
        pt = p.gather(1, target[:, None]).squeeze(1)
        ctx.save_for_backward(p, pt, target)
        return (-(1 - pt) ** GAMMA * torch.log(pt)).mean()

    @staticmethod
    def backward(ctx, g):
        p, pt, target = ctx.saved_tensors
        dpt = GAMMA * (1 - pt) ** (GAMMA - 1) * torch.log(pt) - (1 - pt) ** GAMMA / pt
        onehot = torch.zeros_like(p).scatter_(1, target[:, None], 1.0)
        grad = (dpt * pt)[:, None] * (onehot - p)
        return grad * g / p.shape[0], None

    @staticmethod
    def example_inputs():
        return _logits_targets(36)


class NovelFocalLossModulatorConstant(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "logits",
           "note": "d/dpt drops gamma (1 - pt)^(gamma-1) log pt: the modulating factor is treated as a constant"}

    @staticmethod
    def forward(ctx, logits, target):
        p = torch.softmax(logits, dim=1)
        pt = p.gather(1, target[:, None]).squeeze(1)
        ctx.save_for_backward(p, pt, target)
        return (-(1 - pt) ** GAMMA * torch.log(pt)).mean()

    @staticmethod
    def backward(ctx, g):
        p, pt, target = ctx.saved_tensors
        dpt = -(1 - pt) ** GAMMA / pt  # BUG
        onehot = torch.zeros_like(p).scatter_(1, target[:, None], 1.0)
        grad = (dpt * pt)[:, None] * (onehot - p)
        return grad * g / p.shape[0], None

    @staticmethod
    def example_inputs():
        return _logits_targets(37)


def _hinge_active(logits, target):
    zt = logits.gather(1, target[:, None])
    active = (1.0 - zt + logits > 0).to(logits.dtype)
    return active.scatter(1, target[:, None], 0.0)


class NovelMultiClassHinge(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        zt = logits.gather(1, target[:, None])
        margins = (1.0 - zt + logits).clamp(min=0).scatter(1, target[:, None], 0.0)
        ctx.save_for_backward(logits, target)
        return margins.sum(1).mean()

    @staticmethod
    def backward(ctx, g):
        logits, target = ctx.saved_tensors
        active = _hinge_active(logits, target)
        grad = active.scatter(1, target[:, None], -active.sum(1, keepdim=True))
        return grad * g / logits.shape[0], None

    @staticmethod
    def example_inputs():
        return _logits_targets(38)


class NovelMultiClassHingeTargetPlus(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "logits",
           "note": "the target logit gets +count of active margins; each margin has -z_t, so it is -count"}

    @staticmethod
    def forward(ctx, logits, target):
        zt = logits.gather(1, target[:, None])
        margins = (1.0 - zt + logits).clamp(min=0).scatter(1, target[:, None], 0.0)
        ctx.save_for_backward(logits, target)
        return margins.sum(1).mean()

    @staticmethod
    def backward(ctx, g):
        logits, target = ctx.saved_tensors
        active = _hinge_active(logits, target)
        grad = active.scatter(1, target[:, None], active.sum(1, keepdim=True))  # BUG
        return grad * g / logits.shape[0], None

    @staticmethod
    def example_inputs():
        return _logits_targets(39)
