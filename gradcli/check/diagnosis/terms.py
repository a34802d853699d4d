"""Formula-level patterns of one gradient: ``wrong_variable`` (a saved tensor or variable used
where another is needed), ``term_sign`` (one additive term with the wrong sign) and
``missing_term`` (a term missing or too many). Each demands a near-exact fit over at least 3
positions: merely finding that the analytic gradient is *some* simple expression is no evidence.
"""
from __future__ import annotations

import itertools

import numpy as np

from gradcli.check.diagnosis import mutations
from gradcli.check.diagnosis.evidence import Evidence, nice_number, short_number
from gradcli.check.diagnosis.fitted import constant_term_left_out, sign_of_term, term_words, written_term
from gradcli.check.diagnosis.patterns import broadcast_dims, sum_to
from gradcli.check.report import Finding

def _variables(ev: Evidence):
    """(name, values) of the inputs and the output that are shaped like this input."""
    variables = [(ev.name, ev.values)]
    for other in ev.others.values():
        if other.values is not None and other.values.shape == ev.values.shape:
            variables.append((other.name, other.values))
    if len(ev.outputs) == 1 and ev.outputs[0].shape == ev.values.shape:
        variables.append(("output", ev.outputs[0]))
    return variables


def _backward_variables(ev: Evidence):
    """The tensors backward computes or unpacks itself (``ds = s * (1 - s)``), shaped like the input
    and not among the inputs and the output: often the product rule's missing half (Swish's x·σ′)."""
    if ev.backward_names is None:
        return []
    known = _variables(ev)
    found = []
    for name, z in ev.backward_names() or []:
        if z.shape == tuple(ev.shape) and not any(np.array_equal(z, k) for _, k in known + found):
            found.append((name, z))
    return found


def _term_library(variables):
    """(description, array) for the simple terms a derivative is made of: constants, powers,
    elementary functions of one variable, their product-rule partners z·f(z), and products of
    two variables."""
    terms = [("1", np.ones(np.shape(variables[0][1])))]
    with np.errstate(all="ignore"):
        for name, z in variables:
            terms += [(name, z), (f"{name}²", z * z), (f"1/{name}", 1.0 / z), (f"1/{name}²", 1.0 / (z * z)),
                      (f"sin({name})", np.sin(z)), (f"cos({name})", np.cos(z)), (f"exp({name})", np.exp(z)),
                      (f"{name}·sin({name})", z * np.sin(z)), (f"{name}·cos({name})", z * np.cos(z)),
                      (f"{name}·exp({name})", z * np.exp(z))]
        for (n1, z1), (n2, z2) in itertools.combinations(variables, 2):
            terms.append((f"{n1}·{n2}", z1 * z2))
    return [(d, t) for d, t in terms if np.all(np.isfinite(t))]


# Local derivatives written in terms of one saved tensor z: using the wrong z (the input where
# the output is needed, as in exp, tanh or sigmoid) keeps the form and changes the tensor.
SAVED_FORMS = (("{z}", lambda z: z), ("{z}²", lambda z: z * z), ("1 − {z}²", lambda z: 1 - z * z),
               ("{z}·(1 − {z})", lambda z: z * (1 - z)), ("1/{z}", lambda z: 1 / z), ("2·{z}", lambda z: 2 * z))


def _cosine(a, b):
    # sums of products rather than np.linalg.norm: BLAS dot on these small arrays is slower under load
    na, nb = float(np.sqrt(np.sum(a * a))), float(np.sqrt(np.sum(b * b)))
    return 0.0 if na == 0 or nb == 0 else abs(float(np.sum(a * b)) / (na * nb))


