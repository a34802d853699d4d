"""Activations with parameters on gradcli's engine: PReLU (per-feature slope), Swish-beta
(per-feature beta), ELU-alpha and softplus-beta (Python-float hyper-parameters) and Snake.

Runs without PyTorch (import gradcli as torch).
"""
import gradcli as torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _x_and_feature_param(seed, low=0.1):
    g = _gen(seed)
    x = torch.randn(3, 4, dtype=torch.float64, generator=g)
    p = torch.rand(4, dtype=torch.float64, generator=g) + low
    return x, p


class UnknownPReLUEngine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, slope * x)

    @staticmethod
    def backward(ctx, dy):
        x, slope = ctx.saved_tensors
        neg = (x <= 0).to(x.dtype)
        dx = dy * (1 - neg) + dy * slope * neg
        dslope = (dy * x * neg).sum(dim=0)
        return dx, dslope

    @staticmethod
    def example_inputs():
        return _x_and_feature_param(1)


class UnknownPReLUEngineSlopeOnPositive(torch.autograd.Function):
    bug = {"kind": "region", "input": "slope",
           "note": "the slope gradient collects dy * x where x > 0 instead of where x <= 0"}

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, slope * x)

    @staticmethod
    def backward(ctx, dy):
        x, slope = ctx.saved_tensors
        neg = (x <= 0).to(x.dtype)
        dx = dy * (1 - neg) + dy * slope * neg
        dslope = (dy * x * (x > 0).to(x.dtype)).sum(dim=0)  # BUG
        return dx, dslope

    @staticmethod
    def example_inputs():
        return _x_and_feature_param(2)


class UnknownSwishBetaEngine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, beta, s)
        return x * s

    @staticmethod
    def backward(ctx, dy):
        x, beta, s = ctx.saved_tensors
        ds = s * (1 - s)
        return dy * (s + beta * x * ds), (dy * x * x * ds).sum(0)

    @staticmethod
    def example_inputs():
        return _x_and_feature_param(3, low=0.5)


class UnknownSwishBetaEngineGateOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "dx keeps the gate sigmoid(beta x) but drops the beta x s (1 - s) term from the gate's derivative"}

    @staticmethod
    def forward(ctx, x, beta):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, beta, s)
        return x * s

    @staticmethod
    def backward(ctx, dy):
        x, beta, s = ctx.saved_tensors
        ds = s * (1 - s)
        dx = dy * s  # BUG
        return dx, (dy * x * x * ds).sum(0)

    @staticmethod
    def example_inputs():
        return _x_and_feature_param(4, low=0.5)


class UnknownELUAlphaEngine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, alpha):
        out = torch.where(x > 0, x, alpha * (torch.exp(x) - 1))
        ctx.alpha = alpha
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, dy):
        x, out = ctx.saved_tensors
        return torch.where(x > 0, dy, dy * (out + ctx.alpha)), None

    @staticmethod
    def example_inputs():
        return torch.randn(3, 4, dtype=torch.float64, generator=_gen(5)), 1.3


class UnknownELUAlphaEngineExpOfOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the negative branch uses alpha * exp(out) (the output) where alpha * exp(x) is needed"}

    @staticmethod
    def forward(ctx, x, alpha):
        out = torch.where(x > 0, x, alpha * (torch.exp(x) - 1))
        ctx.alpha = alpha
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, dy):
        x, out = ctx.saved_tensors
        return torch.where(x > 0, dy, dy * ctx.alpha * torch.exp(out)), None  # BUG

    @staticmethod
    def example_inputs():
        return torch.randn(3, 4, dtype=torch.float64, generator=_gen(6)), 1.3


class UnknownSoftplusBetaEngine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        ctx.beta = beta
        ctx.save_for_backward(x)
        return torch.log1p(torch.exp(beta * x)) / beta

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return dy * torch.sigmoid(ctx.beta * x), None

    @staticmethod
    def example_inputs():
        return torch.randn(3, 4, dtype=torch.float64, generator=_gen(7)), 2.5


class UnknownSoftplusBetaEngineKeepsBeta(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the chain rule's beta is kept though the forward divides by beta: beta times too large"}

    @staticmethod
    def forward(ctx, x, beta):
        ctx.beta = beta
        ctx.save_for_backward(x)
        return torch.log1p(torch.exp(beta * x)) / beta

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return dy * ctx.beta * torch.sigmoid(ctx.beta * x), None  # BUG

    @staticmethod
    def example_inputs():
        return torch.randn(3, 4, dtype=torch.float64, generator=_gen(8)), 2.5


class UnknownSnakeEngine(torch.autograd.Function):
    """x + sin(a x)^2 / a, with a per-feature frequency a."""

    bug = None

    @staticmethod
    def forward(ctx, x, freq):
        ctx.save_for_backward(x, freq)
        return x + torch.sin(freq * x) ** 2 / freq

    @staticmethod
    def backward(ctx, dy):
        x, freq = ctx.saved_tensors
        ax = freq * x
        dx = dy * (1 + torch.sin(2 * ax))
        dfreq = (dy * (x * torch.sin(2 * ax) / freq - torch.sin(ax) ** 2 / (freq * freq))).sum(0)
        return dx, dfreq

    @staticmethod
    def example_inputs():
        return _x_and_feature_param(9, low=0.5)


class UnknownSnakeEngineCosineGuess(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "dx written as 1 + cos(a x)^2 / a: an invented formula, not the derivative 1 + sin(2 a x)"}

    @staticmethod
    def forward(ctx, x, freq):
        ctx.save_for_backward(x, freq)
        return x + torch.sin(freq * x) ** 2 / freq

    @staticmethod
    def backward(ctx, dy):
        x, freq = ctx.saved_tensors
        ax = freq * x
        dx = dy * (1 + torch.cos(ax) ** 2 / freq)  # BUG
        dfreq = (dy * (x * torch.sin(2 * ax) / freq - torch.sin(ax) ** 2 / (freq * freq))).sum(0)
        return dx, dfreq

    @staticmethod
    def example_inputs():
        return _x_and_feature_param(10, low=0.5)

