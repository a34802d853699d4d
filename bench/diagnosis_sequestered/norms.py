"""Normalisation layers with hand-written backwards: LayerNorm, RMSNorm, GroupNorm, BatchNorm
(training mode) and weight standardisation (sequestered corpus)."""
import torch

EPS = 1e-5


def _rows(seed, n=3, d=5):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, dtype=torch.float64, generator=gen)
    weight = torch.rand(d, dtype=torch.float64, generator=gen) + 0.5
    bias = torch.randn(d, dtype=torch.float64, generator=gen)
    return x, weight, bias


def _standardise(x, dim):
    mu = x.mean(dim=dim, keepdim=True)
    rstd = torch.rsqrt(((x - mu) ** 2).mean(dim=dim, keepdim=True) + EPS)
    return (x - mu) * rstd, rstd


def _project_out(g, xhat, rstd, dim):
    """rstd * (g - mean(g) - xhat * mean(g * xhat)): the standardisation's backward."""
    return rstd * (g - g.mean(dim=dim, keepdim=True) - xhat * (g * xhat).mean(dim=dim, keepdim=True))


# ------------------------------------------------------------------------------- LayerNorm
class SequesteredLayerNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _standardise(x, -1)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        gx = _project_out(grad_out * weight, xhat, rstd, -1)
        return gx, (grad_out * xhat).sum(dim=0), grad_out.sum(dim=0)

    @staticmethod
    def example_inputs():
        return _rows(11)


class SequesteredLayerNormNoProjection(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the x-gradient keeps the mean subtraction but drops the - xhat * mean(g * xhat) term"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _standardise(x, -1)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        g = grad_out * weight
        centred = g - g.mean(dim=-1, keepdim=True)
        gx = rstd * centred  # BUG
        return gx, (grad_out * xhat).sum(dim=0), grad_out.sum(dim=0)

    @staticmethod
    def example_inputs():
        return _rows(11)


class SequesteredLayerNormWeightNoUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "weight",
           "note": "the weight gradient sums xhat alone, forgetting to multiply by grad_out"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _standardise(x, -1)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        gx = _project_out(grad_out * weight, xhat, rstd, -1)
        gw = xhat.sum(dim=0)  # BUG
        return gx, gw, grad_out.sum(dim=0)

    @staticmethod
    def example_inputs():
        return _rows(11)


# --------------------------------------------------------------------------------- RMSNorm
class SequesteredRMSNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gain):
        r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)
        ctx.save_for_backward(x, r, gain)
        return x * r * gain

    @staticmethod
    def backward(ctx, grad_out):
        x, r, gain = ctx.saved_tensors
        g = grad_out * gain
        dx = r * g - x * r.pow(3) * (g * x).mean(-1, keepdim=True)
        dgain = (grad_out * x * r).sum(0)
        return dx, dgain

    @staticmethod
    def example_inputs():
        x, gain, _ = _rows(12)
        return x, gain


class SequesteredRMSNormGainFromRaw(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "gain",
           "note": "the gain gradient uses the raw x where the normalised x * r is needed"}

    @staticmethod
    def forward(ctx, x, gain):
        r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)
        ctx.save_for_backward(x, r, gain)
        return x * r * gain

    @staticmethod
    def backward(ctx, grad_out):
        x, r, gain = ctx.saved_tensors
        g = grad_out * gain
        dx = r * g - x * r.pow(3) * (g * x).mean(-1, keepdim=True)
        dgain = (grad_out * x).sum(0)  # BUG
        return dx, dgain

    @staticmethod
    def example_inputs():
        x, gain, _ = _rows(12)
        return x, gain


class SequesteredRMSNormCorrectionAdded(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the correction through the rms is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x, gain):
        r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)
        ctx.save_for_backward(x, r, gain)
        return x * r * gain

    @staticmethod
    def backward(ctx, grad_out):
        x, r, gain = ctx.saved_tensors
        g = grad_out * gain
        dx = r * g + x * r.pow(3) * (g * x).mean(-1, keepdim=True)  # BUG
        dgain = (grad_out * x * r).sum(0)
        return dx, dgain

    @staticmethod
    def example_inputs():
        x, gain, _ = _rows(12)
        return x, gain


# ------------------------------------------------------------------------------- GroupNorm
GROUPS = 2


def _group_inputs():
    gen = torch.Generator().manual_seed(13)
    x = torch.randn(2, 4, 3, dtype=torch.float64, generator=gen)
    weight = torch.rand(4, dtype=torch.float64, generator=gen) + 0.5
    bias = torch.randn(4, dtype=torch.float64, generator=gen)
    return x, weight, bias


