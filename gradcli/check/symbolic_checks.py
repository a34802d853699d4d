"""The exact reference and the proofs of ``gradcli check`` (issue 6; specs/check.md §3).

Both run in the checker process, after gradcheck, and call the symbolic API (specs/symbolic.md):

* ``add_exact``: ``attach_exact`` on the CheckReport -- a check named ``exact`` and
  ``InputResult.exact_error`` (the "exact err" column). Engine Functions get the traced forward as
  the reference, by default only up to ``EXACT_AUTO_ELEMENTS`` input elements (tracing and SymPy's
  derivatives cost ~10-100 ms per element on a loaded 2-core machine); ``--exact`` lifts that to the
  tracer's own limit. A formula (``--expr`` or a ``formula`` class attribute) is the reference for
  any Function, torch ones too. The check shares the Function's ``--timeout``: what is left of it
  when gradcheck is done bounds the exact check (SIGALRM in the checker, which is a throwaway
  process); running out skips the check and keeps the numeric verdict.
* ``prove_function``: ``prove`` per Function, with its own ``--prove-timeout`` budget (``prove``
  forks and kills its own child), on the inputs the check used when they were given
  (``--input`` / ``example_inputs``: their shapes matter) and on symbols of ``--prove-shape``
  otherwise. Results are ``ProofResult.to_dict()`` plus ``input_set`` (index into the result's
  input sets, ``None`` for the ``--prove-shape`` symbols) -- plain data, so the parent process
  never imports SymPy to read them.

Nothing here raises for the user's sake: a failure of the symbolic layer is a skipped check or an
``undecided`` proof, never an error result.
"""
from __future__ import annotations

import functools
import math
import time
from typing import Callable, Optional

from gradcli.check.report import Check

EXACT_AUTO_ELEMENTS = 64  # default-on limit for a traced reference (differentiable input elements)
PROVE_SLACK = 2.0  # seconds beyond --prove-timeout for prove's fork, the float64 confirmation, transfer
MIN_PROVE_SECONDS = 0.1  # a later input set still gets this when the budget is spent (-> "undecided")


class _OutOfTime(BaseException):
    """Raised by SIGALRM inside the exact check (BaseException: SymPy's ``except Exception`` lets it by)."""


def exact_wanted(options) -> bool:
    return options.exact != "off" or bool(options.expr)


def _formula(target, options):
    return options.expr or getattr(target.cls, "formula", None)


def _skip(report, reason: str, why: str) -> Check:
    """A skipped exact check; ``details["reason"]``: torch (no formula), elements (over the default
    budget), time (--timeout ran out), error (the symbolic layer broke)."""
    check = Check("exact", "skip", f"no exact reference: {reason}", None, {"source": None, "reason": why})
    report.checks.append(check)
    return check


def add_exact(report, target, args, options, seconds: Optional[float]) -> Optional[Check]:
    """Append the ``exact`` check to ``report`` (and fill ``exact_error``) when it is wanted.

    ``seconds``: time left for it (None: unbounded). ``--rtol``/``--atol``, when given, are its
    tolerances too (its atol scales with the input's largest exact value). Never raises."""
    if not exact_wanted(options):
        return None
    formula = _formula(target, options)
    if formula is None:
        if target.backend == "torch" and options.exact != "on":
            # by default not: the engine twin needs SymPy in the torch worker, after torch's own import
            return _skip(report, "a torch Function: --exact runs its file with gradcli as torch and traces that "
                                 "forward, or give the forward as a formula (--expr FORMULA, or a `formula` string "
                                 "attribute on the class) for an exact reference", "torch")
        elements = sum(math.prod(r.shape) for r in report.inputs)
        if options.exact == "auto" and elements > EXACT_AUTO_ELEMENTS:
            return _skip(report, f"{elements} input elements: the traced reference is computed by default up to "
                                 f"{EXACT_AUTO_ELEMENTS} (--exact computes it up to 1024; a formula scales further)",
                         "elements")
    before = len(report.checks)
    try:
        from gradcli.check.exact import attach_exact

        loose = {k: options.gradcheck[k] for k in ("rtol", "atol") if options.gradcheck.get(k) is not None}
        return _within(seconds, lambda: attach_exact(report, target.fn, list(args), expr=options.expr, **loose))
    except _OutOfTime:
        del report.checks[before:]
        for r in report.inputs:
            r.exact_error = None
        return _skip(report, f"the time left of --timeout ({seconds:.2g} s) ran out while computing it; "
                             "the numeric verdict stands", "time")
    except Exception as e:  # noqa: BLE001 -- attach_exact never raises; an import problem must not either
        del report.checks[before:]
        return _skip(report, f"the symbolic layer failed ({type(e).__name__}: {e})", "error")


def _within(seconds: Optional[float], work: Callable):
    """``work()``, interrupted by _OutOfTime after ``seconds`` of this process's CPU time, or after
    WALL_FACTOR times that in wall time (check_clock's rule: a loaded machine does not cut the exact
    check short, a wait cannot outlast the cap), when interval timers can be used here."""
    import signal
    import threading

    from .check_clock import WALL_FACTOR

    if seconds is None or not hasattr(signal, "setitimer") \
            or threading.current_thread() is not threading.main_thread():
        return work()
    if seconds <= 0:
        raise _OutOfTime

    def ring(signum, frame):
        raise _OutOfTime

    previous = {sig: signal.signal(sig, ring) for sig in (signal.SIGPROF, signal.SIGALRM)}
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, seconds * WALL_FACTOR)
    try:
        return work()
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# ----- proofs ----------------------------------------------------------------------------------------

