"""Activations with parameters on gradcli's engine: PReLU, Swish-beta, ELU-alpha, softplus-beta,
Snake; and two deliberate estimators for a hard step.

Part of the blind corpus bench/diagnosis_unseen (see its README): score only, never design.
"""
import gradcli as torch


def _with_channels(seed, low=0.5, high=1.5):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(5, 4, dtype=torch.float64, generator=g) * 1.5
    param = torch.rand(4, dtype=torch.float64, generator=g) * (high - low) + low
    return x, param


class ChannelPReLU(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, slope * x)

    @staticmethod
    def backward(ctx, grad_out):
        x, slope = ctx.saved_tensors
        pos = x > 0
        dx = torch.where(pos, grad_out, slope * grad_out)
        dslope = torch.where(pos, torch.zeros_like(x), x * grad_out).sum(0)
        return dx, dslope

    @staticmethod
    def example_inputs():
        return _with_channels(51, 0.1, 0.4)


class ChannelPReLUReluMask(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "dx copies a ReLU backward: the slope on the negative side becomes 0"}

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, slope * x)

    @staticmethod
    def backward(ctx, grad_out):
        x, slope = ctx.saved_tensors
        pos = x > 0
        dx = grad_out * pos.to(grad_out.dtype)  # BUG
        dslope = torch.where(pos, torch.zeros_like(x), x * grad_out).sum(0)
        return dx, dslope

    @staticmethod
    def example_inputs():
        return _with_channels(51, 0.1, 0.4)


class SwishBeta(torch.autograd.Function):
    """x * sigmoid(beta * x), a learnable beta per channel."""
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
        return _with_channels(52)


class SwishBetaProductRuleSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the product rule's second term beta*x*s*(1-s) is subtracted"}

    @staticmethod
    def forward(ctx, x, beta):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, beta, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_out):
        x, beta, s = ctx.saved_tensors
        ds = s * (1 - s)
        return grad_out * (s - beta * x * ds), (grad_out * x * x * ds).sum(0)  # BUG

    @staticmethod
    def example_inputs():
        return _with_channels(52)


def _elu_inputs():
    g = torch.Generator().manual_seed(53)
    return torch.randn(4, 5, dtype=torch.float64, generator=g) * 1.5, 1.5


class EluAlpha(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, alpha):
        y = torch.where(x > 0, x, alpha * torch.expm1(x))
        ctx.save_for_backward(x, y)
        ctx.alpha = alpha
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return torch.where(x > 0, grad_out, grad_out * (y + ctx.alpha)), None

    @staticmethod
    def example_inputs():
        return _elu_inputs()


