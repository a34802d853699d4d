"""`gradcli check --dtype float32,bfloat16,float16`: reference mode as a user meets it -- per-dtype
verdicts on examples/fused.py (torch) and examples/fused_engine.py (engine), the table rows, the
panel, JSON, JUnit, GitHub annotations, --reference, --device cuda without a GPU, usage errors."""
import json
import os
import re
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradcli.cli import main

ROOT = Path(__file__).resolve().parents[1]
GRID = "float32,bfloat16,float16"


def check(*args):
    result = CliRunner().invoke(main, ["check", *map(str, args)])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def run_example(tmp_path_factory, name):
    out = tmp_path_factory.mktemp(name)
    here = os.getcwd()
    os.chdir(ROOT)  # results name the file relative to the working directory
    try:
        result = check(f"examples/{name}.py", "--dtype", GRID, "--format", "github", "-v", "--json", out / "r.json",
                       "--junit", out / "r.xml")
    finally:
        os.chdir(here)
    return result, json.loads((out / "r.json").read_text()), ET.parse(out / "r.xml").getroot()


def per_dtype(doc):
    """{(function, dtype): status} and {(function, dtype): [failing row names]} from the JSON."""
    status, failing = {}, {}
    for r in doc["results"]:
        for c in r["checks"][0]["checks"]:
            if c["name"] == "reference":
                key = (r["function"], c["details"]["dtype"])
                status[key] = c["status"]
                failing[key] = [row["name"] for row in c["details"]["rows"] if row["status"] == "fail"]
    return status, failing


@pytest.fixture(scope="module")
def torch_run(tmp_path_factory):
    pytest.importorskip("torch")
    return run_example(tmp_path_factory, "fused")


@pytest.fixture(scope="module")
def engine_run(tmp_path_factory):
    return run_example(tmp_path_factory, "fused_engine")


def test_torch_verdicts_per_dtype(torch_run):
    result, doc, _ = torch_run
    assert result.exit_code == 1
    assert {r["function"]: r["status"] for r in doc["results"]} == {
        "FusedBiasGelu": "pass", "SoftmaxCrossEntropy": "pass", "FusedBiasGeluBf16Accumulate": "fail",
        "SoftmaxCrossEntropyNoRescale": "fail"}
    status, failing = per_dtype(doc)
    for name in ("FusedBiasGelu", "SoftmaxCrossEntropy"):
        assert [status[name, d] for d in GRID.split(",")] == ["pass"] * 3
    # the row-by-row bf16 accumulator: wrong in bf16 and fp16, and 5x worse than torch's sum even in fp32
    assert [failing["FusedBiasGeluBf16Accumulate", d] for d in GRID.split(",")] == [["bias"]] * 3
    # no max subtraction: fp16 overflows (inf loss, zero gradients), bf16 loses the gradient's precision
    assert status["SoftmaxCrossEntropyNoRescale", "float32"] == "pass"
    assert failing["SoftmaxCrossEntropyNoRescale", "bfloat16"] == ["logits"]
    assert failing["SoftmaxCrossEntropyNoRescale", "float16"] == ["out", "logits"]
    # their float64 numerics pass: only reference mode sees these bugs
    for r in doc["results"]:
        values = next(c for c in r["checks"][0]["checks"] if c["name"] == "values")
        assert values["status"] == "pass", r["function"]


