"""A PASS means it was exercised: what gradcli did not check is listed on the result (table row and
`not checked:` line without -v, JSON, JUnit, GitHub, pytest), a pass that left something out is
`PASS (partial: ...)`, and --strict fails it visibly. Both backends."""
import xml.etree.ElementTree as ET

import pytest

from check_run import LIBS, by_name, check, check_json, need, write

LAYERS = """
    import {lib} as torch

    class OddBias(torch.autograd.Function):
        # the optional bias must have 13 elements: no tensor gradcli tries fits, so it stays None
        @staticmethod
        def forward(ctx, x, bias=None):
            if bias is not None and bias.numel() != 13:
                raise ValueError("bias must have 13 elements")
            ctx.has_bias = bias is not None
            return x * 2 if bias is None else x * 2 + bias.sum()

        @staticmethod
        def backward(ctx, g):
            return g * 2, (g.sum() * torch.ones(13, dtype=torch.float64) if ctx.has_bias else None)

    class Dense(torch.autograd.Function):
        # the bias gradient is wrong (a mean over the rows, not their sum), and the bias defaults to None:
        # it is also checked as a tensor, so the bug is found
        @staticmethod
        def forward(ctx, x, weight, bias=None):
            ctx.save_for_backward(x, weight)
            ctx.has_bias = bias is not None
            out = x * weight
            return out + bias if bias is not None else out

        @staticmethod
        def backward(ctx, g):
            x, weight = ctx.saved_tensors
            return g * weight, g * x, g.mean(0) if ctx.has_bias else None

    class Repeat(torch.autograd.Function):
        # k must be a Python int, and nothing in the source says which: a guessed number
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x.repeat(k, 1)  # (torch.cat([x] * k) would say: a count, infer_values.py)

        @staticmethod
        def backward(ctx, g):
            return sum(g.chunk(ctx.k, 0)), None

    class Scaled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.save_for_backward(scale)
            return x * scale

        @staticmethod
        def backward(ctx, g):
            (scale,) = ctx.saved_tensors
            return g * scale, None

        @staticmethod
        def example_inputs():  # scale is a buffer: given without requires_grad, by choice
            x = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
            return x, torch.full((2, 3), 2.0, dtype=torch.float64)
"""

NONE_DEFAULT = ("defaults to None, and no tensor of the shapes tried made forward run: give --input bias=SPEC to "
                "check it as a tensor")
NUMBER = "guessed the number 1 for k: forward refused tensors there; give --input k=SPEC for another value"


@pytest.mark.parametrize("lib", LIBS)
def test_what_was_not_checked_is_on_the_result_without_verbose(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "layers.py", LAYERS, lib)
    result, doc = check_json(tmp_path, path)
    assert result.exit_code == 1, result.output  # Dense's bias bug, found with a tensor for its None default
    r = by_name(doc)
    assert r["Dense"]["status"] == "fail" and r["Dense"]["message"].startswith("input set 2 of 2: values: bias: ")
    assert (r["OddBias"]["status"], r["OddBias"]["partial"]) == ("pass", True)
    assert r["OddBias"]["not_checked"] == [{"input": "bias", "reason": NONE_DEFAULT, "input_set": None,
                                            "partial": True}]
    assert r["OddBias"]["message"] == f"not checked: bias: {NONE_DEFAULT}"
    assert (r["Repeat"]["partial"], r["Repeat"]["not_checked"]) == (
        True, [{"input": "k", "reason": NUMBER, "input_set": None, "partial": True}])
    # a buffer the user gave without requires_grad: said, but not a gap in the check
    assert (r["Scaled"]["status"], r["Scaled"]["partial"]) == ("pass", False)
    assert [e["input"] for e in r["Scaled"]["not_checked"]] == ["scale"]
    assert doc["summary"] == {"passed": 1, "partial": 2, "failed": 1, "errors": 0, "skipped": 0, "surrogates": 0}
    out = result.output
    assert "  PASS (partial: bias not checked) OddBias:\n" in out
    assert f"    not checked: bias: {NONE_DEFAULT}\n" in out
    assert "  PASS (partial: k not checked) Repeat:\n" in out
    assert "  note Scaled: not checked: scale: a floating-point tensor given without requires_grad" in out
    assert out.splitlines()[-1].startswith("1 passed, 2 partial, 1 failed in ")
    verbose = check("--format", "plain", path, "-v").output  # -v: the table, a NOT CHECKED row per gap
    rows = [line.split() for line in verbose.splitlines() if line.strip().endswith("NOT CHECKED")]
    assert rows == [["bias", "-", "-", "-", "-", "-", "NOT", "CHECKED"], ["k", "-", "-", "-", "-", "-", "NOT", "CHECKED"]]


def test_given_a_tensor_the_none_default_is_checked_and_the_bug_found(tmp_path):
    path = write(tmp_path, "layers.py", LAYERS)
    result, doc = check_json(tmp_path, f"{path}::Dense", "--input", "bias=float64[4]")
    assert result.exit_code == 1
    (r,) = doc["results"]
    assert r["status"] == "fail" and r["not_checked"] == []
    assert r["message"].startswith("values: bias: ")


