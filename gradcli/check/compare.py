"""Backward against the numerical reference: per element (full mode) and per probe (fast mode).

Pure functions over numpy arrays: they build ``InputResult``s and ``Check``s, nothing else.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradcli.check.report import Check, InputResult, WorstElement
from gradcli.check.tolerances import Tolerance
from gradcli.numeric import ElementDerivatives, Estimate


def _scale(values: np.ndarray) -> float:
    """Largest finite |value| over every element and cotangent: the magnitude of this input's gradient.

    A cotangent for which the gradient cancels to ~0 (ones through a softmax) still has a backward
    that rounds at the scale of its terms, which the other (random) cotangents reveal.
    """
    finite = np.abs(values[np.isfinite(values)])
    return float(finite.max()) if finite.size else 0.0


def settled_elements(analytic: Optional[np.ndarray], tolerance: Tolerance, k: int):
    """For the numerical reference (``numeric.element_derivatives(settled=...)``): which estimates so
    far already decide their element's verdict, so that no better reference could change it.

    An estimate c with error e settles a *pass* when |backward − c| + safety·e fits the allowance
    without its error term (atol + rtol·|c| + scale_atol·scale, the scale taken over the elements at
    hand: never more than the whole input's): a more accurate value, within ~e of c, passes too,
    and so does c itself under the pass criterion. Everything else — failing or ambiguous elements,
    non-finite ones — is refined by Richardson, as before, so failures are reported at full
    accuracy. ``analytic``: (k, *shape) backward values, or None (compared as zeros).
    """

    def settled(elements: slice, value: np.ndarray, error: np.ndarray) -> np.ndarray:
        """``elements``: which flat elements (a slice); ``value``, ``error``: (m, k) estimates so far."""
        if analytic is None:
            a = np.zeros_like(value)
        else:
            a = np.asarray(analytic, dtype=np.float64).reshape(k, -1)[:, elements].T
        with np.errstate(invalid="ignore", over="ignore"):
            finite = np.abs(value[np.isfinite(value)])
            scale = float(finite.max()) if finite.size else 0.0
            allowed = tolerance.atol + tolerance.rtol * np.abs(value) + tolerance.scale_atol * scale
            return np.asarray(np.abs(a - value) + tolerance.safety * error <= allowed, dtype=bool)

    return settled


def compare_elements(
    result: InputResult,
    analytic: Optional[np.ndarray],
    numeric: ElementDerivatives,
    tolerance: Tolerance,
) -> tuple:
    """Fill ``result`` (status, errors, worst element, arrays) for one input.

    Returns ``(result, failed_cotangents, failed_elements)``: which probe cotangents (indices) saw
    a failure, and how many elements failed under any of them.

    ``analytic``: (k, *shape) backward values per cotangent, or None when backward returned None
    for this input (compared as zeros, like torch; the structure check reports the None itself).
    The error of an element is its distance to the accepted interval: the numeric value, or at
    a kink the range between the one-sided derivatives.
    """
    value = numeric.value
    a = np.zeros_like(value) if analytic is None else np.asarray(analytic, dtype=np.float64)
    scale = _scale(value)
    allowed = tolerance.safety * numeric.error + tolerance.atol + tolerance.rtol * np.abs(value)
    allowed = allowed + tolerance.scale_atol * scale
    kink = np.broadcast_to(numeric.kink, value.shape)
    with np.errstate(invalid="ignore", over="ignore"):
        distance = np.maximum(np.maximum(numeric.low - a, a - numeric.high), 0.0)
        distance = np.where(np.isfinite(a), distance, np.inf)
        computable = np.isfinite(value) & np.isfinite(numeric.low) & np.isfinite(numeric.high)
        # A tolerance as large as the gradient itself accepts any backward, zeros included: such an
        # element has no numerical reference (a noisy or chaotic forward), it is not a pass.
        undetermined = computable & ~kink & (scale > 0) & (tolerance.safety * numeric.error >= scale)
        computable &= ~undetermined
        failed = computable & ~(distance <= allowed)
        relative = distance / np.maximum(np.abs(value), tolerance.atol + tolerance.scale_atol * scale)
        excess = np.where(computable, distance / allowed, -np.inf)

    result.analytic, result.numeric, result.numeric_error = a, value, numeric.error
    result.kink_mask = np.asarray(numeric.kink, dtype=bool)
    result.kinks = int(np.count_nonzero(numeric.kink))
    result.method = numeric.method
    if not computable.any():
        result.status = "skip"
        result.message = ("the numerical derivative could not be computed (non-finite function values around the point)"
                          if not undetermined.any() else
                          "the numerical derivative is undetermined: its error estimate is as large as the gradient "
                          f"itself (up to {float(np.max(numeric.error)):.3g}; is forward deterministic and smooth here?)")
        return result, [], 0
    result.max_abs_error = float(np.max(np.where(computable, distance, 0.0)))
    result.max_rel_error = float(np.max(np.where(computable, relative, 0.0)))
    result.error_estimate = float(np.max(np.where(computable, numeric.error, 0.0)))
    flat = int(np.argmax(excess))
    position = np.unravel_index(flat, value.shape)
    cotangent, index = int(position[0]), tuple(int(i) for i in position[1:])
    result.worst = WorstElement(
        index=index,
        analytic=float(a[position]),
        numeric=float(value[position]),
        error_estimate=float(numeric.error[position]),
        cotangent=cotangent,
    )
    result.tolerance = float(allowed[position])
    n_failed = int(np.count_nonzero(failed.any(axis=0)))
    skipped = int(np.count_nonzero(~computable.all(axis=0)))
    where = f"[{', '.join(map(str, index))}]" if index else "(scalar)"
    if n_failed:
        result.status = "fail"
        if kink[position]:   # judged against the one-sided range, not the central value: say so
            reference = (f"the numeric range [{numeric.low[position]:.10g}, {numeric.high[position]:.10g}] "
                         "at a kink")
        else:
            reference = f"numeric {value[position]:.10g}"
        result.message = (
            f"{n_failed} of {value[0].size} elements wrong; worst at {where}: backward {a[position]:.10g} "
            f"vs {reference} (error {distance[position]:.3g}, allowed {allowed[position]:.3g})"
        )
    else:
        result.status = "pass"
        result.message = f"max error {result.max_abs_error:.3g} (worst at {where}, allowed {allowed[position]:.3g})"
    accepted_kinks = int(np.count_nonzero(kink.any(axis=0) & ~failed.any(axis=0)))
    if accepted_kinks:
        result.message += f"; {accepted_kinks} element(s) at a kink accepted between the one-sided derivatives"
    if skipped:
        result.message += f"; {skipped} element(s) not computable numerically"
        if undetermined.any():
            result.message += " (error estimate as large as the gradient)"
    failed_cotangents = [int(c) for c in np.nonzero(failed.reshape(failed.shape[0], -1).any(axis=1))[0]]
    return result, failed_cotangents, n_failed


def values_check(result: InputResult, failed_cotangents: list, failed_elements: int) -> Check:
    details = {
        "max_abs_error": result.max_abs_error,
        "max_rel_error": result.max_rel_error,
        "failed_elements": failed_elements,
        "failed_cotangents": failed_cotangents,
        "method": result.method,
        "kinks": result.kinks,
    }
    return Check("values", result.status, f"{result.name}: {result.message}", result.index, details)


def probe_good_enough(tolerance: Tolerance, magnitudes: np.ndarray):
    """For fast mode's probes (``numeric.directional(good_enough=...)``): the reference may use a tenth
    of the allowed error, no more; a probe whose central difference is that accurate is not refined."""

    def good_enough(estimate: Estimate) -> np.ndarray:
        allowed = tolerance.atol + tolerance.rtol * np.abs(estimate.value) + tolerance.scale_atol * magnitudes
        return tolerance.safety * estimate.error <= 0.1 * allowed

    return good_enough


def compare_probes(dots: np.ndarray, magnitudes: np.ndarray, estimate: Estimate, tolerance: Tolerance) -> Check:
    """Fast mode: uᵀ(Jᵀv) from backward against the numerical vᵀ(J u), one probe per cotangent v.

    ``dots[c]`` is Σ_i <backward's gradient for input i under cotangent c, u_i>; ``magnitudes[c]``
    the same sum over absolute products (the scale its rounding and cancellation live at).
    """
    analytic = np.asarray(dots, dtype=np.float64)
    numeric = np.asarray(estimate.value, dtype=np.float64)
    allowed = tolerance.safety * estimate.error + tolerance.atol + tolerance.rtol * np.abs(numeric)
    allowed = allowed + tolerance.scale_atol * np.maximum(magnitudes, np.abs(numeric))
    with np.errstate(invalid="ignore"):
        error = np.abs(analytic - numeric)
        ok = error <= allowed
    worst = int(np.argmax(np.where(np.isfinite(error), error / allowed, np.inf)))
    details = {
        "probes": int(len(analytic)),
        "worst_probe": worst,
        "analytic": analytic.tolist(),
        "numeric": numeric.tolist(),
        "error_estimate": np.asarray(estimate.error).tolist(),
        "allowed": allowed.tolist(),
        "method": estimate.method,
    }
    if np.all(ok):
        return Check("values", "pass", f"{len(analytic)} random probes uᵀJᵀv agree (max error {np.max(error):.3g})",
                     None, details)
    return Check(
        "values",
        "fail",
        f"random probe {worst}: backward gives uᵀJᵀv = {analytic[worst]:.10g}, numeric {numeric[worst]:.10g} "
        f"(error {error[worst]:.3g}, allowed {allowed[worst]:.3g})",
        None,
        details,
    )
