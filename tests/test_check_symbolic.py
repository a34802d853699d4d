"""`gradcli check` with exact references and proofs (issue 6): the "exact err" column, --expr and
`formula`, --prove verdicts in the table, panels, JSON and exit code -- through CliRunner (in-process
parent, real forked workers) and a real subprocess."""
import json
import math
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradcli.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SEEDS = sorted(str(p) for p in EXAMPLES.glob("seed_*.py"))
PY = sys.executable

HIDDEN_BUG = """
    from gradcli.autograd import Function

    class SquareWrongAbove(Function):
        '''x**2; the backward is wrong only for x >= 2.5, outside the automatic inputs' (-2, 2).'''

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x * (x < 2.5)
"""

NOT_TRACEABLE = """
    import numpy as np
    import gradcli
    from gradcli.autograd import Function

    class NumpyExp(Function):
        '''Right, but computed with numpy on .data: no symbolic trace.'''

        @staticmethod
        def forward(ctx, x):
            y = gradcli.tensor(np.exp(x.data))
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    class NumpyExpWithFormula(NumpyExp):
        formula = "exp(x)"

        @staticmethod
        def forward(ctx, x):
            y = gradcli.tensor(np.exp(x.data))
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y
"""


def write(directory, name, source):
    path = Path(directory) / name
    path.write_text(textwrap.dedent(source))
    return path


def check(*args, **kwargs):
    result = CliRunner().invoke(main, ["check", *map(str, args)], **kwargs)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def check_json(tmp_path, *args):
    out = tmp_path / "report.json"
    result = check(*args, "--json", out, "--format", "plain", "-v")  # -v: the tables table() reads
    return result, json.loads(out.read_text())


def by_name(doc):
    return {r["function"]: r for r in doc["results"]}


def table(output: str, function: str) -> dict:
    """{input: {column: cell}} for one Function's rows of the plain tables."""
    names = ["Function", "input", "shape", "max abs err", "max rel err", "exact err", "method", "proof", "status"]
    rows, starts, current = {}, None, None
    for line in output.splitlines():
        if line.startswith("  Function  "):
            starts = sorted((line.index(n), n) for n in names if n in line)
            current = None
            continue
        if starts is None or not line.startswith("  ") or line.startswith(("  SKIP", "  proof ", "  exact ")):
            starts = None if not line.startswith("  ") else starts
            continue
        cells = {name: line[start:(starts[k + 1][0] if k + 1 < len(starts) else None)].strip()
                 for k, (start, name) in enumerate(starts)}
        current = cells["Function"] or current
        if current and current.split("[")[0] == function:
            rows[cells["input"]] = cells
    return rows


def exact_of(report):
    return next(c for c in report["checks"] if c["name"] == "exact")


# ----- the exact column -----------------------------------------------------------------------------

def test_engine_functions_get_the_exact_check_by_default_and_its_column(tmp_path):
    result, doc = check_json(tmp_path, EXAMPLES / "seed_exp.py", EXAMPLES / "buggy_ops.py::BuggyExp")
    assert result.exit_code == 1, result.output
    assert "exact err" in result.output
    results = by_name(doc)
    for name in ("Exp", "MyFunction"):
        report = results[name]["checks"][0]
        assert exact_of(report)["status"] == "pass" and exact_of(report)["details"]["source"] == "trace"
        value = report["inputs"][0]["exact_error"]
        assert value is not None and value <= 1e-15
        assert table(result.output, name)[report["inputs"][0]["name"]]["exact err"] == format(value, ".1e")
    assert results["MyFunction"]["checks"][0]["inputs"][0]["exact_error"] == 0.0  # 2*g is exact in binary

    # BuggyExp's backward is 2·g·eˣ: the exact error is |g|·eˣ, what the numeric reference sees too
    report = results["BuggyExp"]["checks"][0]
    row = exact_of(report)["details"]["inputs"][0]
    assert exact_of(report)["status"] == "fail" and row["failed_elements"] == 12
    assert row["worst"]["analytic"] == pytest.approx(2 * row["worst"]["exact"], rel=1e-15)
    assert report["inputs"][0]["exact_error"] == pytest.approx(report["inputs"][0]["max_abs_error"], rel=1e-9)
    assert table(result.output, "BuggyExp")["x"]["exact err"] == format(report["inputs"][0]["exact_error"], ".1e")
    assert "exact: backward differs from the exact derivative of the traced forward" in result.output


