"""Whole-gradient patterns: zero, ignores_grad_output, scale/sign, swapped, transposed,
not_reduced (the formula-level ones, missing_term, term_sign and wrong_variable, are in
``terms``). Each takes an ``Evidence`` and returns a ``Finding`` (without its hint)
or None; every rule demands a near-exact fit (``Evidence.fits``), so a pattern is named only when
the numbers leave no doubt.
"""
from __future__ import annotations

import itertools

import re

import numpy as np

from gradcli.check.diagnosis.evidence import FIT, RHO, TINY, Evidence, nice_number, short_number
from gradcli.check.report import Finding


def _shape_text(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def zero(ev: Evidence):
    """The gradient is None or identically zero while the function depends on the input."""
    if ev.numeric is None or ev.support() == 0:
        return None  # f does not depend on the input here: a zero gradient is right
    if ev.raw is not None and any(np.any(r != 0) for r in ev.raw):
        return None  # the user's backward did return a gradient: whatever lost it, it was not backward
    if ev.returned_count is not None:
        returned, expected = ev.returned_count
        return Finding("zero", f"backward returns no gradient for input {ev.name} ({returned} gradient"
                       f"{'s' if returned != 1 else ''} for {expected} inputs), but the function depends on it",
                       input=ev.index, params={"returned": "missing", "count": returned, "expected": expected},
                       confidence=0.98)
    if ev.returned_none or ev.analytic is None:
        if not ev.returned_none:
            return None
        return Finding("zero", f"backward returns None for input {ev.name}, but the function depends on it",
                       input=ev.index, params={"returned": "None"}, confidence=0.98)
    if ev.fits(ev.analytic, 0.0 * ev.analytic):
        masks = ev.empty_masks() if ev.empty_masks is not None else []
        if masks:
            # zero only because a mask of backward's own selects nothing here (an active set
            # tested without its margin): the mask's condition is the mistake, a region's story
            name, line, code = masks[0]
            if _never_true(code):  # `(x < -3) & (x > 3)`: zero whatever the input, not a threshold
                return Finding("zero", f"backward's gradient for input {ev.name} is all zeros: its mask `{name}` "
                               f"can never be true (`{code}`)", input=ev.index,
                               params={"returned": "zeros", "mask": name, "at_line": line, "statement": code},
                               confidence=0.95)
            wrong = ev.wrong()
            count, total = int(wrong.sum()), int(wrong.size)
            return Finding("region", f"backward for input {ev.name} is zero everywhere because its mask `{name}` is "
                           f"false at every element, where the true gradient is not zero at {count} of {total}: "
                           "the mask's condition is wrong", input=ev.index,
                           params={"description": f"the mask `{name}`", "mask": name, "empty": True,
                                   "count": count, "total": total, "at_line": line, "statement": code},
                           confidence=0.85)
        return Finding("zero", f"backward's gradient for input {ev.name} is all zeros, but the function depends on it",
                       input=ev.index, params={"returned": "zeros"}, confidence=0.97)
    return None


def _never_true(code) -> bool:
    """``m = (x < a) & (x > b)`` with a ≤ b (either order, ``<=``/``>=`` too): one operand bounded
    from both sides by an empty interval."""
    import ast

    try:
        value = ast.parse(code.strip()).body[0].value
    except (SyntaxError, IndexError, AttributeError):
        return False
    if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitAnd)):
        return False
    bounds = {}
    for side in (value.left, value.right):
        if not (isinstance(side, ast.Compare) and len(side.ops) == 1):
            return False
        op, bound = type(side.ops[0]), side.comparators[0]
        if isinstance(bound, ast.UnaryOp) and isinstance(bound.op, ast.USub) and isinstance(bound.operand, ast.Constant):
            bound = -bound.operand.value
        elif isinstance(bound, ast.Constant):
            bound = bound.value
        else:
            return False
        if not isinstance(bound, (int, float)):
            return False
        key = "below" if op in (ast.Lt, ast.LtE) else "above" if op in (ast.Gt, ast.GtE) else None
        if key is None:
            return False
        bounds.setdefault(ast.dump(side.left), {})[key] = (bound, op in (ast.LtE, ast.GtE))
    if len(bounds) != 1:
        return False
    (limits,) = bounds.values()
    if set(limits) != {"below", "above"}:
        return False
    (hi, hi_closed), (lo, lo_closed) = limits["below"], limits["above"]
    return hi < lo or (hi == lo and not (hi_closed and lo_closed))


