"""Activations with parameters: PReLU, Swish(beta), ELU(alpha), softplus(beta), GELU (tanh
approximation), log-sigmoid, clamp to a range.

Written against gradcli's engine (`import gradcli as torch`), which speaks the
torch.autograd.Function API, so this file runs without PyTorch. Blind corpus: see README.md.
"""
import math

import gradcli as torch

ALPHA = 1.3
BETA = 2.0
GELU_C = math.sqrt(2.0 / math.pi)
LOW, HIGH = -1.0, 1.0


def _away_from_zero(seed, rows=3, cols=4):
    """Values with |x| in [0.2, 2.2]: no kink at 0 within the numerical step."""
    torch.manual_seed(seed)
    magnitude = torch.rand(rows, cols) * 2.0 + 0.2
    sign = torch.where(torch.rand(rows, cols) > 0.5, torch.ones(rows, cols),
                       -torch.ones(rows, cols))
    return magnitude * sign


# --------------------------------------------------------------------------------- PReLU
def _prelu_inputs():
    return _away_from_zero(71), torch.tensor([0.1, 0.25, 0.05, 0.3])


class PReLU(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, slope * x)

    @staticmethod
    def backward(ctx, grad_out):
        x, slope = ctx.saved_tensors
        negative = (x <= 0).to(x.dtype)
        grad_x = torch.where(x > 0, grad_out, slope * grad_out)
        return grad_x, (grad_out * x * negative).sum(0)

    @staticmethod
    def example_inputs():
        return _prelu_inputs()


class PReLUNegativeBranchUsesInput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the negative branch multiplies grad_out by x where the slope belongs"}

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, slope * x)

    @staticmethod
    def backward(ctx, grad_out):
        x, slope = ctx.saved_tensors
        negative = (x <= 0).to(x.dtype)
        grad_x = torch.where(x > 0, grad_out, x * grad_out)  # BUG
        return grad_x, (grad_out * x * negative).sum(0)

    @staticmethod
    def example_inputs():
        return _prelu_inputs()


# ------------------------------------------------------------------- Swish, learnable beta
def _swish_inputs():
    torch.manual_seed(72)
    return torch.randn(3, 4), torch.tensor([1.5])


class SwishLearnableBeta(torch.autograd.Function):
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
        grad_x = grad_out * (s + beta * x * ds)
        grad_beta = (grad_out * x * x * ds).sum().reshape(1)
        return grad_x, grad_beta

    @staticmethod
    def example_inputs():
        return _swish_inputs()


class SwishGateHeldConstant(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the gate sigmoid(beta*x) is treated as a constant: the product rule's "
                   "second term is gone"}

    @staticmethod
    def forward(ctx, x, beta):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, beta, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_out):
        x, beta, s = ctx.saved_tensors
        ds = s * (1 - s)
        grad_x = grad_out * s  # BUG
        grad_beta = (grad_out * x * x * ds).sum().reshape(1)
        return grad_x, grad_beta

    @staticmethod
    def example_inputs():
        return _swish_inputs()


