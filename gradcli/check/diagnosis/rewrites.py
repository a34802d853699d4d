"""One edit of backward's own code that makes the gradient exact, found by re-running it.

The rules before this one read the gradient's arithmetic through a closed vocabulary
(``evaluator.py``); this search reads nothing but syntax, so it reaches code that vocabulary does
not (helpers, loops, library calls, several statements). Backward's source — and that of each
module-level function of its own file it calls by name — is parsed (``ast``); one edit is made
to one node of one statement that ran (``rewrite_edits.py``); the edited function is compiled in
its own module's namespace, with its file and line numbers, and installed for the re-run (on the
class, or in the module for a helper), put back afterwards whatever happens; forward and backward
are re-run for every cotangent. A finding is named only when the edited code gives the numerical
gradient of the failing input at every element for every cotangent, where the written one does
not, and every input whose gradient was right stays right. The edit is the mistake; its
statement is the location, and the hint quotes it.

Edits, simplest kind first (the first that fits is the finding): ``term_sign`` (a ``+``/``-``
flipped, a term or a unary minus negated, a value given to ``where``/``scatter``/``index_add``
negated, a ``.conj()`` undone); ``region`` (a comparison made strict or reversed); ``wrong_axis``
(a literal dim of a reduction, softmax, cumulative op, gather/scatter or concatenation);
``transposed`` (an operand of a product, or a square product itself, transposed or its transpose
undone; two indices of an einsum operand swapped); ``not_accumulated`` (an index write made
accumulating); ``missing_flip`` (a ``.flip`` undone); ``wrong_variable`` (one tensor read in
another's place); ``ignores_grad_output`` (the returned gradient times a grad_output it never
reads); a tensor backward unpacks and never reads multiplied in wherever a grad_output is read
(``region`` when it is a 0/1 mask — dropout's — else ``wrong_variable``); ``missing_term`` (one
term dropped: an extra term). A mask read in another mask's place is a ``region``. After every
other rule, ``saved_tensor`` tries forward saving one tensor for another, quoted where backward
reads it.

Guards: a gradient that is a simple multiple of the right one is left to ``scale``; another
input's returned gradient in this one's place to ``swapped``; a list is never read in a tensor's
place (it could be given to its own ``append``); an edited run may take ``SLOWER`` times the
written one's CPU time (a line tracer on the file stops it); a closure is not recompiled. The
user's code runs as the check runs it, with one edit; nothing from a user-supplied expression is
evaluated.
"""
from __future__ import annotations

import ast
import math
import os
import time

import numpy as np

from gradcli.check.diagnosis.evidence import EDITED_RHO, nice_number
from gradcli.check.diagnosis.probe import ProbeError, row_key
from gradcli.check.diagnosis.rewrite_edits import KIND_ORDER, _Edit, edits, forward_edits
from gradcli.check.diagnosis.forward_reads import (_forward_attributes, _forward_calls, _forward_conditions,
                                                    _forward_names,
                                                    _negated_in_forward, _scalars,
                                                   _unsaved)
from gradcli.check.diagnosis.rewrite_findings import edit_finding
from gradcli.check.diagnosis.rewrite_runs import (FORWARD_PREFIX, SLOWER, _compiled, _Deadline, _InGlobals, _method,
                                                  _OnClass, _plain_function, _repeats, _square, _Values)
from gradcli.check.diagnosis.source import (_source, backward_source, chain, forward_source, gradient_statement,
                                            last_return, statements)

BUDGET_S = 3.0  # CPU seconds per input (load must not change findings; a fit is checked in full)
MAX_EDITS = 700
LOCATING = ("swapped", "negated_value", "scaled_value")  # edits that only locate a whole-gradient finding (``locate``)


# ----- what an edit may touch ------------------------------------------------------------
def _targets(cls, executed, position, saves=False):
    """``(source, function, installer, position)`` of each piece of code an edit may touch:
    backward, the module-level functions of backward's own file that it calls by name, and
    forward (only what it saves)."""
    func, src = _method(cls, "backward"), backward_source(cls, executed)
    if func is None or src is None:
        return []
    targets = [(src, func, lambda f: _OnClass(cls, "backward", f), position)]
    if saves:
        forward, forward_src = _method(cls, "forward"), forward_source(cls)
        if forward is None or forward_src is None:
            return []
        return targets[:1] + [(forward_src, forward, lambda f: _OnClass(cls, "forward", f), "forward")]
    called = sorted({n.func.id for n in ast.walk(src.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)})
    for name in called:
        helper = _plain_function(func.__globals__.get(name))
        if helper is None or helper.__globals__ is not func.__globals__:
            continue
        helper_src = _source(helper)
        if helper_src is not None and os.path.abspath(helper_src.file) == os.path.abspath(src.file):
            targets.append((helper_src, helper, lambda f, name=name: _InGlobals(func.__globals__, name, f), None))
    return targets


