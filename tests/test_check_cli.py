"""`gradcli check` end to end: through click's CliRunner (in-process parent, real forked workers) and
through a real subprocess -- exit codes, selectors, SPECs, isolation, JSON, JUnit, GitHub format."""
import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradcli.cli import main

HAS_TORCH = importlib.util.find_spec("torch") is not None

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
PY = sys.executable

GOOD = """
    from gradcli.autograd import Function

    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2
"""

MISBEHAVING = """
    import os, sys, time
    from gradcli.autograd import Function

    class Raises(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2
        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom in backward")

    class Exits(Function):
        @staticmethod
        def forward(ctx, x):
            sys.exit(3)
        @staticmethod
        def backward(ctx, g):
            return g

    class Hangs(Function):
        @staticmethod
        def forward(ctx, x):
            while True:
                time.sleep(0.01)
        @staticmethod
        def backward(ctx, g):
            return g

    class NaNStorm(Function):
        @staticmethod
        def forward(ctx, x):
            print("noise from forward")
            return x * float("nan")
        @staticmethod
        def backward(ctx, g):
            return g

    class HardExit(Function):
        @staticmethod
        def forward(ctx, x):
            os._exit(7)
        @staticmethod
        def backward(ctx, g):
            return g

    class StillChecked(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g
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
    result = check(*args, "--json", out)
    return result, json.loads(out.read_text())


def verdicts(doc):
    return {(Path(r["file"]).name, r["function"]): r["status"] for r in doc["results"]}


# ----- exit codes --------------------------------------------------------------------------------
def test_exit_0_all_passed(tmp_path):
    path = write(tmp_path, "good.py", GOOD)
    result = check(path)
    assert result.exit_code == 0
    assert result.output.splitlines()[-1].startswith("1 passed in ")


def test_exit_1_any_failure():
    result = check(EXAMPLES / "buggy_ops.py", EXAMPLES / "seed_exp.py")
    assert result.exit_code == 1
    assert result.output.splitlines()[-1].startswith("2 passed, 3 failed in ")


@pytest.mark.parametrize("args, message", [
    (["--input", "x=3y4"], "Invalid value for '--input': cannot read SPEC '3y4'"),
    (["--input", "x"], "Invalid value for '--input': expected NAME=SPEC (e.g. x=3x4), got 'x'"),
    (["--input", "x=3x4@(2,1)"], "bad range '(2,1)' in '3x4@(2,1)': need finite low < high"),
    (["--at", "x=abc"], "Invalid value for '--at': --at takes NAME=NUMBER pairs"),
    (["--shape", "3xa"], "Invalid value for '--shape': bad shape '3xa'"),
    (["--shape", "0x3"], "Invalid value for '--shape': empty shape in '0x3': every size must be at least 1"),
    (["--timeout", "0"], "Invalid value for '--timeout'"),
    (["--mode", "slow"], "Invalid value for '--mode'"),
    (["-k", "a and"], "bad -k expression 'a and': expected a name at the end"),
    (["--eps", "2"], "Invalid value for '--eps': 2.0 is not in the range 0<x<1"),
])
def test_exit_2_usage_errors_in_one_line(tmp_path, args, message):
    path = write(tmp_path, "good.py", GOOD)
    result = check(path, *args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output
    assert [line for line in result.output.splitlines() if line.startswith("Error:")] == \
        [line for line in result.output.splitlines() if message in line]


def test_exit_2_missing_path_and_unknown_selector(tmp_path):
    path = write(tmp_path, "good.py", GOOD)
    result = check(tmp_path / "nope.py")
    assert result.exit_code == 2 and f"Error: file or directory not found: {tmp_path / 'nope.py'}" in result.output
    result = check(f"{path}::Nope", f"{path}::Double")
    assert result.exit_code == 2
    assert f"error: not found: {path}::Nope ({path} defines: Double)" in result.output
    assert result.output.splitlines()[-1].startswith("1 passed in ")  # the rest was still checked


def test_exit_3_errors_only_and_5_nothing_collected(tmp_path):
    bad = write(tmp_path, "bad.py", "x = 1\ny = 1 / 0\n")
    result = check(bad)
    assert result.exit_code == 3
    assert f"ERROR  importing {bad}:2" in result.output
    assert f"ZeroDivisionError: division by zero ({bad}:2)" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    write(empty, "plain.py", "VALUE = 1\n")
    result = check(empty)
    assert result.exit_code == 5 and result.output.strip().startswith("no Functions checked in ")
    good = write(tmp_path, "good.py", GOOD)
    result = check(good, "-k", "nothing")
    assert result.exit_code == 5 and result.output.strip().startswith("1 deselected in ")


def test_import_error_does_not_stop_other_files(tmp_path):
    write(tmp_path, "a_bad.py", "def f(:\n    Function\n")  # mentions Function: imported, its error reported
    write(tmp_path, "b_good.py", GOOD)
    result, doc = check_json(tmp_path, tmp_path)
    assert result.exit_code == 3
    assert verdicts(doc) == {("a_bad.py", None): "error", ("b_good.py", "Double"): "pass"}
    assert doc["results"][0]["message"] == f"SyntaxError: invalid syntax ({tmp_path / 'a_bad.py'}:1)"


def test_strict_turns_skips_into_failure():
    path = EXAMPLES / "torch_style.py"
    assert check(path).exit_code == 0
    result = check(path, "--strict")
    assert result.exit_code == 1 and result.output.splitlines()[-1].startswith("2 passed, 1 skipped (strict: fails) in ")


# ----- selection ---------------------------------------------------------------------------------
def test_collect_only_lists_in_file_order():
    """Each file once, in file order; without torch the torch files are one SKIP line each, in their place."""
    result = check(EXAMPLES, "--collect-only", "-k", "exp or tanh or linear")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    no_torch = "SKIP examples/{}.py: needs PyTorch, which is not installed (pip install torch): not checked"
    assert lines[:-1] == [
        "examples/buggy_layers.py::BuggyLinear  (static, gradcli)",
        "examples/buggy_ops.py::BuggyExp  (static, gradcli)",
        "examples/buggy_torch.py::BuggyTanh  (static, torch)" if HAS_TORCH else no_torch.format("buggy_torch"),
        "examples/classmethod_style.py::Tanh  (setup_context, gradcli)",
        *([] if HAS_TORCH else [no_torch.format("fused")]),
        "examples/linear.py::Linear  (static, gradcli)",
        *([] if HAS_TORCH else [no_torch.format("real_torch")]),
        "examples/seed_exp.py::Exp  (static, gradcli)",
        "examples/seed_exp.py::MyFunction  (static, gradcli)",  # "exp" matches its file's name
    ]
    if HAS_TORCH:
        assert lines[-1].startswith("7 Functions collected, 22 deselected in ")
    else:  # the torch files' Functions are unknown without importing them: neither collected nor deselected
        assert lines[-1].startswith("6 Functions collected, 16 deselected in ")


@pytest.fixture(autouse=True)
def _run_from_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # paths are reported relative to the working directory


def test_class_selector_and_keyword(tmp_path):
    result, doc = check_json(tmp_path, "examples/buggy_ops.py::BuggyAbs", "examples/seed_exp.py", "-k", "not my")
    assert verdicts(doc) == {("buggy_ops.py", "BuggyAbs"): "fail", ("seed_exp.py", "Exp"): "pass"}
    assert result.output.splitlines()[-1].startswith("1 passed, 1 failed, 1 deselected in ")


def test_exitfirst_stops_at_the_first_failure(tmp_path):
    result, doc = check_json(tmp_path, "examples/buggy_ops.py", "examples/seed_exp.py", "-x")
    assert result.exit_code == 1
    assert verdicts(doc) == {("buggy_ops.py", "BuggyExp"): "fail"}


# ----- inputs ------------------------------------------------------------------------------------
SCALE = """
    from gradcli.autograd import Function

    def reduce_to(grad, shape):  # sum a broadcast gradient back down to an input's shape
        while grad.dim() > len(shape):
            grad = grad.sum(0)
        for d, n in enumerate(shape):
            if n == 1 and grad.shape[d] != 1:
                grad = grad.sum(d, keepdim=True)
        return grad

    class Scale(Function):
        @staticmethod
        def forward(ctx, x, w, k=2, bias=None):
            ctx.save_for_backward(x, w)
            ctx.k = k
            out = x * w * k
            return out if bias is None else out + bias

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return reduce_to(g * w * ctx.k, x.shape), reduce_to(g * x * ctx.k, w.shape), None, None
"""


@pytest.mark.parametrize("args, expected", [
    (["--at", "x=3,w=-0.5"], [("x", "literal", [], 3.0), ("w", "literal", [], -0.5), ("k", "default", None, 2),
                              ("bias", "default", None, None)]),
    (["--input", "x=[1,2,3]", "--input", "w=2.5", "--input", "k=3"],
     [("x", "literal", [3], [1.0, 2.0, 3.0]), ("w", "literal", [], 2.5), ("k", "literal", None, 3),
      ("bias", "default", None, None)]),
    (["--input", "x=float32[2,3]", "--input", "w=2x3@(1,5)", "--input", "bias=none"],
     [("x", "float32", [2, 3], None), ("w", "float64", [2, 3], (1, 5)), ("k", "default", None, 2),
      ("bias", "none", None, None)]),
    (["--input", "x=3x4@positive", "--at", "w=1"], [("x", "float64", [3, 4], (0.1, 2)), ("w", "literal", [], 1.0),
                                                    ("k", "default", None, 2), ("bias", "default", None, None)]),
])
def test_spec_forms_reach_forward_and_are_recorded(tmp_path, args, expected):
    path = write(tmp_path, "scale.py", SCALE)
    result, doc = check_json(tmp_path, path, *args)
    assert result.exit_code == 0, result.output
    case = doc["results"][0]["inputs"][0]  # (a None default left to its default is also checked as a tensor)
    assert [r["name"] for r in case] == [e[0] for e in expected]
    for rec, (name, kind, shape, value) in zip(case, expected):
        if kind == "literal":
            assert (rec["shape"] if shape is not None else None, rec["value"]) == (shape, value)
        elif kind in ("default", "none"):
            assert rec["value"] == value and rec.get("shape") is None
        else:
            assert (rec["dtype"], rec["shape"]) == (kind, shape)
            flat = sum(rec["value"], [])
            low, high = value if value else (-2, 2)
            assert all(low <= v < high for v in flat)


def test_unknown_input_name_warns(tmp_path):
    path = write(tmp_path, "good.py", GOOD)
    result = check(path, "--input", "z=3")
    assert result.exit_code == 0
    assert "warning: --input/--at z: no checked forward has a parameter named 'z'" in result.stderr


def test_failure_is_reproduced_from_its_recorded_inputs(tmp_path):
    _, doc = check_json(tmp_path, "examples/buggy_ops.py::BuggyExp", "--seed", "5")
    (rec,), = doc["results"][0]["inputs"]
    assert rec["spec"] == "float64[3,4]@(-2,2)" and len(rec["value"]) == 3
    again = tmp_path / "again.json"
    check("examples/buggy_ops.py::BuggyExp", "--seed", "5", "--input", f"x={rec['spec']}", "--json", again)
    redo = json.loads(again.read_text())["results"][0]
    assert redo["inputs"][0][0]["value"] == rec["value"]
    assert redo["checks"][0]["inputs"] == doc["results"][0]["checks"][0]["inputs"]


# ----- isolation ---------------------------------------------------------------------------------
def test_misbehaving_user_code_is_isolated(tmp_path):
    path = write(tmp_path, "misbehave.py", MISBEHAVING)
    result, doc = check_json(tmp_path, path, "--timeout", "2")
    assert result.exit_code == 3
    by_name = {r["function"]: r for r in doc["results"]}
    assert {n: r["status"] for n, r in by_name.items()} == {
        "Raises": "error", "Exits": "error", "Hangs": "error", "NaNStorm": "error", "HardExit": "error",
        "StillChecked": "pass"}
    # the raising line (the innermost frame in the file), not `def backward`
    assert by_name["Raises"]["message"] == f"backward raised ValueError: boom in backward ({path}:11)"
    assert by_name["Exits"]["message"] == f"SystemExit: sys.exit(3) called ({path}:16)"
    assert by_name["Hangs"]["message"] == ("timed out after 8 s of wall time, 4x the CPU-time limit of 2 s (--timeout): it waits (a sleep, a lock, a blocking read) or got almost no CPU")  # it sleeps
    assert by_name["NaNStorm"]["message"].startswith("forward returns NaN/Inf for every element of its output")
    assert by_name["HardExit"]["message"] == ("the checking process exited with code 7 without a result "
                                              "(os._exit or a crash in user code?)")
    assert "noise from forward" in result.output  # captured, shown in the panel, not interleaved
    assert result.output.splitlines()[-1].startswith("1 passed, 5 errors in ")


def test_nan_at_given_inputs_is_an_error(tmp_path):
    path = write(tmp_path, "log.py", """
        import gradcli as torch
        from gradcli.autograd import Function
        class Log(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return torch.log(x)
            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g / x
    """)
    assert check(path).exit_code == 0  # automatic inputs find (0.1, 2)
    result, doc = check_json(tmp_path, path, "--input", "x=[-1,2]")
    assert result.exit_code == 3
    assert doc["results"][0]["message"] == ("forward's output is NaN/Inf (output 0: 1 of 2 elements) at the given "
                                            "inputs: not checked; choose inputs inside forward's domain")


def _signal_state(pid) -> str:
    """State, blocked and ignored signals of process ``pid`` (Linux /proc), for a failure message."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return " ".join(line.split(None, 1)[0] + line.split(None, 1)[1].strip() for line in status
                            if line.startswith(("State", "SigBlk", "SigIgn", "SigPnd", "ShdPnd")))
    except OSError:
        return "(no /proc)"


