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
from gradcli.check import complex_view as _complex
from gradcli.check import determinism as _determinism
from gradcli.check import value_phases as _phases
from gradcli.check.analytic import Analytic, BackwardFailed
from gradcli.check.backward_records import recording_backward
from gradcli.check.check_clock import Stopwatch
from gradcli.check.function_features import add_feature_checks
from gradcli.check.compare import compare_elements, settled_elements, values_check
from gradcli.check.symmetric_parts import NOTE as SYMMETRIC_NOTE
from gradcli.check.symmetric_parts import backward_is_symmetric, convention_only, symmetric_parts_agree
from gradcli.check.too_large import probe_too_large
from gradcli.check.report import Check, CheckReport, InputResult
from gradcli.check.second_order import second_order_check
from gradcli.check.tolerances import EPS_BY_DTYPE, tolerance_for, widest
from gradcli.numeric import EPS64, METHODS, NumericFunction, Projector, element_derivatives, user_step
from gradcli.numeric.time_budget import OverBudget

MODES = ("auto", "full", "fast")
AUTO_FULL_ELEMENTS = 4096  # auto runs full mode up to this many differentiable input elements
LOCALIZE_MAX_ELEMENTS = 20000  # beyond this, per-element localisation needs the broadcast strategy
FULL_COTANGENTS = ("ones", "random", "random")
FAST_COTANGENTS = ("random", "random")


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
    strict_shapes: bool = False,
    strategy: str = "auto",
    function: Optional[type] = None,
    name: Optional[str] = None,
    raise_exception: bool = False,
    eps: Optional[float] = None,
    time_budget: Optional[float] = None,
    repeat: Optional[int] = None,
    layouts: bool = True,
) -> CheckReport:
    """Check ``fn``'s backward at ``inputs``; return a CheckReport (no printing, no raising unless asked).

    ``fn``: an autograd Function class, ``MyFn.apply``, or any callable over engine or torch tensors.
    ``inputs``: a tensor or a tuple of arguments; floating tensors with requires_grad are checked
    (all floating tensors when none requires grad). Options are described in specs/gradcheck.md.
    Exceptions raised by the forward at ``inputs`` propagate; exceptions in backward are reported.
    ``eps``: a central-difference step of your own (torch's ``eps``), taken besides the default one,
    the better kept per element: it can only improve the reference (specs/gradcheck.md).
    ``time_budget``: seconds full mode may spend localising; an input whose element-by-element
    reference is estimated to need more is checked along random directions instead, and says so.
    ``repeat``: run backward that many times for the reentrant check (spread, suggested nondet_tol);
    ``layouts``: also try non-contiguous and expanded inputs (function_features.py).
    """
    _validate(mode, method, eps)
    options = dict(mode=mode, method=method, seed=seed, atol=atol, rtol=rtol, tolerances=tolerances,
                   nondet_tol=nondet_tol, strict_shapes=strict_shapes, strategy=strategy, name=name, eps=eps,
                   time_budget=time_budget)
    fn, inputs, function = _complex_view(fn, inputs, function, None)
    session = _Session(fn, inputs, function=function, **options)
    report = session.run()
    if session.backend.name == "torch" and _complex.has_complex_outputs(getattr(session.analytic, "outputs", ())):
        fn, inputs, function = _complex_view(fn, inputs, function, True)  # complex outputs: their real view
        session = _Session(fn, inputs, function=function, **options)
        report = session.run()
    session, report = _determinism.settle(  # a forward that draws random numbers: same draws, or no PASS
        session, report, lambda: _Session(fn, inputs, function=function, reseed=True, **options))
    if second_order and session.diff:
        report.checks.append(second_order_check(session, _inner_session))
    else:
        report.checks.append(Check("second_order", "skip", "not requested (second_order=False)"))
    add_feature_checks(session, report, repeat=repeat, layouts=layouts and not session.reseeded)  # jvp, vmap, ...
    if layouts and session.reseeded:
        _determinism.explain_layouts(report)
    report.timing["total_s"] = time.perf_counter() - session.started
    if not report.ok and not convention_only(report):  # name the pattern behind the failure (specs/diagnosis.md)
        from gradcli.check.diagnosis import attach  # never raises
        attach(report, session.call if session.reseeded else fn, session.args)
    if raise_exception:
        report.raise_if_failed()
    return report


def _complex_view(fn, inputs, function, outputs_complex):
    """Complex tensors (torch) are checked through their real view (check.complex_view); engine: refused."""
    args = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    if _backends.detect(fn if function is None else function, args).name != "torch":
        _complex.refuse_engine_complex(args)
        return fn, inputs, function
    if outputs_complex or any(_complex._torch_complex(a) for a in args):
        return _complex.realified(fn, args, function)
    return fn, inputs, function


