"""The evidence a pattern may ask for, computed lazily by the driver (``_Diagnosis._enrich``):
the gradient statement's terms, substitutions and single edits, the re-runs of backward, whether
backward assigns into the gradient, and the integer inputs a region may be about. Each returns
None (or False) when the source or the function is unusual: a rule then simply has no evidence.
``diag`` is the driver's ``_Diagnosis`` (probe, cls, positions, executed lines).
"""
from __future__ import annotations

import itertools

import numpy as np

from gradcli.check.diagnosis import index_writes, mutations, relayout
from gradcli.check.diagnosis.backward_terms import backward_names_for, substitutions_for, terms_for
from gradcli.check.diagnosis.probe import parameter_name
from gradcli.check.diagnosis.source import backward_source, chain, gradient_statement, overwrite_statement
from gradcli.check.diagnosis.values_source import strided_cotangent_read


def labels(diag):
    """(name, int64 array) of the integer tensor inputs (class targets, indices): a loss whose
    backward is wrong on the rows of one target value (an ignore_index) is a region of them."""
    from gradcli.check.diagnosis.probe import _to_numpy

    found = []
    for i, arg in enumerate(diag.probe.args):
        if i in diag.probe.values or not hasattr(arg, "shape") or not hasattr(arg, "dtype"):
            continue
        try:
            z = np.asarray(_to_numpy(arg))
        except Exception:  # not array-like after all
            continue
        if z.ndim >= 1 and np.issubdtype(z.dtype, np.integer):
            found.append((parameter_name(diag.probe.fn, i), z.astype(np.int64)))
    return found


def masks(diag):
    """(name, bool array) of the two-valued tensor inputs (a padding or keep mask, bool or 0/1):
    a backward that forgets to apply one is wrong exactly on one of its sides."""
    from gradcli.check.diagnosis.probe import _to_numpy

    found = []
    for i, arg in enumerate(diag.probe.args):
        if i in diag.probe.values or not hasattr(arg, "shape") or not hasattr(arg, "dtype"):
            continue
        try:
            z = np.asarray(_to_numpy(arg))
        except Exception:  # not array-like after all
            continue
        if z.ndim >= 1 and (z.dtype == bool or np.issubdtype(z.dtype, np.integer) and set(np.unique(z)) <= {0, 1}):
            found.append((parameter_name(diag.probe.fn, i), z != 0))
    return found


def embeddings(z, shape):
    """``z`` broadcast to ``shape`` each way its axes can sit among shape's, in order (a (N, L)
    mask on (N, C, L) as (N, 1, L)); at most a few."""
    found = []
    if z.ndim > len(shape) or len(shape) > 6:
        return found
    for axes in itertools.combinations(range(len(shape)), z.ndim):
        if all(shape[a] == z.shape[k] for k, a in enumerate(axes)):
            view = [1] * len(shape)
            for k, a in enumerate(axes):
                view[a] = z.shape[k]
            found.append(np.broadcast_to(z.reshape(view), shape))
    return found[:4]


def _at_statement(builder, diag, ev, default):
    """``builder``'s evidence about the statement that computes input ``ev``'s gradient; ``default``
    when backward is unusual (a rule then simply has no statement-level evidence)."""
    try:
        return builder(diag.probe, diag.cls, diag.positions.get(ev.index, ev.index), ev.cotangents, diag.executed)
    except Exception:  # noqa: BLE001 -- an unusual backward: no evidence, never an error
        return default


def backward_terms(diag, ev):
    return _at_statement(terms_for, diag, ev, None)


def substitutions(diag, ev):
    return _at_statement(substitutions_for, diag, ev, None)


def backward_names(diag, ev):
    return _at_statement(backward_names_for, diag, ev, [])


def backward_rows(diag, ev):
    from gradcli.check.diagnosis.backward_terms import backward_rows_for

    return _at_statement(backward_rows_for, diag, ev, [])


def edits(diag, ev):
    return _at_statement(mutations.statement_edits, diag, ev, None)


def relayout_finding(diag, ev):
    try:
        return relayout.search(diag.probe, diag.cls, ev)
    except Exception:  # an unusual backward: no re-run evidence
        return None


def index_writes_finding(diag, ev):
    try:
        return index_writes.search(diag.probe, diag.cls, ev)
    except Exception:  # an unusual backward: no re-run evidence
        return None


def flips_finding(diag, ev):
    from gradcli.check.diagnosis import flips

    try:
        return flips.search(diag.probe, diag.cls, ev, diag.executed)
    except Exception:  # an unusual backward: no re-run evidence
        return None


def rewrites_finding(diag, ev, saves=False, late=False):
    from gradcli.check.diagnosis import rewrites

    try:
        return rewrites.search(diag.probe, diag.cls, ev, diag.executed, diag.positions.get(ev.index, ev.index), saves,
                               late=late)
    except Exception:  # an unusual backward: no re-run evidence
        return None


def overwrites(diag, ev) -> bool:
    try:
        src = backward_source(diag.cls, diag.executed)
        position = diag.positions.get(ev.index, ev.index)
        return src is not None and (overwrite_statement(src, position) is not None
                                    or strided_cotangent_read(src, position) is not None)
    except Exception:  # unparsable source: no source evidence
        return False


def empty_masks(diag, ev):
    """(name, line, code) of each mask the gradient's statements compute by a comparison
    (``active = (s - t > 0)...``) that is false at every element: a gradient that is zero only
    because of it has the mask's condition wrong, not a forgotten gradient. [] when none."""
    import ast

    try:
        src = backward_source(diag.cls, diag.executed)
        statement, expr = gradient_statement(src, diag.positions.get(ev.index, ev.index))
        if statement is None or expr is None:
            return []
        assigned = {}
        for stmt in chain(src, statement, expr):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and any(isinstance(n, ast.Compare) for n in ast.walk(stmt.value)):
                assigned[stmt.targets[0].id] = stmt
        found = []
        for name, z in ev.backward_names() or []:
            z = np.asarray(z)
            if name in assigned and z.size > 1 and not np.any(z):
                stmt = assigned[name]
                found.append((name, src.line_of(stmt), src.code(stmt)))
        return found
    except Exception:  # noqa: BLE001 -- an unusual backward: no evidence about its masks
        return []


def forward_pieces(diag, ev):
    from gradcli.check.diagnosis.held_constant import held_vjps

    try:
        return held_vjps(diag, ev)
    except Exception:  # noqa: BLE001 -- unreadable forward, user code raising on a shifted input: no evidence
        return None
