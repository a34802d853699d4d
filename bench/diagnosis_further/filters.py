"""Time-domain filters: a pre-emphasis filter with a learned coefficient, delta features by
finite differences (replicate padding), autocorrelation by F.conv1d and resampling by fixed
linear-interpolation weights."""
import torch
import torch.nn.functional as F


def _pre_inputs():
    gen = torch.Generator().manual_seed(21)
    return torch.randn(3, 6, dtype=torch.float64, generator=gen), torch.tensor([0.7], dtype=torch.float64)


class FurtherPreEmphasis(torch.autograd.Function):
    """y[t] = x[t] - coef * x[t-1], y[0] = x[0]."""
    bug = None

    @staticmethod
    def forward(ctx, x, coef):
        ctx.save_for_backward(x, coef)
        y = x.clone()
        y[:, 1:] = x[:, 1:] - coef * x[:, :-1]
        return y

    @staticmethod
    def backward(ctx, grad):
        x, coef = ctx.saved_tensors
        g_x = grad.clone()
        g_x[:, :-1] -= coef * grad[:, 1:]
        g_coef = -(grad[:, 1:] * x[:, :-1]).sum().reshape(1)
        return g_x, g_coef

    @staticmethod
    def example_inputs():
        return _pre_inputs()


class FurtherPreEmphasisSameDirection(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the adjoint applies the filter again (lag) instead of its time-reversed version (lead)"}

    @staticmethod
    def forward(ctx, x, coef):
        ctx.save_for_backward(x, coef)
        y = x.clone()
        y[:, 1:] = x[:, 1:] - coef * x[:, :-1]
        return y

    @staticmethod
    def backward(ctx, grad):
        x, coef = ctx.saved_tensors
        g_x = grad.clone()
        g_x[:, 1:] -= coef * grad[:, :-1]  # BUG
        g_coef = -(grad[:, 1:] * x[:, :-1]).sum().reshape(1)
        return g_x, g_coef

    @staticmethod
    def example_inputs():
        return _pre_inputs()


class FurtherPreEmphasisCoefSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "coef",
           "note": "the minus of y = x - coef * x_prev is dropped in the coefficient's gradient"}

    @staticmethod
    def forward(ctx, x, coef):
        ctx.save_for_backward(x, coef)
        y = x.clone()
        y[:, 1:] = x[:, 1:] - coef * x[:, :-1]
        return y

    @staticmethod
    def backward(ctx, grad):
        x, coef = ctx.saved_tensors
        g_x = grad.clone()
        g_x[:, :-1] -= coef * grad[:, 1:]
        g_coef = (grad[:, 1:] * x[:, :-1]).sum().reshape(1)  # BUG
        return g_x, g_coef

    @staticmethod
    def example_inputs():
        return _pre_inputs()


def _delta_forward(ctx, feats):
    padded = torch.cat([feats[:, :1], feats, feats[:, -1:]], dim=1)
    ctx.shape = feats.shape
    return (padded[:, 2:] - padded[:, :-2]) / 2


def _delta_inputs():
    gen = torch.Generator().manual_seed(22)
    return (torch.randn(2, 5, 3, dtype=torch.float64, generator=gen),)


class FurtherDeltaFeatures(torch.autograd.Function):
    """delta[t] = (x[t+1] - x[t-1]) / 2 over time (dim 1), edges replicated."""
    bug = None

    @staticmethod
    def forward(ctx, feats):
        return _delta_forward(ctx, feats)

    @staticmethod
    def backward(ctx, grad):
        batch, steps, chans = ctx.shape
        half = grad / 2
        g_pad = grad.new_zeros(batch, steps + 2, chans)
        g_pad[:, 2:] += half
        g_pad[:, :-2] -= half
        g_feats = g_pad[:, 1:-1].clone()
        g_feats[:, 0] += g_pad[:, 0]
        g_feats[:, -1] += g_pad[:, -1]
        return g_feats

    @staticmethod
    def example_inputs():
        return _delta_inputs()


class FurtherDeltaFeaturesDropPad(torch.autograd.Function):
    bug = {"kind": "region", "input": "feats",
           "note": "the gradient landing on the replicated padding frames is cropped away instead of folded back onto the first and last frame"}

    @staticmethod
    def forward(ctx, feats):
        return _delta_forward(ctx, feats)

    @staticmethod
    def backward(ctx, grad):
        batch, steps, chans = ctx.shape
        half = grad / 2
        g_pad = grad.new_zeros(batch, steps + 2, chans)
        g_pad[:, 2:] += half
        g_pad[:, :-2] -= half
        g_feats = g_pad[:, 1:-1].clone()  # BUG
        return g_feats

    @staticmethod
    def example_inputs():
        return _delta_inputs()


