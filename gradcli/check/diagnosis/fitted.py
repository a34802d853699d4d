"""How a fitted term is named: numeric − analytic = α·t for one term t is a missing term (α > 0),
a term too many (α < 0), or — for α = −2 — the sign of that term: the backward has +t where −t is
needed (issue 17: "extra term 2·grad_output·1/x²" is true arithmetic, but the mistake is the sign).
"""
from __future__ import annotations

import itertools

import numpy as np

from gradcli.check.diagnosis.evidence import Evidence, nice_number, short_number
from gradcli.check.report import Finding


def term_words(alpha: float, description: str) -> tuple:
    """(nice number or None, coefficient, "3·grad_output·x", "misses the term" / "has an extra term") for
    a fitted term: the residual is what is missing, so a negative coefficient is a term too many."""
    nice = nice_number(alpha)
    coefficient = nice if nice is not None else float(f"{alpha:.6g}")
    size = abs(coefficient)
    text = ("" if size == 1 else f"{short_number(size)}·") + "grad_output" + (
        "" if description == "1" else f"·{description}")
    return nice, coefficient, text, "misses the term" if coefficient > 0 else "has an extra term"


def sign_of_term(ev: Evidence, text: str, where: str = ""):
    """numeric − analytic = −2·t: the backward has +t where −t is needed — the sign of one term, not
    "an extra term 2·t" (true arithmetic, but not the mistake), even where the statement cannot be read."""
    there = f" where {where}" if where else ""
    params = {"term": text, "expression": text}
    if where:
        params["region"] = where
    return Finding("term_sign", f"backward for input {ev.name} has the wrong sign on the term {text}{there} "
                   "(numeric = analytic − 2·that term, exactly)", input=ev.index, params=params, confidence=0.85)


def written_term(terms, T) -> bool:
    """Whether ``T`` (K, *shape) is one of the statement's additive terms ``terms`` (or the sum of
    two: a distributed product), up to a factor — True when the statement is not readable (no
    terms): the sign of a term is then named from the fit alone."""
    if not terms:
        return True
    pieces = [t for _, t in terms] + [a + b for (_, a), (_, b) in itertools.combinations(terms, 2)]
    return any(_parallel(piece, T) for piece in pieces)


def _parallel(a, b):
    na, nb = float(np.sqrt(np.sum(a * a))), float(np.sqrt(np.sum(b * b)))
    return na > 0 and nb > 0 and abs(float(np.sum(a * b))) / (na * nb) > 1 - 1e-9


def constant_term_left_out(ev: Evidence) -> bool:
    """N − A = c·grad_output for a simple c: a constant term left out (d log(e^x − 1) = 1 + 1/(e^x − 1)
    written without its 1) — simpler than any tensor read in another's place that happens to fit."""
    if len(ev.outputs) != 1 or np.shape(ev.outputs[0]) != ev.shape:
        return False
    V = np.stack([np.broadcast_to(row[0], ev.shape) for row in ev.cotangents])
    residual = ev.numeric - ev.analytic
    if not np.any(V):
        return False
    alpha = float(np.sum(residual * V) / np.sum(V * V))
    return alpha != 0 and term_words(alpha, "1")[0] is not None and ev.fits(ev.analytic + alpha * V, ev.numeric,
                                                                          ev.numeric_error)
