"""gradcheck(..., eps=h): a user central-difference step that can only make the reference better.

The central difference is taken at the default step and at eps (rounded to a power of two, at
least √ε of the numeric dtype); per element the one with the smaller estimated error is kept, and
Richardson only replaces it where its own estimate is smaller. torch's habitual 1e-6 therefore
never makes a verdict worse than the default (specs/gradcheck.md).
"""
import inspect

import numpy as np
import pytest

import gradcli
from gradcli.autograd import Function
from gradcli.check import gradcheck
from gradcli.numeric import EPS32, EPS64, derivative, user_step


def leaf(values, dtype=np.float64):
    return gradcli.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x**2


class Relu(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gradcli.relu(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x > 0).to(grad.dtype)


class ReluLate(Relu):
    """Wrong for 0 < x ≤ 1e-5: its slope switches on late."""

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x > 1e-5).to(grad.dtype)


class OffsetSquareAbs(Function):
    """10⁶ + x·|x|: no complex step (abs), and a large offset: a small step's rounding is large."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 1e6 + x * gradcli.abs(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * gradcli.abs(x)


class Float32OnlySin(Function):
    @staticmethod
    def forward(ctx, x):
        if x.dtype != gradcli.float32:
            raise TypeError("float32 only")
        ctx.save_for_backward(x)
        return gradcli.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * gradcli.cos(x)


def scaled(cls, factor):
    class Scaled(cls):
        @staticmethod
        def backward(ctx, grad):
            return cls.backward(ctx, grad) * factor

    Scaled.__name__ = f"{cls.__name__}Times{factor}"
    return Scaled


def test_user_step_is_a_power_of_two_above_the_rounding_floor():
    assert user_step(1e-6) == 2.0**-20
    assert user_step(1e-3) == 2.0**-10
    assert user_step(1e-12) == 2.0**-26  # √ε of float64
    assert user_step(1e-6, EPS32) == 2.0**-11  # √ε of float32: 1e-6 would be all rounding there
    for bad in (0.0, -1e-6, 1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="eps must be"):
            user_step(bad)


def test_eps_is_recorded_and_validated():
    x = leaf([[0.5, -1.0, 2.0], [1.5, -0.25, 3.0]])
    assert gradcheck(Cube, (x,)).tolerances["eps"] is None
    assert gradcheck(Cube, (x,), eps=1e-6).tolerances["eps"] == 2.0**-20
    assert gradcheck(Cube, (x,), eps=1e-6, method="richardson").tolerances["eps"] is None  # its own steps
    report = gradcheck(Float32OnlySin, (leaf([0.5, 1.0], np.float32),), eps=1e-6)
    assert report.numeric_dtype == "float32" and report.tolerances["eps"] == 2.0**-11
    with pytest.raises(ValueError, match="eps must be"):
        gradcheck(Cube, (x,), eps=0.0)


def test_the_check_command_may_pass_eps_through():
    from gradcli.check.runner import unsupported_options

    assert "eps" in inspect.signature(gradcli.gradcheck).parameters
    assert unsupported_options({"eps": 1e-6, "method": "central"}) == []


def test_central_values_at_either_step_by_their_error():
    # sin(64x): the default step's truncation error dominates, a smaller step is better.
    x = np.array([0.3, -1.1])
    exact = 64 * np.cos(64 * x)
    default = derivative(lambda t: np.sin(64 * t), x, method="central")
    smaller = derivative(lambda t: np.sin(64 * t), x, method="central", step=2.0**-24)
    assert np.all(smaller.error < default.error / 10)
    assert np.all(np.abs(smaller.value - exact) < np.abs(default.value - exact) / 10)
    # 10⁶ + x³: a small step is all rounding; the default step's value is kept, bit for bit.
    offset = derivative(lambda t: 1e6 + t**3, x, method="central")
    assert np.array_equal(derivative(lambda t: 1e6 + t**3, x, method="central", step=2.0**-26).value, offset.value)


def test_a_small_eps_resolves_an_element_next_to_a_kink():
    # x = 3e-6 is within the default step (2⁻¹⁷ ≈ 7.6e-6) of relu's kink: by default the element
    # counts as at the kink and anything between the slopes 0 and 1 is accepted. At eps = 1e-6 the
    # central difference stays on one side and the true slope, 1, is required.
    x = leaf([3e-6, 0.5, -0.5, 0.0])
    for mode in ("full", "fast"):
        default, fine = gradcheck(Relu, (x,), mode=mode), gradcheck(Relu, (x,), mode=mode, eps=1e-6)
        assert default.ok and fine.ok
        assert default.check("kinks").details["count"] == 2 and fine.check("kinks").details["count"] == 1
        assert gradcheck(ReluLate, (x,), mode=mode).ok  # accepted between the one-sided slopes
        late = gradcheck(ReluLate, (x,), mode=mode, eps=1e-6)
        assert not late.ok and late.inputs[0].worst.index == (0,)


# (Function, inputs, backward factor that must fail): 1e-3 in float64, 1% for the float32-only
# forward whose reference is computed in float32.
NEVER_WORSE = {
    "offset x|x|": (OffsetSquareAbs, lambda r: (leaf(r.standard_normal((3, 4))),), 1.001),
    "relu with zeros": (Relu, lambda r: (leaf(np.where(np.arange(12) % 3 == 0, 0.0, r.standard_normal(12))),), 1.001),
    "float32-only sin": (Float32OnlySin, lambda r: (leaf(r.uniform(-3, 3, (3, 4)), np.float32),), 1.01),
    "cube": (Cube, lambda r: (leaf(r.standard_normal((2, 3))),), 1.001),
}


@pytest.mark.parametrize("method", ["auto", "central"])
@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("case", list(NEVER_WORSE))
def test_eps_1e6_is_never_worse_than_the_default(case, mode, method):
    fn, make, factor = NEVER_WORSE[case]
    # Seed 4 of "offset x|x|" puts an element at 0.0026: a reference taken only at step 1e-6 there
    # let the complex step of abs (wrong: half the slope) pass its verification, a false failure.
    for seed in (1, 4) if case == "offset x|x|" else (1,):
        inputs = make(np.random.default_rng(seed))
        for f, ok in ((fn, True), (scaled(fn, factor), False)):
            default = gradcheck(f, inputs, mode=mode, method=method, seed=seed)
            user = gradcheck(f, inputs, mode=mode, method=method, seed=seed, eps=1e-6)
            assert default.ok is ok and user.ok is ok, (seed, f.__name__, default.summary(), user.summary())
            if ok and user.mode == "full":
                assert user.inputs[0].error_estimate <= default.inputs[0].error_estimate
