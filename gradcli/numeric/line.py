"""The automatic estimation pipeline over one line function.

``estimate_line`` picks, per element, the most accurate estimate that can be trusted:

1. a central difference (5 evaluations) — cheap, with an error estimate and one-sided
   derivatives that reveal kinks;
2. the complex step (1 evaluation), accepted only where the forward took complex input and
   the result agrees with the central difference within their errors (abs/max/comparisons
   break the complex step, and are caught here);
3. Richardson extrapolation for the remaining smooth elements (rejected or unavailable complex step).

Kink elements keep the central value and their one-sided derivatives: a checker accepts any
value between them.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from gradcli.numeric.estimators import (
    EPS64,
    Estimate,
    agree,
    central_difference,
    central_step,
    complex_step,
    richardson,
)
from gradcli.numeric.jumps import step_under

# Richardson's value replaces the central one only where the two agree within this many times their
# combined error estimates (generous: a disagreement means a step crossed something non-smooth).
RICHARDSON_AGREEMENT = 8.0

METHODS = ("auto", "complex_step", "richardson", "central")


class Line:
    """g(t) for the elements of one estimation problem.

    ``evaluate(t, rows)`` returns g(t) restricted to the given rows of its first axis (all rows
    when ``rows`` is None); lines that cannot evaluate a subset cheaply may ignore ``rows`` and
    slice. ``g0`` is g(0); ``magnitude`` the scale of one evaluation's rounding error (e.g.
    |v|ᵀ|f(x)| for a projection, whose cancellation |vᵀf| would hide); ``complex_ok`` whether
    complex t may be tried; ``phase(name)`` (optional) is told which estimator the next evaluations
    serve ("central", "complex_step", "richardson", "jump_steps", then "other"), so the function
    being evaluated can count them (``NumericFunction.phase``).
    """

    def __init__(
        self,
        evaluate: Callable,
        g0: np.ndarray,
        magnitude: Optional[np.ndarray] = None,
        complex_ok: bool = False,
        phase: Optional[Callable[[str], None]] = None,
    ):
        self.evaluate = evaluate
        self.g0 = np.asarray(g0)
        self.magnitude = magnitude
        self.complex_ok = complex_ok
        self.phase = phase

    def enter(self, name: str):
        if self.phase is not None:
            self.phase(name)

    def restricted(self, rows: np.ndarray) -> Callable:
        return lambda t: self.evaluate(t, rows)


def _rows_needing(mask: np.ndarray) -> np.ndarray:
    """Indices along the first axis holding at least one True element."""
    if mask.ndim == 0:
        return np.arange(1) if mask else np.arange(0)
    return np.flatnonzero(mask.reshape(mask.shape[0], -1).any(axis=1))


def estimate_line(line: Line, method: str = "auto", eps: float = EPS64,
                  good_enough: Optional[Callable[[Estimate], np.ndarray]] = None,
                  step: Optional[float] = None) -> Estimate:
    """Estimate dg/dt at 0 for every element of the line, with per-element error estimates.

    ``good_enough(estimate)`` (optional) marks elements whose estimate so far (the central difference,
    or the verified complex step where it was used) is already accurate enough for the caller's
    purpose — a fast probe's allowance, or a full check's verdict that a better reference could not
    change: only the others are refined by Richardson (the budget goes to failing or ambiguous
    elements).
    ``step`` (optional, t-space): a second step for the central difference besides the default
    eps^(1/3); per element the one with the smaller estimated error is kept, and with a ``step``
    Richardson replaces an element's central value only where its own estimated error is smaller.
    A caller's step can thus only improve the estimate (gradcheck's ``eps``; see
    ``estimators.user_step``). Richardson's step sequence and the complex step do not change.

    Returns an Estimate whose ``method`` is "complex_step", "richardson", "central" or "mixed",
    with ``used_complex`` (where the complex step was used) and ``kink`` (where the one-sided
    derivatives disagree) filled in.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    scalar = line.g0.ndim == 0
    g0 = line.g0.reshape(1) if scalar else line.g0
    magnitude = None if line.magnitude is None else np.asarray(line.magnitude)
    if scalar and magnitude is not None:
        magnitude = magnitude.reshape(1)

    def evaluate(t, rows=None):
        if scalar:  # a 0-d line has one element: nothing to select
            return np.asarray(line.evaluate(t, None)).reshape(1)
        return np.asarray(line.evaluate(t, rows))

    def sliced(rows):
        return (lambda t: evaluate(t, rows)), g0[rows], (None if magnitude is None else magnitude[rows])

    try:
        return _estimate(line, method, eps, good_enough, step, scalar, g0, magnitude, evaluate, sliced)
    finally:
        line.enter("other")


