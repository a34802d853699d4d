"""One size everywhere, when backward raises where sizes of different inputs meet.

A backward that takes a count from one input and uses it on another (``K = logits.size(-1)`` then
``mu[..., torch.arange(K), torch.arange(K), :]`` on a tensor whose size there comes from ``locs``; ``z /
scale`` where ``z`` was drawn with a size tuple forward was given) raises ``index 3 is out of bounds for
dimension 0 with size 3`` or ``The size of tensor a (4) must match the size of tensor b (3)`` at inputs whose
sizes gradcli chose independently (``3x4`` here, a ``(3, 4)`` size tuple there). The sizes those inputs really
need agree with each other, and gradcli cannot tell which from the source; one size for every dimension of
every tensor and size tuple (keeping their number of dimensions, and sizes of 1) satisfies any such agreement.
``auto_inputs.Builder._guided`` tries this plan after forward ran at the first plan and backward raised so;
like any plan it is taken only where forward and backward run, and it is recorded in each input's
``inferred``.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Optional

_MISMATCH = re.compile(r"index -?\d+ is out of bounds for dimension \d+ with size \d+"
                       r"|The size of tensor a \(\d+\) must match the size of tensor b \(\d+\)")


def plan(plans: dict, why: str) -> Optional[dict]:
    """``plans`` with every tensor's and size tuple's sizes (other than 1) set to the largest among them, or None
    when backward's error ``why`` is not a size disagreement or nothing would change."""
    found = _MISMATCH.search(why or "")
    if found is None:
        return None
    sizes = [k for p in plans.values() for k in _sizes(p) if k > 1]
    if not sizes:
        return None
    n = max(sizes)
    reason = (f"one size ({n}) for every input: backward raised where sizes of different inputs meet "
              f"({found.group(0)})")
    out = {}
    for name, p in plans.items():
        if p.kind == "tensor" and p.shape:
            out[name] = replace(p, shape=_equal(p.shape, n), why=reason)
        elif p.kind == "shape" and p.value:
            out[name] = replace(p, value=_equal(p.value, n), why=reason)
        else:
            out[name] = p
    changed = any(_sizes(out[name]) != _sizes(p) for name, p in plans.items())
    return out if changed else None


def _sizes(p) -> tuple:
    if p.kind == "tensor":
        return tuple(p.shape or ())
    if p.kind == "shape":
        return tuple(p.value or ())
    return ()


def _equal(shape, n: int) -> tuple:
    return tuple(1 if k == 1 else n for k in shape)
