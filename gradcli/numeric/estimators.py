"""Derivative estimators along a line t -> g(t), each returning a value *and* an error estimate.

Every estimator works on a *line function*: ``line(t)`` returns an array g(t) whose elements are
independent scalar functions of the real (or complex) parameter t, and the estimate is dg/dt at
t = 0, element by element. Callers build the line: a scalar derivative (g(t) = f(x + t·s)), a
directional derivative (g(t) = vᵀf(x + t·u)), or a batch of per-element derivatives (row j of
g(t) is vᵀf(x + t·s_j·e_j)). That is the one evaluation loop shared by every use.

Steps are in t-space; callers put the input's scale (max(1, |x|)) into the direction, so the
effective step in x is t·max(1, |x|), as usual for relative step sizing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from gradcli.numeric.jumps import jump_mask

EPS64 = float(np.finfo(np.float64).eps)
EPS32 = float(np.finfo(np.float32).eps)

# ~1.4e-20, a power of two like every step here: t·w is then exact even for float32 directions.
COMPLEX_STEP = 2.0**-66
# Richardson steps go from RICHARDSON_MAX_STEP down by halving. Large steps give the
# high-order extrapolations their accuracy on smooth functions; small steps keep the estimate
# valid near a kink or a domain edge, where the large-step entries disagree and lose.
RICHARDSON_MAX_STEP = 2.0**-3
RICHARDSON_NUM_STEPS = 15
RICHARDSON_MAX_ORDER = 4  # extrapolation levels: error terms h^2 .. h^8 removed
TINY = 1e-300
# Typical (RMS) rounding error of one central difference, in units of eps·|g|/h. Each evaluation of
# g carries about half an ulp per operation; errors at ±h partly cancel. Calibrated on smooth test
# functions so that the estimate is a typical error (median ~2x the true error), not a bound:
# the gradcheck pass criterion applies its own safety factor on top.
CENTRAL_ROUNDING = 0.25


@dataclass
class Estimate:
    """Derivative estimates (arrays of the line's shape) with their estimated absolute errors."""

    value: np.ndarray
    error: np.ndarray
    method: str  # complex_step | richardson | central
    # One-sided derivatives (real methods only): where they disagree there is a kink.
    left: Optional[np.ndarray] = None
    right: Optional[np.ndarray] = None
    left_error: Optional[np.ndarray] = None
    right_error: Optional[np.ndarray] = None
    evaluations: int = 0
    used_complex: Optional[np.ndarray] = None  # set by the automatic pipeline (numeric.line)
    kink: Optional[np.ndarray] = None
    # Central differences only: the steps straddle a jump (numeric.jumps); the value is not to be trusted.
    jump: Optional[np.ndarray] = None

    def kinks(self, eps: float = EPS64) -> np.ndarray:
        """Elements whose one-sided derivatives disagree beyond both estimates' errors."""
        if self.left is None or self.right is None:
            return np.zeros(np.shape(self.value), dtype=bool)
        gap = np.abs(self.right - self.left)
        # Generous factor: a false "kink" only widens the accepted interval to [left, right], which
        # is tiny where the function is smooth; a missed kink would be a false failure.
        noise = 4.0 * (self.left_error + self.right_error)
        floor = np.sqrt(eps) * np.maximum(np.abs(self.left), np.abs(self.right))
        with np.errstate(invalid="ignore"):
            return np.asarray((gap > noise) & (gap > floor), dtype=bool)


def _magnitude(g0: np.ndarray, magnitude) -> np.ndarray:
    """Scale of the rounding error in one evaluation of g (|g| unless the caller knows better)."""
    base = np.abs(np.real(g0))
    if magnitude is not None:
        base = np.maximum(base, np.abs(magnitude))
    return base


def central_step(eps: float = EPS64) -> float:
    """eps^(1/3) rounded to a power of two, so that x + h·s is exact for power-of-two scales s."""
    return float(2.0 ** np.round(np.log2(eps ** (1.0 / 3.0))))


def user_step(requested: float, eps: float = EPS64) -> float:
    """The central-difference step used for a step the caller asked for (gradcheck's ``eps``).

    Rounded to the nearest power of two (x ± h·s is then exact, as for the default step) and raised
    to at least eps^(1/2) rounded up (2⁻²⁶ ≈ 1.5e-8 in float64, 2⁻¹¹ ≈ 4.9e-4 in float32): below
    that, rounding alone costs more than √eps relative — a step tuned for float64 arithmetic (torch's
    1e-6) would be swamped by float32 rounding when the numeric side has to run in float32.
    The pipeline (``line.estimate_line``) takes this step *besides* the default one and keeps, per
    element, whichever has the smaller estimated error.
    """
    requested = float(requested)
    if not (np.isfinite(requested) and 0.0 < requested < 1.0):
        raise ValueError(f"eps must be a finite step in (0, 1), got {requested!r}")
    floor = float(2.0 ** np.ceil(np.log2(np.sqrt(eps))))
    return max(float(2.0 ** np.round(np.log2(requested))), floor)


def central_difference(
    line: Callable,
    *,
    step: Optional[float] = None,
    eps: float = EPS64,
    g0: Optional[np.ndarray] = None,
    magnitude: Optional[np.ndarray] = None,
) -> Estimate:
    """Central difference at h ~ eps^(1/3) (in t-space), error estimated from the step 2h.

    Five evaluations (g(0), g(±h), g(±2h)); g(0) is skipped when given. The one-sided
    derivatives come out second-order accurate from the same points (2·D(h) − D(2h)).
    """
    h = central_step(eps) if step is None else float(step)
    evaluations = 4 if g0 is not None else 5
    with np.errstate(all="ignore"):
        g0 = np.asarray(line(0.0) if g0 is None else g0)
        gp1, gm1, gp2, gm2 = (np.asarray(line(t)) for t in (h, -h, 2 * h, -2 * h))
        d1 = (gp1 - gm1) / (2 * h)
        d2 = (gp2 - gm2) / (4 * h)
        rounding = eps * _magnitude(g0, magnitude) / h
        error = np.abs(d2 - d1) / 3.0 + rounding
        right = 2 * (gp1 - g0) / h - (gp2 - g0) / (2 * h)
        left = 2 * (g0 - gm1) / h - (g0 - gm2) / (2 * h)
        # Error of the one-sided second-order formulas: their h² term is twice the central one's
        # (estimated by |d2 − d1|) plus rounding amplified by the weights 2+½ on two differences.
        one_sided_error = 4.0 * np.abs(d2 - d1) + 5.0 * rounding
        jump = jump_mask(g0, gp1, gm1, gp2, gm2, eps, _magnitude(g0, magnitude))
    return Estimate(d1, error, "central", left, right, one_sided_error, one_sided_error, evaluations, jump=jump)


class _Extrapolation:
    """Richardson table built one step at a time (largest step first); best entry per element.

    Sample k estimates the derivative with error c1·h^p1 + c2·h^p2 + ... for ``powers``; each
    table level removes one power. The error of an entry is estimated from the next-larger step's
    entry of the same level (scaled by its convergence factor) plus propagated rounding, and per
    element the entry with the smallest estimated error wins. Only the previous row is kept, so
    memory is a few arrays of the line's size whatever the number of steps.
    """

    def __init__(self, powers, magnitude, ratio=2.0):
        self.powers, self.magnitude, self.ratio = powers, magnitude, ratio
        self.previous = self.previous_rounding = None
        self.value = self.error = None

    def add(self, sample: np.ndarray, rounding: float):
        """``rounding``: the sample's rounding error in units of ``magnitude`` (a scalar)."""
        if self.value is None:
            self.value = np.full(np.shape(sample), np.nan)
            self.error = np.full(np.shape(sample), np.inf)
        row, rounding_row = [sample], [rounding]
        if self.previous is not None:
            for p in range(1, min(len(self.previous), RICHARDSON_MAX_ORDER) + 1):
                factor = self.ratio ** self.powers[p - 1]
                row.append(row[p - 1] + (row[p - 1] - self.previous[p - 1]) / (factor - 1))
                # Rounding errors at different steps are independent: they add in quadrature.
                rounding_row.append(float(np.hypot(factor * rounding_row[p - 1], self.previous_rounding[p - 1]))
                                    / (factor - 1))
            for p in range(len(row)):
                if p < len(self.previous):
                    # Same level, one step larger: its error is ratio^power times ours.
                    truncation = np.abs(row[p] - self.previous[p]) / (self.ratio ** self.powers[p] - 1)
                else:
                    truncation = np.abs(row[p] - row[p - 1])
                error = truncation + rounding_row[p] * self.magnitude
                better = np.isfinite(row[p]) & (error < self.error)
                self.value = np.where(better, row[p], self.value)
                self.error = np.where(better, error, self.error)
        self.previous, self.previous_rounding = row, rounding_row


def richardson(
    line: Callable,
    *,
    max_step: float = RICHARDSON_MAX_STEP,
    num_steps: int = RICHARDSON_NUM_STEPS,
    eps: float = EPS64,
    g0: Optional[np.ndarray] = None,
    magnitude: Optional[np.ndarray] = None,
    one_sided: bool = True,
) -> Estimate:
    """Richardson extrapolation of central (and one-sided) differences over halving steps.

    numdifftools/Ridders style: steps max_step·2^-k, the central differences' even error series
    is cancelled level by level, and per element the table entry with the smallest estimated
    error is returned. Steps whose evaluations are non-finite (outside the domain) drop out.
    ``one_sided=False`` skips the left/right tables (callers that already know the kinks).
    """
    with np.errstate(all="ignore"):
        g0 = np.asarray(line(0.0) if g0 is None else g0)
        mag = _magnitude(g0, magnitude)
        central = _Extrapolation([2, 4, 6, 8, 10, 12], mag)
        right = _Extrapolation([1, 2, 3, 4, 5, 6], mag) if one_sided else None
        left = _Extrapolation([1, 2, 3, 4, 5, 6], mag) if one_sided else None
        for h in max_step * 2.0 ** -np.arange(num_steps):
            gp, gm = np.asarray(line(h)), np.asarray(line(-h))
            central.add((gp - gm) / (2 * h), CENTRAL_ROUNDING * eps / h)
            if one_sided:
                right.add((gp - g0) / h, 2 * CENTRAL_ROUNDING * eps / h)
                left.add((g0 - gm) / h, 2 * CENTRAL_ROUNDING * eps / h)
            del gp, gm
    evaluations = 2 * num_steps + 1
    if not one_sided:
        return Estimate(central.value, central.error, "richardson", evaluations=evaluations)
    return Estimate(central.value, central.error, "richardson", left.value, right.value, left.error, right.error,
                    evaluations)


def complex_step(line: Callable, *, step: float = COMPLEX_STEP, eps: float = EPS64) -> Estimate:
    """Im g(i·h)/h: no subtractive cancellation, exact to a few ulps for analytic code.

    ``line`` must accept a complex t. Only valid for code that is complex-analytic: abs, max and
    comparisons silently give wrong answers, so callers verify it against a real estimate.
    """
    with np.errstate(all="ignore"):
        value = np.imag(np.asarray(line(1j * step))) / step
        # Truncation is h²·f'''/6 (negligible at h = 1e-20); what remains is the evaluation's own
        # rounding in the imaginary part, a few ulps of the result.
        error = 2.0 * eps * np.abs(value)
    return Estimate(value, error, "complex_step", evaluations=1)


def agree(a: Estimate, b: Estimate, factor: float = 3.0) -> np.ndarray:
    """Elements where two estimates agree within (a multiple of) their combined error estimates."""
    with np.errstate(invalid="ignore"):
        return np.asarray(np.abs(a.value - b.value) <= factor * (a.error + b.error) + TINY, dtype=bool)
