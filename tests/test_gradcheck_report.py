"""The report contract (specs/report.md), modes, determinism and the remaining checks."""
import json

import numpy as np
import pytest

import gradcli
from gradcli.autograd import Function
from gradcli.check import CheckReport, GradcheckError, gradcheck, gradgradcheck

CHECK_NAMES = {"structure", "backward_invoked", "values", "finite", "cotangents", "reentrant", "kinks",
               "inplace", "second_order", "layouts"}


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x**2


class CubeTimesTwo(Cube):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 6 * x**2


def leaf(array, dtype=np.float64):
    return gradcli.tensor(np.asarray(array, dtype=dtype), requires_grad=True)


X = leaf([[0.5, -1.0, 2.0], [1.5, -0.25, 3.0]])


def without_timing(d):
    d = dict(d)
    d.pop("timing")
    return d


def test_report_api():
    report = gradcheck(Cube, (X,))
    assert isinstance(report, CheckReport)
    assert report.ok and bool(report) and report.status == "pass"
    assert report.function == "Cube" and report.backend == "gradcli"
    assert report.mode == "full" and report.requested_mode == "auto"
    assert {c.name for c in report.checks} == CHECK_NAMES
    assert report.raise_if_failed() is report
    (result,) = report.inputs
    assert (result.name, result.index, result.shape, result.dtype) == ("x", 0, (2, 3), "float64")
    assert result.method == "complex_step"
    assert result.analytic.shape == result.numeric.shape == (3, 2, 3)
    assert np.allclose(result.numeric[0], 3 * X.data**2, rtol=1e-14)
    assert result.max_abs_error <= 1e-14


def test_failed_report_raises_with_the_report():
    report = gradcheck(CubeTimesTwo, (X,))
    assert not report and report.status == "fail"
    with pytest.raises(GradcheckError) as info:
        report.raise_if_failed()
    assert isinstance(info.value, AssertionError)
    assert info.value.report is report
    assert "values: x: 6 of 6 elements wrong" in str(info.value)
    with pytest.raises(AssertionError):
        gradcheck(CubeTimesTwo, (X,), raise_exception=True)


def test_to_dict_is_json_safe_and_follows_the_schema():
    nan_in = leaf([[1.0, np.nan]])
    for report in (gradcheck(Cube, (X,)), gradcheck(CubeTimesTwo, (X,)), gradcheck(Cube, (nan_in,))):
        data = json.loads(json.dumps(report.to_dict(), allow_nan=False))
        assert data["schema_version"] == 1
        assert set(data) == {"schema_version", "function", "backend", "status", "mode", "requested_mode", "method",
                             "seed", "dtypes", "numeric_dtype", "tolerances", "cotangent_kinds", "escalated",
                             "inputs", "checks", "diagnosis", "compatibility", "timing"}
        for entry in data["inputs"]:
            assert set(entry) == {"name", "index", "shape", "dtype", "status", "max_abs_error", "max_rel_error",
                                  "worst", "method", "error_estimate", "tolerance", "message", "kinks", "exact_error"}
        for check in data["checks"]:
            assert set(check) == {"name", "status", "message", "input", "details"}
            assert check["status"] in ("pass", "fail", "skip", "warn")
    failed = gradcheck(CubeTimesTwo, (X,)).to_dict()
    worst = failed["inputs"][0]["worst"]
    assert worst["analytic"] == pytest.approx(2 * worst["numeric"], rel=1e-12)


def test_non_finite_outputs_fail_the_finite_check():
    report = gradcheck(Cube, (leaf([1.0, np.inf, 2.0]),))
    assert report.check("finite").status == "fail"
    assert "output(s) [0] contain NaN/Inf" in report.check("finite").message


@pytest.mark.parametrize("mode", ["full", "fast", "auto"])
def test_same_seed_same_report(mode):
    first = gradcheck(CubeTimesTwo, (X,), mode=mode, seed=5).to_dict()
    second = gradcheck(CubeTimesTwo, (X,), mode=mode, seed=5).to_dict()
    assert without_timing(first) == without_timing(second)
    other = gradcheck(CubeTimesTwo, (X,), mode=mode, seed=6).to_dict()
    assert without_timing(first) != without_timing(other)


