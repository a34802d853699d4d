"""Normalisations written by hand for fused kernels: InstanceNorm on NCHW images, GroupNorm with a
per-channel affine on (N, C, L), a fused residual add + LayerNorm, and ScaleNorm (one learnable gain).

BLIND corpus: see README.md. Never tune gradcli's diagnosis on these Functions.
"""
import torch

EPS = 1e-5
GROUPS = 2


def _images():
    torch.manual_seed(11)
    return (torch.randn(2, 3, 4, 5, dtype=torch.float64, requires_grad=True),)


def _instance_norm(ctx, x):
    mean = x.mean(dim=(2, 3), keepdim=True)
    var = x.var(dim=(2, 3), unbiased=False, keepdim=True)
    rstd = torch.rsqrt(var + EPS)
    xhat = (x - mean) * rstd
    ctx.save_for_backward(xhat, rstd)
    return xhat


class InstanceNorm2d(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _instance_norm(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd = ctx.saved_tensors
        mean_g = grad_out.mean(dim=(2, 3), keepdim=True)
        mean_gx = (grad_out * xhat).mean(dim=(2, 3), keepdim=True)
        return rstd * (grad_out - mean_g - xhat * mean_gx)

    @staticmethod
    def example_inputs():
        return _images()


class InstanceNormLastDimOnly(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "backward copied from a LayerNorm: its means run over the last dim (W) only, "
                   "forward normalised over H and W"}

    @staticmethod
    def forward(ctx, x):
        return _instance_norm(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd = ctx.saved_tensors
        mean_g = grad_out.mean(dim=-1, keepdim=True)  # BUG -- should be dim=(2, 3)
        mean_gx = (grad_out * xhat).mean(dim=(2, 3), keepdim=True)
        return rstd * (grad_out - mean_g - xhat * mean_gx)

    @staticmethod
    def example_inputs():
        return _images()


class InstanceNormNoProjection(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the xhat * mean(grad * xhat) term (the variance's dependence on x) is left out"}

    @staticmethod
    def forward(ctx, x):
        return _instance_norm(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd = ctx.saved_tensors
        mean_g = grad_out.mean(dim=(2, 3), keepdim=True)
        return rstd * (grad_out - mean_g)  # BUG -- - xhat * mean(grad_out * xhat) forgotten

    @staticmethod
    def example_inputs():
        return _images()


def _group_inputs():
    torch.manual_seed(12)
    x = torch.randn(2, 4, 5, dtype=torch.float64)
    gamma = 1 + 0.5 * torch.randn(4, dtype=torch.float64)
    beta = torch.randn(4, dtype=torch.float64)
    return x, gamma, beta


def _group_norm(ctx, x, gamma, beta):
    n, c, length = x.shape
    xg = x.reshape(n, GROUPS, -1)
    mean = xg.mean(-1, keepdim=True)
    rstd = torch.rsqrt(xg.var(-1, unbiased=False, keepdim=True) + EPS)
    xhat = ((xg - mean) * rstd).reshape(n, c, length)
    ctx.save_for_backward(x, xhat, rstd, gamma)
    return xhat * gamma[None, :, None] + beta[None, :, None]


def _group_norm_grad_x(grad_out, xhat, rstd, gamma):
    n, c, length = grad_out.shape
    gxh = (grad_out * gamma[None, :, None]).reshape(n, GROUPS, -1)
    xh = xhat.reshape(n, GROUPS, -1)
    gx = rstd * (gxh - gxh.mean(-1, keepdim=True) - xh * (gxh * xh).mean(-1, keepdim=True))
    return gx.reshape(n, c, length)


class GroupNormAffine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _group_norm(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, rstd, gamma = ctx.saved_tensors
        grad_gamma = (grad_out * xhat).sum(dim=(0, 2))
        grad_beta = grad_out.sum(dim=(0, 2))
        return _group_norm_grad_x(grad_out, xhat, rstd, gamma), grad_gamma, grad_beta

    @staticmethod
    def example_inputs():
        return _group_inputs()


class GroupNormGammaPerPosition(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "gamma",
           "note": "gamma's gradient is summed over the batch but not over the length dim"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _group_norm(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, rstd, gamma = ctx.saved_tensors
        grad_gamma = (grad_out * xhat).sum(dim=0)  # BUG -- should be dim=(0, 2)
        grad_beta = grad_out.sum(dim=(0, 2))
        return _group_norm_grad_x(grad_out, xhat, rstd, gamma), grad_gamma, grad_beta

    @staticmethod
    def example_inputs():
        return _group_inputs()


class GroupNormGammaFromInput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "gamma",
           "note": "gamma's gradient multiplies grad_out by the raw input x instead of xhat"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _group_norm(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, rstd, gamma = ctx.saved_tensors
        grad_gamma = (grad_out * x).sum(dim=(0, 2))  # BUG -- x where xhat is needed
        grad_beta = grad_out.sum(dim=(0, 2))
        return _group_norm_grad_x(grad_out, xhat, rstd, gamma), grad_gamma, grad_beta

    @staticmethod
    def example_inputs():
        return _group_inputs()


def _fused_inputs():
    torch.manual_seed(13)
    x = torch.randn(3, 6, dtype=torch.float64)
    residual = torch.randn(3, 6, dtype=torch.float64)
    weight = 1 + 0.3 * torch.randn(6, dtype=torch.float64)
    bias = 0.1 * torch.randn(6, dtype=torch.float64)
    return x, residual, weight, bias


def _add_layer_norm(ctx, x, residual, weight, bias):
    h = x + residual
    mean = h.mean(-1, keepdim=True)
    rstd = torch.rsqrt(h.var(-1, unbiased=False, keepdim=True) + EPS)
    hhat = (h - mean) * rstd
    ctx.save_for_backward(hhat, rstd, weight)
    return hhat * weight + bias


class FusedAddLayerNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, residual, weight, bias):
        return _add_layer_norm(ctx, x, residual, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        hhat, rstd, weight = ctx.saved_tensors
        gh = grad_out * weight
        grad_h = rstd * (gh - gh.mean(-1, keepdim=True)
                         - hhat * (gh * hhat).mean(-1, keepdim=True))
        return grad_h, grad_h, (grad_out * hhat).sum(0), grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _fused_inputs()


class FusedAddLayerNormDropsResidual(torch.autograd.Function):
    bug = {"kind": "zero", "input": "residual",
           "note": "the residual stream gets no gradient (written as if it were a buffer)"}

    @staticmethod
    def forward(ctx, x, residual, weight, bias):
        return _add_layer_norm(ctx, x, residual, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        hhat, rstd, weight = ctx.saved_tensors
        gh = grad_out * weight
        grad_h = rstd * (gh - gh.mean(-1, keepdim=True)
                         - hhat * (gh * hhat).mean(-1, keepdim=True))
        return grad_h, None, (grad_out * hhat).sum(0), grad_out.sum(0)  # BUG -- residual's None

    @staticmethod
    def example_inputs():
        return _fused_inputs()


class FusedAddLayerNormProjectionSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the hhat * mean(gh * hhat) term is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x, residual, weight, bias):
        return _add_layer_norm(ctx, x, residual, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        hhat, rstd, weight = ctx.saved_tensors
        gh = grad_out * weight
        grad_h = rstd * (gh - gh.mean(-1, keepdim=True)
                         + hhat * (gh * hhat).mean(-1, keepdim=True))  # BUG -- + should be -
        return grad_h, grad_h, (grad_out * hhat).sum(0), grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _fused_inputs()


def _scale_inputs():
    torch.manual_seed(14)
    return torch.randn(3, 5, dtype=torch.float64), torch.tensor([1.7], dtype=torch.float64)


def _scale_norm(ctx, x, g):
    norm = x.norm(dim=-1, keepdim=True)
    xhat = x / norm
    ctx.save_for_backward(xhat, norm, g)
    return g * xhat


class ScaleNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, g):
        return _scale_norm(ctx, x, g)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, norm, g = ctx.saved_tensors
        grad_g = (grad_out * xhat).sum().reshape(1)
        grad_x = g * (grad_out - xhat * (grad_out * xhat).sum(-1, keepdim=True)) / norm
        return grad_x, grad_g

    @staticmethod
    def example_inputs():
        return _scale_inputs()


class ScaleNormForgotGain(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the learnable gain g is left out of x's gradient (a factor 1/g = 1/1.7)"}

    @staticmethod
    def forward(ctx, x, g):
        return _scale_norm(ctx, x, g)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, norm, g = ctx.saved_tensors
        grad_g = (grad_out * xhat).sum().reshape(1)
        grad_x = (grad_out - xhat * (grad_out * xhat).sum(-1, keepdim=True)) / norm  # BUG -- no g
        return grad_x, grad_g

    @staticmethod
    def example_inputs():
        return _scale_inputs()
