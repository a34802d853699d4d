"""Deliberate gradient estimators and forward passes that change a saved tensor in place.

The estimators (a quantiser's straight-through, a clipped sign STE, two spiking surrogates, a
gradient reversal layer) are not mistakes: their labels name the estimator each implements. The
in-place bugs are mistakes: forward saves a tensor, then changes it in place before returning.

BLIND corpus: see README.md. Never tune gradcli's diagnosis on these Functions.
"""
import torch

STEP = 0.5
THRESHOLD = 0.3
SLOPE = 4.0


def _quantiser_inputs():
    torch.manual_seed(91)
    levels = torch.randint(-4, 5, (3, 4)).to(torch.float64)
    offset = 0.6 * torch.rand(3, 4, dtype=torch.float64) - 0.3  # away from the rounding edges
    return (((levels + offset) * STEP).requires_grad_(), STEP)


class UniformQuantiserSTE(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x",
           "note": "the identity straight-through estimator of round(x / step) * step"}

    @staticmethod
    def forward(ctx, x, step):
        return torch.round(x / step) * step

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out, None  # BUG -- the estimator, not the (zero) derivative

    @staticmethod
    def example_inputs():
        return _quantiser_inputs()


def _signed_inputs():
    torch.manual_seed(92)
    magnitude = 0.2 + 1.5 * torch.rand(3, 4, dtype=torch.float64)
    sign = torch.randint(0, 2, (3, 4)).to(torch.float64) * 2 - 1
    return ((magnitude * sign).requires_grad_(),)


class BinarySignClippedSTE(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x",
           "note": "the hardtanh-clipped straight-through estimator of sign(x) (BinaryConnect)"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * (x.abs() <= 1).to(grad_out.dtype)  # BUG -- the estimator

    @staticmethod
    def example_inputs():
        return _signed_inputs()


def _membrane_inputs():
    torch.manual_seed(93)
    gap = 0.1 + 0.8 * torch.rand(3, 4, dtype=torch.float64)
    side = torch.randint(0, 2, (3, 4)).to(torch.float64) * 2 - 1
    return ((THRESHOLD + gap * side).requires_grad_(),)


class SpikeSigmoidSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "v",
           "note": "a Heaviside spike with the derivative of sigmoid(slope * (v - threshold)) as "
                   "its surrogate gradient"}

    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return (v >= THRESHOLD).to(v.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (v,) = ctx.saved_tensors
        s = torch.sigmoid(SLOPE * (v - THRESHOLD))
        return grad_out * SLOPE * s * (1 - s)  # BUG -- the surrogate

    @staticmethod
    def example_inputs():
        return _membrane_inputs()


class SpikeFastSigmoidSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "v",
           "note": "SuperSpike: a Heaviside spike with 1 / (1 + slope |v - threshold|)^2 as its "
                   "surrogate gradient"}

    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return (v >= THRESHOLD).to(v.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (v,) = ctx.saved_tensors
        return grad_out / (1 + SLOPE * (v - THRESHOLD).abs()) ** 2  # BUG -- the surrogate

    @staticmethod
    def example_inputs():
        return _membrane_inputs()


class GradientReversal(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "domain-adversarial gradient reversal: identity forward, -lambda * grad "
                   "backward (lambda = 0.5)", "also": ["scale"]}

    @staticmethod
    def forward(ctx, x, lambd):
        ctx.lambd = lambd
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_out):
        return -ctx.lambd * grad_out, None  # BUG -- the reversal layer's estimator

    @staticmethod
    def example_inputs():
        torch.manual_seed(94)
        return torch.randn(3, 4, dtype=torch.float64, requires_grad=True), 0.5


class SymmetricSigmoid(torch.autograd.Function):
    """2 * sigmoid(x) - 1, saving sigmoid(x) for the backward."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(s)
        return 2 * s - 1

    @staticmethod
    def backward(ctx, grad_out):
        (s,) = ctx.saved_tensors
        return grad_out * 2 * s * (1 - s)


class SymmetricSigmoidInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "the saved sigmoid is rescaled in place to 2s - 1 to save an allocation; "
                   "backward then reads 2s - 1 as s"}

    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(s)
        return s.mul_(2).sub_(1)  # BUG -- changes the saved s

    @staticmethod
    def backward(ctx, grad_out):
        (s,) = ctx.saved_tensors
        return grad_out * 2 * s * (1 - s)


class RowNormalize(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        norm = x.norm(dim=1, keepdim=True)
        ctx.save_for_backward(x, norm)
        return x / norm

    @staticmethod
    def backward(ctx, grad_out):
        x, norm = ctx.saved_tensors
        xhat = x / norm
        return (grad_out - xhat * (grad_out * xhat).sum(1, keepdim=True)) / norm


class RowNormalizeInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "forward saves its output buffer as if it were x, then divides it in place"}

    @staticmethod
    def forward(ctx, x):
        norm = x.norm(dim=1, keepdim=True)
        out = x.clone()
        ctx.save_for_backward(out, norm)
        return out.div_(norm)  # BUG -- the saved copy of x is normalised in place

    @staticmethod
    def backward(ctx, grad_out):
        x, norm = ctx.saved_tensors
        xhat = x / norm
        return (grad_out - xhat * (grad_out * xhat).sum(1, keepdim=True)) / norm


class SquaredReLU(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        r = x.clamp(min=0)
        ctx.save_for_backward(r)
        return r * r

    @staticmethod
    def backward(ctx, grad_out):
        (r,) = ctx.saved_tensors
        return 2 * r * grad_out

    @staticmethod
    def example_inputs():
        return _signed_inputs()


class SquaredReLUInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "the saved relu(x) is squared in place, so backward computes 2 relu(x)^2"}

    @staticmethod
    def forward(ctx, x):
        r = x.clamp(min=0)
        ctx.save_for_backward(r)
        return r.pow_(2)  # BUG -- changes the saved r

    @staticmethod
    def backward(ctx, grad_out):
        (r,) = ctx.saved_tensors
        return 2 * r * grad_out

    @staticmethod
    def example_inputs():
        return _signed_inputs()
