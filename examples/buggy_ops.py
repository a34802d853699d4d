"""Deliberately wrong backwards: each must FAIL.

- BuggyExp: a factor 2 too many.
- BuggySigmoid: ignores grad_output (right only for a cotangent of ones).
- BuggyAbs: wrong only for negative inputs (returns 1 instead of sign(x)).
"""
import gradcli as torch
from gradcli.autograd import Function


class BuggyExp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * 2 * y


class BuggySigmoid(Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.sigmoid(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return y * (1 - y)


class BuggyAbs(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.abs()

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output
