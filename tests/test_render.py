"""Renderers of `gradcli check` results (gradcli/report/): table snapshots, heat-maps, closing line,
exit codes, JSON, JUnit and GitHub annotations -- from hand-built results, so every number is fixed."""
import io
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from rich.console import Console

from gradcli.check.discovery import TargetInfo
from gradcli.check.report import Check, CheckReport, Finding, InputResult, WorstElement
from gradcli.check.runner import CaseResult, FunctionResult, RunResult
from gradcli.report import check_view as view
from gradcli.report.machine import github_annotations, json_text, junit_xml
from gradcli.report.terminal import PlainRenderer, RichRenderer


def sample_run():
    ok = CheckReport("Exp", inputs=[InputResult("i", 0, (3, 4), "float64", "pass", 8.9e-16, 1.7e-16,
                                                method="complex_step")],
                     checks=[Check("values", "pass", input=0)])
    analytic = np.array([[[2.0, 4.0], [6.0, 8.0]]])  # one probe cotangent, shaped like the 2x2 input
    numeric = np.array([[[1.0, 4.0], [3.0, 8.0]]])
    bad_input = InputResult("x", 0, (2, 2), "float64", "fail", 3.0, 1.0, WorstElement((1, 0), 6.0, 3.0, 1e-15),
                            "complex_step", 1e-15, 3e-6, analytic=analytic, numeric=numeric)
    bad = CheckReport("Double", inputs=[bad_input],
                      checks=[Check("values", "fail", "x: 2 of 4 elements wrong", input=0), Check("structure", "pass")],
                      diagnosis=[Finding("region", "backward for input x is wrong only in column 0", "check the mask")])
    records = [{"name": "x", "source": "auto", "spec": "float64[2,2]@(-2,2)", "type": "tensor", "dtype": "float64",
                "shape": [2, 2], "requires_grad": True, "value": [[1.0, 2.0], [3.0, 4.0]]}]
    return RunResult(results=[
        FunctionResult("ops.py", "Exp", "gradcli", "pass", cases=[CaseResult([], "pass", "", ok)], line=3,
                       backward_line=9),
        FunctionResult("ops.py", "Double", "gradcli", "fail", "values: x: 2 of 4 elements wrong",
                       cases=[CaseResult(records, "fail", "values: x: 2 of 4 elements wrong", bad)], line=12,
                       backward_line=17),
        FunctionResult("ops.py", "MatMul", "gradcli", "skip", "cannot build inputs automatically", line=20),
    ], seed=0, duration=0.84)


RICH = """\
ops.py  1 passed: Exp; 1 failed, 1 skipped
  FAIL  Double — backward for input x is wrong only in column 0

FAIL  Double  (ops.py:12, backward at line 17)
    values: x: 2 of 4 elements wrong
    worst element x[1, 0]: analytic 6, numeric 3 (tolerance 3.0e-06)
    Looks like: backward for input x is wrong only in column 0
      hint: check the mask
    inputs: x = float64[2,2]@(-2,2) (auto)
    reproduce: gradcli check ops.py::Double --seed 0 --input 'x=float64[2,2]@(-2,2)'
    error map of x (|analytic - numeric|, max 3.0e+00):
      ▒ ·
      █ ·
      · within tolerance, █ largest error
  SKIP MatMul: cannot build inputs automatically

short summary: 1 failed
FAIL ops.py::Double — backward for input x is wrong only in column 0
1 passed, 1 failed, 1 skipped in 0.84s"""