def _estimate(line, method, eps, good_enough, step, scalar, g0, magnitude, evaluate, sliced) -> Estimate:
    if method == "richardson":
        line.enter("richardson")
        result = richardson(evaluate, eps=eps, g0=g0, magnitude=magnitude)
        result.used_complex = np.zeros(g0.shape, dtype=bool)
        result.kink = result.kinks(eps)
        return _unwrap(result, scalar)

    line.enter("central")
    central = central_difference(evaluate, eps=eps, g0=g0, magnitude=magnitude)
    if step is not None and step != central_step(eps):
        central = _better(central, central_difference(evaluate, step=step, eps=eps, g0=g0, magnitude=magnitude))
    kink = central.kinks(eps)
    # Steps straddling a jump (floor, round...): smaller steps where one is clean, else a jump,
    # reported like a kink (numeric.jumps). Those elements never go to Richardson's larger steps.
    suspects = np.asarray(central.jump, dtype=bool) & ~kink
    stepped_under = 0
    if suspects.any():
        line.enter("jump_steps")
        central, jump, handed_back, stepped_under = _step_under_jumps(central, suspects, sliced, eps, step)
        kink = kink | jump
        suspects = suspects & ~handed_back  # a corner after all: Richardson and the kink path as usual
    used_complex = np.zeros(g0.shape, dtype=bool)
    result = central
    if method == "central":
        result.used_complex, result.kink = used_complex, kink
        result.evaluations += stepped_under
        return _unwrap(result, scalar)

    evaluations = central.evaluations + stepped_under
    value, error = central.value, central.error  # refined in place below, after every use of central
    left, right, left_error, right_error = central.left, central.right, central.left_error, central.right_error
    if line.complex_ok:
        line.enter("complex_step")
        try:
            cs = complex_step(evaluate, eps=eps)
        except Exception:  # the forward rejected complex input after all: real methods only
            cs = None
        if cs is not None and cs.value.shape == value.shape:
            evaluations += cs.evaluations
            used_complex = agree(cs, central) & ~kink & np.isfinite(cs.value)
            value = np.where(used_complex, cs.value, value)
            error = np.where(used_complex, cs.error, error)

    refine = ~used_complex & ~kink & ~suspects
    if good_enough is not None and refine.any():
        so_far = Estimate(value, error, "central", left, right, left_error, right_error, evaluations,
                          used_complex, kink)
        refine &= ~np.broadcast_to(np.asarray(good_enough(so_far), dtype=bool), refine.shape)
        rows = _rows_needing(refine)
        if rows.size:  # a wider step first: 4 evaluations a row where Richardson takes 30
            line.enter("central_wide")
            wide_rows, wide = _wider_step(sliced(rows), refine[rows], value[rows], error[rows], eps)
            evaluations += wide.evaluations
            if wide_rows.any():
                value, error = np.array(value, copy=True), np.array(error, copy=True)
                value[rows] = np.where(wide_rows, wide.value, value[rows])
                error[rows] = np.where(wide_rows, wide.error, error[rows])
                so_far = Estimate(value, error, "central", left, right, left_error, right_error, evaluations,
                                  used_complex, kink)
                refine &= ~np.broadcast_to(np.asarray(good_enough(so_far), dtype=bool), refine.shape)
    rows = _rows_needing(refine)
    if rows.size:
        line.enter("richardson")
        line_rows, g0_rows, magnitude_rows = sliced(rows)
        refined = richardson(line_rows, eps=eps, g0=g0_rows, magnitude=magnitude_rows)
        evaluations += refined.evaluations
        # Richardson may fail where every step left the domain: keep the central value there.
        take = refine[rows] & np.isfinite(refined.value)
        if step is not None:  # the caller's step may have given a better central value: keep it
            with np.errstate(invalid="ignore"):
                take &= ~(refined.error > error[rows])
        # A kink a little off x (within the central steps: x = 3e-6 for relu) escapes the central
        # test — its own error estimate is inflated by the kink — and the central Richardson table,
        # whose large steps see a symmetric corner, extrapolates confidently to the mean of the two
        # slopes. The one-sided tables (same evaluations) disagree there: a kink, as at x = 0.
        # Their gap must also stand out against the line's derivatives (at a smooth stationary
        # point both one-sided values are rounding, ±1e-15, with error estimates of 0).
        # A kink's central difference lies between its one-sided derivatives; one well outside them
        # means Richardson's large steps crossed a jump the central steps did not (remainder 0.008
        # from a jump): those one-sided values are not the function's, and the test below keeps
        # the central value.
        with np.errstate(invalid="ignore"):
            line_scale = np.nanmax(np.abs(refined.value), initial=0.0)
            slack = RICHARDSON_AGREEMENT * (error[rows] + refined.left_error + refined.right_error)
            between = ((value[rows] >= np.minimum(refined.left, refined.right) - slack)
                       & (value[rows] <= np.maximum(refined.left, refined.right) + slack))
            near = (take & refined.kinks(eps) & (np.abs(refined.right - refined.left) > np.sqrt(eps) * line_scale)
                    & between)
        if near.any():
            take &= ~near
            kink, left, right, left_error, right_error = (np.array(a, copy=True) for a in (
                kink, left, right, left_error, right_error))
            kink[rows] |= near
            for target, source in ((left, refined.left), (right, refined.right),
                                   (left_error, refined.left_error), (right_error, refined.right_error)):
                target[rows] = np.where(near, source, target[rows])
        # Richardson's large steps may cross a jump the central steps do not (floor at 0.17 from an
        # integer): its table then "converges" to a wrong value with a tiny error. A value that
        # disagrees with the central difference beyond both error estimates is not taken.
        with np.errstate(invalid="ignore"):
            take &= ~(np.abs(refined.value - value[rows]) > RICHARDSON_AGREEMENT * (refined.error + error[rows]))
        value[rows] = np.where(take, refined.value, value[rows])
        error[rows] = np.where(take, refined.error, error[rows])
        refine = np.zeros_like(refine)
        refine[rows] = take  # the elements Richardson's value was taken for (for the label)

    label = _label(used_complex, refine, kink)
    result = Estimate(value, error, label, left, right, left_error, right_error, evaluations, used_complex, kink)
    return _unwrap(result, scalar)


