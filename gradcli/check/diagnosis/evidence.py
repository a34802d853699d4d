"""What the diagnosis knows about one input's failure, and the tolerance every pattern shares.

``Evidence`` holds, per probe cotangent v (rows of the arrays), the backward's vᵀJ (``analytic``),
the numerical vᵀJ (``numeric``) and its error estimate, plus the input's values, the outputs, the
raw gradients the custom backward returned, and the other inputs' evidence. Patterns are pure
functions of it.

One tolerance decides both "this element is wrong" and "this fit is near-exact": an element of
A agrees with a prediction P when |A − P| ≤ FIT · ε with
    ε = 4·err(P) + ρ·(|A| + |P|) + ρ·1e-3·scale,
err(P) the numeric error estimate carried by P, ρ the analytic side's working precision (dtype)
and scale the largest |numeric| of the input (so exact zeros compare sanely).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

FIT = 10.0
TINY = 1e-300
# Relative precision of the backward's own arithmetic, by dtype of the checked input.
RHO = {"float64": 1e-10, "float32": 2e-6, "float16": 2e-3, "bfloat16": 2e-2}


@dataclass
class Evidence:
    index: int
    name: str
    shape: tuple
    dtype: str
    analytic: Optional[np.ndarray]  # (K, *shape) or None (backward gave no usable gradient)
    numeric: Optional[np.ndarray]  # (K, *shape)
    numeric_error: Optional[np.ndarray]  # (K, *shape)
    kinds: list  # cotangent kind per row: "ones" | "random" | ...
    cotangents: list  # one tuple of arrays (one per output) per row
    values: Optional[np.ndarray] = None  # the input, float64
    outputs: list = field(default_factory=list)  # fn's differentiable outputs, float64
    returned_none: bool = False  # the backward returned None for this input
    returned_count: Optional[tuple] = None  # (returned, expected) when backward returned too few
    raw: Optional[list] = None  # per row: the backward's unvalidated gradient (any shape) or None
    kink_mask: Optional[np.ndarray] = None
    left: Optional[np.ndarray] = None  # one-sided numeric vᵀJ, (K, *shape)
    right: Optional[np.ndarray] = None
    others: dict = field(default_factory=dict)  # index -> Evidence of the other inputs
    position: Optional[int] = None  # position of this input's gradient in backward's return
    unreduced: Optional[Callable[[], Any]] = None  # lazily: (numeric before broadcast reduction, shape)
    one_sided: Optional[Callable[[Any], Any]] = None  # flat positions -> (left, right), NaN elsewhere
    operator: Optional[Callable[[], Any]] = None  # lazily: (J, J's error, G), both (m, n); see diagnosis.operator
    backward_terms: Optional[Callable[[], Any]] = None  # lazily: [(code, values per row)] of the gradient statement
    substitutions: Optional[Callable[[], Any]] = None  # lazily: (names, evaluate(name, value)) of the statement
    backward_names: Optional[Callable[[], Any]] = None  # lazily: [(name, value)] backward has, grad_output-free
    backward_rows: Optional[Callable[[], Any]] = None  # lazily: [(name, [value per row])] backward has
    overwrites: Optional[Callable[[], Any]] = None  # lazily: does backward assign (not add) into the gradient?
    edits: Optional[Callable[[], Any]] = None  # lazily: (edits, evaluate, src) of the gradient's statements
    masks: list = field(default_factory=list)  # (name, bool values broadcast to the input's shape) of mask inputs
    labels: list = field(default_factory=list)  # (name, values broadcast to the input's shape) of integer inputs
    relayout: Optional[Callable[[], Any]] = None  # lazily: a missing_reshape finding from re-running backward
    index_writes: Optional[Callable[[], Any]] = None  # lazily: a not_accumulated finding from re-running backward
    flips: Optional[Callable[[], Any]] = None  # lazily: a missing_flip finding from re-running backward
    rewrites: Optional[Callable[[], Any]] = None  # lazily: the finding of one edit of backward (rewrites.py)
    rewrites_saved: Optional[Callable[[], Any]] = None  # lazily: ... of what forward saves
    rewrites_late: Optional[Callable[[], Any]] = None  # lazily: ... of a normalisation's reduction terms
    forward_pieces: Optional[Callable[[], Any]] = None  # lazily: vᵀJ with each part of forward's expression frozen
    empty_masks: Optional[Callable[[], Any]] = None  # lazily: [(name, line, code)] of masks false everywhere

    @property
    def rho(self) -> float:
        return RHO.get(self.dtype, 1e-10)

    @property
    def scale(self) -> float:
        if self.numeric is None or self.numeric.size == 0:
            return 0.0
        return float(np.max(np.abs(self.numeric)))

    @property
    def ones_row(self) -> Optional[int]:
        return self.kinds.index("ones") if "ones" in self.kinds else None

    # ----- the shared tolerance --------------------------------------------------------------
    def eps(self, a, p, p_error=0.0, rho=None):
        rho = self.rho if rho is None else rho
        return 4.0 * np.abs(p_error) + rho * (np.abs(a) + np.abs(p)) + rho * 1e-3 * self.scale + TINY

    def near(self, a, p, p_error=0.0, rho=None) -> np.ndarray:
        """Element-wise: does ``a`` agree with the prediction ``p`` (carrying ``p_error``)? ``rho``:
        another working precision for ``a`` (a gradient backward computed in float32)."""
        with np.errstate(invalid="ignore"):
            close = np.abs(a - p) <= FIT * self.eps(a, p, p_error, rho)
            # an infinite value makes ε infinite: it agrees only with itself (an edit dividing by 0)
            return np.asarray((close & np.isfinite(a) & np.isfinite(p)) | (a == p), dtype=bool)

    def fits(self, a, p, p_error=0.0, rho=None) -> bool:
        return bool(np.all(self.near(a, p, p_error, rho)))

    def wrong_rows(self) -> Optional[np.ndarray]:
        """(K, *shape) bool: elements where the backward disagrees with the reference."""
        if self.analytic is None or self.numeric is None:
            return None
        return ~self.near(self.analytic, self.numeric, self.numeric_error)

    def wrong(self) -> Optional[np.ndarray]:
        """Shaped like the input: wrong for at least one cotangent."""
        rows = self.wrong_rows()
        return None if rows is None else rows.any(axis=0)

    def informative(self) -> np.ndarray:
        """Positions where analytic or numeric is non-negligible for some cotangent: only there can
        an element be seen to be right or wrong."""
        floor = self.rho * 1e-3 * max(self.scale, TINY)
        mags = np.abs(self.numeric)
        if self.analytic is not None:
            mags = np.maximum(mags, np.abs(self.analytic))
        return (mags > floor).any(axis=0)

    def support(self, array=None) -> int:
        """Number of positions where ``array`` (default: numeric) is significant in some row."""
        array = self.numeric if array is None else array
        if array is None or array.size == 0:
            return 0
        peak = float(np.max(np.abs(array)))
        if peak == 0.0:
            return 0
        return int(np.count_nonzero((np.abs(array) > 1e-6 * peak).reshape(array.shape[0], -1).any(axis=0)))


    def constraints(self) -> int:
        """Independent numbers a fit is tested on: the positions carrying signal times the linearly
        independent cotangents among the rows that carry it. A scalar parameter's one gradient seen
        through three random cotangents pins a constant factor as firmly as three positions do
        (vᵀJ′ = c·vᵀJ for three independent v); a scalar output's rows are one cotangent, scaled."""
        support = self.support()
        if support == 0 or not self.cotangents:
            return support
        peak = float(np.max(np.abs(self.numeric)))
        signal = (np.abs(self.numeric) > 1e-6 * peak).reshape(self.numeric.shape[0], -1).any(axis=1)
        rows = [np.concatenate([np.ravel(np.asarray(c, dtype=float)) for c in self.cotangents[k]])
                for k in range(len(self.cotangents)) if k < len(signal) and signal[k]]
        if not rows or any(r.shape != rows[0].shape for r in rows):
            return support
        return support * int(np.linalg.matrix_rank(np.stack(rows)))


