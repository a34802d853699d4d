"""Every seeded bug of issue 3 is caught by gradcli.gradcheck on gradcli's engine, by the right check."""
import numpy as np
import pytest

import gradcli
from gradcli.autograd import Function
from gradcli.check import gradcheck

RNG = np.random.default_rng(7)


def leaf(array):
    return gradcli.tensor(np.asarray(array, dtype=np.float64), requires_grad=True)


def positive(*shape):
    return leaf(RNG.uniform(0.5, 2.0, shape))


def normal(*shape):
    return leaf(RNG.standard_normal(shape))


from seeded_bugs import (SinCorrect, FactorTwo, SignFlip, RelativeError1e3, IgnoresGradOutput, DroppedTerm, LinearMissingTranspose, BiasNotReduced)  # noqa: F401


class BiasKeepdimNotReduced(Function):
    """b of shape (1, 4): the gradient (4,) cannot even be broadcast back; the engine refuses it."""

    @staticmethod
    def forward(ctx, x, b):
        return x + b

    @staticmethod
    def backward(ctx, grad):
        return grad, grad[0]


class SwappedGradients(Function):
    """x·y²: d/dx = y², d/dy = 2xy — returned in the wrong order."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y * y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * 2 * x * y, grad * y * y


class WrongForNegatives(Function):
    """Leaky ReLU (slope 0.1) whose backward uses slope 1 on the negative side."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gradcli.where(x > 0, x, 0.1 * x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * gradcli.where(x > 0, gradcli.ones_like(x), gradcli.ones_like(x))


class TooFewGradients(SwappedGradients):
    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y * y


class WrongShape(SinCorrect):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (grad * gradcli.cos(x)).T