def test_auto_mode_picks_by_size():
    assert gradcheck(Cube, (X,)).mode == "full"
    big = leaf(np.random.default_rng(0).standard_normal(5000))
    report = gradcheck(Cube, (big,))
    assert report.mode == "fast" and report.ok
    assert report.inputs[0].status == "skip"  # fast mode does not localise a pass


def test_fast_mode_escalates_to_localise_a_failure():
    big = leaf(np.random.default_rng(0).standard_normal(5000))
    report = gradcheck(CubeTimesTwo, (big,), mode="fast")
    assert report.escalated and report.mode == "full"
    values = [c for c in report.checks if c.name == "values"]
    assert [c.input for c in values] == [None, 0]  # the fast probe, then the localised input
    assert report.inputs[0].status == "fail"
    assert report.inputs[0].worst is not None
    assert report.cotangent_kinds == ["ones", "random", "random"]


def test_fast_mode_uses_a_handful_of_evaluations():
    big = leaf(np.random.default_rng(0).uniform(0.5, 2, 100_000))
    report = gradcheck(Cube, (big,), mode="fast")
    assert report.ok and not report.escalated
    assert report.timing["forward_evals"] <= 10
    assert report.timing["backward_calls"] == 4  # two random cotangents, zero cotangent, reentrancy


class Nondeterministic(Function):
    calls = 0

    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, grad):
        Nondeterministic.calls += 1
        return grad * (2 + 1e-9 * Nondeterministic.calls)


def test_reentrant_check_and_nondet_tol():
    report = gradcheck(Nondeterministic, (X,))
    reentrant = report.check("reentrant")
    assert reentrant.status == "fail"
    # Call 3 (the last cotangent) and call 4 (its immediate repeat) differ by 1e-9·|v|.
    v = report.cotangents[-1][0]
    assert reentrant.details["max_difference"] == pytest.approx(1e-9 * np.abs(v).max(), rel=1e-6)
    assert gradcheck(Nondeterministic, (X,), nondet_tol=1e-6).check("reentrant").status == "pass"


