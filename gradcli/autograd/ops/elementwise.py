"""Elementwise ops. Unary ops are one row each in UNARY: the forward (numpy), the name of the
SymPy function that computes the same thing (used by symbolic tracing and by the diff command),
and the derivative rule written with Tensor ops, so that it records a graph under create_graph:
``rule(g, x, y) -> gradient w.r.t. x`` where y is the output and g its incoming gradient.
"""
import math

import numpy as np

from gradcli.autograd.function import Function
from gradcli.autograd.ops._base import data_of, unbroadcast
from gradcli.autograd.tensor import Tensor

_erf_scalar = np.frompyfunc(math.erf, 1, 1)


def _erf(a):
    return _erf_scalar(a).astype(a.dtype if a.dtype.kind == "f" else np.float64)


def _softplus(a):
    return np.logaddexp(0, a)


def _sigmoid(a):
    # the two branches keep exp from overflowing
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e))


_SQRT_PI = math.sqrt(math.pi)

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
    "sin":        (np.sin,       "sin",        lambda g, x, y: g * x.cos()),
    "cos":        (np.cos,       "cos",        lambda g, x, y: -g * x.sin()),
    "tan":        (np.tan,       "tan",        lambda g, x, y: g * (y * y + 1)),
    "asin":       (np.arcsin,    "asin",       lambda g, x, y: g * (1 - x * x).rsqrt()),
    "acos":       (np.arccos,    "acos",       lambda g, x, y: -g * (1 - x * x).rsqrt()),
    "atan":       (np.arctan,    "atan",       lambda g, x, y: g / (x * x + 1)),
    "sinh":       (np.sinh,      "sinh",       lambda g, x, y: g * x.cosh()),
    "cosh":       (np.cosh,      "cosh",       lambda g, x, y: g * x.sinh()),
    "tanh":       (np.tanh,      "tanh",       lambda g, x, y: g * (1 - y * y)),
    "asinh":      (np.arcsinh,   "asinh",      lambda g, x, y: g * (x * x + 1).rsqrt()),
    "acosh":      (np.arccosh,   "acosh",      lambda g, x, y: g * (x * x - 1).rsqrt()),
    "atanh":      (np.arctanh,   "atanh",      lambda g, x, y: g / (1 - x * x)),
    "sigmoid":    (_sigmoid,     "sigmoid",    lambda g, x, y: g * y * (1 - y)),
    "relu":       (lambda a: np.maximum(a, 0), "relu", lambda g, x, y: g * (x > 0)),
    "softplus":   (_softplus,    "softplus",   lambda g, x, y: g * x.sigmoid()),
    "erf":        (_erf,         "erf",        lambda g, x, y: g * (-(x * x)).exp() * (2 / _SQRT_PI)),
}

# Symbolic implementations (object arrays of SymPy expressions) are registered here by
# gradcli.symbolic, keyed like UNARY; numeric code never looks at it.
SYMBOLIC_UNARY = {}


def _unary_function(name, forward_np, rule):
    def forward(ctx, x):
        a = x.data
        if a.dtype.kind == "O":
            y = Tensor(SYMBOLIC_UNARY[name](a))
        else:
            if a.dtype.kind in "iub":
                a = a.astype(np.float64)
            y = Tensor(forward_np(a))
        ctx.save_for_backward(x, y)
        return y

    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return rule(g, x, y)

    cls_name = name.capitalize() if name != "log1p" else "Log1p"
    return type(cls_name, (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward),
                                        "__module__": __name__, "__qualname__": cls_name, "op_name": name})


UNARY_FUNCTIONS = {name: _unary_function(name, fwd, rule) for name, (fwd, _sym, rule) in UNARY.items()}
globals().update({cls.__name__: cls for cls in UNARY_FUNCTIONS.values()})


# ---- binary arithmetic (broadcasting; python scalars pass through and get a None gradient) ----
class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (np.shape(data_of(a)), np.shape(data_of(b)))
        return Tensor(np.add(data_of(a), data_of(b)))

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        return (unbroadcast(g, sa) if ctx.needs_input_grad[0] else None,
                unbroadcast(g, sb) if ctx.needs_input_grad[1] else None)


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (np.shape(data_of(a)), np.shape(data_of(b)))
        return Tensor(np.subtract(data_of(a), data_of(b)))

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        return (unbroadcast(g, sa) if ctx.needs_input_grad[0] else None,
                unbroadcast(-g, sb) if ctx.needs_input_grad[1] else None)