def test_torch_rows_panel_and_reproduce(torch_run):
    result, _, _ = torch_run
    lines = result.output.splitlines()
    row = re.compile(r"^\s+(\S+)\s+(f32|bf16|f16)\s+err (\S+)\s+ref (\S+)\s+ratio (\S+)\s+(PASS|FAIL)$")
    rows = [m.groups() for m in map(row.match, lines) if m]
    assert len(rows) == 3 * (3 + 2 + 3 + 2)  # per dtype: out, x, bias / out, logits
    bias_bf16 = [r for r in rows if r[0] == "bias" and r[1] == "bf16"]
    assert [r[5] for r in bias_bf16] == ["PASS", "FAIL"]
    err, ref, ratio = (float(v) for v in bias_bf16[1][2:5])
    assert err > 2 * ref and ratio == pytest.approx(err / ref, rel=0.06)
    assert any(re.match(r"^\s+out\s+f16\s+err inf\s+ref -\s+ratio -\s+FAIL$", line) for line in lines)
    assert any(re.match(r"^    reference: bfloat16: bias \(gradient\): err \S+ > 2 x ref \S+ \+ floor \S+; "
                        r"worst bias\[\d\]: Function \S+, reference \S+, golden \S+$", line) for line in lines)
    assert ("    reproduce: gradcli check examples/fused.py::FusedBiasGeluBf16Accumulate --seed 0 --dtype "
            "float32,bfloat16,float16") in lines


def test_torch_junit_and_github(torch_run):
    result, doc, junit = torch_run
    failures = {c.get("name"): c.find("failure") for c in junit.iter("testcase") if c.find("failure") is not None}
    assert set(failures) == {"FusedBiasGeluBf16Accumulate", "SoftmaxCrossEntropyNoRescale"}
    assert failures["FusedBiasGeluBf16Accumulate"].get("message").startswith("reference: float32: bias (gradient): ")
    assert "reference: float16: bias (gradient)" in failures["FusedBiasGeluBf16Accumulate"].text
    source = (ROOT / "examples/fused.py").read_text().splitlines()
    start = next(i for i, text in enumerate(source) if text.startswith("class FusedBiasGeluBf16Accumulate"))
    backward = next(i + 1 for i, text in enumerate(source) if i > start and "def backward" in text)
    annotations = [line for line in result.output.splitlines() if line.startswith("::error")]
    assert annotations[0].startswith(f"::error file=examples/fused.py,line={backward},title=gradcli check%3A "
                                     f"FusedBiasGeluBf16Accumulate failed::reference: float32: bias (gradient)")


def test_engine_verdicts_per_dtype_and_bfloat16_not_checked(engine_run):
    result, doc, _ = engine_run
    assert result.exit_code == 1
    results = {r["function"]: r for r in doc["results"]}
    assert {n: (r["status"], r["partial"]) for n, r in results.items()} == {
        "FusedBiasGelu": ("pass", True), "SoftmaxCrossEntropy": ("pass", True),
        "FusedBiasGeluBf16Accumulate": ("fail", False), "SoftmaxCrossEntropyNoRescale": ("fail", False)}
    status, failing = per_dtype(doc)
    assert {status[n, "bfloat16"] for n in results} == {"skip"}
    assert results["FusedBiasGelu"]["not_checked"] == [
        {"input": "bfloat16", "reason": "reference mode at bfloat16: gradcli's engine (numpy) has no bfloat16",
         "input_set": None, "partial": True}]
    assert [status["FusedBiasGelu", d] for d in ("float32", "float16")] == ["pass", "pass"]
    assert [status["SoftmaxCrossEntropy", d] for d in ("float32", "float16")] == ["pass", "pass"]
    # numpy's float32 sum is pairwise too, so the row-by-row sum shows only at float16
    assert failing["FusedBiasGeluBf16Accumulate", "float32"] == []
    assert failing["FusedBiasGeluBf16Accumulate", "float16"] == ["bias"]
    assert failing["SoftmaxCrossEntropyNoRescale", "float32"] == ["logits"]
    assert failing["SoftmaxCrossEntropyNoRescale", "float16"] == ["out", "logits"]
    assert "  PASS (partial: bfloat16 not checked) FusedBiasGelu:" in result.output.splitlines()


# ----- options ---------------------------------------------------------------------------------------