# ----------------------------------------------------------------------------------- ELU
class ELU(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.where(x > 0, x, ALPHA * (torch.exp(x) - 1))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        # on x <= 0: d/dx alpha*(e^x - 1) = alpha*e^x = y + alpha
        return torch.where(x > 0, grad_out, grad_out * (y + ALPHA))

    @staticmethod
    def example_inputs():
        return (_away_from_zero(73),)


class ELUNegativeBranchDropsAlpha(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "writes the negative-branch derivative as y instead of y + alpha"}

    @staticmethod
    def forward(ctx, x):
        y = torch.where(x > 0, x, ALPHA * (torch.exp(x) - 1))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return torch.where(x > 0, grad_out, grad_out * y)  # BUG

    @staticmethod
    def example_inputs():
        return (_away_from_zero(73),)


# ------------------------------------------------------------------------- softplus(beta)
class SoftplusBeta(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta: float):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return torch.log1p(torch.exp(beta * x)) / beta

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * torch.sigmoid(ctx.beta * x), None

    @staticmethod
    def example_inputs():
        torch.manual_seed(74)
        return torch.randn(3, 4), BETA


class SoftplusBetaChainFactorTwice(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "multiplies by the inner derivative beta but forgets forward's 1/beta"}

    @staticmethod
    def forward(ctx, x, beta: float):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return torch.log1p(torch.exp(beta * x)) / beta

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * ctx.beta * torch.sigmoid(ctx.beta * x), None  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(74)
        return torch.randn(3, 4), BETA


class SoftplusBetaFromOutput(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "recovers sigmoid(beta*x) from the output as 1 - exp(-y), which needs "
                   "exp(-beta*y): a wrong formula, no simple pattern"}

    @staticmethod
    def forward(ctx, x, beta: float):
        y = torch.log1p(torch.exp(beta * x)) / beta
        ctx.save_for_backward(y)
        ctx.beta = beta
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return grad_out * (1 - torch.exp(-y)), None  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(74)
        return torch.randn(3, 4), BETA


# ----------------------------------------------------------------------- GELU, tanh approx.
def _gelu_parts(x):
    inner = GELU_C * (x + 0.044715 * x ** 3)
    return inner, torch.tanh(inner)


class GeluTanh(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        _, t = _gelu_parts(x)
        ctx.save_for_backward(x, t)
        return 0.5 * x * (1 + t)

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved_tensors
        d_inner = GELU_C * (1 + 3 * 0.044715 * x ** 2)
        return grad_out * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner)


class GeluTanhSecondTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the term through tanh's derivative is subtracted instead of added"}

    @staticmethod
    def forward(ctx, x):
        _, t = _gelu_parts(x)
        ctx.save_for_backward(x, t)
        return 0.5 * x * (1 + t)

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved_tensors
        d_inner = GELU_C * (1 + 3 * 0.044715 * x ** 2)
        return grad_out * (0.5 * (1 + t) - 0.5 * x * (1 - t * t) * d_inner)  # BUG


class GeluTanhCubicDerivativeNoThree(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the derivative of 0.044715 x^3 is written 0.044715 x^2 (the 3 is lost) deep "
                   "inside the product: no simple pattern"}

    @staticmethod
    def forward(ctx, x):
        _, t = _gelu_parts(x)
        ctx.save_for_backward(x, t)
        return 0.5 * x * (1 + t)

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved_tensors
        d_inner = GELU_C * (1 + 0.044715 * x ** 2)  # BUG
        return grad_out * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner)


# --------------------------------------------------------------------------- log-sigmoid
class LogSigmoid(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return -torch.log1p(torch.exp(-x))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * torch.sigmoid(-x)


class LogSigmoidLocalDerivativeOnly(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "returns the local derivative sigmoid(-x) without multiplying by grad_out"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return -torch.log1p(torch.exp(-x))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return torch.sigmoid(-x)  # BUG


# ---------------------------------------------------------------------- clamp to a range
def _clamp_inputs():
    return (torch.tensor([[-2.1, -0.6, 0.3, 1.7], [0.8, -1.4, 2.5, -0.2],
                          [1.2, 0.5, -0.9, -3.0]]),)


class ClampToRange(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=LOW, max=HIGH)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        inside = ((x > LOW) & (x < HIGH)).to(grad_out.dtype)
        return grad_out * inside

    @staticmethod
    def example_inputs():
        return _clamp_inputs()


class ClampToRangeForgetsLowerBound(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the pass-through mask checks only the upper bound: elements clamped at the "
                   "lower bound still get grad_out"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=LOW, max=HIGH)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        inside = (x < HIGH).to(grad_out.dtype)  # BUG
        return grad_out * inside

    @staticmethod
    def example_inputs():
        return _clamp_inputs()
