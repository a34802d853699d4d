"""Embeddings, gathers and scatters (issue 17 catalogue: the rules' own tuning corpus)."""
import torch
from torch.autograd import Function


def _table_and_ids(seed):
    torch.manual_seed(seed)
    return torch.randn(5, 3, dtype=torch.float64), torch.tensor([1, 3, 1, 0, 3, 1])


class EmbeddingAssignsRows(Function):
    bug = {"kind": "not_accumulated", "input": "weight", "note": "dw[ids] = g"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids]

    @staticmethod
    def backward(ctx, g):
        (ids,) = ctx.saved_tensors
        dw = torch.zeros(ctx.rows, g.shape[1], dtype=g.dtype)
        dw[ids] = g  # BUG
        return dw, None

    @staticmethod
    def example_inputs():
        return _table_and_ids(51)


class EmbeddingIndexCopy(Function):
    bug = {"kind": "not_accumulated", "input": "weight", "note": "index_copy_ instead of index_add_"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return torch.index_select(weight, 0, ids)

    @staticmethod
    def backward(ctx, g):
        (ids,) = ctx.saved_tensors
        return torch.zeros(ctx.rows, g.shape[1], dtype=g.dtype).index_copy_(0, ids, g), None  # BUG

    @staticmethod
    def example_inputs():
        return _table_and_ids(52)


class IndexSelectPlusEquals(Function):
    bug = {"kind": "not_accumulated", "input": "x", "note": "dx[idx] += g does not accumulate duplicates"}

    @staticmethod
    def forward(ctx, x, idx):
        ctx.save_for_backward(idx)
        ctx.n = x.shape[0]
        return x[idx]

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        dx = g.new_zeros(ctx.n)
        dx[idx] += g  # BUG
        return dx, None

    @staticmethod
    def example_inputs():
        torch.manual_seed(53)
        return torch.randn(6, dtype=torch.float64), torch.tensor([0, 4, 4, 2, 0, 4, 5])


class EmbeddingPaddingRowNotZeroed(Function):
    bug = {"kind": "region", "input": "weight", "note": "padding row 0 gets a gradient"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        out = weight[ids]
        return out * (ids != 0).to(weight.dtype)[:, None]

    @staticmethod
    def backward(ctx, g):
        (ids,) = ctx.saved_tensors
        dw = torch.zeros(ctx.rows, g.shape[1], dtype=g.dtype)
        dw.index_add_(0, ids, g)  # BUG
        return dw, None

    @staticmethod
    def example_inputs():
        torch.manual_seed(54)
        return torch.randn(4, 3, dtype=torch.float64), torch.tensor([0, 2, 1, 0, 3, 2])


class EmbeddingBagMeanAsSum(Function):
    bug = {"kind": "scale", "input": "weight", "note": "mean-bag backward without /bag size"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids].mean(1)  # ids (B, 3): mean of 3 rows per bag

    @staticmethod
    def backward(ctx, g):
        (ids,) = ctx.saved_tensors
        dw = torch.zeros(ctx.rows, g.shape[1], dtype=g.dtype)
        for j in range(ids.shape[1]):
            dw.index_add_(0, ids[:, j], g)  # BUG
        return dw, None

    @staticmethod
    def example_inputs():
        torch.manual_seed(55)
        return torch.randn(5, 2, dtype=torch.float64), torch.tensor([[0, 1, 4], [2, 2, 3]])


class PermutationGathersInBackward(Function):
    bug = {"kind": "transposed", "input": "x", "note": "g[perm] where the inverse permutation is needed"}

    @staticmethod
    def forward(ctx, x, perm):
        ctx.save_for_backward(perm)
        return x[perm]

    @staticmethod
    def backward(ctx, g):
        (perm,) = ctx.saved_tensors
        return g[perm], None  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(56)
        return torch.randn(6, dtype=torch.float64), torch.tensor([2, 0, 5, 1, 3, 4])


class GatherScatterNotAdd(Function):
    bug = {"kind": "not_accumulated", "input": "x", "note": "scatter_ instead of scatter_add_"}

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return torch.gather(x, 1, index)

    @staticmethod
    def backward(ctx, g):
        (index,) = ctx.saved_tensors
        dx = torch.zeros(ctx.shape, dtype=g.dtype).scatter_(1, index, g)  # BUG
        return dx, None

    @staticmethod
    def example_inputs():
        torch.manual_seed(57)
        return torch.randn(3, 4, dtype=torch.float64), torch.tensor([[0, 0, 2], [1, 3, 1], [2, 2, 2]])


class EmbeddingOk(Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids]

    @staticmethod
    def backward(ctx, g):
        (ids,) = ctx.saved_tensors
        dw = torch.zeros(ctx.rows, g.shape[1], dtype=g.dtype)
        dw.index_add_(0, ids, g)
        return dw, None

    @staticmethod
    def example_inputs():
        return _table_and_ids(58)