def test_an_exact_check_that_fails_fails_the_function(tmp_path):
    """A wrong formula for a right backward: numeric passes, exact fails -> FAIL, exit 1."""
    result, doc = check_json(tmp_path, f"{EXAMPLES / 'seed_exp.py'}::MyFunction", "--expr", "3*x")
    assert result.exit_code == 1, result.output
    r = doc["results"][0]
    assert r["status"] == "fail" and r["message"].startswith("exact: backward differs from the exact derivative "
                                                             "of formula '3*x'")
    assert r["checks"][0]["inputs"][0]["status"] == "pass"  # the numeric verdict itself
    assert table(result.output, "MyFunction")["x"]["status"] == "FAIL"


def test_rtol_and_atol_loosen_the_exact_check_too(tmp_path):
    path = write(tmp_path, "triple.py", """
        from gradcli.autograd import Function

        class Triple(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 3

            @staticmethod
            def backward(ctx, g):
                return g * 2
    """)
    result, doc = check_json(tmp_path, path)
    assert result.exit_code == 1 and exact_of(doc["results"][0]["checks"][0])["status"] == "fail"
    result, doc = check_json(tmp_path, path, "--atol", "10", "--rtol", "1")  # off by 1/3: accepted
    assert result.exit_code == 0, result.output
    row = exact_of(doc["results"][0]["checks"][0])["details"]["inputs"][0]
    assert (row["rtol"], row["atol"]) == (1.0, 10.0) and row["exact_error"] > 0


def test_no_exact_turns_it_off_and_the_column_goes(tmp_path):
    result, doc = check_json(tmp_path, EXAMPLES / "seed_exp.py", "--no-exact")
    assert result.exit_code == 0
    assert "exact err" not in result.output
    assert all(c["name"] != "exact" for r in doc["results"] for c in r["checks"][0]["checks"])
    assert all(r["proofs"] is None for r in doc["results"])


def test_default_exact_stops_at_the_element_budget_and_exact_lifts_it(tmp_path):
    target = f"{EXAMPLES / 'seed_exp.py'}::MyFunction"
    result, doc = check_json(tmp_path, target, "--shape", "9x9")  # 81 elements > 64
    check_ = exact_of(doc["results"][0]["checks"][0])
    assert check_["status"] == "skip" and check_["details"]["reason"] == "elements"
    assert "81 input elements" in check_["message"]
    assert "exact MyFunction" not in check(target, "--shape", "9x9").output  # a routine skip is said with -v only
    assert "exact MyFunction: no exact reference: 81 input elements" in check(target, "--shape", "9x9", "-v").output
    result, doc = check_json(tmp_path, target, "--shape", "9x9", "--exact")
    assert exact_of(doc["results"][0]["checks"][0])["status"] == "pass"
    assert doc["results"][0]["checks"][0]["inputs"][0]["exact_error"] == 0.0


def test_the_exact_check_runs_in_what_is_left_of_the_timeout(tmp_path):
    """A traced reference that cannot finish within --timeout is skipped; the numeric verdict stands."""
    # 48 nested softplus on 32x32: gradcheck takes a fraction of a second, the traced reference ~18 s
    # of CPU here (SymPy's assumption queries while tracing 1024 nested logs), several times --timeout
    path = write(tmp_path, "slow.py", """
        import gradcli
        from gradcli.autograd import Function

        class Softplus(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                y = x
                for _ in range(48):
                    y = gradcli.log(1 + y.exp())
                return y

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                y, d = x, gradcli.ones_like(x)
                for _ in range(48):
                    d = d * y.sigmoid()
                    y = gradcli.log(1 + y.exp())
                return g * d
    """)
    result, doc = check_json(tmp_path, path, "--shape", "32x32", "--exact", "--timeout", "4")
    r = doc["results"][0]
    assert r["status"] == "pass", result.output
    check_ = exact_of(r["checks"][0])
    assert check_["status"] == "skip" and check_["details"]["reason"] == "time", check_
    assert r["checks"][0]["inputs"][0]["exact_error"] is None
    assert "exact Softplus: no exact reference: the time left of --timeout" in result.output


