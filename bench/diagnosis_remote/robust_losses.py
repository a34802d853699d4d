"""Robust regression losses with hand-written backwards: Huber (delta), Tukey's biweight, Cauchy /
Lorentzian with a learnable scale, Geman-McClure, pinball / quantile (tau), log-cosh, Charbonnier."""
import torch


def _pair(seed, shape=(4, 5), spread=2.0):
    gen = torch.Generator().manual_seed(seed)
    pred = torch.randn(*shape, dtype=torch.float64, generator=gen) * spread
    target = torch.randn(*shape, dtype=torch.float64, generator=gen)
    return pred, target


# ------------------------------------------------------------------ Huber
class RemoteHuber(torch.autograd.Function):
    """Elementwise Huber loss of pred - target with threshold delta."""
    bug = None

    @staticmethod
    def forward(ctx, pred, target, delta: float = 1.0):
        r = pred - target
        ctx.save_for_backward(r)
        ctx.delta = delta
        quad = 0.5 * r * r
        lin = delta * (r.abs() - 0.5 * delta)
        return torch.where(r.abs() <= delta, quad, lin)

    @staticmethod
    def backward(ctx, grad_loss):
        (r,) = ctx.saved_tensors
        psi = r.clamp(-ctx.delta, ctx.delta)
        grad = grad_loss * psi
        return grad, -grad, None

    @staticmethod
    def example_inputs():
        return (*_pair(20), 1.0)


class RemoteHuberLinearUnclipped(torch.autograd.Function):
    bug = {"kind": "region", "input": "pred",
           "note": "the linear branch's slope delta*sign(r) is written delta: wrong only where r < -delta"}

    @staticmethod
    def forward(ctx, pred, target, delta: float = 1.0):
        r = pred - target
        ctx.save_for_backward(r)
        ctx.delta = delta
        return torch.where(r.abs() <= delta, 0.5 * r * r, delta * (r.abs() - 0.5 * delta))

    @staticmethod
    def backward(ctx, grad_loss):
        (r,) = ctx.saved_tensors
        inside = r.abs() <= ctx.delta
        psi = torch.where(inside, r, torch.full_like(r, ctx.delta))  # BUG
        grad = grad_loss * psi
        return grad, -grad, None

    @staticmethod
    def example_inputs():
        return (*_pair(21), 1.0)


class RemoteHuberTargetSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "target",
           "note": "the target's gradient is returned with the prediction's sign (r = pred - target)"}

    @staticmethod
    def forward(ctx, pred, target, delta: float = 1.0):
        r = pred - target
        ctx.save_for_backward(r)
        ctx.delta = delta
        return torch.where(r.abs() <= delta, 0.5 * r * r, delta * (r.abs() - 0.5 * delta))

    @staticmethod
    def backward(ctx, grad_loss):
        (r,) = ctx.saved_tensors
        grad_pred = grad_loss * r.clamp(-ctx.delta, ctx.delta)
        grad_target = grad_loss * r.clamp(-ctx.delta, ctx.delta)  # BUG
        return grad_pred, grad_target, None

    @staticmethod
    def example_inputs():
        return (*_pair(22), 1.0)


class RemoteHuberAbsInplace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "pred",
           "note": "the residual is saved, then abs_() is taken in place for the branch test; backward sees |r|"}

    @staticmethod
    def forward(ctx, pred, target, delta: float = 1.0):
        r = pred - target
        ctx.save_for_backward(r)
        ctx.delta = delta
        quad = 0.5 * r * r
        a = r.abs_()  # BUG
        return torch.where(a <= delta, quad, delta * (a - 0.5 * delta))

    @staticmethod
    def backward(ctx, grad_loss):
        (r,) = ctx.saved_tensors
        grad = grad_loss * r.clamp(-ctx.delta, ctx.delta)
        return grad, -grad, None

    @staticmethod
    def example_inputs():
        return (*_pair(23), 1.0)


# ------------------------------------------------------------------ Tukey biweight
class RemoteTukey(torch.autograd.Function):
    """rho(r) = c^2/6 (1 - (1 - (r/c)^2)^3) inside |r| <= c, c^2/6 outside."""
    bug = None

    @staticmethod
    def forward(ctx, residual, c: float = 2.0):
        u = (residual / c).clamp(-1, 1)
        ctx.save_for_backward(residual)
        ctx.c = c
        return c * c / 6 * (1 - (1 - u * u) ** 3)

    @staticmethod
    def backward(ctx, grad_loss):
        (r,) = ctx.saved_tensors
        c = ctx.c
        psi = r * (1 - (r / c) ** 2) ** 2
        psi = psi.masked_fill(r.abs() > c, 0.0)
        return grad_loss * psi, None

    @staticmethod
    def example_inputs():
        return torch.randn(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(24)) * 2, 2.0


