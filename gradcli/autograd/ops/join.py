"""Ops that join tensors or cut one into several: cat, stack, split/chunk, unbind, gather,
repeat. Backward of a join slices the gradient; backward of a cut joins the gradients."""
import numpy as np

from gradcli.autograd.function import Function
from gradcli.autograd.ops._base import wrap_dim
from gradcli.autograd.ops.reduce import along_dim_index
from gradcli.autograd.ops.shape import IndexBackward, view_of
from gradcli.autograd.tensor import Tensor


def _along(dim, index):
    """An index selecting ``index`` (an int or a slice) along ``dim``."""
    return (slice(None),) * dim + (index,)


class Cat(Function):
    """``Cat.apply(dim, *tensors)``: the tensors are separate arguments so that each is an edge."""

    @staticmethod
    def forward(ctx, dim, *tensors):
        arrays = [t.data for t in tensors]
        d = wrap_dim(dim, arrays[0].ndim)
        ctx.dim, ctx.sizes = d, [a.shape[d] for a in arrays]
        return Tensor(np.concatenate(arrays, axis=d))

    @staticmethod
    def backward(ctx, g):
        grads, start = [None], 0
        for size, needed in zip(ctx.sizes, ctx.needs_input_grad[1:]):
            grads.append(g[_along(ctx.dim, slice(start, start + size))] if needed else None)
            start += size
        return tuple(grads)


class Stack(Function):
    """``Stack.apply(dim, *tensors)``."""

    @staticmethod
    def forward(ctx, dim, *tensors):
        arrays = [t.data for t in tensors]
        d = wrap_dim(dim, arrays[0].ndim + 1)
        ctx.dim = d
        return Tensor(np.stack(arrays, axis=d))

    @staticmethod
    def backward(ctx, g):
        return (None,) + tuple(g[_along(ctx.dim, i)] if needed else None
                               for i, needed in enumerate(ctx.needs_input_grad[1:]))


class Split(Function):
    """Pieces of sizes ``sizes`` along ``dim`` (views of x, as in torch); split and chunk."""

    @staticmethod
    def forward(ctx, x, sizes, dim):
        d = wrap_dim(dim, x.data.ndim)
        ctx.dim = d
        bounds = np.cumsum(sizes)[:-1]
        return tuple(view_of(x, piece) for piece in np.split(x.data, bounds, axis=d))

    @staticmethod
    def backward(ctx, *grads):
        # grads of unused pieces arrive as zeros (materialized by the engine)
        return Cat.apply(ctx.dim, *grads), None, None


class Unbind(Function):
    @staticmethod
    def forward(ctx, x, dim):
        d = wrap_dim(dim, x.data.ndim)
        ctx.dim = d
        return tuple(view_of(x, x.data[_along(d, i)]) for i in range(x.data.shape[d]))

    @staticmethod
    def backward(ctx, *grads):
        return Stack.apply(ctx.dim, *grads), None


class Gather(Function):
    """``out[i][j][k] = x[index[i][j][k]][j][k]`` for dim 0 (and so on): a fancy index,
    whose backward scatter-adds (repeated indices accumulate)."""

    @staticmethod
    def forward(ctx, x, dim, index):
        idx = np.asarray(index.data if isinstance(index, Tensor) else index)
        if idx.dtype.kind not in "iu":
            raise RuntimeError(f"gather(): Expected dtype int64 for index, got {idx.dtype}")
        if idx.ndim != x.data.ndim:
            raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
        d = wrap_dim(dim, x.data.ndim)
        for k in range(idx.ndim):
            if k != d and idx.shape[k] > x.data.shape[k]:
                raise RuntimeError(f"Size does not match at dimension {k} expected index {list(idx.shape)} to be "
                                   f"smaller than self {list(x.data.shape)} apart from dimension {d}")
        ctx.in_shape, ctx.index = x.data.shape, along_dim_index(idx, d)
        return Tensor(x.data[ctx.index])

    @staticmethod
    def backward(ctx, g):
        return IndexBackward.apply(g, ctx.in_shape, ctx.index), None, None


class Repeat(Function):
    """``x.repeat(*sizes)``: tile x; backward sums the copies."""

    @staticmethod
    def forward(ctx, x, sizes):
        if len(sizes) < x.data.ndim:
            raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                               "dimensions of tensor")
        shape = (1,) * (len(sizes) - x.data.ndim) + x.data.shape
        ctx.in_shape, ctx.shape, ctx.sizes = x.data.shape, shape, sizes
        return Tensor(np.tile(x.data.reshape(shape), sizes))

    @staticmethod
    def backward(ctx, g):
        # view the result as (r0, s0, r1, s1, ...) and sum the r axes
        split = tuple(v for pair in zip(ctx.sizes, ctx.shape) for v in pair)
        g = g.reshape(split).sum(dim=tuple(range(0, len(split), 2)))
        return g.reshape(ctx.in_shape), None