def test_formula_attribute_gives_an_exact_reference_where_tracing_cannot(tmp_path):
    path = write(tmp_path, "numpy_ops.py", NOT_TRACEABLE)
    result, doc = check_json(tmp_path, path)
    assert result.exit_code == 0, result.output
    results = by_name(doc)
    plain = exact_of(results["NumpyExp"]["checks"][0])
    assert plain["status"] == "skip" and "not traceable: numpy's exp is called on an array of symbols" in \
        plain["message"]
    assert "exact NumpyExp: no exact reference: not traceable" in result.output  # said: not a routine skip
    with_formula = exact_of(results["NumpyExpWithFormula"]["checks"][0])
    assert with_formula["status"] == "pass" and with_formula["details"]["source"] == "formula"
    assert with_formula["details"]["reference"] == "exp(x)"
    assert table(result.output, "NumpyExp")["x"]["exact err"] == "-"


def test_torch_function_with_expr_gets_the_exact_column(tmp_path):
    pytest.importorskip("torch")
    result, doc = check_json(tmp_path, f"{EXAMPLES / 'real_torch.py'}::Swish", "--expr", "x*sigmoid(x)")
    assert result.exit_code == 0, result.output
    report = doc["results"][0]["checks"][0]
    assert doc["results"][0]["backend"] == "torch"
    assert exact_of(report)["status"] == "pass" and exact_of(report)["details"]["source"] == "formula"
    value = report["inputs"][0]["exact_error"]
    assert value is not None and value <= 1e-15
    assert table(result.output, "Swish")["x"]["exact err"] == format(value, ".1e")

    # without a formula: a skipped check that says how to get one, and "-" in the column
    result, doc = check_json(tmp_path, f"{EXAMPLES / 'real_torch.py'}::Swish")
    check_ = exact_of(doc["results"][0]["checks"][0])
    assert check_["status"] == "skip" and "--expr" in check_["message"] and check_["details"]["reason"] == "torch"
    assert table(result.output, "Swish")["x"]["exact err"] == "-"


def test_torch_expr_catches_the_buggy_torch_backward(tmp_path):
    pytest.importorskip("torch")
    result, doc = check_json(tmp_path, f"{EXAMPLES / 'buggy_torch.py'}::BuggyTanh", "--expr", "tanh(x)")
    assert result.exit_code == 1
    report = doc["results"][0]["checks"][0]
    check_ = exact_of(report)
    assert check_["status"] == "fail"
    worst = check_["details"]["inputs"][0]["worst"]
    # backward g·(1 + tanh²) against the exact g·(1 − tanh²): their difference is 2·g·tanh²
    assert worst["analytic"] - worst["exact"] > 0
    assert "exact: backward differs from the exact derivative of formula 'tanh(x)'" in result.output


@pytest.mark.parametrize("args, message", [
    (["--expr", "x*2"], "--expr gives the forward of one Function: select it as PATH/file.py::Name"),
    (["--expr", "x*(2", "::MyFunction"], "--expr 'x*(2':"),
    (["--expr", "x*2", "--no-exact", "::MyFunction"], "--expr asks for the exact check, --no-exact turns it off"),
    (["--prove-shape", "2y2"], "Invalid value for '--prove-shape'"),
    (["--prove-timeout", "0"], "Invalid value for '--prove-timeout'"),
])
def test_usage_errors(args, message):
    path = str(EXAMPLES / "seed_exp.py")
    if "::MyFunction" in args:
        args = [a for a in args if a != "::MyFunction"]
        path += "::MyFunction"
    result = check(path, *args)
    assert result.exit_code == 2, result.output
    assert message in result.output


# ----- proofs ------------------------------------------------------------------------------------

def test_seed_functions_are_proved(tmp_path):
    result, doc = check_json(tmp_path, *SEEDS, "--prove")
    assert result.exit_code == 0, result.output
    assert {r["function"] for r in doc["results"]} == {"Exp", "MyFunction", "SqrtAndInverse", "SqrtXSquaredMinusOne"}
    for r in doc["results"]:
        assert r["proofs"] and all(p["verdict"] == "proved" for p in r["proofs"]), r["proofs"]
        assert all(p["input_set"] is None and p["shape"] == [2, 2] for p in r["proofs"])  # automatic inputs
    assert {(r["function"], p["input"]) for r in doc["results"] for p in r["proofs"]} == {
        ("Exp", "i"), ("MyFunction", "x"), ("SqrtAndInverse", "input_x"), ("SqrtAndInverse", "input_y"),
        ("SqrtXSquaredMinusOne", "input_x")}
    assert table(result.output, "SqrtAndInverse")["input_y"]["proof"] == "proved"
    assert "proofs: 5 proved" in result.output
    assert ("the element structure is the same at every shape for elementwise/broadcast/matmul code" in
            result.output and "raise --prove-shape" in result.output)