class FurtherDeltaFeaturesNoHalf(torch.autograd.Function):
    bug = {"kind": "scale", "input": "feats",
           "note": "the central difference's 1/2 is forgotten in backward, the gradient is twice too large"}

    @staticmethod
    def forward(ctx, feats):
        return _delta_forward(ctx, feats)

    @staticmethod
    def backward(ctx, grad):
        batch, steps, chans = ctx.shape
        half = grad  # BUG
        g_pad = grad.new_zeros(batch, steps + 2, chans)
        g_pad[:, 2:] += half
        g_pad[:, :-2] -= half
        g_feats = g_pad[:, 1:-1].clone()
        g_feats[:, 0] += g_pad[:, 0]
        g_feats[:, -1] += g_pad[:, -1]
        return g_feats

    @staticmethod
    def example_inputs():
        return _delta_inputs()


MAX_LAG = 3


def _autocorr_forward(ctx, x):
    batch, length = x.shape
    ctx.save_for_backward(x)
    full = F.conv1d(x.view(1, batch, length), x.view(batch, 1, length), padding=length - 1, groups=batch)
    return full[0, :, length - 1:length - 1 + MAX_LAG]  # r[k] = sum_t x[t] x[t + k]


def _autocorr_inputs():
    gen = torch.Generator().manual_seed(23)
    return (torch.randn(3, 7, dtype=torch.float64, generator=gen),)


class FurtherAutocorrelation(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _autocorr_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        length = x.shape[1]
        g_x = torch.zeros_like(x)
        for k in range(MAX_LAG):
            g_x[:, :length - k] += grad[:, k:k + 1] * x[:, k:]
            g_x[:, k:] += grad[:, k:k + 1] * x[:, :length - k]
        return g_x

    @staticmethod
    def example_inputs():
        return _autocorr_inputs()


class FurtherAutocorrelationOneFactor(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "x appears twice in x[t] x[t+k]; only the derivative through the first factor is kept"}

    @staticmethod
    def forward(ctx, x):
        return _autocorr_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        length = x.shape[1]
        g_x = torch.zeros_like(x)
        for k in range(MAX_LAG):
            g_x[:, :length - k] += grad[:, k:k + 1] * x[:, k:]  # BUG
        return g_x

    @staticmethod
    def example_inputs():
        return _autocorr_inputs()


def _resample_weights(n_in, n_out):
    pos = torch.arange(n_out, dtype=torch.float64) * (n_in - 1) / (n_out - 1)
    left = pos.floor().long().clamp(max=n_in - 2)
    frac = pos - left
    return left, frac


def _resample_forward(ctx, x):
    left, frac = _resample_weights(x.shape[1], 9)
    ctx.n_in = x.shape[1]
    return x[:, left] * (1 - frac) + x[:, left + 1] * frac


def _resample_inputs():
    gen = torch.Generator().manual_seed(24)
    return (torch.randn(2, 4, dtype=torch.float64, generator=gen),)


class FurtherLinearResample(torch.autograd.Function):
    """Upsample (B, 4) -> (B, 9) by fixed linear interpolation weights."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _resample_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad):
        left, frac = _resample_weights(ctx.n_in, grad.shape[1])
        g_x = grad.new_zeros(grad.shape[0], ctx.n_in)
        index = torch.cat([left, left + 1])
        g_x.index_add_(1, index, torch.cat([grad * (1 - frac), grad * frac], dim=1))
        return g_x

    @staticmethod
    def example_inputs():
        return _resample_inputs()


class FurtherLinearResampleFancyAdd(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "g_x[:, left] += ... with repeated indices adds only one output sample per input sample when upsampling"}

    @staticmethod
    def forward(ctx, x):
        return _resample_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad):
        left, frac = _resample_weights(ctx.n_in, grad.shape[1])
        g_x = grad.new_zeros(grad.shape[0], ctx.n_in)
        index = torch.cat([left, left + 1])
        g_x[:, index] += torch.cat([grad * (1 - frac), grad * frac], dim=1)  # BUG
        return g_x

    @staticmethod
    def example_inputs():
        return _resample_inputs()
