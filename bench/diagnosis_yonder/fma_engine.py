"""Elementwise fused kernels on gradcli's engine: multiply-add with three inputs, a ratio with epsilon, a
relative difference, an exp-scale (blind corpus yonder). Runs without PyTorch."""
import math

import gradcli as torch


def _three(seed):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(3, 4, dtype=torch.float64, generator=g) for _ in range(3))


def _fma_grads(grad_out, a, b):
    return grad_out * b, grad_out * a, grad_out


class YonderFusedMulAdd(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a, b, c):
        ctx.save_for_backward(a, b)
        return a * b + c

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        return _fma_grads(grad_out, a, b)

    @staticmethod
    def example_inputs():
        return _three(0)


class YonderFusedMulAddNeedsGrad(torch.autograd.Function):
    """The same op, backward branching on ctx.needs_input_grad (a second twin)."""
    bug = None

    @staticmethod
    def forward(ctx, a, b, c):
        ctx.save_for_backward(a, b)
        return a * b + c

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        ga = gb = gc = None
        if ctx.needs_input_grad[0]:
            ga = grad_out * b
        if ctx.needs_input_grad[1]:
            gb = grad_out * a
        if ctx.needs_input_grad[2]:
            gc = grad_out
        return ga, gb, gc

    @staticmethod
    def example_inputs():
        return _three(1)


class YonderFusedMulAddOwnFactor(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "a",
           "note": "each factor's gradient multiplied by the factor itself: a gets grad*a, b gets grad*b"}

    @staticmethod
    def forward(ctx, a, b, c):
        ctx.save_for_backward(a, b)
        return a * b + c

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        ga, gb = grad_out * a, grad_out * b  # BUG
        return ga, gb, grad_out

    @staticmethod
    def example_inputs():
        return _three(2)


class YonderFusedMulAddConstantAddend(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "c",
           "note": "the addend's gradient written as ones (d out/d c) instead of grad_out"}

    @staticmethod
    def forward(ctx, a, b, c):
        ctx.save_for_backward(a, b)
        return a * b + c

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        gc = torch.ones_like(grad_out)  # BUG
        return grad_out * b, grad_out * a, gc

    @staticmethod
    def example_inputs():
        return _three(3)


class YonderScaledMulAdd(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a, b, c, alpha: float = 2.5):
        ctx.alpha = alpha
        ctx.save_for_backward(a, b)
        return alpha * a * b + c

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        return ctx.alpha * grad_out * b, ctx.alpha * grad_out * a, grad_out, None

    @staticmethod
    def example_inputs():
        return _three(4) + (2.5,)


class YonderScaledMulAddNoAlpha(torch.autograd.Function):
    bug = {"kind": "scale", "input": "a",
           "note": "alpha forgotten in a's gradient (factor 1/2.5)"}

    @staticmethod
    def forward(ctx, a, b, c, alpha: float = 2.5):
        ctx.alpha = alpha
        ctx.save_for_backward(a, b)
        return alpha * a * b + c

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        ga = grad_out * b  # BUG
        return ga, ctx.alpha * grad_out * a, grad_out, None

    @staticmethod
    def example_inputs():
        return _three(5) + (2.5,)


def _ratio(seed):
    g = torch.Generator().manual_seed(seed)
    num = torch.randn(3, 4, dtype=torch.float64, generator=g)
    den = torch.rand(3, 4, dtype=torch.float64, generator=g) * 0.5 + 0.2
    return num, den, 0.3


class YonderRatioEps(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, num, den, eps: float = 0.3):
        ctx.eps = eps
        ctx.save_for_backward(num, den)
        return num / (den + eps)

    @staticmethod
    def backward(ctx, grad_out):
        num, den = ctx.saved_tensors
        inv = 1.0 / (den + ctx.eps)
        return grad_out * inv, -grad_out * num * inv * inv, None

    @staticmethod
    def example_inputs():
        return _ratio(6)


class YonderRatioEpsDenominatorSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "den",
           "note": "the minus of d(1/u)/du = -1/u^2 dropped from the denominator's gradient"}

    @staticmethod
    def forward(ctx, num, den, eps: float = 0.3):
        ctx.eps = eps
        ctx.save_for_backward(num, den)
        return num / (den + eps)

    @staticmethod
    def backward(ctx, grad_out):
        num, den = ctx.saved_tensors
        inv = 1.0 / (den + ctx.eps)
        grad_den = grad_out * num * inv * inv  # BUG
        return grad_out * inv, grad_den, None

    @staticmethod
    def example_inputs():
        return _ratio(7)


class YonderRatioEpsForgetsEps(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "den",
           "note": "the denominator's gradient squares the raw saved den instead of den + eps"}

    @staticmethod
    def forward(ctx, num, den, eps: float = 0.3):
        ctx.eps = eps
        ctx.save_for_backward(num, den)
        return num / (den + eps)

    @staticmethod
    def backward(ctx, grad_out):
        num, den = ctx.saved_tensors
        grad_den = -grad_out * num / (den * den)  # BUG
        return grad_out / (den + ctx.eps), grad_den, None

    @staticmethod
    def example_inputs():
        return _ratio(8)


def _pos_pair(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(3, 4, dtype=torch.float64, generator=g) + 0.5,
            torch.rand(3, 4, dtype=torch.float64, generator=g) + 0.5)


class YonderRelativeDifference(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return (a - b) / (a + b + 0.1)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        den = a + b + 0.1
        return grad_out * (2 * b + 0.1) / (den * den), -grad_out * (2 * a + 0.1) / (den * den)

    @staticmethod
    def example_inputs():
        return _pos_pair(9)


class YonderRelativeDifferenceQuotientSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "a",
           "note": "quotient rule for a written 1/den + (a-b)/den^2: the second term's minus lost"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return (a - b) / (a + b + 0.1)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        den = a + b + 0.1
        grad_a = grad_out * (1.0 / den + (a - b) / (den * den))  # BUG
        return grad_a, -grad_out * (2 * a + 0.1) / (den * den)

    @staticmethod
    def example_inputs():
        return _pos_pair(10)


def _exp_scale(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 4, dtype=torch.float64, generator=g),
            torch.rand(3, 4, dtype=torch.float64, generator=g) + 0.5)


class YonderExpScale(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, s):
        e = torch.exp(x)
        ctx.save_for_backward(e, s)
        return e * s

    @staticmethod
    def backward(ctx, grad_out):
        e, s = ctx.saved_tensors
        return grad_out * e * s, grad_out * e

    @staticmethod
    def example_inputs():
        return _exp_scale(12)


class YonderExpScaleInplace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "exp(x) saved, then scaled in place to form the output: backward reads e*s as e"}

    @staticmethod
    def forward(ctx, x, s):
        e = torch.exp(x)
        ctx.save_for_backward(e, s)
        e.mul_(s)  # BUG
        return e

    @staticmethod
    def backward(ctx, grad_out):
        e, s = ctx.saved_tensors
        return grad_out * e * s, grad_out * e

    @staticmethod
    def example_inputs():
        return _exp_scale(11)
