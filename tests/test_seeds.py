"""The seeds' programs (tests/seeds/, see its README) run on gradcli and print the seeds' numbers.

Each program runs as ``__main__`` in this process; its stdout is compared line by line with what
the tutorial shows. Programs in the modern style also run under real torch when it is installed,
which must print the same.
"""
import math
import re
import runpy
from pathlib import Path

import numpy as np
import pytest

import gradcli
from gradcli.autograd import grad

SEEDS = Path(__file__).parent / "seeds"
LEGACY_WARNING = r"legacy autograd\.Function style.*\n.*@staticmethod.*sqrt_and_inverse\.apply"


def run_seed(name, capsys):
    capsys.readouterr()
    namespace = runpy.run_path(str(SEEDS / name), run_name="__main__")
    return capsys.readouterr().out.splitlines(), namespace


def run_legacy_seed(name, capsys):
    with pytest.warns(DeprecationWarning, match=re.compile(LEGACY_WARNING, re.S)):
        return run_seed(name, capsys)


# ----- seed 000: Exp -------------------------------------------------------------------------
def test_seed_000_exp_backward_is_the_saved_result():
    Exp = runpy.run_path(str(SEEDS / "seed_000_exp.py"))["Exp"]
    x = gradcli.tensor([0.0, 1.0, -2.0], requires_grad=True)
    y = Exp.apply(x)
    assert type(y.grad_fn).__name__ == "ExpBackward"
    y.backward(gradcli.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 2 * math.e, 3 * math.exp(-2.0)], rtol=1e-15)


def test_seed_000_exp_double_backward_through_its_tensor_op_backward():
    # backward is grad_output * result, and result is Exp's own output: the second derivative is exp(x)
    Exp = runpy.run_path(str(SEEDS / "seed_000_exp.py"))["Exp"]
    x = gradcli.tensor([0.5, -1.0], requires_grad=True)
    (g,) = grad(Exp.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), np.exp([0.5, -1.0]), rtol=1e-15)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.5, -1.0]), rtol=1e-15)


# ----- seed 001: MyFunction ------------------------------------------------------------------
def test_seed_001_my_function_gradient_is_two(capsys):
    out, ns = run_seed("seed_001_my_function.py", capsys)
    assert out == ["tensor([2., 2., 2.])"]
    assert ns["x"].shape == (3,)
    assert type(ns["output"].grad_fn).__name__ == "MyFunctionBackward"
    np.testing.assert_array_equal(ns["output"].detach().numpy(), 2 * ns["x"].detach().numpy())


# ----- seed 002, legacy instance style, as the tutorial wrote it ------------------------------
def test_seed_002_scalar_legacy(capsys):
    out, ns = run_legacy_seed("seed_002_scalar.py", capsys)
    assert out == ["开始前向传播", "开始反向传播", "tensor(0.1776)", "tensor(8.)"]
    assert ns["z"].item() == pytest.approx(math.sqrt(3) + 1 / 3 + 8, abs=1e-15)
    assert ns["x"].grad.item() == pytest.approx(1 / (2 * math.sqrt(3)) - 1 / 9, abs=1e-15)
    assert ns["y"].grad.item() == 8.0


def test_seed_002_vector_legacy(capsys):
    out, ns = run_legacy_seed("seed_002_vector.py", capsys)
    assert out == ["开始前向传播", "开始反向传播", "tensor([1.1547, 1.0607, 1.0328])"]
    x = np.array([2.0, 3.0, 4.0])
    np.testing.assert_allclose(ns["x"].grad.numpy(), x / np.sqrt(x * x - 1), rtol=1e-15)


def test_seed_002_object_call_runs_the_custom_backward(capsys):
    out, _ = run_legacy_seed("seed_002_object_call.py", capsys)
    assert out == ["开始前向传播", "开始反向传播", "-" * 45, "grad_output is : 1.0",
                   "tensor([1.1547, 1.0607, 1.0328])"]


