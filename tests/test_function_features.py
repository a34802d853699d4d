"""Issue 22 on gradcli's engine: jvp, the ctx-attribute lint, layouts, --repeat / nondet_tol, the
undefined-grads semantics and the compatibility line (report, JSON, JUnit, terminal).

The seeded traps and their correct twins live in tests/traps/engine_traps.py.
"""
import io
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import gradcli
from gradcli.autograd import Function
from gradcli.check.compat import line, merge
from gradcli.check.repeat import suggested_nondet_tol

from check_run import check, write

ROOT = Path(__file__).resolve().parents[1]
TRAPS = ROOT / "tests" / "traps" / "engine_traps.py"
sys.path.insert(0, str(TRAPS.parent))
import engine_traps as traps  # noqa: E402


def x34(seed=0):
    return gradcli.tensor(np.random.default_rng(seed).standard_normal((3, 4)), requires_grad=True)


def checks(report):
    return {c.name: c for c in report.checks}


def source_line(path, text):
    """1-based line of the first line of ``path`` containing ``text``."""
    return next(n for n, line_ in enumerate(Path(path).read_text().splitlines(), 1) if text in line_)


# ----- jvp -----------------------------------------------------------------------------------------
def test_wrong_jvp_fails_named_and_its_twin_passes():
    wrong = gradcli.gradcheck(traps.WrongJvpSin, (x34(),))
    jvp = checks(wrong)["jvp"]
    assert wrong.status == "fail" and jvp.status == "fail"
    assert jvp.message.startswith("wrong jvp: Function.jvp gives")
    assert wrong.compatibility["jvp"] == "fail" and wrong.compatibility["backward"] == "pass"
    right = gradcli.gradcheck(traps.JvpSin, (x34(),))
    assert right.status == "pass" and checks(right)["jvp"].status == "pass"
    probes = checks(right)["jvp"].details["probes"]
    assert len(probes) == 2  # two random tangents, one way (the engine's Function.jvp)
    for probe in probes:
        analytic, numeric = np.array(probe["analytic"]), np.array(probe["numeric"])
        assert np.all(np.abs(analytic - numeric) <= 1e-9 * np.abs(numeric).max())


def test_wrong_jvp_projection_is_sin_where_cos_belongs():
    """The wrong jvp's value is vᵀ(sin(x)·u) and the numeric one vᵀ(cos(x)·u): their ratio over the
    correct twin's (same seed, same u and v) is exactly what sin/cos make of it."""
    wrong = checks(gradcli.gradcheck(traps.WrongJvpSin, (x34(),)))["jvp"].details["probes"][0]
    right = checks(gradcli.gradcheck(traps.JvpSin, (x34(),)))["jvp"].details["probes"][0]
    np.testing.assert_allclose(wrong["numeric"], right["analytic"], rtol=1e-9)
    assert not np.allclose(wrong["analytic"], wrong["numeric"], rtol=1e-3)


def test_missing_jvp_is_not_a_failure():
    report = gradcli.gradcheck(traps.SavedExp, (x34(),))
    assert "jvp" not in checks(report)
    assert report.status == "pass" and report.compatibility["jvp"] == "not_defined"


def test_jvp_that_raises_fails():
    class RaisingJvp(traps.SavedExp):
        @staticmethod
        def jvp(ctx, x_t):
            raise ValueError("no forward mode here")

    jvp = checks(gradcli.gradcheck(RaisingJvp, (x34(),)))["jvp"]
    assert jvp.status == "fail"
    assert jvp.message == "jvp raised through Function.jvp: ValueError: no forward mode here"


# ----- the ctx-attribute lint ------------------------------------------------------------------------
def test_ctx_attribute_intermediate_warns_with_name_and_line():
    report = gradcli.gradcheck(traps.CtxAttributeExp, (x34(),))
    lint = checks(report)["ctx_attributes"]
    line_no = source_line(TRAPS, "ctx.e = e")
    assert report.status == "pass" and lint.status == "warn"
    assert lint.details["attributes"] == [{"attribute": "e", "line": line_no, "kind": "intermediate",
                                           "file": str(TRAPS)}]
    assert f"ctx.e (line {line_no}: an intermediate computed from the inputs)" in lint.message


