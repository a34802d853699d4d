"""Normalisation layers with hand-written backwards: LayerNorm, RMSNorm, BatchNorm, GroupNorm."""
import torch

EPS = 1e-5


def _gen():
    return torch.Generator().manual_seed(61)


def _row_stats(x):
    mu = x.mean(-1, keepdim=True)
    rstd = (x.var(-1, unbiased=False, keepdim=True) + EPS).rsqrt()
    return mu, rstd


class SealedLayerNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        mu, rstd = _row_stats(x)
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, grad):
        xhat, rstd, weight = ctx.saved_tensors
        gx = grad * weight
        dx = rstd * (gx - gx.mean(-1, keepdim=True) - xhat * (gx * xhat).mean(-1, keepdim=True))
        return dx, (grad * xhat).sum(0), grad.sum(0)

    @staticmethod
    def example_inputs():
        g = _gen()
        return (torch.randn(4, 4, dtype=torch.float64, generator=g),
                torch.randn(4, dtype=torch.float64, generator=g) + 1.0,
                torch.randn(4, dtype=torch.float64, generator=g))


class SealedLayerNormNoVarTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "drops the -xhat * mean(g*xhat) term of the normalised input's gradient"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        mu, rstd = _row_stats(x)
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, grad):
        xhat, rstd, weight = ctx.saved_tensors
        gx = grad * weight
        dx = rstd * (gx - gx.mean(-1, keepdim=True))  # BUG
        return dx, (grad * xhat).sum(0), grad.sum(0)

    @staticmethod
    def example_inputs():
        return SealedLayerNorm.example_inputs()


class SealedLayerNormGainRows(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "weight",
           "note": "the gain's gradient is summed over the feature dim instead of the batch dim"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        mu, rstd = _row_stats(x)
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, grad):
        xhat, rstd, weight = ctx.saved_tensors
        gx = grad * weight
        dx = rstd * (gx - gx.mean(-1, keepdim=True) - xhat * (gx * xhat).mean(-1, keepdim=True))
        dweight = (grad * xhat).sum(1)  # BUG
        return dx, dweight, grad.sum(0)

    @staticmethod
    def example_inputs():
        return SealedLayerNorm.example_inputs()


class SealedRMSNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gain):
        r = (x.pow(2).mean(-1, keepdim=True) + EPS).rsqrt()
        xhat = x * r
        ctx.save_for_backward(xhat, r, gain)
        return xhat * gain

    @staticmethod
    def backward(ctx, grad):
        xhat, r, gain = ctx.saved_tensors
        gg = grad * gain
        dx = r * (gg - xhat * (gg * xhat).mean(-1, keepdim=True))
        return dx, (grad * xhat).sum(0)

    @staticmethod
    def example_inputs():
        g = _gen()
        return (torch.randn(3, 4, dtype=torch.float64, generator=g),
                torch.randn(4, dtype=torch.float64, generator=g))


class SealedRMSNormPlusProjection(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the projection term is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x, gain):
        r = (x.pow(2).mean(-1, keepdim=True) + EPS).rsqrt()
        xhat = x * r
        ctx.save_for_backward(xhat, r, gain)
        return xhat * gain

    @staticmethod
    def backward(ctx, grad):
        xhat, r, gain = ctx.saved_tensors
        gg = grad * gain
        dx = r * (gg + xhat * (gg * xhat).mean(-1, keepdim=True))  # BUG
        return dx, (grad * xhat).sum(0)

    @staticmethod
    def example_inputs():
        return SealedRMSNorm.example_inputs()


class SealedRMSNormRawGain(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "gain",
           "note": "the gain's gradient uses the raw input x instead of the normalised xhat"}

    @staticmethod
    def forward(ctx, x, gain):
        r = (x.pow(2).mean(-1, keepdim=True) + EPS).rsqrt()
        xhat = x * r
        ctx.save_for_backward(x, xhat, r, gain)
        return xhat * gain

    @staticmethod
    def backward(ctx, grad):
        x, xhat, r, gain = ctx.saved_tensors
        gg = grad * gain
        dx = r * (gg - xhat * (gg * xhat).mean(-1, keepdim=True))
        dgain = (grad * x).sum(0)  # BUG
        return dx, dgain

    @staticmethod
    def example_inputs():
        return SealedRMSNorm.example_inputs()


