"""The compatibility line: what a Function supports, in one place (backward, double backward, jvp,
vmap, undefined grads, layouts), read off the checks of a report. Plain data (``compatibility``),
merged over input sets (``merge``) and worded for the terminal (``line``). See specs/report.md."""
from __future__ import annotations

FEATURES = ("backward", "double_backward", "jvp", "vmap", "undefined_grads", "layouts")
LABELS = {"backward": "backward", "double_backward": "double backward", "jvp": "jvp", "vmap": "vmap",
          "undefined_grads": "undefined grads", "layouts": "layouts"}
FIRST_ORDER = ("structure", "backward", "values", "cotangents", "finite", "inplace", "backward_invoked", "reentrant")
# Words for states other than pass/fail (values of the compatibility dict)
WORDS = {"once_differentiable": "once_differentiable", "not_checked": "not checked", "not_defined": "—",
         "no_setup_context": "no setup_context", "n/a": "n/a", "skip": "not tried"}


def compatibility(report) -> dict:
    """{feature: "pass" | "fail" | "once_differentiable" | "not_checked" | "not_defined" |
    "no_setup_context" | "n/a" | "skip"} for one CheckReport."""
    checks = {}
    for c in report.checks:
        checks.setdefault(c.name, c)
    first = [checks[n] for n in FIRST_ORDER if n in checks]
    values = [c for c in report.checks if c.name == "values"]
    if any(c.status == "fail" for c in first) or any(r.status == "fail" for r in report.inputs):
        backward = "fail"
    elif not values or all(c.status == "skip" for c in values):
        backward = "skip"
    else:
        backward = "pass"
    second = checks.get("second_order")
    if second is None or second.status == "skip":
        double = "once_differentiable" if second is not None and "once_differentiable" in second.details \
            else "not_checked"
    else:
        double = "pass" if second.status == "pass" else "fail"
    jvp = checks.get("jvp")
    vmap = checks.get("vmap")
    if vmap is None:
        vmap_state = "n/a"  # the engine has no vmap; or no Function class
    elif vmap.status == "skip" and vmap.details.get("torch_func") is False:
        vmap_state = "no_setup_context"
    elif vmap.status == "skip" and vmap.details.get("vmap_rule", "") is None:
        vmap_state = "not_defined"
    else:
        vmap_state = _state(vmap)
    undefined = checks.get("undefined_grads")
    layouts = checks.get("layouts")
    return {"backward": backward, "double_backward": double, "jvp": "not_defined" if jvp is None else _state(jvp),
            "vmap": vmap_state, "undefined_grads": "n/a" if undefined is None else _state(undefined),
            "layouts": "n/a" if layouts is None else _state(layouts)}


def _state(check) -> str:
    return {"pass": "pass", "fail": "fail", "warn": "pass"}.get(check.status, "skip")


def merge(reports) -> dict:
    """The Function's line over its input sets: a feature that failed anywhere failed; else the first
    input set's state. Empty when no input set was checked."""
    lines = [r.compatibility for r in reports if r is not None and getattr(r, "compatibility", None)]
    if not lines:
        return {}
    merged = dict(lines[0])
    for line in lines[1:]:
        for key, value in line.items():
            if value == "fail" or (merged.get(key) not in ("fail", "pass") and value == "pass"):
                merged[key] = value
    return merged


def line(compat: dict, ascii_only: bool = False) -> str:
    """``backward ✓  double backward ✗  jvp —  vmap no setup_context  undefined grads n/a  layouts ✓``."""
    yes, no = ("ok", "FAIL") if ascii_only else ("✓", "✗")
    words = dict(WORDS, **({"not_defined": "-"} if ascii_only else {}))
    parts = []
    for key in FEATURES:
        if key in compat:
            state = compat[key]
            parts.append(f"{LABELS[key]} {yes if state == 'pass' else no if state == 'fail' else words.get(state, state)}")
    return "  ".join(parts)
