"""The diagnosis names the right pattern for each seeded bug, on both backends and along every
route a report can take (straight from gradcheck, a report without per-element arrays, a report
without the function), and names none for correct Functions and pattern-free failures."""
from __future__ import annotations

import inspect
import json

import numpy as np
import pytest
from test_diagnosis_cases import BACKENDS, CORRECT, NO_PATTERN, SEEDED, Backend, backend, params_match

from gradcli.check.diagnosis import MIN_CONFIDENCE, attach, diagnose
from gradcli.check.gradcheck import gradcheck
from gradcli.check.report import Check, CheckReport

# Kinds that do not accuse the backward of a bug: they may appear for correct code.
NOT_A_BUG = {"none", "kink"}


def failed_report_without_arrays(fn, inputs):
    """A failing report that kept nothing per element, so the diagnosis must recompute it all
    (the shape of a fast-mode report, or one from another checker)."""
    return CheckReport(function=getattr(fn, "__qualname__", "fn"), checks=[Check("values", "fail", "mismatch")])


def diagnosed(case, backend_name, route):
    """Findings for ``case`` along ``route``: "gradcheck" (the real report), "recomputed" (a
    report without arrays: the diagnosis re-runs fn) or "report_only" (no fn: arrays only)."""
    fn, inputs = case.build(backend(backend_name))
    if route == "recomputed":
        report = failed_report_without_arrays(fn, inputs)
    else:
        report = gradcheck(fn, inputs, **case.gradcheck_options)
        assert not report.ok, "the seeded bug must fail gradcheck for this route to mean anything"
    if route == "report_only":
        return diagnose(report)
    fn, inputs = case.build(backend(backend_name))  # fresh inputs: a buggy forward may have modified them
    return diagnose(report, fn, inputs)


def finding_for(findings, case):
    return [f for f in findings if f.input == case.input]


# gradcheck accepts a kink, so a kink case is only diagnosed on the recomputed route.
SEEDED_ROUTES = [pytest.param(case, route, id=f"{case.name}-{route}")
                 for case in SEEDED for route in ("gradcheck", "recomputed")
                 if route == "recomputed" or case.gradcheck_fails]


@pytest.mark.parametrize("backend_name", BACKENDS)
@pytest.mark.parametrize("case, route", SEEDED_ROUTES)
def test_seeded_bug_is_diagnosed_with_its_kind_and_parameters(case, route, backend_name):
    findings = diagnosed(case, backend_name, route)
    mine = finding_for(findings, case)
    assert mine, f"no finding for input {case.input}: {[(f.kind, f.input) for f in findings]}"
    top = mine[0]
    assert top.kind == case.kind, top.message
    assert params_match(case.params, top.params), top.params
    assert top.confidence >= MIN_CONFIDENCE
    assert top.message and "\n" not in top.hint
    # no other finding accuses a different pattern on the same input
    assert len(mine) == 1


@pytest.mark.parametrize("backend_name", BACKENDS)
@pytest.mark.parametrize("route", ["gradcheck", "recomputed"])
@pytest.mark.parametrize("case", NO_PATTERN, ids=lambda c: c.name)
def test_failure_without_a_pattern_says_so(case, route, backend_name):
    findings = diagnosed(case, backend_name, route)
    assert [(f.kind, f.input) for f in findings] == [("none", 0)]
    assert findings[0].message.startswith("no simple pattern found")
    assert findings[0].confidence == 0.0


@pytest.mark.parametrize("backend_name", BACKENDS)
@pytest.mark.parametrize("case", CORRECT, ids=lambda c: c.name)
def test_correct_function_gets_no_diagnosis(case, backend_name):
    fn, inputs = case.build(backend(backend_name))
    report = gradcheck(fn, inputs)
    assert diagnose(report, fn, inputs) == []
    # even when a report (wrongly) claims a failure, nothing is blamed on a correct backward
    fn, inputs = case.build(backend(backend_name))
    findings = diagnose(failed_report_without_arrays(fn, inputs), fn, inputs)
    assert {f.kind for f in findings} <= NOT_A_BUG, [f.message for f in findings]


# Kinds whose evidence is entirely in the report's per-element arrays.
FROM_ARRAYS = {"scale", "sign", "ignores_grad_output", "swapped", "zero"}


