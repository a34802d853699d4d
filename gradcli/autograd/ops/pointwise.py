"""torch's elementwise ops beyond the UNARY table and arithmetic: atan2, hypot, logaddexp, lerp, addcmul, addcdiv, remainder, fmod, log2, log10, sgn, signbit, nan_to_num, cumprod, and the new_* / type_as constructors.

Every differentiable op is a Function written with the public API (forward on numpy arrays,
backward in Tensor ops, so double backward and symbolic tracing come with it) and is registered as
``gradcli.<name>`` and, where torch has one, as a Tensor method (``register`` in ops/__init__.py).
On symbols (object arrays of SymPy expressions) a forward builds the SymPy expression itself
(``_on_symbols``; SymPy is imported there only). The backward formulas are torch's own
(tools/autograd/derivatives.yaml), so gradients agree with torch to the last bits.
"""
import math
import numbers

import numpy as np

from gradcli.autograd import creation
from gradcli.autograd import tensor as _tensor_module
from gradcli.autograd.function import Function
from gradcli.autograd.ops import FUNCTIONS, _shape_arg, div, register
from gradcli.autograd.ops._base import NotSymbolic, promoted, unbroadcast, wrap_dim
from gradcli.autograd.ops.elementwise import Where
from gradcli.autograd.tensor import Tensor


def _on_symbols(rule, *arrays):
    """``rule(sympy, *elements)`` element by element on object arrays (SymPy imported lazily)."""
    import sympy

    element = np.frompyfunc(lambda *es: rule(sympy, *[sympy.sympify(e) for e in es]), len(arrays), 1)
    return np.asarray(element(*arrays), dtype=object)


def _symbolic(*arrays):
    return any(getattr(a, "dtype", None) == object for a in arrays)


def _float(a):
    """An integer/bool array in the default float dtype (torch's int -> float promotion)."""
    return a.astype(_tensor_module.DEFAULT_DTYPE) if a.dtype.kind in "iub" else a


def _scalar_like(s, like):
    """A Python number as a 0-d tensor that promotes with ``like`` as torch promotes a scalar."""
    dt = like.data.dtype
    if dt.kind in "fcO":
        return Tensor(np.asarray(s, dtype=dt))
    if isinstance(s, float):
        return Tensor(np.asarray(s, dtype=_tensor_module.DEFAULT_DTYPE))
    return Tensor(np.asarray(s, dtype=np.int64 if dt.kind == "b" else dt))


