"""Unary ops traced unevaluated: the exact reference's trace needs values, not simplified formulas.

SymPy evaluates a function when it is built (``exp(x)`` asks whether x is a multiple of i*pi,
``log`` whether its argument is an exp, ``Abs`` what sign x has): ~30 % of tracing a small
Function, mostly assumption queries. While ``unevaluated_unary()`` is on, the engine's unary rules
(ops.py) build each row of elementwise.UNARY with ``evaluate=False``: the same function node for
node, so the same value and derivative at every point.
"""
import contextlib

import sympy
from sympy import S

from gradcli.autograd.ops import elementwise

ON = [False]  # the innermost ``unevaluated_unary()`` is on


@contextlib.contextmanager
def unevaluated_unary():
    """Unary ops build their SymPy function unevaluated while this is on: ``exp(x)`` is not asked
    whether x is a multiple of i*pi, ``log`` whether its argument is an exp, ``Abs`` what sign x has
    (~30 % of tracing a Function, the assumption queries of those ``eval``s). The same function, so
    the same values and derivatives at every point: the exact reference's trace uses it (it needs
    numbers, not a simplified formula); proofs, which simplify, do not. Arithmetic stays evaluated.
    Built with ``evaluate=False`` arguments, never by switching SymPy's global ``evaluate`` (every
    switch clears SymPy's whole cache)."""
    ON.append(True)
    try:
        yield
    finally:
        ON.pop()


def _no(head, *args):
    return head(*args, evaluate=False)


# elementwise's composite rows (_SYMPY_COMPOSITE), unevaluated: the same expressions, node for node
_UNEVALUATED_COMPOSITE = {
    "log1p": lambda x: _no(sympy.log, _no(sympy.Add, S.One, x)),
    "expm1": lambda x: _no(sympy.Add, _no(sympy.exp, x), S.NegativeOne),
    "rsqrt": lambda x: _no(sympy.Pow, x, -S.Half),
    "reciprocal": lambda x: _no(sympy.Pow, x, S.NegativeOne),
    "neg": lambda x: _no(sympy.Mul, S.NegativeOne, x),
    "sigmoid": lambda x: _no(sympy.Pow, _no(sympy.Add, S.One, _no(sympy.exp, _no(sympy.Mul, S.NegativeOne, x))),
                             S.NegativeOne),
    "relu": lambda x: _no(sympy.Max, x, S.Zero),
    "softplus": lambda x: _no(sympy.log, _no(sympy.Add, S.One, _no(sympy.exp, x))),
}


def unary_expr(name, x):
    """UNARY[name] of the SymPy expression ``x``, left unevaluated (a composite row this table does
    not know yet: evaluated, as before)."""
    build = _UNEVALUATED_COMPOSITE.get(name)
    if build is not None:
        return build(x)
    if name in getattr(elementwise, "_SYMPY_COMPOSITE", {}):
        return elementwise.sympy_expr(name, x)
    return getattr(sympy, elementwise.UNARY[name][1])(x, evaluate=False)


