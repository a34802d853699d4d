"""Normalisation layers with hand-written backwards: LayerNorm, RMSNorm, BatchNorm, GroupNorm.

Part of the blind corpus bench/diagnosis_unseen (see its README): score only, never design.
"""
import torch

EPS = 1e-5


def _normalise_last(x):
    mu = x.mean(-1, keepdim=True)
    rstd = torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + EPS)
    return (x - mu) * rstd, rstd


def _seeded(seed, *shape):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=torch.float64, generator=g)


def _ln_inputs():
    return (_seeded(11, 5, 6) * 2 + 0.5, 1 + 0.3 * _seeded(12, 6), 0.1 * _seeded(13, 6))


class AffineLayerNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _normalise_last(x)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        gw = grad_out * weight
        dx = rstd * (gw - gw.mean(-1, keepdim=True)
                     - xhat * (gw * xhat).mean(-1, keepdim=True))
        return dx, (grad_out * xhat).sum(0), grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _ln_inputs()


class LayerNormNoProjection(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "dx drops the -xhat * mean(g*w*xhat) projection term of the variance path"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _normalise_last(x)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        gw = grad_out * weight
        dx = rstd * (gw - gw.mean(-1, keepdim=True))  # BUG
        return dx, (grad_out * xhat).sum(0), grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _ln_inputs()


class LayerNormMeansOverBatch(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the two means in dx are taken over the batch dim 0 instead of the feature dim"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _normalise_last(x)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        gw = grad_out * weight
        dx = rstd * (gw - gw.mean(0, keepdim=True) - xhat * (gw * xhat).mean(0, keepdim=True))  # BUG
        return dx, (grad_out * xhat).sum(0), grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _ln_inputs()


class LayerNormGradsOutOfOrder(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "weight",
           "note": "the gain and bias gradients are returned in each other's slots"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _normalise_last(x)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        gw = grad_out * weight
        dx = rstd * (gw - gw.mean(-1, keepdim=True)
                     - xhat * (gw * xhat).mean(-1, keepdim=True))
        d_weight = (grad_out * xhat).sum(0)
        d_bias = grad_out.sum(0)
        return dx, d_bias, d_weight  # BUG

    @staticmethod
    def example_inputs():
        return _ln_inputs()


class LayerNormAffineInplace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "xhat is saved, then scaled and shifted in place to save memory: backward reads y"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _normalise_last(x)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat.mul_(weight).add_(bias)  # BUG

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        gw = grad_out * weight
        dx = rstd * (gw - gw.mean(-1, keepdim=True)
                     - xhat * (gw * xhat).mean(-1, keepdim=True))
        return dx, (grad_out * xhat).sum(0), grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _ln_inputs()


class RMSNormGain(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        inv_rms = (x.pow(2).mean(-1, keepdim=True) + EPS).rsqrt()
        ctx.save_for_backward(x, weight, inv_rms)
        return x * inv_rms * weight

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, inv_rms = ctx.saved_tensors
        gw = grad_out * weight
        dx = inv_rms * gw - x * inv_rms.pow(3) * (gw * x).mean(-1, keepdim=True)
        dweight = (grad_out * x * inv_rms).sum(0)
        return dx, dweight

    @staticmethod
    def example_inputs():
        return _seeded(21, 4, 5) + 0.3, 1 + 0.5 * _seeded(22, 5)


class RMSNormProjectionSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the rms-derivative term is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x, weight):
        inv_rms = (x.pow(2).mean(-1, keepdim=True) + EPS).rsqrt()
        ctx.save_for_backward(x, weight, inv_rms)
        return x * inv_rms * weight

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, inv_rms = ctx.saved_tensors
        gw = grad_out * weight
        dx = inv_rms * gw + x * inv_rms.pow(3) * (gw * x).mean(-1, keepdim=True)  # BUG
        dweight = (grad_out * x * inv_rms).sum(0)
        return dx, dweight

    @staticmethod
    def example_inputs():
        return _seeded(21, 4, 5) + 0.3, 1 + 0.5 * _seeded(22, 5)


class RMSNormGainFromRawInput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "weight",
           "note": "the gain gradient multiplies by the raw x instead of the normalised x * inv_rms"}

    @staticmethod
    def forward(ctx, x, weight):
        inv_rms = (x.pow(2).mean(-1, keepdim=True) + EPS).rsqrt()
        ctx.save_for_backward(x, weight, inv_rms)
        return x * inv_rms * weight

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, inv_rms = ctx.saved_tensors
        gw = grad_out * weight
        dx = inv_rms * gw - x * inv_rms.pow(3) * (gw * x).mean(-1, keepdim=True)
        dweight = (grad_out * x).sum(0)  # BUG
        return dx, dweight

    @staticmethod
    def example_inputs():
        return _seeded(21, 4, 5) + 0.3, 1 + 0.5 * _seeded(22, 5)


class BatchNorm1dTraining(torch.autograd.Function):
    """Training-mode batch norm of (N, C): statistics over the batch dim 0."""
    bug = None

    @staticmethod
    def forward(ctx, x, gamma, beta):
        mean = x.mean(0)
        rstd = 1.0 / torch.sqrt(x.var(0, unbiased=False) + EPS)
        xhat = (x - mean) * rstd
        ctx.save_for_backward(xhat, rstd, gamma)
        return gamma * xhat + beta

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        n = grad_out.shape[0]
        dgamma = (grad_out * xhat).sum(0)
        dbeta = grad_out.sum(0)
        dx = gamma * rstd / n * (n * grad_out - dbeta - xhat * dgamma)
        return dx, dgamma, dbeta

    @staticmethod
    def example_inputs():
        return _seeded(31, 7, 3) * 1.5, 1 + 0.2 * _seeded(32, 3), _seeded(33, 3)


class BatchNormShiftAveraged(torch.autograd.Function):
    bug = {"kind": "scale", "input": "beta",
           "note": "the shift gradient is averaged over the batch instead of summed (factor 1/N)"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        mean = x.mean(0)
        rstd = 1.0 / torch.sqrt(x.var(0, unbiased=False) + EPS)
        xhat = (x - mean) * rstd
        ctx.save_for_backward(xhat, rstd, gamma)
        return gamma * xhat + beta

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        n = grad_out.shape[0]
        dgamma = (grad_out * xhat).sum(0)
        dx = gamma * rstd / n * (n * grad_out - grad_out.sum(0) - xhat * dgamma)
        dbeta = grad_out.mean(0)  # BUG
        return dx, dgamma, dbeta

    @staticmethod
    def example_inputs():
        return _seeded(31, 7, 3) * 1.5, 1 + 0.2 * _seeded(32, 3), _seeded(33, 3)


def _group_stats(x, groups):
    n, c, length = x.shape
    xg = x.reshape(n, groups, (c // groups) * length)
    mu = xg.mean(-1, keepdim=True)
    rstd = (xg.var(-1, unbiased=False, keepdim=True) + EPS).rsqrt()
    return ((xg - mu) * rstd).reshape(n, c, length), rstd


class GroupNorm1d(torch.autograd.Function):
    """GroupNorm of (N, C, L) with 2 groups and a per-channel affine."""
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _group_stats(x, 2)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight[:, None] + bias[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        n, c, length = grad_out.shape
        gw = (grad_out * weight[:, None]).reshape(n, 2, -1)
        xg = xhat.reshape(n, 2, -1)
        dxg = rstd * (gw - gw.mean(-1, keepdim=True) - xg * (gw * xg).mean(-1, keepdim=True))
        dweight = (grad_out * xhat).sum((0, 2))
        dbias = grad_out.sum((0, 2))
        return dxg.reshape(n, c, length), dweight, dbias

    @staticmethod
    def example_inputs():
        return _seeded(41, 2, 4, 3), 1 + 0.3 * _seeded(42, 4), 0.5 * _seeded(43, 4)


class GroupNormBiasKeepsLength(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "bias",
           "note": "the bias gradient is summed over the batch only, not over the length dim too"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _group_stats(x, 2)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight[:, None] + bias[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        n, c, length = grad_out.shape
        gw = (grad_out * weight[:, None]).reshape(n, 2, -1)
        xg = xhat.reshape(n, 2, -1)
        dxg = rstd * (gw - gw.mean(-1, keepdim=True) - xg * (gw * xg).mean(-1, keepdim=True))
        dweight = (grad_out * xhat).sum((0, 2))
        dbias = grad_out.sum(0)  # BUG
        return dxg.reshape(n, c, length), dweight, dbias

    @staticmethod
    def example_inputs():
        return _seeded(41, 2, 4, 3), 1 + 0.3 * _seeded(42, 4), 0.5 * _seeded(43, 4)
