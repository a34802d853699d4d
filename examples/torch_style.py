"""A PyTorch-style file that runs on gradcli's engine: ``import gradcli as torch``.

MatMul has no example_inputs: forward's `torch.matmul(a, b)` tells gradcli to draw shapes that fit
(3x4 and 4x5). Blockwise needs 7 rows, a shape no automatic draw has: gradcli reports it as skipped
and says how to give it inputs, e.g.
    gradcli check examples/torch_style.py::Blockwise --input x=7x4
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


class Blockwise(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        if x.shape[0] != 7:
            raise ValueError(f"Blockwise works on 7 rows, got {x.shape[0]}")
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2
