"""torch's functions over the ops of reduce, activation, join and linalg: argument handling
(torch's overloads, dim/keepdim, dtype=, the axis= alias) and registration as ``gradcli.<name>``
and as Tensor methods."""
import builtins
import math
from collections import namedtuple

import numpy as np

from gradcli.autograd.ops import _tensor, register
from gradcli.autograd.ops._base import NotSymbolic, wrap_dim
from gradcli.autograd.ops.activation import LogSoftmax, Softmax
from gradcli.autograd.ops.elementwise import Maximum, Minimum, Where
from gradcli.autograd.ops.join import Cat, Gather, Repeat, Split, Stack, Unbind
from gradcli.autograd.ops.linalg import bmm, diag, dot, mm, outer, trace
from gradcli.autograd.ops.reduce import Amax, Amin, Cumsum, LogSumExp, Max, Min, Norm, Prod, Std, Var
from gradcli.autograd.tensor import Tensor

_INF = float("inf")


def _cast(x, dtype):
    return x if dtype is None else x.to(dtype)


def _dim(dim, axis):
    return axis if dim is None and axis is not None else dim


# ---- values with indices: torch.return_types.max and friends -------------------------------
def _return_type(name):
    base = namedtuple(name, ["values", "indices"])

    def __repr__(self):
        return f"torch.return_types.{name}(\nvalues={self.values!r},\nindices={self.indices!r})"

    return type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__module__": "torch.return_types"})


class return_types:  # noqa: N801  (torch.return_types is a module; a namespace is enough here)
    max = _return_type("max")
    min = _return_type("min")
    sort = _return_type("sort")
    topk = _return_type("topk")


# ---- reductions -----------------------------------------------------------------------------
def prod(x, dim=None, keepdim=False, *, dtype=None, axis=None):
    return Prod.apply(_cast(x, dtype), _dim(dim, axis), keepdim)


def amax(x, dim=(), keepdim=False, *, axis=None):
    return Amax.apply(x, _dim(dim, axis), keepdim)


def amin(x, dim=(), keepdim=False, *, axis=None):
    return Amin.apply(x, _dim(dim, axis), keepdim)


def _extreme(fn, binary, result_type):
    def extreme(x, dim=None, keepdim=False, *, axis=None, other=None):
        dim = _dim(dim, axis)
        if isinstance(dim, Tensor) or other is not None:  # max(a, b): elementwise
            return binary.apply(x, dim if other is None else other)
        if dim is None:
            if x.data.size == 0:
                raise RuntimeError(f"{result_type.__name__}(): Expected reduction dim to be specified for "
                                   "input.numel() == 0. Specify the reduction dim with the 'dim' argument.")
            return fn.apply(x)
        values, indices = fn.apply(x, dim, keepdim)
        return result_type(values, indices)

    extreme.__name__ = result_type.__name__
    return extreme


max = _extreme(Max, Maximum, return_types.max)
min = _extreme(Min, Minimum, return_types.min)


def _arg(np_arg):
    def arg(x, dim=None, keepdim=False, *, axis=None):
        dim = _dim(dim, axis)
        a = x.data
        if a.dtype.kind == "O":
            raise NotSymbolic(np_arg.__name__, "the position of the extreme depends on the values (max(x, dim) "
                              "gives the values, and a gradient mask, on symbols)")
        if dim is None:
            out = np.asarray(np_arg(a))
            return Tensor((out.reshape((1,) * a.ndim) if keepdim else out).astype(np.int64))
        d = wrap_dim(dim, a.ndim)
        if a.ndim == 0:
            return Tensor(np.asarray(0, dtype=np.int64))
        return Tensor(np_arg(a, axis=d, keepdims=keepdim).astype(np.int64))

    arg.__name__ = np_arg.__name__
    return arg


argmax = _arg(np.argmax)
argmin = _arg(np.argmin)


def logsumexp(x, dim, keepdim=False):
    return LogSumExp.apply(_tensor(x), dim, keepdim)


def _correction(dim, unbiased, correction):
    """torch's var/std overloads: (dim, unbiased, keepdim), (unbiased) and correction=."""
    if isinstance(dim, bool):  # var(x, False): the positional argument is `unbiased`
        dim, unbiased = None, dim
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    elif unbiased is not None:
        raise RuntimeError("var/std: cannot pass both unbiased and correction")
    return dim, correction


def var(x, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None):
    dim, correction = _correction(_dim(dim, axis), unbiased, correction)
    return Var.apply(x, dim, correction, keepdim)


def std(x, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None):
    dim, correction = _correction(_dim(dim, axis), unbiased, correction)
    return Std.apply(x, dim, correction, keepdim)


def norm(x, p="fro", dim=None, keepdim=False, dtype=None):
    """torch.norm: a vector p-norm over ``dim`` (all dims by default); 'fro' is the 2-norm
    of the entries. The nuclear norm is not provided."""
    x = _cast(x, dtype)
    if p == "fro" or p is None:
        p = 2
    elif p == "nuc":
        raise NotImplementedError("norm(p='nuc') is not provided by gradcli")
    elif isinstance(p, str):
        raise RuntimeError(f"norm: unknown p {p!r}")
    return Norm.apply(x, builtins.float(p), dim, keepdim)