def test_strict_fails_a_partial_pass_in_every_format(tmp_path):
    path = write(tmp_path, "layers.py", LAYERS)
    junit = tmp_path / "junit.xml"
    result, doc = check_json(tmp_path, f"{path}::OddBias", "--strict", "--format", "github", "--junit", junit)
    assert result.exit_code == 1
    assert result.output.splitlines()[-1].startswith("1 partial (strict: fails) in ")
    (annotation,) = [line for line in result.output.splitlines() if line.startswith("::")]
    assert annotation == (f"::error file={path},line=4,title=gradcli check%3A OddBias passed partially (not everything "
                          f"checked) (--strict)::not checked: bias: {NONE_DEFAULT}")
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("failures"), suite.get("skipped")) == ("1", "0")
    failure = suite.find("testcase").find("failure")
    assert failure.get("type") == "NotFullyChecked"
    assert failure.get("message") == f"--strict: partial: not checked: bias: {NONE_DEFAULT}"
    # without --strict: a pass, and the annotation a warning
    result = check(f"{path}::OddBias", "--format", "github", "--junit", junit)
    assert result.exit_code == 0
    assert [line[:10] for line in result.output.splitlines() if line.startswith("::")] == ["::warning "]
    case = ET.parse(junit).getroot().find("testsuite").find("testcase")
    assert case.find("failure") is None
    assert case.find("system-out").text == f"PASS (partial: bias not checked)\nnot checked: bias: {NONE_DEFAULT}\n"


CUBES = """
    import {lib} as torch

    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    class CubeRowSum(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x * x * x).sum(1)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g.unsqueeze(1) * 3 * x * x

    class CubeRowSumWrong(CubeRowSum):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g.unsqueeze(1) * 3 * x
"""


@pytest.mark.parametrize("lib", LIBS)
def test_an_input_too_large_to_localise_is_checked_in_fast_mode_and_marked(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "cubes.py", CUBES, lib)
    result, doc = check_json(tmp_path, path, "--shape", "200x200", "--mode", "full", "--no-exact")
    r = by_name(doc)
    assert result.exit_code == 1
    # elementwise: localised by the broadcast strategy, as before
    assert r["Cube"]["checks"][0]["inputs"][0]["status"] == "pass"
    assert r["Cube"]["checks"][0]["inputs"][0]["max_abs_error"] is not None
    # a row sum of 40,000 elements: random directions instead of a silent skip
    (x,) = r["CubeRowSum"]["checks"][0]["inputs"]
    assert (r["CubeRowSum"]["status"], r["CubeRowSum"]["partial"]) == ("pass", False)
    assert x["status"] == "pass" and x["max_abs_error"] is None
    assert x["message"] == ("checked in fast mode (random directions, not localised): 40000 elements are too many to "
                            "localise one by one")
    assert "  note CubeRowSum: x checked in fast mode (random directions, not localised element by element)" in \
        result.output
    wrong = r["CubeRowSumWrong"]
    assert wrong["status"] == "fail"
    assert wrong["message"].startswith("values: x (40000 elements): too many elements to localise one by one, "
                                       "checked along random directions (fast mode) instead: random probe ")
    assert wrong["checks"][0]["inputs"][0]["status"] == "fail"


pytest_plugins = ["pytester"]


def test_pytest_plugin_reports_a_partial_pass_and_strict_fails_it(pytester):
    pytester.makepyfile(layers=LAYERS.replace("{lib}", "gradcli"))
    result = pytester.runpytest_subprocess("--gradcli", "layers.py", "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 1  # Dense's bias bug
    result.stdout.fnmatch_lines(["*1 failed, 1 passed, 2 partial*"])
    result.stdout.fnmatch_lines(["*= gradcli: not fully checked =*",
                                 "layers.py::OddBias: PASS (partial: bias not checked)",
                                 "  not checked: bias: defaults to None*bias=SPEC*"])
    strict = pytester.runpytest_subprocess("--gradcli", "layers.py", "-p", "no:cacheprovider", "--gradcli-strict")
    strict.assert_outcomes(passed=1, failed=3)
    strict.stdout.fnmatch_lines(["*PASS (partial: bias not checked)*"])


def test_rich_terminal_shows_partial_surrogate_and_strict(tmp_path):
    from io import StringIO

    from rich.console import Console

    from gradcli.check.discovery import expand_paths
    from gradcli.check.runner import RunOptions
    from gradcli.check.session import run
    from gradcli.report.terminal import RichRenderer

    path = write(tmp_path, "layers.py", LAYERS)
    result = run(expand_paths([f"{path}::OddBias"]), RunOptions(isolate=False, strict=True))
    texts = []
    for verbose in (False, True):
        out = StringIO()
        renderer = RichRenderer(Console(file=out, width=200, color_system=None), seed=0, verbose=verbose)
        renderer.file(str(path), result.results)
        renderer.finish(result)
        texts.append(out.getvalue())
    text, verbose_text = texts
    assert [line.split("│")[-2].strip() for line in verbose_text.splitlines() if "│ bias" in line] == ["NOT CHECKED"]
    for shown in texts:
        assert "  PASS (partial: bias not checked) OddBias:\n" in shown
        assert f"    not checked: bias: {NONE_DEFAULT}\n" in shown
        assert shown.splitlines()[-1].startswith("1 partial (strict: fails) in ")
    # --strict fails it: the short summary lists it
    summary = f"PARTIAL {path}::OddBias — not checked: bias: {NONE_DEFAULT}"
    assert text.splitlines()[-2] == summary[:199] + "…"  # one line, cut at the console's 200 columns
    assert result.exit_code() == 1
