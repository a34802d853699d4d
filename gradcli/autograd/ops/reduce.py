"""Reductions. Each backward brings the incoming gradient back to the input's shape (``_keep``
reinserts reduced dims, broadcasting does the rest) and is written with Tensor ops, so that
double backward works. Each ``forward`` takes ``dim`` as None, an int or a tuple; None and an
empty tuple reduce every dim, as in torch.

On symbols (object arrays of SymPy expressions, ``gradcli.symbolic``) one dtype-kind check sends a
forward to its symbolic side: amax/max are SymPy's Max over each slice (the ``SYMBOLIC_OPS``
"maximum"/"minimum" hooks, folded), exp/log/sqrt are the UNARY table's symbolic rules, and the
max-shift of logsumexp is skipped (there is nothing to overflow). The masks of their backwards are
comparisons through the engine's comparison hook, with the ties split as in the numeric code.
"""
import numpy as np

from gradcli.autograd.function import Function
from gradcli.autograd.ops._base import reduction_dims, wrap_dim
from gradcli.autograd.ops.elementwise import SYMBOLIC_OPS, symbolic_unary
from gradcli.autograd.tensor import Tensor


def _keep(t, in_shape, dims, keepdim):
    """A reduced tensor reshaped as if reduced with keepdim=True (so it broadcasts against the input)."""
    if keepdim:
        return t
    return t.reshape(tuple(1 if i in dims else s for i, s in enumerate(in_shape)))


def _expand_back(g, in_shape, dims, keepdim):
    """Undo a reduction's shape change: reinsert reduced dims (size 1), then broadcast."""
    return _keep(g, in_shape, dims, keepdim).expand(in_shape)


def _count(shape, dims):
    return int(np.prod([shape[d] for d in dims])) if shape else 1


def _float(a):
    return a if a.dtype.kind in "fcO" else a.astype(np.float64)


# ---- the symbolic side of the extremes (object arrays only) ---------------------------------
def _rows(a, dims):
    """``a`` with the dims in ``dims`` moved last and merged: shape (kept..., K)."""
    kept = [d for d in range(a.ndim) if d not in dims]
    moved = a.transpose(kept + list(dims))
    return moved.reshape(moved.shape[:len(kept)] + (-1,))


def _unrows(rows, shape, dims):
    """Undo ``_rows`` for an array of the same (kept..., K) shape."""
    kept = [d for d in range(len(shape)) if d not in dims]
    order = kept + list(dims)
    moved = rows.reshape(tuple(shape[d] for d in order))
    return moved.transpose(np.argsort(order)) if order else moved


def _symbolic_extreme(name, a, dims, keepdim):
    """amax ("maximum") or amin ("minimum") of an object array over ``dims``: the elementwise hook
    (SymPy's Max/Min) folded over each slice; Max(Max(a, b), c) is Max(a, b, c)."""
    rows = _rows(a, dims)
    pick = SYMBOLIC_OPS[name]
    out = np.asarray(rows[..., 0], dtype=object)
    for k in range(1, rows.shape[-1]):
        out = pick(out, rows[..., k])
    if keepdim:
        shape = tuple(1 if i in dims else s for i, s in enumerate(a.shape))
    else:
        shape = tuple(s for i, s in enumerate(a.shape) if i not in dims)
    return np.asarray(out, dtype=object).reshape(shape)


def _symbolic_hits(x, yk):
    """[x == its slice's extreme] through the comparison hook (``x == Max(x, y, ...)`` holds where x
    is the largest: gradcli.symbolic reads it as pairwise comparisons)."""
    return (x == Tensor(yk)).data


