"""Activations with parameters on gradcli's engine: PReLU, Swish-beta, ELU-alpha, softplus-beta, Snake."""
import math

import gradcli as torch


def _prelu_inputs():
    gen = torch.Generator().manual_seed(91)
    return (torch.randn(5, 3, dtype=torch.float64, generator=gen),
            torch.tensor([0.1, 0.25, -0.3], dtype=torch.float64))


class LatestPReLUChannels(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, x * slope)

    @staticmethod
    def backward(ctx, g):
        x, slope = ctx.saved_tensors
        negative = x <= 0
        grad_x = torch.where(negative, g * slope, g)
        return grad_x, (g * x * negative).sum(0)

    example_inputs = staticmethod(_prelu_inputs)


class LatestPReLUChannelsPositiveSlopeGrad(torch.autograd.Function):
    bug = {"kind": "region", "input": "slope",
           "note": "the slope gradient sums over the positive inputs instead of the negative ones"}

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, x * slope)

    @staticmethod
    def backward(ctx, g):
        x, slope = ctx.saved_tensors
        grad_x = torch.where(x <= 0, g * slope, g)
        grad_slope = (g * x * (x > 0)).sum(0)  # BUG
        return grad_x, grad_slope

    example_inputs = staticmethod(_prelu_inputs)


def _beta_inputs():
    gen = torch.Generator().manual_seed(92)
    return torch.randn(3, 4, dtype=torch.float64, generator=gen), 1.7


class LatestSwishBeta(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return x * torch.sigmoid(beta * x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(ctx.beta * x)
        return g * (s + ctx.beta * x * s * (1 - s)), None

    example_inputs = staticmethod(_beta_inputs)


class LatestSwishBetaGateOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "product rule half-done: g * sigmoid(beta x), the gate's own derivative dropped"}

    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return x * torch.sigmoid(beta * x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.sigmoid(ctx.beta * x), None  # BUG

    example_inputs = staticmethod(_beta_inputs)


class LatestSwishBetaGeluBackward(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "pastes the tanh-GELU derivative into Swish-beta's backward"}

    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(beta * x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        c = math.sqrt(2 / math.pi)
        t = torch.tanh(c * (x + 0.044715 * x ** 3))
        d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)  # BUG
        return g * d, None

    example_inputs = staticmethod(_beta_inputs)


def _alpha_inputs():
    gen = torch.Generator().manual_seed(93)
    return torch.randn(3, 4, dtype=torch.float64, generator=gen), 1.5


class LatestELUAlpha(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, alpha):
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return torch.where(x > 0, x, alpha * (x.exp() - 1))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.where(x > 0, torch.ones_like(x), ctx.alpha * x.exp()), None

    example_inputs = staticmethod(_alpha_inputs)


class LatestELUAlphaExpOfOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the negative branch's alpha * exp(.) is evaluated at the output, not the input"}

    @staticmethod
    def forward(ctx, x, alpha):
        out = torch.where(x > 0, x, alpha * (x.exp() - 1))
        ctx.save_for_backward(x, out)
        ctx.alpha = alpha
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        return g * torch.where(x > 0, torch.ones_like(x), ctx.alpha * out.exp()), None  # BUG

    example_inputs = staticmethod(_alpha_inputs)


class LatestSoftplusBeta(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return torch.log1p(torch.exp(beta * x)) / beta

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.sigmoid(ctx.beta * x), None

    example_inputs = staticmethod(_beta_inputs)


class LatestSoftplusBetaKeepsBeta(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "multiplies by beta from the inner chain rule, forgetting the outer 1/beta"}

    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return torch.log1p(torch.exp(beta * x)) / beta

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ctx.beta * torch.sigmoid(ctx.beta * x), None  # BUG

    example_inputs = staticmethod(_beta_inputs)


def _snake_inputs():
    gen = torch.Generator().manual_seed(94)
    return torch.randn(3, 4, dtype=torch.float64, generator=gen), 0.8


class LatestSnake(torch.autograd.Function):
    """x + sin^2(a x) / a."""
    bug = None

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x)
        ctx.a = a
        return x + torch.sin(a * x) ** 2 / a

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (1 + torch.sin(2 * ctx.a * x)), None

    example_inputs = staticmethod(_snake_inputs)


class LatestSnakeMinus(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x", "note": "writes 1 - sin(2ax) for 1 + sin(2ax)"}

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x)
        ctx.a = a
        return x + torch.sin(a * x) ** 2 / a

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (1 - torch.sin(2 * ctx.a * x)), None  # BUG

    example_inputs = staticmethod(_snake_inputs)


class LatestSigmoidGate(torch.autograd.Function):
    """x * sigmoid(gate)."""
    bug = None

    @staticmethod
    def forward(ctx, x, gate):
        s = torch.sigmoid(gate)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved_tensors
        grad_x = grad_gate = None
        if ctx.needs_input_grad[0]:
            grad_x = g * s
        if ctx.needs_input_grad[1]:
            grad_gate = g * x * s * (1 - s)
        return grad_x, grad_gate


class LatestSigmoidGateNoUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "gate", "note": "grad gate forgets to multiply by g"}

    @staticmethod
    def forward(ctx, x, gate):
        s = torch.sigmoid(gate)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved_tensors
        return g * s, x * s * (1 - s)  # BUG


class LatestSigmoidGateSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "x", "note": "returns (grad_gate, grad_x) in the wrong order"}

    @staticmethod
    def forward(ctx, x, gate):
        s = torch.sigmoid(gate)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved_tensors
        grad_x = g * s
        grad_gate = g * x * s * (1 - s)
        return grad_gate, grad_x  # BUG


class LatestSignStraightThrough(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x",
           "note": "deliberate: sign forward, identity backward (straight-through estimator)"}

    @staticmethod
    def forward(ctx, x):
        return torch.sign(x)

    @staticmethod
    def backward(ctx, g):
        return g.clone()  # BUG


class LatestSpikeSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "v",
           "note": "deliberate: a 0/1 spike forward, the derivative of sigmoid(4 v) backward"}

    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return (v > 0).to(v.dtype)

    @staticmethod
    def backward(ctx, g):
        (v,) = ctx.saved_tensors
        s = torch.sigmoid(4.0 * v)
        return g * 4.0 * s * (1 - s)  # BUG
