"""Compositions of trigonometric and hyperbolic functions and rational functions, on gradcli's
engine (no PyTorch needed)."""
import math

import gradcli as torch


def _x(seed, *shape, spread=1.5):
    return torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)) * spread


class RemoteSinTanh(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        t = torch.tanh(x)
        ctx.save_for_backward(t)
        return torch.sin(t)

    @staticmethod
    def backward(ctx, grad_out):
        (t,) = ctx.saved_tensors
        return grad_out * torch.cos(t) * (1 - t * t)

    @staticmethod
    def example_inputs():
        return (_x(90, 3, 4),)


class RemoteSinTanhNegated(torch.autograd.Function):
    bug = {"kind": "sign", "input": "x",
           "note": "d sin = -cos remembered from d cos = -sin: the whole gradient is negated"}

    @staticmethod
    def forward(ctx, x):
        t = torch.tanh(x)
        ctx.save_for_backward(t)
        return torch.sin(t)

    @staticmethod
    def backward(ctx, grad_out):
        (t,) = ctx.saved_tensors
        outer = -torch.cos(t)  # BUG
        return grad_out * outer * (1 - t * t)

    @staticmethod
    def example_inputs():
        return (_x(91, 3, 4),)


class RemoteRational(torch.autograd.Function):
    """(x^2 + 1) / (x^2 + x + 2), a denominator with no real root."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x * x + 1) / (x * x + x + 2)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        num, den = x * x + 1, x * x + x + 2
        return grad_out * (2 * x * den - num * (2 * x + 1)) / (den * den)

    @staticmethod
    def example_inputs():
        return (_x(92, 3, 4),)


class RemoteRationalQuotientSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "quotient rule written (N'D + ND') / D^2: the second term's sign is wrong"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x * x + 1) / (x * x + x + 2)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        num, den = x * x + 1, x * x + x + 2
        dnum, dden = 2 * x, 2 * x + 1
        slope = (dnum * den + num * dden) / (den * den)  # BUG
        return grad_out * slope

    @staticmethod
    def example_inputs():
        return (_x(93, 3, 4),)


class RemoteGudermannian(torch.autograd.Function):
    """gd(x) = atan(sinh(x)); gd'(x) = sech(x)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.atan(torch.sinh(x))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out / torch.cosh(x)

    @staticmethod
    def example_inputs():
        return (_x(94, 3, 4),)


class RemoteGudermannianTanhSlope(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "only atan's 1 / (1 + sinh^2) = sech^2 (the derivative of tanh) is kept; the chain factor cosh(x) is lost"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.atan(torch.sinh(x))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        s = torch.sinh(x)
        return grad_out / (1 + s * s)  # BUG

    @staticmethod
    def example_inputs():
        return (_x(95, 3, 4),)


def _wave_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(5, 4, dtype=torch.float64, generator=gen)
    freq = torch.rand(4, dtype=torch.float64, generator=gen) * 2 + 0.5
    phase = torch.randn(4, dtype=torch.float64, generator=gen)
    return x, freq, phase


class RemoteWave(torch.autograd.Function):
    """sin(freq x + phase) * tanh(x), per-column frequency and phase."""
    bug = None

    @staticmethod
    def forward(ctx, x, freq, phase):
        arg = freq * x + phase
        th = torch.tanh(x)
        ctx.save_for_backward(x, freq, arg, th)
        return torch.sin(arg) * th

    @staticmethod
    def backward(ctx, grad_out):
        x, freq, arg, th = ctx.saved_tensors
        c = grad_out * torch.cos(arg) * th
        grad_x = c * freq + grad_out * torch.sin(arg) * (1 - th * th)
        return grad_x, (c * x).sum(0), c.sum(0)

    @staticmethod
    def example_inputs():
        return _wave_inputs(96)


class RemoteWaveFreqPhaseSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "freq",
           "note": "the frequency and phase gradients are returned in each other's place"}

    @staticmethod
    def forward(ctx, x, freq, phase):
        arg = freq * x + phase
        th = torch.tanh(x)
        ctx.save_for_backward(x, freq, arg, th)
        return torch.sin(arg) * th

    @staticmethod
    def backward(ctx, grad_out):
        x, freq, arg, th = ctx.saved_tensors
        c = grad_out * torch.cos(arg) * th
        grad_x = c * freq + grad_out * torch.sin(arg) * (1 - th * th)
        grad_freq, grad_phase = (c * x).sum(0), c.sum(0)
        return grad_x, grad_phase, grad_freq  # BUG

    @staticmethod
    def example_inputs():
        return _wave_inputs(97)


class RemoteWavePhaseNoGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "phase",
           "note": "the phase gradient sums cos(arg) tanh(x) without the grad_out factor"}

    @staticmethod
    def forward(ctx, x, freq, phase):
        arg = freq * x + phase
        th = torch.tanh(x)
        ctx.save_for_backward(x, freq, arg, th)
        return torch.sin(arg) * th

    @staticmethod
    def backward(ctx, grad_out):
        x, freq, arg, th = ctx.saved_tensors
        c = grad_out * torch.cos(arg) * th
        grad_x = c * freq + grad_out * torch.sin(arg) * (1 - th * th)
        grad_phase = (torch.cos(arg) * th).sum(0)  # BUG
        return grad_x, (c * x).sum(0), grad_phase

    @staticmethod
    def example_inputs():
        return _wave_inputs(98)


class RemoteTanhCube(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        t = torch.tanh(x)
        ctx.save_for_backward(t)
        return t ** 3

    @staticmethod
    def backward(ctx, grad_out):
        (t,) = ctx.saved_tensors
        return grad_out * 3 * t * t * (1 - t * t)

    @staticmethod
    def example_inputs():
        return (_x(99, 3, 4, spread=1.0),)


class RemoteTanhCubeNoThree(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the power rule's exponent 3 is dropped: d t^3 = 3 t^2 dt"}

    @staticmethod
    def forward(ctx, x):
        t = torch.tanh(x)
        ctx.save_for_backward(t)
        return t ** 3

    @staticmethod
    def backward(ctx, grad_out):
        (t,) = ctx.saved_tensors
        return grad_out * t * t * (1 - t * t)  # BUG

    @staticmethod
    def example_inputs():
        return (_x(100, 3, 4, spread=1.0),)


class RemoteSechSquared(torch.autograd.Function):
    """sech^2(x) = 1 / cosh(x)^2, its derivative -2 tanh(x) sech^2(x)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = 1 / torch.cosh(x) ** 2
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return -2 * grad_out * torch.tanh(x) * y

    @staticmethod
    def example_inputs():
        return (_x(101, 3, 4),)


class RemoteAsinhRatio(torch.autograd.Function):
    """asinh(x) / (1 + x^2)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.asinh(x) / (1 + x * x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        den = 1 + x * x
        return grad_out * (1 / (torch.sqrt(den) * den) - 2 * x * torch.asinh(x) / (den * den))

    @staticmethod
    def example_inputs():
        return (_x(102, 3, 4),)
