"""Numbers at --at points: the exact value (high precision), the engine's autograd and a finite difference.

The three are independent: SymPy's derivative evaluated with mpmath at 30 digits; the *function* run
forward and backward through gradcli's engine (nested autograd.grad for higher orders); and Richardson
finite differences (gradcli.numeric) of the engine's forward (or of its lower-order derivative). Where
they disagree the point is classified: a non-differentiable point (a kink, found from one-sided
differences or from abs/sign/max/... whose argument vanishes there) or an engine bug.
"""
import mpmath
import sympy

from gradcli.symbolic import formatting
from gradcli.symbolic.model import Cell, Note, PointResult
from gradcli.symbolic.opmap import EngineFunction, EngineUnavailable, NotReal
from gradcli.symbolic.precise import classify, precise
from gradcli.symbolic.reverse import dag_nodes

PRECISION = 30            # decimal digits for the exact side
AUTOGRAD_RTOL = 1e-9      # engine vs exact, relative to max(1, |exact|): float64 round-off, with room
FD_FACTOR = 100.0         # finite differences vs exact: this many times their own error estimate ...
FD_RTOL = 1e-7            # ... or this relative floor, whichever is larger
NONSMOOTH = ("Abs", "sign", "Heaviside", "Max", "Min", "relu", "Piecewise", "DiracDelta")


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
        else:
            hit = bool(numbers) and abs(numbers[0]) < 1e-20
        if hit and formatting.unicode(node) not in found:
            found.append(formatting.unicode(node))
    return found