def prove_function(target, cases: Optional[list], options, extend: Callable = lambda seconds: None) -> list:
    """Proof records (``ProofResult.to_dict()`` + ``input_set``) for one Function.

    ``cases``: the input sets gradcheck used (None when none could be built). Inputs given with
    ``--input`` or ``example_inputs``, and input sets with automatic inputs shaped like their
    gradients (a per-feature ``[4]``, inputs.py), are proved at their own shapes, one proof per
    input set; other automatic inputs (or none) give one proof on symbols of ``--prove-shape``.
    A torch Function is proved on its engine twin (torch_twin.py). ``extend(seconds)`` tells the
    process that times this checker how much longer it may take."""
    given = [(i, case.args) for i, case in enumerate(cases or [])
             if any(rec.get("source") in ("cli", "example") or rec.get("shape_from") or rec.get("number")
                    for rec in case.records)]
    runs = given or [(None, None)]
    budget = float(options.prove_timeout)
    extend(budget + PROVE_SLACK)
    start = time.monotonic()
    out = []
    try:
        from gradcli.symbolic.prove import prove
    except Exception as e:  # noqa: BLE001
        return [_failed(target, f"the prover could not be loaded ({type(e).__name__}: {e})")]
    fn, twin_note = target.fn, None
    if target.backend == "torch":  # prove the engine twin: the same source, run with gradcli as torch
        from gradcli.symbolic.torch_twin import NoTwin, engine_twin, to_engine
        try:
            fn = engine_twin(target.cls)
            twin_note = ("on the engine twin: the file run with gradcli as torch (its backward is the same code; "
                         "gradcli's ops compute what torch's do, per the ops table)")
            runs = [(i, None if ex is None else [to_engine(a) for a in ex]) for i, ex in runs]
        except NoTwin as e:
            return [dict(_failed(target, f"not traceable: a torch Function whose file does not run with gradcli as "
                                         f"torch ({e})"), verdict="not_traceable")]
    for input_set, example in runs:
        left = max(MIN_PROVE_SECONDS, budget - (time.monotonic() - start))
        try:
            found = prove(fn, shape=tuple(options.prove_shape), timeout=left,
                          example_inputs=tuple(example) if example is not None else None, seed=options.seed)
        except Exception as e:  # noqa: BLE001 -- prove never raises; still, no proof is no error
            out.append(dict(_failed(target, f"the prover failed ({type(e).__name__}: {e})"), input_set=input_set))
            continue
        for p in found:
            if twin_note and p.verdict in ("proved", "disproved"):
                p.notes.append(twin_note)
        out += [dict(p.to_dict(), input_set=input_set) for p in found]
    return out


def _failed(target, message: str) -> dict:
    return {"function": target.name, "input": "", "index": -1, "verdict": "undecided",
            "message": message + "; the numeric verdict stands", "shape": [], "assumptions": {},
            "counterexample": None, "points_checked": 0, "uniform": None, "notes": [], "seconds": 0.0,
            "input_set": None}


def apply_proofs(res) -> None:
    """A ``disproved`` verdict makes a passing (or skipped) result, and the input set it concerns,
    a failure; the other verdicts leave the numeric verdict standing."""
    disproved = [p for p in res.proofs or () if p["verdict"] == "disproved"]
    if not disproved or res.status not in ("pass", "skip"):
        return
    for i, case in enumerate(res.cases):
        mine = [p for p in disproved if p["input_set"] in (i, None)]
        if mine and case.status in ("pass", "skip"):
            case.status, case.message = "fail", f"proof: {mine[0]['message']}"
    first = disproved[0]
    several = first["input_set"] is not None and len(res.cases) > 1
    res.status = "fail"
    res.message = (f"input set {first['input_set'] + 1} of {len(res.cases)}: " if several else "") + \
        f"proof: {first['message']}"


# ----- warming up before the checkers fork ----------------------------------------------------------

@functools.lru_cache(maxsize=None)  # once per process: what it loads stays loaded
def warm_up():
    """Run the exact check once on a tiny Function, in the process the checkers fork from.

    SymPy imports modules on first use (``Add`` pulls in sympy.tensor and sympy.combinatorics,
    ``lambdify`` its printers) and fills caches; done here, every forked checker inherits the
    result instead of paying ~0.1 s for it again. Never raises: it is only an optimisation."""
    try:
        import numpy as np

        from gradcli import tensor
        from gradcli.autograd import Function
        from gradcli.check.exact import exact_check

        class _Warm(Function):  # exp, log, tanh, powers, a quotient, a kink, a reduction
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return ((x * x).exp() + x.log() + x.tanh() + x.abs() + 1 / x).sum()

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * (2 * x * (x * x).exp() + 1 / x + 1 - x.tanh() ** 2 + x.sign() - 1 / (x * x))

        return exact_check(_Warm, [tensor(np.array([0.5, 1.5]), requires_grad=True)]).status
    except Exception:  # noqa: BLE001
        pass
