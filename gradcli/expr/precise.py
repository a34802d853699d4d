"""High-precision values of expressions at a point, computed on the shared-subexpression DAG.

``expr.evalf(subs=...)`` walks the expression as a tree, which for one formula of a whole network takes
minutes; here each distinct subexpression is evaluated once, at a working precision that is raised
until two successive precisions agree far beyond the digits ever shown (so cancellation cannot leak
into a printed digit).
"""
import math

import mpmath
import sympy

from gradcli.expr.reverse import dag_nodes

LEVELS = (30, 50, 100, 200, 400)   # decimal digits of working precision
AGREEMENT = 1e-20                  # relative; values are printed to 10 digits
HUGE_BITS = 100_000                # |value| beyond 2**HUGE_BITS (~1e30103): "out of range", never computed on
OUT_OF_RANGE = "out of range"
_HUGE = sympy.Dummy("huge")        # stands for such a value inside the DAG walk


def _huge(value):
    """True for a Float whose magnitude is beyond 2**HUGE_BITS (mpmath would happily build bigger ones)."""
    if not getattr(value, "is_Float", False):
        return False
    sign, man, exp, bc = value._mpf_
    return bool(man) and exp + bc > HUGE_BITS


MAX_EXTRA_DIGITS = 20_000         # beyond this a number's integer digits are not all kept


def _numeric(value, dps):
    """``value`` as a Float with ``dps`` digits *after the point* as well: a large point or constant
    (10^1000, 10^100 in sin(10^100*x)) keeps every integer digit, so that mpmath's argument reduction
    sees the true number, not one rounded to 30 significant digits."""
    if value.is_Float:
        return value
    result = value.evalf(dps)
    if result.is_Float and result._mpf_[1]:
        integer_digits = int((result._mpf_[2] + result._mpf_[3]) * 0.30103) + 1
        if integer_digits > 1:
            result = value.evalf(dps + min(integer_digits, MAX_EXTRA_DIGITS))
    return result


def _grows_past_range(node, args):
    """exp/sinh/cosh/Pow whose result would pass 2**HUGE_BITS, told from the arguments' sizes alone
    (mpmath would spend seconds building exp(10^1000) just to find it is out of range)."""
    name = type(node).__name__
    try:
        if name in ("exp", "sinh", "cosh") and args[0].is_Float:
            return abs(float(args[0])) > HUGE_BITS * 0.6931471805599453
        if name == "Pow" and args[0].is_Float and args[1].is_Float and args[0] != 0:
            return float(args[1]) * math.log2(abs(float(args[0]))) > HUGE_BITS
    except (OverflowError, ValueError, TypeError):
        return True
    return False


def dag_values(exprs, definitions, point, dps):
    """{node: numeric SymPy value} for every node of ``exprs`` (and CSE ``definitions``) at ``point``."""
    values = {symbol: _numeric(value, dps) for symbol, value in point.items()}

    def apply(node, args):
        if any(arg is _HUGE or _huge(arg) for arg in args) or _grows_past_range(node, args):
            return _HUGE
        try:
            result = node.func(*args)
            result = result if result.is_Number else result.evalf(dps)
            return _HUGE if _huge(result) else result
        except (TypeError, ValueError, ZeroDivisionError, OverflowError, AttributeError):
            return sympy.nan

    def constant(node):
        """A variable-free subexpression, node by node too: exp(10^1000) must not be evalf'd whole."""
        if node not in values:
            values[node] = _numeric(node, dps) if node.is_Atom else apply(node, [constant(a) for a in node.args])
        return values[node]

    def run(roots):
        for node in dag_nodes(roots):
            if node in values:
                continue
            args = [values[arg] if arg in values else (constant(arg) if not arg.free_symbols else arg)
                    for arg in node.args]
            values[node] = apply(node, args)

    for symbol, definition in definitions:
        run([definition])
        values[symbol] = values[definition] if definition in values else _numeric(
            definition.xreplace(values), dps)
    run(exprs)
    for expr in exprs:
        if expr not in values:
            values[expr] = _numeric(expr.xreplace(values), dps) if expr.free_symbols else constant(expr)
    return values


def classify(value):
    """("ok", mpf) for a finite real number, else ("not real" | "undefined" | "out of range", None)."""
    if value is _HUGE or _huge(value):
        return OUT_OF_RANGE, None
    if value.free_symbols or value.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        return "undefined", None
    real, imag = value.as_real_imag()
    if not (real.is_Number and imag.is_Number):
        return "undefined", None
    if imag != 0 and abs(imag) > 1e-25 * max(1, abs(real)):
        return "not real", None
    if real.is_Float:
        return "ok", mpmath.mpf(real._mpf_)
    return "ok", mpmath.mpf(real.evalf(LEVELS[-1])._mpf_) if not real.is_Rational else \
        mpmath.mpf(real.p) / real.q


POLE = "pole"
POLE_GROWTH = 1e10   # |value| grew this much from one precision to the next: a singularity at the point


def precise(exprs, definitions, point):
    """([(status, mpf or None)] for ``exprs``, node values at the final precision).

    A value that never settles while growing with the precision (tan at an exact pi/2, evaluated at
    pi/2 to 30, 50, ... digits: 1e30, 1e50, ...) is a pole there, not a number."""
    previous, previous_imag = None, None
    for dps in LEVELS:
        with mpmath.workdps(dps):
            values = dag_values(exprs, definitions, point, dps)
            current = [classify(values[expr]) for expr in exprs]
            imag = [_imaginary(values[expr]) for expr in exprs]
        if previous is not None and _agree(previous, current):
            return _complex(current, previous_imag, imag), values
        previous = current if previous is None else _poles(previous, current)
        previous_imag = imag
    return _complex(_poles(previous, current), previous_imag, imag), values


def _imaginary(value):
    try:
        part = value.as_real_imag()[1] if not (value is _HUGE or value.free_symbols) else None
        return mpmath.mpf(part._mpf_) if part is not None and part.is_Float else None
    except (AttributeError, TypeError, ValueError):
        return None


def _complex(statuses, imag_before, imag_after):
    """An imaginary part too small next to a huge real part to count as "not real" by itself, but the same
    at two precisions, is really there ((-1)^e - 2^999): rounding noise would have shrunk with the precision."""
    marked = []
    for (status, value), a, b in zip(statuses, imag_before or [None] * len(statuses), imag_after):
        steady = a is not None and b is not None and b != 0 and abs(a - b) <= 1e-6 * abs(b)
        marked.append(("not real", None) if status == "ok" and steady else (status, value))
    return marked


def _poles(before, after):
    marked = []
    for (status_a, value_a), (status_b, value_b) in zip(before, after):
        if status_a == POLE or (status_a == "ok" and status_b == "ok" and abs(value_b) > 1
                                and abs(value_b) > POLE_GROWTH * max(abs(value_a), 1)):
            marked.append((POLE, None))
        else:
            marked.append((status_b, value_b))
    return marked


def _agree(a, b):
    for (status_a, value_a), (status_b, value_b) in zip(a, b):
        if status_a != status_b:
            return False
        if status_a == "ok" and abs(value_a - value_b) > AGREEMENT * max(1, abs(value_b)):
            return False
    return True
