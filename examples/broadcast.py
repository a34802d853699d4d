"""Broadcasting: a (4,) vector combined with a (3, 4) matrix; its gradient is summed over rows.

``_Broadcasting`` is an abstract helper (no forward/backward of its own): it is not checked.
"""
from gradcli.autograd import Function


class _Broadcasting(Function):
    @staticmethod
    def reduce_to(grad, shape):
        """Sum a broadcast gradient back down to ``shape``."""
        while grad.dim() > len(shape):
            grad = grad.sum(0)
        for dim, size in enumerate(shape):
            if size == 1 and grad.shape[dim] != 1:
                grad = grad.sum(dim, keepdim=True)
        return grad


class AddBias(_Broadcasting):
    """y = x + bias, bias broadcast over the rows of x."""

    @staticmethod
    def forward(ctx, x, bias):
        ctx.bias_shape = bias.shape
        return x + bias

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, _Broadcasting.reduce_to(grad_output, ctx.bias_shape)

    @staticmethod
    def example_inputs():
        import gradcli as torch

        return torch.randn(3, 4), torch.randn(4)


class ScaleColumns(_Broadcasting):
    """y = x * scale, scale broadcast over the rows of x."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x, scale)
        return x * scale

    @staticmethod
    def backward(ctx, grad_output):
        x, scale = ctx.saved_tensors
        return grad_output * scale, _Broadcasting.reduce_to(grad_output * x, scale.shape)

    @staticmethod
    def example_inputs():
        import gradcli as torch

        return torch.randn(3, 4), torch.randn(1, 4)