@pytest.mark.parametrize("case", [c for c in SEEDED if c.gradcheck_fails], ids=lambda c: c.name)
def test_report_alone_gives_the_right_kind_or_none(case):
    findings = diagnosed(case, "gradcli", "report_only")
    kinds = {f.kind for f in finding_for(findings, case)} or {f.kind for f in findings}
    # too few gradients: the engine refuses the return, so the report has no arrays at all
    if case.kind in FROM_ARRAYS and case.params.get("returned") != "missing":
        assert kinds == {case.kind}
    else:  # needs the function (raw shapes, input values, a second pass): at worst no diagnosis
        assert kinds <= {case.kind, "none", "nondeterministic", "inplace"}


# ----- hints point at the line to fix ----------------------------------------------------------------
def line_containing(cls, text):
    lines, first = inspect.getsourcelines(cls.backward)
    return next(first + k for k, line in enumerate(lines) if text in line)


def case_named(name):
    return next(c for c in SEEDED if c.name == name)


def test_factor_hint_quotes_and_locates_the_return_line():
    case = case_named("scale: factor 2")
    fn, inputs = case.build(Backend("gradcli"))
    (finding,) = diagnose(gradcheck(fn, inputs), fn, inputs)
    source = finding.params["source"]
    assert source["line"] == line_containing(fn.__self__, "grad_output * 2 * x.cos()")
    assert source["file"].endswith("test_diagnosis_cases.py")
    assert finding.hint.startswith("check the factor in `return grad_output * 2 * x.cos()`")
    assert finding.message == "backward is 2× too large for input x (factor 2)"


