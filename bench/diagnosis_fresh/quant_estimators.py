"""Quantisation-aware training estimators and in-place mistakes: a 1/4-step fake quantiser with a
straight-through estimator, a clipped one, sign surrogates, a scaled gradient reversal, and
forwards that change a saved tensor in place."""
import torch


def _off_grid():
    # values at least 0.05 away from the quantiser's rounding edges and from 0 and +-2
    x = torch.tensor([[-2.6, -1.3, -0.7, -0.2], [0.3, 0.8, 1.2, 1.7], [2.4, -0.45, 0.55, 3.1]],
                     dtype=torch.float64)
    return (x.requires_grad_(),)


class FakeQuantQuarterSTE(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x", "note": "identity straight-through estimator for round(4x)/4"}

    @staticmethod
    def forward(ctx, x):
        return torch.round(x * 4) / 4

    @staticmethod
    def backward(ctx, grad):
        return grad  # BUG

    @staticmethod
    def example_inputs():
        return _off_grid()


class FakeQuantClampedSTE(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x", "note": "clipped straight-through estimator, passes the gradient where |x| <= 2"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.round(x).clamp(-2, 2)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x.abs() <= 2).to(grad.dtype)  # BUG

    @staticmethod
    def example_inputs():
        return _off_grid()


class BinarySignSigmoidSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "x", "note": "sign forward, the derivative of sigmoid(4x) (scaled) as surrogate"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(4 * x)
        return grad * 8 * s * (1 - s)  # BUG

    @staticmethod
    def example_inputs():
        return _off_grid()


class HeavisideTriangleSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "x", "note": "step forward, triangle max(0, 1 - |x|) surrogate"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x > 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.clamp(1 - x.abs(), min=0)  # BUG

    @staticmethod
    def example_inputs():
        return _off_grid()


class ScaledGradientReversal(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "x", "note": "domain-adversarial reversal with lambda = 0.3"}

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad.neg().mul(0.3)  # BUG


class ScaledTanh(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return 2 * y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return 2 * grad * (1 - y * y)


class ScaledTanhScaledInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x", "note": "the saved tanh is scaled in place to build the output"}

    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        y.mul_(2)  # BUG
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return 2 * grad * (1 - y * y)


class SoftplusFromSaved(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        z = x.clone()
        ctx.save_for_backward(z)
        return torch.log1p(torch.exp(z))

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        return grad * torch.sigmoid(z)


class SoftplusSavedThenExpInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x", "note": "the saved copy of x is turned into the output in place (exp_, log1p_)"}

    @staticmethod
    def forward(ctx, x):
        z = x.clone()
        ctx.save_for_backward(z)
        z.exp_().log1p_()  # BUG
        return z

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        return grad * torch.sigmoid(z)


class HardTanhExact(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(-1, 1)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad.masked_fill(x.abs() > 1, 0)

    @staticmethod
    def example_inputs():
        return _off_grid()