class RemoteTukeyPsiOnly(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "residual",
           "note": "returns the influence function psi(r) as the gradient, never multiplied by grad_loss"}

    @staticmethod
    def forward(ctx, residual, c: float = 2.0):
        u = (residual / c).clamp(-1, 1)
        ctx.save_for_backward(residual)
        ctx.c = c
        return c * c / 6 * (1 - (1 - u * u) ** 3)

    @staticmethod
    def backward(ctx, grad_loss):
        (r,) = ctx.saved_tensors
        c = ctx.c
        psi = r * (1 - (r / c) ** 2) ** 2
        psi = psi.masked_fill(r.abs() > c, 0.0)
        return psi, None  # BUG

    @staticmethod
    def example_inputs():
        return torch.randn(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(25)) * 2, 2.0


# ------------------------------------------------------------------ Cauchy / Lorentzian
def _cauchy_inputs(seed):
    pred, target = _pair(seed)
    return pred, target, torch.tensor([1.3], dtype=torch.float64)


class RemoteCauchy(torch.autograd.Function):
    """rho = s^2/2 log(1 + (r/s)^2), summed; scale s of shape (1,) is learned."""
    bug = None

    @staticmethod
    def forward(ctx, pred, target, scale):
        r = pred - target
        ctx.save_for_backward(r, scale)
        return (scale ** 2 / 2 * torch.log1p((r / scale) ** 2)).sum()

    @staticmethod
    def backward(ctx, grad_loss):
        r, s = ctx.saved_tensors
        u = (r / s) ** 2
        grad_r = grad_loss * r / (1 + u)
        grad_s = grad_loss * (s * torch.log1p(u) - r * r / s / (1 + u)).sum()
        return grad_r, -grad_r, grad_s.reshape(1)

    @staticmethod
    def example_inputs():
        return _cauchy_inputs(26)


class RemoteCauchyScaleHalf(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "scale",
           "note": "d/ds of s^2/2 log(1 + r^2/s^2): only the s log(1+u) part; the log's inner derivative -r^2/(s (1+u)) is dropped"}

    @staticmethod
    def forward(ctx, pred, target, scale):
        r = pred - target
        ctx.save_for_backward(r, scale)
        return (scale ** 2 / 2 * torch.log1p((r / scale) ** 2)).sum()

    @staticmethod
    def backward(ctx, grad_loss):
        r, s = ctx.saved_tensors
        u = (r / s) ** 2
        grad_r = grad_loss * r / (1 + u)
        grad_s = grad_loss * (s * torch.log1p(u)).sum()  # BUG
        return grad_r, -grad_r, grad_s.reshape(1)

    @staticmethod
    def example_inputs():
        return _cauchy_inputs(27)


class RemoteCauchyScaleTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "scale",
           "note": "the term from d(r^2/s^2)/ds = -2 r^2/s^3 is added instead of subtracted"}

    @staticmethod
    def forward(ctx, pred, target, scale):
        r = pred - target
        ctx.save_for_backward(r, scale)
        return (scale ** 2 / 2 * torch.log1p((r / scale) ** 2)).sum()

    @staticmethod
    def backward(ctx, grad_loss):
        r, s = ctx.saved_tensors
        u = (r / s) ** 2
        grad_r = grad_loss * r / (1 + u)
        grad_s = grad_loss * (s * torch.log1p(u) + r * r / s / (1 + u)).sum()  # BUG
        return grad_r, -grad_r, grad_s.reshape(1)

    @staticmethod
    def example_inputs():
        return _cauchy_inputs(28)


# ------------------------------------------------------------------ Geman-McClure
class RemoteGemanMcClure(torch.autograd.Function):
    """rho(r) = sigma^2 r^2 / (sigma^2 + r^2), mean over all elements."""
    bug = None

    @staticmethod
    def forward(ctx, r, sigma: float = 1.0):
        ctx.save_for_backward(r)
        ctx.sigma = sigma
        s2 = sigma * sigma
        return (s2 * r * r / (s2 + r * r)).mean()

    @staticmethod
    def backward(ctx, grad_loss):
        (r,) = ctx.saved_tensors
        s2 = ctx.sigma ** 2
        return grad_loss * 2 * s2 * s2 * r / (s2 + r * r) ** 2 / r.numel(), None

    @staticmethod
    def example_inputs():
        return torch.randn(3, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(29)) * 1.5, 1.0