def missing_term(ev: Evidence):
    """Elementwise, scalar or per-row outputs (v: grad_output broadcast): N − A = α·v·t for one simple
    term t (α < 0: a term too many) — a label-smoothed loss missing its uniform ε/C part is α·v·1."""
    if ev.analytic is None or ev.values is None or len(ev.outputs) != 1:
        return None
    out = ev.outputs[0].shape  # a loss reduced over trailing dims: a scalar, or one value per row
    scalar = np.size(ev.outputs[0]) == 1 or (0 < len(out) < len(ev.shape) and tuple(ev.shape[:len(out)]) == out)
    if not scalar and out != ev.values.shape:
        return None
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error
    kept = () if np.size(ev.outputs[0]) == 1 else out + (1,) * (len(ev.shape) - len(out))
    V = np.stack([np.broadcast_to(np.reshape(row[0], kept), ev.shape) for row in ev.cotangents])
    if ev.support() < 3:
        return None
    variables = _variables(ev) + _backward_variables(ev)
    residual = N - A
    for description, term in _term_library(variables):
        T = V * term
        if ev.support(T) < 3 or _cosine(T, N) > 1 - 1e-9 or _cosine(T, A) > 1 - 1e-9:
            continue  # a term proportional to the gradient itself is a scale, not a term
        alpha = float(np.sum(residual * T) / np.sum(T * T))
        if not ev.fits(A + alpha * T, N, E):
            continue
        nice, coefficient, text, what = term_words(alpha, description)
        if scalar and description != "1" and (nice is None or kept[1:]):  # per row: its constant part only
            # a scalar output's own values (a ratio r, a norm) are constants of every element: a
            # coefficient at no simple number times a term of the input is then any dropped term
            # of them, no evidence; the same offset at every element (the constant term) still is
            continue
        if nice == -2.0:
            if written_term(_statement_terms(ev), T):  # else twice a missing term, by chance
                return sign_of_term(ev, text[2:])
            continue
        return Finding("missing_term",
                       f"backward for input {ev.name} {what} {text} (numeric − analytic fits it exactly)",
                       input=ev.index, params={"variant": "missing", "term": description, "coefficient": coefficient,
                                               "expression": text},
                       confidence=0.85 if nice is not None else 0.75)
    return None


def _normalized(x, axis, eps):
    mean = x.mean(axis=axis, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=axis, keepdims=True) + eps)


def alignments(z, shape):
    """The ways ``z`` multiplies a tensor of ``shape``: itself when it broadcasts, and a 1-D
    per-channel parameter viewed along each axis of its size (``gamma.view(1, -1, 1)`` on
    (N, C, L), also when C = L and numpy would align it with L)."""
    found = [z] if broadcast_dims(z.shape, shape) is not None else []
    if z.ndim == 1 and len(shape) >= 2:
        for axis in range(len(shape) - 1):  # the last axis is numpy's own alignment
            if shape[axis] == z.shape[0]:
                view = [1] * len(shape)
                view[axis] = z.shape[0]
                found.append(z.reshape(view))
    return found


def _candidates(ev: Evidence, shape, out=None):
    """(name, values shaped like the output) a local derivative is written with: the inputs and
    the output of that shape, and the normalized input x̂ — from the output of an affine
    normalization ((output − b)/g for inputs g, b) or computed along one axis."""
    inputs = [(ev.name, ev.values)] + [(o.name, o.values) for o in ev.others.values() if o.values is not None]
    found = [(name, z) for name, z in inputs if z.shape == tuple(shape)]
    out = ev.outputs[0] if out is None else out
    found.append(("output", out))
    with np.errstate(all="ignore"):
        broadcastable = [(name, view) for name, z in inputs if z.shape != tuple(shape)
                         for view in alignments(z, shape)]
        for g_name, g in broadcastable:
            found.append((f"x̂ = output/{g_name}", out / g))
            for b_name, b in broadcastable:
                if b_name != g_name:
                    found.append((f"x̂ = (output − {b_name})/{g_name}", (out - b) / g))
        for name, z in inputs:
            if z.shape == tuple(shape) and z.ndim >= 1:
                for axis in range(z.ndim):
                    if z.shape[axis] > 1:
                        for eps in (0.0, 1e-5):
                            found.append((f"x̂ = {name} normalized over dim {axis}", _normalized(z, axis, eps)))
    return [(name, z) for name, z in found if np.all(np.isfinite(z))]


def wrong_variable(ev: Evidence):
    """analytic = Σ v·h(z₁) and numeric = Σ v·h(z₂) (summed down to the input's shape) for one
    local-derivative form h and two different tensors: the input where the output is needed (exp,
    tanh, sigmoid), x where x̂ is needed (a normalization's dgamma), and vice versa."""
    if ev.analytic is None or ev.values is None or len(ev.outputs) != 1 or ev.support() < 3:
        return None
    shape = ev.outputs[0].shape
    if broadcast_dims(ev.shape, shape) is None:
        return None
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error
    V = np.stack([np.reshape(row[0], shape) for row in ev.cotangents])
    candidates = _candidates(ev, shape)
    with np.errstate(all="ignore"):
        for form, h in SAVED_FORMS:
            values = []
            for name, z in candidates:
                P = V * h(z)
                if np.all(np.isfinite(P)):
                    values.append((name, np.stack([sum_to(p, ev.shape) for p in P])))
            for used, got in values:
                if not ev.fits(A, got):
                    continue
                for needed, want in values:
                    if needed != used and ev.fits(want, N, E) and not ev.fits(got, want):
                        got_text, want_text = form.format(z=used.split(" = ")[0]), form.format(z=needed.split(" = ")[0])
                        return Finding("wrong_variable",
                                       f"backward for input {ev.name} uses {used} where {needed} is needed: it "
                                       f"computes grad_output·({got_text}) instead of grad_output·({want_text})",
                                       input=ev.index, params={"used": used, "needed": needed,
                                                               "expression": f"grad_output·({got_text})",
                                                               "expected": f"grad_output·({want_text})"},
                                       confidence=0.85)
    return None


