"""Index writes that overwrite where they must add, found by re-running backward with one fixed.

Two mistakes of the same class: ``grad_y[idx] = v`` (or ``grad_y[idx] += v``) where ``idx``
repeats an index — numpy and torch keep one of the writes to a repeated position, so the other
contributions are lost (an embedding, a Chamfer match or an interpolation knot shared by several
queries) — and ``g[:, :-1] = -grad`` after ``g[:, 1:] += grad``, which replaces the contributions
an earlier write left there (a stencil's second tap assigned). Here backward is re-run with the
index writes of one of its lines (or all of them at once) made to add: each position receives
the sum of everything written to it (``index_put_(..., accumulate=True)`` of what the write
contributes). A finding is named only when that makes the gradient equal the numerical one for
every cotangent, while the unedited backward does not.

``Tensor.__setitem__`` of the backend's tensor class is wrapped for the re-runs (under
``relayout``'s lock; restored afterwards) and only writes made from backward's own code are
changed. The edit is computed with numpy on the written tensor's values and stored back with
one whole-tensor write: the user's backward runs, with one statement's writes accumulated.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from gradcli.check.diagnosis.probe import ProbeError, _to_numpy
from gradcli.check.diagnosis.relayout import _LOCK, _tensor_class, rerun_fits, rerun_subject
from gradcli.check.report import Finding

BUDGET_S = 2.0


def _numpy_key(key):
    parts = key if isinstance(key, tuple) else (key,)
    converted = []
    for part in parts:
        if hasattr(part, "shape") and hasattr(part, "dtype"):
            converted.append(np.asarray(_to_numpy(part)))
        elif isinstance(part, list):
            converted.append(np.asarray(part))
        else:  # int, slice, None, Ellipsis
            converted.append(part)
    return tuple(converted)


class _Writes:
    """Wraps ``__setitem__``: records backward's index-write lines, or makes one line's writes add."""

    def __init__(self, cls, code, backend, augmented_lines):
        self.cls, self.code, self.backend = cls, code, backend
        self.augmented_lines = augmented_lines  # `g[k] += v` writes g[k] + v: the value less what was there
        self.lines = {}  # line -> whether one of its writes repeats a position, or lands on nonzero values
        self.edit = None  # a set of lines whose writes are accumulated

    def __enter__(self):
        _LOCK.acquire()
        self.saved = self.cls.__dict__.get("__setitem__")  # None: inherited (torch.Tensor's C base)
        original = self.cls.__setitem__
        patched = self

        def setitem(tensor, key, value):
            frame = sys._getframe(1)
            if frame.f_code is not patched.code:
                return original(tensor, key, value)
            line = frame.f_lineno
            try:
                old = np.array(_to_numpy(tensor), dtype=float)
                positions = np.arange(old.size).reshape(old.shape)[_numpy_key(key)]
                written = np.broadcast_to(np.asarray(_to_numpy(value) if hasattr(value, "shape") else value,
                                                     dtype=float), positions.shape)
            except Exception:  # an unusual key or value: leave the write as it is
                return original(tensor, key, value)
            flat = positions.ravel()
            repeats = np.unique(flat).size < flat.size
            patched.lines[line] = patched.lines.get(line, False) or repeats or bool(np.any(old.ravel()[flat]))
            if patched.edit is None or line not in patched.edit:
                return original(tensor, key, value)
            # what the write contributes: the value, less what was there for an augmented write
            # (`g[idx] += v` writes g[idx] + v); for a plain `=`, the value itself
            new = old.ravel().copy()
            contribution = written.ravel() - (old.ravel()[flat] if line in patched.augmented_lines else 0.0)
            np.add.at(new, flat, contribution)
            return original(tensor, Ellipsis, patched._tensor(new.reshape(old.shape), tensor))

        try:
            self.cls.__setitem__ = setitem
        except BaseException:
            _LOCK.release()
            raise
        return self

    def _tensor(self, array, like):
        if self.backend == "torch":
            import torch

            return torch.from_numpy(np.ascontiguousarray(array)).to(dtype=like.dtype)
        from gradcli.autograd.tensor import Tensor

        return Tensor(np.ascontiguousarray(array, dtype=like.dtype))

    def __exit__(self, *exc):
        try:
            if self.saved is None:
                del self.cls.__setitem__
            else:
                self.cls.__setitem__ = self.saved
        finally:
            _LOCK.release()


def _augmented_lines(cls):
    """The lines of backward holding an augmented index write (``g[k] += v``, ``g[k] -= v``)."""
    import ast

    from gradcli.check.diagnosis.source import backward_source

    src = backward_source(cls)
    if src is None:
        return frozenset()
    return frozenset(n.lineno for n in ast.walk(src.tree)
                     if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Subscript))


def search(probe, cls, ev):
    """The not_accumulated finding for ``ev``'s input, or None."""
    subject = rerun_subject(probe, cls, ev)
    if subject is None:
        return None
    code, A, N, E = subject
    writes = _Writes(_tensor_class(probe), code, probe.backend, _augmented_lines(cls))
    started = time.process_time()
    with writes:
        try:
            probe.vjp(ev.cotangents[0])  # records backward's index writes
        except ProbeError:
            return None
        candidates = sorted(line for line, changes in writes.lines.items() if changes)
        edits = [{line} for line in candidates] + ([set(candidates)] if len(candidates) > 1 else [])
        for edit in edits:
            if time.process_time() - started > BUDGET_S:
                return None
            writes.edit = edit
            try:
                fits = rerun_fits(probe, ev, A, N, E)
            finally:
                writes.edit = None
            if fits:
                return _finding(ev, sorted(edit))
    return None


def _finding(ev, lines):
    where = "line" if len(lines) == 1 else "lines"
    return Finding("not_accumulated",
                   f"backward for input {ev.name} overwrites instead of accumulating: with the index writes of "
                   f"{where} {', '.join(map(str, lines))} made to add (every contribution to a position summed, "
                   "repeated indices included) the gradient is right, exactly",
                   input=ev.index, params={"kept": "some", "at_line": int(lines[0]), "lines": [int(n) for n in lines],
                                           "edit": "accumulate"}, confidence=0.9)


def not_accumulated(ev):
    """The pattern: the operator's reading (a duplicate's first or last contribution kept, some
    contributions dropped), located at the write the re-run shows must add; else the re-run's
    own finding (a reduction inside forward hides the duplicates from the operator)."""
    from gradcli.check.diagnosis import operator

    rerun = ev.index_writes() if getattr(ev, "index_writes", None) is not None and ev.support() >= 2 else None
    found = operator.not_accumulated(ev)
    if found is None:
        return rerun
    if found.params.get("kept") == "some" and rerun is None:
        # contributions dropped and nothing that adds them back: a carried term left out of a
        # loop (`d[:, t] = g[:, t]` for a running sum) drops them too — no evidence of an overwrite
        return None
    if rerun is not None:
        found.params.update(at_line=rerun.params["at_line"], lines=rerun.params["lines"])
    return found
