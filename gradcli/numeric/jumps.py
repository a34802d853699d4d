"""Jumps (discontinuities) within the steps of a difference: detected, stepped under, or reported.

A central difference whose steps cross a jump of size J returns about J/(2h) with an error
estimate that does not see it, and Richardson's large steps may cross jumps that the small ones
do not — both claim a precision they do not have (floor, round, frac on random inputs). The
signature of a jump within (0, 2h] on one side is a second difference on that side that is large
against everything the other side shows: for a smooth g both sides' second differences are about
g''h² and never exceed the increments g'h, g''h² themselves; near a kink they stay O(h); a jump
makes one of them about J whatever h is.

An element flagged so (and not already a kink) is refined by central differences at halved steps
down to √eps (t-space): the largest step with no jump, no kink and an error estimate that is
rounding-sized (or below 1e-6 of the value) gives its value, with that step's honest error estimate
(rounding grows as the step shrinks). Where every step down to √eps still
sees a jump the element is *at* a jump: it is reported like a kink, its one-sided derivatives
(one of them the finite slope of the side without the jump) bounding the accepted values.
"""
from __future__ import annotations

import numpy as np

JUMP_FACTOR = 4.0  # how far one side's second difference must stand out against the other side
JUMP_ROUNDING = 16.0  # second differences below this many ulps of |g| are rounding, never a jump
CLEAN_ROUNDING, CLEAN_RELATIVE = 5.0, 1e-6  # a stepped-under estimate is taken if its error is below


def jump_mask(g0, gp1, gm1, gp2, gm2, eps, magnitude) -> np.ndarray:
    """Elements whose five central-difference points (0, ±h, ±2h) straddle a jump on one side."""
    with np.errstate(invalid="ignore", over="ignore"):
        r1, r2 = gp1 - g0, gp2 - gp1
        l1, l2 = g0 - gm1, gm1 - gm2
        right, left = np.abs(r2 - r1), np.abs(l1 - l2)
        noise = JUMP_ROUNDING * eps * magnitude
        right_jump = right > JUMP_FACTOR * (np.abs(l1) + np.abs(l2) + left) + noise
        left_jump = left > JUMP_FACTOR * (np.abs(r1) + np.abs(r2) + right) + noise
        return np.asarray(right_jump | left_jump, dtype=bool)


def smallest_step(eps: float) -> float:
    """√eps rounded up to a power of two: below it rounding costs more than √eps relative."""
    return float(2.0 ** np.ceil(np.log2(np.sqrt(eps))))


def step_under(line, central, suspects, eps, g0, magnitude, h):
    """Central differences at h/2, h/4, ... ≥ √eps for the ``suspects`` (bool, the line's shape).

    ``line(t)`` evaluates the rows that hold suspects (``g0`` and ``magnitude`` restricted alike);
    ``central`` is the Estimate at step h for those rows, updated in place per suspect element:
    the first step without a jump replaces value, error and one-sided derivatives; elements that
    find none are returned as the jump mask (their one-sided derivatives from the smallest step);
    those where a smaller step shows a corner rather than a jump are handed back unchanged.
    Returns (jump mask, handed-back mask, evaluations).
    """
    from gradcli.numeric.estimators import central_difference

    pending = np.array(suspects, dtype=bool, copy=True)
    handed_back = np.zeros_like(pending)
    evaluations = 0
    step = h / 2.0
    floor = smallest_step(eps)
    base = np.abs(np.real(np.asarray(g0)))
    if magnitude is not None:
        base = np.maximum(base, np.abs(magnitude))
    while pending.any() and step >= floor:
        trial = central_difference(line, step=step, eps=eps, g0=g0, magnitude=magnitude)
        evaluations += trial.evaluations
        # Clean: no jump, no kink, and a truncation error that is rounding-sized or tiny against the
        # value — a corner within the steps (a kink just off x) inflates it and is stepped under too.
        rounding = eps * base / step
        with np.errstate(invalid="ignore"):
            confident = trial.error <= CLEAN_ROUNDING * rounding + CLEAN_RELATIVE * np.abs(trial.value)
        kinked = trial.kinks(eps)
        clean = pending & ~trial.jump & ~kinked & confident & np.isfinite(trial.value)
        # No jump at this step, yet a kink or an inflated error: a corner, not a jump. Handed back
        # untouched to the kink path (Richardson's one-sided tables), which brackets it.
        corner = pending & ~trial.jump & ~clean
        handed_back |= corner
        pending &= ~corner
        last = step / 2.0 < floor
        take = clean | (pending & last)  # at the smallest step the jump's one-sided values are kept
        for name in ("value", "error", "left", "right", "left_error", "right_error"):
            target = getattr(central, name)
            target[...] = np.where(take, getattr(trial, name), target)
        pending &= ~clean
        step /= 2.0
    return pending, handed_back, evaluations