def test_seed_002_forward_called_directly_skips_the_custom_backward(capsys):
    # no object call, hence no legacy warning either: forward is an ordinary method here
    out, ns = run_seed("seed_002_forward_pitfall.py", capsys)
    assert out == ["开始前向传播", "开始反向传播", "tensor([1.1547, 1.0607, 1.0328])"]
    assert type(ns["z"].grad_fn).__name__ == "SumBackward"


def test_seed_002_grad_output_is_the_gradient_passed_to_backward(capsys):
    out, ns = run_legacy_seed("seed_002_grad_output.py", capsys)
    assert out == ["开始前向传播", "开始反向传播", "-" * 45, "grad_output is : 2.5",
                   "tensor(0.4439)", "tensor(20.)"]
    assert ns["x"].grad.item() == pytest.approx(2.5 * (1 / (2 * math.sqrt(3)) - 1 / 9), abs=1e-15)


def test_seed_002_grad_fn_of_custom_and_builtin_ops(capsys):
    out, ns = run_legacy_seed("seed_002_grad_fn.py", capsys)
    assert out[:2] == ["开始前向传播", "tensor(10.0654, grad_fn=<sqrt_and_inverse>)"]
    assert re.fullmatch(r"<__main__\.sqrt_and_inverse object at 0x[0-9a-f]+>", out[2])
    assert out[3] == "None"
    assert re.fullmatch(r"<AddBackward object at 0x[0-9a-f]+>", out[4])
    assert ns["x"].is_leaf and not ns["y"].is_leaf


def test_legacy_function_instance_called_twice_keeps_both_graphs():
    # old torch let the second call clobber the first call's saved tensors; here each call gets a node
    class Square(gradcli.autograd.Function):
        def forward(self, x):
            self.save_for_backward(x)
            return x * x

        def backward(self, g):
            (x,) = self.saved_tensors
            return 2 * x * g

    square = Square()
    a = gradcli.tensor(3.0, requires_grad=True)
    b = gradcli.tensor(5.0, requires_grad=True)
    with pytest.warns(DeprecationWarning):
        ya, yb = square(a), square(b)
    (ya + yb).backward()
    assert (a.grad.item(), b.grad.item()) == (6.0, 10.0)


# ----- seed 002 in the modern style: same numbers, and the same under real torch -------------
SCALAR_MODERN_OUTPUT = ["tensor(10.0654, grad_fn=<SqrtAndInverseBackward>)", "tensor(0.1776)", "tensor(8.)",
                        "tensor(0.4439)", "tensor(20.)"]
VECTOR_MODERN_OUTPUT = ["tensor([1.1547, 1.0607, 1.0328]) backward calls: [1.0]"] * 2


def test_seed_002_scalar_modern(capsys):
    out, _ = run_seed("seed_002_scalar_modern.py", capsys)
    assert out == SCALAR_MODERN_OUTPUT


def test_seed_002_vector_modern_and_its_forward_pitfall(capsys):
    out, ns = run_seed("seed_002_vector_modern.py", capsys)
    assert out == VECTOR_MODERN_OUTPUT  # the second line: backward_calls did not grow
    assert ns["backward_calls"] == [1.0]


def as_torch_program(name, tmp_path):
    source = (SEEDS / name).read_text(encoding="utf-8")
    source = source.replace("import gradcli as torch", "import torch").replace("from gradcli.", "from torch.")
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    return path


@pytest.mark.parametrize("name, expected", [
    ("seed_001_my_function.py", ["tensor([2., 2., 2.])"]),
    ("seed_002_scalar_modern.py", SCALAR_MODERN_OUTPUT),
    ("seed_002_vector_modern.py", VECTOR_MODERN_OUTPUT),
])
def test_modern_seed_programs_print_the_same_under_torch(name, expected, tmp_path, capsys):
    pytest.importorskip("torch")
    path = as_torch_program(name, tmp_path)
    capsys.readouterr()
    runpy.run_path(str(path), run_name="__main__")
    assert capsys.readouterr().out.splitlines() == expected
    assert run_seed(name, capsys)[0] == expected
