"""torch's indexing ops beyond getitem/gather: scatter, scatter_add, index_add, index_fill, index_put, masked_fill/masked_select/masked_scatter, take, and their in-place variants.

Every differentiable op is a Function written with the public API (forward on numpy arrays,
backward in Tensor ops, so double backward and symbolic tracing come with it) and is registered as
``gradcli.<name>`` and, where torch has one, as a Tensor method (``register`` in ops/__init__.py).
In-place variants (``scatter_``, ``index_add_``, ...) run the out-of-place op through
``inplace.apply``, as ``add_`` does.
"""
import warnings

import numpy as np

from gradcli.autograd import inplace
from gradcli.autograd.function import Function
from gradcli.autograd.grad_mode import _state
from gradcli.autograd.ops import register
from gradcli.autograd.ops._base import data_of, unbroadcast, wrap_dim
from gradcli.autograd.ops.elementwise import Where
from gradcli.autograd.ops.reduce import along_dim_index
from gradcli.autograd.ops.shape import GetItem, IndexBackward, Reshape, SetItem, _element
from gradcli.autograd.tensor import Tensor

_TORCH_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
                "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _name(dtype):
    return _TORCH_NAMES.get(str(dtype), str(dtype))


def _symbolic(*arrays):
    return any(getattr(a, "dtype", None) is not None and a.dtype.kind == "O" for a in arrays)


def _int_index(index, message, error=RuntimeError):
    idx = np.asarray(data_of(index))
    if idx.dtype.kind not in "iu":
        raise error(message.format(_name(idx.dtype)))
    return idx.astype(np.int64, copy=False)


def _check_bounds(idx, size, dim, negative=False, error=RuntimeError):
    lo = -size if negative else 0
    bad = idx[(idx < lo) | (idx >= size)]
    if bad.size:
        raise error(f"index {int(bad.flat[0])} is out of bounds for dimension {dim} with size {size}")


def _pad(g, shape, sub):
    """``g`` (the gradient of ``src[sub]``) placed into zeros of ``src``'s shape."""
    return g if g.data.shape == tuple(shape) else IndexBackward.apply(g, tuple(shape), sub)


def _mask_out(g, mask):
    """``g`` with the positions where ``mask`` is True zeroed (they were overwritten)."""
    return g * Tensor(~mask)


# ---- scatter / scatter_add ------------------------------------------------------------------
def _scatter_positions(x, dim, index, src):
    """(positions in x, the slice of src that is read) for scatter along ``dim``, validated as torch does."""
    idx = _int_index(index, "scatter(): Expected dtype int32/int64 for index")  # scatter_add's message too
    xd = x.data
    d = wrap_dim(dim, xd.ndim)
    if idx.ndim != xd.ndim and idx.size:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    sd = data_of(src) if isinstance(src, Tensor) else None
    if sd is not None:
        if idx.ndim != sd.ndim and idx.size:
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
        if not _symbolic(xd, sd) and sd.dtype != xd.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if idx.size:
        too_big = any(k != d and idx.shape[k] > xd.shape[k] for k in range(idx.ndim))
        if sd is not None and any(idx.shape[k] > sd.shape[k] for k in range(idx.ndim)):
            too_big = True
        if too_big:
            message = (f"Expected index {list(idx.shape)} to be no larger than self {list(xd.shape)} apart from "
                       f"dimension {d}")
            raise RuntimeError(message + (f" and to be no larger size than src {list(sd.shape)}" if sd is not None
                                          else ""))
        _check_bounds(idx, xd.shape[d] if xd.ndim else 1, d)
    if xd.ndim == 0:
        return (), ()
    return along_dim_index(idx, d), tuple(slice(0, n) for n in idx.shape)


class Scatter(Function):
    """``out = x`` with ``out[index[i][j]][j] = src[i][j]`` (dim 0); src a Tensor or a Python scalar.
    ``reduce`` ('add' / 'multiply') combines instead of replacing, without a derivative, as in torch."""

    @staticmethod
    def forward(ctx, x, dim, index, src, reduce=None):
        pos, sub = _scatter_positions(x, dim, index, src)
        out = x.data.copy()
        vals = src.data[sub] if isinstance(src, Tensor) else src
        if out.ndim == 0:
            vals = _element(np.asarray(vals))
        if reduce is None:
            out[pos] = vals
        else:
            (np.add if reduce == "add" else np.multiply).at(out, pos, vals)
        mask = np.zeros(out.shape, dtype=bool)
        mask[pos] = True
        ctx.pos, ctx.sub, ctx.mask = pos, sub, mask
        ctx.src_shape = src.data.shape if isinstance(src, Tensor) else None
        return Tensor(out)

    @staticmethod
    def backward(ctx, g):
        gx = _mask_out(g, ctx.mask) if ctx.needs_input_grad[0] else None
        gs = _pad(g[ctx.pos], ctx.src_shape, ctx.sub) if ctx.needs_input_grad[3] else None
        return gx, None, None, gs, None


