"""LayerNorm and RMSNorm with affine parameters, written in one backward (blind corpus yonder)."""
import torch
from torch.autograd.function import once_differentiable


def _ln_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 6, dtype=torch.float64, generator=g),
            torch.rand(6, dtype=torch.float64, generator=g) + 0.5,
            torch.randn(6, dtype=torch.float64, generator=g), 1e-5)


def _ln_forward(ctx, x, weight, bias, eps):
    mu = x.mean(-1, keepdim=True)
    rstd = torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + eps)
    xhat = (x - mu) * rstd
    ctx.eps = eps
    ctx.save_for_backward(x, xhat, rstd, weight)
    return xhat * weight + bias


class YonderLayerNormAffine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias, eps: float = 1e-5):
        return _ln_forward(ctx, x, weight, bias, eps)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        x, xhat, rstd, weight = ctx.saved_tensors
        grad_x = grad_w = grad_b = None
        gxhat = grad_out * weight
        if ctx.needs_input_grad[0]:
            grad_x = rstd * (gxhat - gxhat.mean(-1, keepdim=True)
                             - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        if ctx.needs_input_grad[1]:
            grad_w = (grad_out * xhat).sum(0)
        if ctx.needs_input_grad[2]:
            grad_b = grad_out.sum(0)
        return grad_x, grad_w, grad_b, None

    @staticmethod
    def example_inputs():
        return _ln_inputs(0)


class YonderLayerNormAffineWeightFromX(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "weight",
           "note": "the weight gradient multiplies grad_out by the raw x instead of the normalised xhat"}

    @staticmethod
    def forward(ctx, x, weight, bias, eps: float = 1e-5):
        return _ln_forward(ctx, x, weight, bias, eps)

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, rstd, weight = ctx.saved_tensors
        gxhat = grad_out * weight
        grad_x = rstd * (gxhat - gxhat.mean(-1, keepdim=True)
                         - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        grad_w = (grad_out * x).sum(0)  # BUG
        return grad_x, grad_w, grad_out.sum(0), None

    @staticmethod
    def example_inputs():
        return _ln_inputs(1)


class YonderLayerNormAffineProjectionSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the xhat*mean(gxhat*xhat) projection term added instead of subtracted"}

    @staticmethod
    def forward(ctx, x, weight, bias, eps: float = 1e-5):
        return _ln_forward(ctx, x, weight, bias, eps)

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, rstd, weight = ctx.saved_tensors
        gxhat = grad_out * weight
        centred = gxhat - gxhat.mean(-1, keepdim=True)
        grad_x = rstd * (centred + xhat * (gxhat * xhat).mean(-1, keepdim=True))  # BUG
        return grad_x, (grad_out * xhat).sum(0), grad_out.sum(0), None

    @staticmethod
    def example_inputs():
        return _ln_inputs(2)


class YonderLayerNormAffineBatchMean(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the two means of the input gradient taken over the batch dim 0 instead of the feature dim"}

    @staticmethod
    def forward(ctx, x, weight, bias, eps: float = 1e-5):
        return _ln_forward(ctx, x, weight, bias, eps)

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, rstd, weight = ctx.saved_tensors
        gxhat = grad_out * weight
        grad_x = rstd * (gxhat - gxhat.mean(0, keepdim=True)
                         - xhat * (gxhat * xhat).mean(0, keepdim=True))  # BUG
        return grad_x, (grad_out * xhat).sum(0), grad_out.sum(0), None

    @staticmethod
    def example_inputs():
        return _ln_inputs(3)


class YonderLayerNormAffineBiasFlag(torch.autograd.Function):
    bug = {"kind": "zero", "input": "bias",
           "note": "the bias branch tests needs_input_grad[3] (eps) instead of [2]: bias gets the zeros it was initialised to"}

    @staticmethod
    def forward(ctx, x, weight, bias, eps: float = 1e-5):
        return _ln_forward(ctx, x, weight, bias, eps)

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, rstd, weight = ctx.saved_tensors
        gxhat = grad_out * weight
        grad_x = rstd * (gxhat - gxhat.mean(-1, keepdim=True)
                         - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        grad_b = torch.zeros_like(weight)
        if ctx.needs_input_grad[3]:  # BUG
            grad_b = grad_out.sum(0)
        return grad_x, (grad_out * xhat).sum(0), grad_b, None

    @staticmethod
    def example_inputs():
        return _ln_inputs(4)


def _rms_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 8, dtype=torch.float64, generator=g),
            torch.rand(8, dtype=torch.float64, generator=g) + 0.5)


class YonderRMSNormAffine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        rms = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        xn = x / rms
        ctx.save_for_backward(xn, rms, weight)
        return xn * weight

    @staticmethod
    def backward(ctx, grad_out):
        xn, rms, weight = ctx.saved_tensors
        gxn = grad_out * weight
        grad_x = (gxn - xn * (gxn * xn).mean(-1, keepdim=True)) / rms
        grad_w = (grad_out * xn).sum(dim=(0, 1))
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _rms_inputs(5)


class YonderRMSNormAffineNoProjection(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "rms treated as a constant: the -xn*mean(gxn*xn) term is left out"}

    @staticmethod
    def forward(ctx, x, weight):
        rms = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        xn = x / rms
        ctx.save_for_backward(xn, rms, weight)
        return xn * weight

    @staticmethod
    def backward(ctx, grad_out):
        xn, rms, weight = ctx.saved_tensors
        gxn = grad_out * weight
        grad_x = gxn / rms  # BUG
        grad_w = (grad_out * xn).sum(dim=(0, 1))
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _rms_inputs(6)


class YonderRMSNormAffineElementwise(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "backward of an elementwise x*rsqrt(x^2+eps) (a soft sign) instead of the row RMS normalisation"}

    @staticmethod
    def forward(ctx, x, weight):
        rms = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        xn = x / rms
        ctx.save_for_backward(x, xn, weight)
        return xn * weight

    @staticmethod
    def backward(ctx, grad_out):
        x, xn, weight = ctx.saved_tensors
        grad_x = grad_out * weight * 0.5 * torch.rsqrt(x * x + 0.5) ** 3  # BUG
        grad_w = (grad_out * xn).sum(dim=(0, 1))
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _rms_inputs(7)