def gradgradcheck(fn, inputs, **options) -> CheckReport:
    """gradcheck with ``second_order=True``: first and second derivatives in one report."""
    options["second_order"] = True
    return gradcheck(fn, inputs, **options)


def _validate(mode, method, eps):
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    if eps is not None:
        user_step(eps)  # raises ValueError for a step outside (0, 1)


def _inner_session(fn, inputs, **options) -> "_Session":
    """The second order's check of backward as a function (second_order.py): a first-order session
    in which outputs autograd does not connect to the inputs count as having a zero derivative
    (compared with the numeric one) instead of failing ``structure``; no diagnosis, no recursion."""
    session = _Session(fn, inputs, unconnected_as_zero=True, **options)
    session.run()
    return session


class _Session:
    def __init__(self, fn, inputs, *, mode="auto", method="auto", seed=0, atol=None, rtol=None, tolerances=None,
                 nondet_tol=0.0, strict_shapes=False, strategy="auto", function=None, name=None, eps=None,
                 unconnected_as_zero=False, time_budget=None, reseed=False):
        self.started = time.perf_counter()
        self.watch = Stopwatch()  # time_budget is check time (CPU time, check_clock.py): the same on a busy machine
        self.args = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
        self.cls = function or _backends.function_class(fn)
        self.call = fn.apply if isinstance(fn, type) else fn
        if reseed:  # a forward that draws random numbers, made repeatable (determinism.py)
            self.call = _determinism.reseeding(self.call)
        self.reseeded = reseed
        # Backward's outputs line up with ``inputs`` only when we call the Function itself.
        self.positional = self.cls is not None and (
            isinstance(fn, type) or getattr(fn, "__self__", None) is self.cls or isinstance(fn, self.cls))
        self.backend = b = _backends.detect(fn if function is None else function, self.args)
        self.mode, self.method, self.seed, self.strategy = mode, method, seed, strategy
        self.nondet_tol, self.strict_shapes = nondet_tol, strict_shapes
        self.eps, self.unconnected_as_zero = eps, unconnected_as_zero
        self.time_budget = time_budget
        self.fast_reasons = {}  # input position -> why full mode checked it along random directions
        self.names = _checks.parameter_names(fn, self.cls, len(self.args))
        tensors = [i for i, a in enumerate(self.args) if b.is_tensor(a) and b.is_floating(a)]
        self.diff = [i for i in tensors if b.requires_grad(self.args[i])] or tensors
        dtypes = [b.dtype_name(a) if b.is_tensor(a) else "" for a in self.args]
        self.tolerance_dtype = widest(dtypes[i] for i in self.diff)
        self.tolerance = tolerance_for(self.tolerance_dtype, atol, rtol, tolerances)
        self.report = CheckReport(
            function=name or getattr(self.cls, "__name__", None) or getattr(fn, "__qualname__", None) or repr(fn),
            backend=b.name, requested_mode=mode, method=method, seed=seed, dtypes=dtypes,
            tolerances=dict(self.tolerance.to_dict(), nondet_tol=nondet_tol, eps=None),
        )
        self.timing = self.report.timing
        self.timing.update(backward_s=0.0, numeric_s=0.0, backward_calls=0, forward_evals=0)
        self.analytic = Analytic(b, self.call, self.args, self.diff, self.names, self.timing, unconnected_as_zero)

    @property
    def diff_outputs(self):
        return self.analytic.diff_outputs

    def run(self) -> CheckReport:
        if not self.diff:
            self.report.checks.append(Check("values", "skip", "no floating-point tensor inputs to differentiate"))
            return self.report
        with recording_backward(self.cls) as records:
            self.records = records
            self.analytic.forward()
            if not any(self.backend.is_tensor(o) for o in self.analytic.outputs):
                return self._no_tensor_output()
            self._run_checks()
        return self.report

    def _no_tensor_output(self) -> CheckReport:
        """forward returned None, a number or an array: nothing autograd can differentiate."""
        outs = self.analytic.outputs
        got = ", ".join(sorted({"None" if o is None else type(o).__name__ for o in outs})) or "nothing"
        self.report.checks.append(Check("structure", "fail", f"forward returned {got}, not a tensor: there is "
                                        "nothing to differentiate (return the output tensor(s))", None,
                                        {"inputs": len(self.args), "differentiable": self.diff,
                                         "problems": [f"forward returned {got}"], "warnings": []}))
        self.report.checks.append(Check("values", "skip", "not compared: forward returned no tensor"))
        return self.report

    # --- the numerical reference ------------------------------------------------------------------

    def numeric_function(self) -> NumericFunction:
        """The forward as a function of float64 arrays (float32 inputs are cast up when the forward
        allows it, else the numeric side keeps their dtype and its steps and eps follow it), with
        the user's central-difference step (``eps``) resolved for that precision."""
        nf = self._numeric_function()
        if self.eps is not None and self.method != "richardson":  # Richardson has its own sequence
            nf.step = user_step(self.eps, nf.eps)
            self.report.tolerances["eps"] = nf.step
        return nf

    def _numeric_function(self) -> NumericFunction:
        b, start = self.backend, time.perf_counter()
        evaluate = b.evaluator(self.call, self.args, self.diff)
        originals = [b.to_numpy(self.args[i]) for i in self.diff]
        self.report.numeric_dtype = "float64"
        try:
            if all(a.dtype == np.float64 for a in originals):
                # The analytic forward already computed f(x): reuse it (one evaluation, one copy less).
                return NumericFunction(evaluate, originals, EPS64, outputs=self.analytic.output_arrays())
            upcast = [a.astype(np.float64) for a in originals]
            try:
                outputs = evaluate(upcast)
                if self._upcast_agrees(outputs):
                    return NumericFunction(evaluate, upcast, EPS64, outputs=outputs)
            except Exception:  # noqa: BLE001 -- the forward refuses float64: the numeric side keeps the dtype
                pass
            worst = widest(self.report.dtypes[i] for i in self.diff)
            self.report.numeric_dtype = worst
            return NumericFunction(evaluate, originals, EPS_BY_DTYPE.get(worst, EPS64))
        finally:
            self.timing["numeric_s"] += time.perf_counter() - start

    def _upcast_agrees(self, outputs) -> bool:
        analytic = self.analytic.output_arrays()
        if len(outputs) != len(analytic):
            return False
        for j in self.analytic.compared_outputs:
            low, high = analytic[j], np.asarray(outputs[j])
            if high.dtype != np.float64 or high.shape != low.shape:
                return False
            tol = 10 * np.sqrt(EPS_BY_DTYPE.get(self.backend.dtype_name(self.analytic.outputs[j]), EPS64))
            if not np.allclose(low, high, rtol=tol, atol=tol * (np.nanmax(np.abs(high), initial=0) + 1e-30),
                               equal_nan=True):
                return False
        return True

    # --- the run ---------------------------------------------------------------------------------

    def _run_checks(self):
        report, b = self.report, self.backend
        self.nf = self.numeric_function()
        problems, warnings = [], []
        if not self.diff_outputs and not self.unconnected_as_zero:
            problems.append("no output is connected to the inputs through autograd "
                            "(forward detached them, or used .data / numpy)")
        mode = self.mode
        if mode == "auto":
            mode = "full" if sum(x.size for x in self.nf.inputs) <= AUTO_FULL_ELEMENTS else "fast"
        kind, self.summary = None, None
        try:
            self._values(mode)
        except BackwardFailed as exc:
            kind = _checks.classify_backward_error(exc.error)
            details = _checks.exception_details(exc.error)
            if kind == "structure":
                problems.append(details["message"])
            else:
                message = details["message"] if kind == "inplace" else (
                    f"backward raised {details['exception']}: {details['message']}")
                report.checks.append(Check(kind, "fail", message, None, details))
            report.inputs.clear()
            report.checks = [c for c in report.checks if c.name != "values"]
            report.checks.append(Check("values", "skip", "not compared: backward did not complete"))
        if self.summary is not None:
            self._after_values()
        if report.check("inplace") is None:
            report.checks.append(self._inplace_check())
        returned_shapes = None
        if self.records.results and self.positional:
            raw = self.records.results[0]
            returned_shapes = [list(r[0]) if r is not None and r[0] is not None else None for r in raw]
            raw_problems, raw_warnings = _checks.raw_gradient_problems(
                raw, self.args, self.names, self.diff, b, self.strict_shapes)
            if raw_problems and kind == "structure":
                problems.clear()  # the engine's complaint, said again from the raw return value
            problems += raw_problems
            warnings += raw_warnings
        elif self.diff_outputs:
            for fn_name, index, got, expected in b.graph_fixups([self.analytic.outputs[j] for j in self.diff_outputs]):
                message = f"{fn_name}.backward returned a gradient of shape {list(got)} for an input of shape {list(expected)}"
                if self.strict_shapes:  # (fixups are always shapes the engine summed down)
                    problems.append(message + _checks.shape_hint(got, expected))
                else:
                    warnings.append(message + _checks.SUMMED)
        if self.summary is not None and not self.unconnected_as_zero:
            problems += [f"backward returned None for {r.name}, but the function depends on it"
                         for r in report.inputs if r.status == "fail" and self.summary.none[self.diff.index(r.index)]
                         and self.diff_outputs]
        details = {"inputs": len(self.args), "differentiable": self.diff}
        if returned_shapes is not None:  # what the user's backward returned, per slot (None: no tensor)
            details["returned_shapes"] = returned_shapes
        report.checks.insert(0, _checks.structure_check(problems, warnings, details))
        report.checks.insert(1, self._invoked_check())
        self.timing["forward_evals"] = self.nf.evaluations
        self.timing["forward_evaluations"] = _checks.evaluation_counts(self.nf)

    def _values(self, mode):
        """The value check in ``mode``; fast mode escalates to full to localise a failure or a kink."""
        report = self.report
        report.mode = mode
        rng = np.random.default_rng(self.seed)
        self.analytic.zero_probe()
        kinds = FULL_COTANGENTS if mode == "full" else FAST_COTANGENTS
        # Fast mode runs on big inputs: store its cotangents in float32 (their values are float32 anyway).
        cotangents = self.analytic.cotangents(kinds, rng, np.float64 if mode == "full" else np.float32)
        report.cotangent_kinds, report.cotangents = list(kinds), cotangents
        projector = Projector(cotangents, [o.shape for o in self.nf.outputs])
        if mode == "full":
            self._full(projector, cotangents)
            return
        check = self._fast(projector, cotangents, rng)
        report.checks.append(check)
        if check.status == "pass":
            return
        report.escalated = True  # a failure (or a kink): localise element by element
        report.inputs.clear()
        self._values("full")

    def _full(self, projector, cotangents):
        kept = [[None] * len(cotangents) for _ in self.diff]

        def keep(c, grads):
            for p, g in enumerate(grads):
                kept[p][c] = g

        self.summary = self.analytic.probe(cotangents, keep, self.nondet_tol)
        self.failed_cotangents = []
        too_large = []  # (position, InputResult, analytic) of inputs checked along random directions instead
        for p, i in enumerate(self.diff):
            x = self.nf.inputs[p]
            result = InputResult(self.names[i], i, tuple(x.shape), self.report.dtypes[i])
            analytic = None
            if not self.summary.none[p]:
                analytic = np.stack([np.zeros(x.shape) if g is None else g.reshape(x.shape) for g in kept[p]])
            kept[p] = None
            strategy = self.strategy
            if strategy == "auto" and x.size > LOCALIZE_MAX_ELEMENTS:
                strategy = "broadcast"
            start = time.perf_counter()
            # method="auto": Richardson only where the cheaper estimate leaves the verdict open
            settled = settled_elements(analytic, self.tolerance, len(cotangents)) if self.method == "auto" else None
            budget = None if self.time_budget is None else self.time_budget - self.watch.elapsed()
            try:
                numeric = element_derivatives(self.nf, p, projector, self.method, strategy, self.seed, settled,
                                              budget)
            except ValueError as exc:
                if isinstance(exc, OverBudget):
                    self.fast_reasons[p] = str(exc)
                too_large.append((p, result, analytic))
                self.report.inputs.append(result)
                continue
            finally:
                self.timing["numeric_s"] += time.perf_counter() - start
            result, failed_cotangents, failed_elements = compare_elements(result, analytic, numeric, self.tolerance)
            symmetric = symmetric_parts_agree(x, result, self.tolerance)
            if symmetric:
                result.message += SYMMETRIC_NOTE
            self.failed_cotangents += failed_cotangents
            self.report.inputs.append(result)
            self.report.checks.append(values_check(result, failed_cotangents, failed_elements))
            if symmetric:
                self.report.checks[-1].details["symmetric_parts_agree"] = True
                self.report.checks[-1].details["symmetric_backward"] = backward_is_symmetric(result, self.tolerance)
        if too_large:
            probe_too_large(self, projector, cotangents, too_large)

    def _fast(self, projector, cotangents, rng) -> Check:
        return _phases.fast_values(self, projector, cotangents, rng)

    def _after_values(self):
        _phases.after_values(self)

    def _inplace_check(self) -> Check:
        return _phases.inplace_check(self)

    def _invoked_check(self) -> Check:
        return _phases.invoked_check(self)