PLAIN = """\
ops.py  1 passed: Exp; 1 failed, 1 skipped
  FAIL  Double - backward for input x is wrong only in column 0

FAIL  Double  (ops.py:12, backward at line 17)
    values: x: 2 of 4 elements wrong
    worst element x[1, 0]: analytic 6, numeric 3 (tolerance 3.0e-06)
    Looks like: backward for input x is wrong only in column 0
      hint: check the mask
    inputs: x = float64[2,2]@(-2,2) (auto)
    reproduce: gradcli check ops.py::Double --seed 0 --input 'x=float64[2,2]@(-2,2)'
    error map of x (|analytic - numeric|, max 3.0e+00):
      + .
      # .
      . within tolerance, # largest error
  SKIP MatMul: cannot build inputs automatically

short summary: 1 failed
FAIL ops.py::Double - backward for input x is wrong only in column 0
1 passed, 1 failed, 1 skipped in 0.84s"""

# -v: the table of every input, then the same panels (and every Function's inputs)
RICH_VERBOSE = """\
ops.py
┏━━━━━━━━━━┳━━━━━━━┳━━━━━━━┳━━━━━━━━━━━━━┳━━━━━━━━━━━━━┳━━━━━━━━━━━━━━┳━━━━━━━━┓
┃ Function ┃ input ┃ shape ┃ max abs err ┃ max rel err ┃ method       ┃ status ┃
┡━━━━━━━━━━╇━━━━━━━╇━━━━━━━╇━━━━━━━━━━━━━╇━━━━━━━━━━━━━╇━━━━━━━━━━━━━━╇━━━━━━━━┩
│ Exp      │ i     │ 3×4   │     8.9e-16 │     1.7e-16 │ complex_step │ PASS   │
│ Double   │ x     │ 2×2   │     3.0e+00 │     1.0e+00 │ complex_step │ FAIL   │
│ MatMul   │ —     │ —     │           — │           — │ —            │ SKIP   │
└──────────┴───────┴───────┴─────────────┴─────────────┴──────────────┴────────┘
  inputs Exp: no arguments

FAIL  Double  (ops.py:12, backward at line 17)
    values: x: 2 of 4 elements wrong
    worst element x[1, 0]: analytic 6, numeric 3 (tolerance 3.0e-06)
    Looks like: backward for input x is wrong only in column 0
      hint: check the mask
    inputs: x = float64[2,2]@(-2,2) (auto)
    reproduce: gradcli check ops.py::Double --seed 0 --input 'x=float64[2,2]@(-2,2)'
    error map of x (|analytic - numeric|, max 3.0e+00):
      ▒ ·
      █ ·
      · within tolerance, █ largest error
  inputs Double: x = float64[2,2]@(-2,2) (auto)
  SKIP MatMul: cannot build inputs automatically

short summary: 1 failed
FAIL ops.py::Double — backward for input x is wrong only in column 0
1 passed, 1 failed, 1 skipped in 0.84s"""

PLAIN_VERBOSE = """\
ops.py
  Function  input  shape  max abs err  max rel err  method        status
  Exp       i      3x4    8.9e-16      1.7e-16      complex_step  PASS
  Double    x      2x2    3.0e+00      1.0e+00      complex_step  FAIL
  MatMul    -      -      -            -            -             SKIP
  inputs Exp: no arguments

FAIL  Double  (ops.py:12, backward at line 17)
    values: x: 2 of 4 elements wrong
    worst element x[1, 0]: analytic 6, numeric 3 (tolerance 3.0e-06)
    Looks like: backward for input x is wrong only in column 0
      hint: check the mask
    inputs: x = float64[2,2]@(-2,2) (auto)
    reproduce: gradcli check ops.py::Double --seed 0 --input 'x=float64[2,2]@(-2,2)'
    error map of x (|analytic - numeric|, max 3.0e+00):
      + .
      # .
      . within tolerance, # largest error
  inputs Double: x = float64[2,2]@(-2,2) (auto)
  SKIP MatMul: cannot build inputs automatically

short summary: 1 failed
FAIL ops.py::Double - backward for input x is wrong only in column 0
1 passed, 1 failed, 1 skipped in 0.84s"""


