"""Embeddings, gather, scatter_add and index_add with hand-written backward passes (plain torch).

Every index has repeats (in middle rows, not only the last), so a backward that overwrites
instead of accumulating is wrong. Blind corpus: see README.md.
"""
import torch

PAD = 0


def _randn(*shape, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


# ----------------------------------------------------------------------------- embedding
def _embedding_inputs():
    return torch.tensor([2, 0, 2, 3, 2, 1]), _randn(6, 3, seed=51)


class Embedding(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, indices, weight):
        ctx.save_for_backward(indices)
        ctx.rows = weight.shape[0]
        return weight[indices]

    @staticmethod
    def backward(ctx, grad_out):
        (indices,) = ctx.saved_tensors
        grad_w = grad_out.new_zeros(ctx.rows, grad_out.shape[1])
        grad_w.index_add_(0, indices, grad_out)
        return None, grad_w

    @staticmethod
    def example_inputs():
        return _embedding_inputs()


class EmbeddingRowAssign(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "weight",
           "note": "grad_w[indices] = grad_out keeps one of the repeated rows' gradients "
                   "instead of summing them"}

    @staticmethod
    def forward(ctx, indices, weight):
        ctx.save_for_backward(indices)
        ctx.rows = weight.shape[0]
        return weight[indices]

    @staticmethod
    def backward(ctx, grad_out):
        (indices,) = ctx.saved_tensors
        grad_w = grad_out.new_zeros(ctx.rows, grad_out.shape[1])
        grad_w[indices] = grad_out  # BUG
        return None, grad_w

    @staticmethod
    def example_inputs():
        return _embedding_inputs()


class PaddedEmbedding(torch.autograd.Function):
    """Rows looked up at the padding index come out as zeros."""
    bug = None

    @staticmethod
    def forward(ctx, indices, weight):
        keep = (indices != PAD).to(weight.dtype)[:, None]
        ctx.save_for_backward(indices, keep)
        ctx.rows = weight.shape[0]
        return weight[indices] * keep

    @staticmethod
    def backward(ctx, grad_out):
        indices, keep = ctx.saved_tensors
        grad_w = grad_out.new_zeros(ctx.rows, grad_out.shape[1])
        grad_w.index_add_(0, indices, grad_out * keep)
        return None, grad_w

    @staticmethod
    def example_inputs():
        return _embedding_inputs()


class PaddedEmbeddingPadRowGetsGradient(torch.autograd.Function):
    bug = {"kind": "region", "input": "weight",
           "note": "backward forgets the padding mask: the padding row receives gradient although "
                   "forward zeroes its lookups"}

    @staticmethod
    def forward(ctx, indices, weight):
        keep = (indices != PAD).to(weight.dtype)[:, None]
        ctx.save_for_backward(indices, keep)
        ctx.rows = weight.shape[0]
        return weight[indices] * keep

    @staticmethod
    def backward(ctx, grad_out):
        indices, keep = ctx.saved_tensors
        grad_w = grad_out.new_zeros(ctx.rows, grad_out.shape[1])
        grad_w.index_add_(0, indices, grad_out)  # BUG
        return None, grad_w

    @staticmethod
    def example_inputs():
        return torch.tensor([2, 0, 2, 3, 0, 1]), _randn(6, 3, seed=52)


# -------------------------------------------------------------------------------- gather
def _gather_inputs():
    index = torch.tensor([[0, 2, 2], [1, 1, 0], [2, 0, 2]])
    return _randn(3, 5, seed=53), index


class GatherColumns(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return x.gather(1, index)

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        grad_x = grad_out.new_zeros(ctx.shape).scatter_add(1, index, grad_out)
        return grad_x, None

    @staticmethod
    def example_inputs():
        return _gather_inputs()


class GatherColumnsScatterOverwrites(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "scatter instead of scatter_add: a column gathered twice in a row gets only one "
                   "of its two gradients"}

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return x.gather(1, index)

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        grad_x = grad_out.new_zeros(ctx.shape).scatter(1, index, grad_out)  # BUG
        return grad_x, None

    @staticmethod
    def example_inputs():
        return _gather_inputs()


class GatherColumnsScatteredAlongRows(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the gradient is scattered along dim 0, the wrong axis, while forward gathered "
                   "along dim 1 (the index values are < 3, so no index error)"}

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return x.gather(1, index)

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        grad_x = grad_out.new_zeros(ctx.shape).scatter_add(0, index, grad_out)  # BUG
        return grad_x, None

    @staticmethod
    def example_inputs():
        return _gather_inputs()


# --------------------------------------------------------------------------- scatter_add
def _scatter_inputs():
    index = torch.tensor([[0, 3, 3], [1, 1, 4], [2, 0, 2]])
    return _randn(3, 5, seed=54), index, _randn(3, 3, seed=55)


class ScatterAddInto(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, base, index, src):
        ctx.save_for_backward(index)
        return base.scatter_add(1, index, src)

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        return grad_out, None, grad_out.gather(1, index)

    @staticmethod
    def example_inputs():
        return _scatter_inputs()


class ScatterAddIntoNoBaseGradient(torch.autograd.Function):
    bug = {"kind": "zero", "input": "base",
           "note": "returns None for the base tensor (as if it were always a fresh zeros buffer)"}

    @staticmethod
    def forward(ctx, base, index, src):
        ctx.save_for_backward(index)
        return base.scatter_add(1, index, src)

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        return None, None, grad_out.gather(1, index)  # BUG

    @staticmethod
    def example_inputs():
        return _scatter_inputs()


# ----------------------------------------------------------------------------- index_add
ALPHA = 2.5


def _index_add_inputs():
    return _randn(4, 3, seed=56), torch.tensor([1, 3, 1, 1, 0]), _randn(5, 3, seed=57)


class IndexAddScaled(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, index, src):
        ctx.save_for_backward(index)
        return x.index_add(0, index, src, alpha=ALPHA)

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        return grad_out, None, ALPHA * grad_out.index_select(0, index)

    @staticmethod
    def example_inputs():
        return _index_add_inputs()


class IndexAddScaledForgetsAlpha(torch.autograd.Function):
    bug = {"kind": "scale", "input": "src",
           "note": "the source gradient leaves out the alpha that forward multiplies src by"}

    @staticmethod
    def forward(ctx, x, index, src):
        ctx.save_for_backward(index)
        return x.index_add(0, index, src, alpha=ALPHA)

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        return grad_out, None, grad_out.index_select(0, index)  # BUG

    @staticmethod
    def example_inputs():
        return _index_add_inputs()
