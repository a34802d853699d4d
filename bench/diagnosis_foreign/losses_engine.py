import gradcli as torch
import math

# Elementwise regression losses on gradcli's engine (runs without PyTorch): log-cosh, quantile
# (pinball), Tweedie deviance-style NLL and Poisson NLL on log rates, each mean-reduced to a
# scalar (BLIND corpus, see README.md).

LOG2 = math.log(2.0)


def _pair(seed, shift=0.0):
    gen = torch.Generator().manual_seed(seed)
    pred = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    target = torch.randn(3, 4, dtype=torch.float64, generator=gen) + shift
    return pred, target


# ------------------------------------------------------------------------------------ log-cosh
def _log_cosh(d):
    a = torch.abs(d)
    return a + torch.log1p(torch.exp(-2 * a)) - LOG2


class ForeignLogCoshLoss(torch.autograd.Function):
    """mean(log(cosh(pred - target))), computed stably."""

    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        diff = pred - target
        ctx.save_for_backward(diff)
        return _log_cosh(diff).mean()

    @staticmethod
    def backward(ctx, grad):
        (diff,) = ctx.saved_tensors
        g = grad * torch.tanh(diff) / diff.numel()
        return g, -g

    @staticmethod
    def example_inputs():
        return _pair(91)


class ForeignLogCoshLossTargetLikePred(torch.autograd.Function):
    bug = {"kind": "sign", "input": "target",
           "note": "the target's gradient is the prediction's, +tanh(diff)/N, although diff = "
                   "pred - target"}

    @staticmethod
    def forward(ctx, pred, target):
        ctx.save_for_backward(pred, target)
        return _log_cosh(pred - target).mean()

    @staticmethod
    def backward(ctx, grad):
        pred, target = ctx.saved_tensors
        n = pred.numel()
        slope = torch.tanh(pred - target)
        grad_pred = grad * slope / n
        grad_target = grad * slope / n  # BUG
        return grad_pred, grad_target

    @staticmethod
    def example_inputs():
        return _pair(91)


class ForeignLogCoshLossSech(torch.autograd.Function):
    bug = {"kind": "none", "input": "pred",
           "note": "the prediction's gradient is sech^2(diff)/N, the derivative of tanh, not of "
                   "log cosh: an entirely wrong formula"}

    @staticmethod
    def forward(ctx, pred, target):
        diff = pred - target
        ctx.save_for_backward(diff)
        return _log_cosh(diff).mean()

    @staticmethod
    def backward(ctx, grad):
        (diff,) = ctx.saved_tensors
        t = torch.tanh(diff)
        scale = grad / diff.numel()
        grad_pred = scale * (1 - t * t)  # BUG
        return grad_pred, -scale * t

    @staticmethod
    def example_inputs():
        return _pair(91)


# --------------------------------------------------------------------------- quantile / pinball
def _pinball_inputs():
    pred, target = _pair(92)
    return pred + 0.4, target, 0.8


class ForeignPinballLoss(torch.autograd.Function):
    """mean(max(tau * r, (tau - 1) * r)), r = target - pred, quantile level tau."""

    bug = None

    @staticmethod
    def forward(ctx, pred, target, tau):
        r = target - pred
        ctx.save_for_backward(r)
        ctx.tau = tau
        return torch.maximum(tau * r, (tau - 1) * r).mean()

    @staticmethod
    def backward(ctx, grad):
        (r,) = ctx.saved_tensors
        weight = torch.where(r > 0, torch.full_like(r, ctx.tau), torch.full_like(r, ctx.tau - 1))
        g = grad * weight / r.numel()
        return -g, g, None

    @staticmethod
    def example_inputs():
        return _pinball_inputs()


class ForeignPinballLossBranchOnPred(torch.autograd.Function):
    bug = {"kind": "region", "input": "pred",
           "note": "the branch (tau or tau - 1) is chosen by the sign of pred instead of the sign "
                   "of the residual target - pred"}

    @staticmethod
    def forward(ctx, pred, target, tau):
        r = target - pred
        ctx.save_for_backward(pred, target)
        ctx.tau = tau
        return torch.where(r > 0, tau * r, (tau - 1) * r).mean()

    @staticmethod
    def backward(ctx, grad):
        pred, target = ctx.saved_tensors
        under = pred < 0  # BUG
        weight = under.to(pred.dtype) * ctx.tau + (~under).to(pred.dtype) * (ctx.tau - 1)
        g = weight * grad / pred.numel()
        return -g, g, None

    @staticmethod
    def example_inputs():
        return _pinball_inputs()


