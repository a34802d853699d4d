"""Patterns read from the whole linear map a backward computes, not from a few cotangents.

For a small input (and output) the diagnosis builds two matrices over flat indices, both shaped
(output size m, input size n):

- ``J``: the numerical Jacobian, J[o, p] = ∂f_o/∂x_p (central differences with one cotangent per
  output element; the forward calls are the same 4 per input element as for three cotangents);
- ``G``: what backward computes, G[o, :] = backward(e_o) (one backward call per output element).

A right backward has G = J. Each rule below names a *structural* mistake by the exact
transformation of J that G equals (or, for ``wrong_axis``, by the axes along which G couples an
output element to an input element), so none of them can fire on a gradient that is merely wrong:

- ``missing_flip``: forward is cumulative along one axis (J triangular along it) and G = P·J·P,
  J·P or P·J with P the flip along that axis (a reverse-cumulative backward missing its flips);
- ``transposed`` (variant ``jacobian``): G = Jᵀ, J not symmetric (the backward applies the
  Jacobian instead of its transpose: a gather where a scatter is needed, a permutation applied
  forward instead of inverted);
- ``not_accumulated``: every output reads one input element (a gather), some input element is
  read more than once, and G is J with only the first or last of those reads kept (duplicates
  overwritten instead of accumulated, as in an embedding or index backward);
- ``missing_reshape``: G's rows are J's rows in another order (grad_output used in the wrong
  layout: a missing transpose before a reshape), or G's columns are (the result laid out wrongly);
- ``wrong_axis``: input and output have the same shape, and G couples elements along other axes
  than J does (a softmax, norm or mean reduced over the wrong dim).
"""
from __future__ import annotations

import numpy as np

from gradcli.check.report import Finding

MAX_OPERATOR = 256  # elements of the input and of the outputs above which the matrices are not built


def _operator(ev):
    if ev.operator is None:
        return None
    return ev.operator()


def _flip_matrix(shape, axis):
    n = int(np.prod(shape, dtype=int))
    index = np.arange(n).reshape(shape)
    flipped = np.flip(index, axis=axis).ravel()
    P = np.zeros((n, n))
    P[np.arange(n), flipped] = 1.0
    return P


def _same_index_space(ev, J):
    """Input and (single) output have the same shape, so flat indices mean the same position."""
    return len(ev.outputs) == 1 and ev.outputs[0].shape == tuple(ev.shape) and J.shape[0] == J.shape[1]


def _cumulative(mask, shape, axis) -> bool:
    """Forward is cumulative along ``axis``: every output reads inputs at or before its own
    position there (or every one at or after it), and some output reads more than its own."""
    o, p = np.nonzero(mask)
    if not o.size:
        return False
    io, ip = np.unravel_index(o, shape), np.unravel_index(p, shape)
    same_elsewhere = all(np.array_equal(io[d], ip[d]) for d in range(len(shape)) if d != axis)
    if not same_elsewhere or np.all(io[axis] == ip[axis]):
        return False
    return bool(np.all(ip[axis] <= io[axis]) or np.all(ip[axis] >= io[axis]))


def missing_flip(ev):
    found = _operator(ev)
    if found is None:
        return None
    J, JE, G = found
    if not _same_index_space(ev, J) or ev.fits(G, J, JE):
        return None
    significant = ~ev.near(J, 0 * J, JE)
    for axis, size in enumerate(ev.shape):
        if size < 2 or not _cumulative(significant, ev.shape, axis):
            continue
        P = _flip_matrix(ev.shape, axis)
        for flips, candidate, error in (("both", P @ J @ P, P @ JE @ P), ("grad_output", J @ P, JE @ P),
                                        ("result", P @ J, P @ JE)):
            if ev.fits(candidate, J, JE + error):
                continue  # the flip changes nothing here: no evidence
            if ev.fits(G, candidate, error):
                what = {"both": "the flips before and after the cumulative op",
                        "grad_output": "the flip of grad_output", "result": "the flip of the result"}[flips]
                return Finding("missing_flip", f"backward for input {ev.name} misses {what} along dim {axis}: "
                               "a reverse cumulative op (cumsum-like backward) needs grad_output flipped, "
                               "accumulated, and flipped back",
                               input=ev.index, params={"dim": axis, "missing": flips}, confidence=0.9)
        # the accumulation runs the wrong way: each input is coupled to the outputs on the wrong
        # side of it (G's support is Jᵀ's), as a cumprod backward summing forwards
        got = ~ev.near(G, 0 * G, JE)
        if J.shape[0] == J.shape[1] and ev.fits(G, J.T, JE.T):
            return None  # exactly Jᵀ, not a flip of it: a triangular matrix untransposed (`transposed`)
        if not np.array_equal(significant, significant.T) and np.array_equal(got, significant.T):
            return Finding("missing_flip", f"backward for input {ev.name} accumulates along dim {axis} in the wrong "
                           "direction: the backward of a cumulative op accumulates grad_output in reverse (flip, "
                           "accumulate, flip back)",
                           input=ev.index, params={"dim": axis, "missing": "reverse"}, confidence=0.85)
    return None


