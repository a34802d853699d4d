"""The per-feature re-draw (automatic inputs checked again in the shape of their gradient) never
hides a shape bug: it is kept only when forward's own broadcasting asks for that shape, i.e. when
forward's outputs keep their shapes (specs/check.md, automatic inputs)."""
import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradcli.cli import main

SUMMED_SQUARE = """
    import {lib} as torch

    class SummedSquare(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return (2 * x * grad_output).sum()   # a 0-d gradient for a 3x4 x: wrong shape
"""

PER_FEATURE_BIAS = """
    import {lib} as torch

    class AddBias(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, bias):
            return x + bias

        @staticmethod
        def backward(ctx, g):
            return g, g.sum(0)                   # bias is per feature: [4] for a 3x4 batch
"""


def run(tmp_path, source, *args):
    path = Path(tmp_path) / "fn.py"
    path.write_text(textwrap.dedent(source))
    out = Path(tmp_path) / "report.json"
    result = CliRunner().invoke(main, ["check", str(path), "--format", "plain", "--json", str(out), *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result, json.loads(out.read_text())["results"][0]


@pytest.mark.parametrize("lib", ["gradcli", "torch"])
def test_a_summed_gradient_of_an_elementwise_forward_fails_structure(tmp_path, lib):
    """Re-drawn as 0-d, x would make forward's output 0-d too: nothing in forward broadcasts x, so
    the [] gradient for a [3, 4] x is the bug, and it is reported (issue 20: it used to PASS)."""
    if lib == "torch":
        pytest.importorskip("torch")
    result, r = run(tmp_path, SUMMED_SQUARE.format(lib=lib))
    assert result.exit_code == 1, result.output
    assert r["status"] == "fail"
    assert r["message"].startswith("structure: gradient for x has shape [] but x has shape [3, 4]"), r["message"]
    for records in r["inputs"]:
        assert all("shape_from" not in rec for rec in records)
        assert {rec["name"]: rec["shape"] for rec in records} == {"x": [3, 4]}


@pytest.mark.parametrize("lib", ["gradcli", "torch"])
def test_a_per_feature_bias_is_still_re_drawn(tmp_path, lib):
    """x + bias with bias [4] keeps forward's [3, 4] output: that shape is what forward's broadcasting
    asks for, so the re-draw stands and the correct backward passes."""
    if lib == "torch":
        pytest.importorskip("torch")
    result, r = run(tmp_path, PER_FEATURE_BIAS.format(lib=lib))
    assert result.exit_code == 0, result.output
    assert r["status"] == "pass"
    records = {rec["name"]: rec for rec in r["inputs"][0]}
    assert records["bias"]["shape"] == [4] and records["bias"]["shape_from"] == "backward"
    assert records["x"]["shape"] == [3, 4] and "shape_from" not in records["x"]


def test_output_shapes_are_what_decides(tmp_path):
    import gradcli
    from gradcli.check.inputs import backend_for, output_shapes

    be = backend_for("gradcli")
    x, b = gradcli.tensor([[1.0, 2.0], [3.0, 4.0]]), gradcli.tensor([1.0, 2.0])
    assert output_shapes(be, lambda u, v: u + v, (x, b)) == [(2, 2)]
    assert output_shapes(be, lambda u, v: (u * u, u.sum(), 3), (x, b)) == [(2, 2), (), None]
