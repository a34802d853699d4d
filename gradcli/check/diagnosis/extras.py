"""The evidence a pattern may ask for, computed lazily by the driver (``_Diagnosis._enrich``):
the gradient statement's terms, substitutions and single edits, the re-runs of backward, whether
backward assigns into the gradient, and the integer inputs a region may be about. Each returns
None (or False) when the source or the function is unusual: a rule then simply has no evidence.
``diag`` is the driver's ``_Diagnosis`` (probe, cls, positions, executed lines).
"""
from __future__ import annotations

import numpy as np

from gradcli.check.diagnosis import mutations, relayout
from gradcli.check.diagnosis.backward_terms import backward_names_for, substitutions_for, terms_for
from gradcli.check.diagnosis.probe import parameter_name
from gradcli.check.diagnosis.source import backward_source, overwrite_statement


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


def backward_terms(diag, ev):
    try:
        return terms_for(diag.probe, diag.cls, diag.positions.get(ev.index, ev.index), ev.cotangents,
                         diag.executed)
    except Exception:  # an unusual backward: term_sign simply has no evidence
        return None


def substitutions(diag, ev):
    try:
        return substitutions_for(diag.probe, diag.cls, diag.positions.get(ev.index, ev.index), ev.cotangents,
                                 diag.executed)
    except Exception:  # an unusual backward: no statement-level evidence
        return None


def backward_names(diag, ev):
    try:
        return backward_names_for(diag.probe, diag.cls, diag.positions.get(ev.index, ev.index), ev.cotangents,
                                  diag.executed)
    except Exception:  # an unusual backward: no names to build terms from
        return []


def backward_rows(diag, ev):
    from gradcli.check.diagnosis.backward_terms import backward_rows_for

    try:
        return backward_rows_for(diag.probe, diag.cls, diag.positions.get(ev.index, ev.index), ev.cotangents,
                                 diag.executed)
    except Exception:  # an unusual backward: no names to build terms from
        return []


def edits(diag, ev):
    try:
        return mutations.statement_edits(diag.probe, diag.cls, diag.positions.get(ev.index, ev.index),
                                         ev.cotangents, diag.executed)
    except Exception:  # an unusual backward: no statement-level evidence
        return None


def relayout_finding(diag, ev):
    try:
        return relayout.search(diag.probe, diag.cls, ev)
    except Exception:  # an unusual backward: no re-run evidence
        return None


def overwrites(diag, ev) -> bool:
    try:
        src = backward_source(diag.cls, diag.executed)
        position = diag.positions.get(ev.index, ev.index)
        return src is not None and overwrite_statement(src, position) is not None
    except Exception:  # unparsable source: no source evidence
        return False
