"""High-precision values of expressions at a point, computed on the shared-subexpression DAG.

``expr.evalf(subs=...)`` walks the expression as a tree, which for one formula of a whole network takes
minutes; here each distinct subexpression is evaluated once, at a working precision that is raised
until two successive precisions agree far beyond the digits ever shown (so cancellation cannot leak
into a printed digit).
"""
import mpmath
import sympy

from gradcli.symbolic.reverse import dag_nodes

LEVELS = (30, 50, 100, 200, 400)   # decimal digits of working precision
AGREEMENT = 1e-20                  # relative; values are printed to 10 digits


def _numeric(value, dps):
    return value if value.is_Float else value.evalf(dps)


def dag_values(exprs, definitions, point, dps):
    """{node: numeric SymPy value} for every node of ``exprs`` (and CSE ``definitions``) at ``point``."""
    values = {symbol: _numeric(value, dps) for symbol, value in point.items()}

    def run(roots):
        for node in dag_nodes(roots):
            if node in values:
                continue
            args = [values[arg] if arg in values else (_numeric(arg, dps) if not arg.free_symbols else arg)
                    for arg in node.args]
            try:
                result = node.func(*args)
                values[node] = result if result.is_Number else result.evalf(dps)
            except (TypeError, ValueError, ZeroDivisionError, OverflowError, AttributeError):
                values[node] = sympy.nan

    for symbol, definition in definitions:
        run([definition])
        values[symbol] = values[definition] if definition in values else _numeric(
            definition.xreplace(values), dps)
    run(exprs)
    for expr in exprs:
        if expr not in values:
            values[expr] = _numeric(expr.xreplace(values), dps) if expr.free_symbols else _numeric(expr, dps)
    return values


def classify(value):
    """("ok", mpf) for a finite real number, else ("not real" | "undefined", None)."""
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


def precise(exprs, definitions, point):
    """([(status, mpf or None)] for ``exprs``, node values at the final precision)."""
    previous = None
    for dps in LEVELS:
        with mpmath.workdps(dps):
            values = dag_values(exprs, definitions, point, dps)
            current = [classify(values[expr]) for expr in exprs]
        if previous is not None and _agree(previous, current):
            return current, values
        previous = current
    return current, values


def _agree(a, b):
    for (status_a, value_a), (status_b, value_b) in zip(a, b):
        if status_a != status_b:
            return False
        if status_a == "ok" and abs(value_a - value_b) > AGREEMENT * max(1, abs(value_b)):
            return False
    return True
