"""The gradcheck report: plain dataclasses, filled by ``gradcli.gradcheck`` and read by renderers.

Data flows one way: gradcheck -> these objects -> renderers / JSON / diagnosis. Nothing here
prints. ``to_dict()`` is the JSON form documented in ``specs/report.md``; it contains only
str/int/float/bool/None/list/dict, never numpy scalars and never NaN/Infinity (non-finite
numbers become the strings "nan", "inf", "-inf").

Per-element arrays (analytic and numeric values of vᵀJ for every probe cotangent) are kept on
``InputResult`` for heat-maps and pattern fitting, but are deliberately left out of the JSON:
they are O(n) per input and would make CI artefacts huge.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

INPUT_STATUSES = ("pass", "fail", "skip")
CHECK_STATUSES = ("pass", "fail", "skip", "warn")
SCHEMA_VERSION = 1


@dataclass
class Finding:
    """One diagnosis of what is wrong (filled by the diagnosis layer, not by gradcheck itself)."""

    kind: str  # scale | sign | ignores_grad_output | transposed | swapped | not_reduced | region | ...
    message: str
    hint: str = ""
    input: Optional[int] = None  # index of the input it concerns, None for the whole Function
    params: dict = field(default_factory=dict)  # e.g. {"factor": 2.0} or {"other_input": 1}
    confidence: float = 1.0  # 0..1

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "message": self.message,
            "hint": self.hint,
            "input": self.input,
            "params": json_safe(self.params),
            "confidence": json_safe(self.confidence),
        }


@dataclass
class WorstElement:
    """The element of an input's gradient with the largest error relative to its tolerance."""

    index: tuple  # multi-index into the input (() for a 0-d input)
    analytic: float  # backward's value of (vᵀJ)[index] for the worst cotangent v
    numeric: float  # the numerical reference's value
    error_estimate: float  # the reference's own error estimate at that element
    cotangent: int = 0  # which probe cotangent (index into CheckReport.cotangent_kinds)

    def to_dict(self) -> dict:
        return {
            "index": [int(i) for i in self.index],
            "analytic": json_safe(self.analytic),
            "numeric": json_safe(self.numeric),
            "error_estimate": json_safe(self.error_estimate),
            "cotangent": int(self.cotangent),
        }


@dataclass
class InputResult:
    """The value check's verdict for one differentiable input."""

    name: str
    index: int
    shape: tuple
    dtype: str
    status: str = "skip"  # pass | fail | skip
    max_abs_error: Optional[float] = None
    max_rel_error: Optional[float] = None
    worst: Optional[WorstElement] = None
    method: str = ""  # numeric method actually used: complex_step | richardson | central | mixed
    error_estimate: Optional[float] = None  # largest error estimate of the numeric reference
    tolerance: Optional[float] = None  # the allowed error at the worst element
    message: str = ""
    kinks: int = 0  # elements where one-sided derivatives disagree (not failures)
    exact_error: Optional[float] = None  # filled later against a symbolic (exact) reference
    # Not in JSON: one row per probe cotangent, each shaped like the input.
    analytic: Any = field(default=None, repr=False, compare=False)
    numeric: Any = field(default=None, repr=False, compare=False)
    numeric_error: Any = field(default=None, repr=False, compare=False)
    kink_mask: Any = field(default=None, repr=False, compare=False)  # bool, shaped like the input

    @property
    def ok(self) -> bool:
        return self.status != "fail"

    def error_map(self):
        """|analytic - numeric| maximised over cotangents, shaped like the input (None if not kept)."""
        if self.analytic is None or self.numeric is None:
            return None
        import numpy as np

        diff = np.abs(np.asarray(self.analytic, dtype=float) - np.asarray(self.numeric, dtype=float))
        return diff.max(axis=0) if diff.ndim > len(self.shape) else diff

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "index": int(self.index),
            "shape": [int(s) for s in self.shape],
            "dtype": self.dtype,
            "status": self.status,
            "max_abs_error": json_safe(self.max_abs_error),
            "max_rel_error": json_safe(self.max_rel_error),
            "worst": self.worst.to_dict() if self.worst is not None else None,
            "method": self.method,
            "error_estimate": json_safe(self.error_estimate),
            "tolerance": json_safe(self.tolerance),
            "message": self.message,
            "kinks": int(self.kinks),
            "exact_error": json_safe(self.exact_error),
        }


