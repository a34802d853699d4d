"""A failed square input on which backward is right for every symmetric perturbation.

A forward that takes ``cholesky``/``eigh`` of a matrix reads one triangle of it; its backward often
returns the symmetric gradient (``inv(A)`` for log det A). Element by element -- gradcli's values
check, torch's ``gradcheck`` -- the two differ off the diagonal, though they agree along every
symmetric perturbation, the only ones a symmetric input can take (torch's own tests check such ops
as ``f(sym(A))``: ``gradcheck_wrapper_hermitian_input``). The verdict stays FAIL (the Jacobians
differ, and a caller passing a non-symmetric matrix gets the wrong gradient); the message says what
agrees, and the diagnosis, whose region finding ("wrong only off the diagonal: check the branch or
mask") would send the user after a bug that is not there, is not asked when backward's gradient is
itself symmetric.
"""
from __future__ import annotations

import numpy as np

NOTE = ("; on symmetric matrices it is right: the symmetric parts of backward's and the numerical "
        "gradient agree (forward reads one triangle, or backward returns the symmetric gradient); "
        "only a non-symmetric perturbation sees the difference")


def _sym(m: np.ndarray) -> np.ndarray:
    return (m + np.swapaxes(m, -1, -2)) / 2


def symmetric_parts_agree(x, result, tolerance) -> bool:
    """True when ``result`` (a failed InputResult with its per-cotangent arrays) is for an exactly
    symmetric square input (or a batch of them) and sym(backward) matches sym(numeric) within the
    values check's own tolerance, with no kink."""
    if result.status != "fail" or result.analytic is None or result.numeric is None:
        return False
    x = np.asarray(x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2] or x.shape[-1] < 2 or not np.array_equal(x, np.swapaxes(x, -1, -2)):
        return False
    if result.kink_mask is not None and np.any(result.kink_mask):
        return False
    analytic, numeric = np.asarray(result.analytic, float), np.asarray(result.numeric, float)
    error = np.abs(np.asarray(result.numeric_error, float))
    sym_a, sym_n, sym_e = _sym(analytic), _sym(numeric), _sym(error)
    finite = np.abs(sym_n[np.isfinite(sym_n)])
    scale = float(finite.max()) if finite.size else 0.0
    allowed = (tolerance.safety * sym_e + tolerance.atol + tolerance.rtol * np.abs(sym_n)
               + tolerance.scale_atol * scale)
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.isfinite(sym_a) & np.isfinite(sym_n) & (np.abs(sym_a - sym_n) <= allowed)))


def backward_is_symmetric(result, tolerance) -> bool:
    """Backward's gradient is itself symmetric (within the tolerance): the symmetric-gradient convention."""
    analytic = np.asarray(result.analytic, float)
    finite = np.abs(analytic[np.isfinite(analytic)])
    scale = float(finite.max()) if finite.size else 0.0
    allowed = tolerance.atol + tolerance.scale_atol * scale + tolerance.rtol * np.abs(analytic)
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.abs(analytic - np.swapaxes(analytic, -1, -2)) <= allowed))


def convention_only(report) -> bool:
    """Every failure of ``report`` is a values check on a symmetric matrix whose backward returns the
    symmetric gradient, right along every symmetric perturbation: no bug for the diagnosis to name."""
    failed = report.failures
    return bool(failed) and all(c.name == "values" and c.details.get("symmetric_parts_agree")
                                and c.details.get("symmetric_backward") for c in failed)
