"""Second order: the backward itself differentiated (``create_graph=True``) against its numerical derivative.

The backward for a fixed random cotangent v is a function of the inputs, G(x) = J(x)ᵀv. Building it
with ``create_graph=True`` and running the first-order check on G compares the double backward
(the derivative of G that autograd computes) with the numerical derivative of G.

A gradient with no path back to the inputs in the double-backward graph (autograd: "unused", or an
output that does not require grad) has derivative zero as far as autograd is concerned: it is
compared as zero with the numerical derivative. That is right for a backward that truly does not
depend on the inputs (``grad_output * 2`` for ``x * 2``), and exposes one that computes with numpy,
``.data`` or ``.detach()`` (constant to autograd, yet its numerical derivative is not zero).
A backward decorated with ``@once_differentiable`` declares that it cannot be differentiated: skip.
"""
from __future__ import annotations

import inspect

from gradcli.check import backends as _backends
from gradcli.check.backward_records import once_differentiable_functions
from gradcli.check.report import Check

ONCE_DIFFERENTIABLE_MARKER = "once_differentiable"


def second_order_check(session, inner_session) -> Check:
    """``inner_session(fn, args, **options)`` runs a first-order session on ``fn`` that compares
    outputs not connected through autograd as zero (gradcheck._inner_session) and returns it."""
    report = session.report
    if not session.diff_outputs or not report.cotangents:
        return Check("second_order", "skip", "no differentiable output to take a second derivative of")
    if report.status == "fail":
        return Check("second_order", "skip", "first order failed: the second order is not meaningful yet")
    backend, cotangent = session.backend, report.cotangents[-1]
    once = _once_differentiable(session)
    if once:
        return _once_differentiable_skip(once)

    def backward_of(*call_args):
        with backend.enable_grad():
            prepared = list(call_args)
            for i in session.diff:
                if not backend.requires_grad(prepared[i]):
                    prepared[i] = backend.fresh_leaf(prepared[i])
            outputs = _backends.flatten_outputs(session.call(*prepared))
            grads = backend.grad([outputs[j] for j in session.diff_outputs], [prepared[i] for i in session.diff],
                                 [cotangent[j] for j in session.diff_outputs], retain_graph=True, create_graph=True)
        # allow_unused: an input the gradient does not reach gets None; its gradient is zero.
        return tuple(backend.zeros_like(prepared[i]) if g is None else g for g, i in zip(grads, session.diff))

    backward_of.__qualname__ = f"{report.function}.backward"
    # The inner report names the inputs as the outer one does (x, y), not input0, input1.
    try:
        backward_of.__signature__ = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in session.names])
    except ValueError:  # not identifiers (cannot happen for names read from a signature): input0, ...
        pass
    options = dict(
        mode=report.mode, method=report.method, seed=report.seed + 1, eps=session.eps,
        tolerances={session.tolerance_dtype: dict(rtol=session.tolerance.rtol * 10,
                                                  scale_atol=session.tolerance.scale_atol * 10)},
    )
    try:
        inner = inner_session(backward_of, session.args, name=backward_of.__qualname__, **options)
    except Exception as exc:  # noqa: BLE001 -- a backward that cannot build a graph is the finding
        lines = [line for line in str(exc).splitlines() if line.strip()]
        if ONCE_DIFFERENTIABLE_MARKER in str(exc):
            return _once_differentiable_skip([])
        return Check("second_order", "fail",
                     f"backward could not be differentiated (create_graph=True): {type(exc).__name__}: "
                     f"{lines[-1] if lines else ''}", None, {"exception": type(exc).__name__})
    result = inner.report
    # Gradients (one per differentiable input, in order) with no path back to the inputs.
    unconnected = [j for j in inner.analytic.unconnected_outputs if j < len(session.diff)]
    constant = [session.names[session.diff[j]] for j in unconnected]
    details = {
        "inputs": [r.to_dict() for r in result.inputs],
        "checks": [c.to_dict() for c in result.checks if c.status in ("fail", "warn")],
        "constant_gradients": constant,
    }
    failures = [c for c in result.checks if c.status == "fail"]
    if any(ONCE_DIFFERENTIABLE_MARKER in c.message for c in failures):
        return _once_differentiable_skip([])
    if failures:
        detail = "; ".join(c.message for c in failures[:3])
        culprits = []
        if unconnected and any(c.name == "values" for c in failures):
            culprits = _not_differentiable(backward_of, unconnected, len(session.diff), session, inner_session, options)
        details["not_differentiable"] = [session.names[session.diff[j]] for j in culprits]
        if culprits:
            which = ("backward's gradients are" if len(culprits) == len(session.diff) else
                     f"backward's gradient for {', '.join(details['not_differentiable'])} is")
            return Check("second_order", "fail",
                         f"{which} not differentiable: constant to autograd (no path back to the inputs: numpy, "
                         f".data or .detach() in backward?), but the numerical second derivative is not zero, "
                         f"so second derivatives through it are lost ({detail})", None, details)
        return Check("second_order", "fail", "double backward: " + detail, None, details)
    if constant and len(constant) == len(session.diff):
        return Check("second_order", "pass",
                     "backward's gradients do not depend on the inputs through autograd (zero second derivative), "
                     "and the numerical second derivative is zero too", None, details)
    message = "double backward agrees with the numerical derivative of backward"
    if constant:
        message += f" (gradient for {', '.join(constant)} constant to autograd: zero, as numerically)"
    return Check("second_order", "pass", message, None, details)


def _not_differentiable(backward_of, unconnected, count, session, inner_session, options) -> list:
    """Which of the gradients constant to autograd have a non-zero numerical derivative.

    With a single gradient the failed check already says so; otherwise each constant gradient is
    checked on its own (only on this failure path), so the message names the right input.
    """
    if count == 1:
        return list(unconnected)
    found = []
    for j in unconnected:
        def only(*args, j=j):
            return backward_of(*args)[j]

        if hasattr(backward_of, "__signature__"):
            only.__signature__ = backward_of.__signature__
        alone = inner_session(only, session.args, name=f"{backward_of.__qualname__}[{j}]", **options)
        if any(c.name == "values" and c.status == "fail" for c in alone.report.checks):
            found.append(j)
    return found


def _once_differentiable(session) -> list:
    """Custom Functions in the checked graph whose backward is ``@once_differentiable``."""
    classes = [session.cls] if session.cls is not None else []
    try:
        classes += session.backend.graph_functions([session.analytic.outputs[j] for j in session.diff_outputs])
    except Exception:  # noqa: BLE001 -- graph walking is best effort; the runtime error is caught too
        pass
    return once_differentiable_functions(classes)


def _once_differentiable_skip(classes) -> Check:
    names = sorted({c.__name__ for c in classes})
    who = f"{names[0]}.backward is" if len(names) == 1 else (
        f"{', '.join(n + '.backward' for n in names)} are" if names else "a backward in the graph is")
    return Check("second_order", "skip",
                 f"{who} decorated with @once_differentiable: it declares it cannot be differentiated again "
                 f"(a double backward through it raises), so second derivatives are not checked", None,
                 {"once_differentiable": names})
