"""Symbolic jobs that may take unbounded time; they run in the budgeted child (see budget.py).

Each job returns plain data (strings, SymPy objects) so it can be pickled back to the parent.
"""
import sympy

from gradcli.symbolic import formatting
from gradcli.symbolic.functions import ML_FUNCTIONS, to_elementary

MAX_EXACT_TEXT = 2000   # longer exact values are not worth printing; the float says it better


def _forms(value):
    text = formatting.ascii(value)
    if len(text) > MAX_EXACT_TEXT:
        return None
    return {"ascii": text, "unicode": formatting.unicode(value), "latex": formatting.latex(value)}


def exact_values(items, definitions, point):
    """{key: text forms of the exact value, or None} for ``items = [(key, expr)]`` at ``point``."""
    results = {}
    values = dict(point)
    for symbol, definition in definitions:
        values[symbol] = definition.xreplace(values)
    for key, expr in items:
        value = expr.xreplace(values)
        if value.has(*ML_FUNCTIONS):
            value = to_elementary(value)
        results[key] = _forms(value) if not value.free_symbols else None
    return results


def simplified(expr):
    """simplify(expr) when that is strictly shorter (by operation count), else None."""
    result = sympy.simplify(expr)
    if sympy.count_ops(result) < sympy.count_ops(expr):
        return result
    return None


def difference_is_zero(difference):
    """True when the difference simplifies to 0 (with the ML functions rewritten to exp/log/Max)."""
    difference = to_elementary(difference)
    if difference == 0:
        return True
    return sympy.simplify(difference) == 0

