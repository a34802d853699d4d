"""A PyTorch-style file that runs on gradcli's engine: ``import gradcli as torch``.

MatMul has no example_inputs, and two random 3x4 matrices cannot be multiplied: gradcli reports
it as skipped and says how to give it inputs, e.g.
    gradcli check examples/torch_style.py::MatMul --input a=3x4 --input b=4x2
"""
import gradcli as torch


class Sigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = 1 / (1 + torch.exp(-x))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y * (1 - y)


class MatMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.matmul(a, b)

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        return grad_output @ b.t(), a.t() @ grad_output