def precision(ev: Evidence):
    """A float64 input whose backward agrees with the numeric derivative to float32's precision and
    no better, at every element: something computes in float32 (or with a constant rounded to a few
    digits). Not a wrong formula: a wrong formula misses by far more than float32's precision."""
    if ev.analytic is None or ev.numeric is None or ev.dtype != "float64":
        return None
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error
    if ev.fits(A, N, E):
        return None
    rho = RHO["float32"]
    loose = 4.0 * np.abs(E) + rho * (np.abs(A) + np.abs(N)) + rho * 1e-3 * ev.scale + TINY
    with np.errstate(invalid="ignore"):
        if not bool(np.all(np.abs(A - N) <= FIT * loose)):
            return None
    return Finding("precision", f"backward for input {ev.name} agrees with the numeric derivative to float32's "
                   "precision and no better: not a wrong formula, but something in forward or backward computes in "
                   "float32 (or uses a constant rounded to a few digits)",
                   input=ev.index, params={"dtype": "float32"}, confidence=0.7)


def scale(ev: Evidence):
    """analytic = c · numeric for one constant c (least squares), reported only on a near-exact fit.
    With fewer than 3 independent numbers carrying signal (positions × independent cotangents) any
    two numbers are proportional, so there a factor is named only when it is a simple fraction
    (2, ½, −1, 3, ...)."""
    if ev.analytic is None:
        return None
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error
    denominator = float(np.sum(N * N))
    if denominator == 0.0:
        return None
    c = float(np.sum(A * N)) / denominator
    if not ev.fits(A, c * N, abs(c) * E) or ev.fits(A, N, E):
        return None
    nice = nice_number(c)
    support = ev.constraints()
    if nice is None and support < 3:
        return None
    factor = nice if nice is not None else float(f"{c:.6g}")
    if factor == 0.0 or not 1e-6 < abs(factor) < 1e6:
        return None  # a factor of 1e-17 is rounding noise against the gradient: no count or constant
    confidence = 0.95 if support >= 3 else 0.7
    params = {"factor": factor}
    if factor == -1.0:
        return Finding("sign", f"backward has the wrong sign for input {ev.name} (factor −1)",
                       input=ev.index, params=params, confidence=confidence)
    size = abs(factor)
    times = short_number(size) if size > 1 else short_number(1 / size)
    times = f"{times}×" if re.fullmatch(r"[\d./]+", times) else f"{times} times"  # "4/π times", "ln 10 times"
    how = f"{times} too large" if size > 1 else f"{times} too small"
    sign = "has the wrong sign and " if factor < 0 else ""
    return Finding("scale", f"backward {sign}is {how} for input {ev.name} (factor {short_number(factor)})",
                   input=ev.index, params=params, confidence=confidence)


def swapped_mutually(ev: Evidence):
    """Two inputs given each other's gradient (A_i = N_j and A_j = N_i): tried before ``scale`` —
    an exchange explains both at once, where two factors (7/3 and 3/7 for a mixup's weights
    exchanged) would be two coincidences."""
    found = swapped(ev)
    return found if found is not None and found.params["mutual"] else None


