"""Seeds 000 and 001: the two Functions of the PyTorch documentation, on gradcli's engine.

    gradcli check examples/seed_exp.py
"""
from gradcli.autograd import Function


class Exp(Function):
    """y = exp(i): backward reuses the saved output."""

    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


class MyFunction(Function):
    """y = 2x (seed 001)."""

    @staticmethod
    def forward(ctx, x):
        output = x * 2
        ctx.save_for_backward(x)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        grad_x = grad_output * 2
        return grad_x
