"""Assertions for test suites (pytest, unittest, plain ``assert``-style scripts).

``assert_gradcheck(fn, *inputs, **options)`` runs ``gradcli.gradcheck`` and raises an
``AssertionError`` whose message is the plain-text failure panel of ``gradcli check`` (which check
failed, the worst element with analytic vs numeric values, diagnosis findings, the inputs and how to
reproduce them). The contract is written down in specs/testing.md.

Nothing heavy is imported until the first call: importing ``gradcli.testing`` is cheap.
"""
from __future__ import annotations

import os
import sys
from typing import Optional

__all__ = ["assert_gradcheck", "GradcheckAssertionError"]

VALUE_THRESHOLD = 64  # tensors with more elements are summarised in the reproduction lines


class GradcheckAssertionError(AssertionError):
    """The failure panel as the message; the data behind it for tests that want to inspect it."""

    def __init__(self, message: str, result=None, reports=()):
        super().__init__(message)
        self.result = result  # gradcli.check.runner.FunctionResult
        self.reports = list(reports)  # the CheckReport of each input set


def assert_gradcheck(fn, *inputs, **options):
    """Check ``fn``'s backward; raise GradcheckAssertionError (an AssertionError) unless it passes.

    * ``assert_gradcheck(fn, x, y, **options)``: ``gradcli.gradcheck(fn, (x, y), **options)`` --
      ``fn`` is a Function class, ``MyFn.apply``, or any callable over gradcli or torch tensors.
      Returns the CheckReport.
    * ``assert_gradcheck(MyFn, **options)`` (a Function class, no inputs): inputs are built as
      ``gradcli check file.py::MyFn`` builds them (``example_inputs()``, defaults, automatic
      domains; ``seed``, ``dtype`` and ``shape`` options as on the command line; ``exact="auto"``
      adds the exact reference as ``gradcli check`` does by default), and every input set is
      checked. Returns the list of CheckReports, one per input set.

    A check that compares nothing (no floating-point input, or no inputs could be built) fails too:
    an assertion that cannot fail is worse than none.
    """
    __tracebackhide__ = True  # pytest: the failure points at the test's line, not at gradcli's
    if not inputs:
        from gradcli.check.backends import function_class

        cls = function_class(fn)
        if cls is None or not (fn is cls or getattr(fn, "__self__", None) is cls):
            raise TypeError("assert_gradcheck(fn) without inputs needs an autograd Function class (or its "
                            ".apply) so that gradcli can build the inputs; otherwise pass them: "
                            "assert_gradcheck(fn, x, y)")
        return _check_function(cls, options)
    return _check_call(fn, inputs, options)


# ----- explicit inputs -------------------------------------------------------------------------------

def _check_call(fn, inputs: tuple, options: dict):
    __tracebackhide__ = True
    from gradcli import gradcheck
    from gradcli.check.runner import CaseResult, FunctionResult

    report = gradcheck(fn, inputs, **options)
    status = _status(report)
    if status == "pass" or _declared_surrogate(fn, report):
        return report
    if status == "skip":
        reasons = "; ".join(c.message for c in report.checks if c.status == "skip" and c.name == "values")
        raise GradcheckAssertionError(f"gradcheck of {report.function} compared nothing: {reasons or 'skipped'}",
                                      reports=[report])
    records = _records(report, inputs)
    failed = report.failures
    message = f"{failed[0].name}: {failed[0].message}" if failed else ""
    file, line, backward_line = _location(fn)
    result = FunctionResult(file, report.function, report.backend, status, message,
                            cases=[CaseResult(records, status, message, report)], line=line,
                            backward_line=backward_line)
    from gradcli.report.panel_text import panel_text

    text = panel_text(result, report.seed, verbose=True, repro=_repro_lines(fn, report, inputs, records, options))
    raise GradcheckAssertionError(text, result, [report])


def _declared_surrogate(fn, report) -> bool:
    """A Function declared a surrogate (specs/check.md §3c) that failed only where a surrogate may."""
    from gradcli.check import surrogates
    from gradcli.check.backends import function_class

    cls = function_class(fn)
    return cls is not None and surrogates.declared(cls) and surrogates.waivable(report)


def _status(report) -> str:
    """As ``gradcli check`` decides it: an exception in backward is an error, not a verdict."""
    raised = report.check("backward")
    if raised is not None and raised.status == "fail":
        return "error"
    return report.status


def _records(report, inputs: tuple) -> list:
    from gradcli.check.inputs import _record, backend_for  # the JSON records `gradcli check` writes

    be = backend_for(report.backend)
    return [_record(be, name, value, source="given") for name, value in zip(_names(report, inputs), inputs)]


def _names(report, inputs: tuple) -> list:
    """gradcheck's names for the differentiable inputs; ``input{i}`` for the others."""
    known = {r.index: r.name for r in report.inputs}
    return [known.get(i, f"input{i}") for i in range(len(inputs))]


