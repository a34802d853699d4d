"""Regression and divergence losses on gradcli's engine: MSE, Huber, smooth-L1, KL divergence (batchmean)."""
import gradcli as torch

DELTA = 1.0
BETA = 0.5


def _pair(seed, spread=2.0):
    gen = torch.Generator().manual_seed(seed)
    return (spread * torch.randn(3, 4, dtype=torch.float64, generator=gen),
            spread * torch.randn(3, 4, dtype=torch.float64, generator=gen))


class NovelMSE(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        diff = pred - target
        ctx.save_for_backward(diff)
        return (diff * diff).mean()

    @staticmethod
    def backward(ctx, g):
        (diff,) = ctx.saved_tensors
        gp = 2 * g * diff / diff.numel()
        return gp, -gp


class NovelMSETargetSameSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "target",
           "note": "the target's gradient is returned equal to the prediction's instead of its negative"}

    @staticmethod
    def forward(ctx, pred, target):
        diff = pred - target
        ctx.save_for_backward(diff)
        return (diff * diff).mean()

    @staticmethod
    def backward(ctx, g):
        (diff,) = ctx.saved_tensors
        gp = 2 * g * diff / diff.numel()
        return gp, gp  # BUG


class NovelMSEAbsoluteRule(torch.autograd.Function):
    bug = {"kind": "none", "input": "pred",
           "note": "the L1 loss's gradient sign(d)/n written for the squared error"}

    @staticmethod
    def forward(ctx, pred, target):
        diff = pred - target
        ctx.save_for_backward(diff)
        return (diff * diff).mean()

    @staticmethod
    def backward(ctx, g):
        (diff,) = ctx.saved_tensors
        gp = g * torch.sign(diff) / diff.numel()  # BUG
        return gp, -gp


class NovelHuber(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        d = pred - target
        ctx.save_for_backward(d)
        small = d.abs() <= DELTA
        return torch.where(small, 0.5 * d * d, DELTA * (d.abs() - 0.5 * DELTA)).mean()

    @staticmethod
    def backward(ctx, g):
        (d,) = ctx.saved_tensors
        gp = g * d.clamp(-DELTA, DELTA) / d.numel()
        return gp, -gp

    @staticmethod
    def example_inputs():
        return _pair(91)


class NovelHuberNoClamp(torch.autograd.Function):
    bug = {"kind": "region", "input": "pred",
           "note": "the gradient d/n is not clamped to [-delta, delta]: wrong wherever |d| > delta"}

    @staticmethod
    def forward(ctx, pred, target):
        d = pred - target
        ctx.save_for_backward(d)
        small = d.abs() <= DELTA
        return torch.where(small, 0.5 * d * d, DELTA * (d.abs() - 0.5 * DELTA)).mean()

    @staticmethod
    def backward(ctx, g):
        (d,) = ctx.saved_tensors
        gp = g * d / d.numel()  # BUG
        return gp, -gp

    @staticmethod
    def example_inputs():
        return _pair(92)


class NovelSmoothL1(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        d = pred - target
        ctx.save_for_backward(d)
        return torch.where(d.abs() < BETA, 0.5 * d * d / BETA, d.abs() - 0.5 * BETA).mean()

    @staticmethod
    def backward(ctx, g):
        (d,) = ctx.saved_tensors
        local = torch.where(d.abs() < BETA, d / BETA, torch.sign(d))
        gp = g * local / d.numel()
        return gp, -gp

    @staticmethod
    def example_inputs():
        return _pair(93, spread=0.7)


class NovelSmoothL1TargetLeftOut(torch.autograd.Function):
    bug = {"kind": "zero", "input": "target",
           "note": "the target is assumed to be a constant label: None is returned for it"}

    @staticmethod
    def forward(ctx, pred, target):
        d = pred - target
        ctx.save_for_backward(d)
        return torch.where(d.abs() < BETA, 0.5 * d * d / BETA, d.abs() - 0.5 * BETA).mean()

    @staticmethod
    def backward(ctx, g):
        (d,) = ctx.saved_tensors
        local = torch.where(d.abs() < BETA, d / BETA, torch.sign(d))
        gp = g * local / d.numel()
        return gp, None  # BUG

    @staticmethod
    def example_inputs():
        return _pair(94, spread=0.7)


def _kl_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    logq = torch.log_softmax(torch.randn(3, 4, dtype=torch.float64, generator=gen), dim=1)
    p = torch.softmax(torch.randn(3, 4, dtype=torch.float64, generator=gen), dim=1)
    return logq, p


class NovelKLDivBatchMean(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logq, p):
        logp = torch.log(p)
        ctx.save_for_backward(logq, p, logp)
        return (p * (logp - logq)).sum() / p.shape[0]

    @staticmethod
    def backward(ctx, g):
        logq, p, logp = ctx.saved_tensors
        n = p.shape[0]
        return -g * p / n, g * (logp - logq + 1) / n

    @staticmethod
    def example_inputs():
        return _kl_inputs(95)


class NovelKLDivBatchMeanDropsOne(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "p",
           "note": "d/dp of p log p is log p + 1: the + 1 is forgotten"}

    @staticmethod
    def forward(ctx, logq, p):
        logp = torch.log(p)
        ctx.save_for_backward(logq, p, logp)
        return (p * (logp - logq)).sum() / p.shape[0]

    @staticmethod
    def backward(ctx, g):
        logq, p, logp = ctx.saved_tensors
        n = p.shape[0]
        gp = g * (logp - logq) / n  # BUG
        return -g * p / n, gp

    @staticmethod
    def example_inputs():
        return _kl_inputs(96)


class NovelKLDivBatchMeanSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "logq",
           "note": "the two gradients are returned in each other's place"}

    @staticmethod
    def forward(ctx, logq, p):
        logp = torch.log(p)
        ctx.save_for_backward(logq, p, logp)
        return (p * (logp - logq)).sum() / p.shape[0]

    @staticmethod
    def backward(ctx, g):
        logq, p, logp = ctx.saved_tensors
        n = p.shape[0]
        return g * (logp - logq + 1) / n, -g * p / n  # BUG

    @staticmethod
    def example_inputs():
        return _kl_inputs(97)
