"""Piecewise-linear interp1d on a unit grid, polynomial features, weight normalisation."""
import torch


def _interp_inputs():
    xq = torch.tensor([0.3, 0.7, 1.25, 1.6, 2.4, 0.45, 3.8], dtype=torch.float64)
    yp = torch.tensor([0.5, -1.0, 2.0, 0.25, 1.5], dtype=torch.float64)
    return xq.requires_grad_(), yp.requires_grad_()


def _bracket(xq):
    i = xq.detach().floor().long()
    return i, xq - i.to(xq.dtype)


class Interp1dUnitGrid(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, xq, yp):
        i, t = _bracket(xq)
        ctx.save_for_backward(yp, i, t)
        return yp[i] + (yp[i + 1] - yp[i]) * t

    @staticmethod
    def backward(ctx, grad):
        yp, i, t = ctx.saved_tensors
        g_x = grad * (yp[i + 1] - yp[i])
        g_y = torch.zeros_like(yp)
        g_y.index_add_(0, i, grad * (1 - t))
        g_y.index_add_(0, i + 1, grad * t)
        return g_x, g_y

    @staticmethod
    def example_inputs():
        return _interp_inputs()


class Interp1dRightKnotDropped(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "yp", "note": "only the left knot receives gradient; the t * grad on the right knot is missing"}

    @staticmethod
    def forward(ctx, xq, yp):
        i, t = _bracket(xq)
        ctx.save_for_backward(yp, i, t)
        return yp[i] + (yp[i + 1] - yp[i]) * t

    @staticmethod
    def backward(ctx, grad):
        yp, i, t = ctx.saved_tensors
        g_x = grad * (yp[i + 1] - yp[i])
        g_y = torch.zeros_like(yp).index_add_(0, i, grad * (1 - t))  # BUG
        return g_x, g_y

    @staticmethod
    def example_inputs():
        return _interp_inputs()


class Interp1dKnotsAssigned(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "yp", "note": "knot gradients assigned by index, queries sharing a knot overwrite each other"}

    @staticmethod
    def forward(ctx, xq, yp):
        i, t = _bracket(xq)
        ctx.save_for_backward(yp, i, t)
        return yp[i] + (yp[i + 1] - yp[i]) * t

    @staticmethod
    def backward(ctx, grad):
        yp, i, t = ctx.saved_tensors
        g_x = grad * (yp[i + 1] - yp[i])
        left = torch.zeros_like(yp)
        right = torch.zeros_like(yp)
        left[i] = grad * (1 - t)  # BUG
        right[i + 1] = grad * t
        return g_x, left + right

    @staticmethod
    def example_inputs():
        return _interp_inputs()


class Interp1dSlopeReversed(torch.autograd.Function):
    bug = {"kind": "sign", "input": "xq", "note": "the slope is taken as left minus right knot"}

    @staticmethod
    def forward(ctx, xq, yp):
        i, t = _bracket(xq)
        ctx.save_for_backward(yp, i, t)
        return yp[i] + (yp[i + 1] - yp[i]) * t

    @staticmethod
    def backward(ctx, grad):
        yp, i, t = ctx.saved_tensors
        g_x = grad * (yp[i] - yp[i + 1])  # BUG
        g_y = torch.zeros_like(yp)
        g_y.index_add_(0, i, grad * (1 - t))
        g_y.index_add_(0, i + 1, grad * t)
        return g_x, g_y

    @staticmethod
    def example_inputs():
        return _interp_inputs()


class PolynomialFeatures3(torch.autograd.Function):
    """[x, x^2, x^3] concatenated along the feature dim."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.cat([x, x ** 2, x ** 3], dim=1)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        g1, g2, g3 = grad.chunk(3, dim=1)
        return g1 + 2 * x * g2 + 3 * x.pow(2) * g3


class PolynomialFeatures3CubeDropped(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x", "note": "the cube block's contribution is left out of the sum"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.cat([x, x ** 2, x ** 3], dim=1)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        g1, g2, g3 = grad.chunk(3, dim=1)
        return g1 + 2 * x * g2  # BUG


class PolynomialFeatures3WrongPower(torch.autograd.Function):
    bug = {"kind": "none", "input": "x", "note": "the cube's derivative written 3*x instead of 3*x**2"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.cat([x, x ** 2, x ** 3], dim=1)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        g1, g2, g3 = grad.chunk(3, dim=1)
        return g1 + 2 * x * g2 + 3 * x * g3  # BUG


def _wn_inputs():
    gen = torch.Generator().manual_seed(8)
    v = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    g = torch.rand(3, dtype=torch.float64, generator=gen) + 0.5
    return v.requires_grad_(), g.requires_grad_()


class WeightNormRows(torch.autograd.Function):
    """w = g[:, None] * v / ||v||_row."""
    bug = None

    @staticmethod
    def forward(ctx, v, g):
        n = v.norm(dim=1, keepdim=True)
        vhat = v / n
        ctx.save_for_backward(vhat, n, g)
        return g[:, None] * vhat

    @staticmethod
    def backward(ctx, grad):
        vhat, n, g = ctx.saved_tensors
        proj = (grad * vhat).sum(1, keepdim=True)
        g_v = g[:, None] / n * (grad - proj * vhat)
        return g_v, proj.squeeze(1)

    @staticmethod
    def example_inputs():
        return _wn_inputs()


class WeightNormRowsGainNotSummed(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "g", "note": "the gain's gradient is left per element, not summed over the row"}

    @staticmethod
    def forward(ctx, v, g):
        n = v.norm(dim=1, keepdim=True)
        vhat = v / n
        ctx.save_for_backward(vhat, n, g)
        return g[:, None] * vhat

    @staticmethod
    def backward(ctx, grad):
        vhat, n, g = ctx.saved_tensors
        proj = (grad * vhat).sum(1, keepdim=True)
        g_v = g[:, None] / n * (grad - proj * vhat)
        return g_v, grad * vhat  # BUG

    @staticmethod
    def example_inputs():
        return _wn_inputs()
