"""Tolerances as data, keyed by the dtype the backward computes in, and the pass criterion.

An element passes when

    |analytic - numeric| <= safety · error_estimate + atol + rtol · |numeric| + scale_atol · scale

where ``error_estimate`` is the numerical reference's own error estimate at that element and
``scale`` the largest |numeric| of that input and cotangent (it absorbs the rounding of a
backward that cancels large terms). At a kink the analytic value may lie anywhere between the
one-sided derivatives, widened by the same allowance.

float64 defaults are tight: a 1e-6 relative error fails, so a backward off by 1e-3 never passes;
a correct float64 backward, whose own rounding is ~1e-15, never fails. A float32 backward rounds
at ~1e-7 per operation, so its rtol is 1e-4 (still catching 1e-3 errors).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Optional


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    scale_atol: float
    safety: float = 10.0  # multiple of the reference's (typical, not worst-case) error estimate

    def to_dict(self) -> dict:
        return asdict(self)


DEFAULT_TOLERANCES = {
    "float64": Tolerance(rtol=1e-6, atol=1e-12, scale_atol=1e-9),
    "float32": Tolerance(rtol=1e-4, atol=1e-7, scale_atol=1e-5),
    "float16": Tolerance(rtol=1e-2, atol=1e-4, scale_atol=1e-2),
    "bfloat16": Tolerance(rtol=3e-2, atol=1e-3, scale_atol=3e-2),
}


# Machine epsilon by dtype name (numpy has no bfloat16).
EPS_BY_DTYPE = {"float64": 2.0**-52, "float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}


def tolerance_for(
    dtype_name: str,
    atol: Optional[float] = None,
    rtol: Optional[float] = None,
    overrides: Optional[dict] = None,
) -> Tolerance:
    """The tolerance for a dtype name ("float32", ...), with per-dtype and explicit overrides.

    ``overrides`` maps dtype names to dicts of fields ({"float32": {"rtol": 1e-3}}); ``atol`` and
    ``rtol`` given explicitly win over everything. Unknown dtypes get float64's tolerance.
    """
    base = DEFAULT_TOLERANCES.get(dtype_name, DEFAULT_TOLERANCES["float64"])
    if overrides and dtype_name in overrides:
        base = replace(base, **overrides[dtype_name])
    if atol is not None:
        base = replace(base, atol=float(atol))
    if rtol is not None:
        base = replace(base, rtol=float(rtol))
    return base


def widest(names) -> str:
    """The least precise of several dtype names (the one whose tolerance must apply)."""
    order = ["float64", "float32", "float16", "bfloat16"]
    known = [n for n in names if n in order]
    return max(known, key=order.index) if known else "float64"
