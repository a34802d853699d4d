"""3-D geometry with hand-written backwards: cross product, Hamilton quaternion product,
Rodrigues rotation, angle between vectors, point-to-plane distance and normalised vectors
(BLIND corpus, see README.md)."""
import torch


def _cross(u, v):
    ux, uy, uz = u.unbind(-1)
    vx, vy, vz = v.unbind(-1)
    return torch.stack([uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx], dim=-1)


def _pair_inputs(seed, rows=4, cols=3):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, cols, dtype=torch.float64, generator=gen),
            torch.randn(rows, cols, dtype=torch.float64, generator=gen))


# ------------------------------------------------------------------------------- cross product
class ForeignCrossProduct(torch.autograd.Function):
    """a x b row by row, (N, 3)."""

    bug = None

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.linalg.cross(a, b, dim=-1)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        # <g, a x b> = <a, b x g> = <b, g x a>
        return _cross(b, grad), _cross(grad, a)

    @staticmethod
    def example_inputs():
        return _pair_inputs(31)


class ForeignCrossProductOrderFlipped(torch.autograd.Function):
    bug = {"kind": "sign", "input": "a",
           "note": "the triple product is rotated the wrong way for a: g x b instead of b x g"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.linalg.cross(a, b, dim=-1)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_a = torch.linalg.cross(grad, b, dim=-1)  # BUG
        grad_b = torch.linalg.cross(grad, a, dim=-1)
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _pair_inputs(31)


class ForeignCrossProductGradsSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "a",
           "note": "both gradients are right but returned as (grad_b, grad_a)"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _cross(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga = _cross(b, grad)
        gb = _cross(grad, a)
        return gb, ga  # BUG

    @staticmethod
    def example_inputs():
        return _pair_inputs(31)


# --------------------------------------------------------------------------- quaternion product
def _hamilton(p, q):
    pw, px, py, pz = p.unbind(-1)
    qw, qx, qy, qz = q.unbind(-1)
    return torch.stack([pw * qw - px * qx - py * qy - pz * qz,
                        pw * qx + px * qw + py * qz - pz * qy,
                        pw * qy - px * qz + py * qw + pz * qx,
                        pw * qz + px * qy - py * qx + pz * qw], dim=-1)


class ForeignQuaternionProduct(torch.autograd.Function):
    """Hamilton product p * q of (N, 4) quaternions stored (w, x, y, z)."""

    bug = None

    @staticmethod
    def forward(ctx, p, q):
        ctx.save_for_backward(p, q)
        return _hamilton(p, q)

    @staticmethod
    def backward(ctx, grad):
        p, q = ctx.saved_tensors
        gw, gx, gy, gz = grad.unbind(-1)
        pw, px, py, pz = p.unbind(-1)
        qw, qx, qy, qz = q.unbind(-1)
        grad_p = torch.stack([gw * qw + gx * qx + gy * qy + gz * qz,
                              -gw * qx + gx * qw - gy * qz + gz * qy,
                              -gw * qy + gx * qz + gy * qw - gz * qx,
                              -gw * qz - gx * qy + gy * qx + gz * qw], dim=-1)
        grad_q = torch.stack([gw * pw + gx * px + gy * py + gz * pz,
                              -gw * px + gx * pw + gy * pz - gz * py,
                              -gw * py - gx * pz + gy * pw + gz * px,
                              -gw * pz + gx * py - gy * px + gz * pw], dim=-1)
        return grad_p, grad_q


class ForeignQuaternionProductStackedByComponent(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "p", "also": ["transposed"],
           "note": "p's gradient components are stacked on dim 0, giving (4, N), and then "
                   "reshaped to (N, 4) instead of transposed back"}

    @staticmethod
    def forward(ctx, p, q):
        ctx.save_for_backward(p, q)
        return _hamilton(p, q)

    @staticmethod
    def backward(ctx, grad):
        p, q = ctx.saved_tensors
        g = grad.t()                       # (4, N): one row per component
        qc = q.t()
        rows = [g[0] * qc[0] + g[1] * qc[1] + g[2] * qc[2] + g[3] * qc[3],
                -g[0] * qc[1] + g[1] * qc[0] - g[2] * qc[3] + g[3] * qc[2],
                -g[0] * qc[2] + g[1] * qc[3] + g[2] * qc[0] - g[3] * qc[1],
                -g[0] * qc[3] - g[1] * qc[2] + g[2] * qc[1] + g[3] * qc[0]]
        grad_p = torch.stack(rows).reshape(p.shape)  # BUG
        # d(p q)/dq is left multiplication by p: its transpose applied to g
        conj_p = p * torch.tensor([1.0, -1.0, -1.0, -1.0], dtype=p.dtype)
        grad_q = _hamilton(conj_p, grad)
        return grad_p, grad_q


class ForeignQuaternionProductTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "q",
           "note": "one term of the y component of q's gradient, gx * pz, has its sign flipped"}

    @staticmethod
    def forward(ctx, p, q):
        ctx.save_for_backward(p, q)
        return _hamilton(p, q)

    @staticmethod
    def backward(ctx, grad):
        p, q = ctx.saved_tensors
        conj_q = q * q.new_tensor([1.0, -1.0, -1.0, -1.0])
        grad_p = _hamilton(grad, conj_q)
        gw, gx, gy, gz = grad.unbind(-1)
        pw, px, py, pz = p.unbind(-1)
        dqw = gw * pw + gx * px + gy * py + gz * pz
        dqx = -gw * px + gx * pw + gy * pz - gz * py
        dqy = -gw * py + gx * pz + gy * pw + gz * px  # BUG
        dqz = -gw * pz + gx * py - gy * px + gz * pw
        return grad_p, torch.stack([dqw, dqx, dqy, dqz], dim=1)


# --------------------------------------------------------------------------- Rodrigues rotation
def _rodrigues_inputs():
    gen = torch.Generator().manual_seed(33)
    v = torch.randn(3, 3, dtype=torch.float64, generator=gen)
    k = torch.randn(3, 3, dtype=torch.float64, generator=gen)
    k = k / k.norm(dim=-1, keepdim=True)
    theta = torch.rand(3, dtype=torch.float64, generator=gen) * 3
    return v, k, theta


def _rodrigues(v, k, theta):
    c = torch.cos(theta)[:, None]
    s = torch.sin(theta)[:, None]
    kv = (k * v).sum(-1, keepdim=True)
    return v * c + _cross(k, v) * s + k * kv * (1 - c)


class ForeignRodriguesRotation(torch.autograd.Function):
    """v cos t + (k x v) sin t + k (k . v)(1 - cos t), one axis k and angle t per row."""

    bug = None

    @staticmethod
    def forward(ctx, v, k, theta):
        ctx.save_for_backward(v, k, theta)
        return _rodrigues(v, k, theta)

    @staticmethod
    def backward(ctx, grad):
        v, k, theta = ctx.saved_tensors
        c = torch.cos(theta)[:, None]
        s = torch.sin(theta)[:, None]
        kv = (k * v).sum(-1, keepdim=True)
        gk = (grad * k).sum(-1, keepdim=True)
        grad_v = grad * c + _cross(grad, k) * s + k * gk * (1 - c)
        grad_k = _cross(v, grad) * s + (grad * kv + v * gk) * (1 - c)
        d_theta = -v * s + _cross(k, v) * c + k * kv * s
        grad_theta = (grad * d_theta).sum(-1)
        return grad_v, grad_k, grad_theta

    @staticmethod
    def example_inputs():
        return _rodrigues_inputs()


class ForeignRodriguesRotationAngleMissesAxisTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "theta",
           "note": "the angle's derivative keeps -v sin t + (k x v) cos t but forgets "
                   "k (k . v) sin t from the (1 - cos t) term"}

    @staticmethod
    def forward(ctx, v, k, theta):
        ctx.save_for_backward(v, k, theta)
        return _rodrigues(v, k, theta)

    @staticmethod
    def backward(ctx, grad):
        v, k, theta = ctx.saved_tensors
        cos_t, sin_t = theta.cos().unsqueeze(-1), theta.sin().unsqueeze(-1)
        along = (k * v).sum(-1, keepdim=True)
        g_along = (grad * k).sum(-1, keepdim=True)
        grad_v = cos_t * grad + sin_t * _cross(grad, k) + (1 - cos_t) * g_along * k
        grad_k = sin_t * _cross(v, grad) + (1 - cos_t) * (along * grad + g_along * v)
        dtheta = _cross(k, v) * cos_t - v * sin_t  # BUG
        return grad_v, grad_k, (grad * dtheta).sum(-1)

    @staticmethod
    def example_inputs():
        return _rodrigues_inputs()


