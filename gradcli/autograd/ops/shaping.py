"""torch's shape and linear-algebra ops beyond shape.py/linalg.py: broadcast_to, roll, tile, repeat_interleave, diagonal, diag_embed, unflatten, meshgrid, mv, addmm, baddbmm, einsum, tensordot, kron, cross, cdist, argsort, median, unique, searchsorted, bucketize.

Every differentiable op is a Function written with the public API (forward on numpy arrays,
backward in Tensor ops, so double backward and symbolic tracing come with it) and is registered as
``gradcli.<name>`` and, where torch has one, as a Tensor method (``register`` in ops/__init__.py).
Most are compositions of existing ops (expand, reshape, getitem); roll, diagonal and diag_embed
have Functions of their own. The linear-algebra half lives in linalg_more.py.
"""
import builtins

import numpy as np

from gradcli.autograd.function import Function
from gradcli.autograd.ops import _tensor, register
from gradcli.autograd.ops._base import NotSymbolic, wrap_dim
from gradcli.autograd.ops.join import Gather
from gradcli.autograd.ops.linalg import _diag_index
from gradcli.autograd.ops.more import _return_type, return_types
from gradcli.autograd.ops.shape import Expand, Reshape, view_of
from gradcli.autograd.tensor import Tensor


def _sizes(args):
    """torch's ``f(x, 2, 3)`` / ``f(x, (2, 3))`` / ``f(x, torch.Size(...))`` spellings."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    return tuple(int(s) for s in args)


# ---- broadcasting ---------------------------------------------------------------------------
def _broadcast_shape(shapes):
    ndim = builtins.max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        size = 1
        for s in shapes:
            d = s[i - (ndim - len(s))] if i >= ndim - len(s) else 1
            if d != 1:
                if size != 1 and d != size:
                    raise RuntimeError(f"The size of tensor a ({size}) must match the size of tensor b ({d}) at "
                                       f"non-singleton dimension {i}")
                size = d
        out.append(size)
    return tuple(out)


def broadcast_to(x, shape):
    shape = _sizes((shape,)) if not isinstance(shape, int) else (int(shape),)
    a = x.data.shape
    lead = len(shape) - len(a)
    if lead < 0:
        raise RuntimeError(f"The number of sizes provided ({len(shape)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({len(a)})")
    for i, s in enumerate(a):
        t = shape[lead + i]
        if s != 1 and t != -1 and t != s:
            raise RuntimeError(f"The expanded size of the tensor ({t}) must match the existing size ({s}) at "
                               f"non-singleton dimension {lead + i}.  Target sizes: {list(shape)}.  "
                               f"Tensor sizes: {list(a)}")
    return Expand.apply(x, shape)


def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    tensors = [t if isinstance(t, Tensor) else _tensor(t) for t in tensors]
    shape = _broadcast_shape([t.data.shape for t in tensors])
    return tuple(Expand.apply(t, shape) for t in tensors)


def broadcast_shapes(*shapes):
    return tuple(_broadcast_shape([(s,) if isinstance(s, int) else tuple(s) for s in shapes]))


# ---- roll, tile, repeat_interleave, unflatten -----------------------------------------------
class Roll(Function):
    """torch.roll along ``dims`` (the flattened tensor when dims is None); backward rolls back."""

    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        if dims is None:
            return Tensor(np.roll(x.data.reshape(-1), shifts[0]).reshape(x.data.shape))
        return Tensor(np.roll(x.data, shifts, axis=dims))

    @staticmethod
    def backward(ctx, g):
        return Roll.apply(g, tuple(-s for s in ctx.shifts), ctx.dims), None, None


def roll(x, shifts, dims=None):
    shifts = (int(shifts),) if isinstance(shifts, int) else tuple(int(s) for s in shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return Roll.apply(x, shifts, None)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    return Roll.apply(x, shifts, tuple(wrap_dim(d, x.data.ndim) for d in dims))


def tile(x, *dims):
    dims = _sizes(dims)
    dims = (1,) * (x.data.ndim - len(dims)) + dims
    from gradcli.autograd.ops.more import repeat
    return repeat(x, dims)


def repeat_interleave(x, repeats=None, dim=None, *, output_size=None):
    if repeats is None:  # torch.repeat_interleave(repeats): each index i repeated repeats[i] times
        r = np.asarray(x.data)
        return Tensor(np.repeat(np.arange(r.shape[0], dtype=np.int64), r))
    if dim is None:
        x, dim = x.reshape(-1), 0
    d = wrap_dim(dim, x.data.ndim)
    n = x.data.shape[d] if x.data.ndim else 1
    if isinstance(repeats, Tensor) and repeats.data.ndim > 0:
        r = repeats.data
        if r.ndim != 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if r.shape[0] != n and r.shape[0] != 1:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{r.shape[0]} and input.size(0) = {n}")
        if (r < 0).any():
            raise RuntimeError("repeats can not be negative")
        index = np.repeat(np.arange(n), np.broadcast_to(r, (n,)))
        return x[(slice(None),) * d + (index,)]
    r = int(repeats.data) if isinstance(repeats, Tensor) else int(repeats)
    if r < 0:
        raise RuntimeError("Repeats must be non-negative")
    if x.data.ndim == 0:
        x = x.reshape(1)
    if r == 1:  # a new tensor, as in torch (expand and reshape would give a read-only view of x)
        return x.clone()
    shape = x.data.shape
    # each slice along d gets a new axis of size r after it: expand, then merge the two axes
    out = x.unsqueeze(d + 1).expand(*shape[:d + 1], r, *shape[d + 1:])
    return out.reshape(*shape[:d], n * r, *shape[d + 1:])


def unflatten(x, dim, sizes):
    d = wrap_dim(dim, x.data.ndim)
    sizes = tuple(int(s) for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = x.data.shape[d]
    known = int(np.prod([s for s in sizes if s != -1]))
    if sizes.count(-1) > 1 or (-1 not in sizes and known != n) or (-1 in sizes and (known == 0 or n % known)):
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} "
                           f"({n}) in the input tensor")
    if -1 in sizes:
        sizes = tuple(n // known if s == -1 else s for s in sizes)
    return Reshape.apply(x, x.data.shape[:d] + sizes + x.data.shape[d + 1:])


def meshgrid(*tensors, indexing=None):
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    if not tensors:
        raise RuntimeError("torch.meshgrid: Expected at least one tensor")
    for t in tensors:
        if t.data.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.data.ndim}D")
    if len({t.data.dtype for t in tensors}) > 1:
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    sizes = [t.data.size for t in tensors]
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:  # 'xy' is 'ij' with the first two inputs (and output axes) swapped
        sizes[0], sizes[1] = sizes[1], sizes[0]
        tensors = (tensors[1], tensors[0]) + tuple(tensors[2:])
    out = []
    for i, t in enumerate(tensors):
        shape = [1] * len(tensors)
        shape[i] = sizes[i]
        out.append(Expand.apply(Reshape.apply(t, tuple(shape)), tuple(sizes)))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


# ---- diagonals ------------------------------------------------------------------------------
def _diag_axes(ndim, dim1, dim2):
    d1, d2 = wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


def _diagonal_view(a, offset, dim1, dim2):
    """np.diagonal as a view that is writable when ``a`` is (np.diagonal's is read-only), so that
    in-place ops on x.diagonal() write into x, as in torch."""
    planes = np.moveaxis(a, (dim1, dim2), (-2, -1))
    r0, c0 = builtins.max(-offset, 0), builtins.max(offset, 0)
    n = builtins.max(0, builtins.min(a.shape[dim1] - r0, a.shape[dim2] - c0))
    corner = planes[..., r0:r0 + n, c0:c0 + n]
    return np.lib.stride_tricks.as_strided(corner, shape=corner.shape[:-2] + (n,),
                                           strides=corner.strides[:-2] + (corner.strides[-2] + corner.strides[-1],),
                                           writeable=a.flags.writeable)


class Diagonal(Function):
    """torch.diagonal: a view holding diagonal ``offset`` of the (dim1, dim2) planes as the last dim."""

    @staticmethod
    def forward(ctx, x, offset, dim1, dim2):
        ctx.args = (x.data.shape, offset, dim1, dim2)
        return view_of(x, _diagonal_view(x.data, offset, dim1, dim2))

    @staticmethod
    def backward(ctx, g):
        return DiagonalScatter.apply(g, *ctx.args), None, None, None


class DiagonalScatter(Function):
    """Zeros of ``shape`` with ``x`` (last dim) on diagonal ``offset`` of the (dim1, dim2) planes:
    diag_embed, and diagonal's backward."""

    @staticmethod
    def forward(ctx, x, shape, offset, dim1, dim2):
        ctx.args = (offset, dim1, dim2)
        out = np.zeros(shape, dtype=x.data.dtype)
        planes = np.moveaxis(out, (dim1, dim2), (-2, -1))  # a writable view of out
        rows, cols = _diag_index(shape[dim1], shape[dim2], offset)
        planes[..., rows, cols] = x.data
        return Tensor(out)

    @staticmethod
    def backward(ctx, g):
        return Diagonal.apply(g, *ctx.args), None, None, None, None


def diagonal(x, offset=0, dim1=0, dim2=1):
    d1, d2 = _diag_axes(x.data.ndim, dim1, dim2)
    return Diagonal.apply(x, int(offset), d1, d2)


def diag_embed(x, offset=0, dim1=-2, dim2=-1):
    ndim = x.data.ndim + 1
    d1, d2 = _diag_axes(ndim, dim1, dim2)
    offset = int(offset)
    n = (x.data.shape[-1] if x.data.ndim else 1) + abs(offset)
    rest = list(x.data.shape[:-1])
    shape = []
    for i in range(ndim):
        shape.append(n if i in (d1, d2) else rest.pop(0))
    return DiagonalScatter.apply(x if x.data.ndim else x.reshape(1), tuple(shape), offset, d1, d2)


# ---- order-dependent ops: indices, no gradient (median's values have one) -------------------
_ORDER_DEPENDS = "it orders the elements by value, so which element lands where depends on the data"


def _not_symbolic(x, op):
    if isinstance(x, Tensor) and x.data.dtype.kind == "O":
        raise NotSymbolic(op, _ORDER_DEPENDS)


def argsort(x, dim=-1, descending=False, stable=False):
    _not_symbolic(x, "argsort")
    d = wrap_dim(dim, x.data.ndim)
    a = x.data if x.data.ndim else x.data.reshape(1)
    if descending:
        # a stable descending order keeps equal elements in their original order, as torch does
        idx = np.flip(np.argsort(np.flip(a, d), axis=d, kind="stable"), d)
        idx = a.shape[d] - 1 - idx
    else:
        idx = np.argsort(a, axis=d, kind="stable")
    return Tensor(idx.reshape(x.data.shape).astype(np.int64))


return_types.median = _return_type("median")


def median(x, dim=None, keepdim=False):
    _not_symbolic(x, "median")
    a = x.data
    if dim is None:
        flat = a.reshape(-1)
        if flat.size == 0:
            return Tensor(np.asarray(np.nan, dtype=a.dtype)) if a.dtype.kind == "f" else x.reshape(-1)[0]
        if flat.dtype.kind == "f" and np.isnan(flat).any():
            i = int(np.argmax(np.isnan(flat)))
        else:
            i = int(np.argsort(flat, kind="stable")[(flat.size - 1) // 2])
        return x.reshape(-1)[i]
    d = wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        return return_types.median(x.clone(), Tensor(np.asarray(0, dtype=np.int64)))
    n = a.shape[d]
    if n == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    order = np.argsort(a, axis=d, kind="stable")  # NaN sorts last
    idx = np.take(order, [(n - 1) // 2], axis=d)
    if a.dtype.kind == "f":  # a slice holding a NaN has median NaN, at its first NaN
        nan = np.isnan(a)
        has_nan = nan.any(axis=d, keepdims=True)
        idx = np.where(has_nan, np.argmax(nan, axis=d, keepdims=True), idx)
    values = Gather.apply(x, d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), np.squeeze(idx, d)
    return return_types.median(values, Tensor(idx.astype(np.int64)))


def unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    _not_symbolic(x, "unique")
    a = x.data
    if dim is None:
        values, inverse, counts = np.unique(a.reshape(-1), return_inverse=True, return_counts=True,
                                            equal_nan=False)  # torch keeps every NaN
        inverse = inverse.reshape(a.shape)
    else:
        d = wrap_dim(dim, a.ndim)
        values, inverse, counts = np.unique(a, return_inverse=True, return_counts=True, axis=d)
        inverse = inverse.reshape(-1)
    out = [Tensor(values)]
    if return_inverse:
        out.append(Tensor(inverse.astype(np.int64)))
    if return_counts:
        out.append(Tensor(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def _side(right, side):
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        return side
    return "right" if right else "left"


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None, sorter=None):
    _not_symbolic(sorted_sequence, "searchsorted")
    _not_symbolic(values, "searchsorted")
    side = _side(right, side)
    seq = sorted_sequence.data
    scalar = not isinstance(values, Tensor)
    v = np.asarray(values if scalar else values.data)
    srt = None if sorter is None else np.asarray(sorter.data if isinstance(sorter, Tensor) else sorter)
    dtype = np.int32 if out_int32 else np.int64
    if seq.ndim <= 1:
        out = np.searchsorted(seq.reshape(-1), v, side=side, sorter=srt)
        return Tensor(np.asarray(out, dtype=dtype))
    if scalar or v.shape[:-1] != seq.shape[:-1]:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(seq.shape)} and input value tensor {list(v.shape)}")
    out = np.empty(v.shape, dtype=dtype)
    for i in np.ndindex(seq.shape[:-1]):
        out[i] = np.searchsorted(seq[i], v[i], side=side, sorter=None if srt is None else srt[i])
    return Tensor(out)


def bucketize(x, boundaries, *, out_int32=False, right=False):
    if boundaries.data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.data.ndim})")
    return searchsorted(boundaries, x, out_int32=out_int32, right=right)


_METHODS = {
    "broadcast_to": broadcast_to, "roll": roll, "tile": tile, "repeat_interleave": repeat_interleave,
    "diagonal": diagonal, "diag_embed": diag_embed, "unflatten": unflatten, "argsort": argsort,
    "median": median, "unique": unique,
}
_NOT_METHODS = {
    "broadcast_tensors": broadcast_tensors, "broadcast_shapes": broadcast_shapes, "meshgrid": meshgrid,
    "searchsorted": searchsorted, "bucketize": bucketize,
}
for _name, _fn in _METHODS.items():
    register(_name, _fn)
for _name, _fn in _NOT_METHODS.items():
    register(_name, _fn, method=False)

from gradcli.autograd.ops import linalg_more  # noqa: E402,F401,I001  (mv, addmm, einsum, tensordot, kron, cross, cdist)