# ----- the search --------------------------------------------------------------------------
def locate(probe, cls, ev, kind, executed=None, position=None, factor=None):
    """``(line, lines, written)`` for a finding about the whole gradient (``sign``: a negation;
    ``swapped``: two values exchanged): the line to quote (a sign written in a statement first,
    else the last statement whose whole value, negated, fits), the file lines of every statement
    where one such edit makes the gradient exact, and whether the first is an edit of something
    written (a minus, an exchange) rather than a negated value; None when no edit fits."""
    kinds = {"sign": ("term_sign", "negated_value"), "swapped": ("swapped",), "scale": ("scaled_value",)}.get(kind)
    if kinds is None or kind == "scale" and not factor:
        return None
    found = []
    search(probe, cls, ev, executed, position, kinds=kinds, collect=found,
           factor=1.0 / factor if kind == "scale" else None)
    if not found:
        return None
    negated = _negated_in_forward(cls)
    recomputed = [f for f in found if f.kind == "negated_value" and f.params.get("term") in negated]
    if recomputed and all(f.kind == "negated_value" for f in found):
        # forward's `-(expr)` recomputed in backward as `expr`: the minus was lost there
        return recomputed[0].params["at_line"], {f.params["at_line"] for f in found}, True
    written = found[0].kind not in ("negated_value", "scaled_value")  # a sign (or an exchange) written
    recorded = getattr(probe, "recorded", None) or {}
    tensors = set().union(*[set(names) for names in recorded.values()]) if recorded else set()
    counts = [f for f in found if kind == "scale" and _assigns_a_number(f.params.get("statement", ""), tensors)]
    if kind == "scale" and not counts:  # a count that divides: `area` times the factor itself
        divided = []
        search(probe, cls, ev, executed, position, kinds=kinds, collect=divided, factor=factor)
        counts = [f for f in divided if _assigns_a_number(f.params.get("statement", ""), tensors)]
    if counts:  # `area = H * W` where the box's area is needed: the wrong number is made there
        return counts[0].params["at_line"], {f.params["at_line"] for f in found}, True
    return found[0].params["at_line"], {f.params["at_line"] for f in found}, written


def _assigns_a_number(code, tensors):
    """Whether ``code`` assigns one name that backward did not hold a tensor under a number computed
    by arithmetic (``area = H * W``; ``n = x.shape[1]`` only reads a size, which is right)."""
    try:
        stmt = ast.parse(code.strip()).body[0]
    except (SyntaxError, IndexError):
        return False
    return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
        and stmt.targets[0].id not in tensors and isinstance(stmt.value, ast.BinOp)


# edits tried after the term and region rules (``late_edit``): a mean's or a normalisation's projection
# term (the term rules' findings say more), a saved tensor's sign (an elementwise |x| taken as x is
# the region x < 0 first; a scalar's gradient has no region)
LATE = ("projection", "mean_term", "sign_of")