def _require_tensor(x, fn, arg, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {type(x).__name__}")
    return x


# ---- binary ops: atan2, hypot, logaddexp, remainder, fmod ----------------------------------------
class _Binary(Function):
    """``np_fn(a, b)`` with broadcasting and torch's promotion; ``rule(g, a, b, y, need)`` gives the
    gradients in the broadcast shape (``unbroadcast`` sums them down)."""

    np_fn = sym = None
    gradcli_collect = False  # a base: its subclasses (which set np_fn and rule) are checked
    to_float = True  # integer inputs compute in the default float dtype (remainder/fmod keep ints)
    no_ints = False  # torch has no integer kernel (hypot, logaddexp)

    @classmethod
    def forward(cls, ctx, a, b):
        da, db = promoted(a, b)
        if _symbolic(da, db):
            y = Tensor(_on_symbols(cls.sym, da, db))
        else:
            if cls.no_ints and da.dtype.kind in "iub":
                raise NotImplementedError(f'"{cls.__name__.lower()}_cpu" not implemented for '
                                          f"'{_TORCH_INT_NAMES.get(da.dtype.name, da.dtype.name)}'")
            if cls.to_float:
                da, db = _float(da), _float(db)
            y = Tensor(np.asarray(cls.np_fn(da, db)))
        if True in ctx.needs_input_grad:
            ctx.shapes = (np.shape(da), np.shape(db))
            ctx.save_for_backward(a, b, y)
        return y

    @classmethod
    def backward(cls, ctx, g):
        a, b, y = ctx.saved_tensors
        ga, gb = cls.rule(g, a, b, y, ctx.needs_input_grad)
        sa, sb = ctx.shapes
        return (unbroadcast(ga, sa) if ctx.needs_input_grad[0] else None,
                unbroadcast(gb, sb) if ctx.needs_input_grad[1] else None)


_TORCH_INT_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


class Atan2(_Binary):
    np_fn = staticmethod(np.arctan2)
    sym = staticmethod(lambda sp, a, b: sp.atan2(a, b))

    @staticmethod
    def rule(g, a, b, y, need):
        d = a * a + b * b  # torch: grad * other / (self² + other²), grad * -self / (...)
        return (g * b / d if need[0] else None), (g * -a / d if need[1] else None)


class Hypot(_Binary):
    np_fn = staticmethod(np.hypot)
    no_ints = True
    sym = staticmethod(lambda sp, a, b: sp.sqrt(a * a + b * b))

    @staticmethod
    def rule(g, a, b, y, need):
        return (g * a / y if need[0] else None), (g * b / y if need[1] else None)


class Logaddexp(_Binary):
    np_fn = staticmethod(np.logaddexp)
    no_ints = True
    sym = staticmethod(lambda sp, a, b: sp.log(sp.exp(a) + sp.exp(b)))

    @staticmethod
    def rule(g, a, b, y, need):
        # torch: grad / (1 + exp(other - self)); an overflowing exp gives the exact limit 0
        return (g / ((b - a).exp() + 1) if need[0] else None), (g / ((a - b).exp() + 1) if need[1] else None)


def _integer_division(da, db):
    if da.dtype.kind in "iub" and np.asarray(db).dtype.kind in "iub":
        if np.any(np.asarray(db) == 0):
            raise RuntimeError("ZeroDivisionError")
        return True
    return False


def _remainder(da, db):
    """torch's remainder: fmod, moved by b where its sign differs from b's (so remainder(-2., 2.) is
    -0. and remainder(-5., inf) is inf, as in torch; numpy's remainder differs at both)."""
    if _integer_division(da, db):
        return np.remainder(da, db)
    m = np.fmod(da, db)
    return np.where((m != 0) & ((db < 0) != (m < 0)), m + db, m)


def _fmod(da, db):
    _integer_division(da, db)
    return np.fmod(da, db)


class Remainder(_Binary):
    """Python's %, the sign of the divisor: a - b·floor(a/b)."""
    np_fn = staticmethod(_remainder)
    sym = staticmethod(lambda sp, a, b: a - b * sp.floor(a / b))
    to_float = False

    @staticmethod
    def rule(g, a, b, y, need):
        return (g if need[0] else None), (-g * div(a, b, rounding_mode="floor") if need[1] else None)


class Fmod(_Binary):
    """C's fmod, the sign of the dividend: a - b·trunc(a/b)."""
    np_fn = staticmethod(_fmod)
    sym = staticmethod(lambda sp, a, b: a - b * (sp.sign(a / b) * sp.floor(sp.Abs(a / b))))
    to_float = False

    @staticmethod
    def rule(g, a, b, y, need):
        return (g if need[0] else None), (-g * div(a, b, rounding_mode="trunc") if need[1] else None)


def _tensor_binary(cls, name):
    def fn(input, other):
        _require_tensor(input, name, "input", 1)
        return cls.apply(input, _require_tensor(other, name, "other", 2))

    fn.__name__ = fn.__qualname__ = name
    return fn


atan2 = _tensor_binary(Atan2, "atan2")
hypot = _tensor_binary(Hypot, "hypot")
logaddexp = _tensor_binary(Logaddexp, "logaddexp")


def remainder(input, other):
    if not isinstance(input, Tensor):  # torch.remainder(Scalar self, Tensor other)
        return Remainder.apply(_scalar_like(input, _require_tensor(other, "remainder", "other", 2)), other)
    return Remainder.apply(input, other if isinstance(other, Tensor) else _scalar_like(other, input))


def fmod(input, other):
    _require_tensor(input, "fmod", "input", 1)
    return Fmod.apply(input, other if isinstance(other, Tensor) else _scalar_like(other, input))


# ---- lerp, addcmul, addcdiv ------------------------------------------------------------------------
class Lerp(Function):
    """input + weight·(end − input), computed as torch does: from ``end`` when |weight| >= 0.5."""

    @staticmethod
    def forward(ctx, a, end, w):
        da, de = promoted(a, end)
        dw = w.data if isinstance(w, Tensor) else w
        if _symbolic(da, de, np.asarray(dw)):
            y = da + dw * (de - da)
        else:
            y = np.where(np.abs(dw) < 0.5, da + dw * (de - da), de - (de - da) * (1 - dw))
            y = y.astype(np.result_type(da, de), copy=False)
        if True in ctx.needs_input_grad:
            ctx.shapes = (np.shape(da), np.shape(de), np.shape(dw))
            ctx.save_for_backward(a, end, w if isinstance(w, Tensor) else None)
            ctx.w_scalar = None if isinstance(w, Tensor) else w
        return Tensor(np.asarray(y))

    @staticmethod
    def backward(ctx, g):
        (a, end, w_t), need, (sa, se, sw) = ctx.saved_tensors, ctx.needs_input_grad, ctx.shapes
        w = w_t if w_t is not None else ctx.w_scalar
        return (unbroadcast(g * (1 - w), sa) if need[0] else None,
                unbroadcast(g * w, se) if need[1] else None,
                unbroadcast(g * (end - a), sw) if len(need) > 2 and need[2] else None)


def lerp(input, end, weight):
    _require_tensor(input, "lerp", "input", 1)
    _require_tensor(end, "lerp", "end", 2)
    if not isinstance(weight, (Tensor, numbers.Real)):
        raise TypeError(f"lerp(): argument 'weight' must be Tensor or Number, not {type(weight).__name__}")
    for other, arg in ((end, "end"), (weight, "weight")):  # torch: no promotion (a 0-d weight may differ)
        if isinstance(other, Tensor) and other.data.dtype != input.data.dtype and (arg == "end" or other.ndim):
            raise RuntimeError(f"expected dtype {_torch_name(input.data.dtype)} for `{arg}` but got dtype "
                               f"{_torch_name(other.data.dtype)}")
    return Lerp.apply(input, end, weight)


def _torch_name(dtype):
    return {"float32": "float", "float64": "double", "float16": "half"}.get(dtype.name, dtype.name)


def _require_tensors(fn, *tensors):
    for i, (t, arg) in enumerate(zip(tensors, ("input", "tensor1", "tensor2"))):
        _require_tensor(t, fn, arg, i + 1)


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value·tensor1·tensor2, in torch's order of evaluation (torch's kernel fuses the
    multiply-add, so the last bit can differ)."""
    _require_tensors("addcmul", input, tensor1, tensor2)
    return input + (tensor1 * tensor2 if value == 1 else value * tensor1 * tensor2)


def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value·tensor1/tensor2; integer tensor1 and tensor2 are refused, as torch does."""
    _require_tensors("addcdiv", input, tensor1, tensor2)
    if tensor1.data.dtype.kind in "iub" and tensor2.data.dtype.kind in "iub":
        raise RuntimeError("Integer division with addcdiv is no longer supported: use (input + value * "
                           "torch.trunc(tensor1 / tensor2)).to(input.dtype) (torch's message says the same)")
    return input + (tensor1 / tensor2 if value == 1 else value * tensor1 / tensor2)


