"""What a check did not exercise, per Function: the ``not checked:`` list of a result.

A PASS means it was exercised. Each input set may leave differentiable inputs or branches out:
the input builder says so in ``Case.not_checked`` (a None default no tensor could replace, a
guessed number), and the records and reports say more -- a parameter left at its None default, an
automatic Python number, a floating tensor that was not differentiated, an input whose numerical
derivative could not be computed. Merged over the Function's input sets (an input exercised in one
set is not "not checked" because another set left it out: Linear's ``bias=None`` set), they make
a passing result ``partial``. See specs/check.md, "Status rules".
"""
from __future__ import annotations

NUMBER = "a guessed number ({value}): forward refused tensors there, so no gradient for it was checked"
NONE_DEFAULT = "left at its default None: no other value was tried there (give one with --input {name}=SPEC)"
NOT_DIFFERENTIATED = "a floating-point tensor given without requires_grad: its gradient was not checked"


def not_checked(cases: list) -> list:
    """[{"input", "reason", "input_set", "partial"}] for a Function's CaseResults (in order)."""
    exercised = set()
    found = []
    for k, case in enumerate(cases):
        report = case.report
        if report is not None:
            exercised |= {r.name for r in report.inputs if r.status in ("pass", "fail")}
        for entry in _case_entries(case):
            entry["input_set"] = k if len(cases) > 1 else None
            found.append(entry)
    out, seen = [], set()
    for entry in found:
        key = (entry["input"], entry["input_set"])
        if entry["input"] in exercised or key in seen:
            continue
        seen.add(key)
        out.append(entry)
    return out


def _case_entries(case) -> list:
    entries = [{"input": e.get("input"), "reason": e.get("reason", ""), "partial": bool(e.get("partial", True))}
               for e in case.not_checked or ()]
    named = {e["input"] for e in entries}
    report = case.report
    differentiated = {r.name for r in report.inputs} if report is not None else set()
    for rec in case.inputs or ():
        name = rec.get("name") if rec is not None else None
        if rec is None or name in named:
            continue
        if rec.get("number"):
            entries.append({"input": name, "reason": NUMBER.format(value=rec.get("value")), "partial": True})
        elif rec.get("source") == "default" and rec.get("type") == "none":
            entries.append({"input": name, "reason": NONE_DEFAULT.format(name=name), "partial": True})
        elif (report is not None and rec.get("type") == "tensor" and str(rec.get("dtype", "")).startswith(
                ("float", "bfloat")) and not rec.get("requires_grad", True) and name not in differentiated):
            # the user's choice (a buffer, a mask): said, not a gap in what gradcli was asked to check
            entries.append({"input": name, "reason": NOT_DIFFERENTIATED, "partial": False})
    if report is not None and report.status != "skip":
        for r in report.inputs:
            if r.status == "skip" and report.mode == "full" and r.name not in named:
                entries.append({"input": r.name, "reason": r.message or "not compared", "partial": True})
    return entries


def summary(entries: list) -> str:
    """``bias: left at its default None ...; dim: a guessed number ...`` (what a partial pass names)."""
    return "; ".join(f"{e['input']}: {e['reason']}" for e in entries)
