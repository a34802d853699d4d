"""Reference mode's comparison (gradcli/check/reference.py, dtype_grid.py): the pass criterion with
exact numbers, the golden, the cotangents, skipped dtypes, and a correct bf16 kernel that float64
tolerances would reject. The CLI is tested in test_reference_cli.py."""
import json
import math

import numpy as np
import pytest

from gradcli.check.dtype_grid import EPS, parse_grid
from gradcli.check.reference import ReferenceReport, checks_of, compare, reference_check
from gradcli.check.reference_mode import ReferenceNotFound, resolve


# ----- the criterion, on numbers -------------------------------------------------------------------

def test_a_row_passes_within_k_times_the_reference_error_plus_the_floor():
    golden = np.array([1.0, -2.0])
    reference = np.array([1.0, -2.004])  # error 0.004
    floor = 2.0 ** -8 * 2.0  # bf16's unit roundoff times max |golden|
    row = compare("gradient", "x", "bfloat16", np.array([1.01, -2.0]), reference, golden, k=2)
    assert row.status == "pass"
    assert row.error == pytest.approx(0.01, abs=1e-15)
    assert row.reference_error == pytest.approx(0.004, abs=1e-15)
    assert row.ratio == pytest.approx(2.5)
    assert row.floor == floor
    assert row.allowed == pytest.approx(2 * 0.004 + floor)
    assert row.worst[0].index == (0,) and row.worst[0].function == 1.01 and row.worst[0].golden == 1.0


def test_a_row_fails_beyond_it_and_k_is_the_error_ratio():
    golden, reference = np.array([1.0, -2.0]), np.array([1.0, -2.004])
    worse = np.array([1.02, -2.0])  # 0.02 > 2 * 0.004 + 0.0078125 = 0.0158125
    assert compare("gradient", "x", "bfloat16", worse, reference, golden, k=2).status == "fail"
    # k=3: 3 * 0.004 + 0.0078125 = 0.0198125 < 0.02: still a failure, by 1.9e-4; k=4 allows 0.0238125
    three = compare("gradient", "x", "bfloat16", worse, reference, golden, k=3)
    assert three.status == "fail" and three.allowed == pytest.approx(0.0198125)
    assert compare("gradient", "x", "bfloat16", worse, reference, golden, k=4).status == "pass"


def test_an_exact_reference_leaves_only_the_floor():
    golden = np.array([3.0, 4.0])
    row = compare("output", "out", "float16", golden + [0.0, 2.0 ** -10], golden, golden)
    assert row.reference_error == 0.0 and row.ratio == math.inf
    assert row.floor == 2.0 ** -11 * 4.0 and row.status == "pass"  # 1/1024 <= 4/2048
    row = compare("output", "out", "float16", golden + [0.0, 2.0 ** -8], golden, golden)
    assert row.status == "fail"


def test_not_finite_function_fails_and_a_not_finite_reference_or_golden_is_no_verdict():
    golden = np.array([1.0, 2.0])
    row = compare("output", "out", "float16", np.array([np.inf, 2.0]), golden, golden)
    assert row.status == "fail" and row.message == "1 element(s) not finite (the golden is)"
    row = compare("output", "out", "float16", golden, np.array([np.nan, 2.0]), golden)
    assert row.status == "skip" and "the reference itself is not finite at float16" in row.message
    row = compare("output", "out", "float16", golden, golden, np.array([np.inf, 2.0]))
    assert row.status == "skip" and "golden is not finite" in row.message


def test_parse_grid():
    assert parse_grid("float32,bf16, f16") == ("float32", "bfloat16", "float16")
    assert parse_grid("float64") == ("float64",)
    assert parse_grid("half,float16") == ("float16",)
    with pytest.raises(ValueError, match="unknown dtype 'int8'"):
        parse_grid("float32,int8")
    with pytest.raises(ValueError, match="expected one or more"):
        parse_grid(",")


# ----- the engine ------------------------------------------------------------------------------------