def cumsum(x, dim, *, dtype=None):
    return Cumsum.apply(_cast(x, dtype), dim)


# ---- softmax --------------------------------------------------------------------------------
def _legacy_softmax_dim(ndim):
    # torch's choice when F.softmax is called without dim (with a deprecation warning)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(x, dim=None, dtype=None):
    x = _cast(x, dtype)
    return Softmax.apply(x, _legacy_softmax_dim(x.data.ndim) if dim is None else dim)


def log_softmax(x, dim=None, dtype=None):
    x = _cast(x, dtype)
    return LogSoftmax.apply(x, _legacy_softmax_dim(x.data.ndim) if dim is None else dim)


# ---- joins and cuts -------------------------------------------------------------------------
def _tensors(tensors, what):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{what}(): argument 'tensors' must be a tuple or list of Tensors")
    if not tensors:
        raise RuntimeError(f"{what}(): expected a non-empty list of Tensors")
    return [t if isinstance(t, Tensor) else _tensor(t) for t in tensors]


def cat(tensors, dim=0, *, axis=None):
    tensors = _tensors(tensors, "cat")
    if builtins.any(t.data.ndim == 0 for t in tensors):
        raise RuntimeError("zero-dimensional tensor cannot be concatenated")
    return Cat.apply(_dim(dim, axis) or 0, *tensors)


def stack(tensors, dim=0):
    tensors = _tensors(tensors, "stack")
    shapes = {t.data.shape for t in tensors}
    if len(shapes) > 1:
        raise RuntimeError(f"stack expects each tensor to be equal size, but got {sorted(shapes)}")
    return Stack.apply(dim, *tensors)


def split(x, split_size_or_sections, dim=0):
    d = wrap_dim(dim, x.data.ndim)
    n = x.data.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [int(s) for s in split_size_or_sections]
        if builtins.sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size "
                               f"at dimension {d}), but got split_sizes={sizes}")
    else:
        step = int(split_size_or_sections)
        if step <= 0 and n:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
        sizes = [builtins.min(step, n - start) for start in range(0, n, step)] if n else [0]
    return Split.apply(x, sizes, d)


def _int_arg(value, op: str, name: str) -> int:
    """``value`` as an int, refusing a float as torch does (``int(0.5)`` would silently give 0)."""
    if isinstance(value, (float, np.floating)) or (isinstance(value, Tensor) and value.data.dtype.kind not in "iub"):
        raise TypeError(f"{op}(): argument '{name}' must be int, not {type(value).__name__}")
    return int(value.data if isinstance(value, Tensor) else value)


def chunk(x, chunks, dim=0):
    chunks = _int_arg(chunks, "chunk", "chunks")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: %d" % chunks)
    n = x.data.shape[wrap_dim(dim, x.data.ndim)]
    return split(x, builtins.max(1, math.ceil(n / chunks)), dim)


def unbind(x, dim=0):
    return Unbind.apply(x, dim)


def gather(x, dim, index, *, sparse_grad=False):
    return Gather.apply(x, dim, index)


def repeat(x, *sizes):
    sizes = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
    return Repeat.apply(x, tuple(_int_arg(s, "repeat", "repeats") for s in sizes))


def _index_along(x, dim, index):
    return x[(slice(None),) * wrap_dim(dim, x.data.ndim) + (index,)]


def index_select(x, dim, index):
    return _index_along(x, dim, np.asarray(index.data if isinstance(index, Tensor) else index).reshape(-1))


def select(x, dim, index):
    return _index_along(x, dim, _int_arg(index, "select", "index"))


def narrow(x, dim, start, length):
    start = _int_arg(start, "narrow", "start")
    return _index_along(x, dim, slice(start, start + _int_arg(length, "narrow", "length")))


def flip(x, dims):
    dims = (dims,) if isinstance(dims, int) else dims
    index = [slice(None)] * x.data.ndim
    for d in dims:
        index[wrap_dim(d, x.data.ndim)] = slice(None, None, -1)
    return x[tuple(index)]


def masked_fill(x, mask, value):
    return Where.apply(mask, value, x)


def _triangle(np_tri):
    def tri(x, diagonal=0):
        return x * Tensor(np_tri(np.ones(x.data.shape[-2:], dtype=bool), diagonal))

    tri.__name__ = np_tri.__name__
    return tri


tril = _triangle(np.tril)
triu = _triangle(np.triu)


_ORDER_DEPENDS = "it orders the elements by value, so which element lands where depends on the data"


