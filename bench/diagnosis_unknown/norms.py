"""Normalisation layers in the style of research code: module-level kernels, fused residual + norm.

LayerNorm, RMSNorm, GroupNorm and BatchNorm (training mode, batch statistics), each with a
hand-written backward. Weights and biases are per feature / per channel.
"""
import torch
from torch.autograd.function import once_differentiable

EPS = 1e-5


def _inputs_nlc(seed, n=2, c=3, length=5):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c, length, dtype=torch.float64, generator=gen)
    w = torch.rand(length, dtype=torch.float64, generator=gen) + 0.5
    b = torch.randn(length, dtype=torch.float64, generator=gen)
    return x, w, b


def _inputs_channels(seed, n=3, c=4, length=5):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c, length, dtype=torch.float64, generator=gen)
    w = torch.rand(c, dtype=torch.float64, generator=gen) + 0.5
    b = torch.randn(c, dtype=torch.float64, generator=gen)
    return x, w, b


def _layer_norm_fwd(x, weight, bias, eps):
    mu = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, unbiased=False, keepdim=True)
    rstd = torch.rsqrt(var + eps)
    xhat = (x - mu) * rstd
    return xhat * weight + bias, xhat, rstd


def _layer_norm_bwd(dy, xhat, rstd, weight):
    n = xhat.shape[-1]
    g = dy * weight
    dx = rstd * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))
    dw = (dy * xhat).reshape(-1, n).sum(0)
    db = dy.reshape(-1, n).sum(0)
    return dx, dw, db


def _rms_fwd(x, weight, eps):
    rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return x * rstd * weight, rstd


class UnknownLayerNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        y, xhat, rstd = _layer_norm_fwd(x, weight, bias, EPS)
        ctx.save_for_backward(xhat, rstd, weight)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        xhat, rstd, weight = ctx.saved_tensors
        return _layer_norm_bwd(dy, xhat, rstd, weight)

    @staticmethod
    def example_inputs():
        return _inputs_nlc(11)


class UnknownLayerNormNoCentering(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the -mean(g) term of the layer norm input gradient (from the mean) is left out"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        y, xhat, rstd = _layer_norm_fwd(x, weight, bias, EPS)
        ctx.save_for_backward(xhat, rstd, weight)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        xhat, rstd, weight = ctx.saved_tensors
        n = xhat.shape[-1]
        g = dy * weight
        dx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))  # BUG
        dw = (dy * xhat).reshape(-1, n).sum(0)
        db = dy.reshape(-1, n).sum(0)
        return dx, dw, db

    @staticmethod
    def example_inputs():
        return _inputs_nlc(12)


class UnknownLayerNormRawInputWeight(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "weight",
           "note": "the weight gradient multiplies by the raw input x instead of the normalised x-hat"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        y, xhat, rstd = _layer_norm_fwd(x, weight, bias, EPS)
        ctx.save_for_backward(x, xhat, rstd, weight)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, xhat, rstd, weight = ctx.saved_tensors
        dx, _, db = _layer_norm_bwd(dy, xhat, rstd, weight)
        dw = (dy * x).flatten(0, -2).sum(dim=0)  # BUG
        return dx, dw, db

    @staticmethod
    def example_inputs():
        return _inputs_nlc(13)


class UnknownRMSNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        y, rstd = _rms_fwd(x, weight, EPS)
        ctx.save_for_backward(x, rstd, weight)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, rstd, weight = ctx.saved_tensors
        xhat = x * rstd
        g = dy * weight
        dx = dw = None
        if ctx.needs_input_grad[0]:
            dx = rstd * (g - xhat * (g * xhat).mean(dim=-1, keepdim=True))
        if ctx.needs_input_grad[1]:
            dw = (dy * xhat).sum(dim=tuple(range(dy.dim() - 1)))
        return dx, dw

    @staticmethod
    def example_inputs():
        return _inputs_nlc(14)[:2]


class UnknownRMSNormProjectionSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the projection term x-hat * mean(g * x-hat) is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x, weight):
        y, rstd = _rms_fwd(x, weight, EPS)
        ctx.save_for_backward(x, rstd, weight)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, rstd, weight = ctx.saved_tensors
        xhat = x * rstd
        g = dy * weight
        dx = dw = None
        if ctx.needs_input_grad[0]:
            dx = rstd * (g + xhat * (g * xhat).mean(dim=-1, keepdim=True))  # BUG
        if ctx.needs_input_grad[1]:
            dw = (dy * xhat).sum(dim=tuple(range(dy.dim() - 1)))
        return dx, dw

    @staticmethod
    def example_inputs():
        return _inputs_nlc(15)[:2]


def _group_norm_fwd(ctx, x, weight, bias, groups):
    n, c, length = x.shape
    xg = x.reshape(n, groups, -1)
    mu = xg.mean(-1, keepdim=True)
    rstd = (xg.var(-1, unbiased=False, keepdim=True) + EPS).rsqrt()
    xhat = ((xg - mu) * rstd).reshape(n, c, length)
    ctx.groups = groups
    ctx.save_for_backward(xhat, rstd, weight)
    return xhat * weight[:, None] + bias[:, None]


class UnknownGroupNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _group_norm_fwd(ctx, x, weight, bias, 2)

    @staticmethod
    def backward(ctx, dy):
        xhat, rstd, weight = ctx.saved_tensors
        n, c, length = dy.shape
        g = (dy * weight[:, None]).reshape(n, ctx.groups, -1)
        xh = xhat.reshape(n, ctx.groups, -1)
        dx = rstd * (g - g.mean(-1, keepdim=True) - xh * (g * xh).mean(-1, keepdim=True))
        return (dx.reshape(n, c, length), (dy * xhat).sum(dim=(0, 2)), dy.sum(dim=(0, 2)))

    @staticmethod
    def example_inputs():
        return _inputs_channels(21)


class UnknownGroupNormStatsOverGroups(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the two group means of the backward are taken over the group axis instead of within each group"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _group_norm_fwd(ctx, x, weight, bias, 2)

    @staticmethod
    def backward(ctx, dy):
        xhat, rstd, weight = ctx.saved_tensors
        n, c, length = dy.shape
        g = (dy * weight[:, None]).reshape(n, ctx.groups, -1)
        xh = xhat.reshape(n, ctx.groups, -1)
        dx = rstd * (g - g.mean(1, keepdim=True) - xh * (g * xh).mean(1, keepdim=True))  # BUG
        return (dx.reshape(n, c, length), (dy * xhat).sum(dim=(0, 2)), dy.sum(dim=(0, 2)))

    @staticmethod
    def example_inputs():
        return _inputs_channels(22)


def _batch_norm_train(ctx, x, weight, bias):
    mu = x.mean(dim=(0, 2), keepdim=True)
    var = x.var(dim=(0, 2), unbiased=False, keepdim=True)
    rstd = 1.0 / torch.sqrt(var + EPS)
    xhat = (x - mu) * rstd
    ctx.count = x.shape[0] * x.shape[2]
    ctx.save_for_backward(xhat, rstd, weight)
    return xhat * weight.view(1, -1, 1) + bias.view(1, -1, 1)


class UnknownBatchNormTrain(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _batch_norm_train(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, dy):
        xhat, rstd, weight = ctx.saved_tensors
        m = ctx.count
        g = dy * weight.view(1, -1, 1)
        sum_g = g.sum(dim=(0, 2), keepdim=True)
        sum_gx = (g * xhat).sum(dim=(0, 2), keepdim=True)
        dx = rstd / m * (m * g - sum_g - xhat * sum_gx)
        return dx, (dy * xhat).sum(dim=(0, 2)), dy.sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        return _inputs_channels(31)


class UnknownBatchNormTrainNoCount(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the 1/m in front of (m g - sum g - x-hat sum g x-hat) is forgotten: m times too large"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _batch_norm_train(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, dy):
        xhat, rstd, weight = ctx.saved_tensors
        m = ctx.count
        g = dy * weight.view(1, -1, 1)
        sum_g = g.sum(dim=(0, 2), keepdim=True)
        sum_gx = (g * xhat).sum(dim=(0, 2), keepdim=True)
        dx = rstd * (m * g - sum_g - xhat * sum_gx)  # BUG
        return dx, (dy * xhat).sum(dim=(0, 2)), dy.sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        return _inputs_channels(32)


class UnknownBatchNormTrainWeightPerPosition(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "weight",
           "note": "the weight gradient is summed over the batch only, not over the length axis too"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _batch_norm_train(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, dy):
        xhat, rstd, weight = ctx.saved_tensors
        m = ctx.count
        g = dy * weight.view(1, -1, 1)
        sum_g = g.sum(dim=(0, 2), keepdim=True)
        sum_gx = (g * xhat).sum(dim=(0, 2), keepdim=True)
        dx = rstd / m * (m * g - sum_g - xhat * sum_gx)
        dweight = (dy * xhat).sum(dim=0)  # BUG
        return dx, dweight, dy.sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        return _inputs_channels(33)


class UnknownResidualRMSNorm(torch.autograd.Function):
    """Fused h = x + residual; y = rmsnorm(h) * weight. Returns (y, h) like pre-norm blocks do."""

    bug = None

    @staticmethod
    def forward(ctx, x, residual, weight):
        h = x + residual
        y, rstd = _rms_fwd(h, weight, EPS)
        ctx.save_for_backward(h, rstd, weight)
        return y, h

    @staticmethod
    def backward(ctx, dy, dh):
        h, rstd, weight = ctx.saved_tensors
        hhat = h * rstd
        g = dy * weight
        dsum = rstd * (g - hhat * (g * hhat).mean(-1, keepdim=True)) + dh
        return dsum, dsum, (dy * hhat).sum(dim=(0, 1))

    @staticmethod
    def example_inputs():
        x, w, _ = _inputs_nlc(41)
        return x, torch.randn(x.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(42)), w


class UnknownResidualRMSNormSkipOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "residual",
           "note": "the residual stream gets only the skip gradient dh, not the norm branch's gradient"}

    @staticmethod
    def forward(ctx, x, residual, weight):
        h = x + residual
        y, rstd = _rms_fwd(h, weight, EPS)
        ctx.save_for_backward(h, rstd, weight)
        return y, h

    @staticmethod
    def backward(ctx, dy, dh):
        h, rstd, weight = ctx.saved_tensors
        hhat = h * rstd
        g = dy * weight
        dx = rstd * (g - hhat * (g * hhat).mean(-1, keepdim=True)) + dh
        dres = dh.clone()  # BUG
        return dx, dres, (dy * hhat).sum(dim=(0, 1))

    @staticmethod
    def example_inputs():
        x, w, _ = _inputs_nlc(43)
        return x, torch.randn(x.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(44)), w