def _location(fn) -> tuple:
    """(file as displayed, line of the class or def, line of ``def backward``) for the panel's title:
    discovery's lines for a Function defined in a file, as ``gradcli check`` shows them."""
    import inspect

    from gradcli.check.backends import function_class

    cls = function_class(fn)
    if cls is not None:
        try:
            target = _target_for(cls)
            return target.file, target.line, target.backward_line
        except TypeError:
            pass
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is None:
        return getattr(fn, "__module__", None) or "<unknown>", None, None
    return _display(inspect.getsourcefile(code) or code.co_filename), code.co_firstlineno, None


def _display(path: str) -> str:
    if not path:
        return "<unknown>"
    rel = os.path.relpath(os.path.abspath(path))
    return path if rel.startswith("..") else rel


def _repro_lines(fn, report, inputs: tuple, records: list, options: dict) -> list:
    """Python that repeats the check: the call and every argument's value (exactly, when small)."""
    from gradcli.check.backends import function_class

    cls = function_class(fn)
    if cls is not None:
        callee = f"{cls.__name__}.apply"
    else:
        name = getattr(fn, "__name__", "") or ""
        callee = name if name.isidentifier() else "fn"  # a lambda's "<lambda>" is no name to call
    names = [r["name"] for r in records]
    args = "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"
    opts = dict(options, seed=report.seed)
    call = ", ".join([callee, args] + [f"{k}={v!r}" for k, v in opts.items()])
    from gradcli.check.inputs import backend_for

    be = backend_for(report.backend)
    lines = [f"reproduce: gradcli.gradcheck({call})"]
    lines += [f"  {name} = {_value_repr(be, value)}" for name, value in zip(names, inputs)]
    return lines


def _value_repr(be, value) -> str:
    """A Python expression for the argument: exact values (``repr`` of floats round-trips)."""
    if not be.is_tensor(value):
        return repr(value)
    module = "torch" if be.name == "torch" else "gradcli"
    array = be.to_numpy(value)
    dtype = str(array.dtype)
    if array.size > VALUE_THRESHOLD:
        return (f"{dtype}{list(array.shape)}: values not shown (more than {VALUE_THRESHOLD} elements); "
                f"seed or save the test's inputs to reproduce")
    grad = ", requires_grad=True" if getattr(value, "requires_grad", False) else ""
    return f"{module}.tensor({array.tolist()!r}, dtype={module}.{dtype}{grad})"


# ----- a Function class, inputs built by gradcli ----------------------------------------------------

def _check_function(cls, options: dict) -> list:
    __tracebackhide__ = True
    from gradcli.check.inputs import parse_shape
    from gradcli.check.runner import RunOptions, check_target, unsupported_options

    given = dict(options, seed=options.get("seed", 0))
    options = dict(options)  # seed, dtype, shape build the inputs as `gradcli check --seed/--dtype/--shape`
    seed = options.pop("seed", 0)  # ... and seed goes on to gradcheck, as on the command line
    dtype = options.pop("dtype", "float64")
    shape = options.pop("shape", (3, 4))
    exact = options.pop("exact", "off")  # the symbolic reference: "auto" is `gradcli check`'s default
    if isinstance(shape, str):
        shape = parse_shape(shape)
    unknown = unsupported_options(options)
    if unknown:
        raise TypeError(f"assert_gradcheck got option(s) gradcli.gradcheck does not take: {', '.join(unknown)}")
    target = _target_for(cls)
    run_options = RunOptions(gradcheck=dict(options, seed=seed), seed=seed, dtype=dtype, shape=tuple(shape),
                             exact=exact)
    result = check_target(target, run_options)
    reports = [c.report for c in result.cases if c.report is not None]
    if result.status in ("pass", "surrogate"):  # a partial pass too: its gaps are in result.not_checked
        return reports
    if result.status == "skip":
        raise GradcheckAssertionError(f"SKIP {cls.__name__} ({result.file}:{result.line}): {result.message}. "
                                      f"In a test, pass inputs: assert_gradcheck({cls.__name__}, ...)",
                                      result, reports)
    from gradcli.report.panel_text import panel_text

    repro = None
    if "<locals>" in cls.__qualname__:  # the command line cannot reach a class defined inside a function
        call = ", ".join([cls.__name__] + [f"{k}={v!r}" for k, v in given.items()])
        repro = [f"reproduce: gradcli.testing.assert_gradcheck({call})"]
    raise GradcheckAssertionError(panel_text(result, seed, verbose=True, repro=repro), result, reports)


def _target_for(cls):
    """discovery's Target for ``cls`` (its style, backend and lines), wherever the class is defined."""
    import types

    from gradcli.check.discovery import FileItem, collect

    path: Optional[str] = getattr(sys.modules.get(cls.__module__), "__file__", None)
    if not path:
        raise TypeError(f"{cls.__name__} is not defined in a file, so gradcli cannot locate it: pass its "
                        f"inputs, assert_gradcheck({cls.__name__}, x, ...)")
    # collect() takes the classes *defined in* a module; a namespace holding only this class (which
    # may be local to a test function) stands in for the module.
    namespace = types.SimpleNamespace(**{cls.__name__: cls})
    namespace.__name__ = cls.__module__
    targets = collect(namespace, FileItem(_display(path), os.path.realpath(path)))
    if not targets:
        raise TypeError(f"{cls.__name__} has no forward and backward of its own: nothing to check")
    return targets[0]