class ScatterAdd(Function):
    """``out = x`` with ``out[index[i][j]][j] += src[i][j]`` (dim 0); repeated indices accumulate."""

    @staticmethod
    def forward(ctx, x, dim, index, src):
        if not isinstance(src, Tensor):
            raise TypeError(f"scatter_add(): argument 'src' (position 4) must be Tensor, not {type(src).__name__}")
        pos, sub = _scatter_positions(x, dim, index, src)
        out = x.data.copy()
        np.add.at(out, pos, src.data[sub])
        ctx.pos, ctx.sub, ctx.src_shape = pos, sub, src.data.shape
        return Tensor(out)

    @staticmethod
    def backward(ctx, g):
        gs = _pad(g[ctx.pos], ctx.src_shape, ctx.sub) if ctx.needs_input_grad[3] else None
        return g, None, None, gs


def scatter(x, dim, index, src=None, *, value=None, reduce=None):
    src = value if src is None else src
    if src is None:
        raise TypeError("scatter() missing required argument 'src' (or 'value')")
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        if isinstance(src, Tensor):
            warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed "
                          "in a future PyTorch release. Use torch.scatter_reduce instead for more reduction "
                          "options.", UserWarning, stacklevel=2)
        if _state.enabled and (x.requires_grad or (isinstance(src, Tensor) and src.requires_grad)):
            raise RuntimeError("derivative for aten::scatter is not implemented")
    return Scatter.apply(x, dim, index, src, reduce)


def scatter_add(x, dim, index, src):
    return ScatterAdd.apply(x, dim, index, src)


# ---- index_add / index_fill -----------------------------------------------------------------
class IndexAdd(Function):
    """``out = x`` with ``out[..., index[k], ...] += source[..., k, ...]`` along ``dim``."""

    @staticmethod
    def forward(ctx, x, dim, index, source):
        idx = _int_index(index, "index_add_(): Expected dtype int32/int64 for index but got: {}")
        d = wrap_dim(dim, x.data.ndim)
        if idx.ndim > 1:
            raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: {idx.ndim} with type: "
                             f"{_name(idx.dtype)} and size: {list(idx.shape)}")
        xd, sd = x.data, source.data
        if not _symbolic(xd, sd) and xd.dtype != sd.dtype:
            raise RuntimeError(f"index_add_(): self ({_name(xd.dtype)}) and source ({_name(sd.dtype)}) must have "
                               "the same scalar type")
        n_src = sd.shape[d] if sd.ndim else 1
        if idx.size != n_src:
            raise RuntimeError(f"index_add_(): Number of indices ({idx.size}) should be equal to source.size(dim): "
                               f"({n_src}), for dim: {d}")
        if sd.ndim != xd.ndim or any(k != d and sd.shape[k] != xd.shape[k] for k in range(xd.ndim)):
            raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified dimension. "
                               f"Got self.shape = {list(xd.shape)} source.shape = {list(sd.shape)}")
        _check_bounds(idx, xd.shape[d] if xd.ndim else 1, d)
        ctx.index = (slice(None),) * d + (idx.reshape(-1),) if xd.ndim else ()
        out = xd.copy()
        np.add.at(out, ctx.index, sd)
        return Tensor(out)

    @staticmethod
    def backward(ctx, g):
        return g, None, None, g[ctx.index] if ctx.needs_input_grad[3] else None


def index_add(x, dim, index, source, *, alpha=1):
    return IndexAdd.apply(x, dim, index, source if alpha == 1 else source * alpha)


class IndexFill(Function):
    """``out = x`` with every slice ``index[k]`` along ``dim`` set to ``value`` (a scalar or a 0-d Tensor)."""

    @staticmethod
    def forward(ctx, x, dim, index, value):
        idx = _int_index(index, "index_fill_(): Expected dtype int64 for index.", IndexError)
        d = wrap_dim(dim, x.data.ndim)
        if idx.ndim > 1:
            raise RuntimeError("Index has to be a vector/scalar")
        v = data_of(value)
        if isinstance(value, Tensor) and v.ndim:
            raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{v.ndim} dimension(s).")
        xd = x.data
        _check_bounds(idx, xd.shape[d] if xd.ndim else 1, d, negative=True, error=IndexError)
        mask = np.zeros(xd.shape, dtype=bool)
        mask[(slice(None),) * d + (idx.reshape(-1),) if xd.ndim else ()] = True
        out = xd.copy()
        out[mask] = _element(v)
        ctx.mask = mask
        ctx.v_dtype = v.dtype if isinstance(value, Tensor) else None
        return Tensor(out)

    @staticmethod
    def backward(ctx, g):
        gx = _mask_out(g, ctx.mask) if ctx.needs_input_grad[0] else None
        gv = None
        if ctx.needs_input_grad[3]:
            gv = (g * Tensor(ctx.mask)).sum()
            if ctx.v_dtype.kind != "O" and gv.data.dtype != ctx.v_dtype:
                gv = gv.to(ctx.v_dtype)
        return gx, None, None, gv


