"""Camera projection: a pinhole (u, v) = (fx x/z + cx, fy y/z + cy) with learned focal length and
principal point (two outputs), a projection by a learned 3x3 intrinsics matrix, and the look-at
normalisation of a viewing direction."""
import torch


def _pinhole_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    points = torch.randn(5, 3, dtype=torch.float64, generator=gen) * 0.5
    points[:, 2] = 2.0 + 2.0 * torch.rand(5, dtype=torch.float64, generator=gen)  # in front
    focal = torch.tensor([1.5, 1.2], dtype=torch.float64)
    principal = torch.tensor([0.1, -0.2], dtype=torch.float64)
    return points, focal, principal


def _pinhole_forward(ctx, points, focal, principal):
    x, y, z = points.unbind(-1)
    ctx.save_for_backward(points, focal)
    return focal[0] * x / z + principal[0], focal[1] * y / z + principal[1]


class OverseasPinhole(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, points, focal, principal):
        return _pinhole_forward(ctx, points, focal, principal)

    @staticmethod
    def backward(ctx, grad_u, grad_v):
        points, focal = ctx.saved_tensors
        x, y, z = points.unbind(-1)
        fx, fy = focal[0], focal[1]
        grad_z = -(grad_u * fx * x + grad_v * fy * y) / z ** 2
        grad_points = torch.stack([grad_u * fx / z, grad_v * fy / z, grad_z], dim=-1)
        grad_focal = torch.stack([(grad_u * x / z).sum(), (grad_v * y / z).sum()])
        grad_principal = torch.stack([grad_u.sum(), grad_v.sum()])
        return grad_points, grad_focal, grad_principal

    @staticmethod
    def example_inputs():
        return _pinhole_inputs(81)


class OverseasPinholePrincipalUnsummed(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "principal",
           "note": "the principal point is shared by all points, but its gradient is left per point, (2, N)"}

    @staticmethod
    def forward(ctx, points, focal, principal):
        return _pinhole_forward(ctx, points, focal, principal)

    @staticmethod
    def backward(ctx, grad_u, grad_v):
        points, focal = ctx.saved_tensors
        x, y, z = points.unbind(-1)
        fx, fy = focal[0], focal[1]
        grad_z = -(grad_u * fx * x + grad_v * fy * y) / z ** 2
        grad_points = torch.stack([grad_u * fx / z, grad_v * fy / z, grad_z], dim=-1)
        grad_focal = torch.stack([(grad_u * x / z).sum(), (grad_v * y / z).sum()])
        grad_principal = torch.stack([grad_u, grad_v])  # BUG
        return grad_points, grad_focal, grad_principal

    @staticmethod
    def example_inputs():
        return _pinhole_inputs(82)


class OverseasPinholeIntrinsicsSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "focal",
           "note": "the focal and principal-point gradients (both of shape (2,)) are returned in each other's slots"}

    @staticmethod
    def forward(ctx, points, focal, principal):
        return _pinhole_forward(ctx, points, focal, principal)

    @staticmethod
    def backward(ctx, grad_u, grad_v):
        points, focal = ctx.saved_tensors
        x, y, z = points.unbind(-1)
        fx, fy = focal[0], focal[1]
        grad_z = -(grad_u * fx * x + grad_v * fy * y) / z ** 2
        grad_points = torch.stack([grad_u * fx / z, grad_v * fy / z, grad_z], dim=-1)
        grad_focal = torch.stack([(grad_u * x / z).sum(), (grad_v * y / z).sum()])
        grad_principal = torch.stack([grad_u.sum(), grad_v.sum()])
        return grad_points, grad_principal, grad_focal  # BUG

    @staticmethod
    def example_inputs():
        return _pinhole_inputs(83)


class OverseasPinholeDepthFromU(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "points",
           "note": "z feeds both outputs, but the depth gradient only carries the u output's term"}

    @staticmethod
    def forward(ctx, points, focal, principal):
        return _pinhole_forward(ctx, points, focal, principal)

    @staticmethod
    def backward(ctx, grad_u, grad_v):
        points, focal = ctx.saved_tensors
        x, y, z = points.unbind(-1)
        fx, fy = focal[0], focal[1]
        grad_z = -grad_u * fx * x / z ** 2  # BUG
        grad_points = torch.stack([grad_u * fx / z, grad_v * fy / z, grad_z], dim=-1)
        grad_focal = torch.stack([(grad_u * x / z).sum(), (grad_v * y / z).sum()])
        grad_principal = torch.stack([grad_u.sum(), grad_v.sum()])
        return grad_points, grad_focal, grad_principal

    @staticmethod
    def example_inputs():
        return _pinhole_inputs(84)


