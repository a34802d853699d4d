"""The analytic side of a gradcheck session: one forward with a graph, then backward passes.

``Analytic`` runs the forward once on leaf tensors, draws the probe cotangents and takes
vector-Jacobian products through the backend. ``probe`` runs every cotangent through backward,
handing each gradient set to a consumer (full mode keeps the arrays, fast mode reduces them to
dot products at once, so memory stays a few times the inputs' size), and judges reentrancy and
the zero cotangent on the way.
"""
from __future__ import annotations

import time
from typing import Callable, Optional, Sequence

import numpy as np

from gradcli.check import backends as _backends
from gradcli.check import checks as _checks
from gradcli.check.report import Check

from gradcli.check.backends import COPY_INPUTS_MAX_ELEMENTS


class BackwardFailed(Exception):
    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


class Analytic:
    def __init__(self, backend, call: Callable, args: Sequence, diff: Sequence[int], names: Sequence[str], timing: dict,
                 unconnected_as_zero: bool = False):
        """``unconnected_as_zero``: compare every floating output, those autograd does not connect to
        the inputs as having a zero derivative (the second order's view of a backward whose result
        does not depend on the inputs); by default they are left out, as torch leaves out outputs
        marked non-differentiable."""
        self.backend, self.call, self.args, self.diff, self.names = backend, call, tuple(args), list(diff), names
        self.timing = timing
        self.unconnected_as_zero = unconnected_as_zero

    def forward(self):
        b = self.backend
        total = sum(b.to_numpy(self.args[i]).size for i in self.diff)
        copy = total <= COPY_INPUTS_MAX_ELEMENTS
        self.leaves = {i: b.fresh_leaf(self.args[i]) if copy else b.shared_leaf(self.args[i]) for i in self.diff}
        passed = dict(self.leaves)
        versions = {i: b.version(t) for i, t in passed.items()}

        def call():
            return _backends.flatten_outputs(self.call(*[passed.get(i, _backends.fresh_container(a))
                                                         for i, a in enumerate(self.args)]))

        with b.enable_grad():
            try:
                self.outputs = call()
            except RuntimeError as error:
                if "leaf Variable that requires grad" not in str(error):
                    raise
                if not copy:  # the first attempt wrote into the caller's own tensors: no clean second one
                    raise RuntimeError(f"forward modifies an input in place (ctx.mark_dirty), and inputs above "
                                       f"{COPY_INPUTS_MAX_ELEMENTS} elements are not copied: check it at a smaller "
                                       f"size") from error
                # forward changed an input in place and declared it (ctx.mark_dirty); autograd refuses that
                # on a leaf, and the leaves are the check's own: it gets copies inside the graph instead,
                # as a user would write F.apply(x.clone())
                self.leaves = {i: b.fresh_leaf(self.args[i]) for i in self.diff}
                passed = {i: b.clone_in_graph(t) for i, t in self.leaves.items()}
                versions = {i: b.version(t) for i, t in passed.items()}
                self.outputs = call()
        # In-place writes bump a tensor's version counter (both engines): no copy needed to notice. An
        # input returned as an output was marked dirty (a declared in-place op), not modified behind autograd.
        returned = {id(o) for o in self.outputs}
        self.modified_inputs = [self.names[i] for i, t in passed.items()
                                if b.version(t) != versions[i] and not (t is not self.leaves[i] and id(t) in returned)]
        floating = [j for j, o in enumerate(self.outputs) if b.is_tensor(o) and b.is_floating(o)]
        self.diff_outputs = [j for j in floating if b.requires_grad(self.outputs[j])]
        # Outputs the numeric side projects: as torch, the differentiable ones (a float output marked
        # non-differentiable is left out); if none is connected, every float output, so the values
        # check can show that the function does depend on its inputs.
        self.compared_outputs = floating if self.unconnected_as_zero else (self.diff_outputs or floating)
        self.unconnected_outputs = [j for j in floating if j not in self.diff_outputs]

    def output_arrays(self) -> list:
        return [self.backend.to_numpy(o) if self.backend.is_tensor(o) else np.asarray(o) for o in self.outputs]

    def vjp(self, cotangent, create_graph=False) -> list:
        """Backward's gradients (float64 arrays, None where backward gave None) for one cotangent."""
        if not self.diff_outputs:
            return [None] * len(self.diff)
        b, start = self.backend, time.perf_counter()
        try:
            with np.errstate(all="ignore"):  # NaN/Inf are judged by the finite check, not warned about
                grads = b.grad([self.outputs[j] for j in self.diff_outputs], [self.leaves[i] for i in self.diff],
                               [cotangent[j] for j in self.diff_outputs], retain_graph=True,
                               create_graph=create_graph)
        except Exception as exc:  # noqa: BLE001 -- user code: every failure becomes a check result
            raise BackwardFailed(exc) from exc
        finally:
            self.timing["backward_s"] += time.perf_counter() - start
            self.timing["backward_calls"] += 1
        return [None if g is None else b.to_numpy(g).astype(np.float64, copy=False) for g in grads]

    def cotangents(self, kinds: Sequence[str], rng, storage=np.float64) -> list:
        """One tuple per kind, one array per output (None for non-differentiable outputs).

        Random values are drawn in float32, so they are exact in every float dtype: the numeric
        side projects with exactly the cotangent the backward received. ``storage`` float32 halves
        the memory of huge cotangents (fast mode).
        """
        result = []
        for kind in kinds:
            per_output = []
            for j, out in enumerate(self.outputs):
                if j not in self.compared_outputs:
                    per_output.append(None)
                    continue
                shape = self.backend.to_numpy(out).shape
                v = np.ones(shape, dtype=storage) if kind == "ones" else rng.standard_normal(shape, dtype=np.float32)
                per_output.append(v.astype(storage, copy=False))
            result.append(tuple(per_output))
        return result

    def probe(self, cotangents: Sequence, consume: Callable, nondet_tol: float) -> "ProbeSummary":
        """Backward for every cotangent; ``consume(c, grads)`` keeps what it needs of each result.

        The last cotangent runs twice in a row (reentrancy) and a zero cotangent once; raises
        BackwardFailed when backward raises for a probe cotangent.
        """
        summary = ProbeSummary(len(self.diff))
        last = len(cotangents) - 1
        for c, cotangent in enumerate(cotangents):
            grads = self.vjp(cotangent)
            summary.record(grads)
            if c == last:
                summary.reentrant = self._reentrant(cotangent, grads, nondet_tol)
            consume(c, grads)
            del grads
        # float64 zeros: a float32 cotangent would be converted to a float64 copy inside backward
        summary.zero_ok, summary.zero_worst = self.zero_probe()
        return summary

    def zero_probe(self) -> tuple:
        """(ok, max |g|) of backward for a zero cotangent; (None, 0) when backward raised.

        Computed once, and first (before the probe cotangents exist): it is one more full-size
        backward, and memory peaks during backward passes.
        """
        if not hasattr(self, "_zero"):
            zero = [None if j not in self.diff_outputs else np.zeros(self.backend.to_numpy(o).shape)
                    for j, o in enumerate(self.outputs)]
            try:
                self._zero = _checks.zero_cotangent_check(self.vjp(zero), None)
            except BackwardFailed:
                self._zero = (None, 0.0)
        return self._zero


    def _reentrant(self, cotangent, grads, nondet_tol) -> Check:
        try:
            again = self.vjp(cotangent)
        except BackwardFailed as exc:
            if _checks.classify_backward_error(exc.error) == "inplace":
                raise  # backward changed a saved tensor: that is the finding, reported as inplace
            details = _checks.exception_details(exc.error)
            return Check("reentrant", "fail", "a second backward pass raised: " + details["message"], None, details)
        return _checks.reentrant_check(grads, again, nondet_tol)


class ProbeSummary:
    """What the checks need to know about the backward's results, without keeping the arrays."""

    def __init__(self, n_inputs: int):
        self.none = [True] * n_inputs  # backward returned None for this input under every cotangent
        self.finite = [True] * n_inputs
        self.reentrant: Optional[Check] = None
        self.zero_ok: Optional[bool] = None
        self.zero_worst = 0.0

    def record(self, grads):
        for p, g in enumerate(grads):
            if g is not None:
                self.none[p] = False
                self.finite[p] = self.finite[p] and bool(np.isfinite(g).all())
