"""How a backward uses grad_output (not at all, or reduced to one number where it is needed
whole), and how it lays out what it returns (entries of one short axis in another order).

``ignores_grad_output`` compares the rows of the evidence (one per probe cotangent): a gradient
that stays the same whatever the cotangent, one that is the ones-cotangent gradient times a scalar
per cotangent, or one that reads the cotangent only through its sum (``grad.sum() * d.sum()`` for
``(grad * d).sum()``).
"""
from __future__ import annotations

import itertools

import numpy as np

from gradcli.check.diagnosis.evidence import Evidence
from gradcli.check.report import Finding


def ignores_grad_output(ev: Evidence):
    """The backward's result does not change with the cotangent (while the true vᵀJ does), or it
    is right for ones and otherwise the ones-row gradient times one number per cotangent."""
    o = ev.ones_row
    if ev.analytic is None or o is None or len(ev.kinds) < 2:
        return None
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error
    if ev.fits(A, 0 * A):
        return None  # a zero gradient is trivially the same for every cotangent: that is `zero`
    others = [k for k in range(len(ev.kinds)) if k != o]
    numeric_varies = any(not ev.fits(N[k], N[o], E[k] + E[o]) for k in others)
    if not numeric_varies:
        return None  # all cotangents give the same vᵀJ: nothing tells "ignores" apart
    invariant = all(ev.fits(A[k], A[o]) for k in others)
    ones_ok = ev.fits(A[o], N[o], E[o])
    random_wrong = any(not ev.fits(A[k], N[k], E[k]) for k in others)
    if not random_wrong:
        return None
    if invariant:
        extra = "" if ones_ok else " (and is wrong even for a cotangent of ones)"
        return Finding("ignores_grad_output",
                       f"backward ignores grad_output for input {ev.name}: its gradient is the same whatever the "
                       f"cotangent{extra}",
                       input=ev.index, params={"ones_ok": ones_ok, "uses_grad_output": False},
                       confidence=0.95 if ones_ok else 0.8)
    if ones_ok and _rows_proportional(ev, A, o, others):
        # Right for ones alone is no evidence (a permutation, softmax rows and many wrong formulas
        # are right for ones): it must be the ones-row gradient scaled by one number per cotangent,
        # i.e. grad_output reduced to a scalar (grad_output.sum(), .mean()) where it is needed whole.
        return Finding("ignores_grad_output",
                       f"backward for input {ev.name} uses grad_output reduced to one number (its gradient is the "
                       "ones-cotangent gradient times a scalar): it must multiply by grad_output elementwise",
                       input=ev.index, params={"ones_ok": True, "uses_grad_output": True, "reduced": True},
                       confidence=0.8)
    if len(ev.outputs) == 1 and _through_sum(ev, A, o, others):
        # `grad.sum() * d.sum()` for `(grad * d).sum()`: each row is the ones-row gradient times
        # exactly Σv / Σ1 — wrong for ones as well (m·Σd where Σd is right), so the ratios are the evidence
        return Finding("ignores_grad_output",
                       f"backward for input {ev.name} uses grad_output only through its sum (each cotangent's "
                       "gradient is the ones-cotangent gradient times Σ grad_output / Σ 1, exactly): multiply by "
                       "grad_output elementwise, then reduce",
                       input=ev.index, params={"ones_ok": ones_ok, "uses_grad_output": True, "reduced": True,
                                               "through": "sum"}, confidence=0.8)
    return None


def _through_sum(ev, A, o, others) -> bool:
    """Every row of A is the ones row times Σv_k / Σ1, with those ratios telling rows apart."""
    if np.size(ev.outputs[0]) < 2:
        return False  # a scalar output's gradient is always its one cotangent times the ones row
    totals = [float(np.sum(np.asarray(ev.cotangents[k][0], dtype=float))) for k in range(len(ev.kinds))]
    if totals[o] == 0 or not np.any(A[o]) or ev.constraints() < 3:
        return False
    ratios = [totals[k] / totals[o] for k in others]
    if all(abs(r - 1) < 1e-3 for r in ratios):
        return False  # the cotangents sum alike: the ratio tells nothing
    N, E = ev.numeric, ev.numeric_error
    if all(ev.fits(N[k], r * N[o], E[k] + abs(r) * E[o]) for k, r in zip(others, ratios)):
        return False  # the true gradient reads only Σ grad_output as well (a broadcast scalar)
    return all(ev.fits(A[k], r * A[o]) for k, r in zip(others, ratios))


def _rows_proportional(ev, A, o, others) -> bool:
    base = A[o]
    denominator = float(np.sum(base * base))
    if denominator == 0 or ev.support(A) < 2:
        return False
    for k in others:
        c = float(np.sum(A[k] * base)) / denominator
        if not ev.fits(A[k], c * base):
            return False
    return True


def permuted_entries(ev: Evidence):
    """The gradient's entries along one short axis (3 or 4) in another order: A[..., π] = N for one
    cyclic permutation π of all of them — a basis stored as (y, z, x) read back as (x, y, z), the
    permutation not undone.
    Tried after the whole-axis layouts (a transpose is a permutation of axes, not of entries)."""
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error
    if A is None or N is None or A.shape != N.shape or ev.fits(A, N, E) or ev.support() < 3:
        return None
    for axis, n in enumerate(ev.shape):
        if not 3 <= n <= 4:
            continue
        for order in itertools.permutations(range(n)):
            if list(order) == list(range(n))[::-1] or not _one_cycle(order):
                # the reversal is a missing flip (a Horner's powers high-first), tried later; pairs
                # swapped ((1, 0, 3, 2): each value at its pair's other element) are a wrong index
                continue
            moved = np.take(A, list(order), axis=axis + 1)
            if ev.fits(moved, N, E) and not ev.fits(np.take(N, list(order), axis=axis + 1), N, E):
                inverse = [order.index(k) for k in range(n)]
                return Finding("missing_reshape", f"backward for input {ev.name} returns its entries along dim "
                               f"{axis} in the wrong order: entries {', '.join(map(str, range(n)))} hold the "
                               f"gradients of entries {', '.join(map(str, inverse))} (a permutation not undone)",
                               input=ev.index, params={"axis": axis, "order": inverse, "entries": True},
                               confidence=0.85)
    return None


def _one_cycle(order) -> bool:
    """Whether the permutation ``order`` is one cycle through all its entries."""
    seen, k = set(), 0
    while k not in seen:
        seen.add(k)
        k = order[k]
    return len(seen) == len(order)

