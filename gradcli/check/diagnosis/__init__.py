"""Diagnosis: say *what* is wrong with a failing backward, not just that it is wrong.

``diagnose(report, fn, inputs)`` reads a failed ``CheckReport`` (and, when given, re-runs ``fn``
on ``inputs``) and returns ``Finding``s, documented in ``specs/diagnosis.md``:

- Function-wide first: ``inplace`` (a saved tensor or an input modified in place) and
  ``nondeterministic`` (two backward passes differ). Either makes the values meaningless, so no
  value pattern is tried after them.
- Then one finding per failed input: the first confident pattern in ``PATTERNS`` (from the most
  to the least certain), or kind ``none`` ("no simple pattern found") — never a guess: every
  rule demands a near-exact fit, and findings under ``MIN_CONFIDENCE`` are dropped.
"""
from __future__ import annotations

import ast
import time
from typing import Optional

import numpy as np

from gradcli.check.diagnosis import branch, cotangents, extras, flips, held_constant, index_writes, mutations, named_terms
from gradcli.check.diagnosis import operator
from gradcli.check.diagnosis import patterns
from gradcli.check.diagnosis import region as regions
from gradcli.check.diagnosis import relayout, rewrites, row_scale, separable
from gradcli.check.diagnosis import surrogate
from gradcli.check.diagnosis import terms
from gradcli.check.diagnosis.evidence import Evidence, lazy, nice_number
from gradcli.check.diagnosis.function_wide import function_wide
from gradcli.check.diagnosis.hints import hint
from gradcli.check.diagnosis.shared import shared_mistake
from gradcli.check.diagnosis.source import backward_code
from gradcli.check.diagnosis.probe import Probe, ProbeError, function_class, parameter_name, row_key
from gradcli.check.report import CheckReport, Finding

MIN_CONFIDENCE = 0.5
NO_PATTERN = "none"
# Most certain and simplest first: a kink explains failures away; a surrogate is a deliberate
# backward; a zero gradient is unmistakable; a constant factor is simpler than any cotangent story
# (attention missing its 1/√d is 2× too large, not "ignores grad_output"); whole-operator
# structures (flips, overwrites, layouts, axes) before the formula-level ones (but one transpose
# that makes it exact before the coupling-axes story); a term missing in one branch before the
# region it lies in; region and missing_term are the loosest descriptions, an edited copy of the
# statements (the product rule's other half) the last.
PATTERNS = (regions.kink, surrogate.straight_through, surrogate.smooth_surrogate, patterns.zero,
            surrogate.gradient_reversal, patterns.precision, patterns.swapped_mutually, patterns.scale, cotangents.ignores_grad_output,
            patterns.not_reduced_shape, patterns.swapped, patterns.transposed, patterns.not_reduced,
            operator.missing_flip, operator.dropped_output, index_writes.not_accumulated,
            operator.jacobian_transposed, operator.missing_reshape, cotangents.permuted_entries, mutations.operand_transposed, operator.wrong_axis,
            terms.wrong_variable, terms.term_sign, terms.term_coefficient, terms.statement_variable,
            # one edit of the statements, then of the arithmetic, then a re-run of backward
            mutations.statement_edit, operator.scaled_cotangent, relayout.missing_permute, flips.flipped_operand,
            separable.wrong_axis_separable, branch.branch_missing_term, rewrites.one_edit, row_scale.per_row_scale, regions.region, terms.missing_term,
            terms.missing_reduction_term, named_terms.missing_named_term, named_terms.missing_normaliser,
            rewrites.late_edit, mutations.edited_term, held_constant.held_constant, rewrites.saved_tensor,
            named_terms.missing_broadcast_term)
VALUE_CHECKS = ("values", "structure", "cotangents")  # failures a diagnosis explains


