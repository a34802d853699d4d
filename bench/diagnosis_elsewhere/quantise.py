"""Quantisation-aware training pieces: PACT clipping with a learned per-channel alpha, the
dequantise step of per-channel fake quantisation (integer codes, learned scale and zero point),
and stochastic binarisation with a straight-through estimator.
"""
import torch


# --------------------------------------------------------------------------- PACT
def _pact_inputs():
    # (N, C, L) activations kept away from the kinks at 0 and at alpha
    x = torch.tensor([[[-1.3, 0.4, 1.6, 2.7], [0.8, -0.6, 1.9, 0.3], [2.4, 1.1, -2.2, 0.6]],
                      [[0.7, 2.1, -0.4, 1.2], [-1.8, 1.4, 0.5, 2.6], [1.7, -0.9, 2.9, 0.2]]],
                     dtype=torch.float64)
    alpha = torch.tensor([1.0, 1.5, 2.0], dtype=torch.float64)
    return x, alpha


class ElsewherePACT(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, alpha):
        a = alpha.view(1, -1, 1)
        ctx.save_for_backward(x, alpha)
        return torch.minimum(torch.relu(x), a)

    @staticmethod
    def backward(ctx, grad_y):
        x, alpha = ctx.saved_tensors
        a = alpha.view(1, -1, 1)
        inside = (x > 0) & (x < a)
        grad_x = grad_y * inside
        grad_alpha = (grad_y * (x >= a)).sum((0, 2))
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _pact_inputs()


class ElsewherePACTUpperClipMissing(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the pass-through mask is ReLU's x > 0 only; values clipped at alpha still get gradient"}

    @staticmethod
    def forward(ctx, x, alpha):
        a = alpha.view(1, -1, 1)
        ctx.save_for_backward(x, alpha)
        return torch.minimum(torch.relu(x), a)

    @staticmethod
    def backward(ctx, grad_y):
        x, alpha = ctx.saved_tensors
        a = alpha.view(1, -1, 1)
        inside = x > 0  # BUG
        grad_x = grad_y * inside
        grad_alpha = (grad_y * (x >= a)).sum((0, 2))
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _pact_inputs()


class ElsewherePACTAlphaNotSummed(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "alpha",
           "note": "the per-channel alpha's gradient is left at the activation's (N, C, L) shape"}

    @staticmethod
    def forward(ctx, x, alpha):
        a = alpha.view(1, -1, 1)
        ctx.save_for_backward(x, alpha)
        return torch.minimum(torch.relu(x), a)

    @staticmethod
    def backward(ctx, grad_y):
        x, alpha = ctx.saved_tensors
        a = alpha.view(1, -1, 1)
        inside = (x > 0) & (x < a)
        grad_x = grad_y * inside
        grad_alpha = grad_y * (x >= a)  # BUG
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _pact_inputs()


class ElsewherePACTAlphaFrozen(torch.autograd.Function):
    bug = {"kind": "zero", "input": "alpha",
           "note": "alpha is treated as a fixed clipping hyper-parameter and gets no gradient"}

    @staticmethod
    def forward(ctx, x, alpha):
        a = alpha.view(1, -1, 1)
        ctx.save_for_backward(x, alpha)
        return torch.minimum(torch.relu(x), a)

    @staticmethod
    def backward(ctx, grad_y):
        x, alpha = ctx.saved_tensors
        a = alpha.view(1, -1, 1)
        inside = (x > 0) & (x < a)
        grad_x = grad_y * inside
        grad_alpha = torch.zeros_like(alpha)  # BUG
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _pact_inputs()


# --------------------------------------------------- per-channel dequantisation
def _dequant_inputs():
    gen = torch.Generator().manual_seed(51)
    codes = torch.randint(0, 16, (4, 4), generator=gen, dtype=torch.int64)
    scale = 0.05 + 0.1 * torch.rand(4, generator=gen, dtype=torch.float64)
    zero_point = 6 + 4 * torch.rand(4, generator=gen, dtype=torch.float64)
    return codes, scale, zero_point


class ElsewhereChannelDequant(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, codes, scale, zero_point):
        shifted = codes - zero_point
        ctx.save_for_backward(shifted, scale)
        return shifted * scale

    @staticmethod
    def backward(ctx, grad_y):
        shifted, scale = ctx.saved_tensors
        grad_scale = (grad_y * shifted).sum(0)
        grad_zero_point = -(grad_y * scale).sum(0)
        return None, grad_scale, grad_zero_point

    @staticmethod
    def example_inputs():
        return _dequant_inputs()


class ElsewhereChannelDequantZeroPointSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "zero_point",
           "note": "y = (q - z) * s, so dy/dz = -s; the minus is dropped"}

    @staticmethod
    def forward(ctx, codes, scale, zero_point):
        shifted = codes - zero_point
        ctx.save_for_backward(shifted, scale)
        return shifted * scale

    @staticmethod
    def backward(ctx, grad_y):
        shifted, scale = ctx.saved_tensors
        grad_scale = (grad_y * shifted).sum(0)
        grad_zero_point = (grad_y * scale).sum(0)  # BUG
        return None, grad_scale, grad_zero_point

    @staticmethod
    def example_inputs():
        return _dequant_inputs()


class ElsewhereChannelDequantRawCodes(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "scale",
           "note": "the scale's gradient multiplies by the raw integer codes instead of the shifted codes q - z"}

    @staticmethod
    def forward(ctx, codes, scale, zero_point):
        shifted = codes - zero_point
        ctx.save_for_backward(codes, shifted, scale)
        return shifted * scale

    @staticmethod
    def backward(ctx, grad_y):
        codes, shifted, scale = ctx.saved_tensors
        grad_scale = (grad_y * codes).sum(0)  # BUG
        grad_zero_point = -(grad_y * scale).sum(0)
        return None, grad_scale, grad_zero_point

    @staticmethod
    def example_inputs():
        return _dequant_inputs()


class ElsewhereChannelDequantInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "scale",
           "note": "the kept shifted codes are multiplied by the scale in place to make the output, so backward reads (q - z) * s"}

    @staticmethod
    def forward(ctx, codes, scale, zero_point):
        shifted = codes - zero_point
        ctx.shifted = shifted
        ctx.scale = scale
        return shifted.mul_(scale)  # BUG

    @staticmethod
    def backward(ctx, grad_y):
        shifted, scale = ctx.shifted, ctx.scale
        grad_scale = (grad_y * shifted).sum(0)
        grad_zero_point = -(grad_y * scale).sum(0)
        return None, grad_scale, grad_zero_point

    @staticmethod
    def example_inputs():
        return _dequant_inputs()


# -------------------------------------------------------- stochastic binarisation
class ElsewhereStochasticBinarize(torch.autograd.Function):
    """+1 with probability hard_sigmoid(x) = clamp((x + 1) / 2, 0, 1), else -1 (a fixed seed keeps the
    draw reproducible); backward passes the gradient straight through where |x| <= 1."""

    bug = {"kind": "straight_through", "input": "x",
           "note": "deliberate: the sampled sign has zero derivative, backward passes grad through |x| <= 1"}

    @staticmethod
    def forward(ctx, x):
        gen = torch.Generator().manual_seed(0)
        prob = ((x + 1) / 2).clamp(0, 1)
        draw = torch.rand(x.shape, generator=gen, dtype=x.dtype)
        ctx.save_for_backward(x)
        return torch.where(draw < prob, 1.0, -1.0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * (x.abs() <= 1)  # BUG