def swapped(ev: Evidence):
    """Input i's gradient equals input j's numeric gradient (for every cotangent)."""
    N = ev.numeric
    for j, other in sorted(ev.others.items()):
        if other.numeric is None:
            continue
        candidate = None
        if ev.analytic is not None and other.numeric.shape == ev.analytic.shape:
            candidate = ev.analytic
        elif ev.raw is not None and all(r is not None for r in ev.raw):
            raw = np.stack(ev.raw)
            if raw.shape == other.numeric.shape:
                candidate = raw
        if candidate is None:
            continue
        if not ev.fits(candidate, other.numeric, other.numeric_error):
            continue
        if N.shape == other.numeric.shape and ev.fits(N, other.numeric, ev.numeric_error + other.numeric_error):
            continue  # both inputs have the same true gradient: a swap would be invisible
        mutual = other.analytic is not None and other.analytic.shape == N.shape and ev.fits(
            other.analytic, N, ev.numeric_error)
        if not mutual and other.analytic is not None and other.analytic.shape == other.numeric.shape \
                and ev.fits(other.analytic, other.numeric, other.numeric_error):
            continue  # the other input's right gradient copied here: one variable read for another, not a swap
        return Finding("swapped",
                       f"backward returns input {other.name}'s gradient in the place of input {ev.name}'s",
                       input=ev.index, params={"other_input": int(j), "other_name": other.name, "mutual": mutual},
                       confidence=0.98 if mutual else 0.95)
    return None


def _non_identity_permutations(ndim):
    for perm in itertools.permutations(range(ndim)):
        if perm != tuple(range(ndim)):
            yield perm


def transposed(ev: Evidence):
    """The gradient matches the numeric one transposed (square case) or, for a gradient returned
    with the wrong shape, the numeric one after a permutation of axes or a reshape."""
    N, E, shape = ev.numeric, ev.numeric_error, ev.shape
    if ev.analytic is not None and len(shape) >= 2:
        for perm in _non_identity_permutations(len(shape)):
            if tuple(shape[p] for p in perm) != tuple(shape):
                continue
            axes = (0,) + tuple(p + 1 for p in perm)
            NT, ET = np.transpose(N, axes), np.transpose(E, axes)
            if ev.fits(NT, N, E + ET):
                continue  # symmetric: a transpose changes nothing
            if ev.fits(ev.analytic, NT, ET):
                edited = ev.rewrites() if getattr(ev, "rewrites", None) is not None else None
                if edited is not None and edited.kind == "wrong_axis":
                    return edited  # `scatter_(0, …)` on a square input: the dim, not a transpose of the result
                return _transposed_finding(ev, {"permutation": list(perm)})
    operand = _transposed_operand(ev)
    if operand is not None:
        return operand
    if ev.raw is None or any(r is None for r in ev.raw):
        return None
    raw = np.stack(ev.raw)
    got = raw.shape[1:]
    if got == tuple(shape) or raw[0].size != int(np.prod(shape, dtype=int)):
        return None
    if len(got) == len(shape):
        for perm in _non_identity_permutations(len(shape)):
            if tuple(got[p] for p in perm) == tuple(shape):
                axes = (0,) + tuple(p + 1 for p in perm)
                if ev.fits(np.transpose(raw, axes), N, E):
                    return _transposed_finding(ev, {"permutation": list(perm), "returned_shape": list(got)})
    for order in ("C", "F"):
        reshaped = np.stack([np.reshape(r, shape, order=order) for r in raw])
        if ev.fits(reshaped, N, E):
            if order == "C":
                # the values are right in forward's own order: only the reshape back is missing (a
                # flattened gradient returned flat), no axis is transposed
                return Finding("missing_reshape", f"backward's gradient for input {ev.name} has the right values "
                               f"in the right order but shape {_shape_text(got)}: reshape it to {_shape_text(shape)}",
                               input=ev.index, params={"side": "result", "reshape": "C", "returned_shape": list(got)},
                               confidence=0.95)
            return _transposed_finding(ev, {"reshape": order, "returned_shape": list(got)})
    return None


# (right, buggy) matrix-product forms of a gradient, as text and as a function of (v, z).
_PRODUCT_FORMS = (
    ("grad_output @ {z}.T", lambda v, z: v @ z.T, "grad_output @ {z}", lambda v, z: v @ z),
    ("grad_output @ {z}", lambda v, z: v @ z, "grad_output @ {z}.T", lambda v, z: v @ z.T),
    ("{z}.T @ grad_output", lambda v, z: z.T @ v, "{z} @ grad_output", lambda v, z: z @ v),
    ("{z} @ grad_output", lambda v, z: z @ v, "{z}.T @ grad_output", lambda v, z: z.T @ v),
)


