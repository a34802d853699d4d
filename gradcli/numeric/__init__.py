"""Numerical derivatives that report their own accuracy.

* ``estimators`` — central difference, Richardson extrapolation, complex step along a line t -> g(t).
* ``line`` — the automatic pipeline: central → verified complex step → Richardson, with kinks.
* ``function`` — a multi-input function of arrays (``NumericFunction``) and cotangent projection.
* ``vjp`` — per-element (vᵀJ)_j and directional vᵀJw, memory O(n + m).

``derivative(f, x)`` is the one-call form for a scalar (or element-wise) function of numpy arrays.
"""
from __future__ import annotations

import numpy as np

from gradcli.numeric.estimators import (
    COMPLEX_STEP,
    EPS32,
    EPS64,
    Estimate,
    central_difference,
    complex_step,
    richardson,
    user_step,
)
from gradcli.numeric.line import METHODS, Line, estimate_line
from gradcli.numeric.vjp import (
    ElementDerivatives,
    NumericFunction,
    Projector,
    directional,
    element_derivatives,
    step_scales,
)

__all__ = [
    "derivative",
    "Estimate",
    "central_difference",
    "richardson",
    "complex_step",
    "Line",
    "estimate_line",
    "METHODS",
    "NumericFunction",
    "Projector",
    "ElementDerivatives",
    "directional",
    "element_derivatives",
    "step_scales",
    "EPS64",
    "EPS32",
    "COMPLEX_STEP",
    "user_step",
]


def derivative(f, x, method: str = "auto", eps: float = EPS64, step=None) -> Estimate:
    """f'(x) with an error estimate, for f mapping a float64 array (or scalar) element-wise.

    Each element of x is stepped by t·max(1, |x|) at once, so f must be element-wise (output i
    depends on input i only) — use ``element_derivatives`` for anything else. ``method``: "auto"
    (complex step where f accepts complex input and agrees with a real estimate, else
    Richardson), "complex_step" (same, reported as requested), "richardson" or "central".
    ``step``: a second central-difference step in units of max(1, |x|), besides the default
    eps^(1/3); per element the one with the smaller estimated error is kept.
    """
    x = np.asarray(x, dtype=np.float64)
    scale = step_scales(x)

    def evaluate(t, rows=None):
        with np.errstate(all="ignore"):
            value = np.asarray(f(x + t * scale))
        return value if rows is None else value[rows]

    g0 = evaluate(0.0)
    complex_ok = False
    if method in ("auto", "complex_step"):
        try:
            probe = np.asarray(evaluate(1j * COMPLEX_STEP))
            complex_ok = probe.shape == g0.shape
        except Exception:
            complex_ok = False
    estimate = estimate_line(Line(evaluate, g0, complex_ok=complex_ok), method, eps, step=step)
    for name in ("value", "error", "left", "right", "left_error", "right_error"):
        array = getattr(estimate, name)
        if array is not None:
            setattr(estimate, name, array / scale)
    return estimate
