"""Sparse lookups and reductions with repeated indices: EmbeddingBag (sum and mean, with offsets),
scatter_add into a base tensor, index_add with alpha, and a row-wise gather.

BLIND corpus: see README.md. Never tune gradcli's diagnosis on these Functions.
"""
import torch


def _bags():
    torch.manual_seed(61)
    weight = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    indices = torch.tensor([0, 2, 2, 4, 1, 2, 0, 0])  # bags {0, 2, 2}, {4, 1}, {2, 0, 0}
    offsets = torch.tensor([0, 3, 5])
    return weight, indices, offsets


def _bag_ids(indices, offsets):
    starts = torch.zeros(len(indices), dtype=torch.long)
    starts[offsets[1:]] = 1
    return starts.cumsum(0)


def _bag_sum(ctx, weight, indices, offsets):
    ids = _bag_ids(indices, offsets)
    out = torch.zeros(len(offsets), weight.shape[1], dtype=weight.dtype)
    out.index_add_(0, ids, weight[indices])
    ctx.save_for_backward(indices, ids)
    ctx.rows = weight.shape[0]
    return out


class EmbeddingBagSum(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, indices, offsets):
        return _bag_sum(ctx, weight, indices, offsets)

    @staticmethod
    def backward(ctx, grad_out):
        indices, ids = ctx.saved_tensors
        grad_w = torch.zeros(ctx.rows, grad_out.shape[1], dtype=grad_out.dtype)
        grad_w.index_add_(0, indices, grad_out[ids])
        return grad_w, None, None

    @staticmethod
    def example_inputs():
        return _bags()


class EmbeddingBagSumOverwrites(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "weight",
           "note": "grad_w[indices] = ... keeps one contribution per row; rows 0 and 2 are "
                   "looked up several times"}

    @staticmethod
    def forward(ctx, weight, indices, offsets):
        return _bag_sum(ctx, weight, indices, offsets)

    @staticmethod
    def backward(ctx, grad_out):
        indices, ids = ctx.saved_tensors
        grad_w = torch.zeros(ctx.rows, grad_out.shape[1], dtype=grad_out.dtype)
        grad_w[indices] = grad_out[ids]  # BUG -- index_add_ (accumulate repeated rows)
        return grad_w, None, None

    @staticmethod
    def example_inputs():
        return _bags()


class EmbeddingBagMean(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, indices, offsets):
        ids = _bag_ids(indices, offsets)
        counts = torch.bincount(ids).to(weight.dtype)
        out = torch.zeros(len(offsets), weight.shape[1], dtype=weight.dtype)
        out.index_add_(0, ids, weight[indices])
        ctx.save_for_backward(indices, ids, counts)
        ctx.rows = weight.shape[0]
        return out / counts[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        indices, ids, counts = ctx.saved_tensors
        grad_w = torch.zeros(ctx.rows, grad_out.shape[1], dtype=grad_out.dtype)
        grad_w.index_add_(0, indices, (grad_out / counts[:, None])[ids])
        return grad_w, None, None

    @staticmethod
    def example_inputs():
        return _bags()


def _scatter_inputs():
    torch.manual_seed(62)
    base = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    src = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    return base, src, torch.tensor([1, 3, 1, 0, 3, 3])


class ScatterAddInto(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, base, src, index):
        idx = index[:, None].expand(-1, src.shape[1])
        ctx.save_for_backward(idx)
        return base.scatter_add(0, idx, src)

    @staticmethod
    def backward(ctx, grad_out):
        (idx,) = ctx.saved_tensors
        return grad_out, grad_out.gather(0, idx), None

    @staticmethod
    def example_inputs():
        return _scatter_inputs()


class ScatterAddBaseAsBuffer(torch.autograd.Function):
    bug = {"kind": "zero", "input": "base",
           "note": "the base tensor is treated as a zero-initialised buffer and gets no gradient"}

    @staticmethod
    def forward(ctx, base, src, index):
        idx = index[:, None].expand(-1, src.shape[1])
        ctx.save_for_backward(idx)
        return base.scatter_add(0, idx, src)

    @staticmethod
    def backward(ctx, grad_out):
        (idx,) = ctx.saved_tensors
        return None, grad_out.gather(0, idx), None  # BUG -- base's gradient is grad_out

    @staticmethod
    def example_inputs():
        return _scatter_inputs()


def _index_add_inputs():
    torch.manual_seed(63)
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    src = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    return x, src, torch.tensor([2, 0, 2, 2, 3]), 0.25


class IndexAddScaled(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, src, index, alpha):
        ctx.save_for_backward(index)
        ctx.alpha = alpha
        return x.index_add(0, index, src, alpha=alpha)

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        return grad_out, ctx.alpha * grad_out.index_select(0, index), None, None

    @staticmethod
    def example_inputs():
        return _index_add_inputs()


class IndexAddScaledForgotAlpha(torch.autograd.Function):
    bug = {"kind": "scale", "input": "src",
           "note": "src's gradient leaves out alpha = 0.25 (a factor 4 too large)"}

    @staticmethod
    def forward(ctx, x, src, index, alpha):
        ctx.save_for_backward(index)
        ctx.alpha = alpha
        return x.index_add(0, index, src, alpha=alpha)

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        return grad_out, grad_out.index_select(0, index), None, None  # BUG -- ctx.alpha * ...

    @staticmethod
    def example_inputs():
        return _index_add_inputs()


def _gather_inputs():
    torch.manual_seed(64)
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    idx = torch.tensor([[0, 4, 4, 1], [2, 2, 2, 3], [1, 0, 3, 0]])
    return x, idx


class GatherColumns(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, idx):
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return x.gather(1, idx)

    @staticmethod
    def backward(ctx, grad_out):
        (idx,) = ctx.saved_tensors
        grad_x = torch.zeros(ctx.shape, dtype=grad_out.dtype).scatter_add_(1, idx, grad_out)
        return grad_x, None

    @staticmethod
    def example_inputs():
        return _gather_inputs()


class GatherColumnsScatterOverwrites(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "scatter_ instead of scatter_add_: a column gathered twice in a row keeps "
                   "one gradient"}

    @staticmethod
    def forward(ctx, x, idx):
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return x.gather(1, idx)

    @staticmethod
    def backward(ctx, grad_out):
        (idx,) = ctx.saved_tensors
        grad_x = torch.zeros(ctx.shape, dtype=grad_out.dtype).scatter_(1, idx, grad_out)  # BUG
        return grad_x, None

    @staticmethod
    def example_inputs():
        return _gather_inputs()
