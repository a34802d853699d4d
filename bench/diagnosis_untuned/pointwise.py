"""Polynomial, rational and other pointwise functions (one or two inputs), torch-style on
gradcli's engine. ``bug = None`` marks a correct twin.
"""
import math

import gradcli as torch


class Cubic(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3 - 2 * x ** 2 + x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (3 * x ** 2 - 4 * x + 1)


class CubicTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "d(-2x^2)/dx = -4x is written +4x"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3 - 2 * x ** 2 + x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (3 * x ** 2 + 4 * x + 1)  # BUG


class LorentzRatioTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "d/dx x / (1 + x^2) = (1 - x^2) / (1 + x^2)^2: numerator written 1 + x^2"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x / (1 + x * x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (1 + x * x) / (1 + x * x) ** 2  # BUG


class DampedExpIgnoresGradOutput(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "returns the local derivative exp(-x) (1 - x) without grad_output"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.exp(-x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return torch.exp(-x) * (1 - x)  # BUG


class ErfRoundedConstant(torch.autograd.Function):
    bug = {"kind": "precision", "input": "x", "also": ["scale"],
           "note": "2 / sqrt(pi) is hard-coded as 1.1284 (5 digits): right to ~2e-5 only"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.erf(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 1.1284 * torch.exp(-x * x)  # BUG


class GatedProduct(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gate):
        s = torch.sigmoid(gate)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        return grad_output * s, grad_output * x * s * (1 - s)


class GatedProductSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "x",
           "note": "the gradients are returned as (grad_gate, grad_x)"}

    @staticmethod
    def forward(ctx, x, gate):
        s = torch.sigmoid(gate)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        grad_x = grad_output * s
        grad_gate = grad_output * x * s * (1 - s)
        return grad_gate, grad_x  # BUG


class ScaledExpNoScaleGrad(torch.autograd.Function):
    bug = {"kind": "zero", "input": "log_scale",
           "note": "returns None for the learnable log_scale"}

    @staticmethod
    def forward(ctx, x, log_scale):
        y = x * torch.exp(log_scale)
        ctx.save_for_backward(log_scale)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (log_scale,) = ctx.saved_tensors
        return grad_output * torch.exp(log_scale), None  # BUG


class GELUWrongGaussian(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the Gaussian density is written exp(-x^2) / sqrt(pi) instead of "
                   "exp(-x^2/2) / sqrt(2 pi)"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        cdf = 0.5 * (1 + torch.erf(x / math.sqrt(2)))
        pdf = torch.exp(-x * x) / math.sqrt(math.pi)  # BUG
        return grad_output * (cdf + x * pdf)


class SoftsignArctanDerivative(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "softsign x / (1 + |x|) has derivative 1 / (1 + |x|)^2; backward uses arctan's "
                   "1 / (1 + x^2)"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x / (1 + x.abs())

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output / (1 + x * x)  # BUG


class LogCoshSecantSquared(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "d log cosh(x) = tanh(x); backward returns sech^2(x), tanh's own derivative"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log(torch.cosh(x))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output / torch.cosh(x) ** 2  # BUG
