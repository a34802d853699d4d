"""Point-cloud and rotation ops: one-sided Chamfer distance, 2-D rotation by per-point angles,
Hamilton quaternion product."""
import torch


def _chamfer_inputs():
    x = torch.tensor([[0.0, 0.0, 0.1], [0.2, 0.1, 0.0], [2.0, 2.1, 1.9],
                      [2.2, 1.8, 2.0], [-2.0, 0.1, -1.9], [0.1, -0.2, 0.3]], dtype=torch.float64)
    y = torch.tensor([[0.05, 0.02, 0.2], [2.1, 2.0, 2.05], [-1.9, 0.0, -2.1]], dtype=torch.float64)
    return x.requires_grad_(), y.requires_grad_()


class ChamferOneSided(torch.autograd.Function):
    """sum_i min_j |x_i - y_j|^2."""
    bug = None

    @staticmethod
    def forward(ctx, x, y):
        d = torch.cdist(x, y) ** 2
        idx = d.argmin(dim=1)
        ctx.save_for_backward(x, y, idx)
        return d.gather(1, idx[:, None]).sum()

    @staticmethod
    def backward(ctx, grad):
        x, y, idx = ctx.saved_tensors
        diff = 2 * (x - y[idx]) * grad
        gy = torch.zeros_like(y).index_add_(0, idx, -diff)
        return diff, gy

    @staticmethod
    def example_inputs():
        return _chamfer_inputs()


class ChamferOneSidedOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "y", "note": "y's gradient assigned by index, so points matched twice keep one contribution"}

    @staticmethod
    def forward(ctx, x, y):
        d = torch.cdist(x, y) ** 2
        idx = d.argmin(dim=1)
        ctx.save_for_backward(x, y, idx)
        return d.gather(1, idx[:, None]).sum()

    @staticmethod
    def backward(ctx, grad):
        x, y, idx = ctx.saved_tensors
        diff = 2 * (x - y[idx]) * grad
        gy = torch.zeros_like(y)
        gy[idx] = -diff  # BUG
        return diff, gy

    @staticmethod
    def example_inputs():
        return _chamfer_inputs()


def _rot_inputs():
    gen = torch.Generator().manual_seed(2)
    theta = torch.randn(5, dtype=torch.float64, generator=gen)
    pts = torch.randn(5, 2, dtype=torch.float64, generator=gen)
    return theta.requires_grad_(), pts.requires_grad_()


class Rotate2D(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, theta, pts):
        c, s = theta.cos(), theta.sin()
        ctx.save_for_backward(c, s, pts)
        px, py = pts.unbind(1)
        return torch.stack([c * px - s * py, s * px + c * py], dim=1)

    @staticmethod
    def backward(ctx, grad):
        c, s, pts = ctx.saved_tensors
        px, py = pts.unbind(1)
        gx, gy = grad.unbind(1)
        g_theta = gx * (-s * px - c * py) + gy * (c * px - s * py)
        g_pts = torch.stack([c * gx + s * gy, -s * gx + c * gy], dim=1)
        return g_theta, g_pts

    @staticmethod
    def example_inputs():
        return _rot_inputs()


class Rotate2DForwardMatrixInBackward(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "pts", "note": "grad applies R instead of R^T to grad_output"}

    @staticmethod
    def forward(ctx, theta, pts):
        c, s = theta.cos(), theta.sin()
        ctx.save_for_backward(c, s, pts)
        px, py = pts.unbind(1)
        return torch.stack([c * px - s * py, s * px + c * py], dim=1)

    @staticmethod
    def backward(ctx, grad):
        c, s, pts = ctx.saved_tensors
        px, py = pts.unbind(1)
        gx, gy = grad.unbind(1)
        g_theta = gx * (-s * px - c * py) + gy * (c * px - s * py)
        g_pts = torch.stack([c * gx - s * gy, s * gx + c * gy], dim=1)  # BUG
        return g_theta, g_pts

    @staticmethod
    def example_inputs():
        return _rot_inputs()


class Rotate2DAngleTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "theta", "note": "d/dtheta of -s*py in the second row written with + sign"}

    @staticmethod
    def forward(ctx, theta, pts):
        c, s = theta.cos(), theta.sin()
        ctx.save_for_backward(c, s, pts)
        px, py = pts.unbind(1)
        return torch.stack([c * px - s * py, s * px + c * py], dim=1)

    @staticmethod
    def backward(ctx, grad):
        c, s, pts = ctx.saved_tensors
        px, py = pts.unbind(1)
        gx, gy = grad.unbind(1)
        g_theta = gx * (-s * px - c * py) + gy * (c * px + s * py)  # BUG
        g_pts = torch.stack([c * gx + s * gy, -s * gx + c * gy], dim=1)
        return g_theta, g_pts

    @staticmethod
    def example_inputs():
        return _rot_inputs()


def _qmul(p, q):
    a1, b1, c1, d1 = p.unbind(-1)
    a2, b2, c2, d2 = q.unbind(-1)
    return torch.stack([
        a1 * a2 - b1 * b2 - c1 * c2 - d1 * d2,
        a1 * b2 + b1 * a2 + c1 * d2 - d1 * c2,
        a1 * c2 - b1 * d2 + c1 * a2 + d1 * b2,
        a1 * d2 + b1 * c2 - c1 * b2 + d1 * a2,
    ], dim=-1)


def _qconj(q):
    return q * q.new_tensor([1.0, -1.0, -1.0, -1.0])


def _quat_inputs():
    gen = torch.Generator().manual_seed(4)
    return (torch.randn(3, 4, dtype=torch.float64, generator=gen).requires_grad_(),
            torch.randn(3, 4, dtype=torch.float64, generator=gen).requires_grad_())


class QuaternionProduct(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, p, q):
        ctx.save_for_backward(p, q)
        return _qmul(p, q)

    @staticmethod
    def backward(ctx, grad):
        p, q = ctx.saved_tensors
        return _qmul(grad, _qconj(q)), _qmul(_qconj(p), grad)

    @staticmethod
    def example_inputs():
        return _quat_inputs()


class QuaternionProductOrderReversed(torch.autograd.Function):
    bug = {"kind": "none", "input": "q", "note": "q's gradient multiplies in the wrong order (quaternions do not commute)"}

    @staticmethod
    def forward(ctx, p, q):
        ctx.save_for_backward(p, q)
        return _qmul(p, q)

    @staticmethod
    def backward(ctx, grad):
        p, q = ctx.saved_tensors
        return _qmul(grad, _qconj(q)), _qmul(grad, _qconj(p))  # BUG

    @staticmethod
    def example_inputs():
        return _quat_inputs()
