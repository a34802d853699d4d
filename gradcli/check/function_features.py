"""What torch's gradcheck checks beyond the first-order values, and what it misses (issue 22):
the checks a session runs after its value check, and the report's compatibility line.

* ``jvp`` (forward_ad.py): only for a Function that defines jvp;
* ``vmap`` (vmap.py): torch only, a note when the Function is not usable with torch.func;
* ``ctx_attributes`` (ctx_lint.py): a warning; explains a failed double backward;
* ``layouts`` (layouts.py): non-contiguous and expanded inputs (``layouts=False`` skips it);
* ``repeat`` (repeat.py): the ``reentrant`` check over N passes with a suggested nondet_tol;
* ``undefined_grads``: the engine's and torch's materialize_grads semantics, and what was tried.

A check that gradcli itself cannot run becomes a ``skip`` naming why, never an exception.
"""
from __future__ import annotations

import time

from gradcli.check import compat as _compat
# Imported with gradcheck (which `gradcli check` loads before forking its checkers), not per checker.
from gradcli.check.ctx_lint import ctx_attributes_check, explain_second_order
from gradcli.check.forward_ad import jvp_check
from gradcli.check.layouts import layouts_check
from gradcli.check.repeat import repeat_check, suggested_nondet_tol
from gradcli.check.report import Check
from gradcli.check.vmap import vmap_check


def add_feature_checks(session, report, *, repeat=None, layouts=True) -> None:
    """Append the checks to ``report`` (the session's, after the second order) and set its
    compatibility line."""
    start = time.perf_counter()
    if getattr(session, "nf", None) is not None and report.cotangents:
        _run(session, report, repeat, layouts)
    report.compatibility = _compat.compatibility(report)
    report.timing["features_s"] = time.perf_counter() - start


def _guarded(name, make, *args):
    try:
        return make(*args)
    except Exception as exc:  # noqa: BLE001 -- gradcli's own limits: say what was not checked
        return Check(name, "skip", f"not checked: gradcli could not run it ({type(exc).__name__}: {exc})")


def _run(session, report, repeat, layouts):
    backward_ran = any(c.name == "values" and c.status != "skip" for c in report.checks) or any(
        r.status != "skip" for r in report.inputs)
    reentrant = report.check("reentrant")
    if repeat and repeat >= 2 and reentrant is not None and backward_ran:
        repeated = _guarded("reentrant", repeat_check, session, int(repeat))
        report.checks[report.checks.index(reentrant)] = repeated
    elif reentrant is not None and reentrant.status == "fail" and "max_difference" in reentrant.details:
        worst = reentrant.details["max_difference"]
        reentrant.details["suggested_nondet_tol"] = suggested_nondet_tol(worst)
        reentrant.message = (f"nondeterministic backward: {reentrant.message}; if that is expected, set nondet_tol = "
                             f"{suggested_nondet_tol(worst):.3g} (run --repeat N to measure the spread)")
    lint = _guarded("ctx_attributes", ctx_attributes_check, session)
    if lint is not None:
        report.checks.append(lint)
        second = report.check("second_order")
        if second is not None and lint.status == "warn":
            explain_second_order(second, lint)
    for name, make in (("jvp", jvp_check), ("vmap", vmap_check)):
        check = _guarded(name, make, session)
        if check is not None:
            report.checks.append(check)
    if layouts and backward_ran:
        check = _guarded("layouts", layouts_check, session)
        if check is not None:
            report.checks.append(check)
    elif not layouts:
        report.checks.append(Check("layouts", "skip", "not requested (layouts=False, --no-layouts)"))
    _undefined_semantics(report)


def _undefined_semantics(report):
    """Say in the undefined_grads check which materialize_grads behaviour was tried, on which engine."""
    check = report.check("undefined_grads")
    if check is None:
        return
    materialize = check.details.get("materialize_grads", True)
    outputs = check.details.get("outputs", [])
    tried = []
    if len(outputs) > 1:
        tried += [f"output {j}'s gradient undefined, the others random" for j in outputs]
    if not materialize:
        tried.append("every output's gradient undefined")
    engine = ("gradcli's engine: with materialize_grads (the default) an undefined output gradient reaches "
              "backward as zeros; after ctx.set_materialize_grads(False) as None")
    torch = ("torch: the same (zeros materialised, or None after set_materialize_grads(False)); torch's "
             "gradcheck tries it with check_undefined_grad (UndefinedGrad)")
    check.details["tried"] = tried
    check.details["semantics"] = {"gradcli": engine, "torch": torch,
                                  "backward_got": "zeros" if materialize else "None"}