NICE_DENOMINATORS = (1, 2, 3, 4, 5, 8, 10)


# An edited backward's result is judged at this working precision at least: a float32 constant in
# float64 arithmetic (``torch.where(c, 0.3, -0.7)`` is float32: 0.3 to 4e-8) is as right as the
# correct backward written that way, which the check passes.
EDITED_RHO = 1e-7


def nice_number(value: float, rel: float = 1e-6, max_numerator: int = 64) -> Optional[float]:
    """``value`` rounded to a simple fraction p/q (q in 1,2,3,4,5,8,10; |p| ≤ 64) when it is one to
    within ``rel``; else None. Used to report "factor 2" rather than "factor 1.9999999998"."""
    if not np.isfinite(value):
        return None
    for q in NICE_DENOMINATORS:
        p = round(value * q)
        if p == 0 or abs(p) > max_numerator * q:
            continue
        candidate = p / q
        if abs(value - candidate) <= rel * abs(candidate):
            return float(candidate)
    return None


def short_number(value: float) -> str:
    """2, 0.5, -1, 1/3 → compact text for messages."""
    nice = nice_number(value)
    if nice is not None:
        for q in (3,):
            p = round(nice * q)
            if abs(nice * q - p) < 1e-9 and p % q:
                return f"{p}/{q}"
        return f"{nice:g}"
    for text, log in (("ln 10", np.log(10)), ("ln 2", np.log(2))):  # log10's 1/(x·ln 10) written 1/x
        if abs(abs(value) - log) <= 1e-5 * log:  # a factor kept to 6 digits
            return ("-" if value < 0 else "") + text
        if abs(abs(value) * log - 1) <= 1e-5:
            return ("-" if value < 0 else "") + f"1/{text}"
    for over_pi, multiple in ((False, value / np.pi), (True, value * np.pi)):  # a forgotten dθ/dp = π/4
        nice = nice_number(multiple) if abs(multiple) >= 0.1 else None
        q = next((q for q in NICE_DENOMINATORS if nice is not None and abs(nice * q - round(nice * q)) < 1e-9), None)
        if q is not None and (q == 1 or not over_pi):
            p = int(round(nice * q))
            text = (f"{p}/π" if over_pi else ("π" if abs(p) == 1 else f"{abs(p)}π") + (f"/{q}" if q > 1 else ""))
            return ("-" if p < 0 and not over_pi else "") + text
    return f"{value:.4g}"


def lazy(compute):
    """compute() once, on first use."""
    cache = []

    def get():
        if not cache:
            cache.append(compute())
        return cache[0]

    return get

