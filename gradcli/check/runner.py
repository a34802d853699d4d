"""Running ``gradcli check``: one isolated process per file and per Function, and the run's results.

Process layout (POSIX): the parent never imports user code. A forked *worker*, in its own process
group, imports a file, collects and selects its Functions, then forks one *checker* per Function
(a file's only Function is checked by the worker itself) and kills it after ``timeout`` seconds;
each file has its own worker, forked from the warmed parent (warm_parent.py). Results travel back
as pickled frames over pipes. An exception, ``sys.exit``, ``os._exit``, a crash or a hang in user
code becomes an error result for that Function (or file) and the run goes on; Ctrl-C in the parent
kills the workers' process groups and returns what finished.
Without ``os.fork`` everything runs in-process, without timeouts.

This module holds the per-Function check (the dataclasses are in ``results.py``); a file's messages
and their collection into a RunResult are in ``collector.py``, the run over files in ``session.py``;
the process machinery is in ``processes.py`` (workers, checkers), ``channels.py`` (pipes, frames,
forks) and ``scheduler.py`` (the parent's loop).

Data flows one way: inputs -> gradcheck -> these dataclasses (``to_dict()``) -> renderers.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Callable, Optional

from gradcli.check.discovery import describe_exception, user_traceback
from gradcli.check.results import BAD, CaseResult, FunctionResult, RunOptions, RunResult  # noqa: F401 (re-exported)


GRADCHECK_OPTIONS = ("mode", "method", "atol", "rtol", "eps", "seed", "second_order", "repeat", "layouts",
                     "nondet_tol")  # known to be taken


def unsupported_options(gradcheck_options: dict) -> list:
    """Option names that this ``gradcli.gradcheck`` does not take (a usage error for the CLI).
    Imports gradcheck only for an option outside GRADCHECK_OPTIONS (start-up stays light)."""
    unknown = [name for name in gradcheck_options if name not in GRADCHECK_OPTIONS]
    if not unknown:
        return []
    import inspect

    import gradcli

    accepted = inspect.signature(gradcli.gradcheck).parameters
    return [name for name in unknown if name not in accepted]


# ----- checking one Function (in the checker process) ---------------------------------------------

def check_target(target, options: RunOptions, announce: Callable = lambda records: None,
                 extend: Callable = lambda seconds: None) -> FunctionResult:
    """Build the inputs, run gradcheck (and the exact check) for each input set, prove the backward
    with ``options.prove``, and turn everything into a result. ``announce(records)`` gets the
    inputs once built; ``extend(seconds)`` is told before a symbolic phase with its own budget."""
    import warnings

    import numpy as np

    from gradcli.check.inputs import ForwardBroken, NoInputs, backend_for, build_cases
    from gradcli.check import budget

    start = time.perf_counter()
    # the exact check gets what gradcheck leaves of --timeout, less a margin to hand the result over; counted
    # as the check is timed (check_clock.py: CPU time): what is checked does not depend on the machine's load.
    # The margin is a quarter (at most 2 s): SymPy delays the timer's signal by up to ~0.3 s of CPU (a
    # collection of the traced trees runs in C), and the watchdog must not stop the check first
    deadline = _deadline(options.timeout - min(2.0, 0.25 * options.timeout))
    res = FunctionResult(target.file, target.name, target.backend, "pass", line=target.line,
                         backward_line=target.backward_line, style=target.style, backward_file=target.backward_file)
    if target.style == "legacy":
        from gradcli.autograd.function import _legacy_hint

        res.hint = _legacy_hint(target.cls)
    abspath = os.path.realpath(sys.modules[target.cls.__module__].__file__)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = None
        try:
            budget.refuse_before_drawing(target, options)  # TooLarge: estimated before allocating anything
            target.timeout = options.timeout  # automatic inputs too slow to check in it are a skip (trials.too_slow)
            cases = build_cases(target, options.specs, seed=options.seed, dtype=options.dtype, shape=options.shape)
            announce([c.records for c in cases])
            be = backend_for(target.backend)
            for k, case in enumerate(cases):
                # full mode may spend about half of each remaining input set's share of --timeout
                share = deadline() / (len(cases) - k)
                out = _check_case(target, case, be, options, abspath, deadline, time_budget=0.5 * max(share, 0.0))
                retried = _in_backward_shapes(target, case, out, be, options, abspath, deadline)
                if retried is not None:
                    cases[k], out = retried
                    announce([c.records for c in cases])
                res.cases.append(out)
        except budget.TooLarge as e:
            res.status, res.message = "skip", str(e)
        except NoInputs as e:
            res.status, res.message = "skip", str(e)
            _broken_forward(target, options, abspath, res)
        except ForwardBroken as e:
            res.status, res.message = "error", str(e)
        except (Exception, SystemExit) as e:
            res.status = "error"
            res.message, line = describe_exception(e, abspath)
            res.line = line or res.line
            res.traceback = _traceback(e, options.debug)
    if res.cases and res.status == "pass":
        statuses = [c.status for c in res.cases]
        res.status = next((s for s in ("error", "fail") if s in statuses),
                          "skip" if all(s == "skip" for s in statuses) else "pass")
        bad = [(i, c) for i, c in enumerate(res.cases) if c.status == res.status and c.message]
        if bad:
            i, case = bad[0]
            res.message = (f"input set {i + 1} of {len(res.cases)}: " if len(res.cases) > 1 else "") + case.message
    if res.status == "error" and any(c.report is not None for c in res.cases if c.status == "error"):
        raised = [raising_line(c.report.check("backward"), abspath) for c in res.cases
                  if c.status == "error" and c.report is not None]
        if any(raised):  # the backward raised: the raising line (the innermost frame in this file)
            res.line = next(line for line in raised if line)
        elif not res.backward_file:  # gradcheck ran: the exception came from backward (in this file)
            res.line = res.backward_line or res.line
    _declared_surrogate(target, res)
    if options.prove and res.status not in ("error", "surrogate"):  # a surrogate is no derivative to prove
        from gradcli.check.symbolic_checks import apply_proofs, prove_function

        res.proofs = prove_function(target, cases, options, extend)
        apply_proofs(res)
    from gradcli.check.coverage import not_checked, summary

    res.not_checked = not_checked(res.cases)
    if res.partial:
        res.message = "not checked: " + summary([e for e in res.not_checked if e["partial"]])
    elif res.status == "pass" and res.hint:
        res.message = "legacy instance-style Function: migrate to @staticmethod forward(ctx, ...)/backward(ctx, ...)"
    res.duration = time.perf_counter() - start
    return res


def _deadline(seconds: float) -> Callable[[], float]:
    """The check time (check_clock.Stopwatch) left of ``seconds``, whenever asked."""
    from gradcli.check.check_clock import Stopwatch

    watch = Stopwatch()
    return lambda: seconds - watch.elapsed()


def raising_line(check, abspath: str) -> Optional[int]:
    """The line of ``abspath`` where a failed ``backward`` check's exception was raised (innermost frame)."""
    if check is None or check.status != "fail":
        return None
    lines = [line for file, line, _ in check.details.get("frames", ()) if os.path.realpath(file) == abspath]
    return lines[-1] if lines else None


