"""A transpose/permute missing before one reshape in backward, found by re-running it.

A conv-by-unfold backward computes the column gradients as an (N, L, C·k) array and reshapes it
straight to (N, C, L, k) (or to (N, C·k, L)) where forward's layout needs ``reshape(N, L, C, k)
.permute(0, 2, 1, 3)``; whatever consumes the columns afterwards (a fold, a loop of slice adds)
mixes the misplaced values, so no permutation of the whole gradient shows it. Here backward is
re-run with one of its own ``reshape``/``view`` calls replaced by ``reshape(permuted shape)`` +
``permute`` back to the shape written — one call site and one permutation at a time — and a
finding is named only when that makes the gradient equal the numerical one for every cotangent
(while the unedited backward does not).

Only calls made from backward's own code are edited (the call site is the caller's code object
and line); the method is wrapped on the tensor class (torch.Tensor, or gradcli's Tensor) for the
duration of the re-runs, under a lock, and restored afterwards.
"""
from __future__ import annotations

import itertools
import sys
import threading
import time

from gradcli.check.diagnosis.probe import ProbeError
from gradcli.check.diagnosis.source import backward_code
from gradcli.check.report import Finding

METHODS = ("reshape", "view")
# methods whose first argument (or ``dim=``) is the dim they work along
DIM_METHODS = ("sum", "mean", "softmax", "log_softmax", "cumsum", "scatter", "scatter_add", "gather", "index_select",
               "index_add", "logsumexp", "amax", "amin",  # not norm: its first argument is p
               "scatter_", "scatter_add_", "index_add_")  # the in-place writes: dim first too
# mask builders whose ``diagonal`` offset decides which elements a causal mask keeps
DIAGONAL_METHODS = ("triu", "tril")
MAX_CANDIDATES = 120  # (call site, change) pairs re-run per input
BUDGET_S = 3.0  # and at most this long: a large Function's re-runs must not eat its check's timeout
_LOCK = threading.Lock()


def _tensor_class(probe):
    if probe.backend == "torch":
        import torch

        return torch.Tensor
    from gradcli.autograd.tensor import Tensor

    return Tensor


def _namespaces(probe):
    """The modules whose dim functions backward may call as ``torch.sum(x, dim)``, ``F.softmax(x, dim)``."""
    if probe.backend == "torch":
        import torch
        import torch.nn.functional

        return [torch, torch.nn.functional]
    import gradcli

    return [gradcli]  # (gradcli.nn is no room the checker may import)


