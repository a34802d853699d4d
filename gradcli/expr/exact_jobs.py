"""Symbolic jobs that may take unbounded time; they run in the budgeted child (see budget.py).

Each job returns plain data (strings, SymPy objects) so it can be pickled back to the parent.
"""
import sympy

from gradcli.expr import formatting
from gradcli.expr.functions import ML_FUNCTIONS, to_elementary

MAX_EXACT_TEXT = 2000   # longer exact values are not worth printing; the float says it better


def _forms(value, styles):
    text = formatting.ascii(value)
    if len(text) > MAX_EXACT_TEXT:
        return None
    return {style: text if style == "ascii" else formatting.form(value, style) for style in styles}


def exact_values(items, definitions, point, styles=("ascii", "unicode", "latex")):
    """{key: text forms of the exact value, or None} for ``items = [(key, expr)]`` at ``point``."""
    results = {}
    values = dict(point)
    for symbol, definition in definitions:
        values[symbol] = definition.xreplace(values)
    for key, expr in items:
        value = expr.xreplace(values)
        if value.has(*ML_FUNCTIONS):
            value = to_elementary(value)
        results[key] = _forms(value, styles) if not value.free_symbols else None
    return results


def simplified(expr):
    """A strictly shorter equivalent form (by operation count), or None.

    Purely algebraic expressions only try factor/cancel (milliseconds); full ``simplify`` (its first
    call alone costs ~0.2 s) is kept for expressions with functions in them, where trig/exp/log
    identities pay off.
    """
    candidates = [sympy.factor(expr), sympy.cancel(expr)]
    if expr.atoms(sympy.Function):
        candidates.append(sympy.simplify(expr))
    best, best_ops = None, sympy.count_ops(expr)
    # A form with a Piecewise the derivative did not have cannot be typed back into gradcli diff.
    candidates = [c for c in candidates if expr.has(sympy.Piecewise) or not c.has(sympy.Piecewise)]
    for candidate in candidates:
        ops = sympy.count_ops(candidate)
        if ops < best_ops:
            best, best_ops = candidate, ops
    return best


def difference_is_zero(difference):
    """True when the difference simplifies to 0 (with the ML functions rewritten to exp/log/Max)."""
    difference = to_elementary(difference)
    if difference == 0:
        return True
    return sympy.simplify(difference) == 0