def _symbolic_first(a, d, largest):
    """[x_k is the first extreme along ``d``], the element argmax/argmin picks: beyond every earlier
    element strictly and at least as far as every later one (pairwise comparisons through the hook)."""
    rows = _rows(a, (d,))
    mine, other = Tensor(rows[..., :, None]), Tensor(rows[..., None, :])
    strict, weak = (mine > other, mine >= other) if largest else (mine < other, mine <= other)
    earlier = np.tri(rows.shape[-1], k=-1, dtype=bool)  # [k, j]: j < k
    return _unrows(np.where(earlier, strict.data, weak.data).prod(axis=-1), a.shape, (d,))


def _symbolic_tie_weight(x, yk, dims):
    """The numeric ``hit / hit.sum()`` on symbols: where x_i is the extreme, the extremes of its
    slice are the elements equal to x_i, so the count is 1 + sum_j [x_j == x_i] (j != i), which
    stays 1 away from ties instead of a sum of pairwise masks."""
    hit = _symbolic_hits(x, yk)
    rows = _rows(x.data, dims)
    same = (Tensor(rows[..., :, None]) == Tensor(rows[..., None, :])).data.sum(axis=-1)  # [x_i == x_i] = 1
    return hit / _unrows(same, x.data.shape, dims)


class Sum(Function):
    @staticmethod
    def forward(ctx, x, dim=None, keepdim=False):
        dims = reduction_dims(dim, x.data.ndim)
        ctx.in_shape, ctx.dims, ctx.keepdim = x.data.shape, dims, keepdim
        return Tensor(np.sum(x.data, axis=dims, keepdims=keepdim))

    @staticmethod
    def backward(ctx, g):
        return _expand_back(g, ctx.in_shape, ctx.dims, ctx.keepdim), None, None


class Mean(Function):
    @staticmethod
    def forward(ctx, x, dim=None, keepdim=False):
        dims = reduction_dims(dim, x.data.ndim)
        ctx.in_shape, ctx.dims, ctx.keepdim = x.data.shape, dims, keepdim
        ctx.count = _count(x.data.shape, dims)
        return Tensor(np.mean(x.data, axis=dims, keepdims=keepdim))

    @staticmethod
    def backward(ctx, g):
        return _expand_back(g / ctx.count, ctx.in_shape, ctx.dims, ctx.keepdim), None, None


class Prod(Function):
    @staticmethod
    def forward(ctx, x, dim=None, keepdim=False):
        dims = reduction_dims(dim, x.data.ndim)
        ctx.dims, ctx.keepdim = dims, keepdim
        y = Tensor(np.prod(x.data, axis=dims, keepdims=keepdim))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        shape, dims = x.data.shape, ctx.dims
        gk = _keep(g, shape, dims, ctx.keepdim)
        zero = x.data == 0
        if not zero.any():
            return gk * _keep(y, shape, dims, ctx.keepdim) / x, None, None
        # d/dx_i prod = product of the others: with one zero in a slice only that entry gets
        # the product of the non-zeros, with two or more every entry gets 0. (Second derivatives
        # at an exact zero are therefore incomplete: they see only the non-zero entries.)
        from gradcli.autograd.ops.elementwise import Where
        count = zero.sum(axis=dims, keepdims=True)
        x_safe = Where.apply(Tensor(zero), 1.0, x)
        p_nonzero = Prod.apply(x_safe, dims, True)
        at_zero = p_nonzero * Tensor(count == 1)
        elsewhere = p_nonzero / x_safe * Tensor(count == 0)
        return gk * Where.apply(Tensor(zero), at_zero, elsewhere), None, None


class Amax(Function):
    """amax(x, dim): ties share the gradient evenly, as in torch."""

    _reduce = staticmethod(np.max)
    _symbolic = "maximum"  # the SYMBOLIC_OPS hook folded over a slice on symbols

    @classmethod
    def forward(cls, ctx, x, dim=None, keepdim=False):
        dims = reduction_dims(dim, x.data.ndim)
        ctx.dims, ctx.keepdim = dims, keepdim
        if x.data.dtype.kind == "O":
            y = Tensor(_symbolic_extreme(cls._symbolic, x.data, dims, keepdim))
        else:
            y = Tensor(cls._reduce(x.data, axis=dims, keepdims=keepdim))
        ctx.save_for_backward(x, y)
        return y

    @classmethod
    def backward(cls, ctx, g):
        x, y = ctx.saved_tensors
        return _evenly(g, x, y, ctx.dims, ctx.keepdim), None, None


