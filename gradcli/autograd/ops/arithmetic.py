"""Binary arithmetic: + - * / ** with numpy broadcasting (one ``unbroadcast`` per gradient),
Python scalars on either side (they pass through and get a None gradient) and torch's type
promotion (``promoted``).
"""
import math

import numpy as np

from gradcli.autograd.function import Function
from gradcli.autograd.ops._base import promoted, unbroadcast
from gradcli.autograd.ops.elementwise import Where
from gradcli.autograd.tensor import Tensor


# ---- binary arithmetic (broadcasting; python scalars pass through and get a None gradient) ----
# Each backward saves only what it reads, and only for the inputs that need a gradient, as
# torch does: ``y = x * w`` with a constant w never complains that x was modified in place.
# These forwards are the engine's hottest code: no bookkeeping unless some input needs a gradient.
def _operands(a, b):
    """The two arrays (or scalars) to compute with: tensors of one dtype as they are, anything
    else through torch's promotion."""
    if type(a) is Tensor and type(b) is Tensor:
        da, db = a.data, b.data
        if da.dtype is db.dtype:
            return da, db
    return promoted(a, b)


def _shape(x):
    if type(x) is np.ndarray:
        return x.shape
    return () if type(x) is float or type(x) is int else np.shape(x)  # np.shape(0.5) costs microseconds


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        da, db = _operands(a, b)
        if True in ctx.needs_input_grad:
            ctx.shapes = (_shape(da), _shape(db))
        return Tensor(np.add(da, db))

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        return (unbroadcast(g, sa) if ctx.needs_input_grad[0] else None,
                unbroadcast(g, sb) if ctx.needs_input_grad[1] else None)


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b):
        da, db = _operands(a, b)
        if True in ctx.needs_input_grad:
            ctx.shapes = (_shape(da), _shape(db))
        return Tensor(np.subtract(da, db))

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        return (unbroadcast(g, sa) if ctx.needs_input_grad[0] else None,
                unbroadcast(-g, sb) if ctx.needs_input_grad[1] else None)


class RSub(Function):
    """``other - tensor`` for a non-tensor ``other``."""

    @staticmethod
    def forward(ctx, a, other):
        da, do = promoted(a, other)
        ctx.shape = _shape(da)
        return Tensor(np.subtract(do, da))

    @staticmethod
    def backward(ctx, g):
        return unbroadcast(-g, ctx.shape), None


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        da, db = _operands(a, b)
        need_a, need_b = ctx.needs_input_grad
        if need_a or need_b:
            ctx.shapes = (_shape(da), _shape(db))
            ctx.a_scalar = None if type(a) is Tensor else a
            ctx.b_scalar = None if type(b) is Tensor else b
            # the gradient for a reads b and vice versa
            ctx.save_for_backward(a if need_b and type(a) is Tensor else None,
                                  b if need_a and type(b) is Tensor else None)
        return Tensor(np.multiply(da, db))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = unbroadcast(g * (b if ctx.b_scalar is None else ctx.b_scalar), sa)
        if ctx.needs_input_grad[1]:
            gb = unbroadcast(g * (a if ctx.a_scalar is None else ctx.a_scalar), sb)
        return ga, gb


class Div(Function):
    @staticmethod
    def forward(ctx, a, b):
        da, db = _operands(a, b)
        need_a, need_b = ctx.needs_input_grad
        if need_a or need_b:
            ctx.shapes = (_shape(da), _shape(db))
            ctx.b_scalar = None if type(b) is Tensor else b
            ctx.save_for_backward(a if need_b else None, b if type(b) is Tensor else None)
        return Tensor(np.true_divide(da, db))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        if ctx.b_scalar is not None:
            return unbroadcast(g / ctx.b_scalar, sa), None
        return (unbroadcast(g / b, sa) if ctx.needs_input_grad[0] else None,
                unbroadcast(-g * a / (b * b), sb) if ctx.needs_input_grad[1] else None)


class RDiv(Function):
    """``other / tensor`` for a non-tensor ``other``."""

    @staticmethod
    def forward(ctx, b, other):
        db, do = promoted(b, other)
        y = Tensor(np.true_divide(do, db))
        ctx.shape = _shape(db)
        ctx.save_for_backward(b, y)
        return y

    @staticmethod
    def backward(ctx, g):
        b, y = ctx.saved_tensors
        return unbroadcast(-g * y / b, ctx.shape), None


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
        da, dp = promoted(a, p)
        y = Tensor(np.power(da, dp))
        if type(p) is Tensor:
            ctx.p_scalar = None
            ctx.save_for_backward(a, p, y if ctx.needs_input_grad[1] else None)
        else:
            ctx.p_scalar = p
            ctx.save_for_backward(a)
        return y

    @staticmethod
    def backward(ctx, g):
        if ctx.p_scalar is not None:
            (a,) = ctx.saved_tensors
            return _pow_scalar_grad(g, a, ctx.p_scalar), None
        a, p, y = ctx.saved_tensors
        ga = unbroadcast(g * p * a ** (p - 1), a.data.shape) if ctx.needs_input_grad[0] else None
        gp = None
        if ctx.needs_input_grad[1]:
            # d(a**p)/dp = a**p log a, taken as 0 where a == 0 and p >= 0 (as torch does; the
            # limit a**p log a -> 0 there, where the product itself would be 0 * -inf = nan)
            if a.data.dtype.kind == "O" or p.data.dtype.kind == "O":  # symbols: masks through the comparison hook
                zero = (a == 0) & (p >= 0)
            else:
                zero = Tensor((a.data == 0) & (p.data >= 0))
            log_a = Where.apply(zero, 1.0, a).log()  # log(1) = 0 in the masked entries: no -inf
            gp = unbroadcast(g * Where.apply(zero, 0.0, y * log_a), p.data.shape)
        return ga, gp


class RPow(Function):
    """``base ** tensor`` for a non-tensor ``base``."""

    @staticmethod
    def forward(ctx, p, base):
        dp, db = promoted(p, base)
        y = Tensor(np.power(db, dp))
        ctx.shape = _shape(dp)
        ctx.save_for_backward(y)
        ctx.log_base = np.log(db) if np.ndim(db) else (math.log(db) if db > 0 else float("nan"))
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return unbroadcast(g * y * ctx.log_base, ctx.shape), None
