"""The "exact" check: a Function's backward judged against its exact reference at the check point.

``gradcli.symbolic.exact`` computes the reference (true Jᵀv at 40 digits, by tracing the forward or
from a formula); this module compares the backward's values with it per element and makes the
``Check`` named "exact" (tolerances below, per dtype). Elements at a kink are not compared.
"""
import numpy as np

from gradcli.check.report import Check
from gradcli.symbolic.exact import DPS, ExactUnavailable, exact_reference, run_backward, as_array
from gradcli.symbolic.trace import parameter_names

# Pass criterion per element: |analytic - exact| <= rtol * |exact| + atol * max|exact over the input|.
# The atol term is scale-aware: elements far below the input's scale may carry the rounding of the
# large ones (1 - tanh(x)^2 near saturation). A 1e-3 relative error always fails.
EXACT_TOLERANCES = {"float64": {"rtol": 1e-7, "atol": 1e-10},
                    "float32": {"rtol": 1e-4, "atol": 1e-6},
                    "float16": {"rtol": 1e-2, "atol": 1e-3}}
# ---- the check ------------------------------------------------------------------------------------
ROUNDING_ULPS = 64  # a backward's own rounding: this many ulps of the size of the terms it adds up


def _eps(dtype):
    try:
        return float(np.finfo(np.dtype(str(dtype))).eps)
    except (TypeError, ValueError):
        return float(np.finfo(np.float64).eps)


def _tolerances(dtype, rtol, atol):
    row = EXACT_TOLERANCES.get(str(dtype), EXACT_TOLERANCES["float64"])
    return (row["rtol"] if rtol is None else rtol), (row["atol"] if atol is None else atol)


def compare(reference, analytic, names, dtypes, rtol=None, atol=None):
    """The "exact" Check from an ExactReference and the backward's values ({index: [array per set]})."""
    rows, failed = [], 0
    for i in sorted(reference.values):
        r_tol, a_tol = _tolerances(dtypes.get(i, "float64"), rtol, atol)
        defined = np.all([np.isfinite(e) for e in reference.values[i]], axis=0)  # nan: no real derivative there
        compared = ~reference.kinks[i] & defined
        failing = np.zeros(compared.shape, dtype=bool)
        worst, worst_ratio, error, rel = None, -1.0, 0.0, 0.0
        # the input's scale, over every cotangent set: Jᵀv can be exactly 0 for one of them (softmax with
        # a cotangent of ones) while the backward's terms, and so its rounding, are of the size of the others
        scale = max((float(np.max(np.abs(np.where(np.isfinite(e), e, 0.0)), initial=0.0, where=compared))
                     for e in reference.values[i]), default=0.0)
        for k, (exact, got) in enumerate(zip(reference.values[i], analytic[i])):
            got = np.asarray(got, dtype=np.float64).reshape(exact.shape)
            with np.errstate(invalid="ignore"):
                diff = np.where(compared, np.abs(got - exact), 0.0)
            diff = np.where(np.isnan(diff), np.inf, diff)  # a nan backward where the derivative exists
            magnitude = reference.magnitudes[i][k] if i in reference.magnitudes else 0.0
            rounding = ROUNDING_ULPS * _eps(dtypes.get(i, "float64")) * np.where(compared, magnitude, 0.0)
            allowed = r_tol * np.abs(np.where(compared, exact, 0.0)) + a_tol * scale + rounding + 1e-300
            failing |= diff > allowed
            error = max(error, float(diff.max(initial=0.0)))
            rel = max(rel, float(np.max(diff / np.maximum(np.abs(exact), 1e-300), initial=0.0, where=compared)))
            ratio = diff / allowed
            if ratio.size == 0:  # an empty input: nothing to compare
                continue
            at = np.unravel_index(int(np.argmax(ratio)), ratio.shape) if ratio.ndim else ()
            if compared[at] and float(ratio[at]) > worst_ratio:
                worst_ratio = float(ratio[at])
                worst = {"index": [int(j) for j in at], "analytic": float(got[at]), "exact": float(exact[at]),
                         "cotangent": k}
        failed += bool(failing.any())
        rows.append({"index": i, "name": names[i] if i < len(names) else f"input{i}", "exact_error": error,
                     "max_rel_error": rel, "failed_elements": int(failing.sum()),
                     "kinks": int(reference.kinks[i].sum()), "undefined": int((~defined).sum()),
                     "worst": worst, "rtol": r_tol, "atol": a_tol})
    described = f"formula {reference.description!r}" if reference.source == "formula" else \
        f"the {reference.description}"
    if failed:
        row = max(rows, key=lambda r: r["max_rel_error"])
        worst = row["worst"]
        message = (f"backward differs from the exact derivative of {described} for {failed} input(s); "
                   f"worst {row['name']}{worst['index']}: backward {worst['analytic']:.17g}, "
                   f"exact {worst['exact']:.17g} (rel. error {row['max_rel_error']:.3g})")
    else:
        largest = max((r["exact_error"] for r in rows), default=0.0)
        message = f"backward matches the exact derivative of {described} (max error {largest:.3g})"
    details = {"source": reference.source, "reference": reference.description, "dps": DPS, "inputs": rows,
               "notes": list(reference.notes)}
    return Check("exact", "fail" if failed else "pass", message, None, details)


