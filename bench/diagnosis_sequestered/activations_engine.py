"""Activations with parameters and elementwise regression losses on gradcli's engine (it runs
without PyTorch): PReLU, Swish-beta, ELU-alpha, softplus-beta, Snake, per-row MSE, smooth L1
(sequestered corpus)."""
import gradcli as torch

ALPHA = 1.3
BETA = 2.0


def _x_and_param(seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    p = torch.rand(4, dtype=torch.float64, generator=gen) + 0.5
    return x, p


# ------------------------------------------------------------------------------------- PReLU
class SequesteredPReLU(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, slope * x)

    @staticmethod
    def backward(ctx, grad_out):
        x, slope = ctx.saved_tensors
        positive = x > 0
        dx = torch.where(positive, grad_out, slope * grad_out)
        dslope = torch.where(positive, torch.zeros_like(x), x * grad_out).sum(0)
        return dx, dslope

    @staticmethod
    def example_inputs():
        return _x_and_param(81)


class SequesteredPReLUSlopeOnPositives(torch.autograd.Function):
    bug = {"kind": "region", "input": "slope",
           "note": "the slope's gradient is collected where x > 0 instead of where x <= 0"}

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, slope * x)

    @staticmethod
    def backward(ctx, grad_out):
        x, slope = ctx.saved_tensors
        positive = x > 0
        dx = torch.where(positive, grad_out, slope * grad_out)
        dslope = torch.where(positive, x * grad_out, torch.zeros_like(x)).sum(0)  # BUG
        return dx, dslope

    @staticmethod
    def example_inputs():
        return _x_and_param(81)


# -------------------------------------------------------------------------------- Swish-beta
class SequesteredSwishBeta(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, beta, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_out):
        x, beta, s = ctx.saved_tensors
        ds = s * (1 - s)
        return grad_out * (s + beta * x * ds), (grad_out * x * x * ds).sum(0)

    @staticmethod
    def example_inputs():
        return _x_and_param(82)


class SequesteredSwishBetaSlopeNegated(torch.autograd.Function):
    bug = {"kind": "sign", "input": "beta",
           "note": "the beta gradient x^2 s (1 - s) is returned negated"}

    @staticmethod
    def forward(ctx, x, beta):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, beta, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_out):
        x, beta, s = ctx.saved_tensors
        ds = s * (1 - s)
        dbeta = -(grad_out * x * x * ds).sum(0)  # BUG
        return grad_out * (s + beta * x * ds), dbeta

    @staticmethod
    def example_inputs():
        return _x_and_param(82)


class SequesteredSwishBetaTanhDerivative(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the x-gradient is the derivative of tanh(beta x), an unrelated formula"}

    @staticmethod
    def forward(ctx, x, beta):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, beta, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_out):
        x, beta, s = ctx.saved_tensors
        ds = s * (1 - s)
        t = torch.tanh(beta * x)
        return grad_out * beta * (1 - t * t), (grad_out * x * x * ds).sum(0)  # BUG

    @staticmethod
    def example_inputs():
        return _x_and_param(82)


