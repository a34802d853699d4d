import gradcli as torch

"""Colour-space conversions on gradcli's numpy engine: RGB to YCbCr by the fixed BT.601 matrix, a
learned 3x3 colour-correction matrix, a luminance weighted by a learned per-channel vector over a
channel-first image, and a per-pixel saturation control."""

YCBCR = [[0.299, 0.587, 0.114], [-0.168736, -0.331264, 0.5], [0.5, -0.418688, -0.081312]]
YCBCR_OFFSET = [0.0, 0.5, 0.5]
LUMA = [0.2126, 0.7152, 0.0722]


def _rgb_inputs(seed, rows=4):
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(rows, 3, dtype=torch.float64, generator=gen)


def _ycbcr_forward(ctx, rgb):
    M = torch.tensor(YCBCR, dtype=rgb.dtype)
    ctx.M = M
    return rgb @ M.mT + torch.tensor(YCBCR_OFFSET, dtype=rgb.dtype)


class OverseasRGBToYCbCr(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, rgb):
        return _ycbcr_forward(ctx, rgb)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out @ ctx.M

    @staticmethod
    def example_inputs():
        return (_rgb_inputs(301),)


class OverseasRGBToYCbCrTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "rgb",
           "note": "out = rgb M^T, so grad_rgb = g M; the code multiplies by M^T again"}

    @staticmethod
    def forward(ctx, rgb):
        return _ycbcr_forward(ctx, rgb)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out @ ctx.M.mT  # BUG

    @staticmethod
    def example_inputs():
        return (_rgb_inputs(302),)


def _matrix_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    matrix = torch.eye(3, dtype=torch.float64) + 0.2 * torch.randn(3, 3, dtype=torch.float64, generator=gen)
    return _rgb_inputs(seed + 1, rows=5), matrix


class OverseasColorMatrix(torch.autograd.Function):
    """A learned colour-correction matrix: out = rgb @ matrix^T."""

    bug = None

    @staticmethod
    def forward(ctx, rgb, matrix):
        ctx.save_for_backward(rgb, matrix)
        return rgb @ matrix.mT

    @staticmethod
    def backward(ctx, grad_out):
        rgb, matrix = ctx.saved_tensors
        return grad_out @ matrix, grad_out.mT @ rgb

    @staticmethod
    def example_inputs():
        return _matrix_inputs(303)


class OverseasColorMatrixGradT(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "matrix",
           "note": "the matrix gradient is rgb^T g, the transpose of g^T rgb"}

    @staticmethod
    def forward(ctx, rgb, matrix):
        ctx.save_for_backward(rgb, matrix)
        return rgb @ matrix.mT

    @staticmethod
    def backward(ctx, grad_out):
        rgb, matrix = ctx.saved_tensors
        grad_matrix = rgb.mT @ grad_out  # BUG
        return grad_out @ matrix, grad_matrix

    @staticmethod
    def example_inputs():
        return _matrix_inputs(305)


def _luminance_inputs(seed, height=4, width=3):
    gen = torch.Generator().manual_seed(seed)
    image = torch.rand(3, height, width, dtype=torch.float64, generator=gen)  # (C, H, W)
    weights = torch.tensor(LUMA, dtype=torch.float64) + 0.05 * torch.randn(3, dtype=torch.float64,
                                                                           generator=gen)
    return image, weights


def _luminance_forward(ctx, image, weights):
    ctx.save_for_backward(image, weights)
    return (weights[:, None, None] * image).sum(dim=0)


class OverseasLuminance(torch.autograd.Function):
    """Y[h, w] = sum_c weights[c] image[c, h, w] with learned channel weights."""

    bug = None

    @staticmethod
    def forward(ctx, image, weights):
        return _luminance_forward(ctx, image, weights)

    @staticmethod
    def backward(ctx, grad_out):
        image, weights = ctx.saved_tensors
        grad_image = weights[:, None, None] * grad_out[None]
        grad_weights = (image * grad_out[None]).sum(dim=(1, 2))
        return grad_image, grad_weights

    @staticmethod
    def example_inputs():
        return _luminance_inputs(306)


