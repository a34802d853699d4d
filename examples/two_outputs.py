"""Two outputs: polar to Cartesian coordinates; backward receives one cotangent per output."""
from gradcli.autograd import Function


class PolarToCartesian(Function):
    @staticmethod
    def forward(ctx, r, theta):
        ctx.save_for_backward(r, theta)
        return r * theta.cos(), r * theta.sin()

    @staticmethod
    def backward(ctx, grad_x, grad_y):
        r, theta = ctx.saved_tensors
        cos, sin = theta.cos(), theta.sin()
        grad_r = grad_x * cos + grad_y * sin
        grad_theta = r * (grad_y * cos - grad_x * sin)
        return grad_r, grad_theta