def render_rich(width: int, verbose: bool = False, run=None) -> str:
    run, buf = run or sample_run(), io.StringIO()
    renderer = RichRenderer(Console(file=buf, width=width, color_system=None), seed=0, verbose=verbose)
    renderer.file("ops.py", run.results)
    renderer.finish(run)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()).strip("\n")


def render_plain(verbose: bool = False) -> list:
    run, lines = sample_run(), []
    renderer = PlainRenderer(lines.append, seed=0, verbose=verbose)
    renderer.file("ops.py", run.results)
    renderer.finish(run)
    return lines


def test_rich_snapshot_at_fixed_width():
    assert render_rich(100) == RICH


def test_plain_snapshot():
    lines = render_plain()
    assert "\n".join(lines).strip("\n") == PLAIN
    assert all(line.isascii() for line in lines)


def test_verbose_keeps_the_tables():
    assert render_rich(100, verbose=True) == RICH_VERBOSE
    lines = render_plain(verbose=True)
    assert "\n".join(lines).strip("\n") == PLAIN_VERBOSE
    assert all(line.isascii() for line in lines)


def test_heatmap_levels_and_block_maxima():
    r = InputResult("w", 0, (2, 3), "float64", "fail", 4.0, 1.0, tolerance=0.5,
                    analytic=np.array([[[0.1, 1.0, 2.0], [3.0, 4.0, 0.0]]]), numeric=np.zeros((1, 2, 3)))
    hm = view.heatmap(r)
    # within tolerance -> 0; else 1 + min(3, int(4 * err / max)): 1.0 -> 2, 2.0 -> 3, 3.0 -> 4, 4.0 -> 4
    assert hm.levels == [[0, 2, 3], [4, 4, 0]]
    assert hm.label == "w (|analytic - numeric|, max 4.0e+00)" and hm.note == ""
    big = InputResult("v", 0, (30, 100), "float64", "fail", 9.0, 1.0, tolerance=0.5,
                      analytic=np.zeros((1, 30, 100)), numeric=np.zeros((1, 30, 100)))
    big.analytic[0, 29, 99] = 9.0
    hm = view.heatmap(big)
    assert (len(hm.levels), len(hm.levels[0])) == (10, 34)  # blocks of 3x3 (ceil(30/12), ceil(100/40))
    assert hm.levels[-1][-1] == 4 and sum(map(sum, hm.levels)) == 4
    assert hm.note == "each cell is the max over a 3x3 block"
    scalar = InputResult("s", 0, (), "float64", "fail", analytic=np.zeros((1,)), numeric=np.ones((1,)))
    assert view.heatmap(scalar) is None  # nothing to map for a 0-d input


@pytest.mark.parametrize("counts, deselected, interrupted, line", [
    ({"pass": 3, "fail": 1, "error": 1}, 0, False, "3 passed, 1 failed, 1 error in 0.84s"),
    ({"pass": 1, "error": 2, "skip": 1}, 2, False, "1 passed, 2 errors, 1 skipped, 2 deselected in 0.84s"),
    ({}, 4, False, "4 deselected in 0.84s"),
    ({}, 0, False, "no Functions checked in 0.84s"),
    ({"pass": 1}, 0, True, "1 passed in 0.84s (interrupted)"),
])
def test_closing_line_in_pytest_form(counts, deselected, interrupted, line):
    results = [FunctionResult("f.py", f"F{i}", "gradcli", status) for status, n in counts.items() for i in range(n)]
    run = RunResult(results, duration=0.84, deselected=deselected, interrupted=interrupted)
    assert run.closing_line() == line


@pytest.mark.parametrize("statuses, strict, extra, code", [
    (["pass", "skip"], False, {}, 0),
    (["pass", "skip"], True, {}, 1),
    (["pass", "fail", "error"], False, {}, 1),
    (["pass", "error"], False, {}, 3),
    ([], False, {}, 5),
    (["pass"], False, {"interrupted": True}, 2),
    (["pass"], False, {"not_found": ["f.py::X (f.py defines: A)"]}, 2),
])
def test_exit_codes(statuses, strict, extra, code):
    run = RunResult([FunctionResult("f.py", "F", "gradcli", s) for s in statuses], **extra)
    assert run.exit_code(strict) == code


