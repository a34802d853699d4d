"""Elementwise ops. Unary ops are one row each in UNARY: the forward (numpy), the name of the
SymPy function that computes the same thing (used by symbolic tracing and by the diff command),
and the derivative rule written with Tensor ops, so that it records a graph under create_graph:
``rule(g, x, y) -> gradient w.r.t. x`` where y is the output and g its incoming gradient.
``sympy_expr(name, x)`` builds the row's function as a SymPy expression.
"""
import dis
import math

import numpy as np

from gradcli.autograd.function import Function
from gradcli.autograd.ops._base import data_of, promoted, unbroadcast
from gradcli.autograd.tensor import Tensor

_erf_scalar = np.frompyfunc(math.erf, 1, 1)


def _erf(a):
    return np.asarray(_erf_scalar(a)).astype(a.dtype if a.dtype.kind == "f" else np.float64)


def _softplus(a):
    return np.logaddexp(0, a)


def _sigmoid(a):
    # the two branches keep exp from overflowing
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e))


_SQRT_PI = math.sqrt(math.pi)


# tanh' = 1 - y² and sigmoid' = y(1 - y) as single ops (torch's tanh_backward/sigmoid_backward):
# written as three Tensor ops they made these two activations the slowest rows of the engine
# benchmark. Each is differentiable itself, so higher derivatives still work.
class TanhBackward(Function):
    """g·(1 − y²)."""

    @staticmethod
    def forward(ctx, g, y):
        if True in ctx.needs_input_grad:
            ctx.save_for_backward(g, y)
        yd = y.data
        return Tensor(g.data * (1 - yd * yd))

    @staticmethod
    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        return gg * (1 - y * y), gg * g * y * -2


class SigmoidBackward(Function):
    """g·y·(1 − y)."""

    @staticmethod
    def forward(ctx, g, y):
        if True in ctx.needs_input_grad:
            ctx.save_for_backward(g, y)
        yd = y.data
        return Tensor(g.data * yd * (1 - yd))

    @staticmethod
    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        return gg * y * (1 - y), gg * g * (1 - y * 2)

UNARY = {
    # name        forward        sympy        d/dx rule
    "exp":        (np.exp,       "exp",        lambda g, x, y: g * y),
    "log":        (np.log,       "log",        lambda g, x, y: g / x),
    "log1p":      (np.log1p,     "log1p",      lambda g, x, y: g / (x + 1)),
    "expm1":      (np.expm1,     "expm1",      lambda g, x, y: g * (y + 1)),
    "sqrt":       (np.sqrt,      "sqrt",       lambda g, x, y: g / (y * 2)),
    "rsqrt":      (lambda a: 1 / np.sqrt(a), "rsqrt", lambda g, x, y: g * y ** 3 * -0.5),
    "reciprocal": (np.reciprocal, "reciprocal", lambda g, x, y: -g * y * y),
    "neg":        (np.negative,  "neg",        lambda g, x, y: -g),
    "abs":        (np.abs,       "Abs",        lambda g, x, y: g * x.sign()),
    "sign":       (np.sign,      "sign",       lambda g, x, y: g * 0),
    "floor":      (np.floor,     "floor",      lambda g, x, y: g * 0),
    "ceil":       (np.ceil,      "ceiling",    lambda g, x, y: g * 0),
    "sin":        (np.sin,       "sin",        lambda g, x, y: g * x.cos()),
    "cos":        (np.cos,       "cos",        lambda g, x, y: -g * x.sin()),
    "tan":        (np.tan,       "tan",        lambda g, x, y: g * (y * y + 1)),
    "asin":       (np.arcsin,    "asin",       lambda g, x, y: g * (1 - x * x).rsqrt()),
    "acos":       (np.arccos,    "acos",       lambda g, x, y: -g * (1 - x * x).rsqrt()),
    "atan":       (np.arctan,    "atan",       lambda g, x, y: g / (x * x + 1)),
    "sinh":       (np.sinh,      "sinh",       lambda g, x, y: g * x.cosh()),
    "cosh":       (np.cosh,      "cosh",       lambda g, x, y: g * x.sinh()),
    "tanh":       (np.tanh,      "tanh",       lambda g, x, y: TanhBackward.apply(g, y)),
    "asinh":      (np.arcsinh,   "asinh",      lambda g, x, y: g * (x * x + 1).rsqrt()),
    "acosh":      (np.arccosh,   "acosh",      lambda g, x, y: g * (x * x - 1).rsqrt()),
    "atanh":      (np.arctanh,   "atanh",      lambda g, x, y: g / (1 - x * x)),
    "sigmoid":    (_sigmoid,     "sigmoid",    lambda g, x, y: SigmoidBackward.apply(g, y)),
    "relu":       (lambda a: np.maximum(a, 0), "relu", lambda g, x, y: g * (x > 0)),
    "softplus":   (_softplus,    "softplus",   lambda g, x, y: g * x.sigmoid()),
    "erf":        (_erf,         "erf",        lambda g, x, y: g * (-(x * x)).exp() * (2 / _SQRT_PI)),
}