TORCH_ONE_ARG = """
    import math
    import torch

    class FastGelu(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            z = x.to(torch.promote_types(x.dtype, torch.float32))
            ctx.save_for_backward(z)
            return (0.5 * z * (1 + torch.erf(z / math.sqrt(2)))).to(x.dtype)

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            d = 0.5 * (1 + torch.erf(z / math.sqrt(2))) + z * torch.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
            return (g.to(z.dtype) * d).to(g.dtype)
"""


def write(tmp_path, name, source):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


@pytest.mark.parametrize("given", ["torch.nn.functional.gelu", "FILE::gelu_reference"])
def test_reference_option_names_the_reference(tmp_path, given):
    pytest.importorskip("torch")
    path = write(tmp_path, "fast.py", TORCH_ONE_ARG)
    refs = write(tmp_path, "refs.py", "import torch\n\ndef gelu_reference(x):\n    return torch.nn.functional.gelu(x)\n")
    given = given.replace("FILE", str(refs))
    out = tmp_path / "r.json"
    result = check(f"{path}::FastGelu", "--dtype", "bfloat16", "--reference", given, "--error-ratio", "3",
                   "--format", "plain", "--json", out)
    assert result.exit_code == 0, result.output
    check_ = next(c for c in json.loads(out.read_text())["results"][0]["checks"][0]["checks"] if c["name"] == "reference")
    assert check_["status"] == "pass" and check_["details"]["source"] == "option"
    assert check_["details"]["error_ratio"] == 3.0 and check_["details"]["reference"] == given
    assert [row["name"] for row in check_["details"]["rows"]] == ["out", "x"]


