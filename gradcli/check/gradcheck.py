"""``gradcli.gradcheck(fn, inputs, **options) -> CheckReport``.

One session per call: run the forward once with a graph, take vector-Jacobian products for a few
probe cotangents (ones and random: never only ones), compare them with the numerical reference
(per element in full mode, along random directions in fast mode), and add the structural checks.
The contract is written down in specs/gradcheck.md; the report's in specs/report.md.
"""
from __future__ import annotations

import time
from typing import Optional

import numpy as np

from gradcli.check import backends as _backends
from gradcli.check import checks as _checks
from gradcli.check.compare import compare_elements, compare_probes, values_check
from gradcli.check.report import Check, CheckReport, InputResult
from gradcli.check.second_order import second_order_check
from gradcli.check.tolerances import tolerance_for, widest
from gradcli.numeric import (
    EPS64,
    METHODS,
    NumericFunction,
    Projector,
    directional,
    element_derivatives,
    step_scales,
)

MODES = ("auto", "full", "fast")
AUTO_FULL_ELEMENTS = 4096  # auto runs full mode up to this many differentiable input elements
LOCALIZE_MAX_ELEMENTS = 20000  # beyond this, per-element localisation needs the broadcast strategy
FULL_COTANGENTS = ("ones", "random", "random")
FAST_COTANGENTS = ("random", "random")
FAST_DIRECTION_TRIES = 3  # a direction whose probe sits on a kink is redrawn this many times


class _BackwardFailed(Exception):
    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