def test_ctx_attribute_double_backward_failure_is_explained():
    report = gradcli.gradgradcheck(traps.CtxAttributeExp, (x34(),))
    second = checks(report)["second_order"]
    line_no = source_line(TRAPS, "ctx.e = e")
    assert second.status == "fail"
    assert second.message.startswith(f"double backward is wrong because forward keeps ctx.e (line {line_no}) "
                                     f"as a ctx attribute")
    assert report.compatibility["double_backward"] == "fail"
    twin = gradcli.gradgradcheck(traps.SavedExp, (x34(),))
    assert twin.status == "pass" and "ctx_attributes" not in checks(twin)
    assert twin.compatibility["double_backward"] == "pass"


class KeepsInputAndOutput(Function):
    @staticmethod
    def forward(ctx, x, dim):
        y = x * 3
        ctx.x = x
        ctx.y = y
        ctx.dim = dim
        ctx.shape = x.shape
        return y

    @staticmethod
    def backward(ctx, grad):
        return grad * 3, None


def test_ctx_attribute_kinds_and_non_tensors():
    lint = checks(gradcli.gradcheck(KeepsInputAndOutput, (x34(), 1)))["ctx_attributes"]
    kinds = {a["attribute"]: a["kind"] for a in lint.details["attributes"]}
    assert kinds == {"x": "input", "y": "output"}  # ctx.dim (an int) and ctx.shape are not tensors
    here = Path(__file__)
    assert [a["line"] for a in lint.details["attributes"]] == [source_line(here, "ctx.x = x"),
                                                                source_line(here, "ctx.y = y")]


class SetupContextAttribute(Function):
    @staticmethod
    def forward(x):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.x = x
        ctx.out = output

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_ctx_attribute_in_setup_context():
    lint = checks(gradcli.gradcheck(SetupContextAttribute, (x34(),)))["ctx_attributes"]
    assert {a["attribute"]: a["kind"] for a in lint.details["attributes"]} == {"x": "input", "out": "output"}


# ----- nondeterminism --------------------------------------------------------------------------------
@pytest.mark.parametrize("spread, suggested", [(0.0, 0.0), (2.4e-9, 5e-9), (3e-3, 6e-3), (4.5e-9, 9e-9),
                                               (5e-9, 1e-8), (0.7, 2.0)])
def test_suggested_nondet_tol(spread, suggested):
    assert suggested_nondet_tol(spread) == pytest.approx(suggested, rel=1e-12)


def test_nondeterministic_backward_is_named_with_a_suggestion():
    report = gradcli.gradcheck(traps.NondeterministicDouble, (x34(),))
    reentrant = checks(report)["reentrant"]
    assert reentrant.status == "fail" and reentrant.message.startswith("nondeterministic backward:")
    worst = reentrant.details["max_difference"]
    assert 0 < worst < 1e-7
    assert reentrant.details["suggested_nondet_tol"] == suggested_nondet_tol(worst) >= 2 * worst
    assert gradcli.gradcheck(traps.DeterministicDouble, (x34(),)).status == "pass"


def test_repeat_reports_spread_per_input_and_nondet_tol_accepts_it():
    report = gradcli.gradcheck(traps.NondeterministicDouble, (x34(),), repeat=6)
    reentrant = checks(report)["reentrant"]
    assert reentrant.status == "fail"
    assert reentrant.message.startswith("nondeterministic backward: 6 passes with the same grad_output differ")
    spread = reentrant.details["spread"]["x"]
    assert reentrant.details["repeat"] == 6 and 0 < spread < 1e-7
    assert reentrant.details["suggested_nondet_tol"] == suggested_nondet_tol(spread)
    loose = gradcli.gradcheck(traps.NondeterministicDouble, (x34(),), repeat=6, nondet_tol=1e-6)
    assert checks(loose)["reentrant"].status == "pass" and loose.status == "pass"
    twin = checks(gradcli.gradcheck(traps.DeterministicDouble, (x34(),), repeat=6))["reentrant"]
    assert twin.status == "pass" and twin.details["spread"] == {"x": 0.0}
    assert twin.message == "6 backward passes with the same grad_output give the same gradients"


# ----- layouts ---------------------------------------------------------------------------------------
def test_layout_dependent_backward_fails_named_and_its_twin_passes():
    report = gradcli.gradcheck(traps.MemoryOrderSquare, (x34(),))
    layouts = checks(report)["layouts"]
    assert layouts.status == "fail" and layouts.message.startswith("layout-dependent backward: the gradients differ")
    assert "when x is non-contiguous (strides x: (1, 3))" in layouts.message
    assert layouts.details["failed"][0]["variant"] == "non-contiguous"
    assert layouts.details["failed"][0]["inputs"] == ["x"]
    twin = checks(gradcli.gradcheck(traps.Square, (x34(),)))["layouts"]
    assert twin.status == "pass" and twin.details["tried"] == ["non-contiguous", "expanded"]