def test_device_cuda_is_skipped_cleanly_without_a_gpu(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the skip path is not what runs")
    path = write(tmp_path, "fast.py", TORCH_ONE_ARG + "\n    FastGelu.reference = 'torch.nn.functional.gelu'\n")
    result = check(path, "--dtype", "float32,bfloat16", "--device", "cuda", "--format", "plain")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "  PASS (partial: float32, bfloat16 not checked) FastGelu:" in lines
    assert ("    not checked: float32: reference mode at float32: --device cuda: torch.cuda.is_available() is False "
            "(no CUDA device here)") in lines
    assert check(path, "--dtype", "float32", "--device", "cuda", "--strict").exit_code == 1  # not checked: strict


def test_usage_errors(tmp_path):
    path = write(tmp_path, "ops.py", "import gradcli\n")
    result = check(tmp_path, "--dtype", "bfloat16", "--reference", "gradcli.nn.functional.gelu")
    assert result.exit_code == 2 and "--reference gives the reference of one Function" in result.output
    result = check(f"{path}::F", "--reference", "gradcli.nn.functional.gelu")
    assert result.exit_code == 2 and "--reference compares at low-precision dtypes" in result.output
    result = check(path, "--dtype", "float32,int8")
    assert result.exit_code == 2 and "unknown dtype 'int8'" in result.output


ENGINE_CASES = """
    import numpy as np
    import gradcli
    from gradcli.autograd import Function

    class HalfOnlySquare(Function):
        '''A kernel for low precision only: refuses float64, so only reference mode can check it.'''
        reference = staticmethod(lambda x: x * x)

        @staticmethod
        def forward(ctx, x):
            if x.dtype == np.float64:
                raise TypeError("float64 is not supported by this kernel")
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

        @staticmethod
        def example_inputs():
            return (gradcli.tensor(np.linspace(-2, 2, 12).reshape(3, 4), requires_grad=True),)

    def _broken(x):
        raise RuntimeError("no reference kernel here")

    class BrokenReference(Function):
        reference = staticmethod(_broken)

        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Unreferenced(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
"""


def test_low_precision_only_kernel_raising_reference_and_no_reference(tmp_path):
    path = write(tmp_path, "cases.py", ENGINE_CASES)
    out = tmp_path / "r.json"
    result = check(path, "--dtype", "float32,float16", "--format", "plain", "--json", out)
    assert result.exit_code == 3, result.output
    results = {r["function"]: r for r in json.loads(out.read_text())["results"]}
    half = results["HalfOnlySquare"]
    assert half["status"] == "pass"
    checks = {c["name"]: c for c in half["checks"][0]["checks"] if c["name"] != "reference"}
    assert list(checks) == ["numeric"] and checks["numeric"]["status"] == "skip"
    assert "forward does not run at the inputs' dtype (TypeError: float64 is not supported" in checks["numeric"]["message"]
    assert [c["status"] for c in half["checks"][0]["checks"] if c["name"] == "reference"] == ["pass", "pass"]
    broken = results["BrokenReference"]
    assert broken["status"] == "error"
    assert broken["message"] == "reference: float32: raised RuntimeError: no reference kernel here"
    plain = results["Unreferenced"]  # no reference: checked as without a grid
    assert plain["status"] == "pass" and not [c for c in plain["checks"][0]["checks"] if c["name"] == "reference"]


def test_without_a_grid_a_reference_changes_nothing(tmp_path, monkeypatch):
    out = tmp_path / "r.json"
    monkeypatch.chdir(ROOT)
    result = check("examples/fused_engine.py::FusedBiasGelu", "--json", out)
    assert result.exit_code == 0
    names = [c["name"] for c in json.loads(out.read_text())["results"][0]["checks"][0]["checks"]]
    assert "values" in names and "reference" not in names


def test_rich_table_rows_per_dtype(tmp_path):
    """The rich renderer shows the same rows (Console(file=StringIO()), in-process run)."""
    from io import StringIO

    from rich.console import Console

    from gradcli.check.discovery import expand_paths
    from gradcli.check.runner import RunOptions
    from gradcli.check.session import run
    from gradcli.report.terminal import RichRenderer

    path = write(tmp_path, "cases.py", ENGINE_CASES)
    items = expand_paths([f"{path}::HalfOnlySquare"], [], None)
    result = run(items, RunOptions(isolate=False, reference_dtypes=("float16", "bfloat16")))
    console = Console(file=StringIO(), width=120, color_system=None)
    RichRenderer(console, 0, True).file("cases.py", result.results)  # -v: the table, with its reference rows
    lines = console.file.getvalue().splitlines()
    rows = [line for line in lines if "f16" in line or "bfloat16" in line]
    # the kernel computes what its reference does, op for op: the same rounding, ratio 1
    assert re.match(r"^│ HalfOnlySquare │ out\s+│ f16\s+│ err (\d\.\de-0\d) │ ref \1 │ ratio 1\s+│ PASS\s+│$", rows[0])
    assert re.match(r"^│\s+│ x\s+│ f16\s+│ err (\d\.\de-0\d) │ ref \1 │ ratio 1\s+│ PASS\s+│$", rows[1])
    assert re.match(r"^│\s+│ bfloat16\s+│ —\s+│\s+— │\s+— │ —\s+│ NOT CHECKED │$", rows[2])
    assert "PASS (partial: bfloat16 not checked) HalfOnlySquare:" in console.file.getvalue()


def test_an_inputs_file_names_the_reference_of_code_you_cannot_edit(tmp_path):
    """--inputs-from (specs/check.md §2a): REFERENCES = {"module.Class": ...} next to INPUTS."""
    path = write(tmp_path, "cases.py", ENGINE_CASES)
    inputs = write(tmp_path, "my_inputs.py", """
        REFERENCES = {"cases.Unreferenced": "gradcli.nn.functional.relu"}  # deliberately wrong: 2x is no relu
    """)
    out = tmp_path / "r.json"
    result = check(f"{path}::Unreferenced", "--inputs-from", inputs, "--dtype", "float32", "--json", out)
    assert result.exit_code == 1, result.output
    checks = json.loads(out.read_text())["results"][0]["checks"][0]["checks"]
    reference = next(c for c in checks if c["name"] == "reference")
    assert reference["details"]["reference"] == "gradcli.nn.functional.relu"
    assert [row["status"] for row in reference["details"]["rows"]] == ["fail", "fail"]