class SealedBatchNormTrain(torch.autograd.Function):
    """Training-mode batch norm over dim 0 of (N, C)."""
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        mu = x.mean(0)
        rstd = (x.var(0, unbiased=False) + EPS).rsqrt()
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, weight)
        return weight * xhat + bias

    @staticmethod
    def backward(ctx, grad):
        xhat, rstd, weight = ctx.saved_tensors
        n = grad.shape[0]
        gxh = grad * weight
        dx = rstd / n * (n * gxh - gxh.sum(0) - xhat * (gxh * xhat).sum(0))
        return dx, (grad * xhat).sum(0), grad.sum(0)

    @staticmethod
    def example_inputs():
        g = _gen()
        return (torch.randn(5, 3, dtype=torch.float64, generator=g),
                torch.randn(3, dtype=torch.float64, generator=g),
                torch.randn(3, dtype=torch.float64, generator=g))


class SealedBatchNormForgetsOverN(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the 1/N in front of the batch-norm input gradient is left out (N times too big)"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        mu = x.mean(0)
        rstd = (x.var(0, unbiased=False) + EPS).rsqrt()
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, weight)
        return weight * xhat + bias

    @staticmethod
    def backward(ctx, grad):
        xhat, rstd, weight = ctx.saved_tensors
        n = grad.shape[0]
        gxh = grad * weight
        dx = rstd * (n * gxh - gxh.sum(0) - xhat * (gxh * xhat).sum(0))  # BUG
        return dx, (grad * xhat).sum(0), grad.sum(0)

    @staticmethod
    def example_inputs():
        return SealedBatchNormTrain.example_inputs()


def _group_norm_parts(x, groups):
    n, c, length = x.shape
    xg = x.reshape(n, groups, -1)
    mu = xg.mean(-1, keepdim=True)
    rstd = (xg.var(-1, unbiased=False, keepdim=True) + EPS).rsqrt()
    return ((xg - mu) * rstd).reshape(n, c, length), rstd


class SealedGroupNorm(torch.autograd.Function):
    """GroupNorm of (N, C, L) with 2 groups and a per-channel affine."""
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _group_norm_parts(x, 2)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight.view(1, -1, 1) + bias.view(1, -1, 1)

    @staticmethod
    def backward(ctx, grad):
        xhat, rstd, weight = ctx.saved_tensors
        n, c, length = grad.shape
        gx = (grad * weight.view(1, -1, 1)).reshape(n, 2, -1)
        xh = xhat.reshape(n, 2, -1)
        dx = rstd * (gx - gx.mean(-1, keepdim=True) - xh * (gx * xh).mean(-1, keepdim=True))
        return dx.reshape(n, c, length), (grad * xhat).sum((0, 2)), grad.sum((0, 2))

    @staticmethod
    def example_inputs():
        g = _gen()
        return (torch.randn(2, 4, 3, dtype=torch.float64, generator=g),
                torch.randn(4, dtype=torch.float64, generator=g),
                torch.randn(4, dtype=torch.float64, generator=g))


class SealedGroupNormBiasPerPosition(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "bias",
           "note": "the bias gradient is summed over the batch only, not over the length dim"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _group_norm_parts(x, 2)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight.view(1, -1, 1) + bias.view(1, -1, 1)

    @staticmethod
    def backward(ctx, grad):
        xhat, rstd, weight = ctx.saved_tensors
        n, c, length = grad.shape
        gx = (grad * weight.view(1, -1, 1)).reshape(n, 2, -1)
        xh = xhat.reshape(n, 2, -1)
        dx = rstd * (gx - gx.mean(-1, keepdim=True) - xh * (gx * xh).mean(-1, keepdim=True))
        dbias = grad.sum(0)  # BUG
        return dx.reshape(n, c, length), (grad * xhat).sum((0, 2)), dbias

    @staticmethod
    def example_inputs():
        return SealedGroupNorm.example_inputs()
