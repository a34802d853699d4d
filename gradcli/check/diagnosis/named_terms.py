"""``missing_term`` built from backward's own names: one term of a sum dropped after backward
prepared its pieces (``grad_a = w * u`` where ``w * (u - r)`` is needed). numeric − analytic is,
for every cotangent, one simple number times one name or the product of two names backward
assigns before the gradient statement, at least one of them carrying grad_output (a term that
does not follow the cotangent is no term of a vector-Jacobian product)."""
from __future__ import annotations

import itertools

import numpy as np

from gradcli.check.diagnosis.evidence import Evidence, nice_number, short_number
from gradcli.check.diagnosis.terms import _statement_terms
from gradcli.check.report import Finding

MAX_NAMES = 16  # names tried (pairs of them: 120 products at most)
MAX_MONOMIALS = 1200  # longer products tried, when no name or pair fits


def _cosine(a, b):
    na, nb = float(np.sqrt(np.sum(a * a))), float(np.sqrt(np.sum(b * b)))
    return 0.0 if na == 0 or nb == 0 else abs(float(np.sum(a * b)) / (na * nb))


def _rows(ev: Evidence):
    """(name, (K, *shape) array, follows the cotangent, 0-d) for the names broadcastable to the input."""
    found = []
    for name, values in (ev.backward_rows() or [])[:MAX_NAMES] if ev.backward_rows is not None else ():
        if len(values) != len(ev.kinds):
            continue
        try:
            stacked = np.stack([np.broadcast_to(v, ev.shape) for v in values])
        except ValueError:
            continue
        follows = any(not np.array_equal(stacked[0], row) for row in stacked[1:])
        found.append((name, stacked, follows, np.ndim(values[0]) == 0))
    return found


def _monomials(names):
    """The longer products, tried only when no name or pair fits: a term that follows grad_output
    times one or two names that do not (a square among them: ``3·x·x·g3``), over at most one 0-d name
    that does not (a normaliser: ``−2·grad·r·x / xx``); then over one name that does not, or its
    square, of any shape (a norm's term ``−g·cos·a/na²``, dropped from a cosine's gradient)."""
    followers = [(n, z) for n, z, follows, _ in names if follows]
    others = [(n, z) for n, z, follows, _ in names if not follows]
    scalars = [(n, z) for n, z, follows, scalar in names if not follows and scalar]
    products = [(f"{a}·{b}", za * zb) for (a, za), (b, zb) in itertools.combinations_with_replacement(others, 2)]
    numerators = [(f"{f}·{p}", zf * zp) for f, zf in followers for p, zp in products + others]
    for p, zp in numerators:
        yield p, zp
        for d, zd in scalars:
            if d not in p.split("·") and np.all(zd != 0):
                yield f"{p}/{d}", zp / zd
    denominators = [(d, zd) for d, zd in others if (d, zd) not in scalars and np.all(zd != 0)]
    for p, zp in numerators:
        for d, zd in denominators:
            if d not in p.split("·"):
                yield f"{p}/{d}", zp / zd
                yield f"{p}/{d}²", zp / (zd * zd)


def missing_named_term(ev: Evidence):
    if ev.analytic is None or ev.numeric is None or ev.support() < 3:
        return None
    names = _rows(ev)
    plain = [(n, z, follows) for n, z, follows, scalar in names if not scalar]
    candidates = [(n, z) for n, z, follows in plain if follows]
    candidates += [(f"{n1}·{n2}", z1 * z2) for (n1, z1, f1), (n2, z2, f2) in itertools.combinations(plain, 2)
                   if f1 != f2]  # grad_output enters once: one factor follows it, the other does not
    found = _fitting(ev, candidates)
    if found is None:
        found = _fitting(ev, itertools.islice(_monomials(names), MAX_MONOMIALS))
    if found is None:
        return None
    description, nice = found
    sign = "−" if nice < 0 else ""
    text = sign + ("" if abs(nice) == 1 else f"{short_number(abs(nice))}·") + description
    return Finding("missing_term",
                   f"backward for input {ev.name} misses the term {text} (numeric − analytic fits it exactly)",
                   input=ev.index, params={"variant": "named", "term": description, "coefficient": nice,
                                           "expression": text},
                   confidence=0.8)


