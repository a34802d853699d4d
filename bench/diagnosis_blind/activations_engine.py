"""Activations on gradcli's engine (runs without PyTorch): GELU (tanh approximation), SiLU,
Softplus with beta and threshold, Mish, SELU, log-cosh and softsign.

BLIND corpus: see README.md. Never tune gradcli's diagnosis on these Functions.
"""
import math

import gradcli as torch

GELU_C = math.sqrt(2 / math.pi)
GELU_A = 0.044715
SELU_LAMBDA = 1.0507009873554805
SELU_ALPHA = 1.6732632423543772


def _away_from_zero(seed):
    """3x4 values with 0.2 <= |x| <= 2.7: no element near the kink or switch at 0."""
    torch.manual_seed(seed)
    magnitude = 0.2 + 2.5 * torch.rand(3, 4, dtype=torch.float64)
    sign = torch.randint(0, 2, (3, 4)).to(torch.float64) * 2 - 1
    return (magnitude * sign,)


def _gelu(ctx, x):
    t = torch.tanh(GELU_C * (x + GELU_A * x ** 3))
    ctx.save_for_backward(x, t)
    return 0.5 * x * (1 + t)


class GELUTanh(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _gelu(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved_tensors
        d_inner = GELU_C * (1 + 3 * GELU_A * x ** 2)
        return grad_out * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner)


class GELUTanhInnerDerivative(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the inner derivative of c (x + a x^3) keeps c and forgets 3 a x^2"}

    @staticmethod
    def forward(ctx, x):
        return _gelu(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved_tensors
        d_inner = GELU_C  # BUG -- GELU_C * (1 + 3 * GELU_A * x ** 2)
        return grad_out * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner)


def _silu(ctx, x):
    s = torch.sigmoid(x)
    y = x * s
    ctx.save_for_backward(s, y)
    return y


class SiLU(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _silu(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        s, y = ctx.saved_tensors
        return grad_out * (s + y * (1 - s))


class SiLUOutputForSigmoid(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the saved output y is used where sigmoid(x) is needed: s + y(1 - y)"}

    @staticmethod
    def forward(ctx, x):
        return _silu(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        s, y = ctx.saved_tensors
        return grad_out * (s + y * (1 - y))  # BUG -- y * (1 - s)


def _softplus_inputs():
    x = torch.tensor([[-2.1, -0.7, 0.3, 2.2], [1.9, -1.2, 2.6, 0.9], [-0.4, 1.1, 2.9, -2.5]],
                     dtype=torch.float64)  # beta * x stays away from the threshold 3
    return x, 2.0, 3.0


def _softplus(ctx, x, beta, threshold):
    z = beta * x
    ctx.save_for_backward(x)
    ctx.beta, ctx.threshold = beta, threshold
    return torch.where(z > threshold, x, torch.log1p(torch.exp(z)) / beta)


class SoftplusBetaThreshold(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta, threshold):
        return _softplus(ctx, x, beta, threshold)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        z = ctx.beta * x
        slope = torch.where(z > ctx.threshold, torch.ones_like(z), torch.sigmoid(z))
        return grad_out * slope, None, None

    @staticmethod
    def example_inputs():
        return _softplus_inputs()


class SoftplusThresholdIgnored(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "backward uses sigmoid(beta x) everywhere; above the threshold forward is x, "
                   "whose slope is 1"}

    @staticmethod
    def forward(ctx, x, beta, threshold):
        return _softplus(ctx, x, beta, threshold)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        z = ctx.beta * x
        return grad_out * torch.sigmoid(z), None, None  # BUG -- 1 where z > threshold

    @staticmethod
    def example_inputs():
        return _softplus_inputs()


def _mish(ctx, x):
    t = torch.tanh(torch.log1p(torch.exp(x)))
    ctx.save_for_backward(x, t)
    return x * t


class Mish(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _mish(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved_tensors
        return grad_out * (t + x * (1 - t * t) * torch.sigmoid(x))


class MishSecondTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the product rule's second term x sech^2(softplus x) sigmoid(x) is subtracted"}

    @staticmethod
    def forward(ctx, x):
        return _mish(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved_tensors
        return grad_out * (t - x * (1 - t * t) * torch.sigmoid(x))  # BUG -- + x * ...


def _selu(ctx, x):
    ctx.save_for_backward(x)
    return SELU_LAMBDA * torch.where(x > 0, x, SELU_ALPHA * (torch.exp(x) - 1))


class SELU(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _selu(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        slope = torch.where(x > 0, torch.full_like(x, SELU_LAMBDA),
                            SELU_LAMBDA * SELU_ALPHA * torch.exp(x))
        return grad_out * slope

    @staticmethod
    def example_inputs():
        return _away_from_zero(31)


class SELUPositiveBranchUnscaled(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the positive branch's slope is 1; lambda is only applied on x <= 0"}

    @staticmethod
    def forward(ctx, x):
        return _selu(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        slope = torch.where(x > 0, torch.ones_like(x),  # BUG -- full_like(x, SELU_LAMBDA)
                            SELU_LAMBDA * SELU_ALPHA * torch.exp(x))
        return grad_out * slope

    @staticmethod
    def example_inputs():
        return _away_from_zero(31)


class LogCosh(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log(torch.cosh(x))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * torch.tanh(x)


class LogCoshNoGradOutput(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "returns tanh(x), the local derivative, without multiplying by grad_out"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log(torch.cosh(x))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return torch.tanh(x)  # BUG -- grad_out * torch.tanh(x)


class Softsign(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x / (1 + x.abs())

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out / (1 + x.abs()) ** 2

    @staticmethod
    def example_inputs():
        return _away_from_zero(32)


class SoftsignNotSquared(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "1 / (1 + |x|) for the derivative of x / (1 + |x|): a wrong formula"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x / (1 + x.abs())

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out / (1 + x.abs())  # BUG -- / (1 + x.abs()) ** 2

    @staticmethod
    def example_inputs():
        return _away_from_zero(32)
