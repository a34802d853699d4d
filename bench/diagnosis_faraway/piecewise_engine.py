"""Smooth and piecewise functions on gradcli's engine: smoothstep and smootherstep, a hard sigmoid,
SELU with its two constants, a sigmoid soft-clamp between learnable bounds, a tanh soft-clip."""
import math

import gradcli as torch

SELU_ALPHA = 1.6732632423543772
SELU_SCALE = 1.0507009873554805


def _spread():
    return (torch.tensor([[-0.6, 0.15, 0.4, 0.85], [1.3, 0.6, -0.2, 0.3], [0.05, 1.7, 0.7, -1.1]],
                         dtype=torch.float64),)


class FarawaySmoothstep(torch.autograd.Function):
    """3t^2 - 2t^3 with t = clamp(x, 0, 1)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        t = torch.clamp(x, 0.0, 1.0)
        ctx.save_for_backward(x, t)
        return t * t * (3 - 2 * t)

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved_tensors
        inside = (x > 0) & (x < 1)
        return torch.where(inside, grad_out * 6 * t * (1 - t), torch.zeros_like(grad_out))

    @staticmethod
    def example_inputs():
        return _spread()


class FarawaySmoothstepUnclamped(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "6x(1-x) from the raw x is used everywhere, nonzero outside [0, 1] where y is flat"}

    @staticmethod
    def forward(ctx, x):
        t = torch.clamp(x, 0.0, 1.0)
        ctx.save_for_backward(x, t)
        return t * t * (3 - 2 * t)

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved_tensors
        return grad_out * 6 * x * (1 - x)  # BUG

    @staticmethod
    def example_inputs():
        return _spread()


class FarawaySmootherstep(torch.autograd.Function):
    """Perlin's smootherstep 6t^5 - 15t^4 + 10t^3 with t = clamp(x, 0, 1)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        t = torch.clamp(x, 0.0, 1.0)
        ctx.save_for_backward(x, t)
        return t ** 3 * (t * (6 * t - 15) + 10)

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved_tensors
        d = 30 * t * t * (1 - t) * (1 - t)
        return grad_out * d * ((x > 0) & (x < 1))

    @staticmethod
    def example_inputs():
        return _spread()