# Ops that keep an integer input's dtype (torch.abs(int tensor) is an int tensor); every other
# row computes in the default float dtype, as torch does for e.g. torch.sqrt(int tensor).
_KEEPS_INT = frozenset({"neg", "abs", "sign", "floor", "ceil", "relu"})


# The SymPy name column maps to ``sympy.<name>`` except for these, which SymPy spells as an
# expression. (A row's SymPy name must be a SymPy head or one of these patterns: gradcli.symbolic
# maps SymPy heads back to rows. That is why round and trunc, which SymPy lacks, are not rows.)
_SYMPY_COMPOSITE = {
    "log1p":      lambda sp, x: sp.log(1 + x),
    "expm1":      lambda sp, x: sp.exp(x) - 1,
    "rsqrt":      lambda sp, x: 1 / sp.sqrt(x),
    "reciprocal": lambda sp, x: 1 / x,
    "neg":        lambda sp, x: -x,
    "sigmoid":    lambda sp, x: 1 / (1 + sp.exp(-x)),
    "relu":       lambda sp, x: sp.Max(x, 0),
    "softplus":   lambda sp, x: sp.log(1 + sp.exp(x)),
}


def sympy_expr(name, x):
    """UNARY[name] applied to the SymPy expression ``x``, as a SymPy expression
    (``sympy_expr("sigmoid", x) == 1/(1 + exp(-x))``). Imports SymPy only when called."""
    import sympy

    if name in _SYMPY_COMPOSITE:
        return _SYMPY_COMPOSITE[name](sympy, x)
    return getattr(sympy, UNARY[name][1])(x)


# Symbolic implementations (object arrays of SymPy expressions) are registered here by
# gradcli.symbolic, keyed like UNARY; numeric code never looks at it.
SYMBOLIC_UNARY = {}
# The same for ops whose numeric forward branches on values ("where": a mask of symbolic conditions;
# "maximum"/"minimum", used by maximum/minimum/clamp and, pairwise, by the amax/max reductions, when
# an operand holds expressions; "round"/"trunc": ``rule(a, decimals)``).
SYMBOLIC_OPS = {}

# SYMPY_EXPR[name](x) is sympy_expr(name, x), for code that wants a table
SYMPY_EXPR = {name: (lambda x, _name=name: sympy_expr(_name, x)) for name in UNARY}


def symbolic_unary(name, a):
    """UNARY[name] on an object array of SymPy expressions: what the other ops call where their
    numeric code calls numpy's exp/log/sqrt on ``.data`` (softmax, logsumexp, norm, std)."""
    fn = SYMBOLIC_UNARY.get(name)
    if fn is None:  # nothing registered: apply the SymPy function element by element
        return np.vectorize(lambda e: sympy_expr(name, e), otypes=[object])(a)
    return fn(a)


_symbolic = symbolic_unary


def _rule_reads(rule):
    """Which of ``x`` and ``y`` a derivative rule reads. Only those are saved for backward, so
    an in-place change to a tensor the rule never reads is not reported as an error (torch's
    ExpBackward saves only its result, NegBackward nothing)."""
    names = set()
    for ins in dis.get_instructions(rule):
        if ins.opname.startswith("LOAD_FAST"):  # 3.13 adds LOAD_FAST_LOAD_FAST with a tuple argval
            names.update(ins.argval if isinstance(ins.argval, tuple) else (ins.argval,))
    return "x" in names, "y" in names


def _unary_function(name, forward_np, rule):
    reads_x, reads_y = _rule_reads(rule)
    keeps_int = name in _KEEPS_INT

    def forward(ctx, x):
        a = x.data
        if a.dtype.kind == "O":
            y = Tensor(_symbolic(name, a))
        else:
            if a.dtype.kind in "iub" and not (keeps_int and a.dtype.kind != "b"):
                a = a.astype(np.float64)
            y = Tensor(forward_np(a))
        if (reads_x or reads_y) and True in ctx.needs_input_grad:
            ctx.save_for_backward(x if reads_x else None, y if reads_y else None)
        return y

    def backward(ctx, g):
        if reads_x or reads_y:
            x, y = ctx.saved_tensors
            return rule(g, x, y)
        return rule(g, None, None)

    cls_name = name.capitalize() if name != "log1p" else "Log1p"
    return type(cls_name, (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward),
                                        "__module__": __name__, "__qualname__": cls_name, "op_name": name})


UNARY_FUNCTIONS = {name: _unary_function(name, fwd, rule) for name, (fwd, _sym, rule) in UNARY.items()}
globals().update({cls.__name__: cls for cls in UNARY_FUNCTIONS.values()})



