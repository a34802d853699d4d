"""Evaluating SymPy expressions in mpmath without ``lambdify``: closures over the expression tree.

``sympy.lambdify(..., modules="mpmath")`` prints the expression as Python source and compiles it:
25-30 ms per formula, most of the exact check's cost after SymPy's derivatives (specs/check.md §5),
for a function called a handful of times (once per element with that formula). ``compile_mp``
walks the tree once and builds nested closures calling the same mpmath functions lambdify's
printer names (``MpmathPrinter``: ``Abs`` -> ``abs``, ``sqrt(x)`` for ``x**(1/2)``, ``1/x`` for
``x**-1``, a Float as its exact ``_mpf_``, a Rational as ``mpf(p)/mpf(q)`` at the caller's
precision), so it computes what the lambdified function computed: ~0.1-0.5 ms per formula. A node it
does not know raises ``NotCompiled``; the caller then uses lambdify for that formula, as before.
"""
import mpmath
import sympy
from sympy import S

# SymPy function name -> mpmath function, as sympy.printing.pycode.MpmathPrinter prints them
_FUNCTIONS = {
    "acos": mpmath.acos, "acosh": mpmath.acosh, "asin": mpmath.asin, "asinh": mpmath.asinh, "atan": mpmath.atan,
    "atan2": mpmath.atan2, "atanh": mpmath.atanh, "ceiling": mpmath.ceil, "cos": mpmath.cos, "cosh": mpmath.cosh,
    "erf": mpmath.erf, "erfc": mpmath.erfc, "exp": mpmath.exp, "expm1": mpmath.expm1, "floor": mpmath.floor,
    "gamma": mpmath.gamma, "loggamma": mpmath.loggamma, "log": mpmath.log, "sin": mpmath.sin,
    "sinh": mpmath.sinh, "tan": mpmath.tan, "tanh": mpmath.tanh, "sign": mpmath.sign, "Abs": abs,
    "Max": max, "Min": min,
}
_NUMBERS = {S.Pi: lambda: +mpmath.pi, S.Exp1: lambda: +mpmath.e, S.EulerGamma: lambda: +mpmath.euler,
            S.ImaginaryUnit: lambda: mpmath.mpc(0, 1), S.Infinity: lambda: mpmath.inf,
            S.NegativeInfinity: lambda: -mpmath.inf, S.NaN: lambda: mpmath.nan}
_RELATIONS = {sympy.StrictLessThan: lambda a, b: a < b, sympy.LessThan: lambda a, b: a <= b,
              sympy.StrictGreaterThan: lambda a, b: a > b, sympy.GreaterThan: lambda a, b: a >= b,
              sympy.Equality: lambda a, b: a == b, sympy.Unequality: lambda a, b: a != b}


class NotCompiled(Exception):
    """A node compile_mp does not evaluate (the caller falls back to lambdify)."""


def compile_mp(names, exprs, overrides=None):
    """A function of ``len(names)`` mpmath values returning ``exprs`` evaluated (a list when
    ``exprs`` is one). ``overrides``: {function name: callable}, as lambdify's first module dict."""
    index = {s: k for k, s in enumerate(names)}
    functions = dict(_FUNCTIONS, **(overrides or {}))
    if isinstance(exprs, (list, tuple)):
        nodes = [_node(sympy.sympify(e), index, functions) for e in exprs]
        return lambda *args: [f(args) for f in nodes]
    node = _node(sympy.sympify(exprs), index, functions)
    return lambda *args: node(args)


def _node(e, index, functions):
    if e.is_Symbol:
        if e not in index:
            raise NotCompiled(f"free symbol {e}")
        k = index[e]
        return lambda a: a[k]
    if e in _NUMBERS:
        make = _NUMBERS[e]
        return lambda a: make()
    if e is S.ComplexInfinity:
        return lambda a: mpmath.nan
    if e.is_Integer:
        v = int(e)
        return lambda a: v
    if e.is_Rational:
        p, q = int(e.p), int(e.q)
        return lambda a: mpmath.mpf(p) / mpmath.mpf(q)
    if e.is_Float:
        t = e._mpf_
        return lambda a: mpmath.mpf(t)
    if e is S.true or e is S.false:
        v = bool(e)
        return lambda a: v
    children = [_node(arg, index, functions) for arg in e.args] if not isinstance(e, sympy.Piecewise) else None
    if e.is_Add:
        return _fold(children, lambda x, y: x + y)
    if e.is_Mul:
        return _fold(children, lambda x, y: x * y)
    if e.is_Pow:
        base, exp = children
        if e.exp == S.Half:
            return lambda a: mpmath.sqrt(base(a))
        if e.exp == -S.Half:
            return lambda a: 1 / mpmath.sqrt(base(a))
        if e.exp == S.NegativeOne:
            return lambda a: 1 / base(a)
        return lambda a: base(a) ** exp(a)
    if isinstance(e, sympy.Piecewise):
        pieces = [(_node(value, index, functions), _node(cond, index, functions)) for value, cond in e.args]

        def piecewise(a):
            for value, cond in pieces:
                if cond(a):
                    return value(a)
            return None  # as lambdify's printed ``... else None``
        return piecewise
    if type(e) in _RELATIONS:
        compare, (lhs, rhs) = _RELATIONS[type(e)], children
        return lambda a: compare(lhs(a), rhs(a))
    if isinstance(e, sympy.And):
        return lambda a: all(c(a) for c in children)
    if isinstance(e, sympy.Or):
        return lambda a: any(c(a) for c in children)
    if isinstance(e, sympy.Not):
        (inner,) = children
        return lambda a: not inner(a)
    if (isinstance(e, sympy.Function) or e.is_Function) and type(e).__name__ in functions:
        fn = functions[type(e).__name__]
        if len(children) == 1:
            (only,) = children
            return lambda a: fn(only(a))
        return lambda a: fn(*[c(a) for c in children])
    raise NotCompiled(f"no mpmath rule for {type(e).__name__}")


def _fold(children, op):
    first, rest = children[0], children[1:]

    def fold(a):
        value = first(a)
        for c in rest:
            value = op(value, c(a))
        return value
    return fold


def mp_function(names, exprs, modules):
    """``compile_mp`` where it knows every node, else ``sympy.lambdify(names, exprs, modules=modules)``."""
    overrides = modules[0] if modules and isinstance(modules[0], dict) else None
    try:
        return compile_mp(names, exprs, overrides)
    except NotCompiled:
        return sympy.lambdify(names, exprs, modules=modules, docstring_limit=0)