class ForeignRodriguesRotationAngleUnsummed(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "theta",
           "note": "the angle's gradient is left per component, (N, 3), instead of summed over "
                   "the three coordinates of the rotated vector"}

    @staticmethod
    def forward(ctx, v, k, theta):
        ctx.save_for_backward(v, k, theta)
        return _rodrigues(v, k, theta)

    @staticmethod
    def backward(ctx, grad):
        v, k, theta = ctx.saved_tensors
        c = torch.cos(theta)[:, None]
        s = torch.sin(theta)[:, None]
        kxv = _cross(k, v)
        kv = (k * v).sum(-1, keepdim=True)
        gk = (grad * k).sum(-1, keepdim=True)
        grad_v = grad * c + _cross(grad, k) * s + k * gk * (1 - c)
        grad_k = _cross(v, grad) * s + (grad * kv + v * gk) * (1 - c)
        grad_theta = grad * (kxv * c - v * s + k * kv * s)  # BUG
        return grad_v, grad_k, grad_theta

    @staticmethod
    def example_inputs():
        return _rodrigues_inputs()


# ------------------------------------------------------------------------- angle between vectors
class ForeignAngleBetween(torch.autograd.Function):
    """acos of the cosine similarity of a and b along the last dim."""

    bug = None

    @staticmethod
    def forward(ctx, a, b):
        na = a.norm(dim=-1)
        nb = b.norm(dim=-1)
        cos = (a * b).sum(-1) / (na * nb)
        ctx.save_for_backward(a, b, na, nb, cos)
        return torch.acos(cos)

    @staticmethod
    def backward(ctx, grad):
        a, b, na, nb, cos = ctx.saved_tensors
        dcos = -grad / torch.sqrt(1 - cos * cos)
        na_, nb_, cos_ = na[:, None], nb[:, None], cos[:, None]
        grad_a = dcos[:, None] * (b / (na_ * nb_) - cos_ * a / na_ ** 2)
        grad_b = dcos[:, None] * (a / (na_ * nb_) - cos_ * b / nb_ ** 2)
        return grad_a, grad_b


