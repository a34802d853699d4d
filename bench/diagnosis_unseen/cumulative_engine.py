"""Cumulative ops with hand-written backwards on gradcli's engine: cumsum, reverse cumsum,
cumprod, logcumsumexp.

Part of the blind corpus bench/diagnosis_unseen (see its README): score only, never design.
"""
import gradcli as torch


def reverse_cumsum(t, dim):
    return t.flip(dim).cumsum(dim).flip(dim)


class RowCumsum(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return torch.cumsum(x, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        return reverse_cumsum(grad_out, 1)


class RowCumsumForwardGrad(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "backward runs a forward cumsum of grad_out; the flips around it are missing"}

    @staticmethod
    def forward(ctx, x):
        return torch.cumsum(x, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.cumsum(1)  # BUG


class ColumnSuffixSum(torch.autograd.Function):
    """Reverse (suffix) cumulative sum down the rows: y[i] = x[i] + x[i+1] + ..."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        return reverse_cumsum(x, 0)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.cumsum(0)


class SuffixSumGradAlongColumns(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the adjoint prefix sum runs along dim 1, forward's suffix sum ran along dim 0"}

    @staticmethod
    def forward(ctx, x):
        return reverse_cumsum(x, 0)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.cumsum(1)  # BUG


def _positive():
    g = torch.Generator().manual_seed(31)
    return (torch.rand(3, 4, dtype=torch.float64, generator=g) * 1.5 + 0.5,)


class RowCumprod(torch.autograd.Function):
    """cumprod of positive entries; backward by y / x (safe: x > 0)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, 1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return reverse_cumsum(grad_out * y, 1) / x

    @staticmethod
    def example_inputs():
        return _positive()


class RowCumprodNoCotangent(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "the suffix sum is taken of y alone: grad_out is never multiplied in"}

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, 1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return reverse_cumsum(y, 1) / x  # BUG

    @staticmethod
    def example_inputs():
        return _positive()


class RowCumprodSumRule(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "backward of a cumsum (suffix sum of grad_out) written for the cumprod"}

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, 1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return reverse_cumsum(grad_out, 1)  # BUG

    @staticmethod
    def example_inputs():
        return _positive()


def logcumsumexp_rows(x):
    top = x.max(dim=1, keepdim=True).values
    return torch.log(torch.exp(x - top).cumsum(1)) + top


class RowLogCumSumExp(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = logcumsumexp_rows(x)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        # dy_j/dx_i = exp(x_i - y_j) for i <= j
        return torch.exp(x) * reverse_cumsum(grad_out * torch.exp(-y), 1)


class LogCumSumExpPrefixGrad(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the sum over later positions j >= i is written as a prefix cumsum (no flips)"}

    @staticmethod
    def forward(ctx, x):
        y = logcumsumexp_rows(x)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return torch.exp(x) * (grad_out * torch.exp(-y)).cumsum(1)  # BUG