def jacobian_transposed(ev):
    found = _operator(ev)
    if found is None:
        return None
    J, JE, G = found
    if J.shape[0] != J.shape[1] or ev.fits(J.T, J, JE + JE.T) or not ev.fits(G, J.T, JE.T):
        return None
    edited = ev.rewrites() if getattr(ev, "rewrites", None) is not None else None
    if edited is not None and (edited.kind == "missing_reshape" or edited.kind == "transposed"
                               and edited.params.get("permute")):
        return edited  # a reshape's sizes, a permute's order: the layout line, not "Jᵀ" in general
    return Finding("transposed", f"backward for input {ev.name} applies the Jacobian instead of its transpose "
                   "(e.g. gathers with the permutation where it must scatter, or the reverse)",
                   input=ev.index, params={"jacobian": True}, confidence=0.9)


def dropped_output(ev):
    """A Function with several outputs whose backward leaves out one output's gradient entirely:
    G's rows for that output are zero where J's are not, and G = J on every other output's rows
    (``return grad_sin * cos(x)`` without ``- grad_cos * sin(x)``). Tried before ``not_accumulated``,
    which would read the two outputs' reads of x as duplicates."""
    found = _operator(ev)
    if found is None or len(ev.outputs) < 2:
        return None
    J, JE, G = found
    bounds = np.cumsum([0] + [int(o.size) for o in ev.outputs])
    parts = [slice(bounds[k], bounds[k + 1]) for k in range(len(ev.outputs))]
    for k, rows in enumerate(parts):
        if ev.fits(J[rows], 0 * J[rows], JE[rows]) or not ev.fits(G[rows], 0 * G[rows], JE[rows]):
            continue
        if all(ev.fits(G[other], J[other], JE[other]) for j, other in enumerate(parts) if j != k):
            return Finding("missing_term", f"backward for input {ev.name} leaves out the gradient of output {k}: "
                           f"the term grad_output[{k}] contributes is missing (right for every other output)",
                           input=ev.index, params={"variant": "output", "output": k}, confidence=0.9)
    return None


def not_accumulated(ev):
    found = _operator(ev)
    if found is None:
        return None
    J, JE, G = found
    significant = ~ev.near(J, 0 * J, JE)
    if not np.all(significant.sum(axis=1) <= 1):
        return _contributions_dropped(ev, J, JE, G, significant)
    reads = significant.sum(axis=0)
    duplicated = int(np.count_nonzero(reads > 1))
    if duplicated == 0 or ev.overwrites is None or not ev.overwrites():
        # the source must write into the gradient (an index assignment, a scatter): forward reading
        # x twice (`cat([sin x, x³])`) and a backward dropping one block's term is no overwrite
        return None
    for kept in ("last", "first"):
        candidate = np.zeros_like(J)
        for p in np.nonzero(reads)[0]:
            rows = np.nonzero(significant[:, p])[0]
            o = rows[-1] if kept == "last" else rows[0]
            candidate[o, p] = J[o, p]
        if ev.fits(G, candidate, JE):
            return Finding("not_accumulated",
                           f"backward for input {ev.name} overwrites instead of accumulating: {duplicated} "
                           f"element{'s are' if duplicated != 1 else ' is'} read more than once by forward, and its "
                           f"gradient keeps only the {kept} contribution (use index_add_/scatter_add_ or +=)",
                           input=ev.index, params={"kept": kept, "duplicates": duplicated}, confidence=0.9)
    return None


