"""The undefined_grads check (torch's check_undefined_grad): backward with None for each output's
gradient in turn (and for all, after ctx.set_materialize_grads(False)), on both backends."""
import numpy as np
import pytest

from check_run import LIBS, by_name, check, check_json, need, write

from gradcli import gradcheck

SOURCE = """
    import {lib} as torch

    class SinCos(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return x.sin(), x.cos()

        @staticmethod
        def backward(ctx, grad_sin, grad_cos):
            (x,) = ctx.saved_tensors
            g = None
            if grad_sin is not None:
                g = grad_sin * x.cos()
            if grad_cos is not None:
                g = -grad_cos * x.sin() if g is None else g - grad_cos * x.sin()
            return g

    class SinCosDropsATerm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return x.sin(), x.cos()

        @staticmethod
        def backward(ctx, grad_sin, grad_cos):
            (x,) = ctx.saved_tensors
            if grad_cos is None:
                return grad_sin * x.sin()   # wrong: sin's derivative is cos
            return grad_sin * x.cos() - grad_cos * x.sin()

    class TwoOutputs(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2, x * x

        @staticmethod
        def backward(ctx, ga, gb):
            (x,) = ctx.saved_tensors
            return ga * 2 + gb * 2 * x

    class OneOutputNoneIsOnes(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            if g is None:
                return torch.ones_like(x)
            return g * 2 * x

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x
"""


def load(tmp_path, lib):
    import importlib.util

    path = write(tmp_path, f"undefined_{lib}.py", SOURCE, lib)
    spec = importlib.util.spec_from_file_location(f"undefined_{lib}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def tensor(lib, array):
    if lib == "torch":
        import torch

        return torch.tensor(array, dtype=torch.float64, requires_grad=True)
    import gradcli

    return gradcli.tensor(array, dtype=gradcli.float64, requires_grad=True)


X = np.linspace(-1.5, 1.5, 6).reshape(2, 3)


@pytest.mark.parametrize("lib", LIBS)
def test_a_backward_that_mishandles_a_none_gradient_fails_where_values_pass(tmp_path, lib):
    need(lib)
    module, _ = load(tmp_path, lib)
    report = gradcheck(module.SinCosDropsATerm, (tensor(lib, X),))
    assert all(c.status == "pass" for c in report.checks if c.name == "values")  # both gradients given: right
    check = report.check("undefined_grads")
    assert check.status == "fail" and not report.ok
    assert check.details["materialize_grads"] is False
    # with grad_cos undefined, backward returns grad_sin*sin(x) instead of grad_sin*cos(x)
    v = report.cotangents[-1][0]
    assert check.details["max_difference"] == pytest.approx(np.max(np.abs(v * np.sin(X) - v * np.cos(X))), rel=1e-12)
    assert "with output 1's gradient undefined (None), backward gives x a gradient that differs" in check.message


@pytest.mark.parametrize("lib", LIBS)
def test_correct_functions_pass_and_one_plain_output_has_no_such_check(tmp_path, lib):
    need(lib)
    module, _ = load(tmp_path, lib)
    for cls in (module.SinCos, module.TwoOutputs):
        report = gradcheck(cls, (tensor(lib, X),))
        assert report.ok and report.check("undefined_grads").status == "pass", report.summary()
    assert gradcheck(module.TwoOutputs, (tensor(lib, X),)).check("undefined_grads").details["materialize_grads"]
    assert gradcheck(module.Square, (tensor(lib, X),)).check("undefined_grads") is None


@pytest.mark.parametrize("lib", LIBS)
def test_every_gradient_undefined_must_give_zero(tmp_path, lib):
    need(lib)
    module, path = load(tmp_path, lib)
    report = gradcheck(module.OneOutputNoneIsOnes, (tensor(lib, X),))
    assert all(c.status == "pass" for c in report.checks if c.name == "values")
    assert report.check("undefined_grads").status == "fail"
    result, doc = check_json(tmp_path, path, "--no-exact")
    r = by_name(doc)
    assert {name: r[name]["status"] for name in r} == {
        "SinCos": "pass", "SinCosDropsATerm": "fail", "TwoOutputs": "pass", "OneOutputNoneIsOnes": "fail",
        "Square": "pass"}
    assert r["OneOutputNoneIsOnes"]["message"].startswith(
        "undefined_grads: with every output's gradient undefined (None), backward gives ")
    assert result.exit_code == 1
    assert any(line.startswith("  FAIL  OneOutputNoneIsOnes - ") for line in result.output.splitlines())
    assert "(undefined_grads)" in check("--format", "plain", path, "--no-exact", "-v").output  # -v: its table row