def index_fill(x, dim, index, value):
    return IndexFill.apply(x, dim, index, value)


# ---- masked ops -----------------------------------------------------------------------------
def _bool_mask(mask, message):
    m = np.asarray(data_of(mask))
    if m.dtype != np.bool_:
        raise RuntimeError(message.format(_name(m.dtype)))
    return m


def masked_select(x, mask):
    m = _bool_mask(mask, "masked_select: expected BoolTensor for mask")
    shape = np.broadcast_shapes(x.data.shape, m.shape)
    xb = x if x.data.shape == shape else x.expand(*shape)
    return GetItem.apply(xb, np.ascontiguousarray(np.broadcast_to(m, shape)))


class MaskedScatter(Function):
    """``out = x`` (broadcast with mask) with the True positions of ``mask`` filled, in order, from the
    leading elements of ``source``."""

    @staticmethod
    def forward(ctx, x, mask, source):
        m = _bool_mask(mask, "masked_scatter_ only supports boolean masks, but got mask with dtype {}")
        xd, sd = x.data, source.data
        if not _symbolic(xd, sd) and xd.dtype != sd.dtype:
            raise RuntimeError("masked_scatter: expected self and source to have same dtypes but got"
                               f"{_name(xd.dtype)} and {_name(sd.dtype)}")
        shape = np.broadcast_shapes(xd.shape, m.shape)
        m = np.ascontiguousarray(np.broadcast_to(m, shape))
        n = int(m.sum())
        if sd.size < n:
            raise RuntimeError("Number of elements of source < number of ones in mask")
        out = np.broadcast_to(xd, shape).copy()
        out[m] = sd.reshape(-1)[:n]
        ctx.mask, ctx.n, ctx.x_shape, ctx.s_shape = m, n, xd.shape, sd.shape
        return Tensor(out)

    @staticmethod
    def backward(ctx, g):
        gx = unbroadcast(_mask_out(g, ctx.mask), ctx.x_shape) if ctx.needs_input_grad[0] else None
        gs = None
        if ctx.needs_input_grad[2]:
            size = int(np.prod(ctx.s_shape))
            gs = _pad(g[ctx.mask], (size,), (slice(0, ctx.n),)).reshape(ctx.s_shape)
        return gx, None, gs


def masked_scatter(x, mask, source):
    return MaskedScatter.apply(x, mask, source)


# ---- take / index_put / put -----------------------------------------------------------------
def _flat_bounds(idx, numel):
    bad = idx[(idx < -numel) | (idx >= numel)]
    if bad.size:
        raise IndexError(f"out of range: tried to access index {int(bad.flat[0])} on a tensor of {numel} elements.")


def take(x, index):
    idx = _int_index(index, "take(): Expected a long tensor for index, but got {}")
    _flat_bounds(idx, x.data.size)
    return GetItem.apply(Reshape.apply(x, (-1,)), idx)


class IndexPutAdd(Function):
    """``index_put(..., accumulate=True)``: ``out = x`` with ``values`` added at ``x[indices]`` (repeats add up)."""

    @staticmethod
    def forward(ctx, x, index, values):
        out = x.data.copy()
        np.add.at(out, index, data_of(values))
        ctx.index, ctx.v_shape = index, np.shape(data_of(values))
        return Tensor(out)

    @staticmethod
    def backward(ctx, g):
        gv = unbroadcast(g[ctx.index], ctx.v_shape) if ctx.needs_input_grad[2] else None
        return g, None, gv