def _transposed_operand(ev: Evidence):
    """A matrix-product backward that uses an operand where its transpose is needed (the
    classic missing ``.T`` of a linear layer): numeric = v @ zᵀ exactly while analytic = v @ z."""
    if ev.analytic is None or len(ev.shape) != 2 or len(ev.outputs) != 1 or ev.outputs[0].ndim != 2:
        return None
    V = [np.reshape(row[0], ev.outputs[0].shape) for row in ev.cotangents]
    if len(V) != ev.analytic.shape[0]:
        return None
    for other in ev.others.values():
        z = other.values
        if z is None or z.ndim != 2 or z.shape[0] != z.shape[1]:
            continue
        for right_text, right, wrong_text, wrong in _PRODUCT_FORMS:
            try:
                R = np.stack([right(v, z) for v in V])
                W = np.stack([wrong(v, z) for v in V])
            except ValueError:
                continue  # shapes do not chain
            if R.shape != ev.analytic.shape or ev.fits(R, W):
                continue
            if ev.fits(R, ev.numeric, ev.numeric_error) and ev.fits(ev.analytic, W):
                return _transposed_finding(ev, {"operand": other.name, "expected": right_text.format(z=other.name),
                                                "got": wrong_text.format(z=other.name)})
    return None


def _transposed_finding(ev, params):
    if "operand" in params:
        message = (f"backward's gradient for input {ev.name} uses {params['operand']} where its transpose is "
                   f"needed: it computes {params['got']} instead of {params['expected']}")
    elif "reshape" in params:
        message = (f"backward's gradient for input {ev.name} has the right values but shape "
                   f"{_shape_text(params['returned_shape'])}: reshape it to {_shape_text(ev.shape)}")
    elif len(ev.shape) == 2:
        message = f"backward's gradient for input {ev.name} is transposed"
    else:
        perm = params["permutation"]
        if any(perm[perm[i]] != i for i in range(len(perm))):
            # a cycle of three or more axes is no transpose the wrong way: the gradient was formed
            # in another axis order (r, p, q) and reshaped to the input's without the permute back
            return Finding("missing_reshape", f"backward's gradient for input {ev.name} has the right values with "
                           f"its axes in another order (permuted by {tuple(perm)}): a permute back to the input's "
                           "axis order is missing before the reshape", input=ev.index,
                           params={**params, "side": "result"}, confidence=0.9)
        message = f"backward's gradient for input {ev.name} has its axes permuted ({tuple(perm)})"
    return Finding("transposed", message, input=ev.index, params=params, confidence=0.95)


def broadcast_dims(shape, full_shape):
    """Dims of ``full_shape`` over which a gradient must be summed to get ``shape``; None if
    ``shape`` does not broadcast to ``full_shape``."""
    shape, full_shape = tuple(shape), tuple(full_shape)
    if len(shape) > len(full_shape):
        return None
    lead = len(full_shape) - len(shape)
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == full_shape[lead + i]:
            continue
        if s != 1:
            return None
        dims.append(lead + i)
    return dims


def sum_to(array, shape):
    """Sum a broadcast-shaped array down to ``shape`` (as the engines do)."""
    dims = broadcast_dims(shape, array.shape)
    return np.sum(array, axis=tuple(dims), keepdims=True).reshape(shape)


def not_reduced_shape(ev: Evidence):
    """The backward returned the broadcast-shaped gradient and summing it down (what the engines
    do silently) gives the right values. Tried before ``swapped``: the unreduced gradient of a bias
    often equals another input's gradient (y = x + b), and the shape says which story is true."""
    finding = not_reduced(ev, values_only=False)
    return finding if finding is not None and finding.params.get("values_ok_once_summed") else None


