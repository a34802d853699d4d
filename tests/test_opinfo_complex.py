"""Complex tensors on the torch backend, in torch's convention (checked through their real view)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gradcli  # noqa: E402
from gradcli.check import gradcheck  # noqa: E402


class Square(torch.autograd.Function):
    """z² with torch's convention: the gradient of a real loss is v·conj(2z)."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z * z

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        return grad * (2 * z).conj()


class SquareNoConj(torch.autograd.Function):
    """The classic complex bug: the holomorphic derivative without the conjugate."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z * z

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        return grad * 2 * z


class AbsSquared(torch.autograd.Function):
    """|z|², a real output of a complex input: gradient 2z·v."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return (z * z.conj()).real

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        return 2 * z * grad


def z():
    rng = np.random.default_rng(7)
    return torch.tensor(rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4)), requires_grad=True)


@pytest.mark.parametrize("fn", [Square, AbsSquared, lambda t: torch.fft.fft(t), torch.sin])
def test_correct_complex_backwards_pass(fn):
    report = gradcheck(fn, (z(),))
    assert report.ok, report.summary()
    assert report.check("structure").status == "pass"
    assert tuple(report.inputs[0].shape) == (3, 4, 2)  # the real view: real and imaginary parts


def test_a_missing_conjugate_fails_and_torch_agrees():
    report = gradcheck(SquareNoConj, (z(),))
    assert not report.ok
    assert report.check("values").status == "fail"
    assert not torch.autograd.gradcheck(SquareNoConj.apply, (z(),), raise_exception=False)
    assert torch.autograd.gradcheck(Square.apply, (z(),), raise_exception=False)


def test_real_input_complex_output_is_checked():
    x = torch.tensor(np.random.default_rng(1).standard_normal(8), requires_grad=True)
    report = gradcheck(lambda t: torch.fft.rfft(t), (x,))
    assert report.ok, report.summary()
    assert report.check("structure").status == "pass"
    wrong = gradcheck(lambda t: torch.fft.rfft(t.detach()) + 0 * t.sum(), (x,))
    assert not wrong.ok


def test_the_engine_refuses_complex_tensors_in_one_line():
    with pytest.raises(ValueError, match="complex tensors are not supported by gradcli's engine"):
        gradcheck(lambda t: t * t, (gradcli.tensor(np.array([1.0 + 2.0j])),))