def test_ctrl_c_stops_cleanly_and_writes_the_report(tmp_path):
    marker = tmp_path / "hanging.pid"
    write(tmp_path, "a_good.py", GOOD)
    write(tmp_path, "b_hang.py", f"""
        import os, time
        from gradcli.autograd import Function
        class Hang(Function):
            @staticmethod
            def forward(ctx, x):
                open({str(marker)!r}, "w").write(str(os.getpid()))
                while True:
                    time.sleep(0.05)
            @staticmethod
            def backward(ctx, g):
                return g
    """)
    out = tmp_path / "r.json"
    # SIGINT as a terminal's Ctrl-C finds it: a suite started in the background by a non-interactive shell
    # (`(pytest &)`, CI scripts) runs with SIGINT ignored, and every child would inherit that
    proc = subprocess.Popen([PY, "-m", "gradcli", "check", str(tmp_path), "--json", str(out), "-j", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    before = _signal_state(proc.pid)
    proc.send_signal(signal.SIGINT)
    try:  # a bound for a hang, not a duration: it exits 0.1-0.2 s after the signal
        stdout, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        after = _signal_state(proc.pid)
        proc.kill()
        proc.communicate()
        pytest.fail(f"gradcli had not finished 60 s after SIGINT; before the signal: {before}; after: {after}")
    assert proc.returncode == 2, f"{stderr}; signal state before SIGINT: {before}"
    assert stdout.splitlines()[-1].endswith("(interrupted)") and "1 passed" in stdout.splitlines()[-1]
    assert "Traceback" not in stdout + stderr
    assert verdicts(json.loads(out.read_text())) == {("a_good.py", "Double"): "pass"}
    hung = int(marker.read_text())
    for _ in range(100):  # the hanging checker was killed with its worker's process group
        try:
            os.kill(hung, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"checker {hung} still alive")


# ----- both backends ------------------------------------------------------------------------------
def test_torch_file_runs_on_the_torch_backend(tmp_path):
    pytest.importorskip("torch")
    _, doc = check_json(tmp_path, "examples/real_torch.py", "examples/buggy_torch.py")
    assert [(r["function"], r["backend"], r["status"]) for r in doc["results"]] == [
        ("Square", "torch", "pass"), ("Swish", "torch", "pass"), ("BuggyTanh", "torch", "fail")]
    assert all(c["backend"] == "torch" for r in doc["results"] for c in r["checks"])


def test_torch_file_without_torch_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # inherited by the forked workers: torch "not installed"
    result, doc = check_json(tmp_path, "examples/real_torch.py")
    assert result.exit_code == 0
    assert doc["results"] == [{"file": "examples/real_torch.py", "function": None, "backend": "torch",
                               "status": "skip", "inputs": [], "checks": [], "proofs": None,
                               "message": "needs PyTorch, which is not installed (pip install torch): not checked",
                               "partial": False, "not_checked": [], "surrogate": None, "compatibility": {}}]


# ----- the examples' verdicts, JSON schema, JUnit, GitHub -------------------------------------------
EXPECTED = {
    ("broadcast.py", "AddBias"): "pass", ("broadcast.py", "ScaleColumns"): "pass",
    ("buggy_layers.py", "BuggyLinear"): "fail", ("buggy_layers.py", "BuggyAddBias"): "fail",
    ("buggy_ops.py", "BuggyExp"): "fail", ("buggy_ops.py", "BuggySigmoid"): "fail",
    ("buggy_ops.py", "BuggyAbs"): "fail", ("buggy_torch.py", "BuggyTanh"): "fail",
    ("classmethod_style.py", "Softplus"): "pass", ("classmethod_style.py", "Tanh"): "pass",
    ("linear.py", "Linear"): "pass", ("real_torch.py", "Square"): "pass", ("real_torch.py", "Swish"): "pass",
    ("seed_exp.py", "Exp"): "pass", ("seed_exp.py", "MyFunction"): "pass",
    ("seed_legacy.py", "SqrtAndInverse"): "pass", ("seed_legacy.py", "SqrtXSquaredMinusOne"): "pass",
    ("torch_style.py", "Sigmoid"): "pass", ("torch_style.py", "MatMul"): "pass",
    ("torch_style.py", "Blockwise"): "skip",
    ("two_outputs.py", "PolarToCartesian"): "pass",
    # reference mode's examples: right in float64 (their bugs are low-precision ones: --dtype, test_reference_cli.py)
    **{(file, name): "pass" for file in ("fused.py", "fused_engine.py")
       for name in ("FusedBiasGelu", "SoftmaxCrossEntropy", "FusedBiasGeluBf16Accumulate",
                    "SoftmaxCrossEntropyNoRescale")},
}

RECORD = {"name": str, "source": ("cli", "example", "default", "auto"), "spec": (str, None), "type": str,
          "?case": int, "?dtype": str, "?shape": list, "?requires_grad": bool, "value": object,
          "?shape_from": ("backward",), "?number": (True,), "?inferred": str}
NOT_CHECKED = {"input": str, "reason": str, "input_set": (int, None), "partial": bool}
RESULT = {"file": str, "function": (str, None), "backend": ("gradcli", "torch"),
          "status": ("pass", "fail", "error", "skip", "surrogate"), "message": str, "inputs": [[RECORD]],
          "checks": [(dict, None)], "proofs": (list, None), "partial": bool, "not_checked": [NOT_CHECKED],
          "surrogate": (dict, None), "compatibility": dict}
SCHEMA = {"gradcli_version": str, "seed": int,
          "summary": {"passed": int, "partial": int, "failed": int, "errors": int, "skipped": int, "surrogates": int},
          "results": [RESULT]}


def validate(value, schema, where="$"):
    """A small JSON-schema check: dict = exact keys ('?' optional), [s] = list of s, tuple = one of
    (types or literal values), type = isinstance."""
    if isinstance(schema, dict):
        assert isinstance(value, dict), where
        required = {k for k in schema if not k.startswith("?")}
        allowed = {k.lstrip("?") for k in schema}
        assert required <= set(value) <= allowed, f"{where}: keys {sorted(value)}"
        for key, sub in schema.items():
            if key.lstrip("?") in value:
                validate(value[key.lstrip("?")], sub, f"{where}.{key.lstrip('?')}")
    elif isinstance(schema, list):
        assert isinstance(value, list), where
        for i, item in enumerate(value):
            validate(item, schema[0], f"{where}[{i}]")
    elif isinstance(schema, tuple):
        assert any((value is None if s is None else isinstance(value, s) if isinstance(s, type) else value == s)
                   for s in schema), f"{where}: {value!r}"
    else:
        assert isinstance(value, schema) and not (schema is int and isinstance(value, bool)), f"{where}: {value!r}"


def test_examples_verdicts_json_junit(tmp_path):
    pytest.importorskip("torch")
    junit = tmp_path / "junit.xml"
    result, doc = check_json(tmp_path, "examples", "--junit", junit)
    assert result.exit_code == 1
    assert verdicts(doc) == EXPECTED
    validate(doc, SCHEMA)
    assert doc["summary"] == {"passed": 22, "partial": 0, "failed": 6, "errors": 0, "skipped": 1, "surrogates": 0}
    linear = next(r for r in doc["results"] if r["function"] == "Linear")
    assert len(linear["inputs"]) == len(linear["checks"]) == 2  # example_inputs gave two sets
    assert linear["inputs"][1][2] == {"name": "bias", "source": "example", "spec": None, "case": 1,
                                      "type": "none", "value": None}
    legacy = next(r for r in doc["results"] if r["function"] == "SqrtAndInverse")
    assert "legacy" in legacy["message"] and "@staticmethod" in legacy["message"]
    root = ET.parse(junit).getroot()
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == 29 and root.get("failures") == "6" and root.get("skipped") == "1"
    assert sorted(c.get("name") for c in cases if c.find("failure") is not None) == sorted(
        f for (_, f), s in EXPECTED.items() if s == "fail")
    assert result.output.splitlines()[-1].startswith("22 passed, 6 failed, 1 skipped in ")


def test_github_format_points_at_the_failing_backward():
    result = check("examples/buggy_ops.py", "--format", "github")
    lines = (EXAMPLES / "buggy_ops.py").read_text().splitlines()
    backward_lines = [i + 1 for i, text in enumerate(lines) if text.strip().startswith("def backward")]
    annotations = [line for line in result.output.splitlines() if line.startswith("::")]
    assert [a.split("::")[1] for a in annotations] == [
        f"error file=examples/buggy_ops.py,line={n},title=gradcli check%3A {name} failed"
        for n, name in zip(backward_lines, ["BuggyExp", "BuggySigmoid", "BuggyAbs"])]
    assert "Looks like: backward is 2× too large" in annotations[0]


def test_verbose_prints_inputs():
    result = check("examples/seed_exp.py", "-v", "--seed", "3")
    assert "  inputs Exp: i = float64[3,4]@(-2,2) (auto)" in result.output.splitlines()


# ----- through a real subprocess -------------------------------------------------------------------
def test_real_process_exit_codes_and_no_color(tmp_path):
    env = dict(os.environ, NO_COLOR="1")
    run = lambda *a: subprocess.run([PY, "-m", "gradcli", "check", *a], capture_output=True, text=True,  # noqa: E731
                                    cwd=ROOT, env=env, timeout=120)
    ok = run("examples/seed_exp.py")
    assert ok.returncode == 0 and "\x1b[" not in ok.stdout
    lines = ok.stdout.splitlines()  # compact: a passing file is one line, then the closing line
    assert lines[:2] == ["", "examples/seed_exp.py  2 passed: Exp, MyFunction"] and len(lines) == 3
    assert lines[2].startswith("2 passed in ")
    verbose = run("examples/seed_exp.py", "-v")  # -v: the table of every input
    assert verbose.stdout.splitlines()[1:3] == [
        "examples/seed_exp.py",
        "  Function    input  shape  max abs err  max rel err  exact err  method        status"]
    assert run("examples/buggy_layers.py").returncode == 1
    bad = run("examples/seed_exp.py", "--input", "i=float8[2]")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1] == (
        "Error: Invalid value for '--input': unknown dtype 'float8' in 'float8[2]': use one of float64, float32, "
        "float16, int64, int32, int16, int8, uint8, bool")


def test_help_starts_without_heavy_imports():
    code = ("import sys\nfrom gradcli.cli import main\ntry:\n    main(['check', '--help'])\nexcept SystemExit:\n"
            "    pass\nprint(sorted(m for m in ('numpy', 'sympy', 'torch', 'rich') if m in sys.modules))")
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert "Exit codes: 0 passed, 1 failures" in out
    assert out.splitlines()[-1] == "[]"


def test_a_torch_file_that_dies_at_import_takes_no_other_file_with_it(tmp_path):
    pytest.importorskip("torch")
    write(tmp_path, "a_dies.py", "import os\nimport torch\nos._exit(9)\nclass F(torch.autograd.Function):\n    pass\n")
    write(tmp_path, "b_square.py", """
        import torch
        class Square(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x
            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g
    """)
    write(tmp_path, "c_good.py", GOOD)
    result, doc = check_json(tmp_path, tmp_path)
    assert verdicts(doc) == {("a_dies.py", None): "error", ("b_square.py", "Square"): "pass",
                             ("c_good.py", "Double"): "pass"}
    assert doc["results"][0]["message"] == "the worker process exited with code 9 while importing"
    assert doc["results"][0]["backend"] == "torch"


def test_options_assumed_by_the_cli_exist_in_gradcheck():
    import inspect

    import gradcli
    from gradcli.check.runner import GRADCHECK_OPTIONS, unsupported_options

    assert set(GRADCHECK_OPTIONS) <= set(inspect.signature(gradcli.gradcheck).parameters)
    assert unsupported_options({"mode": "fast", "eps": 1e-6, "colour": 1}) == ["colour"]


def test_eps_is_passed_through_to_gradcheck(tmp_path):
    result, doc = check_json(tmp_path, EXAMPLES / "seed_exp.py::Exp", "--eps", "1e-6")
    assert result.exit_code == 0, result.output
    # gradcheck rounds the step to a power of two (specs/gradcheck.md) and records it
    assert doc["results"][0]["checks"][0]["tolerances"]["eps"] == 2.0 ** -20


# ----- automatic inputs for per-feature parameters ---------------------------------------------------
PER_FEATURE = """
    import {lib} as torch

    class LayerNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, gamma, beta, eps=1e-5):
            mu = x.mean(dim=-1, keepdim=True)
            var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
            rstd = 1 / torch.sqrt(var + eps)
            xhat = (x - mu) * rstd
            ctx.save_for_backward(xhat, rstd, gamma)
            return xhat * gamma + beta

        @staticmethod
        def backward(ctx, g):
            xhat, rstd, gamma = ctx.saved_tensors
            gxhat = g * gamma
            gx = rstd * (gxhat - gxhat.mean(dim=-1, keepdim=True)
                         - (gxhat * xhat).mean(dim={dim}, keepdim=True) * xhat)
            return gx, (g * xhat).sum(0), g.sum(0), None
"""


@pytest.mark.parametrize("lib", ["gradcli", "torch"])
def test_per_feature_parameters_take_the_shape_their_gradient_has(tmp_path, lib):
    """gamma and beta come out 3x4 like every automatic input; the backward sums their gradients to [4].
    gradcli checks again with gamma, beta of shape [4] (and says so), and judges the backward there."""
    if lib == "torch":
        pytest.importorskip("torch")
    path = write(tmp_path, "ln.py", PER_FEATURE.format(lib=lib, dim=-1))
    result, doc = check_json(tmp_path, path, "--format", "plain", "-v")
    assert result.exit_code == 0, result.output
    validate(doc, SCHEMA)
    records = {r["name"]: r for r in doc["results"][0]["inputs"][0]}
    assert records["x"]["shape"] == [3, 4] and "shape_from" not in records["x"]
    for name in ("gamma", "beta"):
        assert records[name]["shape"] == [4] and records[name]["shape_from"] == "backward"
        assert records[name]["spec"] == "float64[4]@(-2,2)" and records[name]["source"] == "auto"
    assert "gamma = float64[4]@(-2,2) (auto, shaped like the gradient its backward returned)" in result.output
    structure = doc["results"][0]["checks"][0]["checks"][0]
    assert structure["name"] == "structure" and structure["details"]["returned_shapes"] == [[3, 4], [4], [4], None]


def test_per_feature_reshaping_still_finds_the_real_bug(tmp_path):
    # mean over dim 0 instead of -1 in one term: x's gradient is wrong whatever gamma's shape
    path = write(tmp_path, "ln.py", PER_FEATURE.format(lib="gradcli", dim=0))
    result, doc = check_json(tmp_path, path, "--format", "plain")
    assert result.exit_code == 1
    r = doc["results"][0]
    assert r["status"] == "fail" and r["message"].startswith("values: x: ")
    rows = {row["name"]: row["status"] for row in r["checks"][0]["inputs"]}
    assert rows == {"x": "fail", "gamma": "pass", "beta": "pass"}
    assert "reproduce: gradcli check " in result.output and "--input 'gamma=float64[4]@(-2,2)'" in result.output


def test_given_inputs_are_never_reshaped(tmp_path):
    """--input gamma=3x4 is the user's word: the [4] gradient is then a structure failure."""
    path = write(tmp_path, "ln.py", PER_FEATURE.format(lib="gradcli", dim=-1))
    result, doc = check_json(tmp_path, path, "--input", "gamma=3x4", "--input", "beta=3x4", "--format", "plain")
    assert result.exit_code == 1
    r = doc["results"][0]
    assert r["message"].startswith("structure: gradient for gamma has shape [4] but gamma has shape [3, 4]")
    assert all("shape_from" not in rec for rec in r["inputs"][0])


def test_a_gradient_of_a_shape_the_input_does_not_broadcast_from_is_not_a_reshape(tmp_path):
    path = write(tmp_path, "t.py", """
        from gradcli.autograd import Function

        class WrongShape(Function):
            @staticmethod
            def forward(ctx, x, w):
                return x * w

            @staticmethod
            def backward(ctx, g):
                return g, g.T        # [4, 3] for a [3, 4] w: a transposition, not a per-feature shape
    """)
    result, doc = check_json(tmp_path, path, "--format", "plain")
    assert result.exit_code == 1
    r = doc["results"][0]
    assert "gradient for w has shape [4, 3] but w has shape [3, 4]" in r["message"]
    assert all("shape_from" not in rec for rec in r["inputs"][0])