class _Patched:
    """Wraps ``reshape``/``view`` of the tensor class: records backward's calls, or edits one site."""

    def __init__(self, cls, code, modules=()):
        self.cls, self.code, self.modules = cls, code, list(modules)
        self.sites = set()  # ("reshape", line, input shape, shape written), ("dim", method, line, shape, dim)
        self.edit = None  # (site, permutation)

    def __enter__(self):
        _LOCK.acquire()
        self.saved = []  # (owner, name, what its __dict__ held: None when inherited or lazily resolved)
        try:
            for name in [n for n in METHODS + DIM_METHODS + DIAGONAL_METHODS if hasattr(self.cls, n)]:
                original = getattr(self.cls, name)
                self.saved.append((self.cls, name, self.cls.__dict__.get(name)))
                setattr(self.cls, name, self._wrap(original) if name in METHODS else self._wrap_diagonal(
                    name, original) if name in DIAGONAL_METHODS else self._wrap_dim(name, original))
            for module in self.modules:  # torch.sum(x, dim): the tensor is the first argument
                for name in [n for n in DIM_METHODS + DIAGONAL_METHODS if callable(getattr(module, n, None))]:
                    original = getattr(module, name)
                    self.saved.append((module, name, module.__dict__.get(name)))
                    setattr(module, name, self._wrap_diagonal(name, original, function=True)
                            if name in DIAGONAL_METHODS else self._wrap_dim(name, original, function=True))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        try:
            for owner, name, original in reversed(self.saved):
                if original is None:
                    delattr(owner, name)  # inherited (torch.Tensor from its C base) or resolved lazily
                else:
                    setattr(owner, name, original)
        finally:
            _LOCK.release()

    def _wrap(self, original):
        patched = self

        def wrapper(tensor, *shape, **kwargs):
            frame = sys._getframe(1)
            if frame.f_code is not patched.code:
                return original(tensor, *shape, **kwargs)
            out = original(tensor, *shape, **kwargs)
            # a site is a line and the shapes of the call (one line may reshape several tensors)
            site = ("reshape", frame.f_lineno, tuple(int(s) for s in tensor.shape), tuple(int(s) for s in out.shape))
            patched.sites.add(site)
            if patched.edit is None or patched.edit[0] != site:
                return out
            written = site[3]
            perm = patched.edit[1]
            inverse = [perm.index(i) for i in range(len(perm))]
            moved = original(tensor, *[written[p] for p in perm]).permute(*inverse)
            return moved.contiguous() if hasattr(moved, "contiguous") else moved

        return wrapper


    def _backward_frame(self, frame, depth=2):
        """(backward's frame, None) for a call made from backward's own code; (backward's frame, the
        helper's name) for one made by a function of backward's own file that backward called (a
        module-level ``softmax_backward(p, dp, dim=0)``: the dim is chosen at backward's line);
        (None, None) otherwise — library code calling the tensor's methods is never changed."""
        if frame.f_code is self.code:
            return frame, None
        helper, caller = frame, frame.f_back
        for _ in range(depth):
            if caller is None or helper.f_code.co_filename != self.code.co_filename:
                return None, None
            if caller.f_code is self.code:
                return caller, frame.f_code.co_name
            helper, caller = caller, caller.f_back
        return None, None

    def _wrap_dim(self, name, original, function=False):
        patched = self

        def wrapper(tensor, *args, **kwargs):
            frame, helper = patched._backward_frame(sys._getframe(1))
            if frame is None or not hasattr(tensor, "shape"):
                return original(tensor, *args, **kwargs)
            keyword = "dim" in kwargs
            dim = kwargs["dim"] if keyword else (args[0] if args else None)
            ndim = len(tensor.shape)
            if not isinstance(dim, int) or isinstance(dim, bool) or ndim < 2:
                return original(tensor, *args, **kwargs)
            called = ("torch." if function else "") + name + (f" (in {helper})" if helper else "")
            site = ("dim", called, frame.f_lineno, tuple(int(s) for s in tensor.shape), dim)
            patched.sites.add(site)
            if patched.edit is not None and patched.edit[0] == site:
                if keyword:
                    kwargs = dict(kwargs, dim=patched.edit[1])
                else:
                    args = (patched.edit[1],) + tuple(args[1:])
            return original(tensor, *args, **kwargs)

        return wrapper


    def _wrap_diagonal(self, name, original, function=False):
        """``triu``/``tril``: records the offset written (``diagonal``, default 0), or edits it."""
        patched = self

        def wrapper(tensor, *args, **kwargs):
            frame, helper = patched._backward_frame(sys._getframe(1))
            keyword = "diagonal" in kwargs
            k = kwargs["diagonal"] if keyword else (args[0] if args else 0)
            if frame is None or not hasattr(tensor, "shape") or not isinstance(k, int) or isinstance(k, bool):
                return original(tensor, *args, **kwargs)
            called = ("torch." if function else "") + name + (f" (in {helper})" if helper else "")
            site = ("diagonal", called, frame.f_lineno, tuple(int(s) for s in tensor.shape), k)
            patched.sites.add(site)
            if patched.edit is not None and patched.edit[0] == site:
                kwargs, args = dict(kwargs, diagonal=patched.edit[1]), tuple(args[1:]) if not keyword else args
            return original(tensor, *args, **kwargs)

        return wrapper


def _permutations(ndim):
    if ndim <= 4:
        return [p for p in itertools.permutations(range(ndim)) if p != tuple(range(ndim))]
    swaps = []
    for a, b in itertools.combinations(range(ndim), 2):
        p = list(range(ndim))
        p[a], p[b] = p[b], p[a]
        swaps.append(tuple(p))
    return swaps


def rerun_subject(probe, cls, ev):
    """(backward's code, analytic, numeric, numeric error) when a re-run of backward could explain ``ev``'s
    failure (its code is readable, a probe and cotangents exist, and the gradient really is wrong); else None."""
    code = backward_code(cls)
    if code is None or probe is None or not ev.cotangents or ev.analytic is None:
        return None
    if ev.fits(ev.analytic, ev.numeric, ev.numeric_error):
        return None
    return code, ev.analytic, ev.numeric, ev.numeric_error


