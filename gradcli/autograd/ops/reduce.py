"""Reductions. Each backward broadcasts the incoming gradient back over the reduced dims."""
import numpy as np

from gradcli.autograd.function import Function
from gradcli.autograd.ops._base import normalize_dims
from gradcli.autograd.tensor import Tensor


def _expand_back(g, in_shape, dims, keepdim):
    """Undo a reduction's shape change: reinsert reduced dims (size 1), then broadcast."""
    if not keepdim:
        kept = [1 if i in dims else s for i, s in enumerate(in_shape)]
        g = g.reshape(tuple(kept))
    return g.expand(in_shape)


class Sum(Function):
    @staticmethod
    def forward(ctx, x, dim=None, keepdim=False):
        dims = normalize_dims(dim, x.data.ndim)
        ctx.in_shape, ctx.dims, ctx.keepdim = x.data.shape, dims, keepdim
        return Tensor(np.sum(x.data, axis=dims, keepdims=keepdim))

    @staticmethod
    def backward(ctx, g):
        return _expand_back(g, ctx.in_shape, ctx.dims, ctx.keepdim), None, None


class Mean(Function):
    @staticmethod
    def forward(ctx, x, dim=None, keepdim=False):
        dims = normalize_dims(dim, x.data.ndim)
        ctx.in_shape, ctx.dims, ctx.keepdim = x.data.shape, dims, keepdim
        ctx.count = int(np.prod([x.data.shape[d] for d in dims])) if x.data.ndim else 1
        return Tensor(np.mean(x.data, axis=dims, keepdims=keepdim))

    @staticmethod
    def backward(ctx, g):
        return _expand_back(g / ctx.count, ctx.in_shape, ctx.dims, ctx.keepdim), None, None
