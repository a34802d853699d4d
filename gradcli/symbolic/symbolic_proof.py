"""Deciding that a difference of two expressions is zero, cheapest rewriting first.

A wrong backward is caught by the exact-point screening before any of this runs, so here the
difference is almost always truly zero and only needs the right rewrite to show it: structural
cancellation, then expand, cancel (rational functions of exp(-x) cover sigmoid), piecewise folding,
and finally SymPy's simplify (trigonometric, hyperbolic and power identities).
"""
import sympy

from gradcli.symbolic.symbolic_ops import Indicator, indicators_as_piecewise


def _attempts(expr):
    yield lambda: expr.expand()
    yield lambda: sympy.cancel(expr)
    yield lambda: sympy.together(expr.expand())
    if expr.has(sympy.Piecewise, Indicator, sympy.Max, sympy.Min):
        folded = sympy.piecewise_fold(indicators_as_piecewise(expr).rewrite(sympy.Piecewise))
        yield lambda: sympy.simplify(folded)
    yield lambda: sympy.simplify(expr)
    if expr.has(sympy.sin, sympy.cos, sympy.tan, sympy.sinh, sympy.cosh, sympy.tanh, sympy.asinh, sympy.acosh):
        yield lambda: sympy.simplify(expr.rewrite(sympy.exp))
    yield lambda: sympy.simplify(sympy.powsimp(sympy.powdenest(expr)))  # no force=: it ignores assumptions


def simplifies_to_zero(expr, bounds=None):
    """True when ``expr`` is 0 wherever it is defined, except possibly on a set of measure zero
    (a Piecewise whose nonzero branches sit on equalities such as x = 0: kink conventions).

    ``bounds``: {symbol: (lower, upper)} from the forward's domain (x > 1 for acosh). SymPy's
    assumptions cannot say x > 1, so a last attempt writes x = 1 + t with t > 0, which lets
    sqrt(x - 1)·sqrt(x + 1) become sqrt(x² - 1) without forcing anything."""
    expr = sympy.sympify(expr)
    if expr == 0:
        return True
    if _any_attempt(expr):
        return True
    shifted = _shifted(expr, bounds or {})
    return shifted is not None and _any_attempt(shifted)


def _any_attempt(expr):
    for attempt in _attempts(expr):
        try:
            result = attempt()
        except (TypeError, ValueError, NotImplementedError, RecursionError, AttributeError):
            continue
        if result == 0 or zero_almost_everywhere(result):
            return True
    return False


def _shifted(expr, bounds):
    substitution = {}
    for k, symbol in enumerate(sorted(expr.free_symbols & set(bounds), key=lambda s: s.name)):
        lower, upper = bounds[symbol]
        t = sympy.Symbol(f"_t{k}", positive=True)
        if lower is not None and lower.is_number:
            substitution[symbol] = lower + t
        elif upper is not None and upper.is_number:
            substitution[symbol] = upper - t
    return expr.xreplace(substitution) if substitution else None


def zero_almost_everywhere(expr):
    if not isinstance(expr, sympy.Piecewise):
        return False
    for value, condition in expr.args:
        if value == 0 or condition is sympy.false:
            continue
        if not _on_equality(condition):
            return False
    return True


def _on_equality(condition):
    if isinstance(condition, sympy.Eq):
        return True
    if isinstance(condition, sympy.And):
        return any(_on_equality(c) for c in condition.args)
    return False
