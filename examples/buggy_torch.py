"""A deliberately wrong PyTorch backward: must FAIL on the torch backend."""
import torch


class BuggyTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * (1 + y * y)  # sign error: d tanh = 1 - tanh²
