"""Index-driven ops with hand-written backwards: 1-D linear interpolation of a table at given
positions and a softmax within segments given by an index (BLIND corpus, see README.md)."""
import torch


# --------------------------------------------------------------------- 1-D linear interpolation
def _interp_inputs():
    gen = torch.Generator().manual_seed(61)
    table = torch.randn(6, dtype=torch.float64, generator=gen)
    # several positions fall in the same cell, so the table's gradient must accumulate
    where = torch.tensor([0.3, 0.7, 1.45, 1.2, 3.9, 3.1, 4.6, 0.55], dtype=torch.float64)
    return table, where


def _cell(table, where):
    left = where.floor().long().clamp(0, table.shape[0] - 2)
    frac = where - left.to(where.dtype)
    return left, frac


class ForeignLinearInterp(torch.autograd.Function):
    """np.interp-style lookup: table[i] * (1 - w) + table[i + 1] * w at positions t in [0, K-1)."""

    bug = None

    @staticmethod
    def forward(ctx, table, where):
        left, frac = _cell(table, where)
        ctx.save_for_backward(table, left, frac)
        return table[left] * (1 - frac) + table[left + 1] * frac

    @staticmethod
    def backward(ctx, grad):
        table, left, frac = ctx.saved_tensors
        grad_table = torch.zeros_like(table)
        grad_table.index_add_(0, left, grad * (1 - frac))
        grad_table.index_add_(0, left + 1, grad * frac)
        grad_where = grad * (table[left + 1] - table[left])
        return grad_table, grad_where

    @staticmethod
    def example_inputs():
        return _interp_inputs()


class ForeignLinearInterpIndexedAdd(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "table",
           "note": "the table's gradient is scattered with grad_table[idx] += ..., which keeps one "
                   "contribution per repeated index instead of summing them"}

    @staticmethod
    def forward(ctx, table, where):
        left, frac = _cell(table, where)
        ctx.save_for_backward(table, where)
        ctx.left = left
        return torch.lerp(table[left], table[left + 1], frac)

    @staticmethod
    def backward(ctx, grad):
        table, where = ctx.saved_tensors
        left = ctx.left
        frac = where - left.to(where.dtype)
        grad_table = table.new_zeros(table.shape)
        for offset, weight in ((0, 1 - frac), (1, frac)):
            grad_table[left + offset] += grad * weight  # BUG
        slope = table[left + 1] - table[left]
        return grad_table, grad * slope

    @staticmethod
    def example_inputs():
        return _interp_inputs()


class ForeignLinearInterpSlopeBackwards(torch.autograd.Function):
    bug = {"kind": "sign", "input": "where",
           "note": "the position's gradient takes the cell's slope as table[i] - table[i + 1]"}

    @staticmethod
    def forward(ctx, table, where):
        left, frac = _cell(table, where)
        lo, hi = table[left], table[left + 1]
        ctx.save_for_backward(lo, hi, frac)
        ctx.left, ctx.size = left, table.shape[0]
        return lo + frac * (hi - lo)

    @staticmethod
    def backward(ctx, grad):
        lo, hi, frac = ctx.saved_tensors
        grad_table = torch.zeros(ctx.size, dtype=grad.dtype)
        grad_table.scatter_add_(0, ctx.left, grad * (1 - frac))
        grad_table.scatter_add_(0, ctx.left + 1, grad * frac)
        grad_where = grad * (lo - hi)  # BUG
        return grad_table, grad_where

    @staticmethod
    def example_inputs():
        return _interp_inputs()


# ---------------------------------------------------------------------- segment softmax by index
def _segment_inputs():
    gen = torch.Generator().manual_seed(62)
    x = torch.randn(8, dtype=torch.float64, generator=gen)
    segment = torch.tensor([0, 2, 0, 1, 2, 2, 1, 0])
    return x, segment, 3


def _segment_softmax(x, segment, count):
    top = torch.full((count,), float("-inf"), dtype=x.dtype)
    top = top.scatter_reduce(0, segment, x, reduce="amax")
    e = torch.exp(x - top[segment])
    total = torch.zeros(count, dtype=x.dtype).index_add_(0, segment, e)
    return e / total[segment]


class ForeignSegmentSoftmax(torch.autograd.Function):
    """softmax of x within each segment (a graph's edges grouped by target node)."""

    bug = None

    @staticmethod
    def forward(ctx, x, segment, count):
        y = _segment_softmax(x, segment, count)
        ctx.save_for_backward(y, segment)
        ctx.count = count
        return y

    @staticmethod
    def backward(ctx, grad):
        y, segment = ctx.saved_tensors
        gy = grad * y
        per_segment = torch.zeros(ctx.count, dtype=y.dtype).index_add_(0, segment, gy)
        return gy - y * per_segment[segment], None, None

    @staticmethod
    def example_inputs():
        return _segment_inputs()


class ForeignSegmentSoftmaxAssignedSum(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "the per-segment sum of grad * y is written by index assignment, so each "
                   "segment keeps the last member's term instead of the sum"}

    @staticmethod
    def forward(ctx, x, segment, count):
        y = _segment_softmax(x, segment, count)
        ctx.save_for_backward(y, segment)
        ctx.count = count
        return y

    @staticmethod
    def backward(ctx, grad):
        y, segment = ctx.saved_tensors
        weighted = grad * y
        dot = y.new_zeros(ctx.count)
        dot[segment] = weighted  # BUG
        return y * (grad - dot.gather(0, segment)), None, None

    @staticmethod
    def example_inputs():
        return _segment_inputs()