class PointEvaluator:
    def __init__(self, derivs, namespace=None):
        self.derivs = derivs
        self.keys = [entry.key for entry in derivs.entries]
        self.nonsmooth = any(type(node).__name__ in NONSMOOTH for node in dag_nodes(derivs.exprs))
        self.engine = None
        self.engine_problem = None
        self.engine_failure = None
        try:
            self.engine = EngineFunction(derivs.exprs, derivs.variables, namespace)
        except EngineUnavailable as error:
            self.engine_problem = str(error)

    def evaluate(self, point, at_text):
        """PointResult (without exact texts) and warnings for ``point`` = {symbol: exact number}."""
        import numpy as np

        derivs = self.derivs
        names = derivs.variable_names
        warnings = []
        x = np.array([float(point[v]) for v in derivs.variables])
        statuses, values = precise([entry.expr for entry in derivs.entries], derivs.definitions, point)
        cells, exact = [], []
        for entry, (status, value) in zip(derivs.entries, statuses):
            cell = Cell(entry.key, {s: entry.label(s) for s in ("unicode", "ascii", "latex")}, status=status)
            if status == "ok":
                cell.value = float(value)
                cell.value_text = formatting.number(value)
            else:
                cell.value_text = status
            exact.append(value)
            cells.append(cell)
        self._domain_warnings(cells, at_text, warnings)
        self._autograd(cells, x, warnings)
        switching = _vanishing_kinks(derivs.exprs, values) if self.nonsmooth else []
        kinks = self._finite_differences(cells, x, at_text, warnings, bool(switching))
        kinks = kinks or [f"{node} switches there" for node in switching]
        result = PointResult({n: float(point[v]) for n, v in zip(names, derivs.variables)}, at_text, cells)
        self._compare(result, exact, kinks)
        if self.engine_failure:
            result.ok, result.problem = False, self.engine_failure
        return result, warnings

    def _domain_warnings(self, cells, at_text, warnings):
        broken_outputs = set()
        for cell in cells:
            output, wrt = cell.key
            if cell.status == "ok" or output in broken_outputs:
                continue
            broken_outputs.add(output)
            what = cell.status
            warnings.append(_note("domain", f"{cell.label['unicode']} is {what} at {at_text}",
                                  f"{cell.label['ascii']} is {what} at {at_text}"))

    def _autograd(self, cells, x, warnings):
        self.engine_failure = None
        if self.engine is None:
            return
        import numpy as np
        try:
            row = self.engine.partials(x[None, :], self.keys)[0]
        except (EngineUnavailable, NotReal) as error:
            self.engine_problem = str(error)
            warnings.append(_note("engine", f"autograd column not available: {error}"))
            return
        except Exception as error:  # the engine is under test here: its failure is a finding, not a crash
            self.engine_failure = f"engine bug: running the expression raised {type(error).__name__}: {error}"
            return
        for cell, value in zip(cells, row):
            cell.autograd = float(value)
            cell.autograd_text = formatting.number(value) if np.isfinite(value) else str(value)

    def _finite_differences(self, cells, x, at_text, warnings, switching):
        """Fill the FD column; return kink descriptions found from one-sided differences.

        Where abs/max/relu/... switch (``switching``) the central difference's error is O(h), not O(h²),
        and Richardson extrapolation misjudges it; if the one-sided estimates agree there, their mean
        is the better value (x*abs(x) at 0).
        """
        if self.engine is None:
            return []
        import numpy as np
        try:
            from gradcli.numeric.estimators import central_difference, richardson
        except ImportError:  # pragma: no cover - numeric ships with the package
            warnings.append(_note("engine", "finite differences not available (gradcli.numeric missing)"))
            return []
        fd_cells = [c for c in cells if c.key[1]]
        if not fd_cells:
            return []
        index = self.engine.index
        prefixes = sorted({(c.key[0], c.key[1][:-1]) for c in fd_cells}, key=lambda k: (len(k[1]), k))
        column = {p: k for k, p in enumerate(prefixes)}
        rows = np.array([index[c.key[1][-1]] for c in fd_cells])
        cols = np.array([column[(c.key[0], c.key[1][:-1])] for c in fd_cells])
        scale = np.maximum(1.0, np.abs(x))
        n = len(x)

        def line(t):
            X = np.tile(x, (n, 1)) + t * np.diag(scale)
            return self.engine.partials(X, prefixes)[rows, cols]

        try:
            # Richardson costs ~31 engine passes; for network-sized expressions 5 passes of a plain
            # central difference are enough to vouch for the gradient (its error estimate says how much).
            estimate = (central_difference if self.derivs.definitions else richardson)(line)
        except (EngineUnavailable, NotReal):
            return []
        except Exception as error:
            warnings.append(_note("engine", f"finite differences failed: {type(error).__name__}: {error}"))
            return []
        s = scale[rows]
        kinks, seen = [], set()
        flagged = estimate.kinks()
        for k, cell in enumerate(fd_cells):
            value, error = estimate.value[k] / s[k], estimate.error[k] / s[k]
            if switching and not flagged[k] and estimate.left is not None:
                value = (estimate.left[k] + estimate.right[k]) / (2 * s[k])
                error = (max(estimate.left_error[k], estimate.right_error[k])
                         + abs(estimate.right[k] - estimate.left[k]) / 2) / s[k]
            cell.finite_difference, cell.fd_error = float(value), float(error)
            if np.isfinite(value):
                cell.fd_text = formatting.number(value, formatting.honest_digits(value, error))
            if flagged[k] and cell.key not in seen:
                seen.add(cell.key)
                left, right = estimate.left[k] / s[k], estimate.right[k] / s[k]
                kinks.append(self._kink_note(cell, left, right, at_text, warnings))
        return kinks

    def _kink_note(self, cell, left, right, at_text, warnings):
        output, wrt = cell.key
        base = formatting.label(self.derivs.names[output], wrt[:-1], "unicode")
        base_ascii = formatting.label(self.derivs.names[output], wrt[:-1], "ascii")
        several = len(self.derivs.variables) > 1
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
            if cell.finite_difference is not None:
                error = abs(mpmath.mpf(cell.finite_difference) - exact) if _finite(cell.finite_difference) \
                    else mpmath.inf
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
