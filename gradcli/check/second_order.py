"""Second order: the backward itself differentiated (``create_graph=True``) against its numerical derivative.

The backward for a fixed random cotangent v is a function of the inputs, G(x) = J(x)ᵀv. Building it
with ``create_graph=True`` and running the first-order check on G compares the double backward
(the derivative of G that autograd computes) with the numerical derivative of G.
"""
from __future__ import annotations

from gradcli.check import backends as _backends
from gradcli.check.report import Check


def second_order_check(session, gradcheck) -> Check:
    report = session.report
    if not session.diff_outputs or not report.cotangents:
        return Check("second_order", "skip", "no differentiable output to take a second derivative of")
    if report.status == "fail":
        return Check("second_order", "skip", "first order failed: the second order is not meaningful yet")
    backend, cotangent = session.backend, report.cotangents[-1]

    def backward_of(*call_args):
        with backend.enable_grad():
            prepared = list(call_args)
            for i in session.diff:
                if not backend.requires_grad(prepared[i]):
                    prepared[i] = backend.fresh_leaf(prepared[i])
            outputs = _backends.flatten_outputs(session.call(*prepared))
            grads = backend.grad([outputs[j] for j in session.diff_outputs], [prepared[i] for i in session.diff],
                                 [cotangent[j] for j in session.diff_outputs], retain_graph=True, create_graph=True)
        return tuple(grads)

    backward_of.__qualname__ = f"{report.function}.backward"
    try:
        inner = gradcheck(
            backward_of, session.args, mode=report.mode, method=report.method, seed=report.seed + 1,
            tolerances={session.tolerance_dtype: dict(rtol=session.tolerance.rtol * 10,
                                                      scale_atol=session.tolerance.scale_atol * 10)},
            name=backward_of.__qualname__,
        )
    except Exception as exc:  # noqa: BLE001 -- a backward that cannot build a graph is the finding
        lines = [line for line in str(exc).splitlines() if line.strip()]
        return Check("second_order", "fail",
                     f"backward could not be differentiated (create_graph=True): {type(exc).__name__}: "
                     f"{lines[-1] if lines else ''}", None, {"exception": type(exc).__name__})
    details = {
        "inputs": [r.to_dict() for r in inner.inputs],
        "checks": [c.to_dict() for c in inner.checks if c.status in ("fail", "warn")],
    }
    failures = [c for c in inner.checks if c.status == "fail"]
    structure = inner.check("structure")
    if structure is not None and structure.status == "fail" and "no output is connected" in structure.message:
        # Backward's result is a constant to autograd. Right only if its true derivative is zero
        # (piecewise-linear ops such as max): the numeric values decide.
        if any(c.name == "values" for c in failures):
            return Check("second_order", "fail",
                         "backward's gradients are not differentiable: they do not depend on the inputs through "
                         "autograd (computed with numpy, .data or .detach()?), so second derivatives are lost",
                         None, details)
        return Check("second_order", "pass", "backward is constant to autograd, and its numerical derivative is "
                     "zero too", None, details)
    if failures:
        return Check("second_order", "fail", "double backward: " + "; ".join(c.message for c in failures[:3]),
                     None, details)
    return Check("second_order", "pass", "double backward agrees with the numerical derivative of backward",
                 None, details)
