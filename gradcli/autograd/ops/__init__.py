"""Built-in ops: each is a Function written with the public API. This module turns them into
the functions and Tensor methods torch users expect."""
import numpy as np

from gradcli.autograd.ops._base import as_tensor_like, data_of, normalize_dims, unbroadcast, wrap_dim  # noqa: F401
from gradcli.autograd.ops.arithmetic import Add, Div, Mul, Pow, RDiv, RPow, RSub, Sub  # noqa: F401
from gradcli.autograd.ops.elementwise import (UNARY, UNARY_FUNCTIONS, Clamp, Maximum, Minimum, Round,  # noqa: F401
                                              Trunc, Where, sympy_expr)
from gradcli.autograd.ops.elementwise import Abs, Neg  # noqa: F401  (made from the UNARY table)
from gradcli.autograd.ops.linalg import MatMul, matmul  # noqa: F401
from gradcli.autograd.ops.reduce import Mean, Sum  # noqa: F401
from gradcli.autograd.ops.shape import view_of  # noqa: F401
from gradcli.autograd.ops.shape import (Cast, Clone, CopyInto, Expand, Fill, GetItem, IndexBackward,  # noqa: F401
                                        Permute, Reshape, SetItem, unwrap_index)
from gradcli.autograd.tensor import Tensor


def _tensor(x):
    return x if isinstance(x, Tensor) else Tensor(np.asarray(x, dtype=np.float64 if np.isscalar(x) else None))


# ---- shape functions ------------------------------------------------------------------------
def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(int(s) for s in shape)


def reshape(x, *shape):
    return Reshape.apply(x, _shape_arg(shape))


def permute(x, *dims):
    dims = _shape_arg(dims)
    if dims == tuple(range(len(dims))):
        return Reshape.apply(x, x.data.shape)  # identity, still a new node
    return Permute.apply(x, tuple(d % max(x.data.ndim, 1) for d in dims))


def transpose(x, dim0, dim1):
    dims = list(range(x.data.ndim))
    dim0, dim1 = wrap_dim(dim0, x.data.ndim), wrap_dim(dim1, x.data.ndim)
    if x.data.ndim == 0:
        return permute(x, ())
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return permute(x, tuple(dims))


def t(x):
    if x.data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.data.ndim}D")
    return permute(x, tuple(reversed(range(x.data.ndim))))


def squeeze(x, dim=None):
    if dim is None:
        shape = tuple(s for s in x.data.shape if s != 1)
    else:
        dims = normalize_dims(dim, x.data.ndim)
        shape = tuple(s for i, s in enumerate(x.data.shape) if not (i in dims and s == 1))
    return Reshape.apply(x, shape)


def unsqueeze(x, dim):
    dim = wrap_dim(dim, x.data.ndim + 1)
    shape = x.data.shape[:dim] + (1,) + x.data.shape[dim:]
    return Reshape.apply(x, shape)


def flatten(x, start_dim=0, end_dim=-1):
    if x.data.ndim == 0:
        return Reshape.apply(x, (1,))
    s, e = wrap_dim(start_dim, x.data.ndim), wrap_dim(end_dim, x.data.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = x.data.shape[:s] + (int(np.prod(x.data.shape[s:e + 1])),) + x.data.shape[e + 1:]
    return Reshape.apply(x, shape)


def expand(x, *shape):
    return Expand.apply(x, _shape_arg(shape))


def expand_as(x, other):
    return Expand.apply(x, other.data.shape)


def view_as(x, other):
    return Reshape.apply(x, other.data.shape)


# ---- elementwise functions ------------------------------------------------------------------
def add(a, b, alpha=1):
    b = b if alpha == 1 else b * alpha
    return Add.apply(a, b) if isinstance(a, Tensor) else Add.apply(_tensor(a), b)


def sub(a, b, alpha=1):
    b = b if alpha == 1 else b * alpha
    return Sub.apply(a, b) if isinstance(a, Tensor) else RSub.apply(b, a) if isinstance(b, Tensor) else Sub.apply(_tensor(a), b)


def mul(a, b):
    return Mul.apply(a, b) if isinstance(a, Tensor) else Mul.apply(_tensor(a), b)


def div(a, b, rounding_mode=None):
    if rounding_mode is not None:
        if rounding_mode not in ("trunc", "floor"):
            raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                               f"'{rounding_mode}'")
        q = div(a, b)  # piecewise constant: gradient 0, as in torch
        return q.floor() if rounding_mode == "floor" else Trunc.apply(q)
    if not isinstance(a, Tensor):
        return RDiv.apply(b, a) if isinstance(b, Tensor) else Div.apply(_tensor(a), b)
    return Div.apply(a, b)