def search(probe, cls, ev, executed=None, position=None, saves=False, kinds=None, collect=None, factor=None,
           late=False, proportional=False, step_only=False):
    """The finding of the first edit that makes ``ev``'s gradient exact, or None; ``saves``: only
    edits of what forward saves (tried after every other rule); ``kinds``: only edits of those
    kinds (to locate a whole-gradient finding); ``collect``: a list given every fitting edit's
    finding (the search goes on); ``proportional``: search even when the gradient is a multiple of
    the right one (a scalar parameter's, where a factor is weak evidence); ``step_only``: only the edits
    of a recurrence's state read one step off."""
    if cls is None or probe is None or not ev.cotangents or ev.analytic is None:
        return None
    if ev.fits(ev.analytic, ev.numeric, ev.numeric_error):
        return None
    if kinds is None and not proportional and _proportional(ev):
        return None  # a factor (or sign) of the whole gradient: `scale`/`sign`, said by their rule
    position = ev.index if position is None else position
    recorded = getattr(probe, "recorded", None) or {}
    tensors = set().union(*[set(names) for names in recorded.values()]) if recorded else None
    candidates = []
    targets = _targets(cls, executed, position, saves)
    unsaved, values = _unsaved(probe, cls, recorded) if kinds is None and not saves and not late else ({}, {})
    if getattr(probe, "gaussian_cdfs", None) is None:  # read once per check: every search of every input asks
        probe.gaussian_cdfs = gaussian_cdfs(recorded)
    read = (tensors, simplex_names(recorded), _scalars(probe), factor, _forward_attributes(cls), unsaved,
            probe.gaussian_cdfs, _forward_calls(cls), _forward_conditions(cls), _forward_names(cls))
    for target in targets:
        src, role = target[0], target[3]
        if saves and role != "forward":
            continue
        # backward's own values feed the edits of backward, not of a helper it calls (role None)
        found = forward_edits(src) if role == "forward" else edits(src, role, *(
            read if role is not None else (None, {}, (), None, (), None, {}, {})))
        candidates.extend((edit, target) for edit in found if (kinds is None and edit.kind not in LOCATING
                                                               or kinds is not None and edit.kind in kinds)
                          and (not step_only or "step" in edit.params)
                          and late == any(key in edit.params for key in LATE))
    candidates.sort(key=lambda c: KIND_ORDER.index(c[0].kind))  # stable: backward's edits first within a kind
    backward_src = targets[0][0] if targets else None  # the tree the edits' nodes belong to
    returned = _returned_names(backward_src) if backward_src is not None else set()
    started = time.process_time()
    right = _right_others(ev)
    _fits(probe, ev, right)  # the written backward's re-run, timed
    allowed = SLOWER * (time.process_time() - started) + 0.25  # a loaded machine's threads spin: CPU time grows
    masks = mask_names(recorded)
    candidates = [c for c in candidates if c[0].params.get("sign_of") not in masks  # a 0/1 mask's sign is itself
                  and (not recorded or c[0].params.get("complement_of", True) in masks | {True})]  # `1 - m`: a 0/1 m
    started = time.process_time()
    for tried, (edit, (src, func, installer, role)) in enumerate(candidates):
        if tried >= MAX_EDITS or time.process_time() - started > BUDGET_S:
            return None
        if kinds is None and src is backward_src and edit.kind == "wrong_variable" and edit.stmt is last_return(src) \
                and edit.params["used"] in returned and edit.params["needed"] in returned:
            continue  # another input's gradient in this one's place: `swapped`, said by its own rule
        try:
            mutant = _compiled(src, func, edit)
        except Exception:  # noqa: BLE001 -- an edit that does not compile is no candidate
            continue
        local = edit.params.get("forward_local")
        injected = {FORWARD_PREFIX + local: values[local]} if local else {}
        with installer(mutant), _Values(func.__globals__, injected), _Deadline(mutant.__code__, allowed):
            fits = _fits(probe, ev, right)
        if fits and edit.params.get("product") and not _square(src, func, installer, edit, probe, ev):
            edit.params["square"] = False  # `cols @ gᵀ` for `g @ colsᵀ`, reshaped after: still the product's transpose
        if fits and edit.kind == "not_accumulated" and not edit.params.get("loop") \
                and not _repeats(src, func, installer, edit, probe, ev):
            continue  # no index repeats: adding to what was there fixes something else
        if fits:
            if role == "forward":  # quoted where backward reads what forward saved
                src, edit = backward_src, _read_in_backward(backward_src, edit, position) or edit
            if collect is None:
                return edit_finding(ev, edit, src, mask_names(recorded))
            collect.append(edit_finding(ev, edit, src, mask_names(recorded)))
    return None


def _proportional(ev):
    """N = c·A for a simple c: the whole gradient's factor (or sign), which ``patterns.scale`` names."""
    A, N = ev.analytic.ravel(), ev.numeric.ravel()
    norm = float(A @ A)
    if norm == 0:
        return False
    factor = nice_number(float(A @ N) / norm, rel=1e-4)
    return factor is not None and ev.fits(ev.analytic * factor, ev.numeric, ev.numeric_error)


def _returned_names(src):
    """The names backward's last return gives as whole gradients (``return dx, dw``)."""
    returned = last_return(src)
    value = None if returned is None else returned.value
    elts = value.elts if isinstance(value, ast.Tuple) else [value]
    return {e.id for e in elts if isinstance(e, ast.Name)}


def _right_others(ev):
    """{index: evidence} of the other inputs whose gradient is right for every cotangent."""
    right = {}
    for j, other in (ev.others or {}).items():
        wrong = other.wrong()
        if other.analytic is not None and wrong is not None and not wrong.any():
            right[j] = other
    return right


