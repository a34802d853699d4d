"""``--emit-function``: the emitted file imports, and its backward passes gradcheck (both styles)."""
import importlib.util

import pytest
from click.testing import CliRunner

import gradcli
from gradcli.cli import main

HAS_TORCH = importlib.util.find_spec("torch") is not None


def emitted(tmp_path, *args, name="Emitted"):
    result = CliRunner().invoke(main, ["diff", *args, "--emit-function", name])
    assert result.exit_code == 0, result.output
    path = tmp_path / f"{name.lower()}_{abs(hash(args))}.py"
    path.write_text(result.output)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name), result.output


CASES = [
    ("sqrt(x)+1/x+2*y**2",),
    ("sigmoid(x)*softplus(y) + logsumexp(x, y)",),
    ("tanh(x*y) + gelu(x) - log(y)",),
    ("abs(x)*x + max(x, y) + relu(y)",),
    ("x^y + cot(x) + erfc(y)",),
    ("x*y", "x+y^2"),                 # two outputs: backward(ctx, grad_f1, grad_f2)
    ("np + math",),                    # variables named like modules are renamed
    ("sech(x) + acot(y) + silu(x) + mish(y) + |x|^3",),   # the newer spellings, rewritten for the engine
    ("coth(x + 3) + asinh(1/y) + leaky_relu(x) + elu(y) + xlogy(y, 2)",),
]


@pytest.mark.parametrize("expressions", CASES, ids=[" | ".join(c) for c in CASES])
def test_emitted_gradcli_function_passes_gradcheck(tmp_path, expressions):
    function, source = emitted(tmp_path, *expressions)
    report = gradcli.gradcheck(function.apply, function.example_inputs())
    assert report.ok, report.to_dict()
    assert "class Emitted(Function):" in source


def test_emitted_source_for_the_seed(tmp_path):
    _, source = emitted(tmp_path, "sqrt(x)+1/x+2*y**2", name="SqrtAndInverse")
    assert "    def forward(ctx, x, y):\n        ctx.save_for_backward(x, y)\n" \
           "        return gradcli.sqrt(x) + 2 * y**2 + 1 / x\n" in source
    assert "        grad_x = grad_output * (1 / (2 * gradcli.sqrt(x)) - 1 / x**2)\n" in source
    assert "        grad_y = 4 * grad_output * y\n" in source
    assert "        return grad_x, grad_y\n" in source
    assert "    def example_inputs():\n        return (gradcli.tensor([" in source


def test_variables_named_like_modules_are_renamed(tmp_path):
    _, source = emitted(tmp_path, "np*math + ctx")
    assert "def forward(ctx, ctx_, math_, np_):" in source


def test_emitted_file_passes_the_check_command(tmp_path):
    result = CliRunner().invoke(main, ["diff", "sigmoid(x)*y^2", "--emit-function", "SigSq"])
    path = tmp_path / "sigsq.py"
    path.write_text(result.output)
    checked = CliRunner().invoke(main, ["check", str(path), "--format", "plain"])
    assert checked.exit_code == 0, checked.output
    assert "1 passed" in checked.output


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
@pytest.mark.parametrize("expressions", CASES[:5], ids=[c[0] for c in CASES[:5]])
def test_emitted_torch_function_passes_torch_gradcheck(tmp_path, expressions):
    import torch
    result = CliRunner().invoke(main, ["diff", *expressions, "--emit-function", "TorchFn", "--style", "torch"])
    assert result.exit_code == 0, result.output
    path = tmp_path / "torch_fn.py"
    path.write_text(result.output)
    spec = importlib.util.spec_from_file_location("torch_fn", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    inputs = module.TorchFn.example_inputs()
    assert all(t.dtype == torch.float64 for t in inputs)
    assert torch.autograd.gradcheck(module.TorchFn.apply, inputs)
    assert gradcli.gradcheck(module.TorchFn.apply, inputs).ok


def test_positive_domain_is_respected(tmp_path):
    function, _ = emitted(tmp_path, "log(x) + sqrt(x)", "--positive")
    (x,) = function.example_inputs()
    assert (x.detach().numpy() > 0).all()