# ---- unary: log2, log10, sgn, signbit, nan_to_num ---------------------------------------------------
def _log_base(name, np_fn, base):
    ln_base = math.log(base)

    def forward(ctx, x):
        a = x.data
        y = Tensor(_on_symbols(lambda sp, e: sp.log(e) / sp.log(base), a) if a.dtype.kind == "O"
                   else np_fn(_float(a)))
        if True in ctx.needs_input_grad:
            ctx.save_for_backward(x)
        return y

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        c = ln_base
        if x.data.dtype.kind == "O" or g.data.dtype.kind == "O":  # on symbols: the exact log(base), which
            import sympy  # the float constant rounds (SymPy would fold 1/2.302585... into a float)
            c = Tensor(np.asarray(sympy.log(base), dtype=object))
        return g / (x * c)  # torch: grad / (self * ln(base))

    return type(name.capitalize(), (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward),
                                                 "__module__": __name__, "op_name": name})


Log2 = _log_base("log2", np.log2, 2)
Log10 = _log_base("log10", np.log10, 10)


def log2(input):
    return Log2.apply(input)


def log10(input):
    return Log10.apply(input)


def sgn(input):
    """sign for real tensors (gradient 0, as torch); complex tensors are not supported."""
    if input.data.dtype.kind == "c":
        raise NotImplementedError("sgn of a complex tensor is not provided by gradcli")
    return input.sign()


def signbit(input):
    a = input.data
    if a.dtype.kind == "O":
        raise NotSymbolic("signbit", "it reads the sign bit of a value (a bool, never differentiable)")
    return Tensor(np.signbit(a))


class NanToNum(Function):
    """nan -> ``nan``, +inf -> ``posinf``, -inf -> ``neginf`` (the dtype's largest/lowest finite
    value by default); the gradient is 1 where the input is finite and 0 where it was replaced."""

    @staticmethod
    def forward(ctx, x, nan=0.0, posinf=None, neginf=None):
        a = x.data
        numeric = a.dtype.kind in "fc"  # integers are unchanged, symbols are finite
        ctx.finite = np.isfinite(a) if numeric else np.ones(a.shape, dtype=bool)
        return Tensor(np.asarray(np.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf)) if numeric else a.copy())

    @staticmethod
    def backward(ctx, g):
        return g * Tensor(ctx.finite), None, None, None


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    return NanToNum.apply(input, nan, posinf, neginf)


