"""Surrogate gradients that were not declared: the backward is *meant* to differ from the true
derivative. They still fail (only ``surrogate = True`` on the class makes them a reported
surrogate), but the diagnosis names what it sees instead of "no simple pattern":

- ``straight_through``: forward is piecewise constant (the numerical derivative is zero wherever
  it is finite) and backward passes grad_output through, unchanged or clipped to ``|x| ≤ t`` — or,
  not elementwise, through a relaxation's Jacobian (a straight-through Gumbel-softmax);
- ``smooth_surrogate``: forward piecewise constant, backward is grad_output times a non-negative
  bump of x (sigmoid', a fast sigmoid, a triangle...) that peaks at the step;
- ``gradient_reversal``: forward is the identity and backward is −λ·grad_output.
"""
from __future__ import annotations

import numpy as np

from gradcli.check.diagnosis.evidence import nice_number, short_number
from gradcli.check.report import Finding

DECLARE = "surrogate = True"
JUMP = 1e3  # |numeric| this many times the backward's scale: a step inside the difference stencil


def _elementwise_cotangent(ev):
    """(V, ratio) with A = V·ratio elementwise and the same ratio for every cotangent; else None."""
    if ev.analytic is None or len(ev.outputs) != 1 or ev.outputs[0].shape != tuple(ev.shape) or not ev.cotangents:
        return None
    V = np.stack([np.reshape(row[0], ev.shape) for row in ev.cotangents])
    A = ev.analytic
    with np.errstate(all="ignore"):
        ratio = np.where(np.abs(V) > 0, A / V, np.nan)
    per_element = np.nanmedian(ratio, axis=0) if np.isfinite(ratio).any() else None
    if per_element is None or not np.all(np.isfinite(per_element)):
        return None
    if not ev.fits(A, V * per_element):
        return None
    return V, per_element


def _piecewise_constant(ev):
    """Forward is piecewise constant: numeric zero at (nearly) every element, huge at jumps."""
    if ev.numeric is None or ev.analytic is None:
        return False
    peak = float(np.max(np.abs(ev.analytic))) if ev.analytic.size else 0.0
    if peak == 0.0:
        return False
    N = np.abs(ev.numeric)
    flat = (N <= 1e-8 * peak).all(axis=0)
    jump = (N >= JUMP * peak).any(axis=0)
    return bool(np.all(flat | jump) and flat.mean() >= 0.5)


def straight_through(ev):
    if not _piecewise_constant(ev):
        return None
    found = _elementwise_cotangent(ev)
    if found is None:
        if ev.analytic is None or len(ev.outputs) != 1 or ev.outputs[0].shape != tuple(ev.shape) \
                or not np.all(np.isfinite(ev.analytic)):
            return None
        # forward flat almost everywhere, backward a relaxation's Jacobian (a straight-through
        # Gumbel-softmax: a hard one-hot forward, the tempered softmax's Jacobian backward)
        return Finding("straight_through", f"backward for input {ev.name} passes grad_output through another "
                       "function's Jacobian where forward is piecewise constant (a straight-through estimator of a "
                       "relaxation)", input=ev.index, params={"clipped": None, "relaxed": True}, confidence=0.8)
    _, ratio = found
    if np.allclose(ratio, 1.0, rtol=1e-9, atol=0):
        return Finding("straight_through", f"backward for input {ev.name} is the identity where forward is piecewise "
                       "constant (straight-through estimator)",
                       input=ev.index, params={"clipped": None}, confidence=0.9)
    ones, zeros = np.isclose(ratio, 1.0, rtol=1e-9, atol=0), np.isclose(ratio, 0.0, atol=1e-12)
    if ev.values is None or not np.all(ones | zeros) or not ones.any() or not zeros.any():
        return None
    inside, outside = np.abs(ev.values[ones]), np.abs(ev.values[zeros])
    if inside.max() >= outside.min():
        return None  # not a clip to |x| ≤ t
    t = 1.0 if inside.max() <= 1.0 < outside.min() else float(f"{(inside.max() + outside.min()) / 2:.2g}")
    return Finding("straight_through", f"backward for input {ev.name} is a clipped identity (grad_output where "
                   f"|x| ≤ {short_number(t)}, else 0) where forward is piecewise constant (straight-through "
                   "estimator)", input=ev.index, params={"clipped": t}, confidence=0.85)


def smooth_surrogate(ev):
    if not _piecewise_constant(ev) or ev.values is None:
        return None
    found = _elementwise_cotangent(ev)
    if found is None:
        return None
    _, ratio = found
    x, r = ev.values.ravel(), ratio.ravel()
    falling = bool(np.all(r <= 0))  # a step down (`x < 0`): its surrogate is a bump below zero
    r = -r if falling else r
    if r.size < 3 or np.any(r < 0) or np.count_nonzero(r > 0) < 2 or np.allclose(r, r[0], rtol=1e-6):
        return None  # a bump may be zero away from the step (a triangle), never negative
    order = np.argsort(x)
    rs = r[order]
    peak = int(np.argmax(rs))
    # a bump: rising up to its peak, falling after it (a step's surrogate derivative)
    if np.any(np.diff(rs[: peak + 1]) < -1e-12 * rs[peak]) or np.any(np.diff(rs[peak:]) > 1e-12 * rs[peak]):
        return None
    return Finding("smooth_surrogate", f"backward for input {ev.name} is a smooth surrogate of a step: forward is "
                   f"piecewise constant and backward is grad_output times a {'negative ' if falling else ''}bump of x "
                   f"peaking near x = {float(x[order][peak]):.3g}", input=ev.index,
                   params={"peak_at": float(x[order][peak]), "falling": falling},
                   confidence=0.85)


def gradient_reversal(ev):
    # the cotangents alone say whether forward is the identity: the report's arrays suffice
    if ev.analytic is None or not ev.cotangents or any(len(row) != 1 or np.size(row[0]) != int(np.prod(ev.shape))
                                                       for row in ev.cotangents):
        return None
    V = np.stack([np.reshape(row[0], ev.shape) for row in ev.cotangents])
    if not ev.fits(V, ev.numeric, ev.numeric_error):
        return None  # forward is not the identity
    denominator = float(np.sum(V * V))
    if denominator == 0:
        return None
    c = float(np.sum(ev.analytic * V)) / denominator
    if c >= 0 or not ev.fits(ev.analytic, c * V):
        return None
    lam = nice_number(-c) or float(f"{-c:.6g}")
    return Finding("gradient_reversal", f"backward for input {ev.name} is −λ·grad_output with "
                   f"λ = {short_number(lam)} where forward is the identity (gradient reversal)",
                   input=ev.index, params={"factor": -lam, "lambda": lam}, confidence=0.9)
