"""Piecewise and gated activations on gradcli's engine, with hand-written backwards: hardtanh,
Huber, per-channel PReLU of (N, C, L), soft-thresholding, GLU, GEGLU and GELU with the tanh
approximation, SwiGLU and Mish (bench/diagnosis_hidden)."""
import math

import gradcli as torch
import gradcli.nn.functional as F

GELU_K = math.sqrt(2 / math.pi)
GELU_C = 0.044715


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0):
    return torch.randn(*shape, dtype=torch.float64, generator=_gen(seed))


def _wide_inputs():
    return (2 * _randn(3, 4, seed=120),)


class HiddenHardtanh(torch.autograd.Function):
    """clamp(x, -1, 1)."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(-1.0, 1.0)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * ((x > -1.0) & (x < 1.0)).to(grad_out.dtype)

    @staticmethod
    def example_inputs():
        return _wide_inputs()


class HiddenHardtanhLowerOnly(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the mask checks only the lower bound, so x > 1 still gets gradient"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(-1.0, 1.0)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * (x > -1.0).to(grad_out.dtype)  # BUG

    @staticmethod
    def example_inputs():
        return _wide_inputs()


def _huber_inputs():
    return 2 * _randn(3, 4, seed=121), 1.5


class HiddenHuber(torch.autograd.Function):
    """Elementwise Huber loss with threshold delta (a Python float)."""

    bug = None

    @staticmethod
    def forward(ctx, x, delta):
        ctx.save_for_backward(x)
        ctx.delta = delta
        small = x.abs() < delta
        return torch.where(small, 0.5 * x * x, delta * (x.abs() - 0.5 * delta))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        delta = ctx.delta
        inner = torch.where(x.abs() < delta, x, delta * x.sign())
        return grad_out * inner, None

    @staticmethod
    def example_inputs():
        return _huber_inputs()


class HiddenHuberFixedThreshold(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the backward switches branches at |x| = 1, not at the delta the forward uses"}

    @staticmethod
    def forward(ctx, x, delta):
        ctx.save_for_backward(x)
        ctx.delta = delta
        small = x.abs() < delta
        return torch.where(small, 0.5 * x * x, delta * (x.abs() - 0.5 * delta))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        delta = ctx.delta
        inner = torch.where(x.abs() < 1.0, x, delta * x.sign())  # BUG
        return grad_out * inner, None

    @staticmethod
    def example_inputs():
        return _huber_inputs()


def _prelu_inputs():
    return _randn(2, 3, 4, seed=122), torch.tensor([0.1, 0.25, -0.2], dtype=torch.float64)


class HiddenChannelPReLU(torch.autograd.Function):
    """PReLU of x [N, C, L] with one slope per channel, slope [C] viewed as [1, C, 1]."""

    bug = None

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, slope.view(1, -1, 1) * x)

    @staticmethod
    def backward(ctx, grad_out):
        x, slope = ctx.saved_tensors
        negative = (x <= 0).to(x.dtype)
        grad_x = grad_out * (1 - negative + negative * slope.view(1, -1, 1))
        grad_slope = (grad_out * x * negative).sum(2).sum(0)
        return grad_x, grad_slope

    @staticmethod
    def example_inputs():
        return _prelu_inputs()


class HiddenChannelPReLUSlopeMap(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "slope",
           "note": "the slope's gradient is the whole [N, C, L] map, not summed per channel"}

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, slope.view(1, -1, 1) * x)

    @staticmethod
    def backward(ctx, grad_out):
        x, slope = ctx.saved_tensors
        negative = (x <= 0).to(x.dtype)
        grad_x = grad_out * (1 - negative + negative * slope.view(1, -1, 1))
        grad_slope = grad_out * x * negative  # BUG
        return grad_x, grad_slope

    @staticmethod
    def example_inputs():
        return _prelu_inputs()


def _shrink_inputs():
    return 2 * _randn(3, 4, seed=123), 0.5


class HiddenSoftThreshold(torch.autograd.Function):
    """sign(x) max(|x| - lam, 0), lam a Python float."""

    bug = None

    @staticmethod
    def forward(ctx, x, lam):
        ctx.save_for_backward(x)
        ctx.lam = lam
        return x.sign() * (x.abs() - lam).clamp(min=0)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * (x.abs() > ctx.lam).to(grad_out.dtype), None

    @staticmethod
    def example_inputs():
        return _shrink_inputs()


class HiddenSoftThresholdClampGrad(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "returns clamp(x, -lam, lam), a Huber function's derivative"}

    @staticmethod
    def forward(ctx, x, lam):
        ctx.save_for_backward(x)
        ctx.lam = lam
        return x.sign() * (x.abs() - lam).clamp(min=0)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * x.clamp(-ctx.lam, ctx.lam), None  # BUG

    @staticmethod
    def example_inputs():
        return _shrink_inputs()


def _glu_inputs():
    return (_randn(3, 8, seed=124),)


class HiddenGLU(torch.autograd.Function):
    """GLU over dim 1: a, b = x.chunk(2, 1); a * sigmoid(b)."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        a, b = x.chunk(2, dim=1)
        gate = torch.sigmoid(b)
        ctx.save_for_backward(a, gate)
        return a * gate

    @staticmethod
    def backward(ctx, grad_out):
        a, gate = ctx.saved_tensors
        return torch.cat([grad_out * gate, grad_out * a * gate * (1 - gate)], dim=1)

    @staticmethod
    def example_inputs():
        return _glu_inputs()