class ExpSavingOutput(Function):
    @staticmethod
    def forward(ctx, x):
        out = gradcli.exp(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out


def saved_output_modified_in_place(x):
    """The output exp saved for backward is changed in place afterwards (the version counter knows)."""
    return ExpSavingOutput.apply(x).mul_(2.0)


class ForwardModifiesSavedInput(Function):
    """Saves x, then scales it in place: the caller's tensor changes and backward reads the new value."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        out = gradcli.sin(x)
        x.mul_(2.0)
        return out

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * gradcli.cos(x)


class BackwardModifiesSaved(Function):
    """backward scales its saved tensor in place: the next backward through the graph sees it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        x.mul_(2.0)
        return grad * x


class LegacyExp(Function):
    """Seed 002's legacy style: instance methods; the forward's own ops are differentiable too."""

    def forward(self, x):
        self.save_for_backward(x)
        return gradcli.exp(x)

    def backward(self, grad):
        (x,) = self.saved_tensors
        return 2 * grad * gradcli.exp(x)  # wrong, but never called by the wrapper below


def calls_forward_directly(x):
    return LegacyExp().forward(x)


class ExpStatic(Function):
    @staticmethod
    def forward(ctx, x):
        return gradcli.exp(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * 3.0  # wrong, never called


def calls_static_forward_directly(x):
    return ExpStatic.forward(None, x)


BUGS = [
    # (id, fn, inputs, the check that must fail)
    ("factor 2", FactorTwo, (normal(3, 4),), "values"),
    ("sign flip", SignFlip, (normal(3, 4),), "values"),
    ("dropped term", DroppedTerm, (normal(3, 4),), "values"),
    ("missing transpose", LinearMissingTranspose, (normal(3, 4), normal(4, 4)), "values"),
    ("bias (1,4) not reduced", BiasKeepdimNotReduced, (normal(3, 4), normal(1, 4)), "structure"),
    ("swapped gradients", SwappedGradients, (normal(3, 4), normal(3, 4)), "values"),
    ("ignores grad_output", IgnoresGradOutput, (normal(3, 4),), "cotangents"),
    ("wrong for negatives", WrongForNegatives, (normal(3, 4),), "values"),
    ("1e-3 relative error", RelativeError1e3, (normal(3, 4),), "values"),
    ("too few gradients", TooFewGradients, (normal(3, 4), normal(3, 4)), "structure"),
    ("wrong shape", WrongShape, (normal(3, 4),), "structure"),
    ("saved output modified in place", saved_output_modified_in_place, (normal(3, 4),), "inplace"),
    ("forward modifies saved input", ForwardModifiesSavedInput, (normal(3, 4),), "inplace"),
    ("backward modifies saved tensor", BackwardModifiesSaved, (normal(3, 4),), "inplace"),
    ("wrapper calls legacy .forward()", calls_forward_directly, (normal(3, 4),), "backward_invoked"),
    ("wrapper calls static forward()", calls_static_forward_directly, (normal(3, 4),), "backward_invoked"),
]


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("fn, inputs, failing", [b[1:] for b in BUGS], ids=[b[0] for b in BUGS])
def test_seeded_bug_is_caught(fn, inputs, failing, mode):
    report = gradcheck(fn, inputs, mode=mode)
    assert not report.ok
    assert report.status == "fail"
    failed = [c.name for c in report.checks if c.status == "fail"]
    assert failing in failed, (failed, report.summary())


def test_factor_two_exact_numbers():
    x = leaf([[0.0, 0.5], [1.0, -2.0]])
    report = gradcheck(FactorTwo, (x,), mode="full")
    (result,) = report.inputs
    assert result.status == "fail"
    assert result.max_rel_error == pytest.approx(1.0, abs=1e-12)  # backward = 2 × the true derivative
    worst = result.worst
    v = report.cotangents[worst.cotangent][0][worst.index]
    assert worst.numeric == pytest.approx(v * np.cos(x.data[worst.index]), rel=1e-13)
    assert worst.analytic == pytest.approx(2 * worst.numeric, rel=1e-13)
    values = report.check("values")
    assert values.details["failed_elements"] == 4


def test_relative_error_1e3_fails_every_element():
    report = gradcheck(RelativeError1e3, (normal(5, 5),), mode="full")
    (result,) = report.inputs
    assert result.max_rel_error == pytest.approx(1e-3, rel=1e-8)
    assert report.check("values").details["failed_elements"] == 25


def test_wrong_for_negatives_localises_the_negative_elements():
    x = leaf([[-1.0, 2.0, -0.5], [0.3, -3.0, 1.5]])
    report = gradcheck(WrongForNegatives, (x,), mode="full")
    (result,) = report.inputs
    errors = result.error_map()
    assert (errors > 1e-6).tolist() == [[True, False, True], [False, True, False]]


def test_ignores_grad_output_is_right_for_ones_only():
    report = gradcheck(IgnoresGradOutput, (normal(3, 4),), mode="full")
    cotangents = report.check("cotangents")
    assert cotangents.status == "fail"
    assert cotangents.details["ones_ok"] is True
    assert cotangents.details["random_ok"] is False
    assert report.cotangent_kinds == ["ones", "random", "random"]
    assert report.check("values").details["failed_cotangents"] == [1, 2]


def test_inplace_message_names_the_problem():
    report = gradcheck(saved_output_modified_in_place, (normal(2, 2),))
    assert "modified by an inplace operation" in report.check("inplace").message
    report = gradcheck(ForwardModifiesSavedInput, (normal(2, 2),))
    assert "forward modified its input(s) x in place" in report.check("inplace").message


def test_bias_not_reduced_is_a_warning_when_shapes_are_not_strict():
    report = gradcheck(BiasNotReduced, (normal(3, 4), normal(4)), strict_shapes=False)
    assert report.ok
    assert report.check("structure").status == "warn"
    assert "shape [3, 4]" in report.check("structure").message


def test_backward_invoked_names_the_function():
    report = gradcheck(calls_forward_directly, (normal(2, 3),))
    message = report.check("backward_invoked").message
    assert "LegacyExp.backward was never called" in message
    assert "LegacyExp.apply" in message
    # The forward's own ops are differentiated correctly: the values agree, yet the report fails.
    assert all(c.status == "pass" for c in report.checks if c.name == "values")