# ---- cumprod ----------------------------------------------------------------------------------
def _cumprod_grad_with_zeros(g, x, d):
    """The gradient without dividing by x (for inputs holding a zero): for every k,
    sum over j >= k of g_j·prod_{i <= j, i != k} x_i, as one cumprod of n copies of x (copy k with
    x_k set to 1). O(n²) memory along ``dim``; built from Tensor ops, so it differentiates again."""
    nd, n = x.data.ndim, x.data.shape[d]
    xt, gt = x.transpose(d, -1), g.transpose(d, -1)                      # (..., n)
    lead = (n,) + (1,) * (nd - 1)
    eye = Tensor(np.eye(n, dtype=bool).reshape(lead + (n,)))             # [k, ..., i]: i == k
    upper = Tensor(np.triu(np.ones((n, n), dtype=bool)).reshape(lead + (n,)))  # [k, ..., j]: j >= k
    p = Cumprod.apply(Where.apply(eye, 1.0, xt.unsqueeze(0)), -1)        # [k, ..., j]
    gk = (gt.unsqueeze(0) * p * upper).sum(dim=-1)                       # [k, ...]
    return gk.permute(*range(1, nd), 0).transpose(d, -1) if nd > 1 else gk


class Cumprod(Function):
    """Running product along ``dim``. Gradient: torch's reverse-cumsum(g·y) / x when the input
    has no zero, and (like torch) a formula without the division when it has one."""

    @staticmethod
    def forward(ctx, x, dim):
        a = x.data
        d = wrap_dim(dim, a.ndim)
        y = Tensor(a.copy() if a.ndim == 0 else np.cumprod(a, axis=d))
        if True in ctx.needs_input_grad:
            ctx.dim = d
            ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        if x.data.ndim == 0:
            return g, None
        d = ctx.dim
        if x.data.dtype.kind != "O" and (x.data == 0).any():
            return _cumprod_grad_with_zeros(g, x, d), None
        return (g * y).flip([d]).cumsum(d).flip([d]) / x, None


def cumprod(input, dim, *, dtype=None):
    return Cumprod.apply(input if dtype is None else input.to(dtype), dim)


# ---- constructors and casts used in backward code -----------------------------------------------
def _new(make, name):
    def new(self, *size, dtype=None, requires_grad=False, device=None, **kwargs):
        dtype = self.dtype if dtype is None else dtype
        return make(*_shape_arg(size), dtype=dtype, requires_grad=requires_grad, **kwargs)

    new.__name__ = new.__qualname__ = name
    return new


new_zeros, new_ones = _new(creation.zeros, "new_zeros"), _new(creation.ones, "new_ones")
new_empty = _new(creation.zeros, "new_empty")  # torch leaves the memory uninitialized: zeros are one such value


def new_full(self, size, fill_value, *, dtype=None, requires_grad=False, device=None):
    return creation.full(size, fill_value, dtype=self.dtype if dtype is None else dtype, requires_grad=requires_grad)


def new_tensor(self, data, dtype=None, requires_grad=False, device=None):
    return creation.tensor(data, dtype=self.dtype if dtype is None else dtype, requires_grad=requires_grad)


def type_as(self, other):
    return self.to(other.dtype)


def half(self):
    return self.to(np.float16)


_FUNCTIONS = {
    "atan2": atan2, "arctan2": atan2, "hypot": hypot, "logaddexp": logaddexp, "lerp": lerp,
    "addcmul": addcmul, "addcdiv": addcdiv, "log2": log2, "log10": log10, "remainder": remainder,
    "fmod": fmod, "cumprod": cumprod, "sgn": sgn, "signbit": signbit, "nan_to_num": nan_to_num,
}
# Tensor methods only: torch has no torch.new_zeros, torch.type_as, ...
_METHODS_ONLY = {
    "new_zeros": new_zeros, "new_ones": new_ones, "new_empty": new_empty, "new_full": new_full,
    "new_tensor": new_tensor, "type_as": type_as, "half": half,
    "__mod__": remainder, "__rmod__": lambda self, other: remainder(other, self),
}

for _name, _fn in _FUNCTIONS.items():
    register(_name, _fn)
for _name, _fn in _METHODS_ONLY.items():
    register(_name, _fn)
    FUNCTIONS.pop(_name, None)
