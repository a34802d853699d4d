"""Normalisation layers written by hand: LayerNorm (affine), RMSNorm (gain), BatchNorm, GroupNorm."""
import torch


def _layer_stats(x, eps):
    mu = x.mean(-1, keepdim=True)
    rstd = (x.var(-1, unbiased=False, keepdim=True) + eps).rsqrt()
    return (x - mu) * rstd, rstd


def _ln_inputs():
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(5, 5, dtype=torch.float64, generator=gen)
    w = torch.rand(5, dtype=torch.float64, generator=gen) + 0.5
    b = torch.randn(5, dtype=torch.float64, generator=gen)
    return x, w, b


class LatestLayerNormAffine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _layer_stats(x, 1e-5)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        gx = g * weight
        dx = rstd * (gx - gx.mean(-1, keepdim=True) - xhat * (gx * xhat).mean(-1, keepdim=True))
        return dx, (g * xhat).sum(0), g.sum(0)

    example_inputs = staticmethod(_ln_inputs)


class LatestLayerNormAffineNoMeanTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "drops the -mean(g*w) term from the input gradient"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _layer_stats(x, 1e-5)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        gx = g * weight
        dx = rstd * (gx - xhat * (gx * xhat).mean(-1, keepdim=True))  # BUG
        return dx, (g * xhat).sum(0), g.sum(0)

    example_inputs = staticmethod(_ln_inputs)


class LatestLayerNormAffineBiasRows(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "bias",
           "note": "the bias gradient sums over the feature dim instead of the batch dim"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _layer_stats(x, 1e-5)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        gx = g * weight
        dx = rstd * (gx - gx.mean(-1, keepdim=True) - xhat * (gx * xhat).mean(-1, keepdim=True))
        grad_bias = g.sum(1)  # BUG
        return dx, (g * xhat).sum(0), grad_bias

    example_inputs = staticmethod(_ln_inputs)


class LatestLayerNormAffineInplace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "weight",
           "note": "xhat is kept on ctx and then scaled and shifted in place into the output"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _layer_stats(x, 1e-5)
        ctx.xhat, ctx.rstd, ctx.weight = xhat, rstd, weight
        return xhat.mul_(weight).add_(bias)  # BUG

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.xhat, ctx.rstd, ctx.weight
        gx = g * weight
        dx = rstd * (gx - gx.mean(-1, keepdim=True) - xhat * (gx * xhat).mean(-1, keepdim=True))
        return dx, (g * xhat).sum(0), g.sum(0)

    example_inputs = staticmethod(_ln_inputs)


def _rms_inputs():
    gen = torch.Generator().manual_seed(12)
    return (torch.randn(3, 4, dtype=torch.float64, generator=gen),
            torch.rand(4, dtype=torch.float64, generator=gen) + 0.5)


class LatestRMSNormGain(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gain):
        rms = (x.pow(2).mean(-1, keepdim=True) + 1e-6).sqrt()
        ctx.save_for_backward(x, gain, rms)
        return x / rms * gain

    @staticmethod
    def backward(ctx, g):
        x, gain, rms = ctx.saved_tensors
        gy = g * gain
        dx = gy / rms - x * (gy * x).mean(-1, keepdim=True) / rms ** 3
        return dx, (g * x / rms).sum(0)

    example_inputs = staticmethod(_rms_inputs)


class LatestRMSNormGainRawInput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "gain",
           "note": "the gain gradient multiplies by x instead of the normalised x / rms"}

    @staticmethod
    def forward(ctx, x, gain):
        rms = (x.pow(2).mean(-1, keepdim=True) + 1e-6).sqrt()
        ctx.save_for_backward(x, gain, rms)
        return x / rms * gain

    @staticmethod
    def backward(ctx, g):
        x, gain, rms = ctx.saved_tensors
        gy = g * gain
        dx = gy / rms - x * (gy * x).mean(-1, keepdim=True) / rms ** 3
        return dx, (g * x).sum(0)  # BUG

    example_inputs = staticmethod(_rms_inputs)


class LatestRMSNormGainNoUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "gain",
           "note": "the gain gradient sums x / rms without multiplying by the upstream gradient"}

    @staticmethod
    def forward(ctx, x, gain):
        rms = (x.pow(2).mean(-1, keepdim=True) + 1e-6).sqrt()
        ctx.save_for_backward(x, gain, rms)
        return x / rms * gain

    @staticmethod
    def backward(ctx, g):
        x, gain, rms = ctx.saved_tensors
        gy = g * gain
        dx = gy / rms - x * (gy * x).mean(-1, keepdim=True) / rms ** 3
        grad_gain = (x / rms).sum(0)  # BUG
        return dx, grad_gain

    example_inputs = staticmethod(_rms_inputs)


class LatestRMSNormGainLayerNormBackward(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the input gradient is LayerNorm's (centred statistics), not RMSNorm's"}

    @staticmethod
    def forward(ctx, x, gain):
        rms = (x.pow(2).mean(-1, keepdim=True) + 1e-6).sqrt()
        ctx.save_for_backward(x, gain, rms)
        return x / rms * gain

    @staticmethod
    def backward(ctx, g):
        x, gain, rms = ctx.saved_tensors
        gy = g * gain
        xhat, rstd = _layer_stats(x, 1e-6)
        dx = rstd * (gy - gy.mean(-1, keepdim=True) - xhat * (gy * xhat).mean(-1, keepdim=True))  # BUG
        return dx, (g * x / rms).sum(0)

    example_inputs = staticmethod(_rms_inputs)


class LatestBatchNormTrain(torch.autograd.Function):
    """Training-mode batch norm over dim 0, no affine."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        mean = x.mean(0)
        inv = 1.0 / torch.sqrt(x.var(0, unbiased=False) + 1e-5)
        xhat = (x - mean) * inv
        ctx.save_for_backward(xhat, inv)
        return xhat

    @staticmethod
    def backward(ctx, g):
        xhat, inv = ctx.saved_tensors
        return inv * (g - g.mean(0) - xhat * (g * xhat).mean(0))


class LatestBatchNormTrainMeanSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x", "note": "the mean of g is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x):
        mean = x.mean(0)
        inv = 1.0 / torch.sqrt(x.var(0, unbiased=False) + 1e-5)
        xhat = (x - mean) * inv
        ctx.save_for_backward(xhat, inv)
        return xhat

    @staticmethod
    def backward(ctx, g):
        xhat, inv = ctx.saved_tensors
        return inv * (g + g.mean(0) - xhat * (g * xhat).mean(0))  # BUG


class LatestGroupNormTwoGroups(torch.autograd.Function):
    """GroupNorm of (N, C, L) with two groups, no affine."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        n, c, length = x.shape
        grouped = x.reshape(n, 2, -1)
        mu = grouped.mean(-1, keepdim=True)
        rstd = (grouped.var(-1, unbiased=False, keepdim=True) + 1e-5).rsqrt()
        xhat = (grouped - mu) * rstd
        ctx.save_for_backward(xhat, rstd)
        ctx.shape = (n, c, length)
        return xhat.reshape(n, c, length)

    @staticmethod
    def backward(ctx, g):
        xhat, rstd = ctx.saved_tensors
        gg = g.reshape(xhat.shape)
        dx = rstd * (gg - gg.mean(-1, keepdim=True) - xhat * (gg * xhat).mean(-1, keepdim=True))
        return dx.reshape(ctx.shape)

    @staticmethod
    def example_inputs():
        return (torch.randn(2, 4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(13)),)
