"""Declared surrogates (``surrogate = True`` or ``# gradcli: surrogate`` on the class line): their
value mismatch is the status ``surrogate`` (exit 0) with the measured error in every format;
undeclared, the same Function fails; declared, every other check still counts. Both backends."""
import xml.etree.ElementTree as ET

import pytest

from check_run import LIBS, by_name, check, check_json, need, write

SOURCE = """
    import {lib} as torch

    class RoundSTE(torch.autograd.Function):  # gradcli: surrogate
        @staticmethod
        def forward(ctx, x):
            return x.round()

        @staticmethod
        def backward(ctx, g):
            return g

    class SpikeSurrogate(torch.autograd.Function):
        surrogate = True

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x > 0).to(x.dtype)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g / (1 + x * x)

    class RoundUndeclared(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.round()

        @staticmethod
        def backward(ctx, g):
            return g

    class DeclaredButShapeWrong(torch.autograd.Function):
        surrogate = True

        @staticmethod
        def forward(ctx, x):
            return x.round()

        @staticmethod
        def backward(ctx, g):
            return g.sum(0)

    class DeclaredButIgnoresGradOutput(torch.autograd.Function):
        surrogate = True

        @staticmethod
        def forward(ctx, x):
            return x.round()

        @staticmethod
        def backward(ctx, g):
            return torch.ones_like(g)

    class DeclaredAndExact(torch.autograd.Function):
        surrogate = True

        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return g * 3
"""


@pytest.mark.parametrize("lib", LIBS)
def test_declared_surrogates_get_their_own_status_with_the_mismatch(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "ste.py", SOURCE, lib)
    result, doc = check_json(tmp_path, path, "--no-exact")
    r = by_name(doc)
    assert {name: r[name]["status"] for name in r} == {
        "RoundSTE": "surrogate", "SpikeSurrogate": "surrogate", "RoundUndeclared": "fail",
        "DeclaredButShapeWrong": "fail", "DeclaredButIgnoresGradOutput": "fail", "DeclaredAndExact": "pass"}
    # round() has derivative 0: the straight-through gradient g is off by |g| exactly
    x = r["RoundSTE"]["checks"][0]["inputs"][0]
    cotangents_max = x["max_abs_error"]
    assert r["RoundSTE"]["surrogate"] == {"declared": True, "max_abs_error": cotangents_max,
                                          "max_rel_error": x["max_rel_error"]}
    assert r["RoundSTE"]["message"] == (
        f"declared surrogate gradient (not its forward's derivative): max abs err {cotangents_max:.2g}, "
        f"max rel err {x['max_rel_error']:.2g}")
    assert r["RoundUndeclared"]["message"].startswith("values: x: 12 of 12 elements wrong")
    assert r["DeclaredButShapeWrong"]["message"].startswith("structure: ")
    ignores = r["DeclaredButIgnoresGradOutput"]["checks"][0]["checks"]
    assert [c["message"][:40] for c in ignores if c["name"] == "cotangents"] == [
        "a zero grad_output gave a non-zero gradi"]  # a real bug, surrogate or not
    assert doc["summary"]["surrogates"] == 2 and doc["summary"]["failed"] == 3
    assert f"  SURROGATE RoundSTE: {r['RoundSTE']['message']}" in result.output
    verbose = check("--format", "plain", path, "--no-exact", "-v").output  # -v: its table row says SURROGATE
    assert "SURROGATE" in [line.split()[-1] for line in verbose.splitlines() if line.startswith("  RoundSTE ")]
    assert "2 surrogates" in result.output.splitlines()[-1]


def test_a_surrogate_alone_exits_0_and_is_a_notice_and_a_passing_testcase(tmp_path):
    path = write(tmp_path, "ste.py", SOURCE)
    junit = tmp_path / "junit.xml"
    result = check(path, "-k", "RoundSTE or SpikeSurrogate", "--format", "github", "--junit", junit, "--strict")
    assert result.exit_code == 0, result.output
    notices = [line for line in result.output.splitlines() if line.startswith("::")]
    assert [line.split(" ")[0] for line in notices] == ["::notice", "::notice"]
    assert notices[0].startswith(f"::notice file={path},line=10,title=gradcli check%3A RoundSTE is a declared "
                                 f"surrogate::declared surrogate gradient")
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("0", "0", "0")
    assert suite.find("testcase").find("system-out").text.startswith("SURROGATE: declared surrogate gradient")


pytest_plugins = ["pytester"]


def test_pytest_plugin_counts_surrogates_as_passes_of_their_own(pytester):
    pytester.makepyfile(ste=SOURCE.replace("{lib}", "gradcli"))
    result = pytester.runpytest_subprocess("--gradcli", "ste.py", "-p", "no:cacheprovider", "-k",
                                           "RoundSTE or RoundUndeclared")
    assert result.ret == 1
    assert {k: v for k, v in result.parseoutcomes().items() if k != "deselected"} == {"failed": 1, "surrogate": 1}
    result.stdout.fnmatch_lines(["ste.py SF *"])


def test_assert_gradcheck_passes_a_declared_surrogate_and_fails_an_undeclared_one(tmp_path, monkeypatch):
    import importlib.util
    import sys

    import gradcli
    from gradcli.testing import GradcheckAssertionError, assert_gradcheck

    path = write(tmp_path, "ste_api.py", SOURCE)
    spec = importlib.util.spec_from_file_location("ste_api", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "ste_api", module)  # imported as a test module is: its source can be read
    spec.loader.exec_module(module)
    x = gradcli.tensor([[0.3, -1.2], [0.8, 1.7]], dtype=gradcli.float64, requires_grad=True)
    report = assert_gradcheck(module.RoundSTE, x)
    assert report.check("values").status == "fail"  # the report says what was measured
    assert len(assert_gradcheck(module.SpikeSurrogate)) == 1
    with pytest.raises(GradcheckAssertionError, match="FAIL  RoundUndeclared"):
        assert_gradcheck(module.RoundUndeclared, x)
    with pytest.raises(GradcheckAssertionError):
        assert_gradcheck(module.DeclaredButShapeWrong, x)
