"""Shape ops: views and copies whose backward only moves gradient entries around."""
import numpy as np

from gradcli.autograd.function import Function
from gradcli.autograd.tensor import Tensor


def view_of(x, arr):
    """A result sharing x's storage shares its version counter (an in-place change to either shows).
    Bounds overlap is enough here (np.may_share_memory): ``arr`` is either a numpy view of x
    or freshly allocated, and the exact test (np.shares_memory) can cost far more than the op."""
    out = Tensor(arr)
    arr = out.data  # indexing one element of an object array (symbolic tracing) gives the bare element
    if arr.size and x.data.size and np.may_share_memory(arr, x.data):
        out._share_storage(x)  # same version counter; remembers the base for in-place on views
    return out


_view_of = view_of


class Reshape(Function):
    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.data.shape
        return _view_of(x, x.data.reshape(shape))

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape), None


class Permute(Function):
    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return _view_of(x, x.data.transpose(dims))

    @staticmethod
    def backward(ctx, g):
        return g.permute(tuple(np.argsort(ctx.dims))), None


class Expand(Function):
    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.data.shape
        shape = tuple(x.data.shape[i - (len(shape) - x.data.ndim)] if s == -1 else s for i, s in enumerate(shape))
        return _view_of(x, np.broadcast_to(x.data, shape))

    @staticmethod
    def backward(ctx, g):
        from gradcli.autograd.ops._base import unbroadcast
        return unbroadcast(g, ctx.in_shape), None


class GetItem(Function):
    @staticmethod
    def forward(ctx, x, index):
        ctx.in_shape, ctx.in_dtype, ctx.index = x.data.shape, x.data.dtype, index
        return _view_of(x, x.data[index])

    @staticmethod
    def backward(ctx, g):
        return IndexBackward.apply(g, ctx.in_shape, ctx.index), None


class IndexBackward(Function):
    """Scatter-add a gradient back into the indexed positions (integer-array indices may repeat)."""

    @staticmethod
    def forward(ctx, g, shape, index):
        ctx.index = index
        out = np.zeros(shape, dtype=g.data.dtype)
        if _repeats_possible(index):
            np.add.at(out, index, g.data)
        else:
            # basic indices and masks select each position once: plain assignment
            out[index] = g.data if out.dtype.kind != "O" else _element(g.data)
        return Tensor(out)

    @staticmethod
    def backward(ctx, gg):
        return gg[ctx.index], None, None


def _element(value):
    """``value`` to assign into an object array (symbolic tracing): a 0-d array as its element,
    since numpy would store the 0-d array itself in the object slot."""
    if type(value) is np.ndarray and value.ndim == 0:
        return value[()]
    return value


def _repeats_possible(index):
    """Whether an index can select a position twice (it holds an integer array)."""
    parts = index if isinstance(index, tuple) else (index,)
    for p in parts:
        if isinstance(p, (list, np.ndarray)) and np.asarray(p).dtype.kind in "iu":
            return True
    return False


class SetItem(Function):
    """``x[index] = v`` as an out-of-place op (Tensor.__setitem__ writes the result in place)."""

    @staticmethod
    def forward(ctx, x, index, v):
        from gradcli.autograd.ops._base import data_of
        ctx.index = index
        ctx.v_shape = np.shape(data_of(v))
        out = x.data.copy()
        value = data_of(v)
        out[index] = value if out.dtype.kind != "O" else _element(value)
        return Tensor(out)

    @staticmethod
    def backward(ctx, g):
        from gradcli.autograd.ops._base import unbroadcast
        gx = None
        if ctx.needs_input_grad[0]:
            mask = np.ones(g.data.shape, dtype=bool)
            mask[ctx.index] = False
            gx = g * Tensor(mask)
        gv = unbroadcast(g[ctx.index], ctx.v_shape) if ctx.needs_input_grad[2] else None
        return gx, None, gv


class Clone(Function):
    @staticmethod
    def forward(ctx, x):
        return Tensor(x.data.copy())

    @staticmethod
    def backward(ctx, g):
        return g


class Cast(Function):
    @staticmethod
    def forward(ctx, x, dtype):
        ctx.in_dtype = x.data.dtype
        if x.data.dtype.kind == "O":  # symbolic tracing: expressions have no float dtype to cast to
            return Tensor(x.data.copy())
        return Tensor(x.data.astype(dtype))

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.in_dtype), None


class Fill(Function):
    """Every element replaced by ``value`` (zero_/fill_/uniform_ go through it): no gradient to x."""

    @staticmethod
    def forward(ctx, x, value):
        out = np.empty_like(x.data)
        out[...] = value
        return Tensor(out)

    @staticmethod
    def backward(ctx, g):
        return g * 0, None


class CopyInto(Function):
    """``x.copy_(src)``: the result is src broadcast to x's shape and dtype."""

    @staticmethod
    def forward(ctx, x, src):
        from gradcli.autograd.ops._base import data_of
        ctx.src_shape, ctx.src_dtype = np.shape(data_of(src)), getattr(data_of(src), "dtype", None)
        out = np.empty_like(x.data)
        out[...] = data_of(src)
        return Tensor(out)

    @staticmethod
    def backward(ctx, g):
        from gradcli.autograd.ops._base import unbroadcast
        gs = unbroadcast(g, ctx.src_shape) if ctx.needs_input_grad[1] else None
        if gs is not None and ctx.src_dtype is not None and gs.dtype != ctx.src_dtype:
            gs = gs.to(ctx.src_dtype)
        return (g * 0 if ctx.needs_input_grad[0] else None), gs


def unwrap_index(index):
    """Tensors inside an index become arrays (torch allows x[idx_tensor])."""
    if isinstance(index, Tensor):
        return index.data
    if isinstance(index, tuple):
        return tuple(i.data if isinstance(i, Tensor) else i for i in index)
    if isinstance(index, list):
        return np.asarray([i.data if isinstance(i, Tensor) else i for i in index])
    return index