class ForeignAngleBetweenUnitDifference(torch.autograd.Function):
    bug = {"kind": "none", "input": "a",
           "note": "a's gradient is taken as -(b/|b| - a/|a|) / sin(theta): neither the cosine's "
                   "weight on a/|a| nor the 1/|a| of the projection, an entirely wrong formula"}

    @staticmethod
    def forward(ctx, a, b):
        na = a.norm(dim=-1, keepdim=True)
        nb = b.norm(dim=-1, keepdim=True)
        cos = ((a / na) * (b / nb)).sum(-1, keepdim=True)
        ctx.save_for_backward(a, b, na, nb, cos)
        return torch.acos(cos).squeeze(-1)

    @staticmethod
    def backward(ctx, grad):
        a, b, na, nb, cos = ctx.saved_tensors
        sin = torch.sqrt(1 - cos ** 2)
        g = grad.unsqueeze(-1)
        ua, ub = a / na, b / nb
        grad_a = -g * (ub - ua) / sin  # BUG
        grad_b = -g * (ua - cos * ub) / (nb * sin)
        return grad_a, grad_b


# ------------------------------------------------------------------------ point-to-plane distance
def _plane_inputs():
    gen = torch.Generator().manual_seed(35)
    points = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    normal = torch.randn(3, dtype=torch.float64, generator=gen)
    origin = torch.randn(3, dtype=torch.float64, generator=gen)
    return points, normal, origin