def _contributions_dropped(ev, J, JE, G, significant):
    """An op whose outputs read several inputs (a convolution's overlapping windows) whose
    backward keeps some of the contributions to an input element and drops the others — G = J
    on some significant entries and 0 on the rest — with no output and no input dropped whole,
    and whose source assigns computed values into the gradient (``dx[:, j:j+n] = …``, a
    scatter_ or index_copy_): the partial sums were assigned instead of added."""
    if not np.any(significant.sum(axis=0) > 1):
        return None
    if ev.overwrites is None or not ev.overwrites():
        return None  # the source must assign into the gradient: a wrong mask also drops entries of J
    zero = ev.near(G, 0 * G, JE)
    kept = significant & ev.near(G, J, JE)
    dropped = significant & zero & ~kept
    if not dropped.any() or not np.all(zero[~significant]) or not np.all((kept | dropped)[significant]):
        return None
    rows, cols = significant.any(axis=1), significant.any(axis=0)
    if not np.all(kept.any(axis=1)[rows]) or not np.all(kept.any(axis=0)[cols]):
        return None  # a whole output or input dropped: a mask or region story, not an overwrite
    count = int(np.count_nonzero(dropped.any(axis=0)))
    return Finding("not_accumulated",
                   f"backward for input {ev.name} overwrites instead of accumulating: for {count} element"
                   f"{'s' if count != 1 else ''} it keeps some of the contributions forward's outputs make and drops "
                   "the others (partial sums assigned where they must be added: use += or index_add_)",
                   input=ev.index, params={"kept": "some", "duplicates": count}, confidence=0.8)


def _match_permutation(ev, G, J, JE, equal_rows=False):
    """σ with G[i] fitting J[σ(i)] for every row i, each row of J used once; None otherwise. With
    ``equal_rows``, rows of J that are equal (a pooling window's inputs) are interchangeable: each
    G row takes the first unused one it fits, every fit among equal rows."""
    sigma, used = [], set()
    for i in range(G.shape[0]):
        hits = [k for k in range(J.shape[0]) if ev.fits(G[i], J[k], JE[k])]
        if not hits or (len(hits) > 1 and not equal_rows) or any(
                not ev.fits(J[k], J[hits[0]], JE[k] + JE[hits[0]]) for k in hits[1:]):
            return None
        free = [k for k in hits if k not in used]
        if not free:
            return None
        sigma.append(free[0])
        used.add(free[0])
    return sigma if sorted(sigma) == list(range(J.shape[0])) else None


def _layout(sigma, shape):
    """(a, b) when the permutation reads a flat (a, b) array transposed; None otherwise."""
    n = len(sigma)
    for a in range(2, n):
        if n % a:
            continue
        b = n // a
        if list(np.arange(n).reshape(a, b).T.ravel()) == list(sigma):
            return [a, b]
    return None


def _is_relayout(sigma) -> bool:
    """σ is a permutation of axes of some C-order reshape of the flat index (what a missing
    transpose/permute before a reshape does), not any reordering: a swap inside each pair (a
    max-pooling gradient routed to the wrong element) or a flip is a wrong index, not a layout.
    Read as a mixed-radix counter: each output axis found from the first position where σ stops
    stepping by that axis's stride; the axes, ordered by stride, must tile the input exactly."""
    s = np.asarray(sigma, dtype=int)
    n = s.size
    if n < 2 or s[0] != 0:
        return False  # a permutation of axes keeps the first element in place
    axes, block = [], 1  # (input stride, length) of each output axis, innermost first
    while block < n:
        stride, length = int(s[block]), 1
        while block * (length + 1) <= n and s[block * length] == length * stride:
            length += 1
        if length < 2 or n % (block * length):
            return False
        axes.append((stride, length))
        block *= length
    built = np.zeros(1, dtype=int)
    for stride, length in axes:  # innermost first: each outer axis repeats the inner block
        built = (np.arange(length)[:, None] * stride + built[None, :]).ravel()
    if not np.array_equal(built, s) or len(axes) < 2:
        return False
    expected = 1
    for stride, length in sorted(axes):
        if stride != expected:
            return False
        expected *= length
    return expected == n


