"""``torch.library.custom_op`` ops (gradcli/check/custom_ops.py): found by the syntax pre-scan,
collected after the import, checked like Functions, with torch.library.opcheck as one more check."""
import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradcli.check.scan import has_functions, scan_file
from gradcli.cli import main


def write(tmp_path, name, source):
    path = Path(tmp_path) / name
    path.write_text(textwrap.dedent(source))
    return path


@pytest.mark.parametrize("source,found", [
    ("import torch\n@torch.library.custom_op('ns::f', mutates_args=())\ndef f(x: torch.Tensor) -> torch.Tensor:\n"
     "    return x\n", ["f"]),
    ("from torch.library import custom_op\n@custom_op('ns::g', mutates_args=())\ndef g(x):\n    return x\n", ["g"]),
    ("import torch.library as L\n@L.custom_op('ns::h', mutates_args=())\ndef h(x):\n    return x\n", ["h"]),
    ("import torch\ndef _f(x: torch.Tensor) -> torch.Tensor:\n    return x\n"
     "op = torch.library.custom_op('ns::f', _f, mutates_args=())\n", ["op"]),
    ("def custom_op(name, **kw):\n    return lambda f: f\n@custom_op('ns::k')\ndef k(x):\n    return x\n", []),
    ("import torch\n# torch.library.custom_op in a comment only\ndef plain(x):\n    return x\n", []),
])
def test_the_scan_finds_custom_ops_without_running_the_file(tmp_path, source, found):
    path = write(tmp_path, "ops.py", source + "raise SystemExit('never imported by the scan')\n")
    assert scan_file(str(path)).custom_ops == found
    assert has_functions(str(path)) is bool(found)


OPS = """
    import torch


    @torch.library.custom_op("gradcli_test_ops::scaled_tanh", mutates_args=())
    def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:
        return torch.tanh(x) * scale


    @scaled_tanh.register_fake
    def _(x, scale):
        return torch.empty_like(x)


    def _tanh_setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.scale = inputs[1]


    def _tanh_backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.scale * (1 - torch.tanh(x) ** 2), None


    scaled_tanh.register_autograd(_tanh_backward, setup_context=_tanh_setup)
    scaled_tanh.reference = lambda x, scale: torch.tanh(x) * scale
    scaled_tanh.example_inputs = lambda: (torch.linspace(-2, 2, 12, dtype=torch.float64).reshape(3, 4), 1.5)


    @torch.library.custom_op("gradcli_test_ops::bad_square", mutates_args=())
    def bad_square(x: torch.Tensor) -> torch.Tensor:
        return x * x


    @bad_square.register_fake
    def _(x):
        return torch.empty_like(x)


    def _square_setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])


    def _square_backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x  # BUG: 2 * x


    bad_square.register_autograd(_square_backward, setup_context=_square_setup)


    @torch.library.custom_op("gradcli_test_ops::wrong_fake", mutates_args=())
    def wrong_fake(x: torch.Tensor) -> torch.Tensor:
        return x * 3


    @wrong_fake.register_fake
    def _(x):
        return x.new_empty(x.shape[0])  # BUG: the fake's shape is not the op's


    def _three(ctx, grad):
        return grad * 3


    wrong_fake.register_autograd(_three, setup_context=lambda ctx, inputs, output: None)


    def _pack(x: torch.Tensor) -> torch.Tensor:
        return (x > 0).to(torch.uint8)


    pack = torch.library.custom_op("gradcli_test_ops::pack", _pack, mutates_args=())  # no autograd: not collected


    @torch.library.custom_op("gradcli_test_ops::cuda_only", mutates_args=(), device_types="cuda")
    def cuda_only(x: torch.Tensor) -> torch.Tensor:
        return x * 2


    cuda_only.register_autograd(_three, setup_context=lambda ctx, inputs, output: None)
"""


@pytest.fixture(scope="module")
def ops_run(tmp_path_factory):
    pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("ops")
    path = write(folder, "my_ops.py", OPS)
    collected = CliRunner().invoke(main, ["check", str(path), "--collect-only"])
    out = folder / "r.json"
    result = CliRunner().invoke(main, ["check", str(path), "--dtype", "float32", "--format", "plain", "--json",
                                       str(out)])
    return collected, result, {r["function"]: r for r in json.loads(out.read_text())["results"]}


def test_custom_ops_are_collected_in_source_order(ops_run):
    collected, _, _ = ops_run
    lines = [line.split("::")[1] for line in collected.output.splitlines() if "::" in line]
    assert lines == ["scaled_tanh  (setup_context, torch)", "bad_square  (setup_context, torch)",
                     "wrong_fake  (setup_context, torch)", "cuda_only  (setup_context, torch)"]


def test_custom_ops_are_checked_like_functions_with_opcheck_besides(ops_run):
    _, result, results = ops_run
    assert result.exit_code == 1
    assert {n: r["status"] for n, r in results.items()} == {"scaled_tanh": "pass", "bad_square": "fail",
                                                            "wrong_fake": "fail", "cuda_only": "skip"}
    assert results["cuda_only"]["message"] == (
        "a torch.library.custom_op for cuda only (device_types): its kernel does not run on the CPU, where gradcli "
        "builds inputs; not checked")
    good = {c["name"]: c for c in results["scaled_tanh"]["checks"][0]["checks"]}
    assert good["values"]["status"] == "pass" and good["opcheck"]["status"] == "pass"
    assert good["opcheck"]["details"]["tests"] == {"test_schema": "SUCCESS", "test_autograd_registration": "SUCCESS",
                                                   "test_faketensor": "SUCCESS", "test_aot_dispatch_dynamic": "SUCCESS"}
    assert good["reference"]["status"] == "pass" and good["reference"]["details"]["dtype"] == "float32"
    assert [i["name"] for i in results["scaled_tanh"]["checks"][0]["inputs"]] == ["x"]  # named from the signature
    bad = results["bad_square"]
    assert bad["message"].startswith("values: x: 12 of 12 elements wrong")
    assert "Looks like: backward is 2× too small for input x" in result.output
    fake = {c["name"]: c for c in results["wrong_fake"]["checks"][0]["checks"]}
    assert fake["values"]["status"] == "pass" and fake["opcheck"]["status"] == "fail"
    assert fake["opcheck"]["message"].startswith("torch.library.opcheck: test_faketensor")
    assert fake["opcheck"]["details"]["tests"]["test_schema"] == "SUCCESS"
