"""0-d (scalar) inputs in every mode and method, first and second order, on both backends.

A 0-d input reaches places where numpy hands back scalars instead of arrays (``np.subtract`` of two
0-d arrays, ``x + t·u`` of a 0-d x) and where torch's ``from_numpy(ascontiguousarray(...))`` turns
them into shape (1,).
"""
import numpy as np
import pytest

import gradcli
from gradcli.autograd import Function
from gradcli.check import gradcheck
from gradcli.check.checks import reentrant_check

MODES = ["full", "fast", "auto"]
METHODS = ["auto", "complex_step", "richardson", "central"]


def scalar(value):
    return gradcli.tensor(value, requires_grad=True)


class SqrtAndInverse(Function):
    """Seed 002 §2.1 in the modern style: sqrt(x) + 1/x + 2y² (at x = 3, y = 2: 0.1776, 8)."""

    @staticmethod
    def forward(ctx, input_x, input_y):
        ctx.save_for_backward(input_x, input_y)
        return gradcli.sqrt(input_x) + gradcli.reciprocal(input_x) + 2 * gradcli.pow(input_y, 2)

    @staticmethod
    def backward(ctx, grad_output):
        input_x, input_y = ctx.saved_tensors
        grad_x = grad_output * (gradcli.reciprocal(2 * gradcli.sqrt(input_x)) - gradcli.reciprocal(gradcli.pow(input_x, 2)))
        return grad_x, grad_output * (4 * input_y)


class SqrtAndInverseWrongY(SqrtAndInverse):
    @staticmethod
    def backward(ctx, grad_output):
        grad_x, grad_y = SqrtAndInverse.backward(ctx, grad_output)
        return grad_x, grad_y * 1.001


class sqrt_and_inverse(Function):  # noqa: N801 -- seed 002's own name and legacy instance style
    def forward(self, input_x, input_y):
        self.save_for_backward(input_x, input_y)
        return gradcli.sqrt(input_x) + gradcli.reciprocal(input_x) + 2 * gradcli.pow(input_y, 2)

    def backward(self, grad_output):
        input_x, input_y = self.saved_tensors
        grad_x = grad_output * (gradcli.reciprocal(2 * gradcli.sqrt(input_x)) - gradcli.reciprocal(gradcli.pow(input_x, 2)))
        return grad_x, grad_output * (4 * input_y)


def sqrt_and_inverse_func(input_x, input_y):
    return sqrt_and_inverse()(input_x, input_y)


def test_reentrant_check_takes_numpy_scalars_and_0d_arrays():
    # The reported crash: np.abs(diff, out=diff) where diff was a numpy scalar.
    for a, b in ((np.float64(1.5), np.float64(1.5)), (np.array(1.5), np.array(1.5))):
        assert reentrant_check([a], [b], 0.0).status == "pass"
    check = reentrant_check([np.float64(1.5)], [np.array(1.75)], 0.0)
    assert check.status == "fail" and check.details["max_difference"] == 0.25


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("mode", MODES)
def test_sin_of_a_scalar(mode, method):
    report = gradcheck(lambda a: a.sin(), (scalar(0.7),), mode=mode, method=method, second_order=True)
    assert report.ok, report.summary()
    assert report.check("reentrant").status == "pass"
    assert report.check("second_order").status == "pass", report.check("second_order").message
    assert report.mode == ("fast" if mode == "fast" else "full")
    if report.mode == "full":
        (result,) = report.inputs
        assert result.shape == () and result.worst.index == ()
        assert result.numeric[0] == pytest.approx(np.cos(0.7), rel=1e-8)  # the "ones" cotangent


@pytest.mark.filterwarnings("ignore:sqrt_and_inverse uses the legacy autograd.Function style")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn", [SqrtAndInverse, sqrt_and_inverse_func], ids=["modern", "legacy"])
def test_seed_002_scalar_function(fn, mode):
    report = gradcheck(fn, (scalar(3.0), scalar(2.0)), mode=mode, second_order=True)
    assert report.ok, report.summary()
    assert report.check("second_order").status == "pass", report.check("second_order").message
    if report.mode == "full":
        x, y = report.inputs
        assert x.numeric[0] == pytest.approx(0.5 / np.sqrt(3) - 1 / 9, rel=1e-12)  # 0.1776
        assert y.numeric[0] == pytest.approx(8.0, rel=1e-12)
    wrong = gradcheck(SqrtAndInverseWrongY, (scalar(3.0), scalar(2.0)), mode=mode)
    assert not wrong.ok
    assert wrong.inputs[1].status == "fail" and wrong.inputs[1].worst.index == ()


def test_scalar_next_to_a_vector_and_a_scalar_output():
    x, y = scalar(0.3), gradcli.tensor([0.1, 0.2, 0.3], requires_grad=True)
    for mode in ("full", "fast"):
        assert gradcheck(lambda a, b: (a * b.sin()).sum(), (x, y), mode=mode, second_order=True).ok


try:  # torch is optional
    import torch
except ImportError:  # pragma: no cover
    torch = None


@pytest.mark.skipif(torch is None, reason="torch not installed")
@pytest.mark.parametrize("method", ["auto", "central"])  # with and without the complex step
@pytest.mark.parametrize("mode", MODES)
def test_torch_scalars(mode, method):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: see test_gradcheck_torch.py
    try:
        x = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
        report = gradcheck(torch.sin, (x,), mode=mode, method=method, second_order=True)
        assert report.ok, report.summary()
        assert report.check("second_order").status == "pass", report.check("second_order").message
        x, y = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (3.0, 2.0))
        report = gradcheck(lambda a, b: torch.sqrt(a) + torch.reciprocal(a) + 2 * torch.pow(b, 2), (x, y),
                           mode=mode, method=method, second_order=True)
        assert report.ok and report.check("second_order").status == "pass", report.summary()
    finally:
        torch.set_num_threads(threads)