def pow(a, p):
    if not isinstance(a, Tensor):
        return RPow.apply(p, a)
    return Pow.apply(a, p)


def square(x):
    return Pow.apply(x, 2)  # torch.square records a PowBackward too


def round(x, decimals=0):
    return Round.apply(x, decimals)


def trunc(x):
    return Trunc.apply(x)


def clamp(x, min=None, max=None):
    return Clamp.apply(x, min, max)


def clamp_min(x, min):
    return Clamp.apply(x, min, None)


def clamp_max(x, max):
    return Clamp.apply(x, None, max)


def maximum(a, b):
    return Maximum.apply(_tensor(a), as_tensor_like(b, a))


def minimum(a, b):
    return Minimum.apply(_tensor(a), as_tensor_like(b, a))


def where(cond, a=None, b=None):
    if a is None and b is None:  # torch.where(cond): the indices of the True entries
        return tuple(Tensor(i.astype(np.int64)) for i in np.nonzero(np.atleast_1d(cond.data)))
    return Where.apply(cond, a, b)


# ---- reductions -----------------------------------------------------------------------------
def sum(x, dim=None, keepdim=False, *, dtype=None, axis=None):
    if dtype is not None:  # torch converts first, then sums
        x = x.to(dtype)
    return Sum.apply(x, axis if dim is None else dim, keepdim)


def mean(x, dim=None, keepdim=False, *, dtype=None, axis=None):
    if dtype is not None:
        x = x.to(dtype)
    return Mean.apply(x, axis if dim is None else dim, keepdim)


# Tensor methods: name -> function taking the tensor first.
METHODS = {
    "reshape": reshape, "view": reshape, "permute": permute, "transpose": transpose, "swapaxes": transpose,
    "swapdims": transpose, "t": t, "squeeze": squeeze, "unsqueeze": unsqueeze, "flatten": flatten,
    "expand": expand, "expand_as": expand_as, "view_as": view_as, "reshape_as": view_as,
    "add": add, "sub": sub, "mul": mul, "div": div, "pow": pow, "clamp": clamp, "clip": clamp,
    "clamp_min": clamp_min, "clamp_max": clamp_max, "square": square, "round": round, "trunc": trunc,
    "fix": trunc, "maximum": maximum, "minimum": minimum, "sum": sum, "mean": mean, "matmul": matmul,
    "true_divide": div, "divide": div, "multiply": mul, "subtract": sub, "where": lambda x, cond, y: where(cond, x, y),
}
# Functions of the torch-like namespace (``gradcli.<name>``): every method, plus those that are
# functions only. Kept out of this module's globals so that max, min, abs, round, ... do not
# shadow the builtins here.
FUNCTIONS = dict(METHODS, where=where)


def _unary(cls):
    apply = cls.apply

    def fn(x):
        # a Tensor (every method call) goes straight to the Function: this is a hot path
        return apply(x) if type(x) is Tensor else apply(_tensor(x))
    fn.__name__ = cls.op_name
    return fn


UNARY_OPS = {name: _unary(cls) for name, cls in UNARY_FUNCTIONS.items()}
METHODS.update(UNARY_OPS)
FUNCTIONS.update(UNARY_OPS)
for _alias, _name in {"negative": "neg", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
                      "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "absolute": "abs"}.items():
    METHODS[_alias] = FUNCTIONS[_alias] = UNARY_OPS[_name]


def register(name, fn, method=True):
    """Add a function to the torch-like namespace (``gradcli.<name>``) and, unless
    ``method=False``, as a Tensor method taking the tensor first."""
    FUNCTIONS[name] = fn
    if method:
        METHODS[name] = fn
        if _installed_on is not None:
            setattr(_installed_on, name, fn)


def __getattr__(name):
    # ``ops.cat``, ``ops.exp``... reach the registered functions
    try:
        return FUNCTIONS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


_installed_on = None


def install_methods(tensor_cls):
    global _installed_on
    _installed_on = tensor_cls
    for name, fn in METHODS.items():
        if name not in tensor_cls.__dict__:
            setattr(tensor_cls, name, fn)


from gradcli.autograd.ops import more  # noqa: E402,F401  (reductions, joins, indexing, linalg, predicates)
from gradcli.autograd.ops import indexing, pointwise, shaping  # noqa: E402,F401,I001  (more of torch's ops)
