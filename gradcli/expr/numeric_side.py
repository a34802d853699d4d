"""The engine side of the --at cross-check: autograd values and finite differences, as plain data.

Needs numpy and the engine but not SymPy: the expression arrives as a compiled ``opmap.Program``. So
``gradcli diff`` can run this in a process forked before SymPy is imported (``engine_process.py``),
overlapping numpy's and the engine's import with SymPy's; tests simply call ``run_numeric``.
"""
from dataclasses import dataclass, field
from typing import Optional

from gradcli.expr.opmap import EngineProgram, EngineUnavailable


@dataclass
class NumericJob:
    program: object            # opmap.Program over all symbols the points give values for
    keys: list                 # (output, wrt) for every entry, values included
    points: list               # one list of floats per point, ordered like program.variables
    cheap: bool = False        # central differences instead of Richardson (network-sized expressions)


@dataclass
class PointNumbers:
    autograd: Optional[list] = None        # per key
    unavailable: Optional[str] = None      # the engine cannot run this expression (missing op, ...)
    failure: Optional[str] = None          # the engine raised: a finding
    fd_keys: list = field(default_factory=list)
    fd: Optional[dict] = None              # per fd key: value, error, left, right, left_error, right_error, kink
    fd_problem: Optional[str] = None


def _finite_differences(engine, keys, x, cheap):
    import numpy as np

    from gradcli.numeric.estimators import central_difference, richardson
    fd_keys = [key for key in keys if key[1]]
    if not fd_keys:
        return [], None
    prefixes = sorted({(output, wrt[:-1]) for output, wrt in fd_keys}, key=lambda k: (len(k[1]), k))
    column = {p: k for k, p in enumerate(prefixes)}
    rows = np.array([engine.index[wrt[-1]] for _, wrt in fd_keys])
    cols = np.array([column[(output, wrt[:-1])] for output, wrt in fd_keys])
    scale = np.maximum(1.0, np.abs(x))
    n = len(x)

    def line(t):
        X = np.tile(x, (n, 1)) + t * np.diag(scale)
        return engine.partials(X, prefixes)[rows, cols]

    # Richardson costs ~31 engine passes; for network-sized expressions the 5 passes of a plain central
    # difference vouch for the gradient well enough (its own error estimate says how well).
    estimate = (central_difference if cheap else richardson)(line)
    s = scale[rows]
    fields = {"value": estimate.value / s, "error": estimate.error / s, "kink": estimate.kinks()}
    for name in ("left", "right", "left_error", "right_error"):
        part = getattr(estimate, name)
        fields[name] = None if part is None else part / s
    return fd_keys, {name: (None if v is None else [float(e) for e in v]) for name, v in fields.items()}


def run_numeric(job, namespace=None):
    """PointNumbers for each point of ``job``."""
    import numpy as np
    with np.errstate(all="ignore"):   # inf/nan are data here (and the engine process shares stderr)
        return _run_numeric(job, namespace)


def _run_numeric(job, namespace):
    import math

    import numpy as np
    results = []
    try:
        engine = EngineProgram(job.program, namespace)
    except EngineUnavailable as error:
        return [PointNumbers(unavailable=str(error)) for _ in job.points]
    for point in job.points:
        if not all(math.isfinite(v) for v in point):
            results.append(PointNumbers(unavailable="the point is not a float64 real number (beyond the range, or complex)"))
            continue
        numbers = PointNumbers()
        x = np.asarray(point, dtype=np.float64)
        try:
            numbers.autograd = [float(v) for v in engine.partials(x[None, :], job.keys)[0]]
        except EngineUnavailable as error:
            numbers.unavailable = str(error)
            results.append(numbers)
            continue
        except Exception as error:  # the engine is under test here: its failure is a finding, not a crash
            numbers.failure = f"engine bug: running the expression raised {type(error).__name__}: {error}"
            results.append(numbers)
            continue
        try:
            numbers.fd_keys, numbers.fd = _finite_differences(engine, job.keys, x, job.cheap)
        except Exception as error:  # noqa: BLE001 - reported, and the autograd column still stands
            numbers.fd_problem = f"finite differences failed: {type(error).__name__}: {error}"
        results.append(numbers)
    return results