def sort(x, dim=-1, descending=False, stable=False):
    d = wrap_dim(dim, x.data.ndim)
    if x.data.dtype.kind == "O":
        raise NotSymbolic("sort", _ORDER_DEPENDS)
    a = x.data if x.data.ndim else x.data.reshape(1)
    idx = np.argsort(-a if descending else a, axis=d, kind="stable")
    values = Gather.apply(x, d, idx) if x.data.ndim else x.clone()
    return return_types.sort(values, Tensor(idx.reshape(x.data.shape).astype(np.int64)))


def topk(x, k, dim=-1, largest=True, sorted=True):
    d = wrap_dim(dim, x.data.ndim)
    if x.data.dtype.kind == "O":
        raise NotSymbolic("topk", _ORDER_DEPENDS)
    idx = np.argsort(-x.data if largest else x.data, axis=d, kind="stable")
    idx = np.take(idx, np.arange(int(k)), axis=d)
    return return_types.topk(Gather.apply(x, d, idx), Tensor(idx.astype(np.int64)))


# ---- comparisons and predicates: bool results, never a gradient ----------------------------
def _data(x):
    return x.data if isinstance(x, Tensor) else x


def _predicate(np_fn, name):
    def pred(a, b):
        if isinstance(a, Tensor):
            return a._compare(b, np_fn)  # the operators' path (it also handles symbolic tensors)
        return Tensor(np_fn(_data(a), _data(b)))

    pred.__name__ = name
    return pred


eq = _predicate(np.equal, "eq")
ne = not_equal = _predicate(np.not_equal, "ne")
lt = less = _predicate(np.less, "lt")
le = less_equal = _predicate(np.less_equal, "le")
gt = greater = _predicate(np.greater, "gt")
ge = greater_equal = _predicate(np.greater_equal, "ge")
logical_and = _predicate(np.logical_and, "logical_and")
logical_or = _predicate(np.logical_or, "logical_or")
logical_xor = _predicate(np.logical_xor, "logical_xor")


def logical_not(x):
    return ~x


def isnan(x):
    return Tensor(np.isnan(x.data))


def isinf(x):
    return Tensor(np.isinf(x.data))


def isfinite(x):
    return Tensor(np.isfinite(x.data))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return Tensor(np.isclose(_data(a), _data(b), rtol=rtol, atol=atol, equal_nan=equal_nan))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return builtins.bool(np.allclose(_data(a), _data(b), rtol=rtol, atol=atol, equal_nan=equal_nan))


def equal(a, b):
    return _data(a).shape == _data(b).shape and builtins.bool(np.array_equal(_data(a), _data(b)))


def _any_all(np_fn):
    def fn(x, dim=None, keepdim=False):
        if dim is None:
            return Tensor(np.asarray(np_fn(x.data)))
        return Tensor(np_fn(x.data, axis=wrap_dim(dim, x.data.ndim), keepdims=keepdim))

    fn.__name__ = np_fn.__name__
    return fn


all = _any_all(np.all)
any = _any_all(np.any)


def nonzero(x, *, as_tuple=False):
    idx = np.nonzero(np.atleast_1d(x.data))
    if as_tuple:
        return tuple(Tensor(i.astype(np.int64)) for i in idx)
    return Tensor(np.stack(idx, axis=1).astype(np.int64) if idx else np.zeros((0, 0), np.int64))


def count_nonzero(x, dim=None):
    return Tensor(np.asarray(np.count_nonzero(x.data, axis=dim), dtype=np.int64))


_FUNCTIONS = {
    "prod": prod, "amax": amax, "amin": amin, "max": max, "min": min, "argmax": argmax, "argmin": argmin,
    "logsumexp": logsumexp, "var": var, "std": std, "norm": norm, "cumsum": cumsum,
    "softmax": softmax, "log_softmax": log_softmax,
    "split": split, "chunk": chunk, "unbind": unbind, "gather": gather, "index_select": index_select,
    "select": select, "narrow": narrow, "flip": flip, "masked_fill": masked_fill, "tril": tril, "triu": triu,
    "sort": sort, "topk": topk, "repeat": repeat,
    "dot": dot, "mm": mm, "bmm": bmm, "outer": outer, "ger": outer, "diag": diag, "trace": trace,
    "eq": eq, "ne": ne, "not_equal": ne, "lt": lt, "less": lt, "le": le, "less_equal": le, "gt": gt,
    "greater": gt, "ge": ge, "greater_equal": ge, "logical_and": logical_and, "logical_or": logical_or,
    "logical_xor": logical_xor, "logical_not": logical_not, "isnan": isnan, "isinf": isinf,
    "isfinite": isfinite, "isclose": isclose, "allclose": allclose, "equal": equal, "all": all, "any": any,
    "nonzero": nonzero, "count_nonzero": count_nonzero,
}
# functions of several tensors, not methods
_NOT_METHODS = {"cat": cat, "concat": cat, "concatenate": cat, "stack": stack}

for _name, _fn in _FUNCTIONS.items():
    register(_name, _fn)
for _name, _fn in _NOT_METHODS.items():
    register(_name, _fn, method=False)
register("return_types", return_types, method=False)
