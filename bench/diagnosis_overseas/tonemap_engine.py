import gradcli as torch

"""Display transforms on gradcli's numpy engine: gamma correction with a learned per-channel
exponent, the extended and the plain Reinhard tone maps, and the piecewise sRGB encoding."""

SRGB_KNEE = 0.0031308          # linear-side threshold of the sRGB encoding
SRGB_DECODE_KNEE = 0.04045     # the encoded-side threshold (of the inverse transform)


def _gamma_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    linear = 0.05 + 0.9 * torch.rand(4, 3, dtype=torch.float64, generator=gen)
    inv_gamma = torch.tensor([1 / 2.2, 1 / 2.0, 1 / 2.4], dtype=torch.float64)
    return linear, inv_gamma


def _gamma_forward(ctx, linear, inv_gamma):
    out = linear ** inv_gamma
    ctx.save_for_backward(linear, inv_gamma, out)
    return out


class OverseasGamma(torch.autograd.Function):
    """out = linear ** inv_gamma, inv_gamma of shape (3,) broadcast over the pixels."""

    bug = None

    @staticmethod
    def forward(ctx, linear, inv_gamma):
        return _gamma_forward(ctx, linear, inv_gamma)

    @staticmethod
    def backward(ctx, grad_out):
        linear, inv_gamma, out = ctx.saved_tensors
        grad_linear = grad_out * inv_gamma * linear ** (inv_gamma - 1)
        grad_inv_gamma = (grad_out * out * torch.log(linear)).sum(dim=0)
        return grad_linear, grad_inv_gamma

    @staticmethod
    def example_inputs():
        return _gamma_inputs(201)


class OverseasGammaPrecedence(torch.autograd.Function):
    bug = {"kind": "none", "input": "linear",
           "note": "x ** (g - 1) written without parentheses, x ** g - 1, an unrelated function"}

    @staticmethod
    def forward(ctx, linear, inv_gamma):
        return _gamma_forward(ctx, linear, inv_gamma)

    @staticmethod
    def backward(ctx, grad_out):
        linear, inv_gamma, out = ctx.saved_tensors
        grad_linear = grad_out * inv_gamma * linear ** inv_gamma - 1  # BUG
        grad_inv_gamma = (grad_out * out * torch.log(linear)).sum(dim=0)
        return grad_linear, grad_inv_gamma

    @staticmethod
    def example_inputs():
        return _gamma_inputs(202)


def _reinhard_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    hdr = 0.1 + 3.9 * torch.rand(4, 3, dtype=torch.float64, generator=gen)
    white = torch.tensor([2.0], dtype=torch.float64)
    return hdr, white


def _reinhard_forward(ctx, hdr, white):
    ctx.save_for_backward(hdr, white)
    return hdr * (1 + hdr / white ** 2) / (1 + hdr)


class OverseasReinhardExtended(torch.autograd.Function):
    """Extended Reinhard: x (1 + x / w^2) / (1 + x) with a learned white point w."""

    bug = None

    @staticmethod
    def forward(ctx, hdr, white):
        return _reinhard_forward(ctx, hdr, white)

    @staticmethod
    def backward(ctx, grad_out):
        hdr, white = ctx.saved_tensors
        num = hdr * (1 + hdr / white ** 2)
        dnum = 1 + 2 * hdr / white ** 2
        den = 1 + hdr
        grad_hdr = grad_out * (dnum * den - num) / den ** 2
        grad_white = (grad_out * (-2 * hdr ** 2 / (white ** 3 * den))).sum().reshape(1)
        return grad_hdr, grad_white

    @staticmethod
    def example_inputs():
        return _reinhard_inputs(203)


class OverseasReinhardQuotientSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "hdr",
           "note": "the quotient rule's (N'D - N D') / D^2 is written with + N D'"}

    @staticmethod
    def forward(ctx, hdr, white):
        return _reinhard_forward(ctx, hdr, white)

    @staticmethod
    def backward(ctx, grad_out):
        hdr, white = ctx.saved_tensors
        num = hdr * (1 + hdr / white ** 2)
        dnum = 1 + 2 * hdr / white ** 2
        den = 1 + hdr
        grad_hdr = grad_out * (dnum * den + num) / den ** 2  # BUG
        grad_white = (grad_out * (-2 * hdr ** 2 / (white ** 3 * den))).sum().reshape(1)
        return grad_hdr, grad_white

    @staticmethod
    def example_inputs():
        return _reinhard_inputs(204)