def _broken_forward(target, options: RunOptions, abspath: str, res: FunctionResult):
    """A skip for want of inputs stands only if forward does not raise the same exception on every
    input set tried: then it is broken whatever the inputs (an error, at the raising line)."""
    from gradcli.check.broken_forward import always_raises
    from gradcli.check.inputs import forward_params

    if any(p.name in options.specs for p in forward_params(target)[0]) or hasattr(target.cls, "example_inputs"):
        return  # inputs were given: the skip names them
    try:
        raised = always_raises(target, options.shape, options.seed)
    except Exception:  # noqa: BLE001 -- the probe is a second opinion; the skip stands
        return
    if raised is None:
        return
    message, line = describe_exception(raised, abspath)
    res.status = "error"
    res.message = (f"forward raised {message} on every input set tried (float tensors of several shapes and "
                   f"domains, integer tensors, numbers): it fails whatever the inputs (a bug in forward, or "
                   f"something it needs that is missing), so it is an error, not a skip")
    res.line = line or res.line
    res.traceback = _traceback(raised, options.debug)


def _declared_surrogate(target, res: FunctionResult):
    """A declared surrogate whose input sets failed only on their values: status ``surrogate``
    with the measured mismatch (a surrogate whose backward is right anyway stays a pass)."""
    from gradcli.check import surrogates

    if res.status != "fail" or not res.cases or not surrogates.declared(target.cls):
        return
    failed = [c for c in res.cases if c.status == "fail"]
    if not all(c.report is not None and surrogates.waivable(c.report) for c in failed):
        return
    for c in failed:
        c.status = "surrogate"
    res.surrogate = surrogates.mismatch(res.cases)
    res.status, res.message = "surrogate", surrogates.message(res.surrogate)


