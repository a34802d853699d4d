"""prove(): the seeds' Functions proved, and every seeded bug disproved at a point where a float64 run
of the real Function shows the mismatch (the rest is in test_prove_more.py)."""
import re

import numpy as np
import pytest

import gradcli as torch
from gradcli.autograd import Function
from gradcli.symbolic.prove import SHAPE_NOTE, prove


# ---- the seeds --------------------------------------------------------------------------------------
class Exp(Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result


class MyFunction(Function):
    @staticmethod
    def forward(ctx, x):
        output = x * 2
        ctx.save_for_backward(x)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        grad_x = grad_output * 2
        return grad_x


class sqrt_and_inverse(Function):  # noqa: N801 - the seed's name
    def forward(self, input_x, input_y):
        self.save_for_backward(input_x, input_y)
        output = torch.sqrt(input_x) + torch.reciprocal(input_x) + 2 * torch.pow(input_y, 2)
        return output

    def backward(self, grad_output):
        input_x, input_y = self.saved_tensors
        grad_x = grad_output * (torch.reciprocal(2 * torch.sqrt(input_x)) - torch.reciprocal(torch.pow(input_x, 2)))
        grad_y = grad_output * (4 * input_y)
        return grad_x, grad_y


class sqrt_of_squares_minus_one(Function):  # noqa: N801 - seed 002's vector example
    def forward(self, input_x):
        self.save_for_backward(input_x)
        output = torch.sum(torch.sqrt(torch.pow(input_x, 2) - 1))
        return output

    def backward(self, grad_output):
        input_x, = self.saved_tensors
        grad_x = grad_output * (torch.div(input_x, torch.sqrt(torch.pow(input_x, 2) - 1)))
        return grad_x


@pytest.mark.parametrize("fn, inputs", [
    (Exp, ["i"]), (MyFunction, ["x"]), (sqrt_and_inverse, ["input_x", "input_y"]),
    (sqrt_of_squares_minus_one, ["input_x"]),
], ids=["Exp", "MyFunction", "sqrt_and_inverse", "sum(sqrt(x^2-1))"])
def test_seed_functions_are_proved_for_every_input(fn, inputs):
    results = prove(fn)
    assert [r.input for r in results] == inputs
    for r in results:
        assert r.verdict == "proved", r.message
        assert r.shape == (2, 2)
        assert r.points_checked == 6
        assert r.uniform is True and SHAPE_NOTE in r.notes


def test_sqrt_is_proved_under_a_positive_assumption_and_says_so():
    x, y = prove(sqrt_and_inverse)
    assert x.assumptions == {"input_x": "positive"}
    assert y.assumptions == {"input_y": "real"}
    assert "input_x positive" in x.message


# ---- seeded bugs (those of the gradcheck-core tests, plus two value-level variants) -----------------
from seeded_bugs import (SinCorrect, FactorTwo, SignFlip, RelativeError1e3, IgnoresGradOutput, DroppedTerm, LinearMissingTranspose, BiasNotReduced)  # noqa: F401


class BiasReducedOverWrongDim(Function):
    """x + b with b of shape (2, 1), broadcast over columns; the backward sums over rows instead."""

    @staticmethod
    def forward(ctx, x, b):
        return x + b

    @staticmethod
    def backward(ctx, grad):
        return grad, grad.sum(dim=0).reshape(2, 1)


class SwappedGradients(Function):
    """x·y²: d/dx = y², d/dy = 2xy, returned in the wrong order."""

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
        return torch.where(x > 0, x, 0.1 * x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.where(x > 0, torch.ones_like(x), torch.ones_like(x))


class SignedSquareWrongForNegatives(Function):
    """x·|x| (no masks at all): 2|x| is right, 2x only for x > 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.abs()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x


class MaxMasksSwapped(Function):
    """max(x, y) whose backward sends the gradient to the smaller operand."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return torch.maximum(x, y)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * (x < y), grad * (x > y)


def example(*shapes):
    return tuple(torch.zeros(*s) for s in shapes)


BUGS = [
    # (id, fn, example inputs or None for the default 2×2, the inputs that must be disproved)
    ("factor 2", FactorTwo, None, ["x"]),
    ("sign flip", SignFlip, None, ["x"]),
    ("dropped term", DroppedTerm, None, ["x"]),
    ("missing transpose", LinearMissingTranspose, example((2, 2), (2, 2)), ["x"]),
    ("bias reduced over the wrong dim", BiasReducedOverWrongDim, example((2, 2), (2, 1)), ["b"]),
    ("swapped gradients", SwappedGradients, None, ["x", "y"]),
    ("ignores grad_output", IgnoresGradOutput, None, ["x"]),
    ("wrong for negatives (where)", WrongForNegatives, None, ["x"]),
    ("wrong for negatives (abs)", SignedSquareWrongForNegatives, None, ["x"]),
    ("1e-3 relative error", RelativeError1e3, None, ["x"]),
    ("max masks swapped", MaxMasksSwapped, None, ["x", "y"]),
]


def _arrays(point, prefix, shape):
    """The float64 array of the symbols ``prefix[i,j]`` in a counterexample point."""
    out = np.zeros(shape)
    for name, value in point.items():
        match = re.fullmatch(rf"{re.escape(prefix)}(?:\[([0-9,]*)\])?", name)
        if match:
            index = tuple(int(k) for k in match.group(1).split(",")) if match.group(1) else ()
            num, _, den = value.partition("/")
            out[index] = int(num) / int(den or 1)
    return out


def _forward_np(fn, arrays):
    with torch.no_grad():
        return fn.apply(*[torch.tensor(a) for a in arrays]).data


@pytest.mark.parametrize("fn, inputs, wrong", [b[1:] for b in BUGS], ids=[b[0] for b in BUGS])
def test_seeded_bug_is_disproved_at_a_point_where_float64_shows_the_mismatch(fn, inputs, wrong):
    results = {r.input: r for r in prove(fn, example_inputs=inputs)}
    for name in wrong:
        r = results[name]
        assert r.verdict == "disproved", r.message
        ce = r.counterexample
        names = list(results)
        shapes = [results[n].shape for n in names]
        arrays = [_arrays(ce["point"], n, s) for n, s in zip(names, shapes)]
        g = _arrays(ce["point"], "g", np.shape(_forward_np(fn, arrays)))
        # run the real Function at the counterexample, as a user would
        leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
        fn.apply(*leaves).backward(torch.tensor(g))
        k = names.index(name)
        element = tuple(ce["element"])
        got = leaves[k].grad.data[element]
        # an independent truth: a central difference of g·f along that element
        h = 1e-6
        plus, minus = [a.copy() for a in arrays], [a.copy() for a in arrays]
        plus[k][element] += h
        minus[k][element] -= h
        truth = float(np.sum(g * (_forward_np(fn, plus) - _forward_np(fn, minus))) / (2 * h))
        assert ce["expected_value"] == pytest.approx(truth, rel=1e-6, abs=1e-8)
        assert ce["numeric_backward"] == pytest.approx(got, rel=1e-12, abs=1e-15)
        assert abs(got - truth) > 1e-4 * max(abs(truth), 1.0) * (1e-3 if fn is RelativeError1e3 else 1)
        assert ce["backward_value"] == pytest.approx(got, rel=1e-12, abs=1e-15)


def test_the_correct_versions_of_the_seeded_bugs_are_proved():
    class LinearCorrect(LinearMissingTranspose):
        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            return grad @ w.T, x.T @ grad

    class LeakyCorrect(WrongForNegatives):
        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * torch.where(x > 0, torch.ones_like(x), 0.1 * torch.ones_like(x))

    for fn, inputs in [(SinCorrect, None), (LinearCorrect, example((2, 3), (3, 2))), (LeakyCorrect, None)]:
        assert {r.verdict for r in prove(fn, example_inputs=inputs)} == {"proved"}


def test_factor_two_counterexample_has_exact_values_in_closed_form():
    (r,) = prove(FactorTwo, shape=())
    ce = r.counterexample
    x, g = (float(eval_fraction(ce["at"][k])) for k in ("x", "g"))
    assert ce["backward_value"] == pytest.approx(2 * g * np.cos(x), rel=1e-15)
    assert ce["expected_value"] == pytest.approx(g * np.cos(x), rel=1e-15)
    assert "cos(" in ce["backward"] and "cos(" in ce["expected"]
    assert r.message.startswith("gradient of x is wrong at g=")


def eval_fraction(text):
    num, _, den = text.partition("/")
    return int(num) / int(den or 1)


def test_bias_returned_unreduced_is_disproved_with_a_shape_counterexample():
    # the engine (like torch) sums the (2, 2) gradient down to b's (2,), so the values come out
    # right here; the backward is still wrong at every point, for any other broadcast
    x, b = prove(BiasNotReduced, example_inputs=example((2, 2), (2,)))
    assert x.verdict == "proved" and x.counterexample is None
    assert not any("silently sums" in n for n in x.notes)
    assert b.verdict == "disproved", b.message
    assert b.counterexample == {"kind": "shape", "returned_shape": [2, 2], "input_shape": [2]}
    assert b.message == ("the backward returns the gradient of b with shape [2, 2], but b has shape [2]: "
                         "wrong at every point")
    assert any("engine (like torch) silently sums" in n and "only as long as b is broadcast the same way" in n
               for n in b.notes)
    assert "after that sum the values agree with Jᵀg at 6 exact points" in b.notes
    # what the note warns about: the same Function at another broadcast gets the wrong gradient
    xs, bs = torch.zeros(2, 2, requires_grad=True), torch.zeros(2, requires_grad=True)
    BiasNotReduced.apply(xs, bs).backward(torch.ones(2, 2))
    assert bs.grad.tolist() == [2.0, 2.0]  # summed over rows by the engine: right only thanks to that sum
    assert BiasNotReduced.backward(None, torch.ones(2, 2))[1].shape == (2, 2)


def test_bias_unreduced_with_wrong_values_too_is_disproved_by_shape_and_says_the_values_are_wrong():
    class BiasNotReducedAndDoubled(BiasNotReduced):
        @staticmethod
        def backward(ctx, grad):
            return grad, 2 * grad

    x, b = prove(BiasNotReducedAndDoubled, example_inputs=example((2, 2), (2,)))
    assert (x.verdict, b.verdict) == ("proved", "disproved")
    assert b.counterexample["kind"] == "shape"
    assert any(n.startswith("after that sum the values are wrong too: gradient of b") for n in b.notes)


def test_a_gradient_shape_the_engine_refuses_is_disproved_for_that_input():
    class BiasGradientSliced(BiasNotReduced):
        @staticmethod
        def backward(ctx, grad):
            return grad, grad[:, :1]  # (2, 1) for b of shape (3,): not even a broadcast

    x, b = prove(BiasGradientSliced, example_inputs=example((2, 3), (3,)))
    assert b.verdict == "disproved"
    assert b.counterexample == {"kind": "shape", "returned_shape": [2, 1], "input_shape": [3]}
    assert any("refuses a gradient of this shape" in n and "returned an invalid gradient at index 1" in n
               for n in b.notes)
    # the backward never finished, so x's gradient was not seen
    assert x.verdict == "not_traceable" and x.message.startswith("the backward did not finish: ")


def test_value_counterexamples_say_their_kind():
    (r,) = prove(FactorTwo)
    assert r.counterexample["kind"] == "value"