def _group_forward(ctx, x, weight, bias):
    n, c, length = x.shape
    xhat, rstd = _standardise(x.reshape(n, GROUPS, -1), -1)
    xhat = xhat.reshape(n, c, length)
    ctx.save_for_backward(xhat, rstd, weight)
    return xhat * weight[:, None] + bias[:, None]


class SequesteredGroupNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _group_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        n, c, length = xhat.shape
        g = (grad_out * weight[:, None]).reshape(n, GROUPS, -1)
        gx = _project_out(g, xhat.reshape(n, GROUPS, -1), rstd, -1).reshape(n, c, length)
        return gx, (grad_out * xhat).sum(dim=(0, 2)), grad_out.sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        return _group_inputs()


class SequesteredGroupNormBiasKeepsLength(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "bias",
           "note": "the bias gradient is summed over the batch only, not over the length too"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _group_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        n, c, length = xhat.shape
        g = (grad_out * weight[:, None]).reshape(n, GROUPS, -1)
        gx = _project_out(g, xhat.reshape(n, GROUPS, -1), rstd, -1).reshape(n, c, length)
        gb = grad_out.sum(dim=0)  # BUG
        return gx, (grad_out * xhat).sum(dim=(0, 2)), gb

    @staticmethod
    def example_inputs():
        return _group_inputs()


class SequesteredGroupNormChannelStats(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the backward's means run over each channel's length, not over the whole group"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _group_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        n, c, length = xhat.shape
        g = grad_out * weight[:, None]
        r = rstd.repeat_interleave(c // GROUPS, dim=1)
        gx = _project_out(g, xhat, r, -1)  # BUG
        return gx, (grad_out * xhat).sum(dim=(0, 2)), grad_out.sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        return _group_inputs()


# ------------------------------------------------------------------------ BatchNorm (train)
def _batch_inputs():
    gen = torch.Generator().manual_seed(14)
    x = torch.randn(6, 3, dtype=torch.float64, generator=gen)
    gamma = torch.rand(3, dtype=torch.float64, generator=gen) + 0.5
    beta = torch.randn(3, dtype=torch.float64, generator=gen)
    return x, gamma, beta


class SequesteredBatchNormTrain(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gamma, beta):
        mean = x.mean(0)
        var = x.var(0, unbiased=False)
        xhat = (x - mean) / torch.sqrt(var + EPS)
        ctx.save_for_backward(xhat, var, gamma)
        return gamma * xhat + beta

    @staticmethod
    def backward(ctx, grad_out):
        xhat, var, gamma = ctx.saved_tensors
        inv = 1.0 / torch.sqrt(var + EPS)
        dxhat = grad_out * gamma
        dx = inv * (dxhat - dxhat.mean(0) - xhat * (dxhat * xhat).mean(0))
        return dx, (grad_out * xhat).sum(0), grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _batch_inputs()


class SequesteredBatchNormScaledInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "xhat is saved, then scaled by gamma in place to build the output, so backward reads gamma * xhat"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        mean = x.mean(0)
        var = x.var(0, unbiased=False)
        xhat = (x - mean) / torch.sqrt(var + EPS)
        ctx.save_for_backward(xhat, var, gamma)
        out = xhat.mul_(gamma)  # BUG
        return out + beta

    @staticmethod
    def backward(ctx, grad_out):
        xhat, var, gamma = ctx.saved_tensors
        inv = 1.0 / torch.sqrt(var + EPS)
        dxhat = grad_out * gamma
        dx = inv * (dxhat - dxhat.mean(0) - xhat * (dxhat * xhat).mean(0))
        return dx, (grad_out * xhat).sum(0), grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _batch_inputs()


# -------------------------------------------------------------------- weight standardisation
class SequesteredWeightStandardise(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, w):
        what, rstd = _standardise(w, 1)
        ctx.save_for_backward(what, rstd)
        return what

    @staticmethod
    def backward(ctx, grad_out):
        what, rstd = ctx.saved_tensors
        return _project_out(grad_out, what, rstd, 1)


class SequesteredWeightStandardiseAsUnitNorm(torch.autograd.Function):
    bug = {"kind": "none", "input": "w",
           "note": "the backward of dividing each row by its L2 norm, used for standardising the rows"}

    @staticmethod
    def forward(ctx, w):
        what, rstd = _standardise(w, 1)
        ctx.save_for_backward(w, what)
        return what

    @staticmethod
    def backward(ctx, grad_out):
        w, what = ctx.saved_tensors
        norm = w.norm(dim=1, keepdim=True)
        unit = w / norm
        return (grad_out - unit * (grad_out * unit).sum(1, keepdim=True)) / norm  # BUG
