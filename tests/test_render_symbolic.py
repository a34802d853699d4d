"""Renderers with the exact check and proofs (issue 6): the "exact err" and "proof" columns, panel
lines, the proof summary and JSON -- from hand-built results, so every number is fixed."""
import io
import json

from rich.console import Console

from gradcli.check.report import Check, CheckReport, InputResult
from gradcli.check.runner import CaseResult, FunctionResult, RunResult
from gradcli.report import check_view as view
from gradcli.report.machine import json_text
from gradcli.report.terminal import PlainRenderer, RichRenderer

RECORDS = [{"name": "x", "source": "auto", "spec": "float64[2,2]@(-2,2)", "type": "tensor", "dtype": "float64",
            "shape": [2, 2], "requires_grad": True, "value": [[1.0, 2.0], [3.0, 4.0]]}]


def proof(function, verdict, message, input="x", index=0, shape=(2, 2), input_set=None, **extra):
    return dict({"function": function, "input": input, "index": index, "verdict": verdict, "message": message,
                 "shape": list(shape), "assumptions": {input: "real"}, "counterexample": None, "points_checked": 6,
                 "uniform": True, "notes": [], "seconds": 0.1, "input_set": input_set}, **extra)


def exact_check(status, message, index=0, error=0.0, failed=0):
    row = {"index": index, "name": "x", "exact_error": error, "max_rel_error": error, "failed_elements": failed,
           "kinks": 0, "undefined": 0, "worst": None, "rtol": 1e-7, "atol": 1e-10}
    return Check("exact", status, message, None, {"source": "trace", "reference": "traced forward", "dps": 40,
                                                  "inputs": [row], "notes": []})


def sample_run():
    ok = CheckReport("Exp", inputs=[InputResult("x", 0, (2, 2), "float64", "pass", 0.0, 0.0, method="complex_step",
                                                exact_error=8.9e-16)],
                     checks=[Check("values", "pass", input=0),
                             exact_check("pass", "backward matches the exact derivative of the traced forward "
                                                 "(max error 8.9e-16)", error=8.9e-16)])
    hidden = CheckReport("Hidden", inputs=[InputResult("x", 0, (2, 2), "float64", "pass", 0.0, 0.0,
                                                       method="complex_step", exact_error=0.0)],
                         checks=[Check("values", "pass", input=0),
                                 exact_check("pass", "backward matches the exact derivative of the traced forward "
                                                     "(max error 0)")])
    torch_like = CheckReport("Square", backend="torch",
                             inputs=[InputResult("x", 0, (2, 2), "float64", "pass", 0.0, 0.0, method="complex_step")],
                             checks=[Check("values", "pass", input=0),
                                     Check("exact", "skip", "no exact reference: a torch Function: give its forward "
                                                            "as a formula", None, {"source": None, "reason": "torch"})])
    disproof = ("gradient of x[1, 1] is wrong at g[1,1]=2, x[1,1]=3: the backward gives 0 = 0, the exact Jᵀg is 12 "
                "= 12 (float64 run of the backward: 0)")
    return RunResult(results=[
        FunctionResult("ops.py", "Exp", "gradcli", "pass", cases=[CaseResult(RECORDS, "pass", "", ok)], line=3,
                       backward_line=9,
                       proofs=[proof("Exp", "proved", "backward − Jᵀg simplifies to 0 for every element at shape "
                                                      "2×2 (1 distinct element formula(s)), under the assumptions x "
                                                      "real")]),
        FunctionResult("ops.py", "Hidden", "gradcli", "fail", f"proof: {disproof}",
                       cases=[CaseResult(RECORDS, "fail", f"proof: {disproof}", hidden)], line=12, backward_line=17,
                       proofs=[proof("Hidden", "disproved", disproof,
                                     counterexample={"kind": "value", "element": [1, 1],
                                                     "at": {"g[1,1]": "2", "x[1,1]": "3"}})]),
        FunctionResult("ops.py", "Square", "torch", "pass", cases=[CaseResult(RECORDS, "pass", "", torch_like)],
                       line=20, backward_line=25,
                       proofs=[proof("Square", "not_traceable", "a torch Function: tracing runs gradcli's engine")]),
        FunctionResult("ops.py", "MatMul", "gradcli", "skip", "cannot build inputs automatically", line=30,
                       proofs=[proof("MatMul", "proved", "proved a", "a", 0), proof("MatMul", "proved", "proved b",
                                                                                    "b", 1)]),
    ], seed=0, duration=0.84)


