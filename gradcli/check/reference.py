"""Reference mode: a fast Function against its reference implementation, dtype by dtype.

For each low-precision dtype: the inputs are drawn at that dtype (the float64 inputs rounded to
it), the *golden* is the reference run in float64 on those rounded values upcast ("create low
precision first, then .double()"); the Function and the reference both run at the dtype, and
their outputs and input gradients -- for the same random cotangents, rounded to the dtype too --
are compared with the golden. A row passes when

    err(Function) <= k * err(reference) + floor,   floor = u(dtype) * max |golden|

(``u`` the dtype's unit roundoff, half its epsilon: what rounding the largest value once may cost)

(``k`` = ``error_ratio``, 2 by default: flash-attention's "at most twice the error of the
PyTorch implementation"). Results are plain dataclasses with ``to_dict()`` (specs/gradcheck.md
§ Reference mode); ``attach`` turns them into ``Check``s named ``reference`` on a CheckReport.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from gradcli.check.report import Check, CheckReport, Finding, InputResult, json_safe

DEFAULT_ERROR_RATIO = 2.0
WORST_SHOWN = 3  # worst elements kept per row


@dataclass
class WorstValue:
    """One element of a row: where, and the Function's, the reference's and the golden's values."""

    index: tuple
    function: float
    reference: float
    golden: float

    def to_dict(self) -> dict:
        return {"index": [int(i) for i in self.index], "function": json_safe(self.function),
                "reference": json_safe(self.reference), "golden": json_safe(self.golden)}


@dataclass
class ReferenceRow:
    """One output or one input's gradient at one dtype."""

    kind: str  # "output" | "gradient"
    name: str  # "out", "out[1]", or the input's name
    dtype: str
    status: str  # pass | fail | skip
    error: Optional[float] = None  # max |Function - golden|
    reference_error: Optional[float] = None  # max |reference at the dtype - golden|
    ratio: Optional[float] = None  # error / reference_error (inf when the reference is exact)
    allowed: Optional[float] = None  # k * reference_error + floor
    floor: Optional[float] = None
    worst: list = field(default_factory=list)  # WorstValue, largest |Function - golden| first
    message: str = ""
    # Not in JSON: the Function's and the golden's values (float64), for the diagnosis
    function_values: Any = field(default=None, repr=False, compare=False)
    golden_values: Any = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "dtype": self.dtype, "status": self.status,
                "error": json_safe(self.error), "reference_error": json_safe(self.reference_error),
                "ratio": json_safe(self.ratio), "allowed": json_safe(self.allowed), "floor": json_safe(self.floor),
                "worst": [w.to_dict() for w in self.worst], "message": self.message}


@dataclass
class DtypeResult:
    """Reference mode at one dtype: its rows, or why it was not checked."""

    dtype: str
    device: str = "cpu"
    rows: list = field(default_factory=list)  # ReferenceRow
    skipped: str = ""  # why this dtype was not checked ("" when it was)
    error: str = ""  # the Function or the reference raised at this dtype

    @property
    def status(self) -> str:
        if self.error or any(r.status == "fail" for r in self.rows):
            return "fail"
        if self.skipped or not self.rows or all(r.status == "skip" for r in self.rows):
            return "skip"
        return "pass"

    def message(self, error_ratio: float) -> str:
        if self.skipped:
            return f"{self.dtype}: not checked: {self.skipped}"
        if self.error:
            return f"{self.dtype}: {self.error}"
        bad = [r for r in self.rows if r.status == "fail"]
        if not bad:
            return f"{self.dtype}: every output and gradient within {error_ratio:g} x the reference's error + floor"
        parts = []
        for r in bad:
            what = f"{r.name} ({'output' if r.kind == 'output' else 'gradient'})"
            text = r.message or (f"err {r.error:.2e} > {error_ratio:g} x ref {r.reference_error:.2e} "
                                 f"+ floor {r.floor:.1e}")
            if r.worst:
                w = r.worst[0]
                text += (f"; worst {r.name}{list(w.index)}: Function {w.function:.6g}, reference {w.reference:.6g}, "
                         f"golden {w.golden:.6g}")
            parts.append(f"{what}: {text}")
        return f"{self.dtype}: " + "; ".join(parts)

    def to_dict(self) -> dict:
        return {"dtype": self.dtype, "device": self.device, "status": self.status, "skipped": self.skipped,
                "error": self.error, "rows": [r.to_dict() for r in self.rows]}


