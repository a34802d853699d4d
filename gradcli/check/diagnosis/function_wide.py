"""Function-wide findings, tried before any per-input pattern: ``inplace`` (an input, or a tensor
saved for backward, modified in place) and ``nondeterministic`` (two backward passes or two
forward calls differ). Either makes the gradient values meaningless, so no value pattern is
tried after them. ``diag`` is the driver's ``_Diagnosis`` (report, probe, names).
"""
from __future__ import annotations

import numpy as np

from gradcli.check.diagnosis.probe import ProbeError
from gradcli.check.diagnosis.saved import ctx_attributes_changed, saved_changed_after_saving
from gradcli.check.report import Finding


def function_wide(diag) -> list:
    report, probe = diag.report, diag.probe
    inplace = report.check("inplace")
    if inplace is not None and inplace.status == "fail":
        # gradcheck's message already names the tensor and the fix
        return [Finding("inplace", f"in-place modification: {inplace.message}",
                        params={"source_check": "inplace"}, confidence=0.99)]
    reentrant = report.check("reentrant")
    if reentrant is not None and reentrant.status == "fail":
        return [Finding("nondeterministic", reentrant.message, params=dict(reentrant.details), confidence=0.95)]
    if probe is None:
        return []
    # What gradcheck already judged is not re-judged (its nondet_tol may be deliberately loose).
    mutated = []
    if inplace is None:
        try:
            mutated = probe.mutated_inputs()
        except Exception:
            mutated = []
    if mutated:
        names = ", ".join(diag.names.get(i, f"input{i}") for i in mutated)
        return [Finding("inplace", f"forward modifies input {names} in place",
                        params={"inputs": mutated}, confidence=0.95)]
    try:
        changed = saved_changed_after_saving(probe)
    except Exception:
        changed = []
    if changed:
        first = changed[0]
        return [Finding("inplace", f"{first['function']}.forward changes saved tensor {first['saved']} in place "
                        f"after save_for_backward (version {first['at_save']} → {first['at_return']}): backward "
                        "reads the changed values", params={"saved": changed, "after_save": True},
                        confidence=0.97)]
    try:
        kept = ctx_attributes_changed(probe, diag.cls)
    except Exception:  # an unusual forward: no evidence
        kept = []
    if kept:
        first = kept[0]
        return [Finding("inplace", f"{first['function']}.forward changes the tensor it keeps as ctx.{first['attribute']} "
                        f"in place after storing it (version {first['at_save']} → {first['at_return']}): backward "
                        "reads the changed values", params={"ctx_attributes": kept, "after_save": True},
                        confidence=0.95)]
    return nondeterminism(diag, check_backward=reentrant is None)

def nondeterminism(diag, check_backward: bool) -> list:
    probe = diag.probe
    rows = diag._own_cotangents()[1]
    try:
        first = probe.vjp(rows[-1])
        second = probe.vjp(rows[-1]) if check_backward else first
    except ProbeError as err:
        diag.vjp_error = err
        if err.inplace:
            return [Finding("inplace", f"a tensor saved for backward was modified in place: {err.exc}",
                            confidence=0.99)]
        return []
    except Exception:
        return []
    for i in probe.indices:
        a, b = first.get(i), second.get(i)
        if a is None or b is None:
            continue
        difference = float(np.max(np.abs(a - b))) if a.size else 0.0
        if difference > 64 * np.finfo(np.float64).eps * max(float(np.max(np.abs(a))) if a.size else 0, 1e-300):
            return [Finding("nondeterministic",
                            f"backward gives different gradients for input {diag.names[i]} on two identical "
                            f"passes (max difference {difference:.3g})",
                            params={"max_difference": difference, "input": i}, confidence=0.95)]
    try:
        out1, out2 = probe.forward(), probe.forward()
    except Exception:
        return []
    if any(not np.array_equal(a, b, equal_nan=True) for a, b in zip(out1, out2)):
        return [Finding("nondeterministic", "forward gives different outputs on two identical calls",
                        params={"forward": True}, confidence=0.9)]
    return []