def _statement_terms(ev: Evidence):
    """[(code, values (K, *shape))] of the gradient statement's additive terms, adding up to the
    analytic gradient (one term outside the evaluator's vocabulary recovered as the residual);
    None without that evidence."""
    if ev.analytic is None or ev.backward_terms is None or ev.support() < 3:
        return None
    found = ev.backward_terms()
    if not found:
        return None
    A = ev.analytic
    try:
        terms = [(code, None if rows[0] is None else np.stack([np.broadcast_to(t, ev.shape) for t in rows]))
                 for code, rows in found]
    except ValueError:
        return None
    missing = [k for k, (_, T) in enumerate(terms) if T is None]
    known = sum((T for _, T in terms if T is not None), 0 * A)
    if missing:
        terms[missing[0]] = (terms[missing[0]][0], A - known)
    elif not ev.fits(known, A):
        return None  # the evaluation does not reproduce what backward returned: no claim
    return terms


def term_sign(ev: Evidence):
    """One additive term of the backward's gradient statement has the wrong sign: numeric =
    analytic − 2·term exactly, where the statement's terms, evaluated, add up to analytic."""
    terms = _statement_terms(ev)
    if terms is None:
        return None
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error
    for code, T in terms:
        if ev.support(T) < 3 or ev.fits(T, 0 * T):
            continue
        if ev.fits(A - 2 * T, N, E):
            return Finding("term_sign", f"backward for input {ev.name} has the wrong sign on one term: "
                           f"`{code}` (numeric = analytic − 2·that term, exactly)",
                           input=ev.index, params={"term": code}, confidence=0.9)
    return None


def term_coefficient(ev: Evidence):
    """One additive term of the gradient statement carries the wrong coefficient: numeric −
    analytic = α·T for one of the statement's own terms T (a parameter such as Swish's β dropped
    from one term, a factor 2 missing there). Tried after ``term_sign`` (α = −2) and ``scale``
    (a single term is the whole gradient); T must not be proportional to A or N."""
    terms = _statement_terms(ev)
    if terms is None or len(terms) < 2:
        return None
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error
    residual = N - A
    # single terms, then pairs: a distributed product (x·s·(1 − s) = x·s − x·s²) splits one
    # written term in two
    pairs = [(f"{c1} + {c2}".replace("+ -", "- "), T1 + T2)
             for (c1, T1), (c2, T2) in itertools.combinations(terms, 2)] if len(terms) > 2 else []
    for code, T in terms + pairs:
        if ev.support(T) < 3 or _cosine(T, N) > 1 - 1e-9 or _cosine(T, A) > 1 - 1e-9:
            continue
        alpha = float(np.sum(residual * T) / np.sum(T * T))
        if alpha == 0 or not ev.fits(A + alpha * T, N, E):
            continue
        nice = nice_number(alpha)
        if nice == -2.0:
            # factor −1 on a written term that the distribution split in two: its sign is wrong. The
            # edit that negates it names the term as written; else the pair is the term
            edited = mutations.statement_edit(ev, kinds=("sign",))
            return edited if edited is not None else Finding(
                "term_sign", f"backward for input {ev.name} has the wrong sign on one term: `{code}` (numeric = "
                f"analytic − 2·that term, exactly)", input=ev.index, params={"term": code}, confidence=0.9)
        if nice is None and not _a_parameters_value(ev, 1 + alpha):
            # a coefficient at no simple number is what one tensor read for another leaves too
            # (y² for t² where y = t / tanh(drive)): an exact edit of that tensor is the simpler story
            # — unless the factor is a scalar parameter's value (β dropped from one term: that says it)
            edited = mutations.statement_edit(ev, kinds=("variable", "every"))
            if edited is not None:
                return edited
        coefficient = nice if nice is not None else float(f"{alpha:.6g}")
        # 1 + α from the simple α (nice_number never names 0: α = −1 is an extra term)
        factor = 1 + nice if nice is not None else (nice_number(1 + alpha) or float(f"{1 + alpha:.6g}"))
        what = (f"has an extra term `{code}` (numeric = analytic − that term, exactly)" if factor == 0 else
                f"has the wrong coefficient on one term: `{code}` needs a factor {short_number(factor)} (numeric − "
                f"analytic = {short_number(coefficient)}·that term, exactly) — a parameter or constant missing there")
        return Finding("missing_term", f"backward for input {ev.name} {what}",
                       input=ev.index, params={"variant": "coefficient", "term": code, "coefficient": coefficient,
                                               "factor": factor,
                                               "expression": f"{short_number(coefficient)}·({code})"},
                       confidence=0.85 if nice is not None else 0.75)
    return None