class Amin(Amax):
    _reduce = staticmethod(np.min)
    _symbolic = "minimum"


def _evenly(g, x, y, dims, keepdim):
    """Gradient of an extreme value: shared by the entries equal to it."""
    yk = _keep(y, x.data.shape, dims, keepdim).data
    if x.data.dtype.kind == "O":
        return _keep(g, x.data.shape, dims, keepdim) * Tensor(_symbolic_tie_weight(x, yk, dims))
    hit = x.data == yk
    weight = hit / hit.sum(axis=dims, keepdims=True)
    return _keep(g, x.data.shape, dims, keepdim) * Tensor(weight.astype(x.data.dtype, copy=False))


def along_dim_index(idx, dim):
    """A fancy index picking ``idx`` (same ndim as the tensor) along ``dim``: the tuple that
    turns take_along_axis into ``x[index]``, so that GetItem/IndexBackward do gather/scatter."""
    grids = list(np.indices(idx.shape, sparse=True))
    grids[dim] = idx
    return tuple(grids)


class Max(Function):
    """max(x) (ties share the gradient, like amax) or max(x, dim) -> (values, indices), where
    the gradient goes to the one position in ``indices``, as in torch."""

    _reduce = staticmethod(np.max)
    _arg = staticmethod(np.argmax)
    _symbolic = "maximum"

    @classmethod
    def forward(cls, ctx, x, dim=None, keepdim=False):
        ctx.by_dim = dim is not None
        if dim is None:
            ctx.dims, ctx.keepdim = tuple(range(x.data.ndim)), False
            if x.data.dtype.kind == "O":
                y = Tensor(_symbolic_extreme(cls._symbolic, x.data, ctx.dims, False))
            else:
                y = Tensor(cls._reduce(x.data))
            ctx.save_for_backward(x, y)
            return y
        d = wrap_dim(dim, x.data.ndim)
        a = x.data if x.data.ndim else x.data.reshape(1)
        if a.dtype.kind == "O":
            return cls._symbolic_by_dim(ctx, x, a, d, keepdim)
        idx = np.expand_dims(cls._arg(a, axis=d), d)
        values = np.take_along_axis(a, idx, axis=d)
        idx_out = idx
        if not keepdim or not x.data.ndim:  # a 0-d input gives 0-d results even with keepdim
            values, idx_out = values.squeeze(d), idx.squeeze(d)
        ctx.in_shape, ctx.keep_shape, ctx.index = x.data.shape, idx.shape, along_dim_index(idx, d)
        indices = Tensor(idx_out.astype(np.int64))
        ctx.mark_non_differentiable(indices)
        return Tensor(values), indices

    @classmethod
    def _symbolic_by_dim(cls, ctx, x, a, d, keepdim):
        """max(x, dim) on symbols: the values are SymPy's Max along ``dim``; the gradient goes to
        the first element equal to it, the one argmax picks (a mask, not an index: ``index`` is
        None), and ``indices`` is that position as an expression, sum_k k·[x_k is the first max]."""
        yk = _symbolic_extreme(cls._symbolic, a, (d,), True)
        first = _symbolic_first(a, d, cls._symbolic == "maximum")
        n = a.shape[d]
        positions = np.arange(n, dtype=object).reshape((n,) + (1,) * (a.ndim - d - 1))
        idx = np.sum(first * positions, axis=d, keepdims=True)
        values, idx_out = yk, idx
        if not keepdim or not x.data.ndim:  # a 0-d input gives 0-d results even with keepdim
            values, idx_out = values.squeeze(d), idx.squeeze(d)
        ctx.in_shape, ctx.keep_shape, ctx.index, ctx.first = x.data.shape, yk.shape, None, first
        indices = Tensor(np.asarray(idx_out, dtype=object))
        ctx.mark_non_differentiable(indices)
        return Tensor(values), indices

    @classmethod
    def backward(cls, ctx, g, _g_indices=None):
        if not ctx.by_dim:
            x, y = ctx.saved_tensors
            return _evenly(g, x, y, ctx.dims, False), None, None
        gk = g.reshape(ctx.keep_shape)
        if ctx.index is None:  # traced on symbols: the first-extreme mask
            gx = gk * Tensor(ctx.first)
            return (gx if ctx.in_shape else gx.reshape(())), None, None
        from gradcli.autograd.ops.shape import IndexBackward
        shape = ctx.in_shape if ctx.in_shape else (1,)
        gx = IndexBackward.apply(gk, shape, ctx.index)
        return (gx if ctx.in_shape else gx.reshape(())), None, None