@dataclass
class Check:
    """One named check (values, cotangents, structure, backward_invoked, inplace, ...)."""

    name: str
    status: str  # pass | fail | skip | warn
    message: str = ""
    input: Optional[int] = None
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "status": self.status,
            "message": self.message,
            "input": self.input,
            "details": json_safe(self.details),
        }


@dataclass
class CheckReport:
    function: str
    backend: str = "gradcli"  # gradcli | torch
    mode: str = "full"  # mode actually run: full | fast (auto resolves to one of them)
    requested_mode: str = "auto"
    method: str = "auto"  # requested numeric method: auto | complex_step | richardson | central
    seed: int = 0
    dtypes: list = field(default_factory=list)  # dtype name per input ("float32", ...; "" if not a tensor)
    numeric_dtype: str = "float64"
    tolerances: dict = field(default_factory=dict)  # {"atol":..., "rtol":..., "nondet_tol":...}
    inputs: list = field(default_factory=list)  # list[InputResult]
    checks: list = field(default_factory=list)  # list[Check]
    diagnosis: list = field(default_factory=list)  # list[Finding]; left empty by gradcheck
    timing: dict = field(default_factory=dict)  # seconds and evaluation counts
    cotangent_kinds: list = field(default_factory=list)  # e.g. ["ones", "random", "random"]
    escalated: bool = False  # fast mode found a failure and re-ran in full mode to localise it
    compatibility: dict = field(default_factory=dict)  # compat.py: {feature: state}, set by gradcheck
    # Not in JSON: the probe cotangents, one tuple of arrays (one per output) per kind.
    cotangents: Any = field(default=None, repr=False, compare=False)

    @property
    def status(self) -> str:
        """fail if anything failed; skip if nothing was compared (every values check skipped); else pass."""
        statuses = [c.status for c in self.checks] + [r.status for r in self.inputs]
        if "fail" in statuses:
            return "fail"
        values = [c.status for c in self.checks if c.name == "values"]
        if (values and all(s == "skip" for s in values)) or (statuses and all(s == "skip" for s in statuses)):
            return "skip"
        return "pass"

    @property
    def ok(self) -> bool:
        return self.status != "fail"

    def __bool__(self) -> bool:
        return self.ok

    @property
    def failures(self) -> list:
        return [c for c in self.checks if c.status == "fail"]

    def check(self, name: str) -> Optional[Check]:
        """The first check with this name (None if it was not run)."""
        return next((c for c in self.checks if c.name == name), None)

    def summary(self) -> str:
        """One line per failed check (empty string when ok) -- used by GradcheckError's message."""
        return "\n".join(f"{c.name}: {c.message}" for c in self.failures)

    def raise_if_failed(self) -> "CheckReport":
        if not self.ok:
            raise GradcheckError(self)
        return self

    def to_dict(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "function": self.function,
            "backend": self.backend,
            "status": self.status,
            "mode": self.mode,
            "requested_mode": self.requested_mode,
            "method": self.method,
            "seed": int(self.seed),
            "dtypes": list(self.dtypes),
            "numeric_dtype": self.numeric_dtype,
            "tolerances": json_safe(self.tolerances),
            "cotangent_kinds": list(self.cotangent_kinds),
            "escalated": bool(self.escalated),
            "inputs": [r.to_dict() for r in self.inputs],
            "checks": [c.to_dict() for c in self.checks],
            "diagnosis": [f.to_dict() for f in self.diagnosis],
            "compatibility": dict(self.compatibility),
            "timing": json_safe(self.timing),
        }


class GradcheckError(AssertionError):
    """Raised by ``CheckReport.raise_if_failed``; carries the report for programmatic inspection."""

    def __init__(self, report: CheckReport):
        self.report = report
        super().__init__(f"gradcheck failed for {report.function}:\n{report.summary()}")


def json_safe(value):
    """Recursively convert numpy scalars/arrays and non-finite floats into JSON-safe values."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):  # includes numpy.float64, a float subclass
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return float(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    # numpy scalars and arrays (checked by duck typing: this module never imports numpy eagerly)
    if hasattr(value, "tolist"):
        return json_safe(value.tolist())
    if hasattr(value, "item"):
        return json_safe(value.item())
    if isinstance(value, complex):
        return {"real": json_safe(value.real), "imag": json_safe(value.imag)}
    return str(value)