class EluAlphaOutputAsSlope(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the negative-side slope alpha*exp(x) is written as y, forgetting the + alpha"}

    @staticmethod
    def forward(ctx, x, alpha):
        y = torch.where(x > 0, x, alpha * torch.expm1(x))
        ctx.save_for_backward(x, y)
        ctx.alpha = alpha
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return torch.where(x > 0, grad_out, grad_out * y), None  # BUG

    @staticmethod
    def example_inputs():
        return _elu_inputs()


class EluAlphaReusesExp(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "exp(x) is saved, then turned into alpha*(exp(x)-1) in place for the output"}

    @staticmethod
    def forward(ctx, x, alpha):
        e = torch.exp(x)
        ctx.save_for_backward(x, e)
        ctx.alpha = alpha
        return torch.where(x > 0, x, e.sub_(1).mul_(alpha))  # BUG

    @staticmethod
    def backward(ctx, grad_out):
        x, e = ctx.saved_tensors
        return torch.where(x > 0, grad_out, grad_out * ctx.alpha * e), None

    @staticmethod
    def example_inputs():
        return _elu_inputs()


def _softplus_inputs():
    g = torch.Generator().manual_seed(54)
    return torch.randn(3, 4, dtype=torch.float64, generator=g) * 2, 2.0


class BetaSoftplus(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return torch.log1p(torch.exp(beta * x)) / beta

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * torch.sigmoid(ctx.beta * x), None

    @staticmethod
    def example_inputs():
        return _softplus_inputs()


class SoftplusBetaDividedTwice(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the 1/beta of the forward is applied again in backward, where it cancels"}

    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return torch.log1p(torch.exp(beta * x)) / beta

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * torch.sigmoid(ctx.beta * x) / ctx.beta, None  # BUG

    @staticmethod
    def example_inputs():
        return _softplus_inputs()


class Snake(torch.autograd.Function):
    """x + sin(a x)^2 / a with a learnable frequency a per channel."""
    bug = None

    @staticmethod
    def forward(ctx, x, freq):
        ctx.save_for_backward(x, freq)
        return x + torch.sin(freq * x).pow(2) / freq

    @staticmethod
    def backward(ctx, grad_out):
        x, freq = ctx.saved_tensors
        ax = freq * x
        dx = 1 + torch.sin(2 * ax)
        dfreq = x * torch.sin(2 * ax) / freq - torch.sin(ax).pow(2) / freq.pow(2)
        return grad_out * dx, (grad_out * dfreq).sum(0)

    @staticmethod
    def example_inputs():
        return _with_channels(55)


class SnakeFrequencyQuotientRule(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "freq",
           "note": "d/da of sin^2(ax)/a keeps the chain-rule part and drops -sin^2(ax)/a^2"}

    @staticmethod
    def forward(ctx, x, freq):
        ctx.save_for_backward(x, freq)
        return x + torch.sin(freq * x).pow(2) / freq

    @staticmethod
    def backward(ctx, grad_out):
        x, freq = ctx.saved_tensors
        ax = freq * x
        dx = 1 + torch.sin(2 * ax)
        dfreq = x * torch.sin(2 * ax) / freq  # BUG
        return grad_out * dx, (grad_out * dfreq).sum(0)

    @staticmethod
    def example_inputs():
        return _with_channels(55)


class SnakeSineNotSquared(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "dx = 1 + 2cos(ax), the derivative of x + 2 sin(ax)/a, not of x + sin^2(ax)/a"}

    @staticmethod
    def forward(ctx, x, freq):
        ctx.save_for_backward(x, freq)
        return x + torch.sin(freq * x).pow(2) / freq

    @staticmethod
    def backward(ctx, grad_out):
        x, freq = ctx.saved_tensors
        ax = freq * x
        dx = 1 + 2 * torch.cos(ax)  # BUG
        dfreq = x * torch.sin(2 * ax) / freq - torch.sin(ax).pow(2) / freq.pow(2)
        return grad_out * dx, (grad_out * dfreq).sum(0)

    @staticmethod
    def example_inputs():
        return _with_channels(55)


class HardStepStraightThrough(torch.autograd.Function):
    """Binary activation trained with the identity straight-through estimator (deliberate)."""
    bug = {"kind": "straight_through", "input": "x",
           "note": "deliberate estimator: forward is a 0/1 step, backward passes grad_out unchanged"}

    @staticmethod
    def forward(ctx, x):
        return (x > 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.clone()  # BUG


class FiringStepSigmoidSurrogate(torch.autograd.Function):
    """Spiking neuron's firing step with a sigmoid-derivative surrogate gradient (deliberate)."""
    bug = {"kind": "smooth_surrogate", "input": "membrane",
           "note": "deliberate estimator: step forward, k*s*(1-s) with s = sigmoid(k*v) backward"}
    sharpness = 4.0

    @staticmethod
    def forward(ctx, membrane):
        ctx.save_for_backward(membrane)
        return (membrane >= 0).to(membrane.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (membrane,) = ctx.saved_tensors
        k = FiringStepSigmoidSurrogate.sharpness
        s = torch.sigmoid(k * membrane)
        return grad_out * k * s * (1 - s)  # BUG
