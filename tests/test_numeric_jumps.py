"""Jumps within the numeric steps (floor, round, frac) and inputs in a memory order other than C."""
import numpy as np
import pytest

import gradcli
from gradcli.autograd import Function
from gradcli.check import gradcheck
from gradcli.numeric import NumericFunction, Projector, derivative, element_derivatives

# 20×20 uniform in [-9, 9] like OpInfo's samples: element scales of 8 and 16 make Richardson's
# largest steps (1 and 2) cross integers, which once "converged" to a slope of 1 with error 2e-14.
X = np.random.default_rng(19).uniform(-9.0, 9.0, 400)


def frac(t):
    return t - np.trunc(t)


@pytest.mark.parametrize("method", ["auto", "central"])
@pytest.mark.parametrize("f", [np.floor, np.round, np.trunc, np.ceil], ids=["floor", "round", "trunc", "ceil"])
def test_piecewise_constant_functions_have_slope_zero_away_from_jumps(f, method):
    e = derivative(f, X, method=method)
    assert not e.kink.any()  # no element of X lies within 2⁻²⁶·16 of a jump
    assert np.all(e.value == 0.0)
    assert np.all(e.error <= 1e-9)


def test_frac_has_slope_one_and_an_error_that_holds_it():
    e = derivative(frac, X)
    assert not e.kink.any()
    assert np.max(np.abs(e.value - 1.0)) <= 1e-8
    assert np.all(np.abs(e.value - 1.0) <= 10 * e.error + 1e-12)


@pytest.mark.parametrize("offset", [1e-6, 4e-6, 1e-5, -1e-6, -4e-6, -1e-5])
def test_a_jump_within_the_central_steps_is_stepped_under(offset):
    # 2.0 + offset: the integer lies within ±2h (h = 2⁻¹⁷·2) of x, so the plain central difference
    # is about 1/(2h) or 1/(4h); a smaller step without the jump gives the exact slope.
    x = np.array([2.0 + offset])
    for f, slope in ((np.floor, 0.0), (frac, 1.0), (lambda t: np.floor(t) + np.sin(t), np.cos(x[0]))):
        e = derivative(f, x)
        assert not e.kink[0]
        assert abs(e.value[0] - slope) <= 10 * e.error[0] + 1e-12
        assert abs(e.value[0] - slope) <= 1e-6


@pytest.mark.parametrize("f", [np.floor, np.ceil, frac], ids=["floor", "ceil", "frac"])
def test_at_a_jump_the_element_is_reported_like_a_kink(f):
    x = np.array([3.0, -2.0])
    e = derivative(f, x)
    assert e.kink.tolist() == [True, True]
    low, high = np.minimum(e.left, e.right), np.maximum(e.left, e.right)
    slope = 1.0 if f is frac else 0.0  # the side without the jump keeps the true slope
    assert np.all((low <= slope + 1e-9) & (slope - 1e-9 <= high))


