"""Declared surrogate gradients: a backward that is deliberately not its forward's derivative.

Straight-through estimators, gradient reversal and spike surrogates return on purpose what the
forward's derivative is not. A Function says so with a class attribute ``surrogate = True`` or a
comment ``# gradcli: surrogate`` on its ``class`` line; its value mismatch is then reported as the
status ``surrogate`` (not a failure) with the measured error. Everything else still counts: a
structure failure, a backward that raises, NaN/Inf, a zero grad_output giving a non-zero gradient,
nondeterminism, in-place modification. Undeclared, the same Function fails. See specs/check.md.
"""
from __future__ import annotations

import re

MARKER = re.compile(r"#\s*gradcli:\s*surrogate\b")
# checks a surrogate's backward is expected to fail: it is not the derivative of its forward
WAIVED = ("values", "exact")


def declared(cls) -> bool:
    """``surrogate = True`` on the class (or a base), or ``# gradcli: surrogate`` on its class line."""
    if getattr(cls, "surrogate", False) is True:
        return True
    from gradcli.check import source_code

    try:
        lines, _ = source_code.source_lines(cls)
    except (OSError, TypeError):
        return False
    for line in lines:
        if line.lstrip().startswith("class "):
            return bool(MARKER.search(line))
    return False


def waivable(report) -> bool:
    """Whether a failed input set failed only on what a surrogate is allowed to get wrong."""
    failures = report.failures
    if not failures:
        return False
    for c in failures:
        if c.name in WAIVED:
            continue
        if c.name == "cotangents" and c.details.get("zero_cotangent_max", 1.0) == 0.0:
            continue  # right for ones, "wrong" for random: the values differ for every cotangent alike
        return False
    return True


def mismatch(cases) -> dict:
    """The measured mismatch over a Function's input sets: max abs/rel error over its inputs."""
    abs_errors = [r.max_abs_error for c in cases if c.report is not None for r in c.report.inputs
                  if r.max_abs_error is not None]
    rel_errors = [r.max_rel_error for c in cases if c.report is not None for r in c.report.inputs
                  if r.max_rel_error is not None]
    return {"declared": True, "max_abs_error": max(abs_errors, default=None),
            "max_rel_error": max(rel_errors, default=None)}


def message(info: dict) -> str:
    def fmt(v):
        return "n/a" if v is None else f"{v:.2g}"

    return (f"declared surrogate gradient (not its forward's derivative): max abs err {fmt(info['max_abs_error'])}, "
            f"max rel err {fmt(info['max_rel_error'])}")
