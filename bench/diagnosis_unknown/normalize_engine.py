"""Normalisations on gradcli's engine: L2 normalisation of rows, softmax with a learnable
temperature, log_softmax with a fixed temperature, and weight standardisation of a (out, in)
weight (each output row standardised).

Runs without PyTorch (import gradcli as torch).
"""
import gradcli as torch

EPS = 1e-5


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _l2_bwd(dy, y, norm):
    return (dy - y * (y * dy).sum(dim=-1, keepdim=True)) / norm


class UnknownL2NormalizeEngine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        norm = torch.sqrt((x * x).sum(dim=-1, keepdim=True))
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, dy):
        y, norm = ctx.saved_tensors
        return _l2_bwd(dy, y, norm)


class UnknownL2NormalizeEngineNoProjection(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "dy / ||x|| without removing the radial component y (y . dy)"}

    @staticmethod
    def forward(ctx, x):
        norm = torch.sqrt((x * x).sum(dim=-1, keepdim=True))
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, dy):
        y, norm = ctx.saved_tensors
        return dy / norm  # BUG


def _temperature_inputs(seed):
    g = _gen(seed)
    return (torch.randn(3, 4, dtype=torch.float64, generator=g),
            torch.rand(1, dtype=torch.float64, generator=g) + 0.5)


class UnknownSoftmaxLearnedTemperatureEngine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, temperature):
        y = torch.softmax(x / temperature, dim=-1)
        ctx.save_for_backward(x, temperature, y)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, temperature, y = ctx.saved_tensors
        dz = y * (dy - (dy * y).sum(dim=-1, keepdim=True))
        dx = dz / temperature
        dtemp = -(dz * x).sum().reshape(1) / (temperature * temperature)
        return dx, dtemp

    @staticmethod
    def example_inputs():
        return _temperature_inputs(1)


class UnknownSoftmaxLearnedTemperatureEngineSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "temperature",
           "note": "d(x / T)/dT = -x / T^2, but the minus sign is dropped from the temperature gradient"}

    @staticmethod
    def forward(ctx, x, temperature):
        y = torch.softmax(x / temperature, dim=-1)
        ctx.save_for_backward(x, temperature, y)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, temperature, y = ctx.saved_tensors
        dz = y * (dy - (dy * y).sum(dim=-1, keepdim=True))
        dx = dz / temperature
        dtemp = (dz * x).sum().reshape(1) / (temperature * temperature)  # BUG
        return dx, dtemp

    @staticmethod
    def example_inputs():
        return _temperature_inputs(2)


class UnknownLogSoftmaxTemperatureEngine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, tau):
        out = torch.log_softmax(x / tau, dim=1)
        ctx.tau = tau
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, dy):
        (out,) = ctx.saved_tensors
        return (dy - torch.exp(out) * dy.sum(dim=1, keepdim=True)) / ctx.tau, None

    @staticmethod
    def example_inputs():
        return torch.randn(3, 5, dtype=torch.float64, generator=_gen(3)), 0.7


class UnknownLogSoftmaxTemperatureEngineCentering(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the backward of mean-centering (dy - mean(dy)) / tau is used for log_softmax: no softmax weights at all"}

    @staticmethod
    def forward(ctx, x, tau):
        out = torch.log_softmax(x / tau, dim=1)
        ctx.tau = tau
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, dy):
        (out,) = ctx.saved_tensors
        return (dy - dy.mean(dim=1, keepdim=True)) / ctx.tau, None  # BUG

    @staticmethod
    def example_inputs():
        return torch.randn(3, 5, dtype=torch.float64, generator=_gen(4)), 0.7


def _standardise(ctx, weight):
    mu = weight.mean(dim=1, keepdim=True)
    centered = weight - mu
    rstd = 1.0 / torch.sqrt((centered * centered).mean(dim=1, keepdim=True) + EPS)
    what = centered * rstd
    ctx.save_for_backward(what, rstd)
    return what


class UnknownWeightStandardizationEngine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight):
        return _standardise(ctx, weight)

    @staticmethod
    def backward(ctx, dy):
        what, rstd = ctx.saved_tensors
        return rstd * (dy - dy.mean(dim=1, keepdim=True) - what * (dy * what).mean(dim=1, keepdim=True))

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 5, dtype=torch.float64, generator=_gen(5)),)


class UnknownWeightStandardizationEngineInputAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "weight",
           "note": "the backward's two means run over the output axis (dim 0) instead of each row's fan-in (dim 1)"}

    @staticmethod
    def forward(ctx, weight):
        return _standardise(ctx, weight)

    @staticmethod
    def backward(ctx, dy):
        what, rstd = ctx.saved_tensors
        return rstd * (dy - dy.mean(dim=0, keepdim=True) - what * (dy * what).mean(dim=0, keepdim=True))  # BUG

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 5, dtype=torch.float64, generator=_gen(6)),)
