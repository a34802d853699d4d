"""Rotations and angles with hand-written backwards: batched 3x3 rotation-matrix application by
einsum, 2-D rotation by an angle, the angle between two vectors (acos of the cosine) and the
Hamilton product of quaternions (bench/diagnosis_hidden)."""
import torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0):
    return torch.randn(*shape, dtype=torch.float64, generator=_gen(seed))


class HiddenApplyRotation(torch.autograd.Function):
    """v' = R v for a batch of matrices R [N, 3, 3] and vectors v [N, 3]."""

    bug = None

    @staticmethod
    def forward(ctx, rot, v):
        ctx.save_for_backward(rot, v)
        return torch.einsum("nij,nj->ni", rot, v)

    @staticmethod
    def backward(ctx, grad_out):
        rot, v = ctx.saved_tensors
        grad_rot = torch.einsum("ni,nj->nij", grad_out, v)
        grad_v = torch.einsum("nij,ni->nj", rot, grad_out)
        return grad_rot, grad_v

    @staticmethod
    def example_inputs():
        return _randn(4, 3, 3, seed=80), _randn(4, 3, seed=81)


class HiddenApplyRotationOuter(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "rot",
           "note": "the matrix gradient is the outer product v g^T instead of g v^T"}

    @staticmethod
    def forward(ctx, rot, v):
        ctx.save_for_backward(rot, v)
        return torch.einsum("nij,nj->ni", rot, v)

    @staticmethod
    def backward(ctx, grad_out):
        rot, v = ctx.saved_tensors
        grad_rot = torch.einsum("ni,nj->nij", v, grad_out)  # BUG
        grad_v = torch.einsum("nij,ni->nj", rot, grad_out)
        return grad_rot, grad_v

    @staticmethod
    def example_inputs():
        return _randn(4, 3, 3, seed=80), _randn(4, 3, seed=81)


def _rotate_2d(theta, points):
    c, s = theta.cos(), theta.sin()
    x, y = points[:, 0], points[:, 1]
    return torch.stack([c * x - s * y, s * x + c * y], dim=1)


class HiddenRotate2d(torch.autograd.Function):
    """Rotates each point [N, 2] by its own angle theta [N]."""

    bug = None

    @staticmethod
    def forward(ctx, theta, points):
        ctx.save_for_backward(theta, points)
        return _rotate_2d(theta, points)

    @staticmethod
    def backward(ctx, grad_out):
        theta, points = ctx.saved_tensors
        c, s = theta.cos(), theta.sin()
        x, y = points[:, 0], points[:, 1]
        gx, gy = grad_out[:, 0], grad_out[:, 1]
        grad_theta = gx * (-s * x - c * y) + gy * (c * x - s * y)
        grad_points = torch.stack([c * gx + s * gy, -s * gx + c * gy], dim=1)
        return grad_theta, grad_points

    @staticmethod
    def example_inputs():
        return _randn(5, seed=82), _randn(5, 2, seed=83)


class HiddenRotate2dAngleGrad(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "theta",
           "note": "d(c x - s y)/dtheta written as -s x + c y: the y term's sign is wrong"}

    @staticmethod
    def forward(ctx, theta, points):
        ctx.save_for_backward(theta, points)
        return _rotate_2d(theta, points)

    @staticmethod
    def backward(ctx, grad_out):
        theta, points = ctx.saved_tensors
        c, s = theta.cos(), theta.sin()
        x, y = points[:, 0], points[:, 1]
        gx, gy = grad_out[:, 0], grad_out[:, 1]
        grad_theta = gx * (-s * x + c * y) + gy * (c * x - s * y)  # BUG
        grad_points = torch.stack([c * gx + s * gy, -s * gx + c * gy], dim=1)
        return grad_theta, grad_points

    @staticmethod
    def example_inputs():
        return _randn(5, seed=82), _randn(5, 2, seed=83)