def gradcheck(
    fn,
    inputs,
    *,
    mode: str = "auto",
    method: str = "auto",
    seed: int = 0,
    atol: Optional[float] = None,
    rtol: Optional[float] = None,
    tolerances: Optional[dict] = None,
    nondet_tol: float = 0.0,
    second_order: bool = False,
    strict_shapes: bool = True,
    strategy: str = "auto",
    function: Optional[type] = None,
    name: Optional[str] = None,
    raise_exception: bool = False,
) -> CheckReport:
    """Check ``fn``'s backward at ``inputs``; return a CheckReport (no printing, no raising unless asked).

    ``fn``: an autograd Function class, ``MyFn.apply``, or any callable over engine or torch tensors.
    ``inputs``: a tensor or a tuple of arguments; floating tensors with requires_grad are checked
    (all floating tensors when none requires grad). Options are described in specs/gradcheck.md.
    Exceptions raised by the forward at ``inputs`` propagate; exceptions in backward are reported.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    session = _Session(fn, inputs, mode, method, seed, atol, rtol, tolerances, nondet_tol, strict_shapes,
                       strategy, function, name)
    report = session.run()
    if second_order:
        report.checks.append(second_order_check(session, gradcheck))
    else:
        report.checks.append(Check("second_order", "skip", "not requested (second_order=False)"))
    report.timing["total_s"] = time.perf_counter() - session.started
    if raise_exception:
        report.raise_if_failed()
    return report


def gradgradcheck(fn, inputs, **options) -> CheckReport:
    """gradcheck with ``second_order=True``: first and second derivatives in one report."""
    options["second_order"] = True
    return gradcheck(fn, inputs, **options)


class _Session:
    def __init__(self, fn, inputs, mode, method, seed, atol, rtol, tolerances, nondet_tol, strict_shapes,
                 strategy, function, name):
        self.started = time.perf_counter()
        self.args = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
        self.cls = function or _backends.function_class(fn)
        self.call = fn.apply if isinstance(fn, type) else fn
        # Backward's outputs line up with ``inputs`` only when we call the Function itself.
        self.positional = self.cls is not None and (
            isinstance(fn, type) or getattr(fn, "__self__", None) is self.cls or isinstance(fn, self.cls))
        self.backend = _backends.detect(fn if function is None else function, self.args)
        self.mode, self.method, self.seed, self.strategy = mode, method, seed, strategy
        self.nondet_tol, self.strict_shapes = nondet_tol, strict_shapes
        self.names = _checks.parameter_names(fn, self.cls, len(self.args))
        b = self.backend
        tensors = [i for i, a in enumerate(self.args) if b.is_tensor(a) and b.is_floating(a)]
        self.diff = [i for i in tensors if b.requires_grad(self.args[i])] or tensors
        dtypes = [b.dtype_name(a) if b.is_tensor(a) else "" for a in self.args]
        self.tolerance_dtype = widest(dtypes[i] for i in self.diff)
        self.tolerance = tolerance_for(self.tolerance_dtype, atol, rtol, tolerances)
        self.report = CheckReport(
            function=name or getattr(self.cls, "__name__", None) or getattr(fn, "__qualname__", None) or repr(fn),
            backend=b.name, requested_mode=mode, method=method, seed=seed, dtypes=dtypes,
            tolerances=dict(self.tolerance.to_dict(), nondet_tol=nondet_tol),
        )
        self.timing = self.report.timing
        self.timing.update(backward_s=0.0, numeric_s=0.0, backward_calls=0, forward_evals=0)

    # --- analytic side ------------------------------------------------------------------------

    def forward(self):
        b = self.backend
        self.leaves = {i: b.fresh_leaf(self.args[i]) for i in self.diff}
        call_args = [self.leaves.get(i, a) for i, a in enumerate(self.args)]
        before = {i: b.to_numpy(t).copy() for i, t in self.leaves.items()}
        with b.enable_grad():
            self.outputs = _backends.flatten_outputs(self.call(*call_args))
        self.modified_inputs = [self.names[i] for i, t in self.leaves.items()
                                if not np.array_equal(b.to_numpy(t), before[i], equal_nan=True)]
        self.diff_outputs = [j for j, o in enumerate(self.outputs)
                             if b.is_tensor(o) and b.is_floating(o) and b.requires_grad(o)]

    def vjp(self, cotangent, create_graph=False) -> list:
        """Backward's gradients (float64 arrays, None where backward gave None) for one cotangent."""
        if not self.diff_outputs:
            return [None] * len(self.diff)
        b, start = self.backend, time.perf_counter()
        try:
            grads = b.grad([self.outputs[j] for j in self.diff_outputs], [self.leaves[i] for i in self.diff],
                           [cotangent[j] for j in self.diff_outputs], retain_graph=True, create_graph=create_graph)
        except Exception as exc:  # noqa: BLE001 -- user code: every failure becomes a check result
            raise _BackwardFailed(exc) from exc
        finally:
            self.timing["backward_s"] += time.perf_counter() - start
            self.timing["backward_calls"] += 1
        return [None if g is None else b.to_numpy(g).astype(np.float64) for g in grads]

    def cotangents(self, kinds, rng) -> list:
        """One tuple per kind, one float64 array per output (None for non-differentiable outputs).

        Random cotangents are rounded through the output's dtype, so the numeric side projects
        with exactly the cotangent the backward received.
        """
        result = []
        for kind in kinds:
            per_output = []
            for j, out in enumerate(self.outputs):
                if j not in self.diff_outputs:
                    per_output.append(None)
                    continue
                array = self.backend.to_numpy(out)
                v = np.ones(array.shape) if kind == "ones" else rng.standard_normal(array.shape)
                per_output.append(v.astype(array.dtype).astype(np.float64))
            result.append(tuple(per_output))
        return result

    # --- numeric side ---------------------------------------------------------------------------

    def numeric_function(self) -> Optional[NumericFunction]:
        b = self.backend
        evaluate = b.evaluator(self.call, self.args, self.diff)
        originals = [b.to_numpy(self.args[i]) for i in self.diff]
        self.report.numeric_dtype = "float64"
        if any(a.dtype != np.float64 for a in originals):
            upcast = [a.astype(np.float64) for a in originals]
            try:
                outs = evaluate(upcast)
                if self._upcast_agrees(outs):
                    return NumericFunction(evaluate, upcast, EPS64)
            except Exception:  # noqa: BLE001 -- the forward refuses float64: numeric side stays in its dtype
                pass
            worst = widest(str(a.dtype) for a in originals)
            self.report.numeric_dtype = worst
            return NumericFunction(evaluate, originals, float(np.finfo(worst if worst != "bfloat16" else "float32").eps))
        return NumericFunction(evaluate, [a.astype(np.float64) for a in originals], EPS64)

    def _upcast_agrees(self, outs) -> bool:
        if len(outs) != len(self.outputs):
            return False
        for j in self.diff_outputs:
            low = self.backend.to_numpy(self.outputs[j]).astype(np.float64)
            high = np.asarray(outs[j])
            if high.dtype != np.float64 or high.shape != low.shape:
                return False
            tol = 10 * np.sqrt(float(np.finfo(self.backend.to_numpy(self.outputs[j]).dtype).eps))
            if not np.allclose(low, high, rtol=tol, atol=tol * (np.nanmax(np.abs(high), initial=0) + 1e-30),
                               equal_nan=True):
                return False
        return True

    # --- the run ---------------------------------------------------------------------------------

    def run(self) -> CheckReport:
        report = self.report
        if not self.diff:
            report.checks.append(Check("values", "skip", "no floating-point tensor inputs to differentiate"))
            return report
        with _backends.recording_backward(self.cls) as records:
            self.forward()
            self.records = records
            self._run_checks()
        return report

    def _run_checks(self):
        report, b = self.report, self.backend
        numeric_start = time.perf_counter()
        nf = self.numeric_function()
        self.timing["numeric_s"] += time.perf_counter() - numeric_start
        self.nf = nf
        structure_problems, structure_warnings = [], []
        if not self.diff_outputs:
            structure_problems.append("no output is connected to the inputs through autograd "
                                      "(forward detached them, or used .data / numpy)")
        mode = self.mode
        if mode == "auto":
            mode = "full" if sum(nf.inputs[p].size for p in range(len(self.diff))) <= AUTO_FULL_ELEMENTS else "fast"
        failure = None
        try:
            grads_by_kind = self._values(mode)
        except _BackwardFailed as exc:
            failure, grads_by_kind = exc.error, None
        # Checks that need a successful backward.
        if failure is None:
            self._after_values(grads_by_kind)
        else:
            kind = _checks.classify_backward_error(failure)
            details = _checks.exception_details(failure)
            if kind == "structure":
                structure_problems.append(details["message"])
            else:
                message = details["message"] if kind == "inplace" else f"backward raised {details['exception']}: {details['message']}"
                report.checks.append(Check(kind, "fail", message, None, details))
        if report.check("inplace") is None:
            report.checks.append(self._inplace_check())
        if self.records.results and self.positional:
            problems, warnings = _checks.raw_gradient_problems(self.records.results[0], self.args, self.names, self.diff,
                                                               b, self.strict_shapes)
            structure_problems += problems
            structure_warnings += warnings
        for name, index, got, expected in b.graph_fixups([self.outputs[j] for j in self.diff_outputs]):
            message = (f"{name}.backward returned a gradient of shape {list(got)} for an input of shape "
                       f"{list(expected)}; the engine summed it down (not reduced over the broadcast dimensions)")
            if not (self.positional and self.records.results):  # else already judged from the raw return
                (structure_problems if self.strict_shapes else structure_warnings).append(message)
        structure_problems += self._none_problems(grads_by_kind)
        report.checks.insert(0, _checks.structure_check(structure_problems, structure_warnings,
                                                        {"inputs": len(self.args), "differentiable": self.diff}))
        report.checks.insert(1, self._invoked_check())
        self.timing["forward_evals"] = nf.evaluations

    def _values(self, mode) -> list:
        """Run the value check in ``mode`` (escalating fast → full on failure); return grads per cotangent."""
        self.report.mode = mode
        rng = np.random.default_rng(self.seed)
        kinds = FULL_COTANGENTS if mode == "full" else FAST_COTANGENTS
        cotangents = self.cotangents(kinds, rng)
        grads_by_kind = [self.vjp(c) for c in cotangents]
        self.report.cotangent_kinds, self.report.cotangents = list(kinds), cotangents
        projector = Projector(cotangents, [o.shape for o in self.nf.outputs])
        if mode == "full":
            self._full(projector, grads_by_kind)
            return grads_by_kind
        check = self._fast(projector, grads_by_kind, rng)
        self.report.checks.append(check)
        if check.status != "fail":
            self.failed_cotangents = []
            return grads_by_kind
        self.report.escalated = True  # localise: which input, which element
        self.report.inputs.clear()
        return self._values("full")

    def _full(self, projector, grads_by_kind):
        self.failed_cotangents = []
        for p, i in enumerate(self.diff):
            x = self.nf.inputs[p]
            result = InputResult(self.names[i], i, tuple(x.shape), self.report.dtypes[i])
            analytic = None
            if any(g[p] is not None for g in grads_by_kind):
                analytic = np.stack([np.zeros(x.shape) if g[p] is None else g[p].reshape(x.shape) for g in grads_by_kind])
            try:
                strategy = self.strategy
                if strategy == "auto" and x.size > LOCALIZE_MAX_ELEMENTS:
                    strategy = "broadcast"
                start = time.perf_counter()
                numeric = element_derivatives(self.nf, p, projector, self.method, strategy, self.seed)
                self.timing["numeric_s"] += time.perf_counter() - start
            except ValueError:
                result.status, result.message = "skip", (
                    f"{x.size} elements are too many to localise one by one; run mode='fast' or pass strategy='batched'")
                self.report.inputs.append(result)
                continue
            result, failed_cotangents, failed_elements = compare_elements(result, analytic, numeric, self.tolerance)
            self.failed_cotangents += failed_cotangents
            self.report.inputs.append(result)
            self.report.checks.append(values_check(result, failed_cotangents, failed_elements))

    def _fast(self, projector, grads_by_kind, rng) -> Check:
        for _ in range(FAST_DIRECTION_TRIES):
            directions = [rng.standard_normal(x.shape) * step_scales(x) for x in self.nf.inputs]
            start = time.perf_counter()
            estimate = directional(self.nf, directions, projector, self.method)
            self.timing["numeric_s"] += time.perf_counter() - start
            if not np.any(estimate.kink):
                break
        else:  # every direction crossed a kink: localise per element instead
            return Check("values", "fail", "random probes kept crossing a kink; localising per element", None,
                         {"kink": True})
        for p, i in enumerate(self.diff):
            self.report.inputs.append(InputResult(self.names[i], i, tuple(self.nf.inputs[p].shape),
                                                  self.report.dtypes[i], status="skip", method=estimate.method,
                                                  message="fast mode: not localised (the random probes passed)"))
        return compare_probes(grads_by_kind, directions, estimate, self.tolerance)

    def _after_values(self, grads_by_kind):
        report = self.report
        outputs_finite = [bool(np.all(np.isfinite(self.backend.to_numpy(self.outputs[j])))) for j in self.diff_outputs]
        grads_finite = [all(g[p] is None or bool(np.all(np.isfinite(g[p]))) for g in grads_by_kind)
                        for p in range(len(self.diff))]
        report.checks.append(_checks.finite_check(outputs_finite, grads_finite))
        zero = tuple(None if c is None else np.zeros_like(c) for c in report.cotangents[0])
        try:
            zero_ok, zero_worst = _checks.zero_cotangent_check(self.vjp(zero), None)
        except _BackwardFailed:
            zero_ok, zero_worst = None, 0.0
        report.checks.append(_checks.cotangents_check(report.cotangent_kinds, self.failed_cotangents, zero_ok,
                                                      zero_worst))
        try:
            again = self.vjp(report.cotangents[-1])
            report.checks.append(_checks.reentrant_check(grads_by_kind[-1], again, self.nondet_tol))
        except _BackwardFailed as exc:
            report.checks.append(Check("reentrant", "fail", "a second backward pass raised: "
                                       + _checks.exception_details(exc.error)["message"], None,
                                       _checks.exception_details(exc.error)))
        report.checks.append(_checks.kinks_check(report.inputs, self.names))
        self.grads_by_kind = grads_by_kind

    def _inplace_check(self) -> Check:
        if self.modified_inputs:
            return Check("inplace", "fail", f"forward modified its input(s) {', '.join(self.modified_inputs)} in "
                         f"place (use .clone(), or ctx.mark_dirty for a deliberate in-place op)", None,
                         {"inputs": self.modified_inputs})
        return Check("inplace", "pass", "no saved tensor or input was modified in place", None, {})

    def _none_problems(self, grads_by_kind) -> list:
        problems = []
        if grads_by_kind is None:
            return problems
        for result in self.report.inputs:
            p = self.diff.index(result.index)
            if all(g[p] is None for g in grads_by_kind) and result.status == "fail" and self.diff_outputs:
                problems.append(f"backward returned None for {result.name}, but the function depends on it")
        return problems

    def _invoked_check(self) -> Check:
        b = self.backend
        expected = [self.cls] if self.cls is not None else _checks.referenced_functions(
            self.call, _backends._is_autograd_function)
        in_graph = b.graph_functions([self.outputs[j] for j in self.diff_outputs])
        return _checks.backward_invoked_check(expected, in_graph, self.records.calls, explicit=self.cls is not None)

