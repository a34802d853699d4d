"""Parts of a gradcheck session (gradcheck.py): fast mode's random probes, and the checks that follow
the values (finite, cotangents, kinks, undefined gradients, in-place, backward invoked)."""
from __future__ import annotations

import time

import numpy as np

from gradcli.check import backends as _backends
from gradcli.check import checks as _checks
from gradcli.check.compare import compare_probes, probe_good_enough
from gradcli.check.report import Check, InputResult
from gradcli.check.undefined_grads import undefined_grads_check
from gradcli.numeric import directional
from gradcli.numeric.vjp import step_exponents


def fast_values(session, projector, cotangents, rng) -> Check:
    """Fast mode's value check: uᵀJᵀv along random directions u against the numeric directional derivative."""
    # Directions carry each element's step scale (a power of two, exact in float32).
    directions = [np.ldexp(rng.standard_normal(x.shape, dtype=np.float32), step_exponents(x))
                  for x in session.nf.inputs]
    dots = np.zeros(len(cotangents))
    magnitudes = np.zeros(len(cotangents))

    def reduce(c, grads):  # keep uᵀJᵀv and its scale, not the gradients
        for g, w in zip(grads, directions):
            if g is not None:
                product = np.multiply(g, w, out=np.empty(np.shape(g)))
                dots[c] += float(product.sum())
                magnitudes[c] += float(np.abs(product, out=product).sum())

    session.summary = session.analytic.probe(cotangents, reduce, session.nondet_tol)
    session.failed_cotangents = []
    start = time.perf_counter()
    # method="auto" only: an explicitly requested method is honoured in full.
    good_enough = probe_good_enough(session.tolerance, magnitudes) if session.method == "auto" else None
    estimate = directional(session.nf, directions, projector, session.method, good_enough)
    session.timing["numeric_s"] += time.perf_counter() - start
    for p, i in enumerate(session.diff):
        session.report.inputs.append(InputResult(session.names[i], i, tuple(session.nf.inputs[p].shape),
                                                 session.report.dtypes[i], status="skip", method=estimate.method,
                                                 message="fast mode: not localised (the random probes passed)"))
    if np.any(estimate.kink):
        # A random line through a point at (or within a step of) a kink is not differentiable
        # there; a new direction would cross the same kink. Per-element checking handles it.
        return Check("values", "skip", "the random probe crossed a kink (one-sided derivatives differ); "
                     "checked element by element instead", None, {"kink": True})
    check = compare_probes(dots, magnitudes, estimate, session.tolerance)
    if check.status == "fail":
        session.failed_cotangents = [check.details["worst_probe"]]
    return check


def after_values(session):
    """The checks that follow the values: finite, cotangents, re-entrance, kinks, undefined gradients."""
    report, summary = session.report, session.summary
    outputs_finite = [bool(np.all(np.isfinite(session.backend.to_numpy(session.analytic.outputs[j]))))
                      for j in session.analytic.compared_outputs]
    report.checks.append(_checks.finite_check(outputs_finite, summary.finite))
    report.checks.append(_checks.cotangents_check(report.cotangent_kinds, session.failed_cotangents,
                                                  summary.zero_ok, summary.zero_worst))
    if summary.reentrant is not None:
        report.checks.append(summary.reentrant)
    report.checks.append(_checks.kinks_check(report.inputs, session.names))
    if not session.unconnected_as_zero:
        undefined = undefined_grads_check(session.analytic, report.cotangents[-1], session.tolerance, session.cls)
        if undefined is not None:
            report.checks.append(undefined)


def inplace_check(session) -> Check:
    modified = session.analytic.modified_inputs
    if modified:
        return Check("inplace", "fail", f"forward modified its input(s) {', '.join(modified)} in place "
                     f"(use .clone(), or ctx.mark_dirty for a deliberate in-place op)", None,
                     {"inputs": modified})
    return Check("inplace", "pass", "no saved tensor or input was modified in place", None, {})


def invoked_check(session) -> Check:
    expected = [session.cls] if session.cls is not None else _checks.referenced_functions(
        session.call, _backends.is_user_function)
    in_graph = session.backend.graph_functions([session.analytic.outputs[j] for j in session.diff_outputs])
    return _checks.backward_invoked_check(expected, in_graph, session.records.calls, explicit=session.cls is not None)