class SquareWrongSecondOrder(Function):
    """First derivative right; its own backward (used by create_graph) wrong by a factor 3."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * TwiceWithWrongDerivative.apply(x)


class TwiceWithWrongDerivative(Function):
    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, grad):
        return grad * 6.0


def test_second_order():
    assert gradgradcheck(Cube, (X,)).check("second_order").status == "pass"
    assert gradcheck(Cube, (X,)).check("second_order").status == "skip"
    report = gradcheck(SquareWrongSecondOrder, (X,), second_order=True)
    assert report.check("values").status == "pass"
    second = report.check("second_order")
    assert second.status == "fail"
    assert "double backward" in second.message


def test_no_differentiable_inputs_is_a_skip():
    report = gradcheck(lambda n: gradcli.tensor([float(n)]), (3,))
    assert report.status == "skip" and report.ok


def test_inputs_without_requires_grad_are_all_checked():
    x = gradcli.tensor([1.0, 2.0])
    report = gradcheck(Cube, (x,))
    assert report.ok and [r.index for r in report.inputs] == [0]
    assert not x.requires_grad and x.grad is None  # the caller's tensor is left alone


def test_options_are_validated():
    with pytest.raises(ValueError, match="unknown mode"):
        gradcheck(Cube, (X,), mode="quick")
    with pytest.raises(ValueError, match="unknown method"):
        gradcheck(Cube, (X,), method="five-point")


@pytest.mark.parametrize("method", ["central", "richardson", "complex_step"])
def test_methods_all_catch_a_1e3_error(method):
    class Off(Cube):
        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3.003 * x**2

    assert gradcheck(Cube, (X,), method=method).ok
    report = gradcheck(Off, (X,), method=method)
    assert not report.ok
    expected = {"central": "central", "richardson": "richardson", "complex_step": "complex_step"}[method]
    assert report.inputs[0].method == expected


def test_tolerances_are_data_and_overridable():
    class Off(Cube):
        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * (1 + 1e-5) * x**2

    assert not gradcheck(Off, (X,))
    assert gradcheck(Off, (X,), rtol=1e-4).ok
    assert gradcheck(Off, (X,), tolerances={"float64": {"rtol": 1e-4}}).ok
    assert gradcheck(Off, (X,), rtol=1e-4).tolerances["rtol"] == 1e-4


def test_fast_mode_memory_stays_within_five_times_the_inputs():
    import tracemalloc

    class SqrtInvSquare(Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return gradcli.sqrt(x) + 1 / x + 2 * y**2

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            return grad * (0.5 / gradcli.sqrt(x) - 1 / x**2), grad * 4 * y

    rng = np.random.default_rng(0)
    x, y = leaf(rng.uniform(0.5, 2, 300_000)), leaf(rng.standard_normal(300_000))
    tracemalloc.start()
    try:
        report = gradcheck(SqrtInvSquare, (x, y), mode="fast")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.ok and report.timing["forward_evals"] <= 6
    assert peak <= 5 * (x.data.nbytes + y.data.nbytes)


def test_nothing_compared_is_a_skip():
    class Refuses(Function):
        """Forward raises off the base point: the numeric reference cannot be computed."""

        base = None

        @staticmethod
        def forward(ctx, x):
            if Refuses.base is None:
                Refuses.base = x.data.copy()
            if not np.array_equal(x.data, Refuses.base):
                raise ValueError("only at the base point")
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    report = gradcheck(Refuses, (leaf([1.0, 2.0]),))
    assert report.status == "skip" and report.ok
    assert report.inputs[0].status == "skip"
    assert "could not be computed" in report.inputs[0].message


@pytest.mark.parametrize("mode", ["full", "fast"])
def test_scalar_inputs(mode):
    x = gradcli.tensor(3.0, requires_grad=True)
    report = gradcheck(Cube, (x,), mode=mode)
    assert report.ok
    assert report.check("reentrant").status == "pass"
    assert not gradcheck(CubeTimesTwo, (x,), mode=mode)


def test_torch_is_not_imported_for_engine_tensors():
    import subprocess
    import sys

    code = (
        "import sys, gradcli\n"
        "x = gradcli.tensor([0.5, 1.5], requires_grad=True)\n"
        "report = gradcli.gradcheck(lambda t: gradcli.sin(t) * t, (x,))\n"
        "assert report.ok, report.summary()\n"
        "print('torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


class SinNumpyBackward(Function):
    """First order right, but backward computes with numpy: autograd cannot differentiate it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gradcli.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * gradcli.tensor(np.cos(x.data))


def test_second_order_of_a_numpy_backward():
    report = gradcheck(SinNumpyBackward, (X,), second_order=True)
    assert report.check("values").status == "pass"
    second = report.check("second_order")
    assert second.status == "fail"
    assert "not differentiable" in second.message


@pytest.mark.parametrize("returned", ["none", "float", "ndarray"])
def test_a_forward_that_returns_no_tensor_fails_structure_with_the_reason(returned):
    import numpy as np

    from gradcli.check.diagnosis import diagnose

    class NoTensor(Function):
        @staticmethod
        def forward(ctx, x):
            return {"none": None, "float": float(x.sum()), "ndarray": np.sin(x.detach().numpy())}[returned]

        @staticmethod
        def backward(ctx, g):
            return g

    x = gradcli.tensor([0.5, 1.5], requires_grad=True)
    report = gradcheck(NoTensor, (x,))
    got = {"none": "None", "float": "float", "ndarray": "ndarray"}[returned]
    assert report.check("structure").status == "fail"
    assert report.check("structure").message.startswith(f"forward returned {got}, not a tensor")
    assert report.check("values").status == "skip"
    assert diagnose(report, NoTensor, (x,)) == []  # the structure message says it all