def test_seed_functions_are_proved_in_a_real_subprocess(tmp_path):
    out = tmp_path / "r.json"
    proc = subprocess.run([PY, "-m", "gradcli", "check", *SEEDS, "--prove", "--prove-shape", "3x2", "--json",
                           str(out)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    proofs = [p for r in doc["results"] for p in r["proofs"]]
    assert len(proofs) == 5 and all(p["verdict"] == "proved" and p["shape"] == [3, 2] for p in proofs)
    assert "automatic inputs were proved at shape 3x2 (--prove-shape)" in proc.stdout


def test_buggy_function_is_disproved_with_a_counterexample_in_json(tmp_path):
    result, doc = check_json(tmp_path, f"{EXAMPLES / 'buggy_ops.py'}::BuggyExp", "--prove")
    assert result.exit_code == 1
    (proof,) = doc["results"][0]["proofs"]
    assert set(proof) == {"function", "input", "index", "verdict", "message", "shape", "assumptions",
                          "counterexample", "points_checked", "uniform", "notes", "seconds", "input_set"}
    assert proof["verdict"] == "disproved" and proof["input"] == "x"
    cx = proof["counterexample"]
    assert cx["kind"] == "value"
    element = "[" + ",".join(map(str, cx["element"])) + "]"
    x, g = Fraction(cx["at"][f"x{element}"]), Fraction(cx["at"][f"g{element}"])
    # plugged in numerically, the point really shows the bug: backward 2·g·eˣ, exact Jᵀg = g·eˣ
    assert cx["expected_value"] == pytest.approx(float(g) * math.exp(float(x)), rel=1e-15)
    assert cx["backward_value"] == pytest.approx(2 * cx["expected_value"], rel=1e-15)
    assert cx["numeric_backward"] == pytest.approx(cx["backward_value"], rel=1e-12)
    assert set(cx["point"]) >= {f"x{element}", f"g{element}"}
    assert table(result.output, "BuggyExp")["x"]["proof"] == "DISPROVED"
    assert "proof x: DISPROVED: gradient of x" in result.output  # in the failure panel
    assert "--prove" in next(line for line in result.output.splitlines() if "reproduce:" in line)


def test_a_proof_finds_a_bug_the_numeric_check_misses(tmp_path):
    """Wrong only for x >= 2.5: the automatic inputs in (-2, 2) pass numerically and exactly; --prove
    finds the exact counterexample, and the run fails."""
    path = write(tmp_path, "hidden.py", HIDDEN_BUG)
    result, doc = check_json(tmp_path, path)
    assert result.exit_code == 0 and doc["results"][0]["status"] == "pass"
    result, doc = check_json(tmp_path, path, "--prove")
    assert result.exit_code == 1, result.output
    r = doc["results"][0]
    assert r["status"] == "fail" and r["message"].startswith("proof: gradient of x")
    (proof,) = r["proofs"]
    assert proof["verdict"] == "disproved"
    cx = proof["counterexample"]
    element = "[" + ",".join(map(str, cx["element"])) + "]"
    x, g = Fraction(cx["at"][f"x{element}"]), Fraction(cx["at"][f"g{element}"])
    assert x >= Fraction(5, 2) and cx["backward_value"] == 0.0 and cx["expected_value"] == float(2 * x * g)
    assert r["checks"][0]["inputs"][0]["status"] == "pass"  # the numeric verdict is unchanged in the report
    assert table(result.output, "SquareWrongAbove")["x"]["status"] == "FAIL"
    assert "proofs: 1 disproved" in result.output


UNREDUCED_BIAS = """
    import gradcli as torch
    from gradcli.autograd import Function

    class UnreducedBias(Function):
        @staticmethod
        def forward(ctx, x, bias):
            return x + bias

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output  # right only while bias is broadcast over the rows

        @staticmethod
        def example_inputs():
            torch.manual_seed(0)
            return torch.randn(3, 4), torch.randn(4)
"""


def test_broadcast_shape_bug_is_disproved_at_the_example_inputs_shapes(tmp_path):
    path = write(tmp_path, "unreduced.py", UNREDUCED_BIAS)
    result, doc = check_json(tmp_path, path, "--prove")
    results = by_name(doc)
    # numerically torch's sum_to makes it right here (a structure warning); the proof covers every broadcast
    assert results["UnreducedBias"]["checks"][0]["checks"][0]["status"] == "warn"
    assert results["UnreducedBias"]["status"] == "fail"
    verdicts = {p["input"]: p["verdict"] for p in results["UnreducedBias"]["proofs"]}
    assert verdicts == {"x": "proved", "bias": "disproved"}
    bias = next(p for p in results["UnreducedBias"]["proofs"] if p["input"] == "bias")
    assert bias["counterexample"] == {"kind": "shape", "returned_shape": [3, 4], "input_shape": [4]}
    assert bias["input_set"] == 0 and bias["shape"] == [4]  # example_inputs: proved at their own shapes
    result, doc = check_json(tmp_path, f"{EXAMPLES / 'buggy_layers.py'}", "--prove")
    results = by_name(doc)
    assert {p["input"]: p["verdict"] for p in results["BuggyLinear"]["proofs"]} == {"x": "proved",
                                                                                      "weight": "disproved"}
    assert {p["input"]: p["verdict"] for p in results["BuggyAddBias"]["proofs"]} == {"x": "proved",
                                                                                       "bias": "disproved"}


def test_not_traceable_is_reported_and_leaves_the_verdict(tmp_path):
    path = write(tmp_path, "numpy_ops.py", NOT_TRACEABLE)
    result, doc = check_json(tmp_path, path, "--prove")
    assert result.exit_code == 0, result.output
    (proof,) = by_name(doc)["NumpyExp"]["proofs"]
    assert proof["verdict"] == "not_traceable" and "numpy's exp is called on an array of symbols" in proof["message"]
    assert by_name(doc)["NumpyExp"]["status"] == "pass"
    assert table(result.output, "NumpyExp")["x"]["proof"] == "not traceable"
    assert "proof NumpyExp x: not traceable: numpy's exp" in result.output
    assert "proofs: 2 not traceable" in result.output


def test_skipped_function_can_still_be_proved_on_prove_shape_symbols(tmp_path):
    """SquareOnly refuses its automatic inputs (3x4 and every shape the search tries); its proof at 2x2 works."""
    path = tmp_path / "square_only.py"
    path.write_text(textwrap.dedent('''
        import gradcli as torch

        class SquareOnly(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                if tuple(a.shape) != (2, 2):
                    raise ValueError("2x2 only")
                ctx.save_for_backward(a)
                return a * a

            @staticmethod
            def backward(ctx, g):
                (a,) = ctx.saved_tensors
                return 2 * g * a
    '''))
    result, doc = check_json(tmp_path, f"{path}::SquareOnly", "--prove")
    assert result.exit_code == 0
    r = doc["results"][0]
    assert r["status"] == "skip" and [p["verdict"] for p in r["proofs"]] == ["proved"]
    rows = table(result.output, "SquareOnly")
    assert rows["a"]["proof"] == "proved" and rows["a"]["shape"] == "2x2" and rows["a"]["status"] == "SKIP"


def test_torch_functions_are_proved_on_their_engine_twin(tmp_path):
    pytest.importorskip("torch")
    result, doc = check_json(tmp_path, f"{EXAMPLES / 'real_torch.py'}", f"{EXAMPLES / 'buggy_torch.py'}", "--prove")
    assert result.exit_code == 1
    proofs = {r["function"]: r["proofs"] for r in doc["results"]}
    assert [p["verdict"] for p in proofs["Square"] + proofs["Swish"]] == ["proved", "proved"]
    (buggy,) = proofs["BuggyTanh"]
    assert buggy["verdict"] == "disproved"
    assert all(any(n.startswith("on the engine twin: the file run with gradcli as torch") for n in p["notes"])
               for p in proofs["Square"] + proofs["Swish"] + proofs["BuggyTanh"])
    assert by_name(doc)["BuggyTanh"]["message"].startswith("values: x:")  # the numeric verdict came first


def test_torch_function_exact_reference_from_its_engine_twin_with_exact(tmp_path):
    pytest.importorskip("torch")
    result, doc = check_json(tmp_path, f"{EXAMPLES / 'real_torch.py'}", f"{EXAMPLES / 'buggy_torch.py'}", "--exact")
    assert result.exit_code == 1
    results = by_name(doc)
    for name in ("Square", "Swish"):
        check_ = exact_of(results[name]["checks"][0])
        assert check_["status"] == "pass" and check_["details"]["source"] == "trace", check_
        assert check_["details"]["reference"] == "forward traced on gradcli's engine"
        assert results[name]["checks"][0]["inputs"][0]["exact_error"] <= 1e-15
    buggy = exact_of(results["BuggyTanh"]["checks"][0])
    assert buggy["status"] == "fail"
    worst = buggy["details"]["inputs"][0]["worst"]
    assert worst["analytic"] - worst["exact"] > 0  # g·(1 + tanh²) against g·(1 − tanh²)
    assert "exact derivative of the forward traced on gradcli's engine" in result.output


def test_a_torch_file_that_does_not_run_with_gradcli_as_torch_says_so(tmp_path):
    pytest.importorskip("torch")
    path = write(tmp_path, "fft_op.py", """
        import torch
        import torch.fft

        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return 2 * x

            @staticmethod
            def backward(ctx, g):
                return 2 * g
    """)
    result, doc = check_json(tmp_path, path, "--exact", "--prove")
    assert result.exit_code == 0, result.output
    r = doc["results"][0]
    check_ = exact_of(r["checks"][0])
    assert check_["status"] == "skip"
    assert "a torch Function whose forward does not run on gradcli's engine: its file imports torch.fft, which " \
           "gradcli does not stand in for (only torch, torch.autograd, torch.autograd.function, torch.nn, " \
           "torch.nn.functional)" in check_["message"]
    (proof,) = r["proofs"]
    assert proof["verdict"] == "not_traceable" and "imports torch.fft, which gradcli does not" in proof["message"]


SLOW_TO_PROVE = """
    import time
    from gradcli.autograd import Function

    class SlowToProve(Function):
        '''x*x; its forward sleeps SECONDS s when it is traced on SymPy symbols (the proof), never when
        it runs on numbers (gradcheck): the proof's cost is fixed by construction, not by the machine.'''

        @staticmethod
        def forward(ctx, x):
            if x.detach().numpy().dtype == object:
                time.sleep(SECONDS)
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g
"""


def test_undecided_when_the_budget_runs_out_leaves_the_numeric_verdict(tmp_path):
    """A proof that needs 60 s against a 0.5 s --prove-timeout: whatever the machine, the budget runs out.
    The buggy Function fails on its numeric verdict, whatever its proof says."""
    path = write(tmp_path, "slow.py", SLOW_TO_PROVE.replace("SECONDS", "60"))
    result, doc = check_json(tmp_path, f"{EXAMPLES / 'buggy_ops.py'}::BuggyExp", path, "--prove",
                             "--prove-timeout", "0.5", "--no-exact")
    assert result.exit_code == 1
    results = by_name(doc)
    (proof,) = results["SlowToProve"]["proofs"]
    assert proof["verdict"] == "undecided" and "budget ran out" in proof["message"], proof
    assert "the numeric verdict stands" in proof["message"]
    assert results["SlowToProve"]["status"] == "pass" and results["BuggyExp"]["message"].startswith("values: ")
    assert table(result.output, "SlowToProve")["x"]["proof"] == "undecided"
    assert "undecided" in next(line for line in result.output.splitlines() if line.startswith("proofs: "))


def test_prove_has_its_own_budget_beyond_timeout(tmp_path):
    """--timeout bounds gradcheck (and the exact check); the checker then asks for --prove-timeout more.
    The proof sleeps 3 s, longer than --timeout 1 by construction: it is proved only if the worker was
    given more time."""
    path = write(tmp_path, "slow.py", SLOW_TO_PROVE.replace("SECONDS", "3"))
    result, doc = check_json(tmp_path, path, "--prove", "--no-exact", "--timeout", "1", "--prove-timeout", "60")
    r = doc["results"][0]
    assert r["status"] == "pass", result.output
    assert [p["verdict"] for p in r["proofs"]] == ["proved"]


def test_github_and_junit_carry_the_proof(tmp_path):
    junit = tmp_path / "j.xml"
    result = check(f"{EXAMPLES / 'buggy_ops.py'}::BuggyAbs", "--prove", "--format", "github", "--junit", junit)
    assert result.exit_code == 1
    annotation = next(line for line in result.output.splitlines() if line.startswith("::error"))
    assert "proof x: DISPROVED: gradient of x" in annotation
    assert "proof x: DISPROVED" in junit.read_text()
