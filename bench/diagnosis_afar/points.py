"""Point transforms by hand: rotation of a point cloud by an unnormalised quaternion (through its
rotation matrix, einsum for dR/dq) and smoothing of a 3-D polyline with a learned 1-D kernel."""
import torch
import torch.nn.functional as F


def _rotation(q):
    """R(q) = q p q* as a matrix, for any (not necessarily unit) quaternion q = (w, x, y, z)."""
    w, x, y, z = q.unbind(0)
    return torch.stack([
        torch.stack([w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)]),
        torch.stack([2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)]),
        torch.stack([2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z])])


def _rotation_basis(q):
    """dR/dq_k / 2 for k = w, x, y, z, stacked to (4, 3, 3)."""
    w, x, y, z = q.unbind(0)
    return torch.stack([
        torch.stack([torch.stack([w, -z, y]), torch.stack([z, w, -x]), torch.stack([-y, x, w])]),
        torch.stack([torch.stack([x, y, z]), torch.stack([y, -x, -w]), torch.stack([z, w, -x])]),
        torch.stack([torch.stack([-y, x, w]), torch.stack([x, y, z]), torch.stack([-w, z, -y])]),
        torch.stack([torch.stack([-z, -w, x]), torch.stack([w, -z, y]), torch.stack([x, y, z])])])


def _quat_inputs():
    g = torch.Generator().manual_seed(301)
    points = torch.randn(6, 3, dtype=torch.float64, generator=g, requires_grad=True)
    q = torch.tensor([0.9, 0.3, -0.5, 0.2], dtype=torch.float64, requires_grad=True)
    return points, q


class AfarQuaternionRotate(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, points, q):
        rot = _rotation(q)
        ctx.save_for_backward(points, q, rot)
        return points @ rot.T

    @staticmethod
    def backward(ctx, grad_out):
        points, q, rot = ctx.saved_tensors
        grad_points = grad_out @ rot
        grad_rot = grad_out.T @ points
        grad_q = 2 * torch.einsum("ij,kij->k", grad_rot, _rotation_basis(q))
        return grad_points, grad_q

    @staticmethod
    def example_inputs():
        return _quat_inputs()


class AfarQuaternionRotateInverse(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "points",
           "note": "the points' gradient multiplies by R.T (rotating again) instead of R"}

    @staticmethod
    def forward(ctx, points, q):
        rot = _rotation(q)
        ctx.save_for_backward(points, q, rot)
        return points @ rot.T

    @staticmethod
    def backward(ctx, grad_out):
        points, q, rot = ctx.saved_tensors
        grad_points = grad_out @ rot.T  # BUG
        grad_rot = grad_out.T @ points
        grad_q = 2 * torch.einsum("ij,kij->k", grad_rot, _rotation_basis(q))
        return grad_points, grad_q

    @staticmethod
    def example_inputs():
        return _quat_inputs()


class AfarQuaternionRotateHalfBasis(torch.autograd.Function):
    bug = {"kind": "scale", "input": "q",
           "note": "the basis holds dR/dq / 2 but the factor 2 is not applied to the quaternion gradient"}

    @staticmethod
    def forward(ctx, points, q):
        rot = _rotation(q)
        ctx.save_for_backward(points, q, rot)
        return points @ rot.T

    @staticmethod
    def backward(ctx, grad_out):
        points, q, rot = ctx.saved_tensors
        grad_points = grad_out @ rot
        grad_rot = grad_out.T @ points
        grad_q = torch.einsum("ij,kij->k", grad_rot, _rotation_basis(q))  # BUG
        return grad_points, grad_q

    @staticmethod
    def example_inputs():
        return _quat_inputs()


# ------------------------------------------------------------------------ polyline smoothing
def _curve_inputs():
    g = torch.Generator().manual_seed(302)
    curve = torch.randn(3, 9, dtype=torch.float64, generator=g, requires_grad=True)
    kernel = torch.tensor([0.5, 0.3, -0.15], dtype=torch.float64, requires_grad=True)
    return curve, kernel


class AfarPolylineSmooth(torch.autograd.Function):
    """curve: (3 coords, L points); each coordinate is filtered with the same valid 1-D kernel."""

    bug = None

    @staticmethod
    def forward(ctx, curve, kernel):
        ctx.save_for_backward(curve, kernel)
        return F.conv1d(curve[:, None, :], kernel[None, None, :]).squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        curve, kernel = ctx.saved_tensors
        grad_curve = F.conv_transpose1d(grad_out[:, None, :], kernel[None, None, :]).squeeze(1)
        grad_kernel = F.conv1d(curve[None], grad_out[None]).reshape(-1)
        return grad_curve, grad_kernel

    @staticmethod
    def example_inputs():
        return _curve_inputs()


class AfarPolylineSmoothUnflipped(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "curve",
           "note": "the adjoint is written as a full-padded conv1d with the same kernel instead of the flipped kernel"}

    @staticmethod
    def forward(ctx, curve, kernel):
        ctx.save_for_backward(curve, kernel)
        return F.conv1d(curve[:, None, :], kernel[None, None, :]).squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        curve, kernel = ctx.saved_tensors
        k = kernel.shape[0]
        grad_curve = F.conv1d(grad_out[:, None, :], kernel[None, None, :], padding=k - 1).squeeze(1)  # BUG
        grad_kernel = F.conv1d(curve[None], grad_out[None]).reshape(-1)
        return grad_curve, grad_kernel

    @staticmethod
    def example_inputs():
        return _curve_inputs()
