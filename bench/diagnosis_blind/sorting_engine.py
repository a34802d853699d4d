"""Selections and pairwise ops on gradcli's engine: sort and top-k values (permutations by
index), column L2-normalisation, the max over a dim, squared pairwise distances, and hypot.

BLIND corpus: see README.md. Never tune gradcli's diagnosis on these Functions.
"""
import gradcli as torch

TOP = 2


def _rows():
    torch.manual_seed(111)
    return (torch.randn(3, 5, dtype=torch.float64),)


class SortValues(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        values, idx = x.sort(dim=1)
        ctx.save_for_backward(idx)
        return values

    @staticmethod
    def backward(ctx, grad_out):
        (idx,) = ctx.saved_tensors
        return torch.zeros_like(grad_out).scatter(1, idx, grad_out)

    @staticmethod
    def example_inputs():
        return _rows()


class SortValuesGatherBack(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "backward gathers grad_out with the sort indices (forward's permutation) "
                   "where it must scatter it back (the inverse permutation)"}

    @staticmethod
    def forward(ctx, x):
        values, idx = x.sort(dim=1)
        ctx.save_for_backward(idx)
        return values

    @staticmethod
    def backward(ctx, grad_out):
        (idx,) = ctx.saved_tensors
        return grad_out.gather(1, idx)  # BUG -- zeros_like(grad_out).scatter(1, idx, grad_out)

    @staticmethod
    def example_inputs():
        return _rows()


class TopKValues(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        values, idx = x.topk(TOP, dim=1)
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return values

    @staticmethod
    def backward(ctx, grad_out):
        (idx,) = ctx.saved_tensors
        return torch.zeros(ctx.shape, dtype=grad_out.dtype).scatter(1, idx, grad_out)

    @staticmethod
    def example_inputs():
        return _rows()


def _column_normalize(ctx, x):
    norm = torch.sqrt((x * x).sum(0, keepdim=True))
    y = x / norm
    ctx.save_for_backward(y, norm)
    return y


class ColumnNormalize(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _column_normalize(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        y, norm = ctx.saved_tensors
        return (grad_out - y * (grad_out * y).sum(0, keepdim=True)) / norm


class ColumnNormalizeProjectionOverRows(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the projection's sum runs along each row (dim 1); forward normalised columns"}

    @staticmethod
    def forward(ctx, x):
        return _column_normalize(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        y, norm = ctx.saved_tensors
        return (grad_out - y * (grad_out * y).sum(1, keepdim=True)) / norm  # BUG -- sum(0, ...)


class RowMax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        values, _ = x.max(dim=1)
        ctx.save_for_backward(x, values)
        return values

    @staticmethod
    def backward(ctx, grad_out):
        x, values = ctx.saved_tensors
        mask = (x == values[:, None]).to(grad_out.dtype)
        return mask * grad_out[:, None]

    @staticmethod
    def example_inputs():
        return _rows()


class RowMaxMaskFromGlobalMax(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the mask compares with x.max() over the whole tensor, not each row's max"}

    @staticmethod
    def forward(ctx, x):
        values, _ = x.max(dim=1)
        ctx.save_for_backward(x, values)
        return values

    @staticmethod
    def backward(ctx, grad_out):
        x, values = ctx.saved_tensors
        mask = (x == x.max()).to(grad_out.dtype)  # BUG -- x == values[:, None]
        return mask * grad_out[:, None]

    @staticmethod
    def example_inputs():
        return _rows()


def _point_sets():
    torch.manual_seed(112)
    return torch.randn(4, 3, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)


def _sq_dist(ctx, x, y):
    ctx.save_for_backward(x, y)
    return (x * x).sum(1)[:, None] + (y * y).sum(1)[None, :] - 2 * x @ y.t()


class PairwiseSquaredDistance(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, y):
        return _sq_dist(ctx, x, y)

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        grad_x = 2 * (grad_out.sum(1)[:, None] * x - grad_out @ y)
        grad_y = 2 * (grad_out.sum(0)[:, None] * y - grad_out.t() @ x)
        return grad_x, grad_y

    @staticmethod
    def example_inputs():
        return _point_sets()


class PairwiseSquaredDistanceWrongSum(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "y",
           "note": "y's diagonal term sums grad_out over dim 1 (x's points) instead of dim 0"}

    @staticmethod
    def forward(ctx, x, y):
        return _sq_dist(ctx, x, y)

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        grad_x = 2 * (grad_out.sum(1)[:, None] * x - grad_out @ y)
        grad_y = 2 * (grad_out.sum(1)[:, None] * y - grad_out.t() @ x)  # BUG -- grad_out.sum(0)
        return grad_x, grad_y

    @staticmethod
    def example_inputs():
        return _point_sets()


class Hypot(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        r = torch.sqrt(a * a + b * b)
        ctx.save_for_backward(a, b, r)
        return r

    @staticmethod
    def backward(ctx, grad_out):
        a, b, r = ctx.saved_tensors
        return grad_out * a / r, grad_out * b / r


class HypotReturnOrder(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "a",
           "note": "b's gradient is returned in a's place and a's in b's"}

    @staticmethod
    def forward(ctx, a, b):
        r = torch.sqrt(a * a + b * b)
        ctx.save_for_backward(a, b, r)
        return r

    @staticmethod
    def backward(ctx, grad_out):
        a, b, r = ctx.saved_tensors
        return grad_out * b / r, grad_out * a / r  # BUG -- (grad * a / r, grad * b / r)
