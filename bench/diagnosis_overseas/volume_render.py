"""Volume rendering by alpha compositing along rays (NeRF-style), vectorised over rays and samples.

T_i = prod_{j<i} (1 - alpha_j) is the transmittance in front of sample i, w_i = T_i alpha_i its
weight, and a ray's colour is sum_i w_i c_i.
"""
import torch


def _exclusive_transmittance(alpha):
    """T_i = prod_{j<i} (1 - alpha_j) along the last dim (T_0 = 1)."""
    ones = torch.ones_like(alpha[..., :1])
    return torch.cumprod(torch.cat([ones, 1 - alpha[..., :-1]], dim=-1), dim=-1)


def _ray_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    alpha = 0.1 + 0.7 * torch.rand(3, 5, dtype=torch.float64, generator=gen)
    rgb = torch.rand(3, 5, 3, dtype=torch.float64, generator=gen)
    return alpha, rgb


def _composite_forward(ctx, alpha, rgb):
    trans = _exclusive_transmittance(alpha)
    weights = trans * alpha
    ctx.save_for_backward(alpha, rgb, trans, weights)
    return torch.einsum("rs,rsc->rc", weights, rgb)


class OverseasAlphaComposite(torch.autograd.Function):
    """colour[r] = sum_i T_i alpha_i rgb_i along each ray."""

    bug = None

    @staticmethod
    def forward(ctx, alpha, rgb):
        return _composite_forward(ctx, alpha, rgb)

    @staticmethod
    def backward(ctx, grad_color):
        alpha, rgb, trans, weights = ctx.saved_tensors
        grad_alpha = grad_rgb = None
        shade = torch.einsum("rc,rsc->rs", grad_color, rgb)  # g . c_i
        if ctx.needs_input_grad[0]:
            contrib = weights * shade
            later = contrib.flip(-1).cumsum(-1).flip(-1) - contrib  # sum over samples behind k
            grad_alpha = trans * shade - later / (1 - alpha)
        if ctx.needs_input_grad[1]:
            grad_rgb = weights[..., None] * grad_color[:, None, :]
        return grad_alpha, grad_rgb

    @staticmethod
    def example_inputs():
        return _ray_inputs(11)


class OverseasAlphaCompositePrefix(torch.autograd.Function):
    """The occlusion term sums the samples in front instead of those behind."""

    bug = {"kind": "missing_flip", "input": "alpha",
           "note": "the suffix sum over later samples is taken as a plain cumsum (no flips), so it sums the samples in front"}

    @staticmethod
    def forward(ctx, alpha, rgb):
        return _composite_forward(ctx, alpha, rgb)

    @staticmethod
    def backward(ctx, grad_color):
        alpha, rgb, trans, weights = ctx.saved_tensors
        shade = torch.einsum("rc,rsc->rs", grad_color, rgb)
        contrib = weights * shade
        later = contrib.cumsum(-1) - contrib  # BUG
        grad_alpha = trans * shade - later / (1 - alpha)
        grad_rgb = weights[..., None] * grad_color[:, None, :]
        return grad_alpha, grad_rgb

    @staticmethod
    def example_inputs():
        return _ray_inputs(11)


class OverseasAlphaCompositeOcclusionSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "alpha",
           "note": "raising alpha_k dims every later sample, but that term is added instead of subtracted"}

    @staticmethod
    def forward(ctx, alpha, rgb):
        return _composite_forward(ctx, alpha, rgb)

    @staticmethod
    def backward(ctx, grad_color):
        alpha, rgb, trans, weights = ctx.saved_tensors
        shade = torch.einsum("rc,rsc->rs", grad_color, rgb)
        contrib = weights * shade
        later = contrib.flip(-1).cumsum(-1).flip(-1) - contrib
        grad_alpha = trans * shade + later / (1 - alpha)  # BUG
        grad_rgb = weights[..., None] * grad_color[:, None, :]
        return grad_alpha, grad_rgb

    @staticmethod
    def example_inputs():
        return _ray_inputs(12)


class OverseasAlphaCompositeNoOcclusion(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "alpha",
           "note": "only d(T_k alpha_k)/d alpha_k is kept; the effect of alpha_k on the transmittance of later samples is left out"}

    @staticmethod
    def forward(ctx, alpha, rgb):
        return _composite_forward(ctx, alpha, rgb)

    @staticmethod
    def backward(ctx, grad_color):
        alpha, rgb, trans, weights = ctx.saved_tensors
        shade = torch.einsum("rc,rsc->rs", grad_color, rgb)
        grad_alpha = trans * shade  # BUG
        grad_rgb = weights[..., None] * grad_color[:, None, :]
        return grad_alpha, grad_rgb

    @staticmethod
    def example_inputs():
        return _ray_inputs(13)


class OverseasAlphaCompositeAlphaWeights(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "rgb",
           "note": "the colour gradient is weighted by the raw alpha instead of the compositing weight T * alpha"}

    @staticmethod
    def forward(ctx, alpha, rgb):
        return _composite_forward(ctx, alpha, rgb)

    @staticmethod
    def backward(ctx, grad_color):
        alpha, rgb, trans, weights = ctx.saved_tensors
        shade = torch.einsum("rc,rsc->rs", grad_color, rgb)
        contrib = weights * shade
        later = contrib.flip(-1).cumsum(-1).flip(-1) - contrib
        grad_alpha = trans * shade - later / (1 - alpha)
        grad_rgb = alpha[..., None] * grad_color[:, None, :]  # BUG
        return grad_alpha, grad_rgb

    @staticmethod
    def example_inputs():
        return _ray_inputs(14)


class OverseasTransmittance(torch.autograd.Function):
    """The per-sample transmittance T (R, S) itself, e.g. for a visibility loss."""

    bug = None

    @staticmethod
    def forward(ctx, alpha):
        trans = _exclusive_transmittance(alpha)
        ctx.save_for_backward(alpha, trans)
        return trans

    @staticmethod
    def backward(ctx, grad_trans):
        alpha, trans = ctx.saved_tensors
        gt = grad_trans * trans
        later = gt.flip(1).cumsum(1).flip(1) - gt  # sum_{i > k} g_i T_i
        return -later / (1 - alpha)

    @staticmethod
    def example_inputs():
        return (0.1 + 0.7 * torch.rand(4, 5, dtype=torch.float64,
                                       generator=torch.Generator().manual_seed(15)),)


class OverseasTransmittanceRayAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "alpha",
           "note": "the suffix sum runs down dim 0 (across rays) instead of along the samples of each ray"}

    @staticmethod
    def forward(ctx, alpha):
        trans = _exclusive_transmittance(alpha)
        ctx.save_for_backward(alpha, trans)
        return trans

    @staticmethod
    def backward(ctx, grad_trans):
        alpha, trans = ctx.saved_tensors
        gt = grad_trans * trans
        later = gt.flip(1).cumsum(0).flip(1) - gt  # BUG
        return -later / (1 - alpha)

    @staticmethod
    def example_inputs():
        return (0.1 + 0.7 * torch.rand(4, 5, dtype=torch.float64,
                                       generator=torch.Generator().manual_seed(15)),)