def missing_reshape(ev):
    found = _operator(ev)
    if found is None:
        return None
    J, JE, G = found
    if ev.fits(G, J, JE) or ev.support() < 3:
        return None
    for side, (g, j, e) in (("grad_output", (G, J, JE)), ("result", (G.T, J.T, JE.T))):
        # equal columns of J are a window's inputs (a pooling gradient tiled where it must be
        # interleaved); equal rows are a broadcast, whose permuted cotangent is a reduction over the
        # wrong dim, the simpler story the statement edits tell
        sigma = _match_permutation(ev, g, j, e, equal_rows=side == "result")
        if sigma is None or sigma == list(range(len(sigma))) or not _is_relayout(sigma):
            continue
        if side == "grad_output":
            other = _match_permutation(ev, G.T, J.T, JE.T, equal_rows=True)
            if other is not None and other != list(range(len(other))) and _is_relayout(other):
                # a per-head map is block diagonal: a layout read either side fits; the result
                # flattened back without its permute (`gxh.reshape(shape)`) is where it is missed
                side, sigma = "result", other
        layout = _layout(sigma, ev.shape)
        what = ("reads grad_output in the wrong layout" if side == "grad_output"
                else "lays its result out in the wrong order")
        extra = f" (a ({layout[0]}, {layout[1]}) array read transposed)" if layout else ""
        edited = ev.rewrites() if getattr(ev, "rewrites", None) is not None else None
        if edited is not None and edited.kind == "transposed" and (edited.params.get("permute") or
                                                                    edited.params.get("matrix")):
            # a matrix formed the wrong way round (`cols @ gᵀ` summed over the batch, an einsum's
            # 2-D output) or a permute's two dims exchanged: a transpose, not a layout left unpermuted
            return edited
        if layout and layout[0] == layout[1] and side == "result":
            # a square block read transposed needs no reshape: it is the transpose of a product
            # (`cols @ gy.mT` for `gy @ cols.mT`), however it is laid out after
            return Finding("transposed",
                           f"backward for input {ev.name} computes the transpose of its gradient's "
                           f"({layout[0]}, {layout[1]}) block: the values are right but read transposed",
                           input=ev.index, params={"side": side, "layout": layout, "block": True},
                           confidence=0.85)
        return Finding("missing_reshape",
                       f"backward for input {ev.name} {what}: the values are right but at permuted positions{extra} "
                       "— a transpose/permute is missing before a reshape",
                       input=ev.index, params={"side": side, "layout": layout}, confidence=0.85)
    return None


def _coupled_axes(mask, shape):
    """Axes along which a nonzero entry (o, p) has o and p at different positions."""
    o, p = np.nonzero(mask)
    if not o.size:
        return set()
    io, ip = np.unravel_index(o, shape), np.unravel_index(p, shape)
    return {d for d in range(len(shape)) if np.any(io[d] != ip[d])}


def wrong_axis(ev):
    found = _operator(ev)
    if found is None:
        return None
    J, JE, G = found
    if not _same_index_space(ev, J) or len(ev.shape) < 2 or ev.fits(G, J, JE) or not np.all(np.isfinite(G)):
        return None  # a NaN (a softmax row masked whole) couples nothing: no evidence of an axis
    right = _coupled_axes(~ev.near(J, 0 * J, JE), ev.shape)
    got = _coupled_axes(~ev.near(G, 0 * G, JE), ev.shape)
    if not right or not got or got == right:
        return None
    dims = lambda axes: ", ".join(str(d) for d in sorted(axes))  # noqa: E731
    return Finding("wrong_axis",
                   f"backward for input {ev.name} reduces over dim {dims(got)} where forward reduces over dim "
                   f"{dims(right)} (a softmax, norm, sum or mean over the wrong dim)",
                   input=ev.index, params={"dims": sorted(got), "expected_dims": sorted(right)}, confidence=0.85)