def _fits(probe, ev, right):
    changed = False
    for k, row in enumerate(ev.cotangents):
        try:
            grads = probe.vjp(row)
        except ProbeError:
            return False
        g = grads.get(ev.index)
        N = ev.numeric[k]
        if g is None or g.size != N.size or not ev.fits(g.reshape(N.shape), N, ev.numeric_error[k],
                                                        max(ev.rho, EDITED_RHO)):
            return False
        changed = changed or not ev.fits(ev.analytic[k], N, ev.numeric_error[k])
        key = row_key(row)
        for j, other in right.items():
            rows = [m for m, r in enumerate(other.cotangents) if row_key(r) == key]
            h = grads.get(j)
            if rows and (h is None or h.size != other.numeric[rows[0]].size or not other.fits(
                    h.reshape(other.numeric[rows[0]].shape), other.numeric[rows[0]], other.numeric_error[rows[0]])):
                return False
    return changed


def _read_in_backward(src, edit, position):
    """The forward edit re-pinned on backward's statement that reads the saved tensor (the first
    of the failing gradient's statements that reads it): where the user sees the wrong tensor."""
    call = next((n for n in ast.walk(edit.stmt) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr == "save_for_backward"), None)
    if call is None or edit.node not in call.args:
        return None
    k = call.args.index(edit.node)
    unpack = next((s for s in statements(src.tree) if isinstance(s, ast.Assign) and "saved_tensors" in ast.unparse(s.value)), None)
    target = unpack.targets[0] if unpack is not None else None
    names = [e for e in (target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target])] if target else []
    if k >= len(names) or not isinstance(names[k], ast.Name):
        return None
    name = names[k].id
    statement, expr = gradient_statement(src, position)
    feeding = chain(src, statement, expr) if statement is not None and expr is not None else []
    readers = [s for s in feeding if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
                                         for n in ast.walk(s))]
    if not readers:
        return None
    used, needed = edit.params["used"], edit.params["needed"]
    return _Edit(edit.kind, readers[0], edit.node,
                 f"`{name}`, which forward saves from `{used}` where `{needed}` is needed", None,
                 **dict(edit.params, read_as=name))


def simplex_names(recorded):
    """{name: dim} of backward's tensors that are ≥ 0 and sum to 1 along a dim (a softmax's
    probabilities, as backward held them) for every cotangent."""
    found = None
    for names in recorded.values():
        here = {}
        for name, value in names.items():
            value = np.asarray(value, dtype=float)
            if value.ndim < 1 or value.size < 4 or np.any(value < 0) or not np.all(np.isfinite(value)):
                continue
            for dim in (-1, 1, 0) if value.ndim > 1 else (-1,):
                if value.shape[dim] > 1 and np.allclose(value.sum(axis=dim), 1.0, rtol=0, atol=1e-9):
                    here[name] = dim
                    break
        found = here if found is None else {k: d for k, d in found.items() if here.get(k) == d}
    return found or {}


def gaussian_cdfs(recorded):
    """{name: u} of backward's tensors that hold the standard normal CDF Φ(u) of another tensor u
    it holds, for every cotangent (the ``cdf`` of an erf GELU's derivative)."""
    found = None
    erf = np.vectorize(math.erf)
    for names in recorded.values():
        arrays = {n: np.asarray(v, dtype=float) for n, v in names.items()
                  if np.ndim(v) >= 1 and 1 < np.size(v) <= 4096}
        here = {}
        for name, value in arrays.items():
            if not (np.all(value > 0) and np.all(value < 1)):
                continue
            for u, z in arrays.items():
                if u != name and z.shape == value.shape and np.allclose(value, 0.5 * (1 + erf(z / math.sqrt(2))),
                                                                         rtol=1e-9, atol=1e-12):
                    here[name] = u
                    break
        found = here if found is None else {k: u for k, u in found.items() if here.get(k) == u}
    return found or {}


def mask_names(recorded):
    """Names backward held a 0/1 tensor under (a mask) for every cotangent."""
    masks = None
    for names in recorded.values():
        here = {name for name, value in names.items() if value.size and bool(((value == 0) | (value == 1)).all())}
        masks = here if masks is None else masks & here
    return masks or set()


def one_edit(ev):
    """The pattern: the re-run search's finding (computed once per input, lazily)."""
    return ev.rewrites() if getattr(ev, "rewrites", None) is not None else None


def late_edit(ev):
    """The pattern tried after the term rules: the ``LATE`` edits."""
    return ev.rewrites_late() if getattr(ev, "rewrites_late", None) is not None else None


def saved_tensor(ev):
    """The pattern tried last: forward saving the wrong tensor for backward."""
    return ev.rewrites_saved() if getattr(ev, "rewrites_saved", None) is not None else None
