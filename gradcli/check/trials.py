"""Running a candidate input set before it is taken (``auto_inputs.Builder``): does backward run on it,
and can a numeric check there finish within ``--timeout``?
"""
from __future__ import annotations

import re
import shlex
import time
from typing import Optional

from gradcli.check.inputs import Case, forward_problem


# of --timeout: the CPU seconds forward may take over a check's numeric derivatives at automatic inputs. A
# whole check costs about 4-5x that in CPU (structure, second tries, diagnosis: measured on a solver-bound
# forward, 5.4 s estimated, 25 s spent), and at a load of 4 on 2 CPUs wall time runs about 2x CPU time:
# 1/16 keeps such a check inside --timeout there
SLOW_SHARE = 0.0625
SLOW_CALL = 0.01  # CPU seconds: a forward faster than this a call is never the slow part of a check
TIMED_CALLS = 2  # forward is timed this many times (the least counts: a stray slow call is no trend)


def cpu_seconds() -> float:
    """This process's CPU time (all its threads): unlike wall time, it does not grow with the machine's load."""
    return time.process_time()


def check_cost(be, target, case: Case) -> Optional[tuple]:
    """(forward's CPU seconds a call at ``case``, the evaluations a full check makes there:
    budget.POINTS_PER_ELEMENT per differentiable element), or None when no bound applies (no --timeout,
    nothing to perturb, or so many elements that fast mode makes a few evaluations only)."""
    from gradcli.check.budget import AUTO_FULL_ELEMENTS, POINTS_PER_ELEMENT

    timeout = getattr(target, "timeout", None)
    elements = sum(int(be.to_numpy(a).size) for a in case.args if be.is_tensor(a) and a.requires_grad)
    if not timeout or not elements or elements > AUTO_FULL_ELEMENTS:
        return None
    times = []
    for _ in range(TIMED_CALLS):
        started = cpu_seconds()
        forward_problem(be, target.fn, case.args)
        times.append(cpu_seconds() - started)
    return min(times), POINTS_PER_ELEMENT * elements


def too_slow(be, target, case: Case) -> Optional[str]:
    """Why a numeric check at the automatic inputs ``case`` cannot finish within ``--timeout``, or None:
    forward's CPU time at them (at least SLOW_CALL a call) × the evaluations a full check makes is more
    than SLOW_SHARE of it (a forward running an iterative solver to its iteration limit is the case). CPU time, not wall time, so
    that the answer is the same on a busy machine as on an idle one."""
    cost = check_cost(be, target, case)
    if cost is None:
        return None
    seconds, calls = cost
    timeout = target.timeout
    if seconds < SLOW_CALL or seconds * calls <= SLOW_SHARE * timeout:
        return None
    return (f"forward takes {seconds:.2g} s of CPU a call at the inputs gradcli built ({auto_specs(case)}): a "
            f"numeric check there needs about {calls} calls (~{seconds * calls:.2g} s)")


def slow_advice(message: str, smaller: Optional[str], timeout: float) -> str:
    """The skip for a slow forward; ``smaller``: the same words at the smaller inputs tried after it, if any."""
    tried = f"; {smaller.replace('forward takes', 'and', 1)}" if smaller else ""
    return (f"{message}{tried}: more than {SLOW_SHARE:g} of --timeout {timeout:g} s, which leaves room for the rest "
            f"of the check: not checked. Raise --timeout, or give smaller inputs with --input NAME=SPEC")


def auto_specs(case: Case) -> str:
    return " ".join("--input " + shlex.quote(f"{r['name']}={r['spec']}") for r in case.records
                    if r and r.get("source") == "auto")


def backward_runs(be, fn, args, times: int = 1, raised: Optional[list] = None) -> tuple:
    """(whether backward runs for ones as cotangents on fresh leaves, the exception's line if not); with
    ``raised`` (a list) gets the exception; with ``times`` 2, twice on the same forward, as a check's products do (a Function counting its backward passes
    refuses the second: ``more than 1 times! Try raising `num_bwd_passes```)."""
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
            for _ in range(times if outs else 0):
                be.grad(outs, inputs, [np.ones(be.to_numpy(o).shape) for o in outs])
    except Exception as e:  # noqa: BLE001 -- the question is only whether it runs
        if raised is not None:
            raised.append(e)  # its traceback: an assert naming a package's set-up (initializers.py)
        # gradients of the wrong shape or number: backward ran, and the structure check says what is wrong
        text = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return bool(_GRADIENT_STRUCTURE.search(str(e))), f"{type(e).__name__}: {text}"
    return True, ""


_GRADIENT_STRUCTURE = re.compile(r"returned an (?:invalid gradient|incorrect number of gradients)", re.I)