class OverseasPinholePrincipalCount(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "principal",
           "note": "du/dcx = 1 per point, so the principal gradient is written as the point count, never using grad_u, grad_v"}

    @staticmethod
    def forward(ctx, points, focal, principal):
        return _pinhole_forward(ctx, points, focal, principal)

    @staticmethod
    def backward(ctx, grad_u, grad_v):
        points, focal = ctx.saved_tensors
        x, y, z = points.unbind(-1)
        fx, fy = focal[0], focal[1]
        grad_z = -(grad_u * fx * x + grad_v * fy * y) / z ** 2
        grad_points = torch.stack([grad_u * fx / z, grad_v * fy / z, grad_z], dim=-1)
        grad_focal = torch.stack([(grad_u * x / z).sum(), (grad_v * y / z).sum()])
        grad_principal = torch.full_like(focal, float(points.shape[0]))  # BUG
        return grad_points, grad_focal, grad_principal

    @staticmethod
    def example_inputs():
        return _pinhole_inputs(85)


def _project_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    points = torch.randn(4, 3, dtype=torch.float64, generator=gen) * 0.5
    points[:, 2] = 2.0 + 2.0 * torch.rand(4, dtype=torch.float64, generator=gen)
    K = torch.tensor([[1.2, 0.05, 0.1], [0.0, 1.1, -0.1], [0.02, 0.03, 1.0]], dtype=torch.float64)
    K = K + 0.05 * torch.randn(3, 3, dtype=torch.float64, generator=gen)
    return points, K


def _project_forward(ctx, points, K):
    q = points @ K.mT
    ctx.save_for_backward(points, K, q)
    return q[:, :2] / q[:, 2:3]


class OverseasProjectIntrinsics(torch.autograd.Function):
    """uv = (K p)_xy / (K p)_z."""

    bug = None

    @staticmethod
    def forward(ctx, points, K):
        return _project_forward(ctx, points, K)

    @staticmethod
    def backward(ctx, grad_uv):
        points, K, q = ctx.saved_tensors
        qz = q[:, 2:3]
        gq = torch.cat([grad_uv / qz, -(grad_uv * q[:, :2]).sum(-1, keepdim=True) / qz ** 2], dim=-1)
        return gq @ K, gq.mT @ points

    @staticmethod
    def example_inputs():
        return _project_inputs(86)


class OverseasProjectIntrinsicsKT(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "K",
           "note": "q = p K^T, so dK = gq^T p; the code forms p^T gq, its transpose"}

    @staticmethod
    def forward(ctx, points, K):
        return _project_forward(ctx, points, K)

    @staticmethod
    def backward(ctx, grad_uv):
        points, K, q = ctx.saved_tensors
        qz = q[:, 2:3]
        gq = torch.cat([grad_uv / qz, -(grad_uv * q[:, :2]).sum(-1, keepdim=True) / qz ** 2], dim=-1)
        grad_K = points.mT @ gq  # BUG
        return gq @ K, grad_K

    @staticmethod
    def example_inputs():
        return _project_inputs(87)


def _lookat_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    target = torch.randn(4, 3, dtype=torch.float64, generator=gen)
    eye = target + torch.randn(4, 3, dtype=torch.float64, generator=gen) + 0.5
    return target, eye


def _lookat_forward(ctx, target, eye):
    d = target - eye
    norm = d.norm(dim=-1, keepdim=True)
    forward_dir = d / norm
    ctx.save_for_backward(forward_dir, norm)
    return forward_dir


class OverseasLookAtForward(torch.autograd.Function):
    """The camera's forward axis f = (target - eye) / |target - eye|."""

    bug = None

    @staticmethod
    def forward(ctx, target, eye):
        return _lookat_forward(ctx, target, eye)

    @staticmethod
    def backward(ctx, grad_f):
        f, norm = ctx.saved_tensors
        grad_d = (grad_f - f * (f * grad_f).sum(-1, keepdim=True)) / norm
        return grad_d, -grad_d

    @staticmethod
    def example_inputs():
        return _lookat_inputs(88)


class OverseasLookAtEyeSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "eye",
           "note": "d = target - eye, but the eye gets +grad_d, the minus forgotten"}

    @staticmethod
    def forward(ctx, target, eye):
        return _lookat_forward(ctx, target, eye)

    @staticmethod
    def backward(ctx, grad_f):
        f, norm = ctx.saved_tensors
        grad_d = (grad_f - f * (f * grad_f).sum(-1, keepdim=True)) / norm
        return grad_d, grad_d  # BUG

    @staticmethod
    def example_inputs():
        return _lookat_inputs(89)


class OverseasLookAtElementwise(torch.autograd.Function):
    bug = {"kind": "none", "input": "target",
           "note": "the projection (I - f f^T) g is written elementwise as g - f * f * g, with no dot product"}

    @staticmethod
    def forward(ctx, target, eye):
        return _lookat_forward(ctx, target, eye)

    @staticmethod
    def backward(ctx, grad_f):
        f, norm = ctx.saved_tensors
        grad_d = (grad_f - f * f * grad_f) / norm  # BUG
        return grad_d, -grad_d

    @staticmethod
    def example_inputs():
        return _lookat_inputs(90)
