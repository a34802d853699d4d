"""Deliberate gradient estimators for samples taken with fixed noise (no correct twins: their exact
derivative is zero or the identity): stochastic rounding with straight-through, a hard Bernoulli
sample with a sigmoid surrogate, and a gradient-reversal layer for adversarial domain training."""
import torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


class FarawayStochasticRoundST(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x",
           "note": "floor(x + u) has zero derivative almost everywhere; backward passes grad_out straight through"}

    @staticmethod
    def forward(ctx, x, u):
        return torch.floor(x + u)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out, None  # BUG

    @staticmethod
    def example_inputs():
        g = _gen(61)
        return (torch.randn(3, 4, dtype=torch.float64, generator=g) * 3,
                torch.rand(3, 4, dtype=torch.float64, generator=g) * 0.8 + 0.1)


class FarawayHardBernoulliSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "logits",
           "note": "the hard sample 1[sigmoid(l) > u] gets the gradient of sigmoid(l) as a surrogate"}

    @staticmethod
    def forward(ctx, logits, u):
        p = torch.sigmoid(logits)
        ctx.save_for_backward(p)
        return (p > u).to(logits.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        return grad_out * p * (1 - p), None  # BUG

    @staticmethod
    def example_inputs():
        g = _gen(62)
        return (torch.randn(3, 4, dtype=torch.float64, generator=g) * 2,
                torch.rand(3, 4, dtype=torch.float64, generator=g))


class FarawayDomainGradientReversal(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "features",
           "note": "identity forward, the gradient multiplied by -lambda on the way back (DANN)"}

    @staticmethod
    def forward(ctx, features, lam=0.5):
        ctx.lam = lam
        return features.clone()

    @staticmethod
    def backward(ctx, grad_out):
        return -ctx.lam * grad_out, None  # BUG

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 4, dtype=torch.float64, generator=_gen(63)),)