class OverseasLuminanceSpatialDims(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "weights",
           "note": "the weight gradient sums over dims (0, 1), channels and rows, instead of the spatial dims (1, 2)"}

    @staticmethod
    def forward(ctx, image, weights):
        return _luminance_forward(ctx, image, weights)

    @staticmethod
    def backward(ctx, grad_out):
        image, weights = ctx.saved_tensors
        grad_image = weights[:, None, None] * grad_out[None]
        grad_weights = (image * grad_out[None]).sum(dim=(0, 1))  # BUG
        return grad_image, grad_weights

    @staticmethod
    def example_inputs():
        return _luminance_inputs(307)


class OverseasLuminanceUnsummed(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "weights",
           "note": "the per-channel weight gradient is left as a full (C, H, W) map, never summed over the pixels"}

    @staticmethod
    def forward(ctx, image, weights):
        return _luminance_forward(ctx, image, weights)

    @staticmethod
    def backward(ctx, grad_out):
        image, weights = ctx.saved_tensors
        grad_image = weights[:, None, None] * grad_out[None]
        grad_weights = image * grad_out[None]  # BUG
        return grad_image, grad_weights

    @staticmethod
    def example_inputs():
        return _luminance_inputs(308, height=2, width=4)


def _saturation_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    rgb = _rgb_inputs(seed, rows=4)
    s = 0.5 + torch.rand(4, 1, dtype=torch.float64, generator=gen)
    return rgb, s


def _saturation_forward(ctx, rgb, s):
    luma = torch.tensor(LUMA, dtype=rgb.dtype)
    lum = (rgb * luma).sum(dim=-1, keepdim=True)
    ctx.save_for_backward(rgb, s, lum)
    ctx.luma = luma
    return lum + s * (rgb - lum)


class OverseasSaturation(torch.autograd.Function):
    """out = L + s (rgb - L), L the pixel's luminance, s a per-pixel saturation."""

    bug = None

    @staticmethod
    def forward(ctx, rgb, s):
        return _saturation_forward(ctx, rgb, s)

    @staticmethod
    def backward(ctx, grad_out):
        rgb, s, lum = ctx.saved_tensors
        grad_rgb = s * grad_out + (1 - s) * grad_out.sum(dim=-1, keepdim=True) * ctx.luma
        grad_s = (grad_out * (rgb - lum)).sum(dim=-1, keepdim=True)
        return grad_rgb, grad_s

    @staticmethod
    def example_inputs():
        return _saturation_inputs(309)


class OverseasSaturationNoLuma(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "rgb",
           "note": "only the s * g path is kept; the gradient through the luminance L (weight 1 - s) is left out"}

    @staticmethod
    def forward(ctx, rgb, s):
        return _saturation_forward(ctx, rgb, s)

    @staticmethod
    def backward(ctx, grad_out):
        rgb, s, lum = ctx.saved_tensors
        grad_rgb = s * grad_out  # BUG
        grad_s = (grad_out * (rgb - lum)).sum(dim=-1, keepdim=True)
        return grad_rgb, grad_s

    @staticmethod
    def example_inputs():
        return _saturation_inputs(310)


class OverseasSaturationFixed(torch.autograd.Function):
    bug = {"kind": "zero", "input": "s",
           "note": "the saturation is treated as a fixed user setting and gets a zero gradient, though it is learned"}

    @staticmethod
    def forward(ctx, rgb, s):
        return _saturation_forward(ctx, rgb, s)

    @staticmethod
    def backward(ctx, grad_out):
        rgb, s, lum = ctx.saved_tensors
        grad_rgb = s * grad_out + (1 - s) * grad_out.sum(dim=-1, keepdim=True) * ctx.luma
        grad_s = torch.zeros_like(s)  # BUG
        return grad_rgb, grad_s

    @staticmethod
    def example_inputs():
        return _saturation_inputs(311)