class Min(Max):
    _reduce = staticmethod(np.min)
    _arg = staticmethod(np.argmin)
    _symbolic = "minimum"


class LogSumExp(Function):
    @staticmethod
    def forward(ctx, x, dim=None, keepdim=False):
        dims = reduction_dims(dim, x.data.ndim)
        ctx.dims, ctx.keepdim = dims, keepdim
        a = _float(x.data)
        if a.dtype.kind == "O":  # symbols: log(sum(exp(x))) as it is, no max-shift to compare
            y = symbolic_unary("log", np.sum(symbolic_unary("exp", a), axis=dims, keepdims=True))
        else:
            m = np.max(a, axis=dims, keepdims=True) if a.size else np.zeros((1,) * a.ndim, a.dtype)
            m = np.where(np.isfinite(m), m, 0)  # all -inf (or an inf) must not become nan
            with np.errstate(divide="ignore"):
                y = np.log(np.sum(np.exp(a - m), axis=dims, keepdims=True)) + m
        y = Tensor(y if keepdim else y.reshape(tuple(s for i, s in enumerate(a.shape) if i not in dims)))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        shape = x.data.shape
        return _keep(g, shape, ctx.dims, ctx.keepdim) * (x - _keep(y, shape, ctx.dims, ctx.keepdim)).exp(), None, None


def _var(a, dims, dof, keepdim):
    centered = a - a.mean(axis=dims, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):  # dof == 0 gives inf or nan, as in torch
        return np.sum(centered * centered, axis=dims, keepdims=keepdim) / dof


class Var(Function):
    """var(x, dim, correction): sum((x - mean)^2) / (N - correction)."""

    @staticmethod
    def forward(ctx, x, dim=None, correction=1, keepdim=False):
        dims = reduction_dims(dim, x.data.ndim)
        a = _float(x.data)
        ctx.dims, ctx.keepdim = dims, keepdim
        ctx.dof = max(0, _count(a.shape, dims) - correction)
        ctx.save_for_backward(x)
        return Tensor(_var(a, dims, ctx.dof, keepdim))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        centered = x - x.mean(dim=ctx.dims, keepdim=True)
        scale = 2.0 / ctx.dof if ctx.dof else float("inf")
        return _keep(g, x.data.shape, ctx.dims, ctx.keepdim) * centered * scale, None, None, None


class Std(Function):
    @staticmethod
    def forward(ctx, x, dim=None, correction=1, keepdim=False):
        dims = reduction_dims(dim, x.data.ndim)
        a = _float(x.data)
        ctx.dims, ctx.keepdim = dims, keepdim
        ctx.dof = max(0, _count(a.shape, dims) - correction)
        v = _var(a, dims, ctx.dof, keepdim)
        y = Tensor(symbolic_unary("sqrt", np.asarray(v, dtype=object)) if a.dtype.kind == "O" else np.sqrt(v))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        from gradcli.autograd.ops.elementwise import Where
        x, y = ctx.saved_tensors
        yk = _keep(y, x.data.shape, ctx.dims, ctx.keepdim)
        centered = x - x.mean(dim=ctx.dims, keepdim=True)
        # d std = (x - mean) / ((N - correction) std); 0 where std == 0, as torch does
        flat = Tensor(yk.data == 0)
        safe = Where.apply(flat, 1.0, yk)  # no 0/0 (and no numpy warning) in the masked entries
        scale = Where.apply(flat, 0.0, _keep(g, x.data.shape, ctx.dims, ctx.keepdim) / (safe * ctx.dof))
        return scale * centered, None, None, None


