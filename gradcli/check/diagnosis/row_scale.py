"""``scale`` per row: A = c_r · N with one simple factor per slice along one axis, not all equal.

A segment mean whose backward forgets to divide by each segment's size, a masked mean divided by
the padded width instead of each row's own length: every element of a row is off by the same
factor, and the factors differ from row to row. Each factor must be a simple fraction
(``nice_number``: a count or a length, never a fit to noise), each slice must carry signal at
two or more elements, and A must equal c_r · N at every element for every cotangent.
"""
from __future__ import annotations

import numpy as np

from gradcli.check.diagnosis.evidence import Evidence, nice_number, short_number
from gradcli.check.report import Finding

MAX_SHOWN = 6


def per_row_scale(ev: Evidence):
    if ev.analytic is None or len(ev.shape) < 2:
        return None
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error
    informative = np.broadcast_to(ev.informative(), A.shape)
    for axis in range(len(ev.shape)):
        factors = _factors(ev, A, N, E, informative, axis + 1)
        if factors is not None:
            shown = ", ".join(short_number(f) for f in factors[:MAX_SHOWN]) + (" …" if len(factors) > MAX_SHOWN else "")
            return Finding("scale", f"backward for input {ev.name} is off by a factor that differs along dim {axis} "
                           f"(×{shown}): a per-slice count or length — each row's own size — divided by where "
                           "another (or none) is needed",
                           input=ev.index, params={"factors": factors, "axis": axis, "per_slice": True},
                           confidence=0.85)
    return None


def _factors(ev, A, N, E, informative, axis):
    factors = []
    for i in range(A.shape[axis]):
        a, n, e = (np.take(t, i, axis=axis) for t in (A, N, E))
        signal = np.take(informative, i, axis=axis)
        if np.count_nonzero(signal.any(axis=0) if signal.ndim > 1 else signal) < 2:
            return None
        denominator = float(np.sum(n * n))
        if denominator == 0.0:
            return None
        c = nice_number(float(np.sum(a * n)) / denominator, rel=1e-6)
        if c is None or c <= 0 or not ev.fits(a, c * n, c * e):
            return None
        factors.append(c)
    if len(set(factors)) < 2:
        return None  # one factor for every slice: the whole gradient's `scale`
    if sum(c != 1 for c in factors) < 2:
        return None  # one slice off, the others right: a `region` (the first row, 3× too small there)
    off = [k for k, c in enumerate(factors) if c != 1]
    if len(factors) >= 4 and off == [0, len(factors) - 1]:
        return None  # the two ends off, the inside right: a `region` (a trapezoid rule's end weights)
    return factors
