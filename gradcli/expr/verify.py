"""``--check ANSWER``: is the user's derivative right? Proved, refuted (with a point), or undecided.

Refutation is numeric but unambiguous: both sides to 30+ digits (precise.py), on simple points first (1, 2, 1/2, ...)
so a counterexample is easy to redo by hand. Proof is symbolic (the difference simplifies to 0) and runs
in the budgeted child; if it does not finish, the verdict is "undecided" with the numeric evidence.
"""
import random

import mpmath
import sympy

from gradcli.expr import formatting
from gradcli.expr.errors import ExpressionError
from gradcli.expr.model import CheckVerdict
from gradcli.expr.parser import parse_value, split_assignments
from gradcli.expr.precise import LEVELS, precise

NICE = [sympy.Integer(1), sympy.Integer(2), sympy.Rational(1, 2), sympy.Integer(3), sympy.Integer(-1),
        sympy.Rational(1, 3), sympy.Integer(-2), sympy.Rational(5, 2), sympy.Rational(-1, 2), sympy.Integer(5)]
RANDOM_POINTS = 20
MISMATCH_RTOL = 1e-15     # at 30 digits, equal expressions agree to ~1e-28


def parse_answers(text, variables, assumptions, parameters=()):
    """{variable name: (answer text, expression)} from ``ANSWER`` or ``x=..., y=...``.

    An answer may use the variables and parameters of the expression, nothing else (a usage error)."""
    names = [str(v) for v in variables]
    known = set(variables) | set(parameters)
    symbol_names = names + [str(p) for p in parameters]

    def answer(value, column):
        expr = parse_value(value, column, text, "--check", assumptions, symbol_names)
        unknown = sorted(str(s) for s in expr.free_symbols - known)
        if unknown:
            raise ExpressionError(f"--check: {', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not a "
                                  f"variable of the expression (variables: {', '.join(symbol_names)})",
                                  column, text, "--check")
        return value.strip(), expr

    pieces = split_assignments(text)
    if len(pieces) == 1 and pieces[0][0] is None:
        if len(names) != 1:
            raise ExpressionError(f"--check: give one answer per variable, e.g. "
                                  f"{', '.join(n + '=...' for n in names)}")
        _, value, column, _ = pieces[0]
        return {names[0]: answer(value, column)}
    answers = {}
    for name, value, column, name_column in pieces:
        if name is None:
            raise ExpressionError("--check: expected NAME=ANSWER", column, text, "--check")
        if name not in names:
            raise ExpressionError(f"--check: {name!r} is not a variable of the expression", name_column, text,
                                  "--check")
        answers[name] = answer(value, column)
    return answers


def _points(variables, assumptions, seed=0):
    values = [v for v in NICE if assumptions != "positive" or v > 0]
    for k in range(len(values)):
        yield {var: values[(k + 3 * j) % len(values)] for j, var in enumerate(variables)}
    rng = random.Random(seed)
    for _ in range(RANDOM_POINTS):
        low = 0 if assumptions == "positive" else -30
        yield {var: sympy.Rational(rng.randint(low + 1, 30), rng.randint(1, 10)) for var in variables}


CONSTANT_ZERO = mpmath.mpf(10) ** -(LEVELS[-1] - 50)   # below this, a constant difference is 0 (to the digits used)


def _constant_difference(derived, answer):
    """The difference when SymPy's own arithmetic already reduces it to a non-zero constant (2x + 10^-20
    against 2x), else None: no point can show 1e-20 at 30 digits relative to 2x, but it is not 0."""
    difference = answer - derived
    if difference.free_symbols or difference == 0:
        return None
    ((status, value),), _ = precise([difference], [], {})
    return value if status == "ok" and abs(value) > CONSTANT_ZERO else None


def search_counterexample(derived, answer, variables, assumptions):
    """(point, derived value, answer value) where they differ, else (None, points tried, largest gap)."""
    constant = _constant_difference(derived, answer)
    if constant is not None:
        point = {var: sympy.Integer(1) for var in variables}
        ((_, value_d), (_, value_a)), _ = precise([derived, answer], [], point)
        return point, value_d, value_a, constant
    tried, largest = 0, 0.0
    for point in _points(variables, assumptions):
        ((status_d, value_d), (status_a, value_a)), _ = precise([derived, answer], [], point)
        if status_d != "ok" or status_a != "ok":
            continue
        tried += 1
        gap = abs(value_d - value_a)
        if gap > MISMATCH_RTOL * max(1, abs(value_d)):
            return point, value_d, value_a, None
        largest = max(largest, float(gap))
    return None, tried, largest


def point_text(point):
    return ", ".join(f"{k}={formatting.ascii(v)}" for k, v in point.items())


def verdict(variable, label, answer_text, found, proof, budget):
    """The CheckVerdict from the numeric search (``search_counterexample``) and the proof job's result
    (None if it did not finish)."""
    if found[0] is not None:
        point, value_d, value_a, constant = found
        if constant is not None:
            return CheckVerdict(variable, answer_text, "refuted",
                                f"your answer minus {label} is the constant {formatting.number(constant)}, not 0 "
                                f"(at {point_text(point)}: {formatting.number(value_a, 25)} vs "
                                f"{formatting.number(value_d, 25)})",
                                {str(k): formatting.ascii(v) for k, v in point.items()})
        return CheckVerdict(variable, answer_text, "refuted",
                            f"at {point_text(point)} your answer gives {formatting.number(value_a)}, "
                            f"but {label} = {formatting.number(value_d)}",
                            {str(k): formatting.ascii(v) for k, v in point.items()})
    _, tried, largest = found
    if proof == ("ok", True):
        return CheckVerdict(variable, answer_text, "proved",
                            "the difference between your answer and the derivative simplifies to 0")
    if proof is None:
        why = f"SymPy did not finish simplifying the difference within {budget:g} s"
    elif proof[0] == "error":
        why = f"SymPy failed on the difference ({proof[1]})"
    else:
        why = "SymPy could not simplify the difference to 0"
    if tried == 0:
        return CheckVerdict(variable, answer_text, "undecided",
                            f"{why}, and no test point had both sides real and finite")
    return CheckVerdict(variable, answer_text, "undecided",
                        f"{why}; numerically equal at {tried} points (largest difference "
                        f"{formatting.error_text(largest)}, both sides to {LEVELS[0]}+ digits)")