@dataclass
class ReferenceReport:
    """Reference mode for one input set: one DtypeResult per requested dtype."""

    reference: str  # what the reference is: "gelu_reference", "torch.nn.functional.gelu"
    error_ratio: float = DEFAULT_ERROR_RATIO
    device: str = "cpu"
    dtypes: list = field(default_factory=list)  # DtypeResult

    @property
    def status(self) -> str:
        statuses = [d.status for d in self.dtypes]
        return "fail" if "fail" in statuses else "pass" if "pass" in statuses else "skip"

    def to_dict(self) -> dict:
        return {"reference": self.reference, "error_ratio": json_safe(self.error_ratio), "device": self.device,
                "status": self.status, "dtypes": [d.to_dict() for d in self.dtypes]}


def reference_check(fn: Callable, inputs, reference: Callable, *, dtypes=("float32", "bfloat16", "float16"),
                    error_ratio: float = DEFAULT_ERROR_RATIO, device: str = "cpu", seed: int = 0,
                    names: Optional[list] = None, reference_name: str = "") -> ReferenceReport:
    """Compare ``fn`` with ``reference`` at each dtype (module docstring). ``inputs``: forward's
    arguments at float64 (or float32) on the CPU; floating tensors with requires_grad are
    differentiated (all floating tensors when none requires grad). The backend is the tensors'."""
    from gradcli.check.backends import detect
    from gradcli.check.dtype_grid import runner_for

    args = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    runner = runner_for(detect(fn, args).name, device)
    names = names or [f"input {i}" for i in range(len(args))]
    floating = [i for i, a in enumerate(args) if runner.is_floating(a)]
    diff = [i for i in floating if args[i].requires_grad] or floating
    report = ReferenceReport(reference_name or getattr(reference, "__qualname__", repr(reference)),
                             float(error_ratio), device)
    for dtype in dtypes:
        result = DtypeResult(dtype, device)
        result.skipped = runner.unavailable(dtype) or ""
        if not result.skipped:
            try:
                result.rows = _rows_at(fn, reference, args, floating, diff, names, dtype, runner, error_ratio, seed)
            except Exception as e:  # noqa: BLE001 -- user code raised at this dtype: a finding, not a crash
                result.error = f"raised {type(e).__name__}: {e}"
        report.dtypes.append(result)
    return report


def _rows_at(fn, reference, args, floating, diff, names, dtype, runner, k, seed) -> list:
    import numpy as np

    arrays = {i: runner.numpy64(args[i]) for i in floating}
    rounded = {i: runner.numpy64(runner.make(arrays[i], dtype, False)) for i in floating}

    def run(f, at: str, golden: bool):
        leaves = {i: runner.make(rounded[i], at, i in diff, golden) for i in floating}
        call = [leaves.get(i, a) for i, a in enumerate(args)]
        return leaves, _floating_outputs(runner, f(*call))

    leaves_f, outs_f = run(fn, dtype, False)
    rng = np.random.default_rng([seed, zlib.crc32(dtype.encode())])
    cot = [runner.numpy64(runner.make(rng.uniform(-1, 1, size=tuple(o.shape)), dtype, False)) for o in outs_f]
    results = []
    for f, at, golden, leaves_outs in ((fn, dtype, False, (leaves_f, outs_f)), (reference, dtype, False, None),
                                       (reference, "float64", True, None)):
        leaves, outs = leaves_outs or run(f, at, golden)
        if len(outs) != len(cot):
            raise ValueError(f"the reference returns {len(outs)} floating output(s), the Function {len(cot)}")
        grads = runner.grad(outs, [leaves[i] for i in diff],
                            [runner.make(c, at, False, golden) for c in cot]) if diff and outs else []
        results.append(([runner.numpy64(o) for o in outs],
                        [np.zeros_like(rounded[i]) if g is None else runner.numpy64(g) for i, g in zip(diff, grads)]))
    (outs_f, grads_f), (outs_r, grads_r), (outs_g, grads_g) = results
    rows = []
    for j, (a, r, g) in enumerate(zip(outs_f, outs_r, outs_g)):
        rows.append(compare("output", "out" if len(outs_g) == 1 else f"out[{j}]", dtype, a, r, g, k))
    for i, a, r, g in zip(diff, grads_f, grads_r, grads_g):
        rows.append(compare("gradient", names[i], dtype, a, r, g, k))
    return rows


def _floating_outputs(runner, out) -> list:
    from gradcli.check.backends import flatten_outputs

    return [o for o in flatten_outputs(out) if runner.is_floating(o)]


