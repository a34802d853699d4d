"""Deliberate gradient estimators (their exact derivative is zero or the identity's): a
straight-through quantiser, a gradient-reversal layer and a spiking step with a sigmoid
surrogate. They have no correct twin (BLIND corpus, see README.md)."""
import torch


class ForeignQuantizeStraightThrough(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x",
           "note": "uniform quantisation to a grid of width step; backward passes the gradient "
                   "through unchanged although round() is flat almost everywhere"}

    @staticmethod
    def forward(ctx, x, step):
        return torch.round(x / step) * step

    @staticmethod
    def backward(ctx, grad):
        return grad, None  # BUG

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(71)
        return torch.randn(3, 4, dtype=torch.float64, generator=gen), 0.25


class ForeignGradientReversal(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "x", "also": ["sign"],
           "note": "domain-adversarial gradient reversal: identity forward, -lambda * grad "
                   "backward (lambda = 1 here)"}

    @staticmethod
    def forward(ctx, x, lambd):
        ctx.lambd = lambd
        return x.view_as(x).clone()

    @staticmethod
    def backward(ctx, grad):
        return grad.neg() * ctx.lambd, None  # BUG

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(72)
        return torch.randn(3, 4, dtype=torch.float64, generator=gen), 1.0


class ForeignSpikeSigmoidSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "membrane",
           "note": "a spiking neuron's Heaviside step (membrane > threshold); backward uses the "
                   "derivative of sigmoid(k (v - threshold)) as a surrogate"}

    @staticmethod
    def forward(ctx, membrane, threshold, k):
        shifted = membrane - threshold
        ctx.save_for_backward(shifted)
        ctx.k = k
        return (shifted > 0).to(membrane.dtype)

    @staticmethod
    def backward(ctx, grad):
        (shifted,) = ctx.saved_tensors
        sg = torch.sigmoid(ctx.k * shifted)
        return grad * ctx.k * sg * (1 - sg), None, None  # BUG

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(73)
        return torch.randn(3, 4, dtype=torch.float64, generator=gen), 0.2, 4.0