def _fitting(ev, candidates):
    """(description, simple coefficient) of the candidate term that makes A + c·T = N exactly, the
    simplest first (coefficient ±1); None when none does."""
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error
    residual = N - A
    fitting = []
    for description, T in candidates:
        if ev.support(T) < 3 or _cosine(T, N) > 1 - 1e-9 or _cosine(T, A) > 1 - 1e-9:
            continue  # proportional to the gradient itself: a scale, not a term
        alpha = float(np.sum(residual * T) / np.sum(T * T))
        nice = nice_number(alpha)
        if nice is not None and nice != 0 and ev.fits(A + nice * T, N, E):
            fitting.append((description, nice))  # only a simple coefficient is evidence of a dropped term
    if not fitting:
        return None
    # the simplest: a term the backward names as it is (coefficient ±1) before a multiple of one
    return min(fitting, key=lambda f: abs(f[1]) != 1)


def missing_normaliser(ev: Evidence):
    """N − A = α·(Σ v)·softmax(w) along one axis of the input w itself, α = ±1: a log-softmax of a
    parameter (a mixture's weights) whose normaliser's gradient −softmax(w)·Σv is left out."""
    if ev.analytic is None or ev.values is None or ev.support() < 3 or ev.values.ndim < 1:
        return None
    totals = np.array([sum(float(np.sum(c)) for c in row) for row in ev.cotangents])
    if np.allclose(totals, 0.0):
        return None
    w = np.asarray(ev.values, dtype=float)
    for axis in range(w.ndim):
        if w.shape[axis] < 2:
            continue
        e = np.exp(w - w.max(axis=axis, keepdims=True))
        soft = e / e.sum(axis=axis, keepdims=True)
        T = totals.reshape((-1,) + (1,) * w.ndim) * soft[None]
        for alpha in (-1.0, 1.0):
            if ev.fits(ev.analytic + alpha * T, ev.numeric, ev.numeric_error) and ev.support(T) >= 3 \
                    and not ev.fits(ev.numeric, 0 * T, ev.numeric_error):
                sign = "−" if alpha < 0 else "+"
                return Finding("missing_term",
                               f"backward for input {ev.name} misses the term {sign}softmax({ev.name})·Σgrad_output "
                               f"(along dim {axis}): the gradient of a log-softmax's normaliser (numeric − analytic "
                               "fits it exactly)", input=ev.index,
                               params={"variant": "normaliser", "term": f"{sign}softmax({ev.name})·Σgrad_output",
                                       "coefficient": alpha, "dim": axis,
                                       "expression": f"{sign}softmax({ev.name})·Σgrad_output"},
                               confidence=0.8)
    return None



def _constant_along(T, axis) -> bool:
    return bool(np.allclose(T, T.mean(axis=axis, keepdims=True), rtol=1e-9, atol=1e-12 * float(np.abs(T).max() or 1)))


def missing_broadcast_term(ev: Evidence):
    """numeric − analytic the same at every position along one axis of the input, for every
    cotangent, where neither gradient is: the term of a path through a sum or mean over that axis
    in forward (squeeze-and-excitation's pooled mean) left out. Not when the gradient statement
    writes such a term (``+ grad_s[:, :, None] / L``): that term is wrong, not missing. Tried after
    every rule that names the term itself."""
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error
    if A is None or N is None or A.ndim < 3 or not np.any(A) or ev.support() < 3:
        return None
    residual = N - A
    written = _statement_terms(ev) or []
    for axis in range(1, A.ndim):  # axis 0 numbers the cotangents
        if A.shape[axis] < 3:
            continue
        spread = np.broadcast_to(residual.mean(axis=axis, keepdims=True), A.shape)
        if not ev.fits(A + spread, N, E) or _constant_along(A, axis) \
                or _cosine(spread, N) > 1 - 1e-9 or _cosine(spread, A) > 1 - 1e-9:
            continue
        if len(written) >= 2 and any(T is not None and _constant_along(T, axis) for _, T in written):
            return None
        dim = axis - 1
        return Finding("missing_term", f"backward for input {ev.name} misses a term that is the same at every "
                       f"position along dim {dim} (numeric − analytic does not change along dim {dim}, for every "
                       f"cotangent): the path through a sum or mean over dim {dim}",
                       input=ev.index, params={"variant": "broadcast", "term": f"constant along dim {dim}", "dim": dim},
                       confidence=0.7)
    return None
