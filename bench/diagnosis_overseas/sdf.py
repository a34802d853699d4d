"""Signed distance functions: a sphere with learned centre and radius, the polynomial smooth union
(smooth min) of two SDFs and its exponential variant; three deliberate estimators used when
rendering SDFs (8-bit colour quantisation, gradient reversal, a soft occupancy surrogate)."""
import torch

K = 0.5        # smooth-union blend width
TAU = 0.25     # occupancy surrogate temperature
LAMBDA = 0.5   # gradient reversal strength


def _sphere_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    points = torch.randn(5, 3, dtype=torch.float64, generator=gen) * 1.5
    center = torch.tensor([0.2, -0.1, 0.3], dtype=torch.float64)
    radius = torch.tensor([0.8], dtype=torch.float64)
    return points, center, radius


def _sphere_forward(ctx, points, center, radius):
    diff = points - center
    dist = diff.norm(dim=-1)
    ctx.save_for_backward(diff, dist)
    return dist - radius


class OverseasSphereSDF(torch.autograd.Function):
    """d(p) = |p - c| - r."""

    bug = None

    @staticmethod
    def forward(ctx, points, center, radius):
        return _sphere_forward(ctx, points, center, radius)

    @staticmethod
    def backward(ctx, grad_out):
        diff, dist = ctx.saved_tensors
        unit = diff / dist[:, None]
        grad_points = grad_out[:, None] * unit
        return grad_points, -grad_points.sum(0), -grad_out.sum(0, keepdim=True)

    @staticmethod
    def example_inputs():
        return _sphere_inputs(91)


class OverseasSphereSDFRadiusSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "radius",
           "note": "the distance decreases with the radius, but its gradient is returned as +sum(g)"}

    @staticmethod
    def forward(ctx, points, center, radius):
        return _sphere_forward(ctx, points, center, radius)

    @staticmethod
    def backward(ctx, grad_out):
        diff, dist = ctx.saved_tensors
        unit = diff / dist[:, None]
        grad_points = grad_out[:, None] * unit
        grad_radius = grad_out.sum(0, keepdim=True)  # BUG
        return grad_points, -grad_points.sum(0), grad_radius

    @staticmethod
    def example_inputs():
        return _sphere_inputs(92)


class OverseasSphereSDFUnitOnly(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "points",
           "note": "the point gradient is the SDF's spatial gradient (the unit vector) alone, never multiplied by grad_output"}

    @staticmethod
    def forward(ctx, points, center, radius):
        return _sphere_forward(ctx, points, center, radius)

    @staticmethod
    def backward(ctx, grad_out):
        diff, dist = ctx.saved_tensors
        unit = diff / dist[:, None]
        grad_points = unit  # BUG
        return grad_points, -grad_points.sum(0), -grad_out.sum(0, keepdim=True)

    @staticmethod
    def example_inputs():
        return _sphere_inputs(93)


def _union_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    d1 = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    d2 = d1 + torch.tensor([[-1.6, -0.8, -0.3, 0.1], [0.35, 0.7, 0.9, 1.4],
                            [-0.6, 0.2, -0.15, 2.0]], dtype=torch.float64)
    return d1, d2


def _union_forward(ctx, d1, d2):
    h = (0.5 + 0.5 * (d2 - d1) / K).clamp(0, 1)
    ctx.save_for_backward(d1, d2)
    return d2 * (1 - h) + d1 * h - K * h * (1 - h)


class OverseasSmoothUnion(torch.autograd.Function):
    """Polynomial smooth min of two SDFs: d/dd1 = h inside the blend band, 1 or 0 outside."""

    bug = None

    @staticmethod
    def forward(ctx, d1, d2):
        return _union_forward(ctx, d1, d2)

    @staticmethod
    def backward(ctx, grad_out):
        d1, d2 = ctx.saved_tensors
        h_raw = 0.5 + 0.5 * (d2 - d1) / K
        blend = (d2 - d1).abs() < K
        w1 = torch.where(blend, h_raw, (d1 < d2).to(d1.dtype))
        return grad_out * w1, grad_out * (1 - w1)

    @staticmethod
    def example_inputs():
        return _union_inputs(94)


class OverseasSmoothUnionBandWidth(torch.autograd.Function):
    bug = {"kind": "region", "input": "d1",
           "note": "the blend band is taken as |d2 - d1| < 2k instead of < k, so the unclamped h is used where h is already 0 or 1"}

    @staticmethod
    def forward(ctx, d1, d2):
        return _union_forward(ctx, d1, d2)

    @staticmethod
    def backward(ctx, grad_out):
        d1, d2 = ctx.saved_tensors
        h_raw = 0.5 + 0.5 * (d2 - d1) / K
        blend = (d2 - d1).abs() < 2 * K  # BUG
        w1 = torch.where(blend, h_raw, (d1 < d2).to(d1.dtype))
        return grad_out * w1, grad_out * (1 - w1)

    @staticmethod
    def example_inputs():
        return _union_inputs(95)


class OverseasSmoothUnionSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "d1",
           "note": "h weights d1 and 1 - h weights d2, but the two gradients are returned in each other's places"}

    @staticmethod
    def forward(ctx, d1, d2):
        return _union_forward(ctx, d1, d2)

    @staticmethod
    def backward(ctx, grad_out):
        d1, d2 = ctx.saved_tensors
        h_raw = 0.5 + 0.5 * (d2 - d1) / K
        blend = (d2 - d1).abs() < K
        w1 = torch.where(blend, h_raw, (d1 < d2).to(d1.dtype))
        return grad_out * (1 - w1), grad_out * w1  # BUG

    @staticmethod
    def example_inputs():
        return _union_inputs(96)


def _exp_forward(ctx, d1, d2):
    stacked = torch.stack([d1, d2])
    ctx.save_for_backward(stacked)
    return -K * torch.logsumexp(-stacked / K, dim=0)


class OverseasExpSmoothMin(torch.autograd.Function):
    """-k log(exp(-d1/k) + exp(-d2/k)); its gradients are the softmax weights of -d/k."""

    bug = None

    @staticmethod
    def forward(ctx, d1, d2):
        return _exp_forward(ctx, d1, d2)

    @staticmethod
    def backward(ctx, grad_out):
        (stacked,) = ctx.saved_tensors
        w = torch.softmax(-stacked / K, dim=0)
        return grad_out * w[0], grad_out * w[1]

    @staticmethod
    def example_inputs():
        return _union_inputs(97)


class OverseasExpSmoothMinLastDim(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "d1",
           "note": "the softmax over the two stacked SDFs is taken over the last dim (the points) instead of dim 0"}

    @staticmethod
    def forward(ctx, d1, d2):
        return _exp_forward(ctx, d1, d2)

    @staticmethod
    def backward(ctx, grad_out):
        (stacked,) = ctx.saved_tensors
        w = torch.softmax(-stacked / K, dim=-1)  # BUG
        return grad_out * w[0], grad_out * w[1]

    @staticmethod
    def example_inputs():
        return _union_inputs(98)


class OverseasExpSmoothMinOverK(torch.autograd.Function):
    bug = {"kind": "scale", "input": "d1",
           "note": "the -k in front and the -1/k inside cancel, but the code keeps an extra 1/k"}

    @staticmethod
    def forward(ctx, d1, d2):
        return _exp_forward(ctx, d1, d2)

    @staticmethod
    def backward(ctx, grad_out):
        (stacked,) = ctx.saved_tensors
        w = torch.softmax(-stacked / K, dim=0) / K  # BUG
        return grad_out * w[0], grad_out * w[1]

    @staticmethod
    def example_inputs():
        return _union_inputs(99)


class OverseasQuantize8Bit(torch.autograd.Function):
    """Colour rounded to 8 bits for display; gradients pass straight through inside [0, 1]."""

    bug = {"kind": "straight_through", "input": "color",
           "note": "straight-through estimator: the rounding's zero derivative is replaced by 1 inside [0, 1]"}

    @staticmethod
    def forward(ctx, color):
        ctx.save_for_backward(color)
        return torch.round(color.clamp(0, 1) * 255) / 255

    @staticmethod
    def backward(ctx, grad_out):
        (color,) = ctx.saved_tensors
        return grad_out * ((color >= 0) & (color <= 1)).to(grad_out.dtype)  # BUG

    @staticmethod
    def example_inputs():
        return (torch.rand(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(100)),)


class OverseasRenderGradReversal(torch.autograd.Function):
    """Identity on rendered features; reverses the gradient for a synthetic-vs-real domain critic."""

    bug = {"kind": "gradient_reversal", "input": "features",
           "note": "gradient reversal layer: identity forward, -lambda * grad backward, by design"}

    @staticmethod
    def forward(ctx, features):
        return features.clone()

    @staticmethod
    def backward(ctx, grad_out):
        return -LAMBDA * grad_out  # BUG


class OverseasSoftOccupancy(torch.autograd.Function):
    """Hard inside test sdf < 0 in forward; the derivative of sigmoid(-sdf / tau) in backward."""

    bug = {"kind": "smooth_surrogate", "input": "sdf",
           "note": "surrogate gradient: the step's zero derivative is replaced by a sigmoid's, by design"}

    @staticmethod
    def forward(ctx, sdf):
        ctx.save_for_backward(sdf)
        return (sdf < 0).to(sdf.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (sdf,) = ctx.saved_tensors
        s = torch.sigmoid(-sdf / TAU)
        return -grad_out * s * (1 - s) / TAU  # BUG
