"""Running a candidate input set before it is taken (``auto_inputs.Builder``): does backward run on it,
and can a numeric check there finish within ``--timeout``?
"""
from __future__ import annotations

import re
import shlex
import time
from typing import Optional

from gradcli.check.inputs import Case, forward_problem


def too_slow(be, target, case: Case) -> Optional[str]:
    """Why a numeric check at the automatic inputs ``case`` cannot finish within ``--timeout`` (forward's
    time at them × the evaluations a full check makes: budget.POINTS_PER_ELEMENT per differentiable
    element), or None. A forward running an iterative solver to its iteration limit is the case."""
    from gradcli.check.budget import AUTO_FULL_ELEMENTS, POINTS_PER_ELEMENT

    timeout = getattr(target, "timeout", None)
    elements = sum(int(be.to_numpy(a).size) for a in case.args if be.is_tensor(a) and a.requires_grad)
    if not timeout or not elements or elements > AUTO_FULL_ELEMENTS:  # larger: fast mode, a few evaluations
        return None
    started = time.perf_counter()
    forward_problem(be, target.fn, case.args)
    seconds = time.perf_counter() - started
    calls = POINTS_PER_ELEMENT * elements
    if seconds * calls <= timeout:
        return None
    specs = " ".join("--input " + shlex.quote(f"{r['name']}={r['spec']}") for r in case.records
                     if r and r.get("source") == "auto")
    return (f"forward takes {seconds:.2g} s a call at the inputs gradcli built ({specs}): a numeric check there "
            f"needs about {calls} calls (~{seconds * calls:.0f} s), more than --timeout {timeout:g} s: not "
            f"checked. Raise --timeout, or give smaller inputs with --input NAME=SPEC")


def backward_runs(be, fn, args) -> tuple:
    """(whether backward runs for ones as cotangents on fresh leaves, the exception's line if not)."""
    import warnings

    import numpy as np

    from gradcli.check.backends import flatten_outputs

    leaves = [be.fresh_leaf(a) if be.is_tensor(a) and a.requires_grad else a for a in args]
    inputs = [a for a, b in zip(leaves, args) if be.is_tensor(b) and b.requires_grad]
    if not inputs:
        return True, ""
    try:
        with be.enable_grad(), np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outs = [o for o in flatten_outputs(fn(*leaves))
                    if be.is_tensor(o) and be.requires_grad(o) and be.is_floating(o)]
            if outs:
                be.grad(outs, inputs, [np.ones(be.to_numpy(o).shape) for o in outs])
    except Exception as e:  # noqa: BLE001 -- the question is only whether it runs
        # gradients of the wrong shape or number: backward ran, and the structure check says what is wrong
        text = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return bool(_GRADIENT_STRUCTURE.search(str(e))), f"{type(e).__name__}: {text}"
    return True, ""


_GRADIENT_STRUCTURE = re.compile(r"returned an (?:invalid gradient|incorrect number of gradients)", re.I)