def skipped(reason):
    return Check("exact", "skip", f"no exact reference: {reason}", None, {"source": None})


def exact_check(fn, inputs, cotangents=None, expr=None, seed=0, rtol=None, atol=None):
    """Check ``fn``'s backward at ``inputs`` against the exact derivative (see the module docstring).

    ``cotangents``: one array per differentiable output, or a list of such tuples; default: one
    seeded standard-normal set. Returns a ``Check`` named "exact" (pass/fail/skip); per input
    ``details["inputs"][j]["exact_error"]`` is max |backward - exact| (what ``InputResult.exact_error``
    holds). Cotangents that do not fit the outputs raise ValueError."""
    inputs = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    sets = None
    if cotangents is not None:
        sets = list(cotangents) if isinstance(cotangents, list) else [cotangents]
        sets = [tuple(s) if isinstance(s, (tuple, list)) else (s,) for s in sets]
    analytic, used, out_shapes = run_backward(fn, inputs, sets, seed)
    return _judged(fn, inputs, analytic, used, out_shapes, expr, rtol, atol)


def _judged(fn, inputs, analytic, used, out_shapes, expr, rtol, atol):
    try:
        reference = exact_reference(fn, inputs, used, out_shapes, expr)
    except ExactUnavailable as error:
        return skipped(str(error))
    except Exception as error:  # SymPy/mpmath refusing an expression: no reference, not a verdict
        return skipped(f"the reference could not be evaluated ({type(error).__name__}: {error})")
    names, _ = parameter_names(fn, len(inputs))
    dtypes = {i: str(as_array(inputs[i]).dtype) for i in analytic}
    return compare(reference, analytic, names, dtypes, rtol, atol)


def attach_exact(report, fn, inputs, expr=None, rtol=None, atol=None):
    """Add the "exact" check to a CheckReport and fill each ``InputResult.exact_error``.

    The report's own probe cotangents and backward values are reused when it kept them (full mode);
    otherwise the backward is run here with the report's cotangents (or seeded ones). Never raises
    for the Function's sake: a backward that fails here gives a skipped check with the reason."""
    inputs = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    if report.check("random") is not None:  # a trace would fix other draws than the ones backward saw
        check = skipped("forward draws random numbers (checked numerically with the generators re-seeded)")
        report.checks.append(check)
        return check
    sets = [tuple(c) for c in report.cotangents] if getattr(report, "cotangents", None) else None
    seed = getattr(report, "seed", 0)
    try:
        try:
            analytic, used, out_shapes = run_backward(fn, inputs, sets, seed)
            ours = False
        except ValueError:  # the report's cotangents do not fit the outputs seen here: use our own
            analytic, used, out_shapes = run_backward(fn, inputs, None, seed)
            ours = True
        for r in report.inputs:  # the values gradcheck judged, for the same cotangents
            arrays = None if ours or getattr(r, "analytic", None) is None else np.asarray(r.analytic)
            if arrays is not None and r.index in analytic and arrays.shape[0] == len(used) \
                    and arrays.shape[1:] == analytic[r.index][0].shape:
                analytic[r.index] = list(arrays)
        check = _judged(fn, inputs, analytic, used, out_shapes, expr, rtol, atol)
    except Exception as error:  # the Function's own failure: gradcheck has reported it already
        check = skipped(f"the backward failed while computing it ({type(error).__name__}: {error})")
    report.checks.append(check)
    errors = {row["index"]: row["exact_error"] for row in check.details.get("inputs", [])}
    for result in report.inputs:
        if result.index in errors:
            result.exact_error = errors[result.index]
    return check
