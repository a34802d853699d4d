"""Reductions, in-place saves and small ops (issue 17 catalogue: the rules' own tuning corpus)."""
import torch
from torch.autograd import Function


class VarianceBiasedBackward(Function):
    bug = {"kind": "scale", "input": "x", "note": "unbiased var forward, biased 2(x-m)/N backward"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.var(dim=1, unbiased=True)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        n = x.shape[1]
        return 2 * (x - x.mean(1, keepdim=True)) / n * g[:, None]  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(81)
        return (torch.randn(3, 4, dtype=torch.float64),)


class MeanOverDimMissingDivide(Function):
    bug = {"kind": "scale", "input": "x", "note": "expands g without /n"}

    @staticmethod
    def forward(ctx, x):
        ctx.n = x.shape[0]
        return x.mean(0)

    @staticmethod
    def backward(ctx, g):
        return g.expand(ctx.n, -1).clone()  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(82)
        return (torch.randn(3, 4, dtype=torch.float64),)


class SumUnsqueezeWrongDim(Function):
    bug = {"kind": "transposed", "input": "x", "note": "g[None, :] where g[:, None] is needed",
           "also": ["wrong_axis"]}

    @staticmethod
    def forward(ctx, x):
        return x.sum(1)

    @staticmethod
    def backward(ctx, g):
        return g[None, :].expand(g.shape[0], -1).clone()  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(83)
        return (torch.randn(4, 4, dtype=torch.float64),)


class SigmoidOutputScaledInPlace(Function):
    bug = {"kind": "inplace", "input": None, "note": "saved output scaled in place after saving"}

    @staticmethod
    def forward(ctx, x):
        y = torch.sigmoid(x)
        ctx.save_for_backward(y)
        y.mul_(2)  # BUG
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * 2 * y * (1 - y)

    @staticmethod
    def example_inputs():
        torch.manual_seed(84)
        return (torch.randn(3, 4, dtype=torch.float64),)


class ClampBackwardUpperBoundForgotten(Function):
    bug = {"kind": "region", "input": "x", "note": "mask only x > lo"}

    @staticmethod
    def forward(ctx, x, lo: float = -1.0, hi: float = 1.0):
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        mask = (x > ctx.lo).to(g.dtype)  # BUG
        return g * mask, None, None

    @staticmethod
    def example_inputs():
        torch.manual_seed(85)
        return torch.randn(3, 4, dtype=torch.float64) * 2, -1.0, 1.0


class Atan2SwappedGradients(Function):
    bug = {"kind": "swapped", "input": "y", "note": "returns (dx, dy) for forward(y, x)"}

    @staticmethod
    def forward(ctx, y, x):
        ctx.save_for_backward(y, x)
        return torch.atan2(y, x)

    @staticmethod
    def backward(ctx, g):
        y, x = ctx.saved_tensors
        r2 = x * x + y * y
        return -y / r2 * g, x / r2 * g  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(86)
        return torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)


class DivisionDenominatorSign(Function):
    bug = {"kind": "sign", "input": "b", "note": "a/b² where -a/b² is right"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a / b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g / b, g * a / b ** 2  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(87)
        return torch.randn(3, 4, dtype=torch.float64), torch.rand(3, 4, dtype=torch.float64) + 0.5


class LogOnePlusTermSign(Function):
    bug = {"kind": "term_sign", "input": "x", "note": "d/dx[x·log(x)] = log(x) + 1, written log(x) - 1"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.log()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x.log() - 1)  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(88)
        return (torch.rand(3, 4, dtype=torch.float64) + 0.3,)


class SquareBranchy(Function):
    bug = {"kind": "scale", "input": "x", "note": "the 'mean' branch that ran forgets /n"}

    @staticmethod
    def forward(ctx, x, reduction: str = "mean"):
        ctx.save_for_backward(x)
        ctx.reduction = reduction
        return (x * x).mean() if reduction == "mean" else (x * x).sum()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if ctx.reduction == "mean":
            grad = 2 * x * g  # BUG
        else:
            grad = 2 * x * g
        return grad, None

    @staticmethod
    def example_inputs():
        torch.manual_seed(90)
        return torch.randn(3, 4, dtype=torch.float64), "mean"


class ExpSavedThenSubInPlace(Function):
    bug = {"kind": "inplace", "input": None, "note": "expm1 written as exp().sub_(1) after saving"}

    @staticmethod
    def forward(ctx, x):
        e = x.exp()
        ctx.save_for_backward(e)
        return e.sub_(1)  # BUG

    @staticmethod
    def backward(ctx, g):
        (e,) = ctx.saved_tensors
        return g * e

    @staticmethod
    def example_inputs():
        torch.manual_seed(91)
        return (torch.randn(3, 4, dtype=torch.float64),)
