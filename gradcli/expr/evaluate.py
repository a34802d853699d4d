"""Numbers at --at points: the exact value (high precision), the engine's autograd and a finite difference.

The three are independent: SymPy's derivative evaluated with mpmath at 30 digits; the *function* run
forward and backward through gradcli's engine (nested autograd.grad for higher orders); and Richardson
finite differences (gradcli.numeric) of the engine's forward (or of its lower-order derivative). Where
they disagree the point is classified: a non-differentiable point (a kink, found from one-sided
differences or from abs/sign/max/... whose argument vanishes there) or an engine bug.
"""
import mpmath
import sympy

from gradcli.expr import formatting
from gradcli.expr.model import Cell, Note, PointResult
from gradcli.expr.precise import classify, precise
from gradcli.expr.reverse import dag_nodes

PRECISION = 30            # decimal digits for the exact side
AUTOGRAD_RTOL = 1e-9      # engine vs exact, relative to max(1, |exact|): float64 round-off, with room
FD_FACTOR = 100.0         # finite differences vs exact: this many times their own error estimate ...
FD_RTOL = 1e-7            # ... or this relative floor, whichever is larger
FLOAT64_MAX = 1.7976931348623157e308
FLOAT64_TINY = 2.2250738585072014e-308   # below the smallest normal float64 the engine's numbers are 0 or subnormal
NONSMOOTH = ("Abs", "sign", "Heaviside", "Max", "Min", "relu", "Piecewise", "DiracDelta", "floor", "ceiling")


def _note(kind, unicode_text, ascii_text=None):
    return Note(kind, {"unicode": unicode_text, "ascii": ascii_text or unicode_text.replace("−", "-")})


def _vanishing_kinks(exprs, values):
    """Non-smooth nodes at their switching point (argument 0, or a tie in max/min), as readable text.

    ``values`` are the high-precision node values from ``precise``.
    """
    found = []
    for node in dag_nodes(exprs):
        head = type(node).__name__
        if head not in NONSMOOTH or head == "Piecewise":
            continue
        numbers = [value for status, value in (classify(values[arg]) if arg in values else
                                               classify(arg.evalf(PRECISION)) for arg in node.args)
                   if status == "ok"]
        if head in ("Max", "Min"):
            hit = any(abs(a - b) < 1e-20 for i, a in enumerate(numbers) for b in numbers[i + 1:])
        elif head in ("floor", "ceiling"):   # jumps at the integers
            hit = bool(numbers) and abs(numbers[0] - mpmath.nint(numbers[0])) < 1e-20
        else:
            hit = bool(numbers) and abs(numbers[0]) < 1e-20
        if hit and formatting.unicode(node) not in found:
            found.append(formatting.unicode(node))
    return found


