"""The named checks besides ``values``: each a small function returning a ``Check``.

They read what the gradcheck session gathered (outputs, gradients, the backward's raw return
values, the graph's Functions) and judge one property each; see specs/gradcheck.md.
"""
from __future__ import annotations

import inspect
from typing import Optional, Sequence

import numpy as np

from gradcli.check.report import Check

INPLACE_MARKER = "modified by an inplace operation"
STRUCTURE_MARKERS = ("incorrect number of gradients", "invalid gradient", "expected shape", "returned a gradient different")


def classify_backward_error(exc: BaseException) -> str:
    """Which check a backward exception belongs to: inplace | structure | backward."""
    text = str(exc)
    if INPLACE_MARKER in text:
        return "inplace"
    if any(marker in text for marker in STRUCTURE_MARKERS):
        return "structure"
    return "backward"


def exception_details(exc: BaseException) -> dict:
    """``exception`` and ``message``; when user code raised it, ``file`` and ``line`` of the innermost
    frame outside gradcli and torch (where it was raised), ``frames`` (``[file, line, function]``,
    outermost first) and ``traceback``, those frames formatted."""
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    details = {"exception": type(exc).__name__, "message": lines[-1] if lines else ""}
    frames = user_frames(exc)
    if frames:
        import traceback

        details.update(file=frames[-1].filename, line=frames[-1].lineno,
                       frames=[[f.filename, f.lineno, f.name] for f in frames],
                       traceback="Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
                       + "".join(traceback.format_exception_only(type(exc), exc)))
    return details


def user_frames(exc: BaseException) -> list:
    """The traceback's frames that are neither gradcli's, torch's nor the interpreter's own."""
    import os
    import sys
    import traceback

    own = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep]  # .../gradcli/
    torch = sys.modules.get("torch")
    if getattr(torch, "__file__", None):
        own.append(os.path.dirname(torch.__file__) + os.sep)
    return [f for f in traceback.extract_tb(exc.__traceback__)
            if not f.filename.startswith(tuple(own)) and not f.filename.startswith("<frozen")]


def referenced_functions(fn, is_function) -> list:
    """Function classes a plain callable refers to by name (globals, closure), best effort.

    Used when gradcheck is handed a wrapper (``lambda x: MyFn.apply(x)``) rather than the Function:
    if the wrapper names MyFn but MyFn's backward never ends up in the graph, the wrapper called
    ``MyFn.forward`` directly (seed 002's pitfall) and the check must say so.
    """
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    found = []
    scopes = [getattr(fn, "__globals__", {})]
    candidates = []
    for name in code.co_names:
        for scope in scopes:
            if name in scope:
                candidates.append(scope[name])
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            candidates.append(cell.cell_contents)
        except ValueError:
            continue
    for obj in candidates:
        cls = obj if isinstance(obj, type) else None
        if cls is not None and is_function(cls) and cls not in found:
            found.append(cls)
    return found


def backward_invoked_check(expected: Sequence[type], in_graph: Sequence[type], calls: int, explicit: bool) -> Check:
    """The custom backward we are checking is the one autograd ran (not the forward's own ops).

    ``explicit``: gradcheck was given the Function itself, whose backward was wrapped and counted;
    otherwise ``expected`` are the Functions a wrapper refers to, and one of them must be in the graph.
    """
    names = [c.__name__ for c in expected]
    details = {"function": names, "graph_functions": [c.__name__ for c in in_graph], "backward_calls": calls}
    if not expected:
        if in_graph:
            return Check("backward_invoked", "pass", f"graph runs {', '.join(details['graph_functions'])}", None, details)
        return Check("backward_invoked", "skip", "no custom Function involved: the engine's own derivatives are checked",
                     None, details)
    present = [c for c in expected if c in in_graph]
    if explicit and calls > 0:
        return Check("backward_invoked", "pass", f"{names[0]}.backward was called by autograd", None, details)
    if not explicit and present:
        return Check("backward_invoked", "pass", f"{', '.join(c.__name__ for c in present)} is in the graph",
                     None, details)
    cls = expected[0].__name__
    message = (
        f"{cls}.backward was never called: the graph has no {cls}Backward node, so autograd differentiated "
        f"the operations inside forward instead of your backward. The callable likely calls "
        f"{cls}.forward(...) (or an instance's .forward) directly; call {cls}.apply(...) instead."
    )
    return Check("backward_invoked", "fail", message, None, details)