def compare(kind: str, name: str, dtype: str, function, reference, golden, k: float = DEFAULT_ERROR_RATIO,
            eps: Optional[float] = None) -> ReferenceRow:
    """One row: the Function's and the reference's errors against the golden (float64 arrays)."""
    import numpy as np

    from gradcli.check.dtype_grid import EPS

    function, reference, golden = (np.asarray(v, dtype=np.float64) for v in (function, reference, golden))
    row = ReferenceRow(kind, name, dtype, "pass")
    if function.shape != golden.shape:
        row.status, row.message = "fail", f"shape {list(function.shape)}, the golden's {list(golden.shape)}"
        return row
    if not np.isfinite(golden).all():
        row.status, row.message = "skip", "the float64 golden is not finite here: inputs outside the reference's domain"
        return row
    row.function_values, row.golden_values = function, golden
    diff_f, diff_r = np.abs(function - golden), np.abs(reference - golden)
    row.floor = (EPS[dtype] / 2 if eps is None else eps) * float(np.abs(golden).max(initial=0.0))
    row.worst = _worst(diff_f, function, reference, golden)
    if not np.isfinite(function).all():
        row.status, row.message = "fail", f"{int((~np.isfinite(function)).sum())} element(s) not finite (the golden is)"
        row.error = float("inf")
        return row
    row.error = float(diff_f.max(initial=0.0))
    if not np.isfinite(reference).all():
        row.status = "skip"
        row.message = f"the reference itself is not finite at {dtype}: no error to compare with"
        return row
    row.reference_error = float(diff_r.max(initial=0.0))
    exact = row.reference_error == 0
    row.ratio = (0.0 if row.error == 0 else float("inf")) if exact else row.error / row.reference_error
    row.allowed = k * row.reference_error + row.floor
    row.status = "pass" if row.error <= row.allowed else "fail"
    return row


def _worst(diff, function, reference, golden) -> list:
    import numpy as np

    flat = np.nan_to_num(diff, nan=np.inf).ravel()
    if flat.size == 0:
        return []
    order = np.argsort(-flat, kind="stable")[:WORST_SHOWN]
    out = []
    for pos in order:
        index = np.unravel_index(int(pos), diff.shape) if diff.shape else ()
        out.append(WorstValue(tuple(int(i) for i in index), float(function[index]), float(reference[index]),
                              float(golden[index])))
    return out


def checks_of(report: ReferenceReport, source: str = "attribute") -> list:
    """One ``Check`` named ``reference`` per dtype (details: DtypeResult.to_dict(), the reference,
    the ratio, and ``source``: "attribute" (the class's) or "option" (--reference))."""
    out = []
    for d in report.dtypes:
        details = dict(d.to_dict(), reference=report.reference, error_ratio=report.error_ratio, source=source)
        out.append(Check("reference", d.status, d.message(report.error_ratio), details=details))
    return out


def not_checked_of(report: ReferenceReport) -> list:
    """``Case.not_checked`` entries for the dtypes that were asked for and not checked."""
    return [{"input": d.dtype, "reason": f"reference mode at {d.dtype}: {d.skipped}", "partial": True}
            for d in report.dtypes if d.skipped]


def diagnose(report: ReferenceReport) -> list:
    """The diagnosis's findings on (Function - golden) for the failing gradients at each dtype,
    where its patterns apply (a factor, a sign, a transpose ...): a precision loss fits none, and
    "no simple pattern" is not repeated here. Messages start with the dtype."""
    import numpy as np

    from gradcli.check.diagnosis import NO_PATTERN, diagnose as diagnose_report

    findings = []
    for d in report.dtypes:
        rows = [r for r in d.rows if r.kind == "gradient" and r.status == "fail" and r.function_values is not None
                and np.isfinite(r.function_values).all()]
        if not rows:
            continue
        synthetic = CheckReport(function="", cotangent_kinds=["random"], checks=[Check("values", "fail")])
        for k, r in enumerate(rows):
            shape = tuple(r.golden_values.shape)
            synthetic.inputs.append(InputResult(r.name, k, shape, d.dtype, "fail", max_abs_error=r.error,
                                                tolerance=r.allowed, analytic=r.function_values[None],
                                                numeric=r.golden_values[None], numeric_error=np.zeros((1,) + shape)))
        try:
            found = diagnose_report(synthetic)
        except Exception:  # noqa: BLE001 -- a diagnosis is a courtesy, never a crash
            continue
        for f in found:
            if f.kind != NO_PATTERN:
                findings.append(Finding(f.kind, f"at {d.dtype}: {f.message}", f.hint, None, f.params, f.confidence))
    return findings
