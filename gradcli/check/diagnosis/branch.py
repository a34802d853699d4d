"""A term missing in one branch of a piecewise backward: ``torch.where(x > 0, g, g * y)`` where
ELU's negative branch needs ``g * (y + α)``. The wrong elements are a region (``region.py``) and
inside it numeric − analytic = α·v·t for one simple term t (``terms._term_library``), t not
proportional to the gradient there (a factor is the region's ``within: scale``, a zero its
``within: zero``): more specific than "wrong where x < 0", so it is tried just before ``region``.
"""
from __future__ import annotations

import numpy as np

from gradcli.check.diagnosis import region as regions
from gradcli.check.diagnosis.evidence import Evidence
from gradcli.check.diagnosis.fitted import sign_of_term, term_words
from gradcli.check.diagnosis.terms import _backward_variables, _cosine, _term_library, _variables
from gradcli.check.report import Finding


def branch_missing_term(ev: Evidence):
    if ev.analytic is None or ev.values is None or len(ev.outputs) != 1 or ev.outputs[0].shape != ev.values.shape:
        return None
    found = regions.region(ev)
    if found is None or found.params.get("within") != "wrong" or found.confidence < 0.8:
        return None
    mask = ev.wrong()
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error
    V = np.stack([np.reshape(row[0], ev.shape) for row in ev.cotangents])
    residual = N - A
    inside = (slice(None), mask)
    for description, term in _term_library(_variables(ev) + _backward_variables(ev)):
        T = V * term * mask
        if ev.support(T) < 2 or _cosine(T[inside], N[inside]) > 1 - 1e-9 or _cosine(T[inside], A[inside]) > 1 - 1e-9:
            continue
        alpha = float(np.sum(residual * T) / np.sum(T * T))
        if alpha == 0 or not ev.fits(A + alpha * T, N, E):
            continue
        nice, coefficient, text, what = term_words(alpha, description)
        where = found.params["description"]
        if nice == -2.0:
            return sign_of_term(ev, text[2:], where)
        return Finding("missing_term",
                       f"backward for input {ev.name} {what} {text} where {where} (numeric − analytic fits it "
                       "exactly there, and backward is right elsewhere)",
                       input=ev.index, params={"variant": "missing", "term": description, "coefficient": coefficient,
                                               "expression": text, "region": where},
                       confidence=0.85 if nice is not None else 0.75)
    return None
