"""Rendering: a soft rasteriser (coverage = sigmoid of the signed distance to a disc), its hard
twin with a smooth surrogate gradient, and front-to-back alpha compositing whose transmittance is
an exclusive cumprod over depth."""
import torch

SHARP = 0.1
_XS = torch.linspace(0, 1, 4, dtype=torch.float64)
PIXELS = torch.stack(torch.meshgrid(_XS, _XS, indexing="ij"), dim=-1)  # (4, 4, 2) pixel centres


def _disc_inputs():
    return (torch.tensor([0.45, 0.52], dtype=torch.float64),
            torch.tensor([0.3], dtype=torch.float64))


def _signed(center, radius):
    offset = PIXELS - center            # (4, 4, 2)
    dist = offset.norm(dim=-1)          # (4, 4)
    return offset, dist, (radius - dist) / SHARP


# ------------------------------------------------------------------------- soft rasteriser
class UnheardSoftDisc(torch.autograd.Function):
    """Coverage of a 4x4 pixel grid by a disc, sigmoid((r - |p - c|) / s)."""

    bug = None

    @staticmethod
    def forward(ctx, center, radius):
        _, _, z = _signed(center, radius)
        cov = torch.sigmoid(z)
        ctx.save_for_backward(center, radius, cov)
        return cov

    @staticmethod
    def backward(ctx, grad_cov):
        center, radius, cov = ctx.saved_tensors
        offset, dist, _ = _signed(center, radius)
        dz = grad_cov * cov * (1 - cov) / SHARP
        grad_radius = dz.sum().reshape(1)
        grad_center = (dz / dist).unsqueeze(-1).mul(offset).sum((0, 1))
        return grad_center, grad_radius

    example_inputs = staticmethod(_disc_inputs)


class UnheardSoftDiscInwardOffset(torch.autograd.Function):
    """Same coverage; the centre gradient written from d|p - c| / dc."""

    bug = {"kind": "sign", "input": "center",
           "note": "d|p - c|/dc = (c - p)/|p - c| enters with a minus through r - |p - c|; the "
                   "minus is dropped, flipping the centre gradient"}

    @staticmethod
    def forward(ctx, center, radius):
        offset, dist, z = _signed(center, radius)
        ctx.save_for_backward(center, dist, torch.sigmoid(z))
        return torch.sigmoid(z)

    @staticmethod
    def backward(ctx, grad_cov):
        center, dist, cov = ctx.saved_tensors
        slope = grad_cov * cov * (1 - cov) / SHARP
        unit = (center - PIXELS) / dist[..., None]   # d dist / d center
        grad_center = torch.einsum("hw,hwc->c", slope, unit)  # BUG
        return grad_center, slope.sum().view(1)

    example_inputs = staticmethod(_disc_inputs)


class UnheardSoftDiscRadiusUnscaled(torch.autograd.Function):
    """Same coverage; backward kept per pixel with ctx attributes."""

    bug = {"kind": "scale", "input": "radius",
           "note": "d z / d r is 1 / sharpness; the radius gradient uses sigmoid' alone"}

    @staticmethod
    def forward(ctx, center, radius):
        offset, dist, z = _signed(center, radius)
        ctx.offset, ctx.dist = offset, dist
        ctx.cov = torch.sigmoid(z)
        return ctx.cov

    @staticmethod
    def backward(ctx, grad_cov):
        dsig = ctx.cov * (1.0 - ctx.cov)
        grad_radius = (grad_cov * dsig).sum(dim=(0, 1), keepdim=False)[None]  # BUG
        per_pixel = grad_cov * dsig / (SHARP * ctx.dist)
        grad_center = (per_pixel[..., None] * ctx.offset).flatten(0, 1).sum(0)
        return grad_center, grad_radius

    example_inputs = staticmethod(_disc_inputs)


class UnheardHardDiscSigmoidSurrogate(torch.autograd.Function):
    """Hard coverage |p - c| < r; backward differentiates the soft rasteriser instead."""

    bug = {"kind": "smooth_surrogate", "input": "radius",
           "note": "deliberate surrogate: the step's gradient is taken from sigmoid((r - d) / s)"}

    @staticmethod
    def forward(ctx, center, radius):
        offset, dist, z = _signed(center, radius)
        ctx.save_for_backward(offset, dist, z)
        return (dist < radius).to(center.dtype)

    @staticmethod
    def backward(ctx, grad_cov):
        offset, dist, z = ctx.saved_tensors
        s = torch.sigmoid(z)
        dz = grad_cov * s * (1 - s) / SHARP  # BUG
        return (dz[..., None] * offset / dist[..., None]).sum((0, 1)), dz.sum().reshape(1)

    example_inputs = staticmethod(_disc_inputs)