def test_gradient_assigned_before_return_is_followed_to_its_assignment():
    from gradcli.autograd import Function

    class Tripled(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.exp()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            grad_x = 3 * grad_output * x.exp()
            return grad_x

    x = Backend("gradcli").tensor(np.linspace(-1, 1, 5))
    (finding,) = diagnose(gradcheck(Tripled.apply, (x,)), Tripled.apply, (x,))
    assert finding.kind == "scale" and finding.params["factor"] == 3.0
    assert finding.params["source"]["line"] == line_containing(Tripled, "grad_x = 3 *")


@pytest.mark.parametrize("name, advice", [
    ("swapped", "return the gradients in forward's input order (x, y)"),
    ("not reduced (shape)", "sum the gradient over dim 0 (e.g. `.sum(0)`) to the shape of b"),
    ("ignores grad_output", "multiply by grad_output"),
    ("zero: None", "return a gradient for y instead of None"),
    ("missing transpose of an operand", "use grad_output @ w.T"),
])
def test_hint_gives_the_fix(name, advice):
    case = case_named(name)
    fn, inputs = case.build(Backend("gradcli"))
    findings = finding_for(diagnose(gradcheck(fn, inputs, **case.gradcheck_options), fn, inputs), case)
    assert findings[0].hint.startswith(advice), findings[0].hint


def test_inplace_hint_points_at_the_in_place_op_in_forward():
    case = case_named("inplace: forward modifies its input")
    fn, inputs = case.build(Backend("gradcli"))
    (finding,) = diagnose(gradcheck(fn, inputs), fn, inputs)
    assert finding.kind == "inplace" and finding.input is None
    assert finding.params["source"]["code"] == "x.add_(1.0)"


# ----- contract --------------------------------------------------------------------------------------
def test_passing_report_has_no_findings_and_attach_leaves_it_alone():
    fn, inputs = CORRECT[0].build(Backend("gradcli"))
    report = gradcheck(fn, inputs)
    assert attach(report, fn, inputs).diagnosis == [] and "diagnosis_s" not in report.timing


def test_findings_serialise_as_strict_json():
    case = case_named("region: x < 0")
    fn, inputs = case.build(Backend("gradcli"))
    report = attach(gradcheck(fn, inputs), fn, inputs)
    document = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    (finding,) = document["diagnosis"]
    assert finding["kind"] == "region" and finding["input"] == 0
    assert finding["params"]["description"] == "x < 0"
    assert set(finding) == {"kind", "message", "hint", "input", "params", "confidence"}


def test_attach_turns_a_crash_inside_the_diagnosis_into_no_finding(monkeypatch):
    # e.g. an argument a package built that the probes cannot read: no "Looks like: diagnosis failed"
    import gradcli.check.diagnosis as diagnosis

    def broken(*args, **kwargs):
        raise ZeroDivisionError("seeded")

    monkeypatch.setattr(diagnosis, "diagnose", broken)
    fn, inputs = case_named("sign flipped").build(Backend("gradcli"))
    report = attach(gradcheck(fn, inputs), fn, inputs)
    assert report.status == "fail" and report.diagnosis == []
    assert report.timing["diagnosis_s"] >= 0


def test_function_that_raises_when_re_run_still_gets_a_diagnosis_from_its_report():
    fn, inputs = case_named("sign flipped").build(Backend("gradcli"))
    report = gradcheck(fn, inputs)

    def refuses(*args):
        raise RuntimeError("only runs once")

    (finding,) = diagnose(report, refuses, inputs)
    assert finding.kind == "sign"


# ----- confidence rules: no diagnosis rather than a wrong one ---------------------------------------
def scalar_sin_with_factor(B, factor):
    class ScaledSin(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * x.cos() * factor

    return ScaledSin.apply, (B.tensor(0.7),)


def test_one_element_gradient_names_only_a_simple_factor():
    """With a single element any wrong value is 'some factor' times the right one; only a simple
    factor (2, ½, −1, ...) is worth naming, at reduced confidence."""
    fn, inputs = scalar_sin_with_factor(Backend("gradcli"), 2.0)
    (finding,) = diagnose(failed_report_without_arrays(fn, inputs), fn, inputs)
    assert (finding.kind, finding.params["factor"]) == ("scale", 2.0) and finding.confidence < 0.9
    fn, inputs = scalar_sin_with_factor(Backend("gradcli"), 1.2345)
    assert [f.kind for f in diagnose(failed_report_without_arrays(fn, inputs), fn, inputs)] == ["none"]


def wrong_formula(B, seed, additive=False):
    """A sin backward with a smooth perturbation inside the cosine, which no pattern describes
    (``additive``: the perturbation as an extra additive term of the statement instead, which is
    a pattern: that term is one too many)."""
    phase = float(np.random.default_rng(seed).uniform(0.2, 3.0))

    class Perturbed(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            if additive:
                return grad_output * (x.cos() + 0.05 * (3 * x + phase).sin() * x.exp())
            return grad_output * (x + 0.05 * (3 * x + phase).sin() * x.exp()).cos()

    x = np.random.default_rng(seed).standard_normal((3, 4))
    return Perturbed.apply, (B.tensor(x),)


@pytest.mark.parametrize("seed", range(12))
def test_random_perturbations_are_never_given_a_pattern(seed):
    fn, inputs = wrong_formula(Backend("gradcli"), seed)
    report = gradcheck(fn, inputs)
    assert not report.ok
    assert [f.kind for f in diagnose(report, fn, inputs)] == ["none"]


@pytest.mark.parametrize("seed", range(3))
def test_an_extra_term_of_the_statement_is_named_with_coefficient_minus_one(seed):
    fn, inputs = wrong_formula(Backend("gradcli"), seed, additive=True)
    (finding,) = diagnose(gradcheck(fn, inputs), fn, inputs)
    assert (finding.kind, finding.params["variant"], finding.params["coefficient"]) == (
        "missing_term", "coefficient", -1.0)
    assert finding.params["term"] == "grad_output * 0.05 * (3 * x + phase).sin() * x.exp()"
    assert finding.hint.startswith("remove the term `grad_output * 0.05")
    assert finding.params["factor"] == 0.0


@pytest.mark.parametrize("seed", range(8))
def test_correct_functions_at_random_points_are_never_blamed(seed):
    rng = np.random.default_rng(100 + seed)
    for case in CORRECT:
        fn, inputs = case.build(Backend("gradcli"))
        moved = tuple(Backend("gradcli").tensor(np.asarray(t.data) + rng.normal(0, 0.3, t.shape),
                                                str(t.dtype)) for t in inputs)
        findings = diagnose(failed_report_without_arrays(fn, moved), fn, moved)
        assert {f.kind for f in findings} <= NOT_A_BUG, (case.name, [f.message for f in findings])