def structure_check(
    problems: Sequence[str], warnings: Sequence[str], details: dict
) -> Check:
    details = dict(details, problems=list(problems), warnings=list(warnings))
    if problems:
        return Check("structure", "fail", "; ".join(problems), None, details)
    if warnings:
        return Check("structure", "warn", "; ".join(warnings), None, details)
    return Check("structure", "pass", "gradient count, shapes and dtypes match the inputs", None, details)


def raw_gradient_problems(raw: Sequence, args: Sequence, names: Sequence[str], diff: Sequence[int], backend,
                          strict_shapes: bool) -> tuple:
    """Compare what the user's backward returned (before the engine fixed it up) with the inputs.

    ``raw``: one ``backward_records.describe`` per returned object. Only meaningful when backward's outputs
    correspond positionally to ``args`` (gradcheck was handed the Function itself).
    Returns (problems, warnings).
    """
    problems, warnings = [], []
    if len(raw) < len(args):
        problems.append(f"backward returned {len(raw)} gradient(s) for {len(args)} forward input(s)")
        return problems, warnings
    for i in diff:
        if raw[i] is None or raw[i][0] is None:
            continue
        got, got_dtype = raw[i]
        expected = tuple(backend.to_numpy(args[i]).shape)
        if got != expected:
            message = f"gradient for {names[i]} has shape {list(got)} but {names[i]} has shape {list(expected)}"
            if sums_to(expected, got) and not strict_shapes:
                warnings.append(message + SUMMED)
            else:
                problems.append(message + shape_hint(got, expected))
        want_dtype = backend.dtype_name(args[i])
        if got_dtype != want_dtype:
            warnings.append(f"gradient for {names[i]} is {got_dtype} but {names[i]} is {want_dtype}")
    return problems, warnings


SUMMED = (": autograd sums it down to that shape (torch's sum_to, as gradcli's engine does), and the summed "
          "values were compared; the gradient is right only while the input is broadcast this way")


def sums_to(shape: tuple, grad_shape: tuple) -> bool:
    """torch's rule (``validate_outputs``: ``is_expandable_to``): a gradient whose shape the input's
    shape expands to is summed down (``at::sum_to``) instead of refused; gradcli's engine does the same."""
    shape, grad_shape = tuple(shape), tuple(grad_shape)
    if len(shape) > len(grad_shape):
        return False
    return all(s == g or s == 1 for s, g in zip(reversed(shape), reversed(grad_shape)))


def shape_hint(got: tuple, expected: tuple) -> str:
    """Why a gradient might have come back with the wrong shape."""
    try:
        broadcast = np.broadcast_shapes(got, expected) == tuple(got)
    except ValueError:
        broadcast = False
    if broadcast:
        return " (not reduced over the broadcast dimensions: sum it down to the input's shape)"
    if sorted(got) == sorted(expected) and len(got) > 1:
        return " (transposed or permuted?)"
    return ""


def zero_cotangent_check(grads: Optional[Sequence], error: Optional[BaseException]) -> tuple:
    """Backward of a zero cotangent must be zero (a backward ignoring grad_output is not)."""
    if error is not None:
        return None, 0.0
    worst = max((float(np.max(np.abs(g))) if g is not None and g.size else 0.0 for g in grads), default=0.0)
    return worst == 0.0, worst


def cotangents_check(kinds: Sequence[str], failed: Sequence[int], zero_ok: Optional[bool], zero_worst: float) -> Check:
    failed = set(failed)
    ones = [c for c, kind in enumerate(kinds) if kind == "ones"]
    random = [c for c, kind in enumerate(kinds) if kind == "random"]
    ones_ok = None if not ones else not (set(ones) & failed)
    random_ok = not (set(random) & failed)
    details = {"ones_ok": ones_ok, "random_ok": random_ok, "zero_cotangent_max": zero_worst, "kinds": list(kinds)}
    blind = ones_ok and not random_ok
    if zero_ok is False:
        message = (f"a zero grad_output gave a non-zero gradient (max |g| = {zero_worst:.3g}): backward does not "
                   f"multiply by grad_output")
        if blind:
            message += "; it is right for grad_output = ones and wrong for random grad_output"
        return Check("cotangents", "fail", message, None, details)
    if blind:
        return Check("cotangents", "fail",
                     "backward is right for grad_output = ones but wrong for random grad_output: a cotangent of "
                     "ones hides this error (a constant factor on softmax rows or a permutation is invisible to it), "
                     "which is not by itself a misuse of grad_output", None, details)
    if zero_ok is None and not random_ok:
        return Check("cotangents", "warn", "could not run the zero-cotangent probe", None, details)
    return Check("cotangents", "pass", f"random cotangents used ({len(random)}); zero grad_output gives zero",
                 None, details)