# -v: the table with the exact and proof columns, every proof and skipped exact check, every Function's inputs
PLAIN = """\
ops.py
  Function  input  shape  max abs err  max rel err  exact err  method        proof          status
  Exp       x      2x2    0.0e+00      0.0e+00      8.9e-16    complex_step  proved         PASS
  Hidden    x      2x2    0.0e+00      0.0e+00      0.0e+00    complex_step  DISPROVED      FAIL
  Square    x      2x2    0.0e+00      0.0e+00      -          complex_step  not traceable  PASS
  MatMul    a      2x2    -            -            -          -             proved         SKIP
            b      2x2    -            -            -          -             proved         SKIP
  proof Exp x: proved: backward - J^Tg simplifies to 0 for every element at shape 2x2 (1 distinct element formula(s)), under the assumptions x real
  inputs Exp: x = float64[2,2]@(-2,2) (auto)

FAIL  Hidden  (ops.py:12, backward at line 17)
    exact: backward matches the exact derivative of the traced forward (max error 0)
    proof x: DISPROVED: gradient of x[1, 1] is wrong at g[1,1]=2, x[1,1]=3: the backward gives 0 = 0, the exact J^Tg is 12 = 12 (float64 run of the backward: 0)
    inputs: x = float64[2,2]@(-2,2) (auto)
    reproduce: gradcli check ops.py::Hidden --seed 0 --input 'x=float64[2,2]@(-2,2)' --prove
  inputs Hidden: x = float64[2,2]@(-2,2) (auto)
  exact Square: no exact reference: a torch Function: give its forward as a formula
  proof Square x: not traceable: a torch Function: tracing runs gradcli's engine
  inputs Square: x = float64[2,2]@(-2,2) (auto)
  SKIP MatMul: cannot build inputs automatically
  proof MatMul a: proved: proved a
  proof MatMul b: proved: proved b
proofs: 3 proved, 1 disproved, 1 not traceable
note: automatic inputs were proved at shape 2x2 (--prove-shape), given inputs at their own shapes; the element structure is the same at every shape for elementwise/broadcast/matmul code, so their proofs hold at every shape; raise --prove-shape to check shape-specific code

short summary: 1 failed
FAIL ops.py::Hidden - proof: gradient of x[1, 1] is wrong at g[1,1]=2, x[1,1]=3: the backward gives 0 = 0, the exact J^Tg is 12 = 12 (float64 run of the backward: 0)
2 passed, 1 failed, 1 skipped in 0.84s"""


def test_plain_snapshot_with_exact_and_proof_columns():
    run, lines = sample_run(), []
    renderer = PlainRenderer(lines.append, seed=0, verbose=True)  # -v: the tables
    renderer.file("ops.py", run.results)
    renderer.finish(run)
    assert "\n".join(lines).strip("\n") == PLAIN
    assert all(line.isascii() for line in lines)


def test_rich_table_has_the_columns_at_fixed_width():
    run, buf = sample_run(), io.StringIO()
    renderer = RichRenderer(Console(file=buf, width=140, color_system=None), seed=0, verbose=True)
    renderer.file("ops.py", run.results)
    renderer.finish(run)
    text = buf.getvalue()
    header = next(line for line in text.splitlines() if "Function" in line)
    assert [c.strip() for c in header.strip("┃ ").split("┃")] == \
        ["Function", "input", "shape", "max abs err", "max rel err", "exact err", "method", "proof", "status"]
    exp_row = next(line for line in text.splitlines() if line.startswith("│ Exp "))
    assert [c.strip() for c in exp_row.strip("│ ").split("│")] == \
        ["Exp", "x", "2×2", "0.0e+00", "0.0e+00", "8.9e-16", "complex_step", "proved", "PASS"]
    assert "proof x: DISPROVED: gradient of x[1, 1] is wrong" in text  # the panel, unicode kept
    assert "the exact Jᵀg is 12" in text
    assert "proofs: 3 proved, 1 disproved, 1 not traceable" in text


def test_columns_only_where_there_is_something_to_show():
    run = sample_run()
    plain_only = [FunctionResult("a.py", "A", "gradcli", "pass",
                                 cases=[CaseResult([], "pass", "", CheckReport("A", checks=[Check("values", "pass")]))])]
    assert not view.shows_exact(plain_only) and not view.shows_proofs(plain_only)
    assert view.shows_exact(run.results) and view.shows_proofs(run.results)
    assert view.columns() == view.COLUMNS
    assert view.columns(exact=True) == ("Function", "input", "shape", "max abs err", "max rel err", "exact err",
                                        "method", "status")


def test_an_exact_failure_marks_its_row_failed_without_an_extra_row():
    report = CheckReport("F", inputs=[InputResult("x", 0, (2,), "float64", "pass", 0.0, 0.0, method="central",
                                                  exact_error=0.5)],
                         checks=[Check("values", "pass", input=0),
                                 exact_check("fail", "backward differs from the exact derivative", error=0.5,
                                             failed=2)])
    result = FunctionResult("f.py", "F", "gradcli", "fail", "exact: ...",
                            cases=[CaseResult([], "fail", "exact: ...", report)])
    rows = view.rows(result, ascii_only=True)
    assert len(rows) == 1 and rows[0].status == "fail" and rows[0].exact_err == "5.0e-01"
    panel = view.detail(result, 0)
    assert ("check", "exact: backward differs from the exact derivative") in panel.lines


def test_json_has_proofs_beside_checks():
    doc = json.loads(json_text(sample_run()))
    hidden = next(r for r in doc["results"] if r["function"] == "Hidden")
    assert list(hidden) == ["file", "function", "backend", "status", "message", "inputs", "checks", "proofs", "partial",
                            "not_checked", "surrogate", "compatibility"]
    assert hidden["proofs"][0]["verdict"] == "disproved" and hidden["proofs"][0]["input_set"] is None
    assert hidden["checks"][0]["inputs"][0]["exact_error"] == 0.0
    assert next(c for c in hidden["checks"][0]["checks"] if c["name"] == "exact")["status"] == "pass"
    without = json.loads(json_text(RunResult([FunctionResult("a.py", "A", "gradcli", "pass")])))
    assert without["results"][0]["proofs"] is None  # --prove not given