def _a_parameters_value(ev: Evidence, factor: float) -> bool:
    """Whether ``factor`` (or its inverse) is the value of a one-element input: a parameter left out."""
    for other in [ev] + list(ev.others.values()):
        if other.values is not None and np.size(other.values) == 1:
            value = float(np.ravel(other.values)[0])
            if value and any(abs(f - value) <= 1e-6 * abs(value) for f in (factor, 1 / factor if factor else 0.0)):
                return True
    return False


# elementwise functions a derivative is written with: using z where f(z) is needed (the logits
# where their sigmoid is, log-probabilities where probabilities are) keeps the formula's shape
VARIABLE_FUNCTIONS = (("{z}", lambda z: z), ("exp({z})", np.exp), ("sigmoid({z})", lambda z: 1 / (1 + np.exp(-z))),
                      ("tanh({z})", np.tanh))


def statement_variable(ev: Evidence):
    """The gradient statement evaluated as written reproduces A, and with one of the tensors it
    reads (a saved tensor, a name assigned in backward) replaced by another — an input, the
    output, or exp/sigmoid/tanh of one — it reproduces N exactly: that tensor is the wrong one."""
    if ev.analytic is None or ev.values is None or ev.substitutions is None or ev.support() < 3:
        return None
    found = ev.substitutions()
    if not found:
        return None
    names, evaluate = found
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error

    def stacked(rows):
        try:
            return None if rows is None else np.stack([np.broadcast_to(r, ev.shape) for r in rows])
        except ValueError:
            return None

    written = stacked(evaluate())
    if written is None or not ev.fits(written, A) or ev.fits(A, N, E) or constant_term_left_out(ev):
        return None
    variables = [(ev.name, ev.values)] + [(o.name, o.values) for o in ev.others.values() if o.values is not None]
    if len(ev.outputs) == 1:
        variables.append(("output", ev.outputs[0]))
    with np.errstate(all="ignore"):
        candidates = [(form.format(z=label), f(z)) for label, z in variables for form, f in VARIABLE_FUNCTIONS]
        for name in names:
            for label, value in candidates:
                if not np.all(np.isfinite(value)):
                    continue
                changed = stacked(evaluate(name, value))
                if changed is None or ev.fits(changed, A) or not ev.fits(changed, N, E):
                    continue
                return Finding("wrong_variable",
                               f"backward for input {ev.name} uses `{name}` where {label} is needed: with {label} in "
                               "its place the gradient statement is right, exactly",
                               input=ev.index, params={"used": name, "needed": label,
                                                       "expression": name, "expected": label},
                               confidence=0.8)
    return None


def _scales(ev: Evidence, candidates, shape):
    """(name, s) divisors a normalization's backward uses: 1, and the standard deviation of an
    input along one axis — derived exactly as (x − mean)/x̂ from an x̂ candidate, or computed
    with a usual eps."""
    found = [("", None)]
    inputs = [(ev.name, ev.values)] + [(o.name, o.values) for o in ev.others.values() if o.values is not None]
    with np.errstate(all="ignore"):
        for name, x in inputs:
            if x.shape != tuple(shape):
                continue
            for axis in range(x.ndim):
                if x.shape[axis] < 2:
                    continue
                centred = x - x.mean(axis=axis, keepdims=True)
                for xhat_name, xhat in candidates:
                    if xhat_name.startswith("x̂ = (") or xhat_name.startswith("x̂ = output/"):
                        s = centred / xhat
                        if np.all(np.isfinite(s)) and np.allclose(s, s.mean(axis=axis, keepdims=True), rtol=1e-9):
                            found.append((f"std_{axis}({name})", s))
                for eps in (0.0, 1e-5, 1e-6, 1e-8):
                    std = np.sqrt((centred ** 2).mean(axis=axis, keepdims=True) + eps)
                    rms = np.sqrt((x ** 2).mean(axis=axis, keepdims=True) + eps)
                    found += [(f"std_{axis}({name})", std), (f"rms_{axis}({name})", rms),
                              (f"rms_{axis}({name})³", rms ** 3)]
    return found