class Norm(Function):
    """Vector p-norm over ``dim`` (p = 2, 1, inf, -inf, 0 or any number)."""

    @staticmethod
    def forward(ctx, x, p=2, dim=None, keepdim=False):
        dims = reduction_dims(dim, x.data.ndim)
        ctx.p, ctx.dims, ctx.keepdim = p, dims, keepdim
        a = np.abs(_float(x.data))
        symbolic = a.dtype.kind == "O"  # symbols: SymPy's sqrt and Max/Min instead of numpy's
        if p == 2:
            y = np.sum(a * a, axis=dims, keepdims=keepdim)
            y = symbolic_unary("sqrt", np.asarray(y, dtype=object)) if symbolic else np.sqrt(y)
        elif p == 1:
            y = np.sum(a, axis=dims, keepdims=keepdim)
        elif p == float("inf"):
            y = _symbolic_extreme("maximum", a, dims, keepdim) if symbolic else np.max(a, axis=dims, keepdims=keepdim)
        elif p == float("-inf"):
            y = _symbolic_extreme("minimum", a, dims, keepdim) if symbolic else np.min(a, axis=dims, keepdims=keepdim)
        elif p == 0:
            y = np.sum(a != 0, axis=dims, keepdims=keepdim).astype(a.dtype)
        else:
            y = np.sum(a ** p, axis=dims, keepdims=keepdim) ** (1.0 / p)
        y = Tensor(y)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        from gradcli.autograd.ops.elementwise import Where
        x, y = ctx.saved_tensors
        p, dims, shape = ctx.p, ctx.dims, x.data.shape
        gk = _keep(g, shape, dims, ctx.keepdim)
        yk = _keep(y, shape, dims, ctx.keepdim)
        if p == 0:
            return x * 0 * gk, None, None, None
        if p == 1:
            return gk * x.sign(), None, None, None
        if p in (float("inf"), float("-inf")):
            return x.sign() * _evenly(g, x.abs(), y, dims, ctx.keepdim), None, None, None
        # the gradient is taken as 0 where the norm is 0 (and, for p < 1, where x is 0), as in
        # torch; the masked entries are computed from 1s so that no 0/0 arises
        zero_k = Tensor(yk.data == 0)
        safe_y = Where.apply(zero_k, 1.0, yk)
        if p == 2:
            scaled = x / safe_y
        else:
            # x |x|^(p-2) / y^(p-1), written with sign so that p < 2 does not divide by |x| = 0
            abs_x = x.abs()
            if p < 1:
                abs_x = Where.apply(Tensor(x.data == 0), 1.0, abs_x)
            scaled = x.sign() * abs_x ** (p - 1) / safe_y ** (p - 1)
        return gk * Where.apply(zero_k, 0.0, scaled), None, None, None


class Cumsum(Function):
    @staticmethod
    def forward(ctx, x, dim):
        d = wrap_dim(dim, x.data.ndim)
        ctx.dim = d
        return Tensor(np.cumsum(x.data, axis=d) if x.data.ndim else x.data.copy())

    @staticmethod
    def backward(ctx, g):
        # each input reaches every later output: a cumulative sum of g from the end
        if g.data.ndim == 0:
            return g, None
        rev = (slice(None),) * ctx.dim + (slice(None, None, -1),)
        return Cumsum.apply(g[rev], ctx.dim)[rev], None