# ------------------------------------------------------------------------ alpha compositing
def _composite_inputs():
    g = torch.Generator().manual_seed(41)
    alpha = torch.rand(5, 4, dtype=torch.float64, generator=g) * 0.7 + 0.1
    color = torch.randn(5, 4, dtype=torch.float64, generator=g)
    return alpha, color


def _transmittance(alpha):
    """T_k = prod_{j < k} (1 - alpha_j) along depth (dim 0)."""
    through = torch.cumprod(1 - alpha, dim=0)
    return torch.cat([torch.ones_like(alpha[:1]), through[:-1]], dim=0)


class UnheardAlphaComposite(torch.autograd.Function):
    """Front-to-back compositing of 5 depth samples per ray: sum_k alpha_k T_k c_k."""

    bug = None

    @staticmethod
    def forward(ctx, alpha, color):
        trans = _transmittance(alpha)
        weight = alpha * trans
        ctx.save_for_backward(alpha, color, trans, weight)
        return (weight * color).sum(0)

    @staticmethod
    def backward(ctx, grad_pixel):
        alpha, color, trans, weight = ctx.saved_tensors
        contrib = weight * color
        behind = contrib.flip(0).cumsum(0).flip(0) - contrib   # sum over samples behind k
        grad_alpha = grad_pixel * (color * trans - behind / (1 - alpha))
        grad_color = grad_pixel * weight
        return grad_alpha, grad_color

    example_inputs = staticmethod(_composite_inputs)


class UnheardAlphaCompositeFrontSum(torch.autograd.Function):
    """Same compositing; the occlusion term summed with a running sum."""

    bug = {"kind": "missing_flip", "input": "alpha",
           "note": "alpha_k dims the samples behind it (m > k); the running sum goes front to "
                   "back and adds the samples in front instead (a reversed cumsum is needed)"}

    @staticmethod
    def forward(ctx, alpha, color):
        trans = _transmittance(alpha)
        ctx.save_for_backward(alpha, color, trans)
        return (alpha * trans * color).sum(0)

    @staticmethod
    def backward(ctx, grad_pixel):
        alpha, color, trans = ctx.saved_tensors
        contrib = alpha * trans * color
        occluded = torch.cumsum(contrib, dim=0) - contrib  # BUG
        grad_alpha = grad_pixel[None, :] * (color * trans - occluded / (1 - alpha))
        grad_color = grad_pixel[None, :] * alpha * trans
        return grad_alpha, grad_color

    example_inputs = staticmethod(_composite_inputs)


class UnheardAlphaCompositeDepthLoop(torch.autograd.Function):
    """Same compositing, forward and backward by loops over the depth samples."""

    bug = {"kind": "wrong_variable", "input": "color",
           "note": "the colour of sample k is weighted by alpha_k T_k; the loop uses alpha_k "
                   "alone and forgets the transmittance"}

    @staticmethod
    def forward(ctx, alpha, color):
        out = torch.zeros_like(color[0])
        t = torch.ones_like(alpha[0])
        for k in range(alpha.shape[0]):
            out = out + alpha[k] * t * color[k]
            t = t * (1 - alpha[k])
        ctx.save_for_backward(alpha, color)
        return out

    @staticmethod
    def backward(ctx, grad_pixel):
        alpha, color = ctx.saved_tensors
        depth = alpha.shape[0]
        trans = _transmittance(alpha)
        grad_alpha = torch.empty_like(alpha)
        grad_color = torch.empty_like(color)
        behind = torch.zeros_like(grad_pixel)
        for k in reversed(range(depth)):
            grad_color[k] = grad_pixel * alpha[k]  # BUG
            grad_alpha[k] = grad_pixel * (color[k] * trans[k] - behind / (1 - alpha[k]))
            behind = behind + alpha[k] * trans[k] * color[k]
        return grad_alpha, grad_color

    example_inputs = staticmethod(_composite_inputs)