def diagnose(report: CheckReport, fn=None, inputs=None) -> list:
    """Findings for a failed report (an empty list for a passing one). With ``fn`` and ``inputs``
    the function is re-run to collect what the report does not keep (raw gradient shapes, the
    input values, one-sided derivatives, a second backward pass)."""
    if report.ok:
        return []
    with np.errstate(all="ignore"):  # NaN/Inf in a failing gradient simply fit no pattern
        return _Diagnosis(report, fn, inputs).run()


def attach(report: CheckReport, fn, inputs) -> CheckReport:
    """gradcheck's hook: fill ``report.diagnosis`` for a failed report. Never raises — a
    diagnosis is a courtesy, and a bug in it must not turn a verdict into a crash."""
    if report.ok:
        return report
    started = time.perf_counter()
    try:
        report.diagnosis = diagnose(report, fn, inputs)
    except Exception:  # noqa: BLE001 -- e.g. an argument the package built that the probes cannot read:
        report.diagnosis = []  # no finding, rather than "no simple pattern" or the exception shown as one
    report.timing["diagnosis_s"] = time.perf_counter() - started
    return report


def _takes_a_value(code: str) -> bool:
    """Whether a quoted statement assigns or returns a value (the statements a factor is tried on)."""
    try:
        tree = ast.parse(code.strip())
    except SyntaxError:
        return True
    return bool(tree.body) and isinstance(tree.body[0], (ast.Assign, ast.AugAssign, ast.Return))