def reentrant_check(first: Sequence, second: Sequence, nondet_tol: float) -> Check:
    worst = 0.0
    for a, b in zip(first, second):
        if (a is None) != (b is None):
            worst = float("inf")
        elif a is not None:
            with np.errstate(invalid="ignore"):
                diff = np.subtract(a, b, out=np.empty(np.broadcast_shapes(np.shape(a), np.shape(b))))
                np.abs(diff, out=diff)  # in place: these may be as large as the inputs
            worst = max(worst, float(np.nanmax(diff)) if diff.size else 0.0)
    details = {"max_difference": worst, "nondet_tol": nondet_tol}
    if worst <= nondet_tol:
        return Check("reentrant", "pass", "a second backward pass gives the same gradients", None, details)
    return Check("reentrant", "fail",
                 f"two backward passes with the same grad_output differ by up to {worst:.3g} (nondet_tol={nondet_tol}): "
                 f"backward is nondeterministic or changes state it reads", None, details)


def finite_check(outputs_finite: Sequence[bool], grads_finite: Sequence[bool]) -> Check:
    details = {"outputs": list(outputs_finite), "gradients": list(grads_finite)}
    bad = []
    if not all(outputs_finite):
        bad.append(f"output(s) {[i for i, ok in enumerate(outputs_finite) if not ok]} contain NaN/Inf")
    if not all(grads_finite):
        bad.append(f"gradient(s) {[i for i, ok in enumerate(grads_finite) if not ok]} contain NaN/Inf")
    if bad:
        return Check("finite", "fail", "; ".join(bad), None, details)
    return Check("finite", "pass", "outputs and gradients are finite", None, details)


def kinks_check(results, names) -> Check:
    elements = []
    for r in results:
        if r.kink_mask is not None and r.kinks:
            elements.extend([r.index, [int(i) for i in idx]] for idx in np.argwhere(r.kink_mask)[:5])
    count = sum(r.kinks for r in results)
    details = {"count": count, "action": "accepted_between" if count else None, "elements": elements[:10]}
    if not count:
        return Check("kinks", "pass", "no element sits at a kink", None, details)
    where = ", ".join(f"{names[i]}{idx}" for i, idx in elements[:3])
    return Check("kinks", "warn",
                 f"{count} element(s) sit at a kink (left and right derivatives differ, e.g. {where}); not a failure: "
                 f"any backward value between the one-sided derivatives was accepted", None, details)


def parameter_names(fn, cls, count: int) -> list:
    """Forward's parameter names for the inputs (after ctx/self), or input0, input1, ..."""
    target = getattr(cls, "forward", None) if cls is not None else fn
    names = []
    try:
        params = list(inspect.signature(target).parameters.values())
        if cls is not None and params and params[0].name in ("ctx", "self", "context", "cls"):
            params = params[1:]
        for p in params:
            if p.kind is p.VAR_POSITIONAL:  # forward(ctx, x, *args): args_0, args_1, ... as --input names them
                names += [f"{p.name}_{k}" for k in range(max(0, count - len(names)))]
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                break
            names.append(p.name)
    except (TypeError, ValueError):
        pass
    return [names[i] if i < len(names) else f"input{i}" for i in range(count)]


def evaluation_counts(nf) -> dict:
    """``timing.forward_evaluations``: the numeric side's forward calls in all and per estimator, the
    points they evaluated (a batched call of r perturbed copies counts r) and points per
    differentiable input element (torch's gradcheck makes 2 per element in its default mode)."""
    counts = nf.counts()
    elements = sum(int(x.size) for x in nf.inputs)
    counts["elements"] = elements
    counts["points_per_element"] = counts["points"] / elements if elements else 0.0
    return counts