class Floor(Function):
    @staticmethod
    def forward(ctx, x):
        return gradcli.floor(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * 0.0


class FloorWrongSlope(Function):
    @staticmethod
    def forward(ctx, x):
        return gradcli.floor(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * 1.0


def test_gradcheck_passes_floor_and_still_fails_a_wrong_slope():
    x = gradcli.tensor(X.reshape(20, 20))
    assert gradcheck(Floor, (x,), mode="full").ok
    report = gradcheck(FloorWrongSlope, (x,), mode="full")
    assert not report.ok
    assert report.check("values").status == "fail"


def test_fortran_ordered_input_is_perturbed_element_by_element():
    # A transposed view (torch's LU factors are column-major) reaches numpy in Fortran order;
    # per-element steps once wrote into a reshape copy, and every derivative came out 0.
    rng = np.random.default_rng(3)
    a = np.asfortranarray(rng.standard_normal((3, 3)))
    b = rng.standard_normal((3, 4))
    v = rng.standard_normal((3, 4))
    nf = NumericFunction(lambda arrays: [arrays[0] @ arrays[1]], [a, b])
    projector = Projector([[v]], [(3, 4)])
    for strategy in ("loop", "auto"):
        result = element_derivatives(nf, 0, projector, strategy=strategy)
        assert np.max(np.abs(result.value[0] - v @ b.T)) <= 1e-12


def remainder(a, b=0.03924805020314537):
    return a - b * np.floor(a / b)


def test_a_jump_only_richardsons_large_steps_cross_is_no_kink():
    # a = -1.48302..., 0.0084 above a jump of remainder(·, 0.039) (issue 23's dogfood run, seed 5):
    # the central steps (2⁻¹⁷·2) see the slope 1 cleanly; Richardson's one-sided tables cross the
    # jump and once made it a kink with one-sided "derivatives" -0.256 and 0.058, rejecting 1.
    a = np.array([-1.4830229668919075])
    e = derivative(remainder, a)
    assert not e.kink.any()
    assert abs(e.value[0] - 1.0) <= 1e-9
    # a slope that is wrong there still fails
    x = gradcli.tensor(a, requires_grad=True)
    assert gradcheck(lambda t: gradcli.remainder(t, 0.03924805020314537), (x,), mode="full").ok
    assert not gradcheck(lambda t: RemainderHalfSlope.apply(t), (x,), mode="full").ok


class RemainderHalfSlope(Function):
    @staticmethod
    def forward(ctx, x):
        return gradcli.remainder(x, 0.03924805020314537)

    @staticmethod
    def backward(ctx, grad):
        return grad * 0.5


class AbsWrongAtTheKink(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gradcli.abs(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * gradcli.where(x == 0, 5.0, gradcli.sign(x))


def test_a_failure_at_a_kink_names_the_one_sided_range_it_was_judged_against():
    import re
    report = gradcheck(AbsWrongAtTheKink, (gradcli.tensor([0.0, 1.0, -2.0]),), mode="full")
    values = report.check("values")
    assert values.status == "fail"
    message = values.message
    assert "accepted between the one-sided derivatives" not in message   # the one kink element failed
    found = re.search(r"1 of 3 elements wrong; worst at \[0\]: backward (\S+) vs the numeric range "
                      r"\[(\S+), (\S+)\] at a kink \(error (\S+),", message)
    assert found, message
    backward, low, high, error = (float(v) for v in found.groups())
    # abs at 0: one-sided derivatives -1 and 1 times the probe cotangent c; the backward said 5c
    assert abs(low + high) <= 1e-6 * abs(high) and abs(backward) == pytest.approx(5 * abs(high), rel=1e-6)
    assert error == pytest.approx(abs(backward) - abs(high), rel=1e-2)


def _noisy_reference(value, error):
    from gradcli.numeric.vjp import ElementDerivatives
    value = np.asarray(value, dtype=float)[None]
    error = np.asarray(error, dtype=float)[None]
    return ElementDerivatives(value=value, error=error, low=value, high=value, kink=np.zeros(value.shape[1:], bool),
                              used_complex=np.zeros(value.shape[1:], bool), method="central", strategy="loop")


def test_a_reference_whose_error_is_as_large_as_the_gradient_passes_nothing():
    # found on pyro's _GSMSample: a noise reference (error 5.3e4 on values ~1e4) let every backward pass
    from gradcli.check.compare import compare_elements
    from gradcli.check.report import InputResult
    from gradcli.check.tolerances import DEFAULT_TOLERANCES
    tolerance = DEFAULT_TOLERANCES["float64"]
    result = InputResult("scale", 0, (3,), "float64")
    zeros = np.zeros((1, 3))
    compare_elements(result, zeros, _noisy_reference([1.0e4, -3.0e3, 7.0e3], [5.3e4, 4.0e4, 6.0e4]), tolerance)
    assert result.status == "skip"
    assert result.message.startswith("the numerical derivative is undetermined: its error estimate is as large "
                                     "as the gradient itself (up to 6e+04;")
    # one element undetermined, the others judged: that one is said, the rest decide
    result = InputResult("scale", 0, (3,), "float64")
    compare_elements(result, np.array([[1.0, 2.0, 0.0]]), _noisy_reference([1.0, 2.0, 3.0], [1e-9, 1e-9, 0.5]),
                     tolerance)
    assert result.status == "pass"
    assert result.message.endswith("; 1 element(s) not computable numerically (error estimate as large as the gradient)")
