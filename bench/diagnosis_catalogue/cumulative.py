"""Cumulative ops (issue 17 catalogue: the rules' own tuning corpus)."""
import torch
from torch.autograd import Function


class CumsumNoFlips(Function):
    bug = {"kind": "missing_flip", "input": "x", "note": "cumsum(g) instead of the reverse cumsum"}

    @staticmethod
    def forward(ctx, x):
        return x.cumsum(dim=1)

    @staticmethod
    def backward(ctx, g):
        return g.cumsum(dim=1)  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(61)
        return (torch.randn(3, 4, dtype=torch.float64),)


class CumsumFlipsBackOnlyOnce(Function):
    bug = {"kind": "missing_flip", "input": "x", "note": "flips grad_output but not the result back"}

    @staticmethod
    def forward(ctx, x):
        return torch.cumsum(x, 0)

    @staticmethod
    def backward(ctx, g):
        return torch.cumsum(g.flip(0), 0)  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(62)
        return (torch.randn(5, dtype=torch.float64),)


class ReverseCumsumExtraFlips(Function):
    bug = {"kind": "missing_flip", "input": "x", "note": "reverse cumsum's backward is a plain cumsum"}

    @staticmethod
    def forward(ctx, x):
        return x.flip(-1).cumsum(-1).flip(-1)

    @staticmethod
    def backward(ctx, g):
        return g.flip(-1).cumsum(-1).flip(-1)  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(63)
        return (torch.randn(2, 5, dtype=torch.float64),)


class CumprodForwardAccumulation(Function):
    bug = {"kind": "missing_flip", "input": "x", "note": "accumulates g·y forwards instead of in reverse"}

    @staticmethod
    def forward(ctx, x):
        y = x.cumprod(0)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return (g * y).cumsum(0) / x  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(64)
        return (torch.rand(5, dtype=torch.float64) + 0.5,)


class CumsumWrongDim(Function):
    bug = {"kind": "wrong_axis", "input": "x", "note": "reverse cumsum over dim 0 in backward"}

    @staticmethod
    def forward(ctx, x):
        return x.cumsum(1)

    @staticmethod
    def backward(ctx, g):
        return g.flip(0).cumsum(0).flip(0)  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(65)
        return (torch.randn(3, 4, dtype=torch.float64),)


class CumsumOk(Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return x.cumsum(dim=1)

    @staticmethod
    def backward(ctx, g):
        return g.flip(1).cumsum(dim=1).flip(1)

    @staticmethod
    def example_inputs():
        torch.manual_seed(66)
        return (torch.randn(3, 4, dtype=torch.float64),)