class _Diagnosis:
    def __init__(self, report, fn, inputs):
        self.report = report
        self.probe = None
        if fn is not None and inputs is not None:
            indices = [r.index for r in report.inputs] or None
            try:
                self.probe = Probe(fn, inputs, indices)
                self.probe.output_mask()  # runs fn once
            except Exception:  # fn cannot be re-run on rebuilt inputs: diagnose from the report alone
                self.probe = None
        self.cls = function_class(fn, self.probe) if fn is not None else None
        indices = [r.index for r in report.inputs] or (self.probe.indices if self.probe else [])
        self.results = {r.index: r for r in report.inputs}
        self.indices = indices
        self.names = {i: self.results[i].name if i in self.results else parameter_name(fn, i) for i in indices}
        self.positions = {}
        self.executed = None  # backward's file lines that ran in one traced call
        self.failed_positions = None  # positions in backward's return whose gradient is wrong
        self.vjp_error = None

    # ----- the driver -----------------------------------------------------------------------
    def run(self) -> list:
        found = function_wide(self)
        if found:
            return [self._finish(f) for f in found]
        evidence = self._evidence()
        findings = []
        self.failed_positions = {self.positions.get(i, i) for i, ev in evidence.items() if self._failed(ev)}
        for ev in evidence.values():
            if not self._failed(ev):
                continue
            finding = None
            for pattern in PATTERNS if self._visibly_wrong(ev) else ():
                try:
                    candidate = pattern(ev)
                except (ValueError, FloatingPointError, np.linalg.LinAlgError):
                    candidate = None
                if candidate is not None and candidate.confidence >= MIN_CONFIDENCE:
                    finding = self._edit_for_few_positions(self._one_mask_for_another(candidate), ev)
                    break
            findings.append((finding or self._no_pattern(ev), ev))
        shared_mistake(self, findings)
        findings = [self._finish(f, ev) for f, ev in findings]
        structure = self.report.check("structure")
        forward_level = structure is not None and structure.status == "fail" and all(
            p.startswith("forward returned") or p.startswith("no output is connected")
            for p in (structure.details or {}).get("problems", [None]) if p is not None)
        if not findings and self.vjp_error is None and not forward_level and any(
                c.name in VALUE_CHECKS for c in self.report.failures):
            # a value failure the evidence could not localise: say so rather than nothing. Other
            # failures (backward raised, never invoked, non-finite) are explained by their check.
            findings = [self._finish(Finding(NO_PATTERN, "no simple pattern found", confidence=0.0))]
        return findings

    def _one_mask_for_another(self, finding):
        """A mask read where another mask is needed selects the wrong elements: a `region`,
        whichever rule found the tensors (backward's 0/1 locals, as it held them)."""
        if finding.kind == "wrong_variable" and self.probe is not None:
            masks = rewrites.mask_names(getattr(self.probe, "recorded", None) or {})
            if finding.params.get("used") in masks and finding.params.get("needed") in masks:
                finding.kind = "region"
                finding.params.setdefault("description", f"the mask `{finding.params['needed']}`")
        return finding

    def _edit_for_few_positions(self, finding, ev):
        """A constant factor on a scalar parameter's gradient that a recurrence's state read one step
        off explains: ``carry * (out[t] - x[t])`` for ``carry * (out[t - 1] - x[t])`` is exactly α×
        an EMA's dα (out[t] − x[t] = α·(out[t−1] − x[t])). Only that edit: a missing number or a
        missing scalar factor (a gain, a temperature) is the factor it looks like."""
        if finding.kind != "scale" or ev.support() >= 3 or self.probe is None:
            return finding
        position = self.positions.get(ev.index, ev.index)
        try:
            edited = rewrites.search(self.probe, self.cls, ev, self.executed, position,
                                     proportional=True, kinds=("wrong_variable",), step_only=True)
            if edited is None and nice_number(finding.params.get("factor", 1.0)) is None:
                # a factor at no simple number (α itself: the output α·(eˣ − 1) read for eˣ − 1)
                # that one tensor read for another explains exactly is that tensor
                edited = rewrites.search(self.probe, self.cls, ev, self.executed, position, kinds=("wrong_variable",))
        except Exception:  # noqa: BLE001 -- the factor stands
            edited = None
        return edited if edited is not None and edited.confidence >= MIN_CONFIDENCE else finding

    def _failed(self, ev: Evidence) -> bool:
        result = self.results.get(ev.index)
        if result is not None and result.status == "fail":
            return True
        return self._visibly_wrong(ev)

    @staticmethod
    def _visibly_wrong(ev: Evidence) -> bool:
        """Whether the evidence itself shows the failure: wrong elements, a wrongly shaped raw
        gradient, or None where the function depends on the input. Patterns are only fitted then
        (a fit to noise would name a pattern for a tolerance quibble)."""
        wrong = ev.wrong()
        if wrong is not None and wrong.any():
            return True
        if ev.raw is not None and any(r is not None and r.shape != tuple(ev.shape) for r in ev.raw):
            return True  # right values after the engine summed it down, but the wrong shape
        return ev.returned_none and ev.support() > 0

    def _finish(self, finding: Finding, ev: Optional[Evidence] = None) -> Finding:
        name = self.names.get(finding.input, "") if finding.input is not None else ""
        if finding.kind == "scale" and ev is not None:
            self._mean_note(finding, ev)
        position = self.positions.get(finding.input, finding.input)
        if finding.kind == "sign" and ev is not None:
            try:  # a correlation's kernel unflipped negates an antisymmetric (Sobel) kernel's adjoint
                flipped = rewrites.search(self.probe, self.cls, ev, self.executed, position, kinds=("missing_flip",))
            except Exception:  # noqa: BLE001 -- the sign stands
                flipped = None
            finding = flipped or finding
        text, location = self._hint(finding, position, name)
        if finding.kind == "term_sign" and ev is not None and finding.params.get("edit") != "rewrite":
            try:  # the term read off the gradient statement may be written with its sign earlier (`du*v + u*dv`)
                edited = rewrites.search(self.probe, self.cls, ev, self.executed, position, kinds=("term_sign",))
            except Exception:  # noqa: BLE001 -- the finding stands where it is
                edited = None
            if edited is not None and edited.kind == "term_sign" and (
                    location is None or edited.params["at_line"] != location.get("line")):
                finding = edited
                text, location = self._hint(finding, position, name)
        if finding.kind == "wrong_axis" and ev is not None and "at_line" not in finding.params:
            try:  # the coupled axes read off the operator: the statement where one dim edit makes it exact
                edited = rewrites.search(self.probe, self.cls, ev, self.executed, position, kinds=("wrong_axis",))
            except Exception:  # noqa: BLE001 -- the finding stands where it is
                edited = None
            if edited is not None and (location is None or edited.params["at_line"] != location.get("line")):
                finding = edited  # the dim that fixes it is in another statement than the usual one
                text, location = self._hint(finding, position, name)
        if finding.kind in ("sign", "swapped", "scale") and ev is not None and "at_line" not in finding.params \
                and not finding.params.get("per_slice"):
            try:  # the statements where one negation (one exchange, the factor) makes it right
                located = rewrites.locate(self.probe, self.cls, ev, finding.kind, self.executed, position,
                                          finding.params.get("factor"))
            except Exception:  # noqa: BLE001 -- no location beats a crash
                located = None
            if finding.kind == "scale" and location is not None and not _takes_a_value(location.get("code", "")):
                located = None  # `grad.scatter_(…)`, `grads.append(g)`: a statement no factor edit is tried on
            if located is not None and (located[2] or location is None or location.get("line") not in located[1]):
                finding.params["at_line"] = located[0]
                text, location = self._hint(finding, position, name)
        finding.hint = text
        if location is not None:
            finding.params["source"] = location
        return finding

    def _hint(self, finding, position, name):
        try:
            return hint(finding.kind, finding.params, self.cls, position, self.names, name,
                        self.executed, self.failed_positions)
        except Exception:  # unparsable or unusual source: the finding stands without a hint
            return "", None

    def _no_pattern(self, ev: Evidence) -> Finding:
        params = {}
        message = f"no simple pattern found for input {ev.name}"
        wrong = ev.wrong()
        if wrong is not None and wrong.size:
            params["wrong_fraction"] = float(wrong.mean())
            if not wrong.any() and ev.raw is not None:
                # the report failed, yet what backward itself returned is right
                message += (": backward's own return value agrees with the numerical derivative, so the gradient "
                            "changed after backward returned it (a hook, or the engine)")
                params["reason"] = "changed_after_backward"
        return Finding(NO_PATTERN, message, input=ev.index, params=params, confidence=0.0)

    def _mean_note(self, finding, ev):
        """A factor of 1/m where m is the number of broadcast copies: averaged instead of summed."""
        if not ev.outputs or ev.outputs[0].shape == tuple(ev.shape):
            return
        dims = patterns.broadcast_dims(ev.shape, ev.outputs[0].shape)
        copies = int(np.prod([ev.outputs[0].shape[d] for d in dims or []], dtype=int))
        if dims and abs(finding.params["factor"] * copies - 1) < 1e-9:
            finding.params["note"] = "mean instead of sum over the broadcast dims"
            finding.message += " — the mean instead of the sum over the broadcast dims"

    # ----- collecting the evidence -------------------------------------------------------------
    def _own_cotangents(self):
        """Ones and two seeded Gaussian cotangents per output (the report's may not be kept)."""
        if getattr(self, "_own", None) is None:
            shapes = self.probe.output_shapes()
            rng = np.random.default_rng(int(self.report.seed) + 8)
            rows = [tuple(np.ones(s) for s in shapes)] + [tuple(rng.standard_normal(s) for s in shapes)
                                                          for _ in range(2)]
            self._own = (["ones", "random", "random"], rows)
        return self._own

    def _report_rows(self):
        """The report's per-element arrays, when every input has them with the probe cotangents."""
        kinds, cotangents = list(self.report.cotangent_kinds), self.report.cotangents
        if not kinds or not self.report.inputs:
            return None
        if cotangents is not None:
            # gradcheck keeps None for non-differentiable outputs; the probe numbers only the others
            cotangents = [tuple(c for c in row if c is not None) for row in cotangents]
        for r in self.report.inputs:
            if r.analytic is None or r.numeric is None or np.shape(r.analytic)[0] != len(kinds):
                return None
        if cotangents is not None and len(cotangents) != len(kinds):
            cotangents = None
        return kinds, cotangents

    def _evidence(self) -> dict:
        from_report = self._report_rows()
        if from_report is None and self.probe is None:
            return {}
        evidence = {}
        if from_report is not None and (self.probe is None or from_report[1] is not None):
            kinds, rows = from_report
            for r in self.report.inputs:
                E = r.numeric_error if r.numeric_error is not None else np.zeros(np.shape(r.numeric))
                evidence[r.index] = Evidence(r.index, r.name, tuple(r.shape), r.dtype,
                                             np.asarray(r.analytic, dtype=float), np.asarray(r.numeric, dtype=float),
                                             np.asarray(E, dtype=float), list(kinds), list(rows or []),
                                             kink_mask=r.kink_mask)
        elif self.probe is not None:
            kinds, rows = self._own_cotangents()
            evidence = self._probe_evidence(kinds, rows)
        if self.probe is not None:
            self._enrich(evidence)
        for ev in evidence.values():
            ev.others = {j: other for j, other in evidence.items() if j != ev.index}
        return evidence

    def _probe_evidence(self, kinds, rows) -> dict:
        probe = self.probe
        analytic = {i: [] for i in probe.indices}
        returned_none = set()
        for row in rows:
            try:
                grads = probe.vjp(row)
            except ProbeError as err:
                self.vjp_error = err
                analytic = None
                break
            for i in probe.indices:
                if grads[i] is None:
                    returned_none.add(i)
                analytic[i].append(grads[i])
        evidence = {}
        for i in probe.indices:
            numeric = self._numeric(i, rows)
            if numeric is None:
                continue
            N, E, left, right = numeric
            A = None
            if analytic is not None and i not in returned_none:
                A = np.stack(analytic[i]).reshape(N.shape)
            result = self.results.get(i)
            dtype = result.dtype if result is not None else probe.dtypes[i].name
            evidence[i] = Evidence(i, self.names[i], tuple(probe.values[i].shape), dtype, A, N, E, list(kinds),
                                   list(rows), returned_none=i in returned_none, left=left, right=right)
        return evidence

    def _numeric(self, index, rows, values=None):
        for upcast in (True, False):  # float64 evaluation unless the forward refuses it
            try:
                return self.probe.numeric(index, rows, values=values, upcast=upcast)
            except Exception:
                continue
        return None

    def _enrich(self, evidence: dict):
        """Input values, outputs, raw gradients and the lazily computed extras."""
        probe = self.probe
        try:
            outputs = probe.forward()
        except Exception:
            outputs = []
        labels, masks = extras.labels(self), extras.masks(self)
        for i, ev in evidence.items():
            if i not in probe.values:
                continue
            ev.labels = [(name, np.broadcast_to(z.reshape(z.shape + (1,) * (len(ev.shape) - z.ndim)), ev.shape))
                         for name, z in labels if z.ndim < len(ev.shape) and z.shape == tuple(ev.shape)[:z.ndim]]
            ev.masks = [(name, view) for name, z in masks for view in extras.embeddings(z, tuple(ev.shape))]
            ev.values = np.asarray(probe.values[i], dtype=float)
            ev.outputs = outputs
            if ev.cotangents and ev.ones_row is None:
                self._add_ones_row(ev, outputs)
            ev.unreduced = lazy(lambda ev=ev: self._unreduced(ev, outputs))
            ev.one_sided = lambda positions, ev=ev: self._one_sided(ev, positions)
            ev.operator = lazy(lambda ev=ev: operator.operator_matrices(probe, ev, self._numeric))
            ev.backward_terms = lazy(lambda ev=ev: extras.backward_terms(self, ev))
            ev.overwrites = lazy(lambda ev=ev: extras.overwrites(self, ev))
            ev.substitutions = lazy(lambda ev=ev: extras.substitutions(self, ev))
            ev.edits = lazy(lambda ev=ev: extras.edits(self, ev))
            ev.backward_names = lazy(lambda ev=ev: extras.backward_names(self, ev))
            ev.backward_rows = lazy(lambda ev=ev: extras.backward_rows(self, ev))
            ev.relayout = lazy(lambda ev=ev: extras.relayout_finding(self, ev))
            ev.index_writes = lazy(lambda ev=ev: extras.index_writes_finding(self, ev))
            ev.flips = lazy(lambda ev=ev: extras.flips_finding(self, ev))
            ev.rewrites = lazy(lambda ev=ev: extras.rewrites_finding(self, ev))
            ev.rewrites_saved = lazy(lambda ev=ev: extras.rewrites_finding(self, ev, saves=True))
            ev.rewrites_late = lazy(lambda ev=ev: extras.rewrites_finding(self, ev, late=True))
            ev.forward_pieces = lazy(lambda ev=ev: extras.forward_pieces(self, ev))
            ev.empty_masks = lazy(lambda ev=ev: extras.empty_masks(self, ev))
        self._raw(evidence)

    def _add_ones_row(self, ev, outputs):
        row = tuple(np.ones(o.shape) for o in outputs)
        try:
            grads = self.probe.vjp(row)
            numeric = self._numeric(ev.index, [row])
        except ProbeError:
            return
        if grads.get(ev.index) is None or numeric is None:
            return
        ev.analytic = np.concatenate([ev.analytic, grads[ev.index].reshape((1,) + ev.shape)])
        ev.numeric = np.concatenate([ev.numeric, numeric[0]])
        ev.numeric_error = np.concatenate([ev.numeric_error, numeric[1]])
        ev.kinds = ev.kinds + ["ones"]
        ev.cotangents = ev.cotangents + [row]

    def _raw(self, evidence):
        rows = next((ev.cotangents for ev in evidence.values() if ev.cotangents), None)
        if not rows:
            return
        raws = []
        code = backward_code(self.cls)
        for k, row in enumerate(rows):
            try:
                raw = self.probe.raw(row, trace_code=code)
            except ProbeError:
                return
            if raw is None:
                return
            raws.append(raw)
        # the tensors backward held when it returned, per cotangent: what a statement outside the
        # evaluator's vocabulary computed (``onehot = _one_hot(target, c)``), see evaluator.py
        self.probe.recorded = {row_key(row): r.get("locals") or {}
                               for row, r in zip(rows, raws)}
        self.positions = dict(raws[0]["positions"])
        self.executed = raws[0].get("executed") or None
        for i, ev in evidence.items():
            if i not in raws[0]["grads"]:
                continue
            ev.position = self.positions.get(i)
            ev.raw = [r["grads"][i] for r in raws]
            if i in raws[0]["missing"]:
                ev.returned_count = (raws[0]["returned"], raws[0]["expected"])
            if any(g is None for g in ev.raw):
                ev.returned_none = ev.returned_none or all(g is None for g in ev.raw)
                ev.raw = None
            elif all(g.shape == tuple(ev.shape) for g in ev.raw):
                # The backward's own return is what the patterns judge: the engine may have refused
                # another input's gradient (no analytic at all), or changed this one on its way
                # to the leaf; either way the user's code is what the finding is about.
                ev.analytic = np.stack(ev.raw)

    def _unreduced(self, ev, outputs):
        """The numeric gradient w.r.t. the input broadcast to the output's shape (before reduction)."""
        if len(outputs) != 1 or outputs[0].shape == tuple(ev.shape):
            return None
        full = outputs[0].shape
        if not patterns.broadcast_dims(ev.shape, full):
            return None
        expanded = np.array(np.broadcast_to(ev.values, full))
        try:
            if [o.shape for o in self.probe.forward({ev.index: expanded})] != [full]:
                return None
        except Exception:
            return None
        numeric = self._numeric(ev.index, ev.cotangents, values={ev.index: expanded})
        return None if numeric is None else (numeric[0], numeric[1], full)

    def _one_sided(self, ev, positions):
        if not ev.cotangents:
            return None
        numeric = None
        for upcast in (True, False):
            try:
                numeric = self.probe.numeric(ev.index, ev.cotangents, upcast=upcast, positions=positions)
                break
            except Exception:
                continue
        return None if numeric is None else (numeric[2], numeric[3])