class HiddenGLUGateDerivative(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "sigmoid' written gate * (1 - a) instead of gate * (1 - gate)"}

    @staticmethod
    def forward(ctx, x):
        a, b = x.chunk(2, dim=1)
        gate = torch.sigmoid(b)
        ctx.save_for_backward(a, gate)
        return a * gate

    @staticmethod
    def backward(ctx, grad_out):
        a, gate = ctx.saved_tensors
        grad_b = grad_out * a * gate * (1 - a)  # BUG
        return torch.cat([grad_out * gate, grad_b], dim=1)

    @staticmethod
    def example_inputs():
        return _glu_inputs()


def _gelu_tanh(b):
    t = torch.tanh(GELU_K * (b + GELU_C * b ** 3))
    return 0.5 * b * (1 + t), t


class HiddenGeluTanh(torch.autograd.Function):
    """GELU with the tanh approximation."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        out, t = _gelu_tanh(x)
        ctx.save_for_backward(x, t)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved_tensors
        inner = GELU_K * (1 + 3 * GELU_C * x * x)
        return grad_out * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * inner)


class HiddenGEGLU(torch.autograd.Function):
    """GEGLU: a * gelu_tanh(b)."""

    bug = None

    @staticmethod
    def forward(ctx, a, b):
        act, t = _gelu_tanh(b)
        ctx.save_for_backward(a, b, act, t)
        return a * act

    @staticmethod
    def backward(ctx, grad_out):
        a, b, act, t = ctx.saved_tensors
        inner = GELU_K * (1 + 3 * GELU_C * b * b)
        d_act = 0.5 * (1 + t) + 0.5 * b * (1 - t * t) * inner
        return grad_out * act, grad_out * a * d_act


class HiddenGEGLUHalf(torch.autograd.Function):
    bug = {"kind": "scale", "input": "b",
           "note": "the gelu derivative drops the common factor 0.5 of both its terms"}

    @staticmethod
    def forward(ctx, a, b):
        act, t = _gelu_tanh(b)
        ctx.save_for_backward(a, b, act, t)
        return a * act

    @staticmethod
    def backward(ctx, grad_out):
        a, b, act, t = ctx.saved_tensors
        inner = GELU_K * (1 + 3 * GELU_C * b * b)
        d_act = (1 + t) + b * (1 - t * t) * inner  # BUG
        return grad_out * act, grad_out * a * d_act


class HiddenSwiGLU(torch.autograd.Function):
    """SwiGLU: silu(a) * b."""

    bug = None

    @staticmethod
    def forward(ctx, a, b):
        s = torch.sigmoid(a)
        ctx.save_for_backward(a, b, s)
        return a * s * b

    @staticmethod
    def backward(ctx, grad_out):
        a, b, s = ctx.saved_tensors
        d_silu = s * (1 + a * (1 - s))
        return grad_out * b * d_silu, grad_out * a * s


class HiddenSwiGLUSiluDerivative(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "a",
           "note": "silu' = s (1 + a (1 - s)) written with a minus before the a (1 - s) term"}

    @staticmethod
    def forward(ctx, a, b):
        s = torch.sigmoid(a)
        ctx.save_for_backward(a, b, s)
        return a * s * b

    @staticmethod
    def backward(ctx, grad_out):
        a, b, s = ctx.saved_tensors
        d_silu = s * (1 - a * (1 - s))  # BUG
        return grad_out * b * d_silu, grad_out * a * s


class HiddenMish(torch.autograd.Function):
    """Mish: x tanh(softplus(x))."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        t = torch.tanh(F.softplus(x))
        ctx.save_for_backward(x, t)
        return x * t

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved_tensors
        return grad_out * (t + x * (1 - t * t) * torch.sigmoid(x))


class HiddenMishTanhGrad(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the derivative of x tanh(x), tanh(x) + x (1 - tanh(x)^2), used for Mish"}

    @staticmethod
    def forward(ctx, x):
        t = torch.tanh(F.softplus(x))
        ctx.save_for_backward(x, t)
        return x * t

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved_tensors
        th = torch.tanh(x)
        return grad_out * (th + x * (1 - th * th))  # BUG


class HiddenMishReusedBuffer(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "the output is formed by t.mul_(x), overwriting the saved tanh(softplus(x))"}

    @staticmethod
    def forward(ctx, x):
        t = torch.tanh(F.softplus(x))
        ctx.save_for_backward(x, t)
        return t.mul_(x)  # BUG

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved_tensors
        return grad_out * (t + x * (1 - t * t) * torch.sigmoid(x))
