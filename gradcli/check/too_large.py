"""Full mode's fallback for inputs too large (or too costly) to localise element by element.

An input above ``LOCALIZE_MAX_ELEMENTS`` that the broadcast strategy cannot localise (a row sum, a
matmul), or one whose element-by-element reference would take longer than the time budget
(``gradcheck(time_budget=...)``: the reason is then said instead of "too many elements"), is not skipped: it is checked as fast mode checks, along random directions in those
inputs only (the others held fixed), for every probe cotangent, and its ``InputResult`` says so.
See specs/gradcheck.md, "What is compared".
"""
from __future__ import annotations

import time

import numpy as np

from gradcli.check.compare import compare_probes, probe_good_enough
from gradcli.check.report import Check
from gradcli.numeric import directional
from gradcli.numeric.vjp import step_exponents


TOO_MANY = "too many elements to localise one by one"


def probe_too_large(session, projector, cotangents, too_large):
    """Check ``too_large`` ([(position, InputResult, analytic)]) of ``session`` (a gradcheck _Session in
    full mode) with fast mode's random probes along directions in those inputs only (the others held
    fixed); their InputResults and a ``values`` check (``too_large: true``) say so."""
    rng = np.random.default_rng([session.seed, 1])
    directions = [np.zeros(x.shape, dtype=np.float32) for x in session.nf.inputs]
    dots, magnitudes = np.zeros(len(cotangents)), np.zeros(len(cotangents))
    for p, _, analytic in too_large:
        x = session.nf.inputs[p]
        directions[p] = np.ldexp(rng.standard_normal(x.shape, dtype=np.float32), step_exponents(x))
        if analytic is not None:
            products = analytic * directions[p]
            dots += products.reshape(len(cotangents), -1).sum(axis=1)
            magnitudes += np.abs(products).reshape(len(cotangents), -1).sum(axis=1)
    start = time.perf_counter()
    # method="auto": the probes' central difference suffices where it is a tenth of the allowance
    good_enough = probe_good_enough(session.tolerance, magnitudes) if session.method == "auto" else None
    estimate = directional(session.nf, directions, projector, session.method, good_enough)
    session.timing["numeric_s"] += time.perf_counter() - start
    names = [r.name for _, r, _ in too_large]
    reasons = {p: getattr(session, "fast_reasons", {}).get(p, TOO_MANY) for p, _, _ in too_large}
    why = "; ".join(f"{r.name} ({int(np.prod(r.shape))} elements): {reasons[p]}" for p, r, _ in too_large)
    if np.any(estimate.kink):
        check = Check("values", "skip", f"{why}; the random probe that would check instead crossed a kink", None,
                      {"kink": True, "inputs": names, "too_large": True})
    else:
        check = compare_probes(dots, magnitudes, estimate, session.tolerance)
        check.details.update(inputs=names, too_large=True, why=sorted(set(reasons.values())))
        check.message = f"{why}, checked along random directions (fast mode) instead: {check.message}"
        if check.status == "fail":  # every probe that failed (the cotangents check reads which)
            d = check.details
            session.failed_cotangents += [c for c, (a, n, allowed) in enumerate(zip(d["analytic"], d["numeric"],
                                                                                  d["allowed"]))
                                       if not abs(a - n) <= allowed]
    for p, result, _ in too_large:
        result.status, result.method = check.status, estimate.method
        reason = (f"{int(np.prod(result.shape))} elements are too many to localise one by one"
                  if reasons[p] == TOO_MANY else reasons[p])
        result.message = (f"checked in fast mode (random directions, not localised): {reason}"
                          if check.status != "skip" else check.message)
    session.report.checks.append(check)