def _engine_square():
    import gradcli

    class Square(gradcli.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    class IgnoresGradOutput(Square):  # right for cotangents of ones only
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x

    return Square, IgnoresGradOutput


def _engine_input(shape=(6, 5)):
    import gradcli

    return gradcli.tensor(np.random.default_rng(3).uniform(-2, 2, shape), requires_grad=True)


def test_engine_float32_float16_compared_and_bfloat16_said_not_checked():
    Square, _ = _engine_square()
    report = reference_check(Square.apply, (_engine_input(),), lambda x: x * x, names=["x"],
                             dtypes=("float32", "bfloat16", "float16"))
    by = {d.dtype: d for d in report.dtypes}
    assert by["float32"].status == "pass" and by["float16"].status == "pass"
    assert [r.name for r in by["float16"].rows] == ["out", "x"]
    assert by["bfloat16"].status == "skip" and by["bfloat16"].skipped == "gradcli's engine (numpy) has no bfloat16"
    assert by["bfloat16"].rows == []
    assert report.status == "pass"


def test_the_engine_runs_on_the_cpu_only():
    Square, _ = _engine_square()
    report = reference_check(Square.apply, (_engine_input(),), lambda x: x * x, dtypes=("float32",), device="cuda")
    assert report.dtypes[0].skipped == "--device cuda: gradcli's engine runs on the CPU only"
    assert report.status == "skip"


def test_cotangents_are_random_not_ones():
    _, IgnoresGradOutput = _engine_square()
    report = reference_check(IgnoresGradOutput.apply, (_engine_input(),), lambda x: x * x, names=["x"],
                             dtypes=("float32",))
    rows = {r.name: r for r in report.dtypes[0].rows}
    assert rows["out"].status == "pass" and rows["x"].status == "fail"
    assert rows["x"].error > 0.1  # the cotangents are uniform in (-1, 1): far from ones


def test_the_golden_is_the_reference_in_float64_at_the_rounded_inputs():
    """Inputs are drawn at the dtype first: for an identity the golden is the rounded input itself,
    so a Function and reference that return it exactly have zero error."""
    import gradcli

    class Identity(gradcli.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    report = reference_check(Identity.apply, (_engine_input(),), lambda x: x * 1, dtypes=("float16",))
    for row in report.dtypes[0].rows:
        assert row.error == 0.0 and row.reference_error == 0.0 and row.status == "pass"


def test_a_raising_function_is_reported_at_that_dtype():
    Square, _ = _engine_square()

    def reference(x):
        raise RuntimeError("reference kernel unavailable")

    report = reference_check(Square.apply, (_engine_input(),), reference, dtypes=("float32",))
    assert report.dtypes[0].error == "raised RuntimeError: reference kernel unavailable"
    assert report.status == "fail"


def test_to_dict_is_json_without_nan():
    Square, IgnoresGradOutput = _engine_square()
    report = reference_check(IgnoresGradOutput.apply, (_engine_input(),), lambda x: x * x, names=["x"],
                             dtypes=("float32", "bfloat16"), reference_name="square")
    text = json.dumps(report.to_dict(), allow_nan=False)
    doc = json.loads(text)
    assert doc["reference"] == "square" and doc["status"] == "fail" and doc["error_ratio"] == 2.0
    assert [d["dtype"] for d in doc["dtypes"]] == ["float32", "bfloat16"]
    row = doc["dtypes"][0]["rows"][1]
    assert set(row) == {"kind", "name", "dtype", "status", "error", "reference_error", "ratio", "allowed", "floor",
                        "worst", "message"}
    assert len(row["worst"]) == 3 and set(row["worst"][0]) == {"index", "function", "reference", "golden"}
    checks = checks_of(ReferenceReport("square", dtypes=report.dtypes))
    assert [c.status for c in checks] == ["fail", "skip"]
    assert checks[0].message.startswith("float32: x (gradient): err ")
    assert checks[1].message == "bfloat16: not checked: gradcli's engine (numpy) has no bfloat16"


# ----- resolving a reference -------------------------------------------------------------------------

def test_resolve_dotted_names_and_files(tmp_path):
    import gradcli.nn.functional as F

    assert resolve("gradcli.nn.functional.gelu") is F.gelu
    assert resolve("torch.nn.functional.gelu", backend="gradcli") is F.gelu  # engine code's `torch`
    ref = tmp_path / "refs.py"
    ref.write_text("def double(x):\n    return 2 * x\n")
    assert resolve(f"{ref}::double")(3) == 6
    with pytest.raises(ReferenceNotFound, match="'nope' not found"):
        resolve(f"{ref}::nope")
    with pytest.raises(ReferenceNotFound, match="'no_such_op' not found"):
        resolve("gradcli.nn.functional.no_such_op")
    with pytest.raises(ReferenceNotFound, match="no importable module"):
        resolve("no_such_module_anywhere.fn")
    with pytest.raises(ReferenceNotFound, match="file not found"):
        resolve(f"{tmp_path / 'missing.py'}::fn")


# ----- torch: the bf16 kernel that float64 tolerances reject ------------------------------------------

def _torch_gelu_kernels():
    torch = pytest.importorskip("torch")

    def acc(dtype):
        return torch.promote_types(dtype, torch.float32)

    class BiasGelu(torch.autograd.Function):  # forward and backward in float32, like a fused kernel
        @staticmethod
        def forward(ctx, x, b):
            z = x.to(acc(x.dtype)) + b.to(acc(x.dtype))
            ctx.save_for_backward(z)
            return (0.5 * z * (1 + torch.erf(z / math.sqrt(2)))).to(x.dtype)

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            d = 0.5 * (1 + torch.erf(z / math.sqrt(2))) + z * torch.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
            gz = g.to(z.dtype) * d
            return gz.to(g.dtype), gz.sum(0).to(g.dtype)

    class BiasGeluLowAccumulate(BiasGelu):  # the bias gradient summed row by row in the input dtype
        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            d = 0.5 * (1 + torch.erf(z / math.sqrt(2))) + z * torch.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
            gz = (g.to(z.dtype) * d).to(g.dtype)
            total = torch.zeros_like(gz[0])
            for row in gz:
                total = total + row
            return gz, total

    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(512, 8, generator=gen, dtype=torch.float64) * 4 - 2).requires_grad_()
    b = (torch.rand(8, generator=gen, dtype=torch.float64) * 2 - 1).requires_grad_()
    return torch, BiasGelu, BiasGeluLowAccumulate, (x, b), lambda x, b: torch.nn.functional.gelu(x + b)


def test_error_ratio_accepts_a_correct_bf16_kernel_that_float64_tolerances_reject():
    from gradcli.check.tolerances import DEFAULT_TOLERANCES

    torch, BiasGelu, _, (x, b), reference = _torch_gelu_kernels()
    report = reference_check(BiasGelu.apply, (x, b), reference, names=["x", "b"], dtypes=("bfloat16",))
    rows = report.dtypes[0].rows
    assert [r.status for r in rows] == ["pass", "pass", "pass"]
    assert all(r.ratio <= 2.0 for r in rows)
    # the same kernel's bf16 results against the float64 golden, at gradcheck's float64 tolerances
    tol = DEFAULT_TOLERANCES["float64"]
    for r in rows:
        allowed = tol.atol + tol.rtol * np.abs(r.golden_values)
        assert (np.abs(r.function_values - r.golden_values) > allowed).any(), r.name
        assert r.error > 1e3 * tol.rtol * np.abs(r.golden_values).max()


def test_bf16_accumulation_bug_is_caught_at_bf16_and_f16_and_passes_float64_numerics():
    import gradcli

    torch, _, Bad, (x, b), reference = _torch_gelu_kernels()
    report = reference_check(Bad.apply, (x, b), reference, names=["x", "b"], dtypes=("bfloat16", "float16"))
    for d in report.dtypes:
        rows = {r.name: r for r in d.rows}
        assert rows["out"].status == "pass" and rows["x"].status == "pass"
        assert rows["b"].status == "fail" and rows["b"].ratio > 4, (d.dtype, rows["b"].ratio)
    assert gradcli.gradcheck(Bad.apply, (x[:16].detach().requires_grad_(), b)).ok  # right in float64


def test_torch_cuda_is_skipped_with_its_reason(monkeypatch):
    torch, BiasGelu, _, (x, b), reference = _torch_gelu_kernels()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    report = reference_check(BiasGelu.apply, (x, b), reference, dtypes=("float32", "bfloat16"), device="cuda")
    assert [d.skipped for d in report.dtypes] == [
        "--device cuda: torch.cuda.is_available() is False (no CUDA device here)"] * 2
    assert report.status == "skip" and report.device == "cuda"


def test_the_diagnosis_runs_on_function_minus_golden():
    """A rescale forgotten on the low-precision path only: the diagnosis names the factor."""
    import gradcli

    from gradcli.check.reference import diagnose

    class LowPathHalved(gradcli.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return (2 if x.dtype == np.float64 else 1) * g * x

    report = reference_check(LowPathHalved.apply, (_engine_input(),), lambda x: x * x, names=["x"],
                             dtypes=("float32", "float16"))
    assert [d.status for d in report.dtypes] == ["fail", "fail"]
    findings = diagnose(report)
    assert [(f.kind, f.message.split(" (")[0]) for f in findings] == [
        ("scale", "at float32: backward is 2× too small for input x"),
        ("scale", "at float16: backward is 2× too small for input x")]
    assert findings[0].params["factor"] == pytest.approx(0.5, rel=1e-6)