class ForeignPointPlaneDistance(torch.autograd.Function):
    """|(p - o) . n| / |n| for every point p, plane through o with (unnormalised) normal n."""

    bug = None

    @staticmethod
    def forward(ctx, points, normal, origin):
        offset = points - origin
        length = normal.norm()
        signed = offset @ normal / length
        ctx.save_for_backward(offset, normal, signed)
        ctx.length = length
        return signed.abs()

    @staticmethod
    def backward(ctx, grad):
        offset, normal, signed = ctx.saved_tensors
        length = ctx.length
        g = (grad * torch.sign(signed))[:, None]
        grad_points = g * normal / length
        grad_normal = (g * (offset / length - signed[:, None] * normal / length ** 2)).sum(0)
        grad_origin = -grad_points.sum(0)
        return grad_points, grad_normal, grad_origin

    @staticmethod
    def example_inputs():
        return _plane_inputs()


class ForeignPointPlaneDistanceFrontSideOnly(torch.autograd.Function):
    bug = {"kind": "region", "input": "points",
           "note": "the derivative of |s| is taken as the step (s > 0), as for a ReLU, so points "
                   "behind the plane get no gradient instead of a negated one"}

    @staticmethod
    def forward(ctx, points, normal, origin):
        length = normal.norm()
        signed = (points - origin) @ normal / length
        ctx.save_for_backward(points, normal, origin, signed)
        return signed.abs()

    @staticmethod
    def backward(ctx, grad):
        points, normal, origin, signed = ctx.saved_tensors
        length = normal.norm()
        unit = normal / length
        d_signed = grad * (signed > 0).to(grad.dtype)  # BUG
        grad_points = torch.outer(d_signed, unit)
        grad_origin = -grad_points.sum(0)
        offset = points - origin
        grad_normal = (d_signed[:, None] * (offset - signed[:, None] * unit)).sum(0) / length
        return grad_points, grad_normal, grad_origin

    @staticmethod
    def example_inputs():
        return _plane_inputs()


class ForeignPointPlaneDistancePlaneGradsSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "normal",
           "note": "the normal's and the origin's gradients (both of shape (3,)) are returned in "
                   "each other's places"}

    @staticmethod
    def forward(ctx, points, normal, origin):
        offset = points - origin
        length = normal.norm()
        signed = offset @ normal / length
        ctx.save_for_backward(offset, normal, signed)
        return signed.abs()

    @staticmethod
    def backward(ctx, grad):
        offset, normal, signed = ctx.saved_tensors
        length = normal.norm()
        g = grad * signed.sign()
        grad_points = g[:, None] * (normal / length)[None, :]
        grad_origin = -grad_points.sum(0)
        grad_normal = g @ offset / length - (g * signed).sum() * normal / length ** 2
        return grad_points, grad_origin, grad_normal  # BUG

    @staticmethod
    def example_inputs():
        return _plane_inputs()


# ---------------------------------------------------------------------------- normalised vectors
class ForeignNormalize(torch.autograd.Function):
    """x / |x| along the last dim."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        norm = x.norm(dim=-1, keepdim=True)
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, grad):
        y, norm = ctx.saved_tensors
        radial = (y * grad).sum(-1, keepdim=True)
        return (grad - y * radial) / norm


class ForeignNormalizeRadialOverBatch(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the radial component <y, g> is summed over the batch dim 0 instead of over "
                   "the vector's own last dim"}

    @staticmethod
    def forward(ctx, x):
        norm = x.norm(dim=-1, keepdim=True)
        ctx.save_for_backward(x, norm)
        return x / norm

    @staticmethod
    def backward(ctx, grad):
        x, norm = ctx.saved_tensors
        y = x / norm
        radial = (y * grad).sum(0, keepdim=True)  # BUG
        return (grad - radial * y) / norm


class ForeignNormalizeInPlaceBuffer(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "the buffer kept on ctx as the raw input is then divided in place to make the "
                   "output, so backward reads y where it expects x"}

    @staticmethod
    def forward(ctx, x):
        buf = x.clone()
        ctx.x = buf                                # kept for backward
        norm = buf.norm(dim=-1, keepdim=True)
        ctx.norm = norm
        buf.div_(norm)  # BUG
        return buf

    @staticmethod
    def backward(ctx, grad):
        y = ctx.x / ctx.norm
        return (grad - y * (y * grad).sum(-1, keepdim=True)) / ctx.norm
