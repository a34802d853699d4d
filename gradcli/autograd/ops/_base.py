"""Helpers every op module shares: argument coercion, torch's type promotion, and the single
broadcast reduction."""
import numpy as np

from gradcli.autograd.tensor import Tensor


class NotSymbolic(TypeError):
    """A built-in op called on symbols (an object array of SymPy expressions) whose result depends
    on the values themselves: an order (sort), a position (argmax). gradcli.symbolic reports
    ``op`` and ``why`` as the reason the Function is not traceable."""

    def __init__(self, op, why):
        self.op, self.why = op, why
        super().__init__(f"the built-in op {op} cannot run on symbols: {why}")


def data_of(x):
    """The array behind a Tensor, or a Python/numpy scalar as is."""
    return x.data if type(x) is Tensor else x


def as_tensor_like(x, like):
    if isinstance(x, Tensor):
        return x
    return Tensor(np.asarray(x, dtype=like.data.dtype if np.isscalar(x) else None))


# torch's type categories: a higher category always wins, whatever the operands' shapes
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def promoted(a, b):
    """The arrays (or scalars) for a binary op on ``a`` and ``b``, cast the way torch promotes.

    NumPy 2 promotes like torch except in two cases, both common in float32 code: a 0-d
    tensor does not widen a dimensioned one of the same category (``x32 * tensor(2.)`` stays
    float32), and a float tensor meeting an integer tensor keeps its own float dtype
    (``x32 + int64`` is float32, not float64). NumPy scalars count as Python scalars."""
    da = a.data if type(a) is Tensor else a
    db = b.data if type(b) is Tensor else b
    ta, tb = type(da) is np.ndarray, type(db) is np.ndarray
    if ta and tb:
        if da.dtype == db.dtype:
            return da, db
        ca, cb = _CATEGORY.get(da.dtype.kind), _CATEGORY.get(db.dtype.kind)
        if ca is None or cb is None:  # object arrays (symbolic tracing) keep NumPy's rules,
            if da.dtype.kind == "b":  # except that a bool mask multiplies as 0/1 (SymPy refuses True)
                da = da.astype(np.int8)
            elif db.dtype.kind == "b":
                db = db.astype(np.int8)
            return da, db
        if ca != cb:
            return (da, db.astype(da.dtype)) if ca > cb else (da.astype(db.dtype), db)
        if (da.ndim == 0) != (db.ndim == 0):
            return (da, db.astype(da.dtype)) if db.ndim == 0 else (da.astype(db.dtype), db)
        return da, db
    if ta and isinstance(db, np.generic):
        db = db.item()
    elif tb and isinstance(da, np.generic):
        da = da.item()
    return da, db


def unbroadcast(g, shape):
    """Sum a gradient of a broadcast result down to ``shape`` (the one reduction every
    broadcasting op's backward uses). Written with Tensor ops so that it records a graph
    under create_graph."""
    if g.data.shape == shape:
        return g
    lead = g.data.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and g.data.shape[lead + i] != 1)
    if axes:
        g = g.sum(dim=axes, keepdim=True)
    if lead or g.data.shape != shape:
        g = g.reshape(shape)
    return g


def normalize_dims(dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (tuple, list)):
        return tuple(sorted(_wrap_dim(d, ndim) for d in dim))
    return (_wrap_dim(dim, ndim),)


def reduction_dims(dim, ndim):
    """Dims a reduction acts on: None and an empty tuple/list mean every dim, as in torch.
    A 0-d tensor accepts dim 0 or -1 and has nothing to reduce: ()."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    dims = normalize_dims(dim, ndim)
    return dims if ndim else ()


def wrap_dim(d, ndim):
    """One dim index, negative counted from the end, range-checked as torch does."""
    return _wrap_dim(d, ndim)


def _wrap_dim(d, ndim):
    d = int(d)
    size = max(ndim, 1)  # a 0-d tensor accepts dim 0 and -1, as in torch
    if not -size <= d < size:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-size}, {size - 1}], "
                         f"but got {d})")
    return d % size if ndim else 0
