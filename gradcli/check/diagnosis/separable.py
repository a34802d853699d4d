"""``wrong_axis`` read from the error itself: one term per row and one per column.

For a 2-D input whose outputs have another shape (a loss, a logsumexp), the operator's couplings
cannot be compared; but a normalization or reduction taken over the wrong axis leaves its trace
in the error: A/N = exp(a_i + b_j) or (A − N)/w = a_i + b_j, both parts varying.
"""
from __future__ import annotations

import numpy as np

from gradcli.check.report import Finding


def _separable(M):
    """(row part, column part) of the additive model M ≈ a_i + b_j fitted by means."""
    mean = float(M.mean())
    return M.mean(axis=1, keepdims=True) - mean / 2, M.mean(axis=0, keepdims=True) - mean / 2


def _varies(part, size) -> bool:
    return float(np.ptp(part)) > 1e-6 * max(size, 1e-300)


def wrong_axis_separable(ev):
    """A 2-D input whose gradient is normalized or reduced along the wrong axis, seen in the error
    itself (for outputs of another shape, where the operator's couplings cannot be compared):
    A/N = exp(a_i + b_j) (a softmax-like normalization over the other axis), or
    (A − N)/w = a_i + b_j for w ∈ {1, exp(x)}, both parts varying — an error made of one term
    per row and one per column is the trace of a sum taken over the wrong dim."""
    if ev.analytic is None or ev.values is None or len(ev.shape) != 2 or min(ev.shape) < 2:
        return None
    rows, cols = ev.shape
    if (rows - 1) * (cols - 1) < 4 or ev.support() < rows * cols:
        return None
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error
    with np.errstate(all="ignore"):
        candidates = []
        if np.all(A * N > 0):
            L = np.log(A / N)
            parts = [_separable(L[k]) for k in range(len(L))]
            candidates.append(("ratio", N * np.exp(np.stack([a + b for a, b in parts])), parts, 1.0))
        for weight_name, w in (("1", np.ones(ev.shape)), ("exp(x)", np.exp(ev.values))):
            D = (A - N) / w
            if not np.all(np.isfinite(D)):
                continue
            parts = [_separable(D[k]) for k in range(len(D))]
            candidates.append((weight_name, N + w * np.stack([a + b for a, b in parts]), parts,
                               float(np.max(np.abs(D)))))
    for form, predicted, parts, size in candidates:
        if not np.all(np.isfinite(predicted)) or not ev.fits(A, predicted, E):
            continue
        if not all(_varies(a, size) and _varies(b, size) for a, b in parts):
            continue
        expected = None
        if len(ev.outputs) == 1 and ev.outputs[0].ndim == 1 and ev.outputs[0].shape[0] in ev.shape:
            expected = [1 if ev.outputs[0].shape[0] == rows else 0] if rows != cols else None
        message = (f"backward for input {ev.name} is off by one factor per row and one per column"
                   if form == "ratio" else f"backward for input {ev.name} is off by one term per row and one per "
                   "column") + ": a softmax, norm, sum or mean taken over the wrong dim"
        params = {"form": form, "dims": None if expected is None else [1 - expected[0]], "expected_dims": expected}
        return Finding("wrong_axis", message, input=ev.index, params=params, confidence=0.75)
    return None
