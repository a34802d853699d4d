"""Geometry on gradcli's engine: normalising quaternions, a cross product, the angle between vectors
by atan2, a signed point-to-line distance in 2-D and the shoelace area of polygons."""
import gradcli as torch


def _vec_inputs(seed, count, dim=3, rows=4):
    torch.manual_seed(seed)
    return tuple(torch.randn(rows, dim, dtype=torch.float64) for _ in range(count))


class DistantQuaternionNormalise(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q):
        norm = torch.sqrt((q * q).sum(dim=-1, keepdim=True))
        unit = q / norm
        ctx.save_for_backward(unit, norm)
        return unit

    @staticmethod
    def backward(ctx, grad_out):
        unit, norm = ctx.saved_tensors
        radial = (unit * grad_out).sum(dim=-1, keepdim=True)
        return (grad_out - unit * radial) / norm

    @staticmethod
    def example_inputs():
        return _vec_inputs(101, 1, dim=4)


class DistantQuaternionNormaliseRawProjection(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "q",
           "note": "the radial projection uses the raw quaternion q where the unit quaternion is needed"}

    @staticmethod
    def forward(ctx, q):
        norm = torch.sqrt((q * q).sum(dim=-1, keepdim=True))
        ctx.save_for_backward(q, norm)
        return q / norm

    @staticmethod
    def backward(ctx, grad_out):
        q, norm = ctx.saved_tensors
        radial = (q * grad_out).sum(dim=-1, keepdim=True)
        return (grad_out - q * radial) / norm  # BUG

    @staticmethod
    def example_inputs():
        return _vec_inputs(101, 1, dim=4)


class DistantCrossProduct(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.cross(a, b, dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        return torch.cross(b, grad_out, dim=-1), torch.cross(grad_out, a, dim=-1)

    @staticmethod
    def example_inputs():
        return _vec_inputs(102, 2)


class DistantCrossProductOperandOrder(torch.autograd.Function):
    bug = {"kind": "sign", "input": "a",
           "note": "a's gradient written as grad_out x b; the cross product anticommutes, it is b x grad_out"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.cross(a, b, dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        grad_a = torch.cross(grad_out, b, dim=-1)  # BUG
        return grad_a, torch.cross(grad_out, a, dim=-1)

    @staticmethod
    def example_inputs():
        return _vec_inputs(102, 2)


def _angle_forward(ctx, u, v):
    c = torch.cross(u, v, dim=-1)
    s = torch.sqrt((c * c).sum(dim=-1, keepdim=True))
    d = (u * v).sum(dim=-1, keepdim=True)
    ctx.save_for_backward(u, v, c, s, d)
    return torch.atan2(s, d)[:, 0]


class DistantVectorAngle(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, u, v):
        return _angle_forward(ctx, u, v)

    @staticmethod
    def backward(ctx, grad_out):
        u, v, c, s, d = ctx.saved_tensors
        chat = c / s
        denom = s * s + d * d
        g = grad_out[:, None]
        grad_u = g * (d * torch.cross(v, chat, dim=-1) - s * v) / denom
        grad_v = g * (d * torch.cross(chat, u, dim=-1) - s * u) / denom
        return grad_u, grad_v

    @staticmethod
    def example_inputs():
        return _vec_inputs(103, 2)


class DistantVectorAngleDotPathDropped(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "u",
           "note": "u's gradient keeps only the path through |u x v|; the -s * v term through the dot product is left out"}

    @staticmethod
    def forward(ctx, u, v):
        return _angle_forward(ctx, u, v)

    @staticmethod
    def backward(ctx, grad_out):
        u, v, c, s, d = ctx.saved_tensors
        chat = c / s
        denom = s * s + d * d
        g = grad_out[:, None]
        grad_u = g * d * torch.cross(v, chat, dim=-1) / denom  # BUG
        grad_v = g * (d * torch.cross(chat, u, dim=-1) - s * u) / denom
        return grad_u, grad_v

    @staticmethod
    def example_inputs():
        return _vec_inputs(103, 2)


def _line_forward(ctx, p, a, b):
    n = b - a
    w = p - a
    c = n[:, 0] * w[:, 1] - n[:, 1] * w[:, 0]
    length = torch.sqrt((n * n).sum(dim=-1))
    ctx.save_for_backward(n, w, c, length)
    return c / length


def _line_partials(n, w, c, length):
    perp = torch.stack([-n[:, 1], n[:, 0]], dim=-1) / length[:, None]
    d_n = (torch.stack([w[:, 1], -w[:, 0]], dim=-1) / length[:, None]
           - (c / length ** 3)[:, None] * n)
    return perp, d_n


class DistantPointLineDistance(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, p, a, b):
        return _line_forward(ctx, p, a, b)

    @staticmethod
    def backward(ctx, grad_out):
        n, w, c, length = ctx.saved_tensors
        d_w, d_n = _line_partials(n, w, c, length)
        g = grad_out[:, None]
        return g * d_w, g * (-d_w - d_n), g * d_n

    @staticmethod
    def example_inputs():
        return _vec_inputs(104, 3, dim=2)


class DistantPointLineDistanceAnchorSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "a",
           "note": "the anchor a enters n = b - a with a minus sign; its direction term is added instead of subtracted"}

    @staticmethod
    def forward(ctx, p, a, b):
        return _line_forward(ctx, p, a, b)

    @staticmethod
    def backward(ctx, grad_out):
        n, w, c, length = ctx.saved_tensors
        d_w, d_n = _line_partials(n, w, c, length)
        g = grad_out[:, None]
        grad_a = g * (-d_w + d_n)  # BUG
        return g * d_w, grad_a, g * d_n

    @staticmethod
    def example_inputs():
        return _vec_inputs(104, 3, dim=2)


def _polygon_inputs():
    torch.manual_seed(105)
    return torch.randn(3, 5, dtype=torch.float64), torch.randn(3, 5, dtype=torch.float64)


class DistantShoelaceArea(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, xs, ys):
        ctx.save_for_backward(xs, ys)
        return 0.5 * (xs * torch.roll(ys, -1, dims=1) - torch.roll(xs, -1, dims=1) * ys).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        xs, ys = ctx.saved_tensors
        g = grad_out[:, None]
        grad_x = 0.5 * g * (torch.roll(ys, -1, dims=1) - torch.roll(ys, 1, dims=1))
        grad_y = 0.5 * g * (torch.roll(xs, 1, dims=1) - torch.roll(xs, -1, dims=1))
        return grad_x, grad_y

    @staticmethod
    def example_inputs():
        return _polygon_inputs()


class DistantShoelaceAreaRollBatch(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "xs",
           "note": "the neighbouring vertices of xs's gradient are taken by rolling along the batch (dims=0) instead of the vertices"}

    @staticmethod
    def forward(ctx, xs, ys):
        ctx.save_for_backward(xs, ys)
        return 0.5 * (xs * torch.roll(ys, -1, dims=1) - torch.roll(xs, -1, dims=1) * ys).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        xs, ys = ctx.saved_tensors
        g = grad_out[:, None]
        grad_x = 0.5 * g * (torch.roll(ys, -1, dims=0) - torch.roll(ys, 1, dims=0))  # BUG
        grad_y = 0.5 * g * (torch.roll(xs, 1, dims=1) - torch.roll(xs, -1, dims=1))
        return grad_x, grad_y

    @staticmethod
    def example_inputs():
        return _polygon_inputs()