class PointEvaluator:
    """The SymPy side of a point: exact values, and the comparison with the engine side's numbers."""

    def __init__(self, derivs):
        self.derivs = derivs
        self.nonsmooth = any(type(node).__name__ in NONSMOOTH for node in dag_nodes(derivs.exprs))

    def prepare(self, point):
        """High-precision values of every entry at ``point`` (done while the engine side works)."""
        return precise([entry.expr for entry in self.derivs.entries], self.derivs.definitions, point)

    def evaluate(self, point, at_text, numbers, prepared=None):
        """PointResult (without exact texts) and warnings; ``numbers`` is numeric_side.PointNumbers."""
        derivs = self.derivs
        warnings = []
        statuses, values = prepared if prepared is not None else self.prepare(point)
        cells, exact = [], []
        for entry, (status, value) in zip(derivs.entries, statuses):
            cell = Cell(entry.key, {s: entry.label(s) for s in ("unicode", "ascii", "latex")}, status=status)
            if status == "ok" and (abs(value) > FLOAT64_MAX or 0 < abs(value) < FLOAT64_TINY):
                status = cell.status = "beyond float64"   # shown exactly, but no float can be compared
                cell.value_text = formatting.number(value)
            elif status == "ok":
                cell.value = float(value)
                cell.value_text = formatting.number(value)
            else:
                cell.value_text = status
            exact.append(value)
            cells.append(cell)
        self._domain_warnings(cells, at_text, warnings)
        if numbers.unavailable:
            warnings.append(_note("engine", f"autograd column not available: {numbers.unavailable}"))
        if numbers.fd_problem:
            warnings.append(_note("engine", numbers.fd_problem))
        if numbers.autograd is not None:
            for cell, value in zip(cells, numbers.autograd):
                cell.autograd = value
                cell.autograd_text = formatting.number(value) if _finite(value) else str(value)
        switching = _vanishing_kinks(derivs.exprs, values) if self.nonsmooth else []
        kink_warnings = []
        kinks = self._finite_differences(cells, numbers, at_text, kink_warnings, bool(switching))
        if not self.nonsmooth:   # an expression without abs/max/relu/... has no kink: the differences are off
            kinks = []
        warnings += kink_warnings if self.nonsmooth else []
        kinks = kinks or [f"{node} switches there" for node in switching]
        at = {str(v): _float(value) for v, value in point.items()}
        result = PointResult(at, at_text, cells)
        self._compare(result, exact, kinks)
        jumps = [node for node in switching if node.startswith(("floor(", "ceiling(", "⌊", "⌈"))]
        if jumps:   # a jump, not a kink: no derivative exists, so there is nothing to compare it with
            for cell in result.cells:
                if cell.key[1]:
                    cell.ok, cell.error = None, None
            errors = [c.error for c in result.cells if c.error is not None]
            result.ok, result.problem, result.max_error = True, None, max(errors) if errors else None
            warnings.append(_note("kink", f"f jumps at {at_text} ({jumps[0]} at an integer): it has no derivative "
                                          "there; the derivative columns are not compared"))
        elif not result.ok and not kinks:
            self._conditioning(result, point, exact, at_text, warnings)
        if numbers.failure:
            result.ok, result.problem = False, numbers.failure
        return result, warnings

    def _conditioning(self, result, point, exact, at_text, warnings):
        """A failure that float64 rounding of the inputs alone explains is ill-conditioning, not a bug.

        The engine and finite differences see the point and the constants rounded to float64; if the
        exact value at those rounded inputs already differs from the true one by more than the tolerance,
        no float64 computation can do better: those columns are marked unreliable and the point passes
        on its exact values."""
        rounded_point = {s: _rounded(v) for s, v in point.items()}
        derivs = self.derivs
        numbers = {n: _rounded(n) for e in derivs.exprs for n in e.atoms(sympy.Number) if not n.is_Integer
                   or abs(n) > 2 ** 53}
        exprs = [entry.expr.xreplace(numbers) for entry in derivs.entries]
        statuses, _ = precise(exprs, derivs.definitions, rounded_point)
        shaky = []
        for cell, value, (status, moved) in zip(result.cells, exact, statuses):
            if cell.ok is not False:
                continue
            scale = max(1.0, abs(float(value)))
            if status != "ok" or abs(moved - value) > AUTOGRAD_RTOL * scale:
                shaky.append((cell, moved if status == "ok" else None))
        failed = [cell for cell in result.cells if cell.ok is False]
        if len(shaky) != len(failed):
            return
        for cell, _ in shaky:
            cell.ok, cell.error = None, None
        errors = [c.error for c in result.cells if c.error is not None]
        result.ok, result.problem, result.max_error = True, None, max(errors) if errors else None
        cell, moved = shaky[0]
        where = formatting.number(moved) if moved is not None else "a value that is not finite"
        text = (f"{{label}} is ill-conditioned at {at_text}: rounding the point and constants to float64 "
                f"alone moves it from {cell.value_text} to {where}, so the autograd and finite-difference "
                "columns are unreliable there (the exact values stand)")
        warnings.append(_note("ill-conditioned", text.format(label=cell.label["unicode"]),
                              text.format(label=cell.label["ascii"])))

    def _domain_warnings(self, cells, at_text, warnings):
        broken_outputs = set()
        for cell in cells:
            output, wrt = cell.key
            if cell.status == "ok" or output in broken_outputs:
                continue
            broken_outputs.add(output)
            if cell.status == "pole":
                text = f"{{label}} has a pole at {at_text} (it grows without bound there): not compared"
            elif cell.status == "out of range":
                text = f"{{label}} is out of range at {at_text}: a value on the way is beyond 1e30000 (not compared)"
            elif cell.status == "beyond float64":
                text = f"{{label}} = {cell.value_text} at {at_text} is beyond the float64 range: not compared"
            else:
                text = f"{{label}} is {cell.status} at {at_text}"
            warnings.append(_note("domain", text.format(label=cell.label["unicode"]),
                                  text.format(label=cell.label["ascii"])))

    def _finite_differences(self, cells, numbers, at_text, warnings, switching):
        """Fill the FD column; return kink descriptions found from one-sided differences.

        Where abs/max/relu/... switch (``switching``) the central difference's error is O(h), not O(h²),
        and Richardson extrapolation misjudges it; if the one-sided estimates agree there, their mean
        is the better value (x*abs(x) at 0).
        """
        fd = numbers.fd
        if not fd:
            return []
        by_key = {cell.key: cell for cell in cells}
        kinks = []
        for k, key in enumerate(numbers.fd_keys):
            cell = by_key[key]
            value, error = fd["value"][k], fd["error"][k]
            one_sided = fd["left"] is not None
            if switching and not fd["kink"][k] and one_sided:
                value = (fd["left"][k] + fd["right"][k]) / 2
                error = max(fd["left_error"][k], fd["right_error"][k]) + abs(fd["right"][k] - fd["left"][k]) / 2
            cell.finite_difference, cell.fd_error = value, error
            if _finite(value):
                cell.fd_text = formatting.number(value, formatting.honest_digits(value, error))
            if fd["kink"][k] and one_sided:
                kinks.append(self._kink_note(cell, fd["left"][k], fd["right"][k], at_text, warnings))
        return kinks

    def _kink_note(self, cell, left, right, at_text, warnings):
        output, wrt = cell.key
        base = formatting.label(self.derivs.names[output], wrt[:-1], "unicode")
        base_ascii = formatting.label(self.derivs.names[output], wrt[:-1], "ascii")
        several = len(self.derivs.variables) + len(self.derivs.parameters) > 1
        where = f" in {wrt[-1]}" if several else ""
        sides = (formatting.number(left, 6), formatting.number(right, 6))
        warnings.append(_note(
            "kink",
            f"{base} is not differentiable{where} at {at_text}; one-sided derivatives "
            f"{sides[0].replace('-', '−')} and {sides[1].replace('-', '−')}",
            f"{base_ascii} is not differentiable{where} at {at_text}; one-sided derivatives {sides[0]} and {sides[1]}"))
        return f"{base} has a kink{where}"

    def _compare(self, result, exact_values, kinks):
        worst, failures = None, []
        for cell, exact in zip(result.cells, exact_values):
            if cell.status != "ok":
                continue
            scale = max(1.0, abs(float(exact)))
            errors, cell_ok = [], True
            if cell.autograd is not None:
                error = abs(mpmath.mpf(cell.autograd) - exact) if _finite(cell.autograd) else mpmath.inf
                errors.append(float(error))
                if not error <= AUTOGRAD_RTOL * scale:
                    cell_ok = False
                    failures.append(("autograd", cell))
            if cell.finite_difference is not None and not (_finite(cell.finite_difference)
                                                            and _finite(cell.fd_error or 0.0)):
                pass   # no finite difference here (f not real/finite nearby): that column compares nothing
            elif cell.finite_difference is not None:
                error = abs(mpmath.mpf(cell.finite_difference) - exact)
                errors.append(float(error))
                tolerance = max(FD_FACTOR * (cell.fd_error or 0.0), FD_RTOL * scale)
                if not error <= tolerance:
                    cell_ok = False
                    failures.append(("finite difference", cell))
            if errors:
                cell.error = max(errors)
                cell.ok = cell_ok
                worst = cell.error if worst is None else max(worst, cell.error)
        result.max_error = worst
        result.ok = not failures
        if failures:
            result.problem = _classify(failures, kinks, result.at_text)