def missing_reduction_term(ev: Evidence):
    """Same-shaped input and output (a normalization, a softmax): numeric − analytic =
    α·a·mean_d(v·b)/s for tensors a, b among the inputs, the output and x̂ (or 1), one axis d and
    a divisor s (1 or a standard deviation): the backward misses one reduction term, as a LayerNorm
    backward missing its −x̂·mean(g·x̂)/σ."""
    if ev.analytic is None or ev.values is None or not ev.outputs or ev.support() < 3:
        return None
    for k, out in enumerate(ev.outputs):
        # with several outputs, the term may read any one output's cotangent (a (mean, centred)
        # pair missing −mean(grad_centred))
        if out.shape == tuple(ev.shape) and out.ndim >= 1 and (len(ev.outputs) == 1 or len(ev.cotangents[0]) > k):
            found = _reduction_term(ev, k, out)
            if found is not None:
                return found
    return None


def _reduction_term(ev: Evidence, k, out):
    shape = out.shape
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error
    V = np.stack([np.reshape(row[k], shape) for row in ev.cotangents])
    candidates = _candidates(ev, shape, out)[:10]
    with np.errstate(all="ignore"):
        tensors = [("", np.ones(shape))] + candidates + [("exp(output)", np.exp(out))]  # a log-softmax's softmax
    tensors = [(name, z) for name, z in tensors if np.all(np.isfinite(z))]
    # a factor may carry a per-channel input (a norm's γ: −γ·x̂·mean(g·x̂)/σ, or −x̂·mean(g·γ·x̂)/σ)
    weights = [(o.name, view) for o in ev.others.values() if o.values is not None
               and o.values.shape != shape and o.values.ndim >= 1 for view in alignments(o.values, shape)]
    outer = tensors + [(f"{w_name}·{a_name}" if a_name else w_name, w * a)
                       for w_name, w in weights for a_name, a in tensors]
    inner = tensors + [(f"{w_name}·{b_name}" if b_name else w_name, w * b)
                       for w_name, w in weights for b_name, b in tensors[:1] + candidates]
    residual = N - A
    cotangent = "grad_output" if len(ev.outputs) == 1 else f"grad_output[{k}]"
    with np.errstate(all="ignore"):
        for axis in range(len(shape)):
            if shape[axis] < 2:
                continue
            for scale_name, s in _scales(ev, candidates, shape):
                for b_name, b in inner:
                    reduced = (V * b).mean(axis=axis + 1, keepdims=True)
                    for a_name, a in outer:
                        T = a * reduced if s is None else a * reduced / s
                        # cheap screen first: the residual must be collinear with the term
                        if _cosine(residual, T) < 1 - 1e-8 or not np.all(np.isfinite(T)) or ev.support(T) < 3:
                            continue
                        if _cosine(T, N) > 1 - 1e-9 or _cosine(T, A) > 1 - 1e-9:
                            continue
                        alpha = float(np.sum(residual * T) / np.sum(T * T))
                        if not ev.fits(A + alpha * T, N, E):
                            continue
                        nice = nice_number(alpha)
                        coefficient = nice if nice is not None else float(f"{alpha:.6g}")
                        inside = cotangent + (f"·{b_name.split(' = ')[0]}" if b_name else "")
                        text = (f"{short_number(abs(coefficient))}·" if abs(coefficient) != 1 else "") + (
                            f"{a_name.split(' = ')[0]}·" if a_name else "") + f"mean_{axis}({inside})" + (
                            f"/{scale_name}" if scale_name else "")
                        sign = "" if coefficient > 0 else "−"
                        return Finding("missing_term",
                                       f"backward for input {ev.name} misses the term {sign}{text} (numeric − "
                                       "analytic fits it exactly)", input=ev.index,
                                       params={"variant": "reduction", "term": text, "coefficient": coefficient,
                                               "dim": axis, "expression": sign + text},
                                       confidence=0.8 if nice is not None else 0.7)
    return None
