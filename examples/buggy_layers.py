"""Deliberately wrong layer backwards: each must FAIL.

- BuggyLinear: the weight gradient lacks a transpose.
- BuggyAddBias: the bias gradient is averaged over the broadcast rows instead of summed.
"""
import gradcli as torch
from gradcli.autograd import Function


class BuggyLinear(Function):
    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return x @ weight.t()

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        return grad_output @ weight, x.t() @ grad_output

    @staticmethod
    def example_inputs():
        torch.manual_seed(0)
        return torch.randn(4, 3), torch.randn(3, 3)


class BuggyAddBias(Function):
    @staticmethod
    def forward(ctx, x, bias):
        return x + bias

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, grad_output.mean(0)

    @staticmethod
    def example_inputs():
        torch.manual_seed(0)
        return torch.randn(3, 4), torch.randn(4)