class RemoteGemanMcClureCauchyPsi(torch.autograd.Function):
    bug = {"kind": "none", "input": "r",
           "note": "the influence function of the Cauchy loss, 2 s^2 r / (s^2 + r^2), written in place of Geman-McClure's"}

    @staticmethod
    def forward(ctx, r, sigma: float = 1.0):
        ctx.save_for_backward(r)
        ctx.sigma = sigma
        s2 = sigma * sigma
        return (s2 * r * r / (s2 + r * r)).mean()

    @staticmethod
    def backward(ctx, grad_loss):
        (r,) = ctx.saved_tensors
        s2 = ctx.sigma ** 2
        psi = 2 * s2 * r / (s2 + r * r)  # BUG
        return grad_loss * psi / r.numel(), None

    @staticmethod
    def example_inputs():
        return torch.randn(3, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(30)) * 1.5, 1.0


# ------------------------------------------------------------------ pinball / quantile
class RemotePinball(torch.autograd.Function):
    """mean(max(tau d, (tau - 1) d)), d = target - pred."""
    bug = None

    @staticmethod
    def forward(ctx, pred, target, tau: float = 0.3):
        d = target - pred
        ctx.save_for_backward(d)
        ctx.tau = tau
        return torch.maximum(tau * d, (tau - 1) * d).mean()

    @staticmethod
    def backward(ctx, grad_loss):
        (d,) = ctx.saved_tensors
        slope = torch.where(d > 0, torch.full_like(d, ctx.tau), torch.full_like(d, ctx.tau - 1))
        grad_target = grad_loss * slope / d.numel()
        return -grad_target, grad_target, None

    @staticmethod
    def example_inputs():
        return (*_pair(31), 0.3)


class RemotePinballOneMinusTau(torch.autograd.Function):
    bug = {"kind": "region", "input": "pred",
           "note": "the slope below the quantile is written 1 - tau instead of tau - 1: wrong only where target < pred"}

    @staticmethod
    def forward(ctx, pred, target, tau: float = 0.3):
        d = target - pred
        ctx.save_for_backward(d)
        ctx.tau = tau
        return torch.maximum(tau * d, (tau - 1) * d).mean()

    @staticmethod
    def backward(ctx, grad_loss):
        (d,) = ctx.saved_tensors
        tau = ctx.tau
        slope = torch.where(d > 0, torch.full_like(d, tau), torch.full_like(d, 1 - tau))  # BUG
        grad_target = grad_loss * slope / d.numel()
        return -grad_target, grad_target, None

    @staticmethod
    def example_inputs():
        return (*_pair(32), 0.3)


# ------------------------------------------------------------------ log-cosh
class RemoteLogCosh(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        r = pred - target
        ctx.save_for_backward(r)
        return (r + torch.nn.functional.softplus(-2 * r) - 0.6931471805599453).sum()

    @staticmethod
    def backward(ctx, grad_loss):
        (r,) = ctx.saved_tensors
        g = grad_loss * torch.tanh(r)
        return g, -g

    @staticmethod
    def example_inputs():
        return _pair(33)


class RemoteLogCoshTanhOfPred(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "pred",
           "note": "tanh of the prediction instead of tanh of the residual pred - target"}

    @staticmethod
    def forward(ctx, pred, target):
        r = pred - target
        ctx.save_for_backward(pred, r)
        return (r + torch.nn.functional.softplus(-2 * r) - 0.6931471805599453).sum()

    @staticmethod
    def backward(ctx, grad_loss):
        pred, r = ctx.saved_tensors
        g = grad_loss * torch.tanh(pred)  # BUG
        return g, -grad_loss * torch.tanh(r)

    @staticmethod
    def example_inputs():
        return _pair(34)


# ------------------------------------------------------------------ Charbonnier
class RemoteCharbonnier(torch.autograd.Function):
    """mean sqrt(x^2 + eps^2)."""
    bug = None

    @staticmethod
    def forward(ctx, x, eps: float = 0.1):
        ctx.save_for_backward(x)
        ctx.eps = eps
        return torch.sqrt(x * x + eps * eps).mean()

    @staticmethod
    def backward(ctx, grad_loss):
        (x,) = ctx.saved_tensors
        return grad_loss * x / torch.sqrt(x * x + ctx.eps ** 2) / x.numel(), None

    @staticmethod
    def example_inputs():
        return torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(35)), 0.1


class RemoteCharbonnierSumNotMean(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "forward takes the mean, backward is the sum's gradient: numel() times too large"}

    @staticmethod
    def forward(ctx, x, eps: float = 0.1):
        ctx.save_for_backward(x)
        ctx.eps = eps
        return torch.sqrt(x * x + eps * eps).mean()

    @staticmethod
    def backward(ctx, grad_loss):
        (x,) = ctx.saved_tensors
        return grad_loss * x / torch.sqrt(x * x + ctx.eps ** 2), None  # BUG

    @staticmethod
    def example_inputs():
        return torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(36)), 0.1
