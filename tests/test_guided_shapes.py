"""gradcli/check/guided.py: the shape an exception from forward asks for, for the tensor the raising line uses."""
import pytest

from gradcli.check.guided import guess, shape_with_dims
from gradcli.check.shape_search import Plan

PLANS = {"x": Plan("tensor", shape=(3, 4)), "w": Plan("tensor", shape=(3, 4)), "dim": Plan("int", value=1)}


@pytest.mark.parametrize("exc, shape", [
    (ValueError("not enough values to unpack (expected 4, got 2)"), (2, 3, 4, 4)),
    (ValueError("not enough values to unpack (expected 3, got 2)"), (2, 3, 4)),
    (IndexError("too many indices for tensor of dimension 2"), (2, 3, 4)),
    (IndexError("tuple index out of range"), (2, 3, 4)),
    (IndexError("Dimension out of range (expected to be in range of [-2, 1], but got 3)"), (2, 3, 4, 4)),
    (IndexError("Dimension out of range (expected to be in range of [-2, 1], but got -3)"), (2, 3, 4)),
    (RuntimeError("linalg.cholesky: A must be batches of square matrices, but they are 3 by 4 matrices"), (4, 4)),
])
def test_the_blocking_tensor_gets_the_shape_the_message_asks_for(exc, shape):
    out = guess(PLANS, exc, ["x"])
    assert out["x"].shape == shape and out["w"] == PLANS["w"] and out["dim"] == PLANS["dim"]
    assert out["x"].why.startswith("a shape forward's error asked for (")


@pytest.mark.parametrize("exc, blockers", [
    (ValueError("not enough values to unpack (expected 4, got 3)"), ["x"]),  # says nothing of a 2-d x
    (IndexError("too many indices for tensor of dimension 3"), ["x"]),
    (RuntimeError("mat1 and mat2 shapes cannot be multiplied (3x4 and 3x4)"), ["x"]),  # no rule: blind search
    (IndexError("tuple index out of range"), []),  # no tensor named by the raising line
    (IndexError("tuple index out of range"), ["dim"]),  # not a tensor gradcli planned
])
def test_no_guess_when_the_message_or_the_line_says_nothing_usable(exc, blockers):
    assert guess(PLANS, exc, blockers) is None


def test_shapes_with_a_number_of_dimensions():
    assert [shape_with_dims(n) for n in range(6)] == [(), (4,), (3, 4), (2, 3, 4), (2, 3, 4, 4), (2, 2, 3, 4, 4)]
    assert [shape_with_dims(n, square=True) for n in (2, 3)] == [(4, 4), (2, 3, 3)]