def scaled_cotangent(ev):
    """G = diag(u/w)·J (or J·diag(u/w)) for two different tensors u, w among the inputs and the
    output and exp(±) of them, u/w not constant: backward multiplies grad_output (or its result) by u where w is
    needed — a cumprod backward using x where the running product y belongs, inside a reverse
    cumsum the elementwise forms cannot see through."""
    found = _operator(ev)
    if found is None or len(ev.outputs) != 1 or ev.values is None or ev.support() < 3:
        return None
    J, JE, G = found
    if ev.fits(G, J, JE) or _elementwise(J, G):
        # elementwise, any wrong derivative f'(x)·r(x) is "J times a ratio of two tensors": no
        # evidence of a swapped tensor (the statement-level rules read the code for that)
        return None
    out = ev.outputs[0]
    tensors = [(ev.name, ev.values)] + [(o.name, o.values) for o in ev.others.values() if o.values is not None]
    tensors.append(("output", out))
    with np.errstate(all="ignore"):
        # and exp(−z), exp(z): a log-space op (logcumsumexp, logsumexp) weighting by exp(−x)
        # where exp(−y) is needed
        tensors = [form for name, z in tensors for form in
                   ((name, z), (f"exp(-{name})", np.exp(-np.asarray(z, dtype=float))),
                    (f"exp({name})", np.exp(np.asarray(z, dtype=float))))]
        for side, shape in (("grad_output", out.shape), ("result", tuple(ev.shape))):
            same = [(name, np.ravel(z)) for name, z in tensors if np.shape(z) == tuple(shape)]
            for (used, u), (needed, w) in ((a, b) for a in same for b in same if a[0] != b[0]):
                r = u / w
                if not np.all(np.isfinite(r)) or len(np.unique(np.round(r / float(np.max(np.abs(r))), 9))) < 3:
                    continue  # a constant ratio is a factor, a two-valued one a region: those rules say it
                predicted, error = (r[:, None] * J, np.abs(r)[:, None] * JE) if side == "grad_output" else (
                    J * r[None, :], JE * np.abs(r)[None, :])
                if predicted.shape == G.shape and ev.fits(G, predicted, error):
                    where = "grad_output" if side == "grad_output" else "its result"
                    return Finding("wrong_variable",
                                   f"backward for input {ev.name} multiplies {where} by {used} where {needed} is "
                                   f"needed (or divides by {needed} where {used} belongs): it is exactly the right "
                                   f"backward with {where} times {used}/{needed}",
                                   input=ev.index, params={"used": used, "needed": needed, "side": side,
                                                           "expression": used, "expected": needed},
                                   confidence=0.85)
    return None


def _elementwise(J, G) -> bool:
    """J and G both diagonal (square, nothing off the diagonal): an elementwise op."""
    if J.shape[0] != J.shape[1]:
        return False
    off = ~np.eye(J.shape[0], dtype=bool)
    return not np.any(J[off]) and not np.any(G[off])


def operator_matrices(probe, ev, numeric):
    """(J, J's error, G) for ``ev``'s input, both (m, n); None when too large or backward fails.
    ``numeric(index, rows)`` is the driver's central difference (float64 when forward allows)."""
    from gradcli.check.diagnosis.probe import ProbeError

    if ev.values is None or not ev.outputs:
        return None
    n = int(ev.values.size)
    sizes = [int(o.size) for o in ev.outputs]
    m = sum(sizes)
    if not 0 < n <= MAX_OPERATOR or not 0 < m <= MAX_OPERATOR:
        return None
    rows = []
    for o in range(m):
        flat = np.zeros(m)
        flat[o] = 1.0
        parts = np.split(flat, np.cumsum(sizes)[:-1])
        rows.append(tuple(p.reshape(out.shape) for p, out in zip(parts, ev.outputs)))
    found = numeric(ev.index, rows)
    if found is None:
        return None
    J, JE = found[0].reshape(m, n), found[1].reshape(m, n)
    G = np.empty((m, n))
    for o, row in enumerate(rows):
        try:
            g = probe.vjp(row).get(ev.index)
        except ProbeError:
            return None
        if g is None or g.size != n:
            return None
        G[o] = g.ravel()
    return J, JE, G