class OverseasReinhardWhiteHalf(torch.autograd.Function):
    bug = {"kind": "scale", "input": "white",
           "note": "d(1 / w^2)/dw = -2 / w^3, but the factor 2 is dropped"}

    @staticmethod
    def forward(ctx, hdr, white):
        return _reinhard_forward(ctx, hdr, white)

    @staticmethod
    def backward(ctx, grad_out):
        hdr, white = ctx.saved_tensors
        num = hdr * (1 + hdr / white ** 2)
        dnum = 1 + 2 * hdr / white ** 2
        den = 1 + hdr
        grad_hdr = grad_out * (dnum * den - num) / den ** 2
        grad_white = (grad_out * (-hdr ** 2 / (white ** 3 * den))).sum().reshape(1)  # BUG
        return grad_hdr, grad_white

    @staticmethod
    def example_inputs():
        return _reinhard_inputs(205)


class OverseasReinhardInPlace(torch.autograd.Function):
    """Maps a working copy of the input in place and keeps that copy for backward."""

    bug = {"kind": "inplace", "input": "hdr",
           "note": "the copy of hdr kept on ctx is then tone-mapped in place, so backward sees the output as hdr"}

    @staticmethod
    def forward(ctx, hdr, white):
        x = hdr.clone()
        ctx.x, ctx.white = x, white
        x.mul_(1 + hdr / white ** 2).div_(1 + hdr)  # BUG
        return x

    @staticmethod
    def backward(ctx, grad_out):
        hdr, white = ctx.x, ctx.white
        num = hdr * (1 + hdr / white ** 2)
        dnum = 1 + 2 * hdr / white ** 2
        den = 1 + hdr
        grad_hdr = grad_out * (dnum * den - num) / den ** 2
        grad_white = (grad_out * (-2 * hdr ** 2 / (white ** 3 * den))).sum().reshape(1)
        return grad_hdr, grad_white

    @staticmethod
    def example_inputs():
        return _reinhard_inputs(206)


class OverseasReinhard(torch.autograd.Function):
    """Plain Reinhard x / (1 + x)."""

    bug = None

    @staticmethod
    def forward(ctx, hdr):
        ctx.save_for_backward(hdr)
        return hdr / (1 + hdr)

    @staticmethod
    def backward(ctx, grad_out):
        (hdr,) = ctx.saved_tensors
        return grad_out / (1 + hdr) ** 2

    @staticmethod
    def example_inputs():
        return (_reinhard_inputs(207)[0],)


class OverseasReinhardArctanSlip(torch.autograd.Function):
    bug = {"kind": "none", "input": "hdr",
           "note": "1 / (1 + x)^2 is written 1 / (1 + x^2), the derivative of atan"}

    @staticmethod
    def forward(ctx, hdr):
        ctx.save_for_backward(hdr)
        return hdr / (1 + hdr)

    @staticmethod
    def backward(ctx, grad_out):
        (hdr,) = ctx.saved_tensors
        return grad_out / (1 + hdr ** 2)  # BUG

    @staticmethod
    def example_inputs():
        return (_reinhard_inputs(208)[0],)


def _srgb_inputs():
    return (torch.tensor([[0.0008, 0.0015, 0.0024, 0.009], [0.018, 0.027, 0.036, 0.12],
                          [0.3, 0.55, 0.8, 0.95]], dtype=torch.float64),)


def _srgb_forward(ctx, linear):
    ctx.save_for_backward(linear)
    low = linear <= SRGB_KNEE
    return torch.where(low, 12.92 * linear, 1.055 * linear.clamp_min(SRGB_KNEE) ** (1 / 2.4) - 0.055)


class OverseasSRGBEncode(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, linear):
        return _srgb_forward(ctx, linear)

    @staticmethod
    def backward(ctx, grad_out):
        (linear,) = ctx.saved_tensors
        low = linear <= SRGB_KNEE
        slope = torch.where(low, 12.92 + 0 * linear,
                            1.055 / 2.4 * linear.clamp_min(SRGB_KNEE) ** (1 / 2.4 - 1))
        return grad_out * slope

    @staticmethod
    def example_inputs():
        return _srgb_inputs()


class OverseasSRGBEncodeDecodeKnee(torch.autograd.Function):
    bug = {"kind": "region", "input": "linear",
           "note": "the backward's branch uses the decoder's threshold 0.04045 instead of the encoder's 0.0031308"}

    @staticmethod
    def forward(ctx, linear):
        return _srgb_forward(ctx, linear)

    @staticmethod
    def backward(ctx, grad_out):
        (linear,) = ctx.saved_tensors
        low = linear <= SRGB_DECODE_KNEE  # BUG
        slope = torch.where(low, 12.92 + 0 * linear,
                            1.055 / 2.4 * linear.clamp_min(SRGB_KNEE) ** (1 / 2.4 - 1))
        return grad_out * slope

    @staticmethod
    def example_inputs():
        return _srgb_inputs()
