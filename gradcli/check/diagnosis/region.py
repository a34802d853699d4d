"""Partial failures: ``kink`` (the wrong elements sit where one-sided derivatives differ: not a bug)
and ``region`` (the wrong elements are exactly a simple set: x < 0, the diagonal, the first row...).

A region is named only when a predicate reproduces the set of wrong elements *exactly* on every
element that carries information; thresholds are reported at a simple number (0, 1, ½, ...) when
one separates the two sets, and merely approximate ones need at least two elements on each side.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from gradcli.check.diagnosis.evidence import Evidence, nice_number, short_number
from gradcli.check.report import Finding

# Thresholds tried in this order: the first that separates wrong from right elements is reported.
NICE_THRESHOLDS = (0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0) + tuple(
    float(v) for k in range(3, 11) for v in (k, -k)) + (0.25, -0.25, 0.1, -0.1, 1.5, -1.5, 2.5, -2.5)
KINK_GAP = 1e-4  # relative gap between one-sided derivatives that counts as a kink
MIN_LONE_SPLIT = 5  # informative elements a 1-vs-rest split needs to be evidence of a region
# informative elements a 1-vs-rest split by a value needs (the lone one is an extreme by chance 2/n)
MIN_LONE_VALUE_SPLIT = 8
MIN_SPLITS = 40  # C(n, k) an approximate threshold needs: a chance separation has probability 2/C(n, k) ≤ 5 %
KINK_SAMPLE = 8  # wrong elements whose one-sided derivatives are computed before all of them


def kink(ev: Evidence):
    """Every wrong element sits at a kink and the backward's value there lies between the
    one-sided derivatives: not a bug, the point is just not differentiable."""
    wrong = ev.wrong()
    if wrong is None or not wrong.any():
        return None
    left = right = None
    if ev.left is not None and ev.right is not None:
        left, right = ev.left, ev.right
    elif ev.one_sided is not None:
        positions = np.flatnonzero(wrong)
        # a few wrong elements first: most failures are not at kinks, and that is cheap to see
        sided = ev.one_sided(positions[:KINK_SAMPLE])
        if sided is not None and not _at_kink(ev, *sided).ravel()[positions[:KINK_SAMPLE]].all():
            return None
        if sided is not None and positions.size > KINK_SAMPLE:
            sided = ev.one_sided(positions)
        if sided is not None:
            left, right = sided
    if left is not None:
        at_kink = _at_kink(ev, left, right)
    elif ev.kink_mask is not None:
        at_kink = np.asarray(ev.kink_mask, dtype=bool)
    else:
        return None
    if not np.all(at_kink[wrong]):
        return None
    confidence = 0.8
    params = {"count": int(wrong.sum())}
    if left is not None:
        lo, hi = np.minimum(left, right), np.maximum(left, right)
        slack = 1e-6 * np.maximum(np.abs(lo), np.abs(hi)) + 1e-8 * ev.scale
        rows = ev.wrong_rows()
        A = ev.analytic
        if not np.all(((A >= lo - slack) & (A <= hi + slack))[rows]):
            return None  # outside both one-sided derivatives: a genuine error at the kink
        k, *first = np.argwhere(rows)[0]
        params.update(left=float(left[(k, *first)]), right=float(right[(k, *first)]))
        confidence = 0.9
    elements = [[int(i) for i in idx] for idx in np.argwhere(wrong)[:5]]
    params["elements"] = elements
    where = f"element {elements[0]}" if len(elements) == 1 else f"{params['count']} elements (first {elements[0]})"
    sides = f" (left {params['left']:.4g}, right {params['right']:.4g})" if "left" in params else ""
    return Finding("kink",
                   f"not a bug: input {ev.name} sits at a kink at {where}, where the one-sided derivatives "
                   f"differ{sides}; the backward's value lies between them",
                   input=ev.index, params=params, confidence=confidence)


def _at_kink(ev, left, right):
    """Positions where the one-sided derivatives differ for some cotangent (NaN: not computed)."""
    with np.errstate(invalid="ignore"):
        gap = np.abs(right - left)
        return (gap > KINK_GAP * np.maximum(np.abs(left), np.abs(right)) + 1e-8 * ev.scale).any(axis=0)


def _positional(shape):
    size = int(np.prod(shape, dtype=int))
    if size < 2:
        return []
    idx = np.indices(shape)
    preds = []
    if len(shape) == 2 and min(shape) > 1:
        i, j = idx
        preds += [("the diagonal", i == j), ("off the diagonal", i != j), ("above the diagonal", i < j),
                  ("below the diagonal", i > j), ("on and above the diagonal", i <= j),
                  ("on and below the diagonal", i >= j)]
    if len(shape) >= 2 and shape[0] > 1:
        preds += [("the first row", idx[0] == 0), ("the last row", idx[0] == shape[0] - 1)]
    if len(shape) >= 2 and shape[-1] > 1:
        preds += [("the first column", idx[-1] == 0), ("the last column", idx[-1] == shape[-1] - 1)]
    for d, n in enumerate(shape):
        # a padding or boundary handled wrongly: the two ends of one axis (a replicate pad's
        # gradient cropped away instead of folded back), or one end of a middle axis
        axis = "" if len(shape) == 1 else f" along dim {d}"
        if n > 3:  # (of three, the two ends are most of the axis: no evidence of a boundary)
            preds.append((f"the first and last positions{axis} (the edges)", (idx[d] == 0) | (idx[d] == n - 1)))
        if 0 < d < len(shape) - 1 and n > 1:
            preds += [(f"the first position{axis}", idx[d] == 0), (f"the last position{axis}", idx[d] == n - 1)]
    flat = np.arange(size).reshape(shape)
    preds += [("the first element", flat == 0), ("the last element", flat == size - 1)]
    return preds


def _threshold(lo, hi, include_lo):
    """A simple t with lo < t ≤ hi (or lo ≤ t < hi): (t, is_nice), or None."""
    inside = (lambda t: lo <= t < hi) if include_lo else (lambda t: lo < t <= hi)
    for t in NICE_THRESHOLDS:
        if inside(t):
            return t, True
    middle = float(f"{(lo + hi) / 2:.2g}")
    return ((middle, False) if inside(middle) else None)


def _value_predicates(name, z, wrong, info):
    """Descriptions of ``wrong`` as a threshold on z (or |z|) over the informative elements."""
    zi, wi = z[info], wrong[info]
    found = []
    for label, values in ((name, zi), (f"|{name}|", np.abs(zi))):
        if label.startswith("|") and np.all(zi >= 0):
            continue  # |z| = z: already tried
        # wrong where value < t: every wrong value below every right one
        if values[wi].max() < values[~wi].min():
            t = _threshold(values[wi].max(), values[~wi].min(), include_lo=False)
            if t:
                found.append((f"{label} < {short_number(t[0]) if t[1] else t[0]}", t[1]))
        if values[wi].min() > values[~wi].max():
            t = _threshold(values[~wi].max(), values[wi].min(), include_lo=True)
            if t:
                found.append((f"{label} > {short_number(t[0]) if t[1] else t[0]}", t[1]))
    return found


def _within(ev: Evidence, region):
    """What the backward does inside the region: gives 0, or a scaled value."""
    A, N = ev.analytic[:, region], ev.numeric[:, region]
    if ev.fits(A, 0 * A):
        return {"within": "zero"}, "gives 0 there"
    denominator = float(np.sum(N * N))
    if denominator > 0:
        c = float(np.sum(A * N)) / denominator
        if ev.fits(A, c * N, abs(c) * ev.numeric_error[:, region]):
            nice = nice_number(c)
            factor = nice if nice is not None else float(f"{c:.6g}")
            if factor == -1:
                return {"within": "sign"}, "has the wrong sign there"
            return {"within": "scale", "factor": factor}, f"is off by a factor {short_number(factor)} there"
    return {"within": "wrong"}, ""


def region(ev: Evidence):
    """The wrong elements are exactly those of a simple region of the input."""
    wrong = ev.wrong()
    if wrong is None or ev.numeric is None:
        return None
    info = ev.informative()
    wi = wrong[info]
    if wi.all() or not wi.any():
        return None
    n_wrong, n_right = int(wi.sum()), int((~wi).sum())
    if min(n_wrong, n_right) < 2 and n_wrong + n_right < MIN_LONE_SPLIT:
        # one element alone on a side among so few informative ones is no evidence of any region:
        # three values split 2:1 at an extreme (or along a diagonal) by chance most of the time
        return None
    matches = []  # (description, confidence, what it is about: "position" or a variable's name)
    for description, mask in _positional(ev.shape):
        if np.array_equal(mask[info], wi):
            matches.append((description, 0.9 if n_wrong > 1 else 0.75, "position"))
    variables = []
    if ev.values is not None:
        variables.append((ev.name, np.asarray(ev.values, dtype=float), True))
    for other in ev.others.values():
        if other.values is not None and other.values.shape == tuple(ev.shape):
            variables.append((other.name, np.asarray(other.values, dtype=float), False))
    compared = [v for v in variables if v[0] != "the output"]  # x < y between inputs only
    held = set()  # backward's own tensors: one of many names, so a threshold on one needs more elements
    for name, z in (ev.backward_names() or []) if ev.backward_names is not None else ():
        # a tensor backward reads (a saved residual d = pred − target), after the inputs and
        # before the output (which any branch on d also orders): a branch on |d| is a region of
        # no input; not a mask (two values), an index tensor (integers: positions, not values)
        # nor one already listed
        z = np.asarray(z, dtype=float)
        if z.shape == tuple(ev.shape) and len(np.unique(z)) > 2 and not np.all(z == np.round(z)) and not any(
                np.array_equal(z, v) for _, v, _ in variables):
            variables.append((name, z, False))
            held.add(name)
    if len(ev.outputs) == 1 and ev.outputs[0].shape == tuple(ev.shape) and not any(
            np.array_equal(ev.outputs[0], v) for _, v, _ in variables[len(compared):]):
        variables.append(("the output", ev.outputs[0], False))

    balanced = min(n_wrong, n_right) >= 2
    # one element alone on a side is the smallest or largest of a value by chance 2 times in n (a
    # difference's boundary element, right where the others are wrong, below a round threshold):
    # among few elements no value's threshold is evidence of it
    value_evidence = balanced or n_wrong + n_right >= MIN_LONE_VALUE_SPLIT
    for name, z, own in variables if value_evidence else ():
        small = wi if n_wrong <= n_right else ~wi
        if name in held and min(n_wrong, n_right) < 3 and len(np.unique(z[info][small])) < 2:
            continue  # `weights < 1`, right on two saturated elements (== 1) of a softmax: no threshold's evidence
        for description, nice in _value_predicates(name, z, wrong, info):
            if nice:
                matches.append((description, (0.9 if own else 0.85) if balanced else 0.8, name))
            elif balanced and own and math.comb(n_wrong + n_right, n_wrong) >= MIN_SPLITS:
                # a threshold at no simple number is evidence only when few splits of the elements
                # exist that one could make by chance (two of C(n, k): a random index or mask
                # separates 3 of 6 values by a threshold one time in ten)
                matches.append((description + " (approximately)", 0.6, name))
    for name, z in ev.labels:
        # a per-row integer input (a class target): the rows of one value, or of the negative
        # values (an ignore_index such as -100), not a threshold between class ids
        sets = [(f"{name} < 0", z < 0)] + [(f"{name} == {int(v)}", z == v) for v in np.unique(z)]
        if len(ev.shape) == 2 and np.all(z == z[:, :1]) and 0 <= z.min() and z.max() < ev.shape[1]:
            # a class target per row: its column (a margin added there only), or every other column
            column = np.arange(ev.shape[1])[None, :] == z[:, :1]
            sets += [(f"the {name} column", column), (f"every column but the {name} one", ~column)]
        for description, mask in sets:
            if mask.any() and not mask.all() and np.array_equal(mask[info], wi):
                confidence = 0.85 if balanced else 0.8
                # whole rows of one target value: a likelier story than a threshold that happens to
                # separate the same few elements
                at = 0 if matches and matches[0][1] <= confidence and matches[0][2] != "position" else len(matches)
                matches.insert(at, (description, confidence, name))
                break
    for name, value in _mask_sides(ev, wrong, values=True):
        # a 0/1 tensor backward holds (`on = ctx.support`) with one side exactly the wrong elements:
        # the gradient is not masked by it (or masked inverted)
        matches.append((f"`{name}` == {short_number(value)}", 0.8, name))
    if len(ev.outputs) == 1 and ev.outputs[0].shape == tuple(ev.shape):
        zero = np.asarray(ev.outputs[0]) == 0  # off a sparsemax's / ReLU's support
        if zero.any() and not zero.all() and np.array_equal(zero[info], wi):
            matches.append(("the output is 0", 0.85 if balanced else 0.8, "the output"))
    for name, z in ev.masks:
        # a mask input backward forgot to apply (or applied inverted): wrong on exactly one side of it
        for description, side in ((f"{name} is False", ~z), (f"{name} is True", z)):
            if side.any() and not side.all() and np.array_equal(side[info], wi) \
                    and not any(d == description for d, _, _ in matches):
                matches.append((description, 0.85 if balanced else 0.8, name))
    inputs = compared
    for (n1, z1, _), (n2, z2, _) in itertools.combinations(inputs[:3], 2):
        for description, mask in ((f"{n1} < {n2}", z1 < z2), (f"{n1} > {n2}", z1 > z2)):
            if np.array_equal(mask[info], wi):
                matches.append((description, 0.85, f"{n1},{n2}"))
    if not matches:
        # the wrong elements are exactly those the function does not depend on (a max's losers, a
        # padded step): backward gives them a gradient, right everywhere forward reads
        floor = ev.rho * 1e-3 * max(ev.scale, 1e-300)
        unused = ~(np.abs(ev.numeric) > floor).any(axis=0)
        if unused[info].any() and np.array_equal(unused[info], wi) and balanced:
            matches.append((f"the function does not depend on {ev.name} (its derivative is 0 there)", 0.8, "use"))
    if not matches:
        return None
    description, confidence, _ = matches[0]
    if len({about for _, _, about in matches}) > 1:
        # the same elements are described by different quantities (x < 0 and y > 1): the first
        # is only the likeliest explanation
        confidence -= 0.1
    params, what = _within(ev, wrong)
    fraction = n_wrong / (n_wrong + n_right)
    params.update(description=description, fraction=fraction, count=n_wrong, total=n_wrong + n_right,
                  all_informative=bool(np.all(info)), mask_sides=_mask_sides(ev, wrong),
                  alternatives=[d for d, _, _ in matches[1:4]])
    tail = f"; the backward {what}" if what else ""
    return Finding("region",
                   f"backward for input {ev.name} is wrong only {_where(description)} "
                   f"({n_wrong} of {n_wrong + n_right} elements, {fraction:.0%}){tail}",
                   input=ev.index, params=params, confidence=confidence)



def _mask_sides(ev: Evidence, wrong, values=False):
    """The two-valued tensors backward computes (``keep = x > 0``) one of whose sides is exactly
    the wrong elements, over every element: that mask's edge is right, what the gradient does on
    one side of it is wrong. ``values``: (name, the value on the wrong side) pairs."""
    sides = []
    try:
        names = (ev.backward_names() or []) if ev.backward_names is not None else []
    except Exception:  # an unusual backward: no evidence about its masks
        return sides
    for name, z in names:
        z = np.asarray(z, dtype=float)
        if z.shape == tuple(wrong.shape) and len(np.unique(z)) == 2:
            low = z == z.min()
            if np.array_equal(low, wrong) or np.array_equal(~low, wrong):
                side = float(z.min() if np.array_equal(low, wrong) else z.max())
                sides.append((name, side) if values else name)
    return sides


def _where(description: str) -> str:
    """'x < 0' → 'where x < 0'; 'the diagonal' → 'on the diagonal'; 'the first row' → 'in the first row'."""
    if description.startswith(("above ", "below ", "off ", "on ")):
        return description
    if description == "the diagonal":
        return "on the diagonal"
    if description.endswith(("row", "column")) or description.startswith("every column"):
        return f"in {description}"
    if description.endswith("element") or description.startswith(("the first position", "the last position",
                                                                   "the first and last")):
        return f"at {description}"
    return f"where {description}"
