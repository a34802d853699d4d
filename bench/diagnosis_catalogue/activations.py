"""Activations with parameters (issue 17 catalogue: the rules' own tuning corpus)."""
import torch
from torch.autograd import Function


class SwishMissingBeta(Function):
    bug = {"kind": "missing_term", "input": "x", "note": "β missing from the second term"}

    @staticmethod
    def forward(ctx, x, beta: float = 1.5):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, s)
        ctx.beta = beta
        return x * s

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved_tensors
        return g * (s + x * s * (1 - s)), None  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(71)
        return torch.randn(3, 4, dtype=torch.float64), 1.5


class SwishTensorBetaGradSign(Function):
    bug = {"kind": "sign", "input": "beta", "note": "dbeta has the wrong sign"}

    @staticmethod
    def forward(ctx, x, beta):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, beta, s)
        return x * s

    @staticmethod
    def backward(ctx, g):
        x, beta, s = ctx.saved_tensors
        dx = g * (s + beta * x * s * (1 - s))
        dbeta = -(g * x * x * s * (1 - s)).sum(0)  # BUG
        return dx, dbeta

    @staticmethod
    def example_inputs():
        torch.manual_seed(72)
        return torch.randn(3, 4, dtype=torch.float64), torch.rand(4, dtype=torch.float64) + 0.5


class ELUNegativeBranchMissingAlpha(Function):
    bug = {"kind": "region", "input": "x", "note": "exp(x) where alpha·exp(x) is needed for x < 0"}

    @staticmethod
    def forward(ctx, x, alpha: float = 0.7):
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return torch.where(x > 0, x, alpha * (x.exp() - 1))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.where(x > 0, g, g * x.exp()), None  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(73)
        return torch.randn(3, 4, dtype=torch.float64), 0.7


class LeakyReLUDefaultSlope(Function):
    bug = {"kind": "region", "input": "x", "note": "slope 0.01 in backward, 0.2 in forward"}

    @staticmethod
    def forward(ctx, x, slope: float = 0.2):
        ctx.save_for_backward(x)
        ctx.slope = slope
        return torch.where(x >= 0, x, slope * x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        grad = g.clone()
        grad[x < 0] *= 0.01  # BUG
        return grad, None

    @staticmethod
    def example_inputs():
        torch.manual_seed(74)
        return torch.randn(3, 4, dtype=torch.float64), 0.2


class SigmoidUsesInput(Function):
    bug = {"kind": "wrong_variable", "input": "x", "note": "x·(1−x) instead of y·(1−y)"}

    @staticmethod
    def forward(ctx, x):
        y = torch.sigmoid(x)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * x * (1 - x)  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(75)
        return (torch.randn(3, 4, dtype=torch.float64),)


class ScaledTanhMissingInnerScale(Function):
    bug = {"kind": "scale", "input": "x", "note": "a·tanh(b·x) backward misses b"}

    @staticmethod
    def forward(ctx, x, a: float = 1.7159, b: float = 2 / 3):
        t = torch.tanh(b * x)
        ctx.save_for_backward(t)
        ctx.a, ctx.b = a, b
        return a * t

    @staticmethod
    def backward(ctx, g):
        (t,) = ctx.saved_tensors
        return g * ctx.a * (1 - t * t), None, None  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(76)
        return torch.randn(3, 4, dtype=torch.float64), 1.7159, 2 / 3


class PReLUWeightNotReduced(Function):
    bug = {"kind": "not_reduced", "input": "weight", "note": "dweight keeps the batch dim"}

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return torch.where(x > 0, x, weight * x)

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        dx = torch.where(x > 0, g, weight * g)
        dw = torch.where(x > 0, torch.zeros_like(x), x * g)[0]  # BUG
        return dx, dw

    @staticmethod
    def example_inputs():
        torch.manual_seed(77)
        return torch.randn(4, 3, dtype=torch.float64), torch.rand(3, dtype=torch.float64)


class GELUTanhDroppedTerm(Function):
    bug = {"kind": "none", "input": "x", "note": "an inner derivative written wrongly: no simple pattern"}

    @staticmethod
    def forward(ctx, x):
        c = 0.7978845608028654
        t = torch.tanh(c * (x + 0.044715 * x ** 3))
        ctx.save_for_backward(x, t)
        return 0.5 * x * (1 + t)

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        c = 0.7978845608028654
        dt = (1 - t * t) * c * (1 + 0.044715 * x ** 2)  # BUG
        return g * (0.5 * (1 + t) + 0.5 * x * dt)

    @staticmethod
    def example_inputs():
        torch.manual_seed(78)
        return (torch.randn(3, 4, dtype=torch.float64),)


class PowWrongExponent(Function):
    bug = {"kind": "none", "input": "x", "note": "p·x^p instead of p·x^(p-1)"}

    @staticmethod
    def forward(ctx, x, p: float = 2.5):
        ctx.save_for_backward(x)
        ctx.p = p
        return x ** p

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ctx.p * x ** ctx.p, None  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(79)
        return torch.rand(3, 4, dtype=torch.float64) + 0.5, 2.5


class SwishOk(Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta: float = 1.5):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, s)
        ctx.beta = beta
        return x * s

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved_tensors
        return g * (s + ctx.beta * x * s * (1 - s)), None

    @staticmethod
    def example_inputs():
        torch.manual_seed(80)
        return torch.randn(3, 4, dtype=torch.float64), 1.5