def _finite(value):
    import math
    return math.isfinite(value)


def _float(value):
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return float("nan")


def _rounded(value):
    """The float64 a float64 computation sees for ``value`` (as an exact SymPy number)."""
    number = _float(value)
    if number != number or number in (float("inf"), float("-inf")):
        return value
    return sympy.Rational(number)


def _classify(failures, kinks, at_text):
    sources = {source for source, _ in failures}
    first = failures[0][1]
    label = first.label["unicode"]
    exact = first.value_text
    if kinks:
        return (f"non-differentiable point {at_text} ({'; '.join(kinks)}): the columns use different "
                f"conventions there, e.g. {label}: exact {exact}, autograd {first.autograd_text}, "
                f"finite difference {first.fd_text}")
    if sources == {"autograd"}:
        part = "forward" if not first.key[1] else "backward"
        return (f"engine bug ({part}): autograd gives {label} = {first.autograd_text}, exact {exact}; "
                "finite differences agree with the exact value")
    if sources == {"finite difference"}:
        return (f"finite differences disagree: {label} = {first.fd_text} vs exact {exact} (autograd agrees "
                "with the exact value); the function is badly conditioned here")
    return (f"engine bug: autograd and finite differences both disagree with the exact value of {label} "
            f"({first.autograd_text} and {first.fd_text} vs {exact}); the engine's forward is suspect")
