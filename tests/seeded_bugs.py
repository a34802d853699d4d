"""Seeded backward bugs shared by the gradcheck tests and the prove tests (one definition each).

Each is a small engine Function whose backward is wrong in one classic way; SinCorrect is the
correct baseline the elementwise ones derive from."""
import gradcli
from gradcli.autograd import Function

class SinCorrect(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gradcli.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * gradcli.cos(x)


class FactorTwo(SinCorrect):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * gradcli.cos(x)


class SignFlip(SinCorrect):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return -grad * gradcli.cos(x)


class RelativeError1e3(SinCorrect):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * gradcli.cos(x) * (1 + 1e-3)


class IgnoresGradOutput(SinCorrect):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return gradcli.cos(x)


class DroppedTerm(Function):
    """x·sin(x): the product rule's x·cos(x) term is missing."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * gradcli.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * gradcli.sin(x)


class LinearMissingTranspose(Function):
    """y = x @ W with a square W: grad_x must be g @ Wᵀ; shapes fit, values don't."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return grad @ w, x.T @ grad


class BiasNotReduced(Function):
    """x + b with b broadcast over rows: b's gradient comes back with x's shape."""

    @staticmethod
    def forward(ctx, x, b):
        return x + b

    @staticmethod
    def backward(ctx, grad):
        return grad, grad
