"""Regression and divergence losses on gradcli's engine: MSE (mean), Huber (mean), elementwise
smooth-L1 (reduction='none') and KL divergence from log-probabilities (batchmean).

Runs without PyTorch (import gradcli as torch).
"""
import gradcli as torch

DELTA = 1.0
BETA = 0.5


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _pred_target(seed, spread=1.0):
    g = _gen(seed)
    return (spread * torch.randn(3, 4, dtype=torch.float64, generator=g),
            spread * torch.randn(3, 4, dtype=torch.float64, generator=g))


class UnknownMSEEngine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        diff = pred - target
        ctx.save_for_backward(diff)
        return (diff * diff).mean()

    @staticmethod
    def backward(ctx, grad):
        (diff,) = ctx.saved_tensors
        dpred = grad * 2.0 * diff / diff.numel()
        return dpred, -dpred


class UnknownMSEEngineTargetSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "target",
           "note": "the target's gradient is returned equal to the prediction's instead of its negative"}

    @staticmethod
    def forward(ctx, pred, target):
        diff = pred - target
        ctx.save_for_backward(diff)
        return (diff * diff).mean()

    @staticmethod
    def backward(ctx, grad):
        (diff,) = ctx.saved_tensors
        dpred = grad * 2.0 * diff / diff.numel()
        dtarget = dpred  # BUG
        return dpred, dtarget


def _huber_forward(ctx, pred, target):
    r = pred - target
    quad = r.abs() <= DELTA
    loss = torch.where(quad, 0.5 * r * r, DELTA * (r.abs() - 0.5 * DELTA))
    ctx.save_for_backward(r)
    return loss.mean()


class UnknownHuberEngine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        return _huber_forward(ctx, pred, target)

    @staticmethod
    def backward(ctx, grad):
        (r,) = ctx.saved_tensors
        dr = torch.clamp(r, -DELTA, DELTA) * grad / r.numel()
        return dr, -dr

    @staticmethod
    def example_inputs():
        return _pred_target(1, spread=1.2)


class UnknownHuberEngineRegionsSwapped(torch.autograd.Function):
    bug = {"kind": "region", "input": "pred",
           "note": "the mask picks the linear branch where |r| <= delta and the quadratic one outside (comparison reversed)"}

    @staticmethod
    def forward(ctx, pred, target):
        return _huber_forward(ctx, pred, target)

    @staticmethod
    def backward(ctx, grad):
        (r,) = ctx.saved_tensors
        dr = torch.where(r.abs() > DELTA, r, DELTA * torch.sign(r)) * grad / r.numel()  # BUG
        return dr, -dr

    @staticmethod
    def example_inputs():
        return _pred_target(2, spread=1.2)


def _smooth_l1_forward(ctx, pred, target):
    r = pred - target
    ctx.save_for_backward(r)
    return torch.where(r.abs() < BETA, 0.5 * r * r / BETA, r.abs() - 0.5 * BETA)


class UnknownSmoothL1ElementwiseEngine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        return _smooth_l1_forward(ctx, pred, target)

    @staticmethod
    def backward(ctx, grad):
        (r,) = ctx.saved_tensors
        local = torch.where(r.abs() < BETA, r / BETA, torch.sign(r))
        return grad * local, -grad * local

    @staticmethod
    def example_inputs():
        return _pred_target(3, spread=0.6)


class UnknownSmoothL1ElementwiseEngineLocalOnly(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "pred",
           "note": "the elementwise loss's local derivative is returned without multiplying by the incoming gradient"}

    @staticmethod
    def forward(ctx, pred, target):
        return _smooth_l1_forward(ctx, pred, target)

    @staticmethod
    def backward(ctx, grad):
        (r,) = ctx.saved_tensors
        local = torch.where(r.abs() < BETA, r / BETA, torch.sign(r))
        return local, -grad * local  # BUG

    @staticmethod
    def example_inputs():
        return _pred_target(4, spread=0.6)


def _kl_inputs(seed):
    g = _gen(seed)
    logq = torch.log_softmax(torch.randn(3, 4, dtype=torch.float64, generator=g), dim=1)
    p = torch.softmax(torch.randn(3, 4, dtype=torch.float64, generator=g), dim=1)
    return logq, p


class UnknownKLDivBatchmeanEngine(torch.autograd.Function):
    """KL(p || q) = sum p (log p - log q), divided by the batch size."""

    bug = None

    @staticmethod
    def forward(ctx, logq, p):
        logp = torch.log(p)
        ctx.save_for_backward(logq, p, logp)
        return (p * (logp - logq)).sum() / p.shape[0]

    @staticmethod
    def backward(ctx, grad):
        logq, p, logp = ctx.saved_tensors
        n = p.shape[0]
        return -grad * p / n, grad * (logp + 1 - logq) / n

    @staticmethod
    def example_inputs():
        return _kl_inputs(5)


class UnknownKLDivBatchmeanEngineNoEntropyOne(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "p",
           "note": "d/dp of p log p is log p + 1; the + 1 is dropped from the target's gradient"}

    @staticmethod
    def forward(ctx, logq, p):
        logp = torch.log(p)
        ctx.save_for_backward(logq, p, logp)
        return (p * (logp - logq)).sum() / p.shape[0]

    @staticmethod
    def backward(ctx, grad):
        logq, p, logp = ctx.saved_tensors
        n = p.shape[0]
        dp = grad * (logp - logq) / n  # BUG
        return -grad * p / n, dp

    @staticmethod
    def example_inputs():
        return _kl_inputs(6)


class UnknownKLDivBatchmeanEngineLogitsGrad(torch.autograd.Function):
    bug = {"kind": "none", "input": "logq",
           "note": "the log-probability input gets exp(log q) - p, the softmax-logits gradient, as if log q were logits"}

    @staticmethod
    def forward(ctx, logq, p):
        logp = torch.log(p)
        ctx.save_for_backward(logq, p, logp)
        return (p * (logp - logq)).sum() / p.shape[0]

    @staticmethod
    def backward(ctx, grad):
        logq, p, logp = ctx.saved_tensors
        n = p.shape[0]
        dlogq = grad * (torch.exp(logq) - p) / n  # BUG
        return dlogq, grad * (logp + 1 - logq) / n

    @staticmethod
    def example_inputs():
        return _kl_inputs(7)