class RSub(Function):
    """``other - tensor`` for a non-tensor ``other``."""

    @staticmethod
    def forward(ctx, a, other):
        return Tensor(np.subtract(other, a.data))

    @staticmethod
    def backward(ctx, g):
        return -g, None


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(*(t for t in (a, b) if type(t) is Tensor))
        ctx.b_scalar = None if type(b) is Tensor else b
        ctx.a_scalar = None if type(a) is Tensor else a
        return Tensor(np.multiply(data_of(a), data_of(b)))

    @staticmethod
    def backward(ctx, g):
        saved = ctx.saved_tensors
        if ctx.a_scalar is not None:
            (b,) = saved
            return None, unbroadcast(g * ctx.a_scalar, b.data.shape)
        if ctx.b_scalar is not None:
            (a,) = saved
            return unbroadcast(g * ctx.b_scalar, a.data.shape), None
        a, b = saved
        return (unbroadcast(g * b, a.data.shape) if ctx.needs_input_grad[0] else None,
                unbroadcast(g * a, b.data.shape) if ctx.needs_input_grad[1] else None)


class Div(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, *((b,) if type(b) is Tensor else ()))
        ctx.b_scalar = None if type(b) is Tensor else b
        return Tensor(np.true_divide(a.data, data_of(b)))

    @staticmethod
    def backward(ctx, g):
        if ctx.b_scalar is not None:
            (a,) = ctx.saved_tensors
            return unbroadcast(g / ctx.b_scalar, a.data.shape), None
        a, b = ctx.saved_tensors
        return (unbroadcast(g / b, a.data.shape) if ctx.needs_input_grad[0] else None,
                unbroadcast(-g * a / (b * b), b.data.shape) if ctx.needs_input_grad[1] else None)


class RDiv(Function):
    """``other / tensor`` for a non-tensor ``other``."""

    @staticmethod
    def forward(ctx, b, other):
        y = Tensor(np.true_divide(other, b.data))
        ctx.save_for_backward(b, y)
        return y

    @staticmethod
    def backward(ctx, g):
        b, y = ctx.saved_tensors
        return -g * y / b, None


def _pow_scalar_grad(g, a, p):
    if np.ndim(p):
        return unbroadcast(g * p * a ** (p - 1), a.data.shape)
    if p == 0:
        return g * 0
    if p == 1:
        return g
    if p == 2:
        return g * a * 2
    return g * p * a ** (p - 1)


class Pow(Function):
    @staticmethod
    def forward(ctx, a, p):
        y = Tensor(np.power(a.data, data_of(p)))
        ctx.save_for_backward(a, *((p,) if type(p) is Tensor else ()), y)
        ctx.p_scalar = None if type(p) is Tensor else p
        return y

    @staticmethod
    def backward(ctx, g):
        if ctx.p_scalar is not None:
            a, _y = ctx.saved_tensors
            return _pow_scalar_grad(g, a, ctx.p_scalar), None
        a, p, y = ctx.saved_tensors
        ga = unbroadcast(g * p * a ** (p - 1), a.data.shape) if ctx.needs_input_grad[0] else None
        gp = unbroadcast(g * y * a.log(), p.data.shape) if ctx.needs_input_grad[1] else None
        return ga, gp


class RPow(Function):
    """``base ** tensor`` for a non-tensor ``base``."""

    @staticmethod
    def forward(ctx, p, base):
        y = Tensor(np.power(np.asarray(base, dtype=p.data.dtype), p.data))
        ctx.save_for_backward(y)
        ctx.log_base = math.log(base) if base > 0 else float("nan")
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * ctx.log_base, None


class Maximum(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return Tensor(np.maximum(a.data, b.data))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        # ties split the gradient evenly, as torch does
        wa = Tensor((a.data > b.data) + 0.5 * (a.data == b.data))
        return unbroadcast(g * wa, a.data.shape), unbroadcast(g * (1 - wa), b.data.shape)


class Minimum(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return Tensor(np.minimum(a.data, b.data))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        wa = Tensor((a.data < b.data) + 0.5 * (a.data == b.data))
        return unbroadcast(g * wa, a.data.shape), unbroadcast(g * (1 - wa), b.data.shape)


class Clamp(Function):
    @staticmethod
    def forward(ctx, x, lo=None, hi=None):
        ctx.save_for_backward(x)
        ctx.bounds = (lo, hi)
        return Tensor(np.clip(x.data, lo, hi))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        lo, hi = ctx.bounds
        inside = np.ones(x.data.shape, dtype=bool)
        if lo is not None:
            inside &= x.data >= lo
        if hi is not None:
            inside &= x.data <= hi
        return g * Tensor(inside), None, None


class Where(Function):
    @staticmethod
    def forward(ctx, cond, a, b):
        c = np.asarray(data_of(cond), dtype=bool)
        ctx.cond = c
        ctx.shapes = (np.shape(data_of(a)), np.shape(data_of(b)))
        return Tensor(np.where(c, data_of(a), data_of(b)))

    @staticmethod
    def backward(ctx, g):
        c = Tensor(ctx.cond)
        sa, sb = ctx.shapes
        ga = unbroadcast(g * c, sa) if ctx.needs_input_grad[1] else None
        gb = unbroadcast(g * ~c, sb) if ctx.needs_input_grad[2] else None
        return None, ga, gb