def test_collect_only_exit_codes():
    info = TargetInfo("f.py", "F", 1, 2, "static", "gradcli", ["x"])
    assert RunResult(collected=[info]).exit_code(collect_only=True) == 0
    assert RunResult().exit_code(collect_only=True) == 5
    assert RunResult([FunctionResult("g.py", None, "gradcli", "error")], collected=[info]).exit_code(
        collect_only=True) == 3


def test_json_is_the_documented_schema_and_never_nan():
    run = sample_run()
    run.results[0].cases[0].inputs = [{"name": "i", "source": "cli", "spec": "nan", "type": "float",
                                       "value": float("nan")}]
    doc = json.loads(json_text(run))
    assert set(doc) == {"gradcli_version", "seed", "summary", "results"}
    assert doc["summary"] == {"passed": 1, "partial": 0, "failed": 1, "errors": 0, "skipped": 1, "surrogates": 0}
    assert [set(r) for r in doc["results"]] == [{"file", "function", "backend", "status", "message", "inputs",
                                                "checks", "proofs", "partial", "not_checked", "surrogate",
                                                "compatibility"}] * 3
    exp, double, matmul = doc["results"]
    assert exp["inputs"][0][0]["value"] == "nan"
    assert double["checks"][0]["diagnosis"][0]["kind"] == "region"
    assert double["checks"][0]["inputs"][0]["worst"] == {"index": [1, 0], "analytic": 6.0, "numeric": 3.0,
                                                         "error_estimate": 1e-15, "cotangent": 0}
    assert (matmul["inputs"], matmul["checks"], matmul["status"]) == ([], [], "skip")


def test_junit_parses_back():
    run = sample_run()
    run.results.append(FunctionResult("pkg/bad.py", None, "torch", "error", "ZeroDivisionError: division by zero "
                                      "(pkg/bad.py:2)", line=2, output="printed\x01 at import\n"))
    root = ET.fromstring(junit_xml(run))
    suite = root.find("testsuite")
    assert {k: suite.get(k) for k in ("tests", "failures", "errors", "skipped")} == \
        {"tests": "4", "failures": "1", "errors": "1", "skipped": "1"}
    cases = suite.findall("testcase")
    assert [(c.get("classname"), c.get("name"), c.get("line")) for c in cases] == [
        ("ops", "Exp", "3"), ("ops", "Double", "12"), ("ops", "MatMul", "20"), ("pkg.bad", "(import)", "2")]
    failure = cases[1].find("failure")
    assert failure.get("message") == "values: x: 2 of 4 elements wrong"
    assert "reproduce: gradcli check ops.py::Double --seed 0" in failure.text
    assert cases[2].find("skipped").get("message") == "cannot build inputs automatically"
    assert cases[3].find("error").get("type") == "UserCodeError"
    assert cases[3].find("system-out").text == "printed? at import\n"  # control characters made XML-safe
    assert cases[0].find("failure") is None and cases[0].find("error") is None


def test_github_annotations_point_at_backward_and_escape():
    run = sample_run()
    run.results[1].message = "50% off, a: b"
    run.results[1].cases[0].report.checks[0].message = "50% off,\na: b"
    lines = github_annotations(run)
    assert len(lines) == 2  # the pass gets none
    error, warning = lines
    assert error.startswith(
        "::error file=ops.py,line=17,title=gradcli check%3A Double failed::values: 50%25 off,%0Aa: b%0A")
    assert "\n" not in error
    assert warning == ("::warning file=ops.py,line=20,title=gradcli check%3A MatMul skipped::"
                       "cannot build inputs automatically")