def search(probe, cls, ev):
    """The missing_reshape finding for ``ev``'s input, or None."""
    subject = rerun_subject(probe, cls, ev)
    if subject is None:
        return None
    code, A, N, E = subject
    patched = _Patched(_tensor_class(probe), code, _namespaces(probe))
    with patched:
        try:
            probe.vjp(ev.cotangents[0])  # records backward's reshape sites
        except ProbeError:
            return None
        tried, started = 0, time.process_time()

        def spent():
            return tried > MAX_CANDIDATES or time.process_time() - started > BUDGET_S

        for site in sorted(s for s in patched.sites if s[0] == "dim"):
            _, name, line, shape, dim = site
            for other in range(len(shape)):
                if other == dim % len(shape):
                    continue
                tried += 1
                if spent():
                    return None
                patched.edit = (site, other)
                if rerun_fits(probe, ev, A, N, E):
                    patched.edit = None
                    return Finding("wrong_axis", f"backward for input {ev.name} calls {name} along dim {dim} where dim "
                                   f"{other} makes the gradient right, exactly (with that one change)",
                                   input=ev.index, params={"dims": [dim], "expected_dims": [other], "call": name,
                                                           "at_line": int(line)}, confidence=0.9)
                patched.edit = None
        for site in sorted(s for s in patched.sites if s[0] == "diagonal"):
            _, name, line, shape, k = site
            for other in (k - 1, k + 1):
                tried += 1
                if spent():
                    return None
                patched.edit = (site, other)
                if rerun_fits(probe, ev, A, N, E):
                    patched.edit = None
                    return Finding("region", f"backward for input {ev.name} masks the wrong elements: {name} with "
                                   f"diagonal {other} instead of {k} makes the gradient right, exactly (the mask's "
                                   "offset: which diagonal it keeps)", input=ev.index,
                                   params={"description": f"the mask `{name}({k})`", "call": name, "diagonal": k,
                                           "expected": other, "at_line": int(line)}, confidence=0.85)
                patched.edit = None
        for site in sorted(s for s in patched.sites if s[0] == "reshape"):
            _, line, _, written = site
            if len(written) < 2:
                continue
            for perm in _permutations(len(written)):
                if all(written[p] == 1 or p == k for k, p in enumerate(perm)):
                    continue  # moves only size-1 dims: the same layout
                tried += 1
                if spent():
                    return None
                patched.edit = (site, list(perm))
                if rerun_fits(probe, ev, A, N, E):
                    patched.edit = None
                    return _reduced_axis(ev, patched.sites, line, written, perm) or _finding(ev, line, written, perm)
                patched.edit = None
    return None


def rerun_fits(probe, ev, A, N, E):
    """The re-run backward gives the numerical gradient for every cotangent, one of them one
    where what backward gave is wrong: the evidence of every re-run (relayout, index_writes).
    (Not "differs on the first cotangent": a backward right for ones is still fixed by it.)"""
    changed = False
    for k, row in enumerate(ev.cotangents):
        try:
            g = probe.vjp(row).get(ev.index)
        except ProbeError:
            return False
        if g is None or g.size != N[k].size:
            return False
        g = g.reshape(N[k].shape)
        if not ev.fits(g, N[k], E[k]):
            return False
        changed = changed or not ev.fits(A[k], N[k], E[k])
    return changed


REDUCTIONS = ("sum", "mean", "amax", "amin", "logsumexp")


def _reduced_axis(ev, sites, line, written, perm):
    """A wrong_axis finding when the permute that fixes a reshape only moves the axis that the same
    line then reduces (``g.view(n, 2, w // 2).sum(1)`` where the copies are adjacent:
    ``g.view(n, w // 2, 2).sum(2)``): the other layout reduced over another axis, no permute."""
    inverse = [perm.index(i) for i in range(len(perm))]
    layout = [written[p] for p in perm]
    for site in sorted(s for s in sites if s[0] == "dim" and s[2] == line and s[3] == tuple(written)):
        name, dim = site[1], site[4] % len(written)
        if name.split(" ")[0].replace("torch.", "") not in REDUCTIONS:
            continue
        kept = [inverse[i] for i in range(len(written)) if i != dim]
        if kept != sorted(kept):
            continue  # the permute also reorders the axes kept: a layout's story
        shape_text = ", ".join(map(str, written))
        return Finding("wrong_axis",
                       f"backward for input {ev.name} reduces its ({shape_text}) view over dim {dim}, where the "
                       f"values to add lie along another axis: a view ({', '.join(map(str, layout))}) reduced over dim "
                       f"{inverse[dim]} makes the gradient right, exactly", input=ev.index,
                       params={"dims": [dim], "expected_dims": [inverse[dim]], "call": name, "written": list(written),
                               "layout": layout, "at_line": int(line)}, confidence=0.85)
    return None


def _finding(ev, line, written, perm):
    layout = [written[p] for p in perm]
    inverse = [perm.index(i) for i in range(len(perm))]
    shape_text = ", ".join(str(s) for s in written)
    return Finding("missing_reshape",
                   f"backward for input {ev.name} reshapes to ({shape_text}) where forward's layout needs a reshape to "
                   f"({', '.join(str(s) for s in layout)}) and permute({', '.join(map(str, inverse))}): with that one "
                   "change the gradient is right, exactly",
                   input=ev.index, params={"side": "intermediate", "layout": layout, "permute": inverse,
                                           "written": list(written), "at_line": int(line)}, confidence=0.85)


def missing_permute(ev):
    if ev.relayout is None or ev.support() < 3:
        return None
    return ev.relayout()