def _angle_parts(u, v):
    nu = u.norm(dim=1, keepdim=True)
    nv = v.norm(dim=1, keepdim=True)
    cos = (u * v).sum(1, keepdim=True) / (nu * nv)
    return nu, nv, cos


class HiddenVectorAngle(torch.autograd.Function):
    """The angle between row vectors u and v: acos(u.v / (|u| |v|))."""

    bug = None

    @staticmethod
    def forward(ctx, u, v):
        ctx.save_for_backward(u, v)
        return torch.acos(_angle_parts(u, v)[2]).squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        u, v = ctx.saved_tensors
        nu, nv, cos = _angle_parts(u, v)
        outer = -grad_out[:, None] / torch.sqrt(1 - cos * cos)
        grad_u = outer * (v / (nu * nv) - cos * u / nu ** 2)
        grad_v = outer * (u / (nu * nv) - cos * v / nv ** 2)
        return grad_u, grad_v


class HiddenVectorAngleProjection(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "u",
           "note": "d cos/du drops the -cos u / |u|^2 term of the norm in the denominator"}

    @staticmethod
    def forward(ctx, u, v):
        ctx.save_for_backward(u, v)
        return torch.acos(_angle_parts(u, v)[2]).squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        u, v = ctx.saved_tensors
        nu, nv, cos = _angle_parts(u, v)
        outer = -grad_out[:, None] / torch.sqrt(1 - cos * cos)
        grad_u = outer * v / (nu * nv)  # BUG
        grad_v = outer * (u / (nu * nv) - cos * v / nv ** 2)
        return grad_u, grad_v


def _left(p):
    """The matrix L(p) with p * q = L(p) q (Hamilton product, w first)."""
    w, x, y, z = p.unbind(1)
    return torch.stack([torch.stack([w, -x, -y, -z], 1), torch.stack([x, w, -z, y], 1),
                        torch.stack([y, z, w, -x], 1), torch.stack([z, -y, x, w], 1)], 1)


def _right(q):
    """The matrix R(q) with p * q = R(q) p."""
    w, x, y, z = q.unbind(1)
    return torch.stack([torch.stack([w, -x, -y, -z], 1), torch.stack([x, w, z, -y], 1),
                        torch.stack([y, -z, w, x], 1), torch.stack([z, y, -x, w], 1)], 1)


class HiddenQuaternionProduct(torch.autograd.Function):
    """The Hamilton product p * q of quaternion batches [N, 4]."""

    bug = None

    @staticmethod
    def forward(ctx, p, q):
        ctx.save_for_backward(p, q)
        return torch.bmm(_left(p), q.unsqueeze(2)).squeeze(2)

    @staticmethod
    def backward(ctx, grad_out):
        p, q = ctx.saved_tensors
        g = grad_out.unsqueeze(2)
        grad_p = torch.bmm(_right(q).transpose(1, 2), g).squeeze(2)
        grad_q = torch.bmm(_left(p).transpose(1, 2), g).squeeze(2)
        return grad_p, grad_q

    @staticmethod
    def example_inputs():
        return _randn(3, 4, seed=84), _randn(3, 4, seed=85)


class HiddenQuaternionProductOrder(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "p",
           "note": "returns q's gradient in p's slot and p's in q's"}

    @staticmethod
    def forward(ctx, p, q):
        ctx.save_for_backward(p, q)
        return torch.bmm(_left(p), q.unsqueeze(2)).squeeze(2)

    @staticmethod
    def backward(ctx, grad_out):
        p, q = ctx.saved_tensors
        g = grad_out.unsqueeze(2)
        grad_p = torch.bmm(_right(q).transpose(1, 2), g).squeeze(2)
        grad_q = torch.bmm(_left(p).transpose(1, 2), g).squeeze(2)
        return grad_q, grad_p  # BUG

    @staticmethod
    def example_inputs():
        return _randn(3, 4, seed=84), _randn(3, 4, seed=85)
