"""The terminal report at 60, 80 and 120 columns (rich's own way: a Console writing into a StringIO
at a fixed width): every Function name and status stays on screen, what a user copies (the
``reproduce:`` command, the panel title with file:line) is one line at every width, the run ends
with its short summary and closing line; -v's tables keep names and statuses whole; snapshots."""
import io
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from gradcli.check.report import Check, CheckReport, Finding, InputResult, WorstElement
from gradcli.check.runner import CaseResult, FunctionResult, RunResult
from gradcli.report import check_view as view
from gradcli.report.terminal import PlainRenderer, RichRenderer

SNAPSHOTS = Path(__file__).parent / "snapshots"
WIDTHS = (60, 80, 120)
LONG = "models/attention/scaled_dot_product_attention_with_a_long_file_name.py"


def passing(name, inputs=(("x", (3, 4)),)):
    return CheckReport(name, inputs=[InputResult(n, i, shape, "float64", "pass", 2.2e-16, 4.4e-16,
                                                 method="complex_step") for i, (n, shape) in enumerate(inputs)],
                       checks=[Check("values", "pass", input=0)])


def auto(name, spec):
    return {"name": name, "source": "auto", "spec": spec, "type": "tensor", "dtype": "float64", "shape": [3, 4],
            "requires_grad": True}


def mixed_run() -> RunResult:
    """Two files: passes (one with two input sets, one with a long name), a failure with a finding,
    an error pointing at its raising line, a skip and a partial pass."""
    analytic = np.full((1, 3, 4), 2.0)
    bad = CheckReport("ScaledDotProductAttention", inputs=[
        InputResult("query", 0, (3, 4), "float64", "fail", 1.0, 1.0, WorstElement((1, 2), 2.0, 1.0, 1e-16),
                    "richardson", 1e-12, 1e-6, analytic=analytic, numeric=np.ones((1, 3, 4))),
        InputResult("key", 1, (3, 4), "float64", "pass", 1e-15, 1e-15, method="richardson")],
        checks=[Check("values", "fail", "query: 12 of 12 elements wrong", input=0)],
        diagnosis=[Finding("scale", "backward is 2× too large for input query (factor 2)",
                           "check the factor in `return 2 * g` (attention.py:31)")])
    raised = CheckReport("Unstable", checks=[Check("backward", "fail",
                                                   "backward raised ZeroDivisionError: division by zero")])
    records = [auto("query", "float64[3,4]@(-2,2)"), auto("key", "float64[3,4]@(-2,2)")]
    partial = FunctionResult("layers.py", "OddBias", "gradcli", "pass", "not checked: bias: left at None",
                             cases=[CaseResult([], "pass", "", passing("OddBias"))], line=40,
                             not_checked=[{"input": "bias", "reason": "left at its default None", "input_set": None,
                                           "partial": True}])
    return RunResult(results=[
        FunctionResult("layers.py", "Linear", "gradcli", "pass", line=3, cases=[
            CaseResult([], "pass", "", passing("Linear", (("x", (5, 3)), ("weight", (4, 3))))),
            CaseResult([], "pass", "", passing("Linear", (("x", (2, 3)), ("weight", (4, 3)))))]),
        FunctionResult("layers.py", "Exp", "gradcli", "pass", line=20, cases=[CaseResult([], "pass", "",
                                                                                         passing("Exp"))]),
        partial,
        FunctionResult(LONG, "ScaledDotProductAttention", "gradcli", "fail", "values: query: 12 of 12 elements wrong",
                       cases=[CaseResult(records, "fail", "values: query: 12 of 12 elements wrong", bad)], line=12,
                       backward_line=29),
        FunctionResult(LONG, "Unstable", "gradcli", "error",
                       f"backward raised ZeroDivisionError: division by zero ({LONG}:57)",
                       cases=[CaseResult(records[:1], "error", "backward raised ZeroDivisionError: division by zero",
                                         raised)], line=57, backward_line=50),
        FunctionResult(LONG, "Blockwise", "gradcli", "skip", "cannot build inputs automatically", line=70),
    ], seed=0, duration=1.25)


def render(width: int, verbose: bool = False, run=None) -> str:
    run, buf = run or mixed_run(), io.StringIO()
    renderer = RichRenderer(Console(file=buf, width=width, color_system=None), seed=0, verbose=verbose)
    renderer.name_width = max(len(r.function) for r in run.results)  # as Output.plan sets it from the scan
    for path in dict.fromkeys(r.file for r in run.results):
        renderer.file(path, [r for r in run.results if r.file == path])
    renderer.finish(run)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()).strip("\n")


NAMES = ("Linear", "Exp", "OddBias", "ScaledDotProductAttention", "Unstable", "Blockwise")


