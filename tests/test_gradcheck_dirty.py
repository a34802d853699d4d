"""Functions that modify an input in place and declare it (ctx.mark_dirty): autograd refuses that on
a leaf, and the leaves are the checker's own, so gradcheck hands such a Function copies inside the
graph (what a user writes as F.apply(x.clone())). Both backends; through `gradcli check` too."""
import json
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner

import gradcli
from gradcli.check import gradcheck
from gradcli.cli import main

SOURCE = """
    import {lib} as torch


    class ScaleInPlace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, s):
            ctx.mark_dirty(x)
            ctx.s = s
            return x.mul_(s)

        @staticmethod
        def backward(ctx, g):
            return g * {factor}ctx.s, None


    class ExpInPlace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            y = x.exp_()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y


    class Undeclared(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)          # modifies its input without mark_dirty
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g
"""


def load(tmp_path, lib, factor=""):
    path = tmp_path / f"inplace_{lib}.py"
    path.write_text(textwrap.dedent(SOURCE.format(lib=lib, factor=factor)))
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # the test's own source
    return path, namespace


def inputs(lib):
    x = np.random.default_rng(0).uniform(-1, 1, (3, 4))
    return lib.tensor(x, requires_grad=True)


@pytest.fixture(params=["gradcli", "torch"])
def lib(request):
    return gradcli if request.param == "gradcli" else pytest.importorskip("torch")


def test_a_declared_in_place_function_is_checked_and_passes(tmp_path, lib):
    _, ns = load(tmp_path, lib.__name__)
    x = inputs(lib)
    before = x.detach().numpy().copy()
    for fn, args in ((ns["ScaleInPlace"], (x, 2.5)), (ns["ExpInPlace"], (x,))):
        report = gradcheck(fn, args)
        assert report.ok, report.summary()
        assert report.check("inplace").status == "pass"
        assert report.check("values").status == "pass"
    np.testing.assert_array_equal(x.detach().numpy(), before)  # the caller's tensor is untouched


def test_a_wrong_backward_of_an_in_place_function_fails_the_values_check(tmp_path, lib):
    _, ns = load(tmp_path, lib.__name__, factor="2 * ")
    report = gradcheck(ns["ScaleInPlace"], (inputs(lib), 2.5))
    assert not report.ok and report.check("values").status == "fail"
    (row,) = report.inputs
    assert row.max_rel_error == pytest.approx(1.0, rel=1e-12)  # twice the true derivative


def test_an_undeclared_in_place_change_of_an_input_is_still_reported(tmp_path, lib):
    _, ns = load(tmp_path, lib.__name__)
    report = gradcheck(ns["Undeclared"], (inputs(lib),))
    assert report.check("inplace").status == "fail"
    assert "forward modified its input(s) x in place" in report.check("inplace").message


def test_gradcli_check_reports_the_exact_check_for_an_in_place_function(tmp_path):
    path, _ = load(tmp_path, "gradcli")
    out = tmp_path / "r.json"
    result = CliRunner().invoke(main, ["check", f"{path}::ExpInPlace", "--format", "plain", "--json", str(out),
                                       "--input", "x=3x4"])
    assert result.exit_code == 0, result.output
    (r,) = json.loads(out.read_text())["results"]
    exact = next(c for c in r["checks"][0]["checks"] if c["name"] == "exact")
    assert exact["status"] == "pass" and exact["details"]["source"] == "trace", exact
