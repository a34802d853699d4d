"""``repeat=N`` (``gradcli check --repeat N``): backward N times with one cotangent, and its spread.

torch's ``nondet_tol`` must be tuned by hand (pytorch#20980, #56202): a backward that uses atomics,
a random choice or state it changes differs between passes. The ``reentrant`` check compares two
passes; with ``repeat`` it becomes N passes with the session's last random cotangent, reporting per
input the spread (the largest difference between any two passes, element by element: max − min)
and the ``nondet_tol`` that would accept it (twice the spread, rounded up to one significant
digit: more passes may spread further). It fails, naming the nondeterministic backward, when the
spread exceeds ``nondet_tol``. Memory: a running minimum and maximum per input. See
specs/gradcheck.md.
"""
from __future__ import annotations

import math

import numpy as np

from gradcli.check.analytic import BackwardFailed
from gradcli.check.report import Check


def suggested_nondet_tol(spread: float) -> float:
    """Twice ``spread``, rounded up to one significant digit (0 for a deterministic backward)."""
    if not spread or not math.isfinite(spread):
        return 0.0 if not spread else float("inf")
    target = 2 * spread
    power = 10.0 ** math.floor(math.log10(target))
    return math.ceil(target / power - 1e-9) * power


def repeat_check(session, repeat: int) -> Check:
    """The ``reentrant`` check from ``repeat`` backward passes (replaces the two-pass one)."""
    analytic, names = session.analytic, session.names
    cotangent = session.report.cotangents[-1]
    low = [None] * len(session.diff)
    high = [None] * len(session.diff)
    for _ in range(repeat):
        try:
            grads = analytic.vjp(cotangent)
        except BackwardFailed as exc:
            message = str(exc).strip().splitlines()
            return Check("reentrant", "fail", "a repeated backward pass raised: " + (message[-1] if message else ""),
                         None, {"repeat": repeat})
        for p, g in enumerate(grads):
            if g is None:
                g = np.zeros(())
            if low[p] is None:
                low[p], high[p] = g.copy(), g.copy()
            else:
                with np.errstate(invalid="ignore"):
                    np.fmin(low[p], g, out=low[p])
                    np.fmax(high[p], g, out=high[p])
    spread = {}
    for p, i in enumerate(session.diff):
        with np.errstate(invalid="ignore"):
            width = np.abs(high[p] - low[p]) if low[p] is not None else np.zeros(())
        spread[names[i]] = float(np.nanmax(width)) if width.size else 0.0
    worst = max(spread.values(), default=0.0)
    suggested = suggested_nondet_tol(worst)
    tol = session.nondet_tol
    details = {"repeat": repeat, "spread": spread, "max_difference": worst, "nondet_tol": tol,
               "suggested_nondet_tol": suggested}
    per_input = ", ".join(f"{n}: {s:.3g}" for n, s in spread.items())
    if worst <= tol:
        word = "the same gradients" if worst == 0 else f"gradients within nondet_tol={tol} (spread {per_input})"
        return Check("reentrant", "pass", f"{repeat} backward passes with the same grad_output give {word}",
                     None, details)
    return Check("reentrant", "fail",
                 f"nondeterministic backward: {repeat} passes with the same grad_output differ by up to {worst:.3g} "
                 f"(spread per input: {per_input}; nondet_tol={tol}); if that is expected (atomics, random "
                 f"choices), set nondet_tol = {suggested:.3g} (gradcheck(nondet_tol=...) or [tool.gradcli] "
                 f"nondet_tol), else backward changes state it reads", None, details)
