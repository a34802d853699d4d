"""Normalisation layers written by hand: LayerNorm, RMSNorm, GroupNorm, BatchNorm (training mode)."""
import torch

EPS = 1e-5


def _inputs(*shape, channels, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, dtype=torch.float64, generator=gen)
    w = 1.0 + 0.5 * torch.randn(channels, dtype=torch.float64, generator=gen)
    b = torch.randn(channels, dtype=torch.float64, generator=gen)
    return x, w, b


class NovelLayerNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        mu = x.mean(-1, keepdim=True)
        rstd = ((x - mu).pow(2).mean(-1, keepdim=True) + EPS).rsqrt()
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        gxhat = g * weight
        gx = rstd * (gxhat - gxhat.mean(-1, keepdim=True)
                     - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        return gx, (g * xhat).sum(0), g.sum(0)

    @staticmethod
    def example_inputs():
        return _inputs(5, 6, channels=6, seed=1)


class NovelLayerNormNoProjection(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the input gradient forgets the projection term -xhat * mean(gxhat * xhat)"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        mu = x.mean(-1, keepdim=True)
        rstd = ((x - mu).pow(2).mean(-1, keepdim=True) + EPS).rsqrt()
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        gxhat = g * weight
        gx = rstd * (gxhat - gxhat.mean(-1, keepdim=True))  # BUG
        return gx, (g * xhat).sum(0), g.sum(0)

    @staticmethod
    def example_inputs():
        return _inputs(5, 6, channels=6, seed=1)


class NovelLayerNormRawGain(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "weight",
           "note": "the gain gradient multiplies by the raw x where the normalised xhat is needed"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        mu = x.mean(-1, keepdim=True)
        rstd = ((x - mu).pow(2).mean(-1, keepdim=True) + EPS).rsqrt()
        xhat = (x - mu) * rstd
        ctx.save_for_backward(x, xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, g):
        x, xhat, rstd, weight = ctx.saved_tensors
        gxhat = g * weight
        gx = rstd * (gxhat - gxhat.mean(-1, keepdim=True)
                     - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        gw = (g * x).sum(dim=0)  # BUG
        return gx, gw, g.sum(dim=0)

    @staticmethod
    def example_inputs():
        return _inputs(5, 6, channels=6, seed=2)


class NovelRMSNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        r = (x.pow(2).mean(dim=-1, keepdim=True) + EPS).rsqrt()
        ctx.save_for_backward(x, weight, r)
        return x * r * weight

    @staticmethod
    def backward(ctx, g):
        x, weight, r = ctx.saved_tensors
        gw_in = g * weight
        inner = (gw_in * x).mean(dim=-1, keepdim=True)
        gx = r * gw_in - x * r.pow(3) * inner
        gweight = (g * x * r).sum(dim=0)
        return gx, gweight

    @staticmethod
    def example_inputs():
        return _inputs(4, 5, channels=5, seed=3)[:2]


class NovelRMSNormPlusInner(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the term through the rms, x r^3 mean(g w x), is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x, weight):
        r = (x.pow(2).mean(dim=-1, keepdim=True) + EPS).rsqrt()
        ctx.save_for_backward(x, weight, r)
        return x * r * weight

    @staticmethod
    def backward(ctx, g):
        x, weight, r = ctx.saved_tensors
        gw_in = g * weight
        inner = (gw_in * x).mean(dim=-1, keepdim=True)
        gx = r * gw_in + x * r.pow(3) * inner  # BUG
        gweight = (g * x * r).sum(dim=0)
        return gx, gweight

    @staticmethod
    def example_inputs():
        return _inputs(4, 5, channels=5, seed=3)[:2]


GROUPS = 2


def _group_forward(ctx, x, weight, bias):
    n, c, length = x.shape
    xg = x.reshape(n, GROUPS, -1)
    mu = xg.mean(dim=2, keepdim=True)
    rstd = ((xg - mu).pow(2).mean(dim=2, keepdim=True) + EPS).rsqrt()
    xhat = ((xg - mu) * rstd).reshape(n, c, length)
    ctx.save_for_backward(xhat, rstd, weight)
    return xhat * weight[:, None] + bias[:, None]


class NovelGroupNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _group_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        n, c, length = xhat.shape
        gxh = (g * weight[:, None]).reshape(n, GROUPS, -1)
        xh = xhat.reshape(n, GROUPS, -1)
        gx = rstd * (gxh - gxh.mean(dim=2, keepdim=True) - xh * (gxh * xh).mean(dim=2, keepdim=True))
        return gx.reshape(n, c, length), (g * xhat).sum(dim=(0, 2)), g.sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        return _inputs(3, 4, 6, channels=4, seed=4)


class NovelGroupNormBiasKeepsLength(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "bias",
           "note": "the bias gradient is summed over the batch only, not over the length too"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _group_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        n, c, length = xhat.shape
        gxh = (g * weight[:, None]).reshape(n, GROUPS, -1)
        xh = xhat.reshape(n, GROUPS, -1)
        gx = rstd * (gxh - gxh.mean(dim=2, keepdim=True) - xh * (gxh * xh).mean(dim=2, keepdim=True))
        gbias = g.sum(dim=0)  # BUG
        return gx.reshape(n, c, length), (g * xhat).sum(dim=(0, 2)), gbias

    @staticmethod
    def example_inputs():
        return _inputs(3, 4, 6, channels=4, seed=4)


class NovelGroupNormMeanOverGroups(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the centring mean of the backward is taken over the groups (dim 1), not within a group"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _group_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        n, c, length = xhat.shape
        gxh = (g * weight[:, None]).reshape(n, GROUPS, -1)
        xh = xhat.reshape(n, GROUPS, -1)
        centred = gxh - gxh.mean(dim=1, keepdim=True)  # BUG
        gx = rstd * (centred - xh * (gxh * xh).mean(dim=2, keepdim=True))
        return gx.reshape(n, c, length), (g * xhat).sum(dim=(0, 2)), g.sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        return _inputs(3, 4, 6, channels=4, seed=5)


def _batch_forward(ctx, x, weight, bias):
    mu = x.mean(0)
    rstd = 1.0 / torch.sqrt(x.var(0, unbiased=False) + EPS)
    xhat = (x - mu) * rstd
    ctx.save_for_backward(xhat, rstd, weight)
    return weight * xhat + bias


class NovelBatchNormTrain(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _batch_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        n = xhat.shape[0]
        gxh = g * weight
        gx = (rstd / n) * (n * gxh - gxh.sum(0) - xhat * (gxh * xhat).sum(0))
        return gx, (g * xhat).sum(0), g.sum(0)

    @staticmethod
    def example_inputs():
        return _inputs(6, 3, channels=3, seed=6)


class NovelBatchNormBiasNegated(torch.autograd.Function):
    bug = {"kind": "sign", "input": "bias",
           "note": "the shift's gradient is returned negated"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _batch_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        n = xhat.shape[0]
        gxh = g * weight
        gx = (rstd / n) * (n * gxh - gxh.sum(0) - xhat * (gxh * xhat).sum(0))
        return gx, (g * xhat).sum(0), -g.sum(0)  # BUG

    @staticmethod
    def example_inputs():
        return _inputs(6, 3, channels=3, seed=6)


class NovelBatchNormSkipsGain(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the input gradient is built from g where g * weight (the gradient of xhat) is needed"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _batch_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        n = xhat.shape[0]
        gx = (rstd / n) * (n * g - g.sum(0) - xhat * (g * xhat).sum(0))  # BUG
        return gx, (g * xhat).sum(0), g.sum(0)

    @staticmethod
    def example_inputs():
        return _inputs(6, 3, channels=3, seed=7)
