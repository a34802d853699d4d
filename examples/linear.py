"""A linear layer y = x Wᵀ + b, checked with and without a bias (two input sets from example_inputs)."""
import gradcli as torch
from gradcli.autograd import Function


class Linear(Function):
    @staticmethod
    def forward(ctx, x, weight, bias=None):
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        out = x @ weight.t()
        return out + bias if bias is not None else out

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        grad_x = grad_output @ weight
        grad_weight = grad_output.t() @ x
        grad_bias = grad_output.sum(0) if ctx.has_bias else None
        return grad_x, grad_weight, grad_bias

    @staticmethod
    def example_inputs():
        torch.manual_seed(0)
        x, weight, bias = torch.randn(5, 3), torch.randn(4, 3), torch.randn(4)
        return [(x, weight, bias), (x, weight, None)]
