"""Deciding that a difference of two expressions is zero, cheapest rewriting first.

A wrong backward is caught by the exact-point screening before any of this runs, so here the
difference is almost always truly zero and only needs the right rewrite to show it: structural
cancellation, then expand, cancel (rational functions of exp(-x) cover sigmoid), a case split over
the masks, piecewise folding, and finally SymPy's simplify (trigonometric, hyperbolic and power
identities).

The case split (``zero_in_every_case``) is what masks need: ``[x > lo]·[hi > x]`` and
``[x > lo]·[hi > x]·[hi > lo]`` are equal because x > lo and hi > x imply hi > lo, which no
rewrite of the expression shows. Each mask ``[u > 0]`` is set to 1 and to 0 in turn; a branch whose
signs no point can have (the ``u`` are linear in their terms: a strict linear system, decided
exactly by Fourier–Motzkin elimination) is dropped, every other branch must simplify to 0.
"""
import itertools
from fractions import Fraction

import sympy

from gradcli.symbolic.ops import Indicator, indicators_as_piecewise


def _attempts(expr):
    yield lambda: expr.expand()
    yield lambda: sympy.cancel(expr)
    yield lambda: sympy.together(expr.expand())
    if expr.has(Indicator):
        yield lambda: sympy.S.Zero if zero_in_every_case(expr) else expr
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


# ---- the case split over masks ------------------------------------------------------------------
MAX_CASE_MASKS = 14        # distinct masks [u > 0] a case split takes on (branches are pruned early)
MAX_FM_CONSTRAINTS = 400   # Fourier–Motzkin gives up (says "feasible") beyond this many inequalities


def zero_in_every_case(expr):
    """True when ``expr`` is 0 for every assignment of its masks ``[u > 0]`` that some point can
    have: a sound test (a branch is dropped only when its strict inequalities are infeasible even
    with every non-linear term of the ``u`` taken as a free variable)."""
    masks = sorted((m for m in expr.atoms(Indicator) if _mask_difference(m) is not None), key=sympy.default_sort_key)
    if not masks or len(masks) > MAX_CASE_MASKS:
        return False
    forms = {m: _linear_form(_mask_difference(m)) for m in masks}
    return _branch(expr, masks, forms, [])


def _mask_difference(mask):
    condition = mask.args[0]
    if isinstance(condition, sympy.Gt) and condition.rhs == 0:
        return condition.lhs
    return None


def _branch(expr, masks, forms, signs):
    expr = sympy.expand(expr)
    if expr == 0:
        return True
    left = [m for m in masks if expr.has(m)]
    if not left:
        return not expr.has(Indicator) and _any_attempt(expr)
    mask = left[0]
    for bit in (1, 0):
        chosen = signs + [(forms[mask], bit)]
        if not _feasible(chosen):
            continue
        if not _branch(expr.xreplace({mask: sympy.Integer(bit)}), left[1:], forms, chosen):
            return False
    return True


def _linear_form(u):
    """{term: coefficient as a Fraction} with the constant under 1, or None when a coefficient is not a
    rational number (then the mask constrains nothing)."""
    form = {}
    for term, coeff in sympy.expand(u).as_coefficients_dict().items():
        if not coeff.is_Rational:
            return None
        form[term] = form.get(term, 0) + Fraction(int(coeff.p), int(coeff.q))
    return form


def _sign_facts(forms):
    """term > 0 for the terms known positive or non-negative (zero only on a set of measure zero)."""
    facts = []
    for form in forms:
        for term in form:
            if term != 1 and (term.is_positive or term.is_nonnegative) and not term.is_number:
                facts.append({term: Fraction(1)})
    return facts


def _feasible(signs):
    """Whether the strict system {u > 0 where bit 1, u < 0 where bit 0} has a solution."""
    system = []
    for form, bit in signs:
        if form is None:
            continue
        system.append(form if bit else {t: -c for t, c in form.items()})
    system += _sign_facts([f for f, _ in signs if f is not None])
    return _fourier_motzkin(system)


def _fourier_motzkin(system):
    """Whether strict inequalities sum_t c_t·t + c_1 > 0 (dicts term -> coefficient, the constant
    under 1) have a common solution, eliminating one term at a time."""
    rows = [{t: c for t, c in r.items() if c != 0} for r in system]
    while True:
        if any(set(r) <= {1} and not r.get(1, 0) > 0 for r in rows):
            return False  # a constant row c > 0 with c <= 0
        rows = [r for r in rows if not set(r) <= {1}]
        variables = sorted({t for r in rows for t in r if t != 1}, key=sympy.default_sort_key)
        if not variables:
            return True
        v = min(variables, key=lambda t: sum(r.get(t, 0) > 0 for r in rows) * sum(r.get(t, 0) < 0 for r in rows))
        upper = [r for r in rows if r.get(v, 0) > 0]
        lower = [r for r in rows if r.get(v, 0) < 0]
        rest = [r for r in rows if v not in r]
        if len(upper) * len(lower) + len(rest) > MAX_FM_CONSTRAINTS:
            return True  # too large to decide: keep the branch (sound)
        combined = []
        for a, b in itertools.product(upper, lower):
            ka, kb = a[v], -b[v]  # both > 0: kb·a + ka·b eliminates v
            row = {}
            for t in set(a) | set(b):
                c = a.get(t, 0) * kb + b.get(t, 0) * ka
                if t != v and c != 0:
                    row[t] = c
            combined.append(row)
        rows = rest + combined