def _check_case(target, case, be, options: RunOptions, abspath: str, deadline: Optional[Callable] = None,
                time_budget: Optional[float] = None) -> CaseResult:
    from gradcli import gradcheck
    from gradcli.check.budget import refusal_for_case
    from gradcli.check.inputs import forward_problem

    out = CaseResult(case.records, not_checked=list(getattr(case, "not_checked", None) or ()))
    try:
        too_large = refusal_for_case(be, case.args, options)  # the inputs as built (example_inputs too)
        if too_large is not None:
            out.status, out.message = "skip", too_large
            return out
        why, _ = forward_problem(be, target.fn, case.args)
        if why is not None:
            out.status = "error"
            out.message = f"{why} at the given inputs: not checked; choose inputs inside forward's domain"
            return out
        gradcheck_options = dict(options.gradcheck)
        if time_budget is not None:
            gradcheck_options.setdefault("time_budget", time_budget)
        report = gradcheck(target.fn, case.args, **gradcheck_options)
    except (Exception, SystemExit) as e:
        from gradcli.check.reference_mode import only_reference

        report = only_reference(target, case, out, options, e) if isinstance(e, Exception) else None
        if report is not None:  # a low-precision-only kernel: reference mode gives the verdict
            out.report, out.status = report, report.status
            out.message = next((f"{c.name}: {c.message}" for c in report.failures), "")
            if report.check("backward") is not None:  # user code raised in reference mode
                out.status = "error"
            return out
        out.status = "error"
        out.message = describe_exception(e, abspath)[0]
        out.traceback = _traceback(e, options.debug)
        return out
    out.report, out.status = report, report.status
    raised = report.check("backward")
    if raised is not None and raised.status == "fail":  # an exception in user code: error, not a verdict
        out.status, out.message = "error", raised.message
        line = raising_line(raised, abspath)
        if line:
            out.message += f" ({target.file}:{line})"
        out.traceback = raised.details.get("traceback", "")
        return out
    if not report.ok and not report.diagnosis:
        from gradcli.check.symmetric_parts import convention_only

        if not convention_only(report):
            report.diagnosis = _diagnose(report, target.fn, case.args)
    if options.exact != "off" or options.expr:
        from gradcli.check.symbolic_checks import add_exact

        left = None if deadline is None else deadline()
        add_exact(report, target, case.args, options, left)
        out.status = report.status  # an exact check that fails fails the case
    if getattr(target, "custom_op", None) is not None:  # torch.library.custom_op: its registration tests too
        from gradcli.check.custom_ops import opcheck

        registration = opcheck(target.custom_op, case.args)
        if registration is not None:
            report.checks.append(registration)
            out.status = report.status
    if options.reference_dtypes:
        from gradcli.check.reference_mode import add_reference

        raised = add_reference(report, target, case, out, options)
        out.status = report.status
        if raised:  # the Function or its reference raised at a dtype: user code, an error
            out.status = "error"
            out.message = next(f"{c.name}: {c.message}" for c in report.failures)
            return out
    failed = report.failures
    if failed:
        out.message = f"{failed[0].name}: {failed[0].message}"
    elif out.status == "skip" and not out.message:  # nothing compared: say why the values checks skipped
        skipped = [c for c in report.checks if c.name == "values" and c.status == "skip"] or \
            [c for c in report.checks if c.status == "skip"]
        if skipped:
            out.message = f"{skipped[0].name}: {skipped[0].message}"
    return out


def _in_backward_shapes(target, case, out: CaseResult, be, options: RunOptions, abspath: str,
                        deadline: Optional[Callable]):
    """Automatic inputs are all ``--shape``; a per-feature parameter (a bias, LayerNorm's gamma) is
    then 3x4 and its correct ``[4]`` gradient fails ``structure``. When that is the only structural
    complaint about automatic inputs, check again with those inputs in the shapes their gradients
    have; keep the new run (Case, CaseResult) only if its structure is sound, else None."""
    from gradcli.check.inputs import reduced_shapes, reshape_auto

    structure = out.report.check("structure") if out.report is not None else None
    if structure is None or structure.status != "fail":
        return None
    shapes = reduced_shapes(case, structure.details.get("returned_shapes"))
    if not shapes:
        return None
    new_case = reshape_auto(target, case, shapes, seed=options.seed, dtype=options.dtype)
    if new_case is None:
        return None
    new_out = _check_case(target, new_case, be, options, abspath, deadline)
    new_structure = new_out.report.check("structure") if new_out.report is not None else None
    if new_structure is None or new_structure.status == "fail":
        return None
    return new_case, new_out


def _diagnose(report, fn, args) -> list:
    """The diagnosis layer's findings for a failed report; none when it is absent or breaks."""
    try:
        from gradcli.check.diagnosis import diagnose

        return list(diagnose(report, fn, tuple(args)))
    except Exception:  # noqa: BLE001 -- a diagnosis is a bonus: never turn a verdict into an error
        return []


def _traceback(e: BaseException, debug: bool) -> str:
    if debug:
        import traceback

        return "".join(traceback.format_exception(e))
    return user_traceback(e)
