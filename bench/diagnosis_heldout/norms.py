"""Normalisation layers with hand-written backward passes (plain torch).

LayerNorm, RMSNorm, GroupNorm and BatchNorm (training statistics) with affine parameters.
Blind corpus: see README.md.
"""
import torch

EPS = 1e-5


def _features(n=4, f=5, seed=11):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, f, generator=gen, dtype=torch.float64) * 1.5 + 0.3
    gamma = torch.rand(f, generator=gen, dtype=torch.float64) + 0.5
    beta = torch.randn(f, generator=gen, dtype=torch.float64)
    return x, gamma, beta


# ----------------------------------------------------------------------------- LayerNorm
def _layer_norm_forward(ctx, x, gamma, beta):
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    rstd = 1.0 / torch.sqrt(var + EPS)
    xhat = (x - mu) * rstd
    ctx.save_for_backward(x, xhat, rstd, gamma)
    return xhat * gamma + beta


class LayerNormAffine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _layer_norm_forward(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, rstd, gamma = ctx.saved_tensors
        dxhat = grad_out * gamma
        dx = rstd * (dxhat - dxhat.mean(-1, keepdim=True)
                     - xhat * (dxhat * xhat).mean(-1, keepdim=True))
        dgamma = (grad_out * xhat).sum(0)
        dbeta = grad_out.sum(0)
        return dx, dgamma, dbeta

    @staticmethod
    def example_inputs():
        return _features()


class LayerNormGammaGradFromRawInput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "gamma",
           "note": "dgamma multiplies grad_out by the raw input x instead of the normalised xhat"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _layer_norm_forward(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, rstd, gamma = ctx.saved_tensors
        dxhat = grad_out * gamma
        dx = rstd * (dxhat - dxhat.mean(-1, keepdim=True)
                     - xhat * (dxhat * xhat).mean(-1, keepdim=True))
        dgamma = (grad_out * x).sum(0)  # BUG
        dbeta = grad_out.sum(0)
        return dx, dgamma, dbeta

    @staticmethod
    def example_inputs():
        return _features()


class LayerNormDropsVarianceTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "dx keeps the mean-centring term but drops the one through the variance"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _layer_norm_forward(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, rstd, gamma = ctx.saved_tensors
        dxhat = grad_out * gamma
        dx = rstd * (dxhat - dxhat.mean(-1, keepdim=True))  # BUG
        dgamma = (grad_out * xhat).sum(0)
        dbeta = grad_out.sum(0)
        return dx, dgamma, dbeta

    @staticmethod
    def example_inputs():
        return _features()


class LayerNormVarianceTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the variance term of dx is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _layer_norm_forward(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, rstd, gamma = ctx.saved_tensors
        dxhat = grad_out * gamma
        dx = rstd * (dxhat - dxhat.mean(-1, keepdim=True)
                     + xhat * (dxhat * xhat).mean(-1, keepdim=True))  # BUG
        dgamma = (grad_out * xhat).sum(0)
        dbeta = grad_out.sum(0)
        return dx, dgamma, dbeta

    @staticmethod
    def example_inputs():
        return _features()


class LayerNormBatchAxisMeans(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the means in dx are taken over the batch dim 0 (BatchNorm's formula) "
                   "instead of the normalised dim -1"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _layer_norm_forward(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, rstd, gamma = ctx.saved_tensors
        dxhat = grad_out * gamma
        dx = rstd * (dxhat - dxhat.mean(0, keepdim=True)
                     - xhat * (dxhat * xhat).mean(0, keepdim=True))  # BUG
        dgamma = (grad_out * xhat).sum(0)
        dbeta = grad_out.sum(0)
        return dx, dgamma, dbeta

    @staticmethod
    def example_inputs():
        return _features()


# ------------------------------------------------------------------------------- RMSNorm
class RMSNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        rrms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)
        y = x * rrms * weight
        ctx.save_for_backward(x, rrms, weight, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, rrms, weight, y = ctx.saved_tensors
        gw = grad_out * weight
        dx = rrms * (gw - x * rrms.pow(2) * (gw * x).mean(-1, keepdim=True))
        dweight = (grad_out * x * rrms).sum(0)
        return dx, dweight

    @staticmethod
    def example_inputs():
        x, gamma, _ = _features(seed=12)
        return x, gamma


class RMSNormRmsTreatedAsConstant(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "1/rms is treated as a constant: the term through the mean of squares is gone"}

    @staticmethod
    def forward(ctx, x, weight):
        rrms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)
        y = x * rrms * weight
        ctx.save_for_backward(x, rrms, weight, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, rrms, weight, y = ctx.saved_tensors
        dx = grad_out * weight * rrms  # BUG
        dweight = (grad_out * x * rrms).sum(0)
        return dx, dweight

    @staticmethod
    def example_inputs():
        x, gamma, _ = _features(seed=12)
        return x, gamma


class RMSNormUsesOutputInProjection(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the projection term uses the saved output y where the input x belongs"}

    @staticmethod
    def forward(ctx, x, weight):
        rrms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)
        y = x * rrms * weight
        ctx.save_for_backward(x, rrms, weight, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, rrms, weight, y = ctx.saved_tensors
        gw = grad_out * weight
        dx = rrms * (gw - y * rrms.pow(2) * (gw * y).mean(-1, keepdim=True))  # BUG
        dweight = (grad_out * x * rrms).sum(0)
        return dx, dweight

    @staticmethod
    def example_inputs():
        x, gamma, _ = _features(seed=12)
        return x, gamma


# ----------------------------------------------------------------------------- GroupNorm
GROUPS = 2


def _group_norm_forward(ctx, x, gamma, beta):
    n, c, length = x.shape
    xg = x.reshape(n, GROUPS, -1)
    mu = xg.mean(-1, keepdim=True)
    rstd = 1.0 / torch.sqrt(xg.var(-1, unbiased=False, keepdim=True) + EPS)
    xhat = ((xg - mu) * rstd).reshape(n, c, length)
    ctx.save_for_backward(xhat, rstd, gamma)
    return xhat * gamma[None, :, None] + beta[None, :, None]


def _group_inputs():
    gen = torch.Generator().manual_seed(13)
    x = torch.randn(2, 4, 3, generator=gen, dtype=torch.float64)
    gamma = torch.rand(4, generator=gen, dtype=torch.float64) + 0.5
    beta = torch.randn(4, generator=gen, dtype=torch.float64)
    return x, gamma, beta


class GroupNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _group_norm_forward(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        n, c, length = xhat.shape
        dxhat = (grad_out * gamma[None, :, None]).reshape(n, GROUPS, -1)
        xh = xhat.reshape(n, GROUPS, -1)
        dx = rstd * (dxhat - dxhat.mean(-1, keepdim=True)
                     - xh * (dxhat * xh).mean(-1, keepdim=True))
        dgamma = (grad_out * xhat).sum(dim=(0, 2))
        dbeta = grad_out.sum(dim=(0, 2))
        return dx.reshape(n, c, length), dgamma, dbeta

    @staticmethod
    def example_inputs():
        return _group_inputs()


class GroupNormMeansAcrossGroups(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "dx's means run over the group axis (dim 1) of the (n, groups, m) view, "
                   "not over the members of each group (dim -1)"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _group_norm_forward(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        n, c, length = xhat.shape
        dxhat = (grad_out * gamma[None, :, None]).reshape(n, GROUPS, -1)
        xh = xhat.reshape(n, GROUPS, -1)
        dx = rstd * (dxhat - dxhat.mean(1, keepdim=True)
                     - xh * (dxhat * xh).mean(1, keepdim=True))  # BUG
        dgamma = (grad_out * xhat).sum(dim=(0, 2))
        dbeta = grad_out.sum(dim=(0, 2))
        return dx.reshape(n, c, length), dgamma, dbeta

    @staticmethod
    def example_inputs():
        return _group_inputs()


# ----------------------------------------------------------------------------- BatchNorm
def _batch_norm_forward(ctx, x, gamma, beta):
    mu = x.mean(0)
    var = x.var(0, unbiased=False)
    rstd = 1.0 / torch.sqrt(var + EPS)
    xhat = (x - mu) * rstd
    ctx.save_for_backward(xhat, rstd, gamma)
    return gamma * xhat + beta


def _batch_inputs():
    x, gamma, beta = _features(n=6, f=4, seed=14)
    return x, gamma, beta


class BatchNormTrain(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _batch_norm_forward(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        n = xhat.shape[0]
        dxhat = grad_out * gamma
        dx = rstd / n * (n * dxhat - dxhat.sum(0) - xhat * (dxhat * xhat).sum(0))
        return dx, (grad_out * xhat).sum(0), grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _batch_inputs()


class BatchNormForgetsOneOverN(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the 1/N in front of the batch-statistics formula is left out: dx is N times too big"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _batch_norm_forward(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        n = xhat.shape[0]
        dxhat = grad_out * gamma
        dx = rstd * (n * dxhat - dxhat.sum(0) - xhat * (dxhat * xhat).sum(0))  # BUG
        return dx, (grad_out * xhat).sum(0), grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _batch_inputs()


class BatchNormAffineGradsSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "gamma",
           "note": "the gradients of gamma and beta are returned in each other's place"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _batch_norm_forward(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        n = xhat.shape[0]
        dxhat = grad_out * gamma
        dx = rstd / n * (n * dxhat - dxhat.sum(0) - xhat * (dxhat * xhat).sum(0))
        return dx, grad_out.sum(0), (grad_out * xhat).sum(0)  # BUG

    @staticmethod
    def example_inputs():
        return _batch_inputs()