class OneInputInMemoryOrder(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        y_c = gradcli.tensor(np.ravel(y.data, order="K").reshape(y.shape))
        return grad * y_c, grad * x


def test_layouts_names_the_input_that_matters():
    layouts = checks(gradcli.gradcheck(OneInputInMemoryOrder, (x34(0), x34(1))))["layouts"]
    assert layouts.status == "fail"
    assert layouts.details["failed"][0]["inputs"] == ["y"]
    assert "when y is non-contiguous" in layouts.message


class NeedsContiguous(Function):
    @staticmethod
    def forward(ctx, x):
        if not x.data.flags.c_contiguous:
            raise ValueError("expected a contiguous array")
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_forward_refusing_a_layout_is_a_note():
    report = gradcli.gradcheck(NeedsContiguous, (x34(),))
    layouts = checks(report)["layouts"]
    # neither layout is C-contiguous (a broadcast view is not either): both are notes, nothing failed
    assert report.status == "pass" and layouts.status == "skip" and layouts.details["tried"] == []
    assert layouts.details["notes"] == [
        f"{variant}: forward does not accept it (ValueError: expected a contiguous array): not tried"
        for variant in ("non-contiguous", "expanded")]
    assert report.compatibility["layouts"] == "skip"


def test_layouts_off():
    report = gradcli.gradcheck(traps.MemoryOrderSquare, (x34(),), layouts=False)
    assert report.status == "pass" and checks(report)["layouts"].status == "skip"
    assert report.compatibility["layouts"] == "skip"


def test_scalar_input_has_no_other_layout():
    report = gradcli.gradcheck(traps.Square, (gradcli.tensor(1.5, requires_grad=True),))
    assert "layouts" not in checks(report) and report.compatibility["layouts"] == "n/a"


# ----- undefined grads -------------------------------------------------------------------------------
class TwoOutputs(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2, x * x

    @staticmethod
    def backward(ctx, ga, gb):
        x, = ctx.saved_tensors
        return ga * 2 + gb * 2 * x


def test_undefined_grads_says_what_was_tried_and_the_semantics():
    report = gradcli.gradcheck(TwoOutputs, (x34(),))
    undefined = checks(report)["undefined_grads"]
    assert undefined.status == "pass"
    assert undefined.details["tried"] == ["output 0's gradient undefined, the others random",
                                          "output 1's gradient undefined, the others random"]
    assert undefined.details["semantics"]["backward_got"] == "zeros"
    assert "set_materialize_grads(False) as None" in undefined.details["semantics"]["gradcli"]
    assert report.compatibility["undefined_grads"] == "pass"


# ----- the compatibility line -------------------------------------------------------------------------
def test_compat_line_words():
    compat = {"backward": "pass", "double_backward": "once_differentiable", "jvp": "not_defined",
              "vmap": "no_setup_context", "undefined_grads": "n/a", "layouts": "fail"}
    assert line(compat) == ("backward ✓  double backward once_differentiable  jvp —  vmap no setup_context  "
                            "undefined grads n/a  layouts ✗")
    assert line(compat, ascii_only=True) == ("backward ok  double backward once_differentiable  jvp -  "
                                             "vmap no setup_context  undefined grads n/a  layouts FAIL")


def test_compat_merge_fails_a_feature_failed_anywhere():
    class R:
        def __init__(self, compat):
            self.compatibility = compat

    assert merge([R({"jvp": "pass", "layouts": "pass"}), R({"jvp": "fail", "layouts": "skip"})]) == \
        {"jvp": "fail", "layouts": "pass"}
    assert merge([R({}), None]) == {}


def test_compat_in_json_junit_and_terminal(tmp_path):
    json_path, junit_path = tmp_path / "r.json", tmp_path / "r.xml"
    result = check(f"{TRAPS}::WrongJvpSin", f"{TRAPS}::JvpSin", f"{TRAPS}::MemoryOrderSquare", "--format", "plain",
                   "--json", json_path, "--junit", junit_path)
    assert result.exit_code == 1
    doc = {r["function"]: r for r in json.loads(json_path.read_text())["results"]}
    assert doc["WrongJvpSin"]["compatibility"] == {
        "backward": "pass", "double_backward": "not_checked", "jvp": "fail", "vmap": "n/a",
        "undefined_grads": "n/a", "layouts": "pass"}
    assert doc["WrongJvpSin"]["checks"][0]["compatibility"] == doc["WrongJvpSin"]["compatibility"]
    assert doc["MemoryOrderSquare"]["compatibility"]["layouts"] == "fail"
    assert doc["WrongJvpSin"]["message"].startswith("jvp: wrong jvp:")
    cases = {c.get("name"): c for c in ET.parse(junit_path).getroot().iter("testcase")}
    prop = cases["JvpSin"].find("properties/property")
    assert prop.get("name") == "compatibility"
    assert prop.get("value") == ("backward ok  double backward not checked  jvp ok  vmap n/a  undefined grads n/a  "
                                 "layouts ok")
    assert cases["WrongJvpSin"].find("failure") is not None
    assert ("  compat WrongJvpSin: backward ok  double backward not checked  jvp FAIL  vmap n/a  undefined grads "
            "n/a  layouts ok") in result.output.splitlines()
    assert "  compat MemoryOrderSquare: backward ok  double backward not checked  jvp -  vmap n/a  undefined "\
        "grads n/a  layouts FAIL" in result.output.splitlines()


def test_rich_terminal_shows_ticks():
    from rich.console import Console

    from gradcli.check.runner import RunOptions
    from gradcli.check.session import run
    from gradcli.check.discovery import expand_paths
    from gradcli.report.terminal import RichRenderer

    buffer = io.StringIO()
    renderer = RichRenderer(Console(file=buffer, width=200), 0, True)  # -v: every Function's line
    items = expand_paths([f"{TRAPS}::CtxAttributeExp"], [], None)
    result = run(items, RunOptions(isolate=False))
    for r in result.results:
        renderer.file(r.file, [r])
    text = buffer.getvalue()
    assert "compat CtxAttributeExp: backward ✓  double backward not checked  jvp —  vmap n/a  undefined grads " \
           "n/a  layouts ✓" in text
    assert f"warning CtxAttributeExp: ctx_attributes: forward keeps tensor(s) on ctx as attributes" in text


# ----- the CLI: --repeat, --no-layouts, nondet_tol in pyproject --------------------------------------------
def test_cli_repeat_and_no_layouts(tmp_path):
    out = tmp_path / "r.json"
    result = check(f"{TRAPS}::NondeterministicDouble", f"{TRAPS}::MemoryOrderSquare", "--repeat", "5",
                   "--no-layouts", "--format", "plain", "--json", out)
    doc = {r["function"]: r for r in json.loads(out.read_text())["results"]}
    assert doc["MemoryOrderSquare"]["status"] == "pass"  # its trap is a layout one: not tried
    assert doc["MemoryOrderSquare"]["compatibility"]["layouts"] == "skip"
    reentrant = next(c for c in doc["NondeterministicDouble"]["checks"][0]["checks"] if c["name"] == "reentrant")
    assert reentrant["details"]["repeat"] == 5 and set(reentrant["details"]["spread"]) == {"x"}
    assert "nondeterministic backward: 5 passes" in result.output
    assert check(f"{TRAPS}::Square", "--repeat", "1").exit_code == 2


def test_nondet_tol_from_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.gradcli]\nnondet_tol = 1e-6\n")
    path = write(tmp_path, "traps.py", TRAPS.read_text())
    result = check(f"{path}::NondeterministicDouble", "--format", "plain")
    assert result.exit_code == 0, result.output
    (tmp_path / "pyproject.toml").write_text("[tool.gradcli]\nnondet_tol = \"loose\"\n")
    result = check(f"{path}::NondeterministicDouble", "--format", "plain")
    assert result.exit_code == 2
    assert "[tool.gradcli] nondet_tol: expected a number >= 0" in result.output


def test_every_engine_trap_fails_named_in_a_real_process():
    proc = subprocess.run([sys.executable, "-m", "gradcli", "check", str(TRAPS), "--second-order", "--format",
                           "plain", "--no-exact"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 1
    out = proc.stdout
    assert "jvp: wrong jvp: Function.jvp gives" in out
    assert "second_order: double backward is wrong because forward keeps ctx.e" in out
    assert "reentrant: nondeterministic backward:" in out
    assert "layouts: layout-dependent backward:" in out
    assert out.splitlines()[-1].startswith("4 passed, 4 failed")
