"""Distances, rotations and a recurrent step: pairwise squared distances, row cosine, 2-D rotation, Elman."""
import torch


def _pair_inputs():
    gen = torch.Generator().manual_seed(61)
    return (torch.randn(4, 3, dtype=torch.float64, generator=gen),
            torch.randn(4, 3, dtype=torch.float64, generator=gen))


class LatestPairwiseSqDist(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.t()

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        grad_a = 2 * (g.sum(1, keepdim=True) * a - g @ b)
        grad_b = 2 * (g.sum(0)[:, None] * b - g.t() @ a)
        return grad_a, grad_b

    example_inputs = staticmethod(_pair_inputs)


class LatestPairwiseSqDistCrossSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "b", "note": "the cross term of grad b is added instead of subtracted"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.t()

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        grad_a = 2 * (g.sum(1, keepdim=True) * a - g @ b)
        grad_b = 2 * (g.sum(0)[:, None] * b + g.t() @ a)  # BUG
        return grad_a, grad_b

    example_inputs = staticmethod(_pair_inputs)


class LatestPairwiseSqDistCotangentLayout(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "b", "note": "grad b contracts g @ a instead of g.T @ a"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.t()

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        grad_a = 2 * (g.sum(1, keepdim=True) * a - g @ b)
        grad_b = 2 * (g.sum(0)[:, None] * b - g @ a)  # BUG
        return grad_a, grad_b

    example_inputs = staticmethod(_pair_inputs)


class LatestRowCosine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        na, nb = a.norm(dim=1, keepdim=True), b.norm(dim=1, keepdim=True)
        cos = (a * b).sum(1, keepdim=True) / (na * nb)
        ctx.save_for_backward(a, b, na, nb, cos)
        return cos.squeeze(1)

    @staticmethod
    def backward(ctx, g):
        a, b, na, nb, cos = ctx.saved_tensors
        g = g[:, None]
        grad_a = g * (b / (na * nb) - cos * a / na ** 2)
        grad_b = g * (a / (na * nb) - cos * b / nb ** 2)
        return grad_a, grad_b


class LatestRowCosineNoNormTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "a",
           "note": "grad a keeps b / (|a||b|) but drops the -cos * a / |a|^2 term from the norm"}

    @staticmethod
    def forward(ctx, a, b):
        na, nb = a.norm(dim=1, keepdim=True), b.norm(dim=1, keepdim=True)
        cos = (a * b).sum(1, keepdim=True) / (na * nb)
        ctx.save_for_backward(a, b, na, nb, cos)
        return cos.squeeze(1)

    @staticmethod
    def backward(ctx, g):
        a, b, na, nb, cos = ctx.saved_tensors
        g = g[:, None]
        grad_a = g * b / (na * nb)  # BUG
        grad_b = g * (a / (na * nb) - cos * b / nb ** 2)
        return grad_a, grad_b


def _rotate_inputs():
    gen = torch.Generator().manual_seed(62)
    return (torch.randn(5, 2, dtype=torch.float64, generator=gen),
            torch.randn(5, dtype=torch.float64, generator=gen))


class LatestRotate2d(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, points, theta):
        c, s = theta.cos(), theta.sin()
        x, y = points.unbind(1)
        ctx.save_for_backward(points, theta)
        return torch.stack((c * x - s * y, s * x + c * y), dim=1)

    @staticmethod
    def backward(ctx, g):
        points, theta = ctx.saved_tensors
        c, s = theta.cos(), theta.sin()
        x, y = points.unbind(1)
        gx, gy = g.unbind(1)
        grad_points = torch.stack((c * gx + s * gy, -s * gx + c * gy), dim=1)
        grad_theta = gx * (-s * x - c * y) + gy * (c * x - s * y)
        return grad_points, grad_theta

    example_inputs = staticmethod(_rotate_inputs)


class LatestRotate2dAngleSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "theta",
           "note": "differentiates the rotation as if by -theta, negating the angle gradient"}

    @staticmethod
    def forward(ctx, points, theta):
        c, s = theta.cos(), theta.sin()
        x, y = points.unbind(1)
        ctx.save_for_backward(points, theta)
        return torch.stack((c * x - s * y, s * x + c * y), dim=1)

    @staticmethod
    def backward(ctx, g):
        points, theta = ctx.saved_tensors
        c, s = theta.cos(), theta.sin()
        x, y = points.unbind(1)
        gx, gy = g.unbind(1)
        grad_points = torch.stack((c * gx + s * gy, -s * gx + c * gy), dim=1)
        grad_theta = gx * (s * x + c * y) - gy * (c * x - s * y)  # BUG
        return grad_points, grad_theta

    example_inputs = staticmethod(_rotate_inputs)


def _elman_inputs():
    gen = torch.Generator().manual_seed(63)
    r = lambda *shape: torch.randn(*shape, dtype=torch.float64, generator=gen) * 0.7
    return r(2, 3), r(2, 4), r(4, 3), r(4, 4)


class LatestElmanStep(torch.autograd.Function):
    """h' = tanh(x W^T + h U^T)."""
    bug = None

    @staticmethod
    def forward(ctx, x, h, w, u):
        out = torch.tanh(x @ w.t() + h @ u.t())
        ctx.save_for_backward(x, h, w, u, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, h, w, u, out = ctx.saved_tensors
        dpre = g * (1 - out * out)
        return dpre @ w, dpre @ u, dpre.t() @ x, dpre.t() @ h

    example_inputs = staticmethod(_elman_inputs)


class LatestElmanStepPreactivation(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "tanh's derivative 1 - y^2 is evaluated at the pre-activation instead of the output"}

    @staticmethod
    def forward(ctx, x, h, w, u):
        pre = x @ w.t() + h @ u.t()
        ctx.save_for_backward(x, h, w, u, pre)
        return torch.tanh(pre)

    @staticmethod
    def backward(ctx, g):
        x, h, w, u, pre = ctx.saved_tensors
        dpre = g * (1 - pre * pre)  # BUG
        return dpre @ w, dpre @ u, dpre.t() @ x, dpre.t() @ h

    example_inputs = staticmethod(_elman_inputs)