class _Rounding(Function):
    """round/trunc: piecewise constant, so the gradient is 0 (not UNARY rows: SymPy has no head
    for either; on symbols they are SYMBOLIC_OPS["round"/"trunc"]). ``round`` rounds half to even,
    like torch and numpy."""

    _np = None
    gradcli_collect = False  # a base: Round and Trunc (which set _np) are checked

    @classmethod
    def forward(cls, ctx, x, decimals=0):
        a = x.data
        if a.dtype.kind == "O":
            return Tensor(SYMBOLIC_OPS[cls.__name__.lower()](a, decimals))
        if decimals:
            return Tensor(np.round(a, decimals))
        return Tensor(cls._np(a))

    @staticmethod
    def backward(ctx, g):
        return g * 0, None


class Round(_Rounding):
    _np = staticmethod(np.round)


class Trunc(_Rounding):
    _np = staticmethod(np.trunc)


# ---- selection: maximum, minimum, clamp, where (binary arithmetic is in arithmetic.py) ----------
def _extreme(name, np_fn, a, b):
    """np.maximum/np.minimum with torch's promotion; object arrays (SymPy expressions) go to
    SYMBOLIC_OPS[name] when gradcli.symbolic registered it."""
    da, db = promoted(a, b)
    if name in SYMBOLIC_OPS and (getattr(da, "dtype", None) == object or getattr(db, "dtype", None) == object):
        return SYMBOLIC_OPS[name](da, db)
    return np_fn(da, db)


class Maximum(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return Tensor(_extreme("maximum", np.maximum, a, b))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        # ties split the gradient evenly, as torch does; the masks are Tensor comparisons so
        # that they trace symbolically too
        wa = (a > b) + (a == b) * 0.5
        return unbroadcast(g * wa, a.data.shape), unbroadcast(g * (1 - wa), b.data.shape)


class Minimum(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return Tensor(_extreme("minimum", np.minimum, a, b))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        wa = (a < b) + (a == b) * 0.5
        return unbroadcast(g * wa, a.data.shape), unbroadcast(g * (1 - wa), b.data.shape)


class Clamp(Function):
    """``clamp(x, lo, hi) = min(max(x, lo), hi)``; bounds are numbers or tensors. The masks are
    torch's: x gets the gradient where lo <= x <= hi, a tensor lo where x < lo < hi, a tensor hi
    where x > hi or hi < lo (when lo > hi every element is hi)."""

    @staticmethod
    def forward(ctx, x, lo=None, hi=None):
        if lo is None and hi is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        ctx.save_for_backward(x, *(t if type(t) is Tensor else None for t in (lo, hi)))
        ctx.bounds = (lo, hi)
        out = x
        if lo is not None:
            out = Tensor(_extreme("maximum", np.maximum, out, lo))
        if hi is not None:
            out = Tensor(_extreme("minimum", np.minimum, out, hi))
        return out

    @staticmethod
    def backward(ctx, g):
        x, lo_t, hi_t = ctx.saved_tensors
        lo = lo_t if lo_t is not None else ctx.bounds[0]
        hi = hi_t if hi_t is not None else ctx.bounds[1]
        gx = glo = ghi = None
        # masks are Tensor comparisons (bool tensors outside the graph; symbolic when tracing)
        if ctx.needs_input_grad[0]:
            inside = x >= lo if lo is not None else None
            if hi is not None:
                inside = x <= hi if inside is None else inside & (x <= hi)
            gx = unbroadcast(g * inside, x.data.shape)
        if ctx.needs_input_grad[1]:
            glo = unbroadcast(g * ((x < lo) & (lo < hi) if hi is not None else x < lo), lo_t.data.shape)
        if ctx.needs_input_grad[2]:
            ghi = unbroadcast(g * ((x > hi) | (hi < lo) if lo is not None else x > hi), hi_t.data.shape)
        return gx, glo, ghi


class Where(Function):
    @staticmethod
    def forward(ctx, cond, a, b):
        c = data_of(cond)
        c = c if type(c) is np.ndarray and c.dtype.kind == "O" else np.asarray(c, dtype=bool)  # O: symbolic
        da, db = promoted(a, b)
        ctx.cond = c
        ctx.shapes = (np.shape(da), np.shape(db))
        if c.dtype.kind == "O":
            return Tensor(SYMBOLIC_OPS["where"](c, da, db))
        return Tensor(np.where(c, da, db))

    @staticmethod
    def backward(ctx, g):
        c = Tensor(ctx.cond)
        sa, sb = ctx.shapes
        ga = unbroadcast(g * c, sa) if ctx.needs_input_grad[1] else None
        gb = unbroadcast(g * ~c, sb) if ctx.needs_input_grad[2] else None
        return None, ga, gb