def _summed_over_extra_dims(ev: Evidence):
    """(dims, shape) when the raw gradient has more dims than the input, dropping some of them
    leaves the input's shape, and summing over those gives the numeric gradient: a bias used as
    ``bias[:, None]`` whose gradient was summed over the batch but not over the positions."""
    got = ev.raw[0].shape
    extra = len(got) - len(ev.shape)
    if extra <= 0 or ev.numeric is None or any(r.shape != got for r in ev.raw):
        return None
    for dims in itertools.combinations(range(len(got)), extra):
        if tuple(s for d, s in enumerate(got) if d not in dims) != tuple(ev.shape):
            continue
        summed = np.stack([np.sum(r, axis=dims).reshape(ev.shape) for r in ev.raw])
        if ev.fits(summed, ev.numeric, ev.numeric_error) and not ev.fits(summed, 0 * summed):
            return list(dims), got
    return None


def not_reduced(ev: Evidence, values_only: bool = True):
    """The backward returned the broadcast-shaped gradient (the engine refused it or summed it
    down), or its values are one slice of the unreduced gradient instead of the sum."""
    if ev.raw is not None and all(r is not None for r in ev.raw):
        got = ev.raw[0].shape
        dims = broadcast_dims(ev.shape, got) if got != tuple(ev.shape) else None
        if dims:
            summed = np.stack([sum_to(r, ev.shape) for r in ev.raw])
            values_ok = ev.numeric is None or ev.fits(summed, ev.numeric, ev.numeric_error)
            return Finding("not_reduced",
                           f"backward returns input {ev.name}'s gradient with the broadcast shape {_shape_text(got)} "
                           f"instead of {_shape_text(ev.shape)}: it is not summed over dim "
                           f"{', '.join(map(str, dims))}" + ("" if values_ok else " (and still wrong once summed)"),
                           input=ev.index,
                           params={"dims": dims, "returned_shape": list(got), "expected_shape": list(ev.shape),
                                   "values_ok_once_summed": values_ok},
                           confidence=0.97 if values_ok else 0.85)
        summed = _summed_over_extra_dims(ev)
        if summed is not None:
            dims, got = summed
            return Finding("not_reduced",
                           f"backward returns input {ev.name}'s gradient with shape {_shape_text(got)} instead of "
                           f"{_shape_text(ev.shape)}: summed over dim {', '.join(map(str, dims))} it is right",
                           input=ev.index,
                           params={"dims": dims, "returned_shape": list(got), "expected_shape": list(ev.shape),
                                   "values_ok_once_summed": True}, confidence=0.9)
    analytic = ev.analytic
    if analytic is None and ev.raw is not None and all(
            r is not None and r.size == int(np.prod(ev.shape, dtype=int)) for r in ev.raw):
        # e.g. grad[0] of shape (4,) for a (1, 4) bias: refused by the engine, same elements
        analytic = np.stack([np.reshape(r, ev.shape) for r in ev.raw])
    if analytic is None or ev.unreduced is None:
        return None
    unreduced = ev.unreduced()
    if unreduced is None:
        return None
    U, UE, full = unreduced
    dims = broadcast_dims(ev.shape, full)
    if not dims:
        return None
    for taken in (0, -1):
        index = tuple(taken if d in dims else slice(None) for d in range(len(full)))
        sliced = np.stack([np.reshape(u[index], ev.shape) for u in U])
        sliced_error = np.stack([np.reshape(e[index], ev.shape) for e in UE])
        if ev.fits(analytic, sliced, sliced_error) and not ev.fits(sliced, ev.numeric, ev.numeric_error + sliced_error):
            which = "first" if taken == 0 else "last"
            return Finding("not_reduced",
                           f"backward's gradient for input {ev.name} is the {which} slice of the broadcast gradient "
                           f"{_shape_text(full)} instead of its sum over dim {', '.join(map(str, dims))}",
                           input=ev.index, params={"dims": dims, "taken": which, "broadcast_shape": list(full),
                                                   "expected_shape": list(ev.shape)},
                           confidence=0.85)
    return None
