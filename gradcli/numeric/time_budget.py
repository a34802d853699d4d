"""Full mode's time budget: whether an input's element-by-element reference fits before it starts.

``gradcheck(time_budget=...)`` (what ``gradcli check`` derives from ``--timeout``): the per-element
strategies cost O(n) forward evaluations, so their cost is estimated from the forward's cost
measured so far (``NumericFunction.seconds`` over its calls or points) and, when it would not fit,
``OverBudget`` says so; gradcheck then checks that input along random directions instead
(``check.too_large``), with the reason in its message.
"""
from __future__ import annotations

from typing import Optional


class OverBudget(ValueError):
    """The element-by-element reference of one input would take longer than the time budget."""


def within_budget(nf, index: int, method: str, chunk: Optional[int], budget: float):
    """Raise OverBudget when the per-element strategy's evaluations (per element: central 4, complex
    step 1; Richardson's 30 only where a verdict stays open, not counted), at the forward's cost
    measured so far, would not fit in ``budget`` seconds: per call when batched (``chunk`` elements
    a call), per point otherwise."""
    if nf.points == 0:
        nf(nf.inputs)  # one timed evaluation: nothing measured the forward's cost yet
    n = nf.inputs[index].size
    steps = 5 if method in ("auto", "complex_step") else 4 if method == "central" else 31
    if chunk is not None:
        chunks = -(-n // chunk)
        evaluations, cost = steps * chunks + 3 * chunks, nf.seconds / max(nf.evaluations, 1)
    else:
        evaluations, cost = steps * n, nf.seconds / max(nf.points, 1)
    needed = evaluations * cost
    if needed > budget:
        raise OverBudget(f"full mode needs ~{evaluations:,} forward evaluations for its {n:,} elements "
                         f"(~{needed:.0f} s at {cost * 1e3:.2g} ms each), more than the time budget left "
                         f"({max(budget, 0):.0f} s)")
