"""Cumulative ops on gradcli's engine: row cumsum, suffix sum down dim 0, exclusive cumprod, logcumsumexp."""
import gradcli as torch


def _reverse_cumsum(t, dim):
    return t.flip(dim).cumsum(dim).flip(dim)


class LatestCumsumRows(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return x.cumsum(1)

    @staticmethod
    def backward(ctx, g):
        return _reverse_cumsum(g, 1)


class LatestCumsumRowsForwardScan(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the adjoint of a prefix sum is a suffix sum; this scans g forward"}

    @staticmethod
    def forward(ctx, x):
        return x.cumsum(1)

    @staticmethod
    def backward(ctx, g):
        return g.cumsum(1)  # BUG


class LatestSuffixSumDim0(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _reverse_cumsum(x, 0)

    @staticmethod
    def backward(ctx, g):
        return g.cumsum(0)


class LatestSuffixSumDim0ScanColumns(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x", "note": "backward's prefix sum runs along dim 1, not dim 0"}

    @staticmethod
    def forward(ctx, x):
        return _reverse_cumsum(x, 0)

    @staticmethod
    def backward(ctx, g):
        return g.cumsum(1)  # BUG


def _positive():
    gen = torch.Generator().manual_seed(71)
    return (torch.rand(3, 4, dtype=torch.float64, generator=gen) + 0.5,)


class LatestExclusiveCumprod(torch.autograd.Function):
    """y_i = prod_{j<i} x_j (y_0 = 1), positive x."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        inclusive = x.cumprod(1)
        ctx.save_for_backward(x, inclusive)
        return inclusive / x

    @staticmethod
    def backward(ctx, g):
        x, inclusive = ctx.saved_tensors
        gy = g * inclusive / x
        return (_reverse_cumsum(gy, 1) - gy) / x

    example_inputs = staticmethod(_positive)


class LatestExclusiveCumprodInplace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "the saved inclusive product is divided in place into the output after saving"}

    @staticmethod
    def forward(ctx, x):
        inclusive = x.cumprod(1)
        ctx.x, ctx.inclusive = x, inclusive
        return inclusive.div_(x)  # BUG

    @staticmethod
    def backward(ctx, g):
        x, inclusive = ctx.x, ctx.inclusive
        gy = g * inclusive / x
        return (_reverse_cumsum(gy, 1) - gy) / x

    example_inputs = staticmethod(_positive)


def _lcse(x):
    m = x.amax(1, keepdim=True)
    return (x - m).exp().cumsum(1).log() + m


class LatestLogcumsumexp(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        out = _lcse(x)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        return x.exp() * _reverse_cumsum(g * (-out).exp(), 1)


class LatestLogcumsumexpOutputExp(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the outer factor exp(x_k) is written exp(out_k)"}

    @staticmethod
    def forward(ctx, x):
        out = _lcse(x)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        return out.exp() * _reverse_cumsum(g * (-out).exp(), 1)  # BUG


class LatestLogcumsumexpAsLogsumexp(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "returns logsumexp's gradient softmax(x) * sum(g), a different function's"}

    @staticmethod
    def forward(ctx, x):
        out = _lcse(x)
        ctx.save_for_backward(x)
        return out

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.softmax(x, 1) * g.sum(1, keepdim=True)  # BUG