@pytest.mark.parametrize("width", WIDTHS)
def test_every_name_and_status_is_on_screen(width):
    text = render(width)
    lines = text.splitlines()
    assert "layers.py  2 passed: Linear, Exp; 1 partial" in lines
    assert any(line.startswith("  FAIL   ScaledDotProductAttention") for line in lines)
    assert any(line.startswith("  ERROR  Unstable") for line in lines)
    assert "  SKIP Blockwise: cannot build inputs automatically" in lines
    assert "  PASS (partial: bias not checked) OddBias:" in lines
    for name in NAMES:
        assert name in text
    # the end of the screen: the short summary, then the closing line
    assert lines[-4:] == [
        "short summary: 1 failed, 1 error",
        fit(f"FAIL {LONG}::ScaledDotProductAttention — backward is 2× too large for input query (factor 2)", width),
        fit(f"ERROR {LONG}::Unstable — backward raised ZeroDivisionError: division by zero ({LONG}:57)", width),
        "2 passed, 1 partial, 1 failed, 1 error, 1 skipped in 1.25s",
    ]


def fit(line: str, width: int) -> str:
    """A summary line as printed: cut with an ellipsis after file::Name when longer than the screen."""
    keep = line.index(" — ")
    return line if len(line) <= width else line[:max(width, keep + 2) - 1] + "…"


@pytest.mark.parametrize("width", WIDTHS)
def test_what_is_copied_is_never_broken(width):
    run = mixed_run()
    lines = render(width, run=run).splitlines()
    bad = run.results[3]
    repro = "    reproduce: " + view.repro_command(bad, bad.cases[0].inputs, 0)
    assert len(repro) > 120  # longer than every width tried
    assert repro in lines  # one line, whole: it pastes
    assert f"FAIL  ScaledDotProductAttention  ({LONG}:12, backward at line 29)" in lines
    assert f"ERROR  Unstable  ({LONG}:57)" in lines
    assert "│" not in "\n".join(lines)  # no border inside what is copied


@pytest.mark.parametrize("width", WIDTHS)
def test_prose_wraps_within_the_width(width):
    for line in render(width).splitlines():
        assert copied(line) or len(line) <= width, line


def copied(line: str) -> bool:
    """Lines printed whole at any width: a path, a panel title, inputs, reproduce, a summary line
    whose file::Name alone is longer than the screen."""
    return line == LONG or line.startswith(("    reproduce:", "    inputs:", "FAIL ", "ERROR "))


@pytest.mark.parametrize("width", WIDTHS)
def test_verbose_tables_keep_names_and_statuses_whole(width):
    text = render(width, verbose=True)
    cells = [line.strip("│ ").split() for line in text.split("short summary")[0].splitlines()]
    rows = [row for row in cells if row and row[0].startswith(("Linear", "Exp", "OddBias", "ScaledDot",
                                                               "Unstable", "Blockwise")) and row[-1].isupper()]
    assert [row[0] for row in rows] == ["Linear[1]", "Linear[2]", "Exp", "OddBias",
                                                "ScaledDotProductAttention", "Unstable", "Blockwise"]
    assert [row[-1].strip("│") for row in rows] == ["PASS", "PASS", "PASS", "PASS", "FAIL", "ERROR", "SKIP"]
    assert "…" not in text.split("short summary")[0]  # nothing in the tables is cut
    for line in text.splitlines():
        assert len(line) <= width or copied(line) or line.startswith("  inputs "), line


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("verbose", [False, True], ids=["compact", "verbose"])
def test_snapshot(width, verbose):
    name = f"report_{'verbose' if verbose else 'compact'}_{width}.txt"
    assert render(width, verbose) + "\n" == (SNAPSHOTS / name).read_text()


def test_plain_is_the_same_view_in_ascii():
    run, lines = mixed_run(), []
    renderer = PlainRenderer(lines.append, seed=0)
    for path in dict.fromkeys(r.file for r in run.results):
        renderer.file(path, [r for r in run.results if r.file == path])
    renderer.finish(run)
    panel_body = [line for line in lines if line.startswith("    ")]  # findings say 2× as the diagnosis words it
    assert all(line.isascii() for line in lines if line not in panel_body)
    assert lines[-3:] == [
        f"FAIL {LONG}::ScaledDotProductAttention - backward is 2x too large for input query (factor 2)",
        f"ERROR {LONG}::Unstable - backward raised ZeroDivisionError: division by zero ({LONG}:57)",
        "2 passed, 1 partial, 1 failed, 1 error, 1 skipped in 1.25s"]  # plain cuts nothing: logs have no width


def test_a_hook_adds_lines_and_rows():
    """Room for more per-Function data (reference modes, compatibility): a hook's "note" lines go under
    the Function in the compact view and into its panel, its rows into the -v table."""
    def hook(result, verbose):
        if result.function != "ScaledDotProductAttention":
            return []
        return [("note", "compatible: torch 2.1+"), ("row", view.Row("", "query", "3×4", "1.0e+00", "1.0e+00",
                                                                    "float32", "fail"))]

    view.LINE_HOOKS.append(hook)
    try:
        compact, verbose = render(80), render(80, verbose=True)
    finally:
        view.LINE_HOOKS.remove(hook)
    assert "  compatible: torch 2.1+" in compact.splitlines()
    assert "    compatible: torch 2.1+" in compact.splitlines()  # in the panel too
    assert any(line.split()[-2:] == ["float32", "FAIL"] for line in verbose.splitlines())
