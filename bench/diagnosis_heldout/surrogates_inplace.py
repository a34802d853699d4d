"""Surrogate gradients (straight-through, spiking surrogates, gradient reversal) and saved
tensors modified in place (plain torch).

The surrogate Functions are *meant* to differ from the true derivative (zero almost everywhere,
or the identity's): they are labelled with the estimator they implement, the thing a check
should recognise. Blind corpus: see README.md.
"""
import torch

SPIKE_SHARPNESS = 5.0
REVERSAL = 0.3
EPS = 1e-5


def _off_the_jumps(seed):
    """Values whose fractional part is in [0.1, 0.4] or [0.6, 0.9]: far from round()'s jumps
    and from 0."""
    gen = torch.Generator().manual_seed(seed)
    whole = torch.randint(-3, 3, (3, 4), generator=gen).to(torch.float64)
    frac = torch.rand(3, 4, generator=gen, dtype=torch.float64) * 0.3 + 0.1
    flip = torch.rand(3, 4, generator=gen) > 0.5
    return whole + torch.where(flip, 1 - frac, frac)


# --------------------------------------------------------------------- straight-through
class RoundStraightThrough(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x",
           "note": "quantisation by round(); backward passes grad_out through unchanged"}

    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out  # BUG

    @staticmethod
    def example_inputs():
        return (_off_the_jumps(91),)


class SignClippedStraightThrough(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x",
           "note": "binarisation by sign(); the clipped straight-through estimator passes "
                   "grad_out where |x| <= 1"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * (x.abs() <= 1).to(grad_out.dtype)  # BUG

    @staticmethod
    def example_inputs():
        return (_off_the_jumps(92) * 0.5,)


# --------------------------------------------------------------------- spiking surrogate
class SpikeFastSigmoid(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "v",
           "note": "a Heaviside spike whose backward is the fast-sigmoid (SuperSpike) surrogate "
                   "1 / (1 + k|v|)^2"}

    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return (v > 0).to(v.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (v,) = ctx.saved_tensors
        return grad_out / (1 + SPIKE_SHARPNESS * v.abs()) ** 2  # BUG

    @staticmethod
    def example_inputs():
        return (_off_the_jumps(93) * 0.4,)


class SpikeSigmoidDerivative(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "v",
           "note": "a Heaviside spike (threshold 0.5) whose backward is k·sigmoid'(k(v - 0.5))"}

    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return (v >= 0.5).to(v.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (v,) = ctx.saved_tensors
        s = torch.sigmoid(SPIKE_SHARPNESS * (v - 0.5))
        return grad_out * SPIKE_SHARPNESS * s * (1 - s)  # BUG

    @staticmethod
    def example_inputs():
        return (_off_the_jumps(94) * 0.4,)


# --------------------------------------------------------------------- gradient reversal
class GradientReversal(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "the domain-adversarial layer: identity forward, -lambda * grad_out backward",
           "also": ["scale"]}

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_out):
        return -REVERSAL * grad_out  # BUG


# ----------------------------------------------------------- saved tensors and in place
class TanhSavedOutput(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return grad_out * (1 - y * y)


class TanhBackwardOverwritesSavedOutput(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "backward builds 1 - y^2 in place in the saved output, which is also the "
                   "tensor forward returned: a second backward (and the caller) sees it changed"}

    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        local = y.mul_(y).neg_().add_(1)  # BUG
        return grad_out * local


class LogSumExpShiftsInput(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "for stability forward subtracts the row max from x in place, changing the "
                   "caller's tensor"}

    @staticmethod
    def forward(ctx, x):
        m = x.max(dim=-1, keepdim=True).values
        x.sub_(m)  # BUG
        y = m + torch.log(torch.exp(x).sum(-1, keepdim=True))
        ctx.save_for_backward(x, m, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        shifted, m, y = ctx.saved_tensors
        return grad_out * torch.exp(shifted + m - y)


class LogSumExpStable(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        m = x.max(dim=-1, keepdim=True).values
        shifted = x - m
        y = m + torch.log(torch.exp(shifted).sum(-1, keepdim=True))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return grad_out * torch.exp(x - y)


class NormalizeThenScaleInPlace(torch.autograd.Function):
    """y = gamma * (x - mean) / std over the last dim."""
    bug = {"kind": "inplace", "input": "x",
           "note": "xhat is saved, then scaled by gamma in place to make the output, so the "
                   "saved xhat is no longer xhat"}

    @staticmethod
    def forward(ctx, x, gamma):
        mu = x.mean(-1, keepdim=True)
        rstd = torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + EPS)
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, gamma)
        return xhat.mul_(gamma)  # BUG

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        dxhat = grad_out * gamma
        dx = rstd * (dxhat - dxhat.mean(-1, keepdim=True)
                     - xhat * (dxhat * xhat).mean(-1, keepdim=True))
        return dx, (grad_out * xhat).sum(0)

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(95)
        return (torch.randn(3, 4, generator=gen, dtype=torch.float64),
                torch.rand(4, generator=gen, dtype=torch.float64) + 0.5)


class NormalizeThenScale(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gamma):
        mu = x.mean(-1, keepdim=True)
        rstd = torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + EPS)
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, gamma)
        return xhat * gamma

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        dxhat = grad_out * gamma
        dx = rstd * (dxhat - dxhat.mean(-1, keepdim=True)
                     - xhat * (dxhat * xhat).mean(-1, keepdim=True))
        return dx, (grad_out * xhat).sum(0)

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(95)
        return (torch.randn(3, 4, generator=gen, dtype=torch.float64),
                torch.rand(4, generator=gen, dtype=torch.float64) + 0.5)