class FarawaySmootherstepCubicSlope(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the cubic smoothstep's slope 6t(1-t) is used for the quintic smootherstep"}

    @staticmethod
    def forward(ctx, x):
        t = torch.clamp(x, 0.0, 1.0)
        ctx.save_for_backward(x, t)
        return t ** 3 * (t * (6 * t - 15) + 10)

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved_tensors
        d = 6 * t * (1 - t)  # BUG
        return grad_out * d * ((x > 0) & (x < 1))

    @staticmethod
    def example_inputs():
        return _spread()


def _wide():
    return (torch.tensor([[-3.1, -1.2, 0.4, 2.0], [2.9, -0.3, 1.1, -2.2], [0.7, 3.4, -1.8, 0.2]],
                         dtype=torch.float64),)


class FarawayHardSigmoid(torch.autograd.Function):
    """clip(0.2 x + 0.5, 0, 1), the Keras hard sigmoid."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.clamp(0.2 * x + 0.5, 0.0, 1.0)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        slope = 0.2 * ((x > -2.5) & (x < 2.5))
        return grad_out * slope

    @staticmethod
    def example_inputs():
        return _wide()


class FarawayHardSigmoidSlopeOnly(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "the local slope 0.2 * mask is returned without multiplying by grad_out"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.clamp(0.2 * x + 0.5, 0.0, 1.0)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        slope = 0.2 * ((x > -2.5) & (x < 2.5))
        return slope  # BUG

    @staticmethod
    def example_inputs():
        return _wide()


class FarawaySELU(torch.autograd.Function):
    """scale * (x if x > 0 else alpha * (exp(x) - 1))."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = SELU_SCALE * torch.where(x > 0, x, SELU_ALPHA * (torch.exp(x) - 1))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        neg = y + SELU_SCALE * SELU_ALPHA  # scale*alpha*exp(x) for x <= 0
        return grad_out * torch.where(x > 0, torch.full_like(x, SELU_SCALE), neg)

    @staticmethod
    def example_inputs():
        return _wide()


class FarawaySELUExpOfOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the negative branch's scale*alpha*exp(x) is evaluated at the saved output y instead of x"}

    @staticmethod
    def forward(ctx, x):
        y = SELU_SCALE * torch.where(x > 0, x, SELU_ALPHA * (torch.exp(x) - 1))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        neg = SELU_SCALE * SELU_ALPHA * torch.exp(y)  # BUG
        return grad_out * torch.where(x > 0, torch.full_like(x, SELU_SCALE), neg)

    @staticmethod
    def example_inputs():
        return _wide()


def _soft_clamp_inputs():
    return (torch.tensor([[-1.3, 0.2, 2.1], [0.8, -0.4, -2.6], [1.5, 0.9, -0.1], [-0.7, 2.4, 0.3]],
                         dtype=torch.float64),
            torch.tensor([-1.0, -0.5, 0.2], dtype=torch.float64),
            torch.tensor([1.0, 2.0, 1.4], dtype=torch.float64))


def _soft_clamp_forward(ctx, x, lo, hi):
    s = torch.sigmoid(x)
    ctx.save_for_backward(s, lo, hi)
    return lo + (hi - lo) * s


class FarawaySoftClamp(torch.autograd.Function):
    """lo + (hi - lo) * sigmoid(x): a smooth clamp between per-column bounds."""
    bug = None

    @staticmethod
    def forward(ctx, x, lo, hi):
        return _soft_clamp_forward(ctx, x, lo, hi)

    @staticmethod
    def backward(ctx, grad_out):
        s, lo, hi = ctx.saved_tensors
        grad_x = grad_out * (hi - lo) * s * (1 - s)
        grad_lo = (grad_out * (1 - s)).sum(0)
        grad_hi = (grad_out * s).sum(0)
        return grad_x, grad_lo, grad_hi

    @staticmethod
    def example_inputs():
        return _soft_clamp_inputs()


class FarawaySoftClampLowerOffset(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "lo",
           "note": "lo appears twice (the offset and -lo*s); only the -s part is kept"}

    @staticmethod
    def forward(ctx, x, lo, hi):
        return _soft_clamp_forward(ctx, x, lo, hi)

    @staticmethod
    def backward(ctx, grad_out):
        s, lo, hi = ctx.saved_tensors
        grad_x = grad_out * (hi - lo) * s * (1 - s)
        grad_lo = -(grad_out * s).sum(0)  # BUG
        grad_hi = (grad_out * s).sum(0)
        return grad_x, grad_lo, grad_hi

    @staticmethod
    def example_inputs():
        return _soft_clamp_inputs()


def _soft_clip_inputs():
    return (_wide()[0], torch.tensor([1.7], dtype=torch.float64))


class FarawayTanhSoftClip(torch.autograd.Function):
    """c * tanh(x / c): a soft clip to (-c, c) with a learnable level c (1,)."""
    bug = None

    @staticmethod
    def forward(ctx, x, c):
        u = x / c
        t = torch.tanh(u)
        ctx.save_for_backward(u, t)
        return c * t

    @staticmethod
    def backward(ctx, grad_out):
        u, t = ctx.saved_tensors
        sech2 = 1 - t * t
        grad_x = grad_out * sech2
        grad_c = (grad_out * (t - u * sech2)).sum().reshape(1)
        return grad_x, grad_c

    @staticmethod
    def example_inputs():
        return _soft_clip_inputs()


class FarawayTanhSoftClipLevelSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "c",
           "note": "d/dc of c tanh(x/c) is tanh(u) - u sech^2(u); the second term is added"}

    @staticmethod
    def forward(ctx, x, c):
        u = x / c
        t = torch.tanh(u)
        ctx.save_for_backward(u, t)
        return c * t

    @staticmethod
    def backward(ctx, grad_out):
        u, t = ctx.saved_tensors
        sech2 = 1 - t * t
        grad_x = grad_out * sech2
        grad_c = (grad_out * (t + u * sech2)).sum().reshape(1)  # BUG
        return grad_x, grad_c

    @staticmethod
    def example_inputs():
        return _soft_clip_inputs()