def wide_step(eps: float = EPS64) -> float:
    """eps^(1/6) rounded to a power of two (2⁻⁹ in float64): rounding ~2⁸× below the default step's."""
    return float(2.0 ** np.round(np.log2(eps ** (1.0 / 6.0))))


def _wider_step(sliced_rows, open_rows, value, error, eps):
    """Central differences at ``wide_step`` for rows whose verdict the default step left open.

    The default step's error estimate is often all rounding (eps·|g|/h: a derivative that is
    exactly zero, softmax's Jᵀ1, on outputs of size 1): a wider step has ~2⁸× less of it, and where
    truncation is small too its estimate settles the element for 4 evaluations a row. Taken per
    element only where it is clean (no kink, no jump within its steps), finite, agrees with the
    default step within their errors, and has the smaller error. Returns (that mask, the estimate).
    """
    line_rows, g0_rows, magnitude_rows = sliced_rows
    wide = central_difference(line_rows, step=wide_step(eps), eps=eps, g0=g0_rows, magnitude=magnitude_rows)
    with np.errstate(invalid="ignore"):
        take = (open_rows & ~np.asarray(wide.jump, dtype=bool) & ~wide.kinks(eps) & np.isfinite(wide.value)
                & (wide.error < error) & (np.abs(wide.value - value) <= 3.0 * (wide.error + error)))
    return np.asarray(take, dtype=bool), wide


def _step_under_jumps(central: Estimate, suspects, sliced, eps, step):
    """(central with the suspects' values from smaller steps, jump mask, handed-back mask, evaluations)."""
    rows = _rows_needing(suspects)
    line_rows, g0_rows, magnitude_rows = sliced(rows)
    names = ("value", "error", "left", "right", "left_error", "right_error")
    sub = Estimate(method="central", **{n: np.array(getattr(central, n)[rows], dtype=float, copy=True) for n in names})
    # Halve from the larger of the two central steps that were tried (the default, the caller's).
    h = central_step(eps) if step is None else max(step, central_step(eps))
    jump_rows, back_rows, evaluations = step_under(line_rows, sub, suspects[rows], eps, g0_rows, magnitude_rows, h)
    for n in names:
        full = np.array(getattr(central, n), dtype=float, copy=True)
        full[rows] = getattr(sub, n)
        setattr(central, n, full)
    jump, handed_back = np.zeros(suspects.shape, dtype=bool), np.zeros(suspects.shape, dtype=bool)
    jump[rows], handed_back[rows] = jump_rows, back_rows
    return central, jump, handed_back, evaluations


def _better(a: Estimate, b: Estimate) -> Estimate:
    """Per element, the central difference with the smaller estimated error (``a`` on ties and NaN)."""
    with np.errstate(invalid="ignore"):
        take_b = b.error < a.error
    pick = {name: np.where(take_b, getattr(b, name), getattr(a, name))
            for name in ("value", "error", "left", "right", "left_error", "right_error")}
    # Either step straddling a jump makes the element a suspect: smaller steps settle it.
    return Estimate(method=a.method, evaluations=a.evaluations + b.evaluations, jump=a.jump | b.jump, **pick)


def _label(used_complex, refined, kink) -> str:
    """complex_step | richardson | central when every smooth element used it, else mixed."""
    smooth = ~kink
    if not smooth.any():
        return "central"
    labels = set()
    for mask, name in ((used_complex, "complex_step"), (refined & ~used_complex, "richardson"),
                       (~used_complex & ~refined, "central")):
        if (mask & smooth).any():
            labels.add(name)
    return labels.pop() if len(labels) == 1 else "mixed"


def _unwrap(result: Estimate, scalar: bool) -> Estimate:
    if not scalar:
        return result
    for name in ("value", "error", "left", "right", "left_error", "right_error", "used_complex", "kink"):
        array = getattr(result, name, None)
        if array is not None:
            setattr(result, name, np.asarray(array).reshape(()))
    return result
