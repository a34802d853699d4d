import gradcli as torch
import math

# A Tweedie deviance (power 1 < p < 2, log link) for positive targets on gradcli's engine.

POWER = 1.5


def _tweedie_inputs():
    gen = torch.Generator().manual_seed(71)
    y = torch.rand(3, 4, dtype=torch.float64, generator=gen) * 2.5 + 0.3
    eta = 0.7 * torch.randn(3, 4, dtype=torch.float64, generator=gen)
    return y, eta


def _tweedie_forward(ctx, y, eta):
    p = POWER
    mu = torch.exp(eta)
    ctx.save_for_backward(y, mu)
    return 2 * (y ** (2 - p) / ((1 - p) * (2 - p)) - y * mu ** (1 - p) / (1 - p) + mu ** (2 - p) / (2 - p))


class AbroadTweedieDeviance(torch.autograd.Function):
    """2 (y^(2-p) / ((1-p)(2-p)) - y mu^(1-p) / (1-p) + mu^(2-p) / (2-p)), mu = exp(eta)."""

    bug = None

    @staticmethod
    def forward(ctx, y, eta):
        return _tweedie_forward(ctx, y, eta)

    @staticmethod
    def backward(ctx, g):
        y, mu = ctx.saved_tensors
        p = POWER
        grad_y = g * 2 * (y ** (1 - p) - mu ** (1 - p)) / (1 - p)
        grad_eta = g * 2 * mu ** (1 - p) * (mu - y)
        return grad_y, grad_eta

    @staticmethod
    def example_inputs():
        return _tweedie_inputs()


class AbroadTweedieSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "y",
           "note": "the target's and the linear predictor's gradients are returned in each other's positions"}

    @staticmethod
    def forward(ctx, y, eta):
        return _tweedie_forward(ctx, y, eta)

    @staticmethod
    def backward(ctx, g):
        y, mu = ctx.saved_tensors
        p = POWER
        grad_y = g * 2 * (y ** (1 - p) - mu ** (1 - p)) / (1 - p)
        grad_eta = g * 2 * mu ** (1 - p) * (mu - y)
        return grad_eta, grad_y  # BUG

    @staticmethod
    def example_inputs():
        return _tweedie_inputs()


class AbroadTweedieNoTwo(torch.autograd.Function):
    bug = {"kind": "scale", "input": "eta",
           "note": "the deviance's leading factor 2 is dropped from the eta gradient"}

    @staticmethod
    def forward(ctx, y, eta):
        return _tweedie_forward(ctx, y, eta)

    @staticmethod
    def backward(ctx, g):
        y, mu = ctx.saved_tensors
        p = POWER
        grad_y = g * 2 * (y ** (1 - p) - mu ** (1 - p)) / (1 - p)
        grad_eta = g * mu ** (1 - p) * (mu - y)  # BUG
        return grad_y, grad_eta

    @staticmethod
    def example_inputs():
        return _tweedie_inputs()


class AbroadTweedieTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "eta",
           "note": "the -y mu^(1-p) term of d deviance / d eta is added instead of subtracted"}

    @staticmethod
    def forward(ctx, y, eta):
        return _tweedie_forward(ctx, y, eta)

    @staticmethod
    def backward(ctx, g):
        y, mu = ctx.saved_tensors
        p = POWER
        grad_y = g * 2 * (y ** (1 - p) - mu ** (1 - p)) / (1 - p)
        grad_eta = g * 2 * (mu ** (2 - p) + y * mu ** (1 - p))  # BUG
        return grad_y, grad_eta

    @staticmethod
    def example_inputs():
        return _tweedie_inputs()


class AbroadTweediePoissonScore(torch.autograd.Function):
    bug = {"kind": "none", "input": "y",
           "note": "the target's gradient is the Poisson deviance's 2 log(y / mu), not the Tweedie one"}

    @staticmethod
    def forward(ctx, y, eta):
        return _tweedie_forward(ctx, y, eta)

    @staticmethod
    def backward(ctx, g):
        y, mu = ctx.saved_tensors
        grad_y = g * 2 * torch.log(y / mu)  # BUG
        grad_eta = g * 2 * mu ** (1 - POWER) * (mu - y)
        return grad_y, grad_eta

    @staticmethod
    def example_inputs():
        return _tweedie_inputs()
