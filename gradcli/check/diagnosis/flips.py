"""A tensor read unflipped at one statement of backward, found by re-running it.

A convolution's input gradient is a full correlation of grad_output with the *flipped* kernel;
written with the kernel as it is (``F.conv1d(padded, w.view(1, 1, -1))``, a helper given ``w``
where ``w.flip(-1)`` is needed), every element is wrong and no transformation of the whole
gradient shows it. Here backward is re-run with one local tensor name replaced by its flip along
one dim of 3 or more elements while one statement runs (restored at the next line, unless the
statement assigned the name) — one (line, name, dim) at a time —
and a finding is named only when that makes the gradient equal the numerical one for every
cotangent (``relayout.rerun_fits``). The flip is applied through the frame's locals by a line
tracer on backward's own code object (chained to a tracer already installed); nothing is
``eval``ed, the user's backward runs with one tensor read flipped.
"""
from __future__ import annotations

import ast
import ctypes
import sys
import time

import numpy as np

from gradcli.check.diagnosis.relayout import rerun_fits, rerun_subject
from gradcli.check.diagnosis.source import backward_source, statements
from gradcli.check.report import Finding

BUDGET_S = 2.0
MAX_CANDIDATES = 60
NOT_TENSORS = ("ctx", "self", "torch", "np", "math", "F", "gradcli", "range", "len")  # no re-run spent on them


def _store(frame, name, value):
    frame.f_locals[name] = value
    to_fast = getattr(ctypes.pythonapi, "PyFrame_LocalsToFast", None)
    if to_fast is not None:  # Python ≤ 3.12: write the locals dict back into the frame
        to_fast(ctypes.py_object(frame), ctypes.c_int(0))


def _varied(tensor) -> bool:
    """Three or more distinct values: a two-valued tensor (±c, a sign) reversed is just another
    arrangement of its two values — any permutation with the same pattern fits as well."""
    from gradcli.check.diagnosis.probe import _to_numpy

    try:
        return len(np.unique(_to_numpy(tensor))) >= 3
    except Exception:  # noqa: BLE001 -- an unusual tensor: flip it as before
        return True


class _FlipOnce:
    """While the block runs, flips local ``name`` along ``dim`` for the statement at lines
    ``line``..``end`` of backward's code (and puts the original back when the next statement
    starts: a statement written over several lines reports a line event for each)."""

    def __init__(self, code, line, name, dim, end=None):
        self.code, self.line, self.name, self.dim = code, line, name, dim
        self.end = line if end is None else end

    def __enter__(self):
        self.previous = sys.gettrace()
        previous, patched = self.previous, self

        def tracer(frame, event, arg):
            chained = previous(frame, event, arg) if previous is not None else None
            if frame.f_code is not patched.code:
                return chained
            held = []

            def local(frame, event, arg):
                nonlocal chained
                if event == "line":
                    inside = patched.line < frame.f_lineno <= patched.end
                    if held and not inside:
                        original, flipped = held.pop()
                        if frame.f_locals.get(patched.name) is flipped:  # not reassigned by the statement
                            _store(frame, patched.name, original)
                    if frame.f_lineno == patched.line and patched.name in frame.f_locals:
                        original = frame.f_locals[patched.name]
                        shape = tuple(getattr(original, "shape", ()))
                        # along 2 elements a flip is any exchange of two (a pair's other element:
                        # a wrong index), no evidence of a reversal
                        # an index or a mask reversed is another permutation or selection (a
                        # wrong variable, a region), not a reversed sequence: only values flip
                        values = any(t in str(getattr(original, "dtype", "")) for t in ("float", "complex")) \
                            and _varied(original)
                        if hasattr(original, "flip") and values and len(shape) > patched.dim \
                                and shape[patched.dim] >= 3:
                            flipped = original.flip(patched.dim)
                            held.append((original, flipped))
                            _store(frame, patched.name, flipped)
                if chained is not None:
                    chained = chained(frame, event, arg)
                return local

            return local

        sys.settrace(tracer)
        return self

    def __exit__(self, *exc):
        sys.settrace(self.previous)
        return False


def _reads(src):
    """(file line, name) of each statement of backward reading a name as a value (not only its
    shape: ``w.shape[0]`` reads no values), in source order."""
    found = []
    for stmt in statements(src.tree):
        if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Return, ast.Expr)) or not src.ran(stmt):
            continue
        shape_reads = {id(n.value) for n in ast.walk(stmt) if isinstance(n, ast.Attribute)
                       and n.attr in ("shape", "size", "dim", "ndim", "dtype", "device", "numel")}
        names = []
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in shape_reads \
                    and node.id not in names and node.id not in NOT_TENSORS:
                names.append(node.id)
        found.extend((src.line_of(stmt), name, stmt) for name in names)
    return found


def search(probe, cls, ev, executed=None):
    """The missing_flip finding for ``ev``'s input, or None."""
    subject = rerun_subject(probe, cls, ev)
    src = backward_source(cls, executed)
    if subject is None or src is None:
        return None
    code, A, N, E = subject
    tried, started = 0, time.process_time()
    for line, name, stmt in _reads(src):
        for dim in range(4):
            tried += 1
            if tried > MAX_CANDIDATES or time.process_time() - started > BUDGET_S:
                return None
            end = line + stmt.end_lineno - stmt.lineno
            if _fits_flipped(probe, ev, A, N, E, _FlipOnce(code, line, name, dim, end)):
                flipped = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "flip"
                              and isinstance(n.func.value, ast.Name) and n.func.value.id == name for n in ast.walk(stmt))
                what = f"flips `{name}` where it is needed unflipped" if flipped else \
                    f"reads `{name}` where `{name}.flip({dim})` is needed"
                return Finding("missing_flip",
                               f"backward for input {ev.name} {what} "
                               f"(`{src.code(stmt)}`): with that one change the gradient is right, exactly — a "
                               "correlation with the flipped kernel, or a reversed sequence",
                               input=ev.index, params={"variant": "operand", "operand": name, "dim": dim,
                                                       "flipped": flipped, "at_line": int(line)}, confidence=0.85)
    return None


def _fits_flipped(probe, ev, A, N, E, flip):
    with flip:
        return rerun_fits(probe, ev, A, N, E)


def flipped_operand(ev):
    if getattr(ev, "flips", None) is None or ev.support() < 3:
        return None
    return ev.flips()