# ------------------------------------------------------------------------------ Tweedie NLL
def _tweedie_inputs():
    gen = torch.Generator().manual_seed(93)
    log_mu = 0.5 * torch.randn(3, 4, dtype=torch.float64, generator=gen)
    y = torch.rand(3, 4, dtype=torch.float64, generator=gen) * 3
    return log_mu, y, 1.5


class ForeignTweedieNLL(torch.autograd.Function):
    """mean(-y mu^(1-p)/(1-p) + mu^(2-p)/(2-p)), mu = exp(log_mu), power 1 < p < 2."""

    bug = None

    @staticmethod
    def forward(ctx, log_mu, y, p):
        a = torch.exp((1 - p) * log_mu)
        b = torch.exp((2 - p) * log_mu)
        ctx.save_for_backward(y, a, b)
        ctx.p = p
        return (-y * a / (1 - p) + b / (2 - p)).mean()

    @staticmethod
    def backward(ctx, grad):
        y, a, b = ctx.saved_tensors
        n = y.numel()
        grad_log_mu = grad * (b - y * a) / n
        grad_y = -grad * a / ((1 - ctx.p) * n)
        return grad_log_mu, grad_y, None

    @staticmethod
    def example_inputs():
        return _tweedie_inputs()


class ForeignTweedieNLLSecondTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "log_mu",
           "note": "the derivative of mu^(2-p)/(2-p) with respect to log mu, +mu^(2-p), is "
                   "subtracted instead of added"}

    @staticmethod
    def forward(ctx, log_mu, y, p):
        ctx.save_for_backward(log_mu, y)
        ctx.p = p
        mu = torch.exp(log_mu)
        return (-y * mu ** (1 - p) / (1 - p) + mu ** (2 - p) / (2 - p)).mean()

    @staticmethod
    def backward(ctx, grad):
        log_mu, y = ctx.saved_tensors
        p = ctx.p
        mu = torch.exp(log_mu)
        scale = grad / log_mu.numel()
        grad_log_mu = scale * (-y * mu ** (1 - p) - mu ** (2 - p))  # BUG
        grad_y = scale * (-mu ** (1 - p) / (1 - p))
        return grad_log_mu, grad_y, None

    @staticmethod
    def example_inputs():
        return _tweedie_inputs()


# ------------------------------------------------------------------------------- Poisson NLL
def _poisson_inputs():
    gen = torch.Generator().manual_seed(94)
    log_rate = 0.5 * torch.randn(3, 4, dtype=torch.float64, generator=gen)
    counts = torch.tensor([[0., 1., 3., 2.], [1., 0., 0., 4.], [2., 2., 1., 0.]],
                          dtype=torch.float64)
    return log_rate, counts


class ForeignPoissonNLL(torch.autograd.Function):
    """mean(exp(log_rate) - target * log_rate) (PyTorch's poisson_nll_loss, log_input=True)."""

    bug = None

    @staticmethod
    def forward(ctx, log_rate, target):
        ctx.save_for_backward(log_rate, target)
        return (torch.exp(log_rate) - target * log_rate).mean()

    @staticmethod
    def backward(ctx, grad):
        log_rate, target = ctx.saved_tensors
        inv_n = 1.0 / log_rate.numel()
        return grad * (torch.exp(log_rate) - target) * inv_n, -grad * log_rate * inv_n

    @staticmethod
    def example_inputs():
        return _poisson_inputs()


class ForeignPoissonNLLIntegerMean(torch.autograd.Function):
    bug = {"kind": "zero", "input": "log_rate",
           "note": "the mean's factor is computed as 1 // n, integer division, which is 0, so "
                   "both gradients vanish"}

    @staticmethod
    def forward(ctx, log_rate, target):
        ctx.save_for_backward(log_rate, target)
        ctx.n = log_rate.numel()
        return (torch.exp(log_rate) - target * log_rate).mean()

    @staticmethod
    def backward(ctx, grad):
        log_rate, target = ctx.saved_tensors
        inv_n = 1 // ctx.n  # BUG
        rate = torch.exp(log_rate)
        return grad * inv_n * (rate - target), grad * inv_n * -log_rate

    @staticmethod
    def example_inputs():
        return _poisson_inputs()
