"""A per-point 2-D rotation, an Elman RNN step and a scaled tanh, with hand-written backwards."""
import torch


def _rotation_inputs():
    g = torch.Generator().manual_seed(77)
    return (torch.randn(5, 2, dtype=torch.float64, generator=g),
            torch.randn(5, dtype=torch.float64, generator=g))


class SealedRotate2D(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, points, theta):
        c, s = theta.cos(), theta.sin()
        x, y = points.unbind(1)
        ctx.save_for_backward(points, c, s)
        return torch.stack((c * x - s * y, s * x + c * y), dim=1)

    @staticmethod
    def backward(ctx, grad):
        points, c, s = ctx.saved_tensors
        x, y = points.unbind(1)
        gx, gy = grad.unbind(1)
        dpoints = torch.stack((c * gx + s * gy, -s * gx + c * gy), dim=1)
        dtheta = gx * (-s * x - c * y) + gy * (c * x - s * y)
        return dpoints, dtheta

    @staticmethod
    def example_inputs():
        return _rotation_inputs()


class SealedRotate2DAngleSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "theta",
           "note": "d(c x - s y)/dtheta is written -s x + c y: the c y term has the wrong sign"}

    @staticmethod
    def forward(ctx, points, theta):
        c, s = theta.cos(), theta.sin()
        x, y = points.unbind(1)
        ctx.save_for_backward(points, c, s)
        return torch.stack((c * x - s * y, s * x + c * y), dim=1)

    @staticmethod
    def backward(ctx, grad):
        points, c, s = ctx.saved_tensors
        x, y = points.unbind(1)
        gx, gy = grad.unbind(1)
        dpoints = torch.stack((c * gx + s * gy, -s * gx + c * gy), dim=1)
        dtheta = gx * (-s * x + c * y) + gy * (c * x - s * y)  # BUG
        return dpoints, dtheta

    @staticmethod
    def example_inputs():
        return _rotation_inputs()


def _elman_inputs():
    g = torch.Generator().manual_seed(78)
    r = lambda *shape: torch.randn(*shape, dtype=torch.float64, generator=g) * 0.6
    return r(2, 3), r(2, 4), r(4, 3), r(4, 4)


class SealedElmanStep(torch.autograd.Function):
    """h' = tanh(x W^T + h U^T)."""
    bug = None

    @staticmethod
    def forward(ctx, x, h, w, u):
        h_new = torch.tanh(x @ w.t() + h @ u.t())
        ctx.save_for_backward(x, h, w, u, h_new)
        return h_new

    @staticmethod
    def backward(ctx, grad):
        x, h, w, u, h_new = ctx.saved_tensors
        dz = grad * (1 - h_new * h_new)
        return dz @ w, dz @ u, dz.t() @ x, dz.t() @ h

    @staticmethod
    def example_inputs():
        return _elman_inputs()


class SealedElmanStepPreactivation(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "tanh' is evaluated as 1 - z^2 on the pre-activation z instead of the output"}

    @staticmethod
    def forward(ctx, x, h, w, u):
        z = x @ w.t() + h @ u.t()
        ctx.save_for_backward(x, h, w, u, z)
        return torch.tanh(z)

    @staticmethod
    def backward(ctx, grad):
        x, h, w, u, z = ctx.saved_tensors
        dz = grad * (1 - z * z)  # BUG
        return dz @ w, dz @ u, dz.t() @ x, dz.t() @ h

    @staticmethod
    def example_inputs():
        return _elman_inputs()


class SealedElmanStepRecurrentGrad(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "u",
           "note": "the recurrent weight's gradient is h^T dz instead of dz^T h"}

    @staticmethod
    def forward(ctx, x, h, w, u):
        h_new = torch.tanh(x @ w.t() + h @ u.t())
        ctx.save_for_backward(x, h, w, u, h_new)
        return h_new

    @staticmethod
    def backward(ctx, grad):
        x, h, w, u, h_new = ctx.saved_tensors
        dz = grad * (1 - h_new * h_new)
        du = h.t() @ dz  # BUG
        return dz @ w, dz @ u, dz.t() @ x, du

    @staticmethod
    def example_inputs():
        return _elman_inputs()


class SealedScaledTanh(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, alpha):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        ctx.alpha = alpha
        return y * alpha

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * ctx.alpha * (1 - y * y), None

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(79)
        return torch.randn(3, 4, dtype=torch.float64, generator=g), 1.7


class SealedScaledTanhReusesBuffer(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "the saved tanh output is scaled in place after saving, so backward sees alpha*tanh"}

    @staticmethod
    def forward(ctx, x, alpha):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        ctx.alpha = alpha
        return y.mul_(alpha)  # BUG

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * ctx.alpha * (1 - y * y), None

    @staticmethod
    def example_inputs():
        return SealedScaledTanh.example_inputs()
