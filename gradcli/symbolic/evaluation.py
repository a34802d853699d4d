"""Evaluating traced expressions fast and in high precision, element by element.

Elementwise, broadcast and matmul code gives every element the same formula up to renaming its
symbols (``g[0,1]*exp(x[0,1])`` is ``g[1,1]*exp(x[1,1])`` with other names). ``canonical`` renames an
expression's symbols in a fixed order, so work done once per formula (compiling it for mpmath,
simplifying it in a proof) is reused for every element with that formula.
"""
import mpmath
import numpy as np
import sympy

from gradcli.symbolic.ops import Indicator, almost_everywhere, comparison_differences, indicators_as_piecewise
from gradcli.symbolic.trace import symbol_order

DPS = 40  # digits for exact references: far beyond float64, so rounding the reference costs < 1 ulp


def canonical(expr):
    """(expr with symbols renamed _c0, _c1, ... in (base name, element index) order, original symbols)."""
    symbols = sorted(expr.free_symbols, key=symbol_order)
    renamed = {s: sympy.Symbol(f"_c{k}", **s.assumptions0) for k, s in enumerate(symbols)}
    return expr.xreplace(renamed), symbols


def _heaviside(x, h0=None):
    return mpmath.mpf(1) if x > 0 else mpmath.mpf(0) if x < 0 else mpmath.mpf(0.5 if h0 is None else h0)


_MODULES = [{"Heaviside": _heaviside, "sign": mpmath.sign, "DiracDelta": lambda *a: mpmath.mpf(0)}, "mpmath"]


def switch_arguments(expr):
    """Expressions whose zero marks a kink: arguments of Abs/sign/Heaviside, sides of compared
    values in masks and Piecewise conditions (a comparison with a Max/Min: with each of its
    arguments), differences of Max/Min arguments."""
    found = []
    for node in expr.atoms(sympy.Abs, sympy.sign, sympy.Heaviside, sympy.Max, sympy.Min, Indicator,
                           sympy.Piecewise, sympy.floor, sympy.ceiling):
        if isinstance(node, (sympy.Max, sympy.Min)):
            args = node.args
            found.extend(a - b for i, a in enumerate(args) for b in args[i + 1:])
        elif isinstance(node, (Indicator, sympy.Piecewise)):
            conditions = [node.args[0]] if isinstance(node, Indicator) else [c for _, c in node.args]
            for cond in conditions:
                for rel in (cond.atoms(sympy.core.relational.Relational) if isinstance(cond, sympy.Basic) else ()):
                    found.extend(comparison_differences(rel.lhs - rel.rhs))  # x >= Max(x, y): x - y
        elif isinstance(node, (sympy.floor, sympy.ceiling)):
            found.append(sympy.sin(sympy.pi * node.args[0]))  # jumps at integers
        elif isinstance(node, sympy.Heaviside):
            found.extend(comparison_differences(node.args[0]))
        else:
            found.append(node.args[0])
    return [f for f in found if isinstance(f, sympy.Basic) and not f.is_number]


class MpEvaluator:
    """Evaluate expressions at points in mpmath, compiling each distinct formula once."""

    def __init__(self, dps=DPS):
        self.dps = dps
        self._compiled = {}

    def _compile(self, key, symbols):
        compiled = self._compiled.get(key)
        if compiled is None:
            names = [sympy.Symbol(f"_c{k}", **s.assumptions0) for k, s in enumerate(symbols)]
            from gradcli.symbolic.mp_compile import mp_function

            value = mp_function(names, indicators_as_piecewise(key), _MODULES)
            switches = [mp_function(names, indicators_as_piecewise(s), _MODULES) for s in switch_arguments(key)]
            compiled = self._compiled[key] = (value, switches)
        return compiled

    def evaluate(self, expr, values):
        """(value as mpf, at_kink) of ``expr`` with ``values[symbol]`` (mpf or numbers) substituted.

        ``at_kink`` is True when a switch argument is exactly zero there: the derivative is not
        defined at that point, whatever convention an implementation picks."""
        expr = almost_everywhere(sympy.sympify(expr))
        if expr.is_number:
            return sympy_to_mp(expr, self.dps), False
        if expr.has(sympy.Derivative):
            raise ValueError(f"no closed-form derivative: {expr}")
        key, symbols = canonical(expr)
        value_fn, switch_fns = self._compile(key, symbols)
        args = [values[s] for s in symbols]
        with mpmath.workdps(self.dps):
            args = [mpmath.mpf(a) if not isinstance(a, mpmath.mpf) else a for a in args]
            value = mpmath.mpmathify(value_fn(*args))
            if isinstance(value, mpmath.mpc) and value.imag == 0:
                value = value.real  # 0 * log(-1) in an unselected branch of a mask: real after all
            kink = any(_is_zero(fn(*args)) for fn in switch_fns)
            return value, kink


def sympy_to_mp(number, dps=DPS):
    """A SymPy number as mpmath (mpc when it has an imaginary part, nan when undefined)."""
    value = sympy.N(number, dps)
    if value.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        return mpmath.mpf("nan")
    re, im = value.as_real_imag()
    with mpmath.workdps(dps):
        real = mpmath.mpf(sympy.Float(re, dps)._mpf_)
        if im != 0:
            return mpmath.mpc(real, mpmath.mpf(sympy.Float(im, dps)._mpf_))
        return real


def _is_zero(value):
    try:
        return abs(value) == 0
    except TypeError:
        return False


def exact_float(value):
    """An mpmath number rounded to the nearest float64 (nan if it is not real)."""
    if isinstance(value, mpmath.mpc):
        if value.imag != 0:
            return float("nan")
        value = value.real
    return float(value)


def as_mp(array):
    """Float values as exact mpmath numbers (every binary float is exactly an mpf)."""
    return np.vectorize(lambda v: mpmath.mpf(float(v)), otypes=[object])(np.asarray(array, dtype=np.float64))