def _put_indices(x, indices):
    if isinstance(indices, Tensor) or not isinstance(indices, (tuple, list)):
        raise TypeError("index_put(): argument 'indices' must be tuple of Tensors")
    if len(indices) > max(x.data.ndim, 0):
        raise IndexError(f"too many indices for tensor of dimension {x.data.ndim} (got {len(indices)})")
    arrays, dim = [], 0
    for i in indices:
        a = np.asarray(data_of(i))
        if a.dtype == np.bool_:
            for k in range(a.ndim):
                if a.shape[k] != x.data.shape[dim + k]:
                    raise IndexError(f"The shape of the mask {list(a.shape)} at index {k} does not match the shape "
                                     f"of the indexed tensor {list(x.data.shape)} at index {dim + k}")
            dim += a.ndim
        elif a.dtype.kind in "iu":
            a = a.astype(np.int64, copy=False)
            _check_bounds(a, x.data.shape[dim], dim, negative=True, error=IndexError)
            dim += 1
        else:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        arrays.append(a)
    return tuple(arrays)


def index_put(x, indices, values, accumulate=False):
    index = _put_indices(x, indices)
    v = data_of(values)
    if isinstance(values, Tensor) and not _symbolic(x.data, v) and v.dtype != x.data.dtype:
        raise RuntimeError("Index put requires the source and destination dtypes match, got "
                           f"{_name(x.data.dtype)} for the destination and {_name(v.dtype)} for the source.")
    target = np.shape(np.empty(x.data.shape, dtype=bool)[index])
    try:
        fits = np.broadcast_shapes(np.shape(v), target) == target
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(np.shape(v))} cannot be broadcast to "
                           f"indexing result of shape {list(target)}")
    return IndexPutAdd.apply(x, index, values) if accumulate else SetItem.apply(x, index, values)


def put(x, index, source, accumulate=False):
    idx = _int_index(index, "put_(): Expected a long tensor for index, but got {}")
    s = data_of(source)
    if idx.size != np.size(s):
        raise IndexError("put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {np.size(s)}, index.numel() = {idx.size}")
    _flat_bounds(idx, x.data.size)
    flat = Reshape.apply(x, (-1,))
    src = source.reshape(-1) if isinstance(source, Tensor) else source
    return Reshape.apply(index_put(flat, (Tensor(idx.reshape(-1)),), src, accumulate), x.data.shape)


# ---- in-place variants ----------------------------------------------------------------------
def _diagonal_index(shape, wrap):
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    n = min(shape)
    if len(shape) == 2 and wrap and shape[0] > shape[1]:
        flat = np.arange(0, shape[0] * shape[1], shape[1] + 1)
        return np.unravel_index(flat, shape)
    return (np.arange(n),) * len(shape)


def fill_diagonal_(x, fill_value, wrap=False):
    index = _diagonal_index(x.data.shape, wrap)
    if _state.enabled and x.requires_grad and x.grad_fn is None and x._base is None:
        # torch writes through a strided view of x: it reports the view
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    return inplace.apply(x, lambda a: SetItem.apply(a, index, fill_value))


def _in_place(fn, name):
    def method(self, *args, **kwargs):
        tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, Tensor)]
        return inplace.apply(self, lambda a, *_: fn(a, *args, **kwargs), *tensors)

    method.__name__ = name
    return method


def _masked_fill(x, mask, value):
    m = np.asarray(data_of(mask))
    if m.dtype != np.bool_:  # torch names the dtype as a C type here
        c_name = {"int64": "long int", "int32": "int", "uint8": "unsigned char", "float32": "float"}
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           + c_name.get(str(m.dtype), str(m.dtype)))
    shape = np.broadcast_shapes(m.shape, x.data.shape)
    if shape != x.data.shape:
        raise RuntimeError(f"output with shape {list(x.data.shape)} doesn't match the broadcast shape {list(shape)}")
    if isinstance(value, Tensor) and value.data.ndim:
        raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.data.ndim} dimension(s).")
    out = Where.apply(mask, value, x)
    return out if out.data.dtype == x.data.dtype or _symbolic(out.data) else out.to(x.data.dtype)


def clamp_min_(x, min):
    return inplace.apply(x, lambda a: a.clamp(min=min))


def clamp_max_(x, max):
    return inplace.apply(x, lambda a: a.clamp(max=max))


_FUNCTIONS = {
    "scatter": scatter, "scatter_add": scatter_add, "index_add": index_add, "index_fill": index_fill,
    "masked_select": masked_select, "masked_scatter": masked_scatter, "take": take, "index_put": index_put,
    "put": put, "clamp_min_": clamp_min_, "clamp_max_": clamp_max_, "fill_diagonal_": fill_diagonal_,
}
_IN_PLACE = {"scatter_": scatter, "scatter_add_": scatter_add, "index_add_": index_add, "index_fill_": index_fill,
             "masked_scatter_": masked_scatter, "index_put_": index_put, "put_": put, "masked_fill_": _masked_fill}
for _name_, _fn in _FUNCTIONS.items():
    register(_name_, _fn)
for _name_, _fn in _IN_PLACE.items():
    register(_name_, _in_place(_fn, _name_))