# ------------------------------------------------------------------------------------ ELU
class SequesteredELU(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.where(x > 0, x, ALPHA * (torch.exp(x) - 1))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return grad_out * torch.where(x > 0, torch.ones_like(x), y + ALPHA)


class SequesteredELUOutputAsSlope(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "on the negative side alpha e^x = y + alpha; the backward uses y and forgets the + alpha"}

    @staticmethod
    def forward(ctx, x):
        y = torch.where(x > 0, x, ALPHA * (torch.exp(x) - 1))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return grad_out * torch.where(x > 0, torch.ones_like(x), y)  # BUG


# -------------------------------------------------------------------------------- softplus-beta
class SequesteredSoftplusBeta(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log1p(torch.exp(BETA * x)) / BETA

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * torch.sigmoid(BETA * x)


class SequesteredSoftplusBetaChainFactor(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the chain rule's beta is kept although the forward divides by beta: beta * sigmoid(beta x)"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log1p(torch.exp(BETA * x)) / BETA

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return BETA * grad_out * torch.sigmoid(BETA * x)  # BUG


# ------------------------------------------------------------------------------------ Snake
class SequesteredSnake(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, freq):
        ctx.save_for_backward(x, freq)
        return x + torch.sin(freq * x) ** 2 / freq

    @staticmethod
    def backward(ctx, grad_out):
        x, freq = ctx.saved_tensors
        ax = freq * x
        dx = grad_out * (1 + torch.sin(2 * ax))
        dfreq = grad_out * (x * torch.sin(2 * ax) / freq - torch.sin(ax) ** 2 / freq ** 2)
        return dx, dfreq.sum(dim=0)

    @staticmethod
    def example_inputs():
        return _x_and_param(83)


class SequesteredSnakeFreqQuotientDropped(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "freq",
           "note": "the quotient rule's - sin^2(a x) / a^2 term is left out of the frequency gradient"}

    @staticmethod
    def forward(ctx, x, freq):
        ctx.save_for_backward(x, freq)
        return x + torch.sin(freq * x) ** 2 / freq

    @staticmethod
    def backward(ctx, grad_out):
        x, freq = ctx.saved_tensors
        ax = freq * x
        dx = grad_out * (1 + torch.sin(2 * ax))
        dfreq = grad_out * (x * torch.sin(2 * ax) / freq)  # BUG
        return dx, dfreq.sum(dim=0)

    @staticmethod
    def example_inputs():
        return _x_and_param(83)


class SequesteredSnakeFrozenFreq(torch.autograd.Function):
    bug = {"kind": "zero", "input": "freq",
           "note": "the frequency is treated as a fixed hyperparameter and gets a zero gradient"}

    @staticmethod
    def forward(ctx, x, freq):
        ctx.save_for_backward(x, freq)
        return x + torch.sin(freq * x) ** 2 / freq

    @staticmethod
    def backward(ctx, grad_out):
        x, freq = ctx.saved_tensors
        dx = grad_out * (1 + torch.sin(2 * freq * x))
        return dx, torch.zeros_like(freq)  # BUG

    @staticmethod
    def example_inputs():
        return _x_and_param(83)


# ---------------------------------------------------------------------------- per-row MSE
class SequesteredRowMSE(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        d = pred - target
        ctx.save_for_backward(d)
        return (d * d).mean(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        dpred = 2 * d / d.shape[1] * grad_out.unsqueeze(1)
        return dpred, -dpred


class SequesteredRowMSEUnweighted(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "pred",
           "note": "the per-row losses' incoming gradient is never multiplied in (right only for loss.sum())"}

    @staticmethod
    def forward(ctx, pred, target):
        d = pred - target
        ctx.save_for_backward(d)
        return (d * d).mean(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        dpred = 2 * d / d.shape[1]  # BUG
        return dpred, -dpred


# ---------------------------------------------------------------------------- smooth L1
class SequesteredSmoothL1(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        d = pred - target
        ctx.save_for_backward(d)
        return torch.where(d.abs() < 1, 0.5 * d * d, d.abs() - 0.5)

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        slope = torch.where(d.abs() < 1, d, torch.sign(d))
        return slope * grad_out, -slope * grad_out


class SequesteredSmoothL1OneSidedTest(torch.autograd.Function):
    bug = {"kind": "region", "input": "pred",
           "note": "the quadratic zone is tested as d < 1 instead of |d| < 1, so d < -1 gets slope d"}

    @staticmethod
    def forward(ctx, pred, target):
        d = pred - target
        ctx.save_for_backward(d)
        return torch.where(d.abs() < 1, 0.5 * d * d, d.abs() - 0.5)

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        slope = torch.where(d < 1, d, torch.sign(d))  # BUG
        return slope * grad_out, torch.where(d.abs() < 1, -d, -torch.sign(d)) * grad_out
