"""second_order=True: gradients with no path back to the inputs count as zero (no false failure for a
backward that does not depend on its inputs), ``@once_differentiable`` is a skip, and a backward that
computes with numpy fails with a message saying so; on both backends."""
import numpy as np
import pytest

import gradcli
from gradcli.autograd import Function, once_differentiable
from gradcli.check import gradcheck


def leaf(values):
    return gradcli.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


class MyFunction(Function):
    """Seed 001, as the tutorial writes it: forward x * 2, backward grad_output * 2 (x saved, unused)."""

    @staticmethod
    def forward(ctx, x):
        output = x * 2
        ctx.save_for_backward(x)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 2


class Relu(Function):
    """backward = grad * (x > 0): a comparison, so constant to autograd; right away from the kink."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gradcli.relu(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x > 0).to(grad.dtype)


class SinOnce(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gradcli.sin(x)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * gradcli.cos(x)


class SinNumpy(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gradcli.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * gradcli.tensor(np.cos(x.data))


class LinearPlusSin(Function):
    """2x + sin(y): the gradient for x (2·g) is constant, rightly; the one for y goes through numpy."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(y)
        return 2 * x + gradcli.sin(y)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * 2, grad * gradcli.tensor(np.cos(y.data))


class LinearPlusSinCorrect(LinearPlusSin):
    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * 2, grad * gradcli.cos(y)


SHAPES = {"0-d": 0.7, "vector": [0.5, -1.5, 2.0]}


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_backward_independent_of_the_input_passes(shape, mode):
    report = gradcheck(MyFunction, (leaf(SHAPES[shape]),), mode=mode, second_order=True)
    second = report.check("second_order")
    assert report.ok and second.status == "pass", (second.message, report.summary())
    assert "do not depend on the inputs through autograd" in second.message
    assert second.details["constant_gradients"] == ["x"]


def test_piecewise_constant_backward_passes():
    report = gradcheck(Relu, (leaf([[-1.0, 0.5], [2.0, -0.25]]),), second_order=True)
    assert report.check("second_order").status == "pass", report.check("second_order").message


def test_one_constant_gradient_among_two():
    x, y = leaf([0.3, 1.0]), leaf([0.5, 2.0])
    report = gradcheck(LinearPlusSinCorrect, (x, y), second_order=True)
    second = report.check("second_order")
    assert second.status == "pass", second.message
    assert second.details["constant_gradients"] == ["x"]
    # The numpy gradient for y is the culprit, not the (rightly) constant one for x.
    report = gradcheck(LinearPlusSin, (x, y), second_order=True)
    second = report.check("second_order")
    assert report.check("values").status == "pass" and second.status == "fail"
    assert second.message.startswith("backward's gradient for y is not differentiable")
    assert second.details["not_differentiable"] == ["y"]


@pytest.mark.parametrize("fn", [SinOnce, lambda t: SinOnce.apply(t) * 2], ids=["Function", "wrapper"])
def test_once_differentiable_is_a_skip(fn):
    report = gradcheck(fn, (leaf([0.3, 1.0]),), second_order=True)
    second = report.check("second_order")
    assert report.ok
    assert second.status == "skip"
    assert "SinOnce.backward is decorated with @once_differentiable" in second.message


@pytest.mark.parametrize("mode", ["full", "fast"])
def test_numpy_backward_is_reported_as_not_differentiable(mode):
    report = gradcheck(SinNumpy, (leaf([0.3, 1.0, -2.0]),), mode=mode, second_order=True)
    second = report.check("second_order")
    assert report.check("values").status == "pass"
    assert second.status == "fail"
    assert "backward's gradients are not differentiable: constant to autograd" in second.message
    assert "numerical second derivative is not zero" in second.message
    assert "x:" in second.message  # the inner check names the input, not input0


# --- the same on the PyTorch backend ---------------------------------------------------------------

try:
    import torch
except ImportError:  # pragma: no cover - torch is optional
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")

if torch is not None:

    class TorchMyFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * 2

    class TorchSinOnce(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.sin(x)

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * torch.cos(x)

    class TorchSinNumpy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.sin(x)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * torch.from_numpy(np.cos(x.detach().numpy()))


def torch_leaf(values):
    return torch.tensor(np.asarray(values), dtype=torch.float64, requires_grad=True)


@pytest.fixture
def one_torch_thread():
    """Tiny tensors: torch's OpenMP workers only add latency (see test_gradcheck_torch.py)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@needs_torch
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_torch_backward_independent_of_the_input_passes(shape, mode):
    # A 0-d input in fast mode used to come back from the numeric side as shape (1,), the double
    # backward's shapes mismatched, and the check failed with "not differentiable".
    report = gradcheck(TorchMyFunction, (torch_leaf(SHAPES[shape]),), mode=mode, second_order=True)
    second = report.check("second_order")
    assert report.backend == "torch"
    assert report.ok and second.status == "pass", (second.message, report.summary())
    assert "do not depend on the inputs through autograd" in second.message


@needs_torch
@pytest.mark.usefixtures("one_torch_thread")
def test_torch_once_differentiable_is_a_skip():
    report = gradcheck(TorchSinOnce, (torch_leaf([0.3, 1.0]),), second_order=True)
    second = report.check("second_order")
    assert report.ok and second.status == "skip"
    assert "TorchSinOnce.backward is decorated with @once_differentiable" in second.message


@needs_torch
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("mode", ["full", "fast"])
def test_torch_numpy_backward_is_reported_as_not_differentiable(mode):
    report = gradcheck(TorchSinNumpy, (torch_leaf([0.3, 1.0, -2.0]),), mode=mode, second_order=True)
    second = report.check("second_order")
    assert report.check("values").status == "pass"
    assert second.status == "fail"
    assert "backward's gradients are not differentiable: constant to autograd" in second.message
    assert "numerical second derivative is not zero" in second.message
