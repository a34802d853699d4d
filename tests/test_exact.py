"""exact_check / attach_exact: the backward against the exact derivative at the check point."""
import json
import os

import numpy as np
import pytest

import gradcli as torch
from gradcli.autograd import Function
from gradcli.check import gradcheck
from gradcli.symbolic import exact as symbolic_exact
from gradcli.check.exact import attach_exact, exact_check


class sqrt_and_inverse(Function):  # noqa: N801 - seed 002
    def forward(self, input_x, input_y):
        self.save_for_backward(input_x, input_y)
        return torch.sqrt(input_x) + torch.reciprocal(input_x) + 2 * torch.pow(input_y, 2)

    def backward(self, grad_output):
        input_x, input_y = self.saved_tensors
        grad_x = grad_output * (torch.reciprocal(2 * torch.sqrt(input_x)) - torch.reciprocal(torch.pow(input_x, 2)))
        return grad_x, grad_output * (4 * input_y)


class SumSqrt(Function):  # seed 002's vector example
    def forward(self, input_x):
        self.save_for_backward(input_x)
        return torch.sum(torch.sqrt(torch.pow(input_x, 2) - 1))

    def backward(self, grad_output):
        input_x, = self.saved_tensors
        return grad_output * (torch.div(input_x, torch.sqrt(torch.pow(input_x, 2) - 1)))


class SinFactorTwo(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * torch.cos(x)


SEED_POINT = (torch.tensor(3.0), torch.tensor(2.0))


def rows(check):
    return {row["name"]: row for row in check.details["inputs"]}


def test_seed_002_at_3_2_matches_the_traced_exact_derivative():
    check = exact_check(sqrt_and_inverse, SEED_POINT, cotangents=(np.array(2.5),))
    assert check.name == "exact" and check.status == "pass"
    assert check.details["source"] == "trace"
    x, y = rows(check)["input_x"], rows(check)["input_y"]
    assert x["worst"]["exact"] == pytest.approx(2.5 * (1 / (2 * np.sqrt(3)) - 1 / 9), rel=1e-15)  # 0.4439...
    assert y["worst"]["exact"] == 20.0 and y["exact_error"] == 0.0
    assert x["exact_error"] <= 2 * np.spacing(x["worst"]["exact"])  # the float64 backward is within 2 ulp


def test_seed_002_with_its_formula_gives_the_same_reference():
    check = exact_check(sqrt_and_inverse, SEED_POINT, cotangents=(np.array(1.0),), expr="sqrt(x)+1/x+2*y^2".replace(
        "x", "input_x").replace("y", "input_y"))
    assert check.status == "pass" and check.details["source"] == "formula"
    assert rows(check)["input_x"]["worst"]["exact"] == pytest.approx(1 / (2 * np.sqrt(3)) - 1 / 9, rel=1e-15)


def test_a_scalar_output_sums_the_elementwise_formula_and_says_so():
    check = exact_check(SumSqrt, (torch.tensor([2.0, 3.0, 4.0]),), expr="sqrt(input_x^2 - 1)")
    assert check.status == "pass"
    assert "summed over its 3 elements" in check.details["notes"][0]


def test_factor_two_fails_and_its_exact_error_is_the_true_derivative_itself():
    x = torch.tensor([[0.5, -1.0], [2.0, 0.25]])
    v = np.array([[1.0, -2.0], [0.5, 3.0]])
    check = exact_check(SinFactorTwo, (x,), cotangents=(v,))
    assert check.status == "fail"
    (row,) = check.details["inputs"]
    true = v * np.cos(x.data)
    assert row["exact_error"] == pytest.approx(np.abs(true).max(), rel=1e-15)  # |2t - t| = |t|
    assert row["max_rel_error"] == pytest.approx(1.0, rel=1e-15)
    assert row["failed_elements"] == 4


def test_formula_class_attribute_is_the_reference_when_no_expr_is_given():
    class Cube(Function):
        formula = "x^3"

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x * (1 + 1e-3)

    check = exact_check(Cube, (torch.tensor([1.5, -2.0]),))
    assert check.status == "fail" and check.details["reference"] == "x^3"
    assert rows(check)["x"]["max_rel_error"] == pytest.approx(1e-3, rel=1e-9)


@pytest.mark.parametrize("expr, words", [
    ("exp(z)", "uses z, not among the inputs (x)"),
    ("exp(x", "unclosed '('"),
    ("__import__('os').system('touch /tmp/gradcli_exact_pwned')", "may not start with '_'"),
])
def test_a_formula_that_cannot_be_used_skips_the_check_and_is_never_executed(expr, words):
    check = exact_check(SinFactorTwo, (torch.tensor([0.5]),), expr=expr)
    assert check.status == "skip"
    assert words in check.message
    assert not os.path.exists("/tmp/gradcli_exact_pwned")


def test_an_untraceable_function_without_formula_skips_with_the_reason():
    class NumpyForward(Function):
        @staticmethod
        def forward(ctx, x):
            return torch.from_numpy(np.sin(x.data))

        @staticmethod
        def backward(ctx, g):
            return g

    check = exact_check(NumpyForward, (torch.tensor([0.5]),))
    assert check.status == "skip" and "numpy's sin is called on an array of symbols" in check.message


def test_too_many_elements_to_trace_skip_and_ask_for_a_formula(monkeypatch):
    monkeypatch.setattr(symbolic_exact, "MAX_TRACED_ELEMENTS", 3)
    check = exact_check(SinFactorTwo, (torch.zeros(4),))
    assert check.status == "skip" and "4 input elements: too many to trace" in check.message
    assert exact_check(SinFactorTwo, (torch.zeros(4),), expr="sin(x)").status == "fail"


def test_an_element_at_a_kink_is_not_compared():
    x = torch.tensor([0.0, 1.5, -2.0])
    check = exact_check(lambda x: torch.relu(x), (x,), cotangents=(np.array([1.0, 2.0, 3.0]),))
    (row,) = check.details["inputs"]
    assert check.status == "pass" and row["kinks"] == 1


def test_float32_inputs_are_judged_with_float32_tolerances():
    x = torch.tensor([0.3, 1.7, -0.9], dtype=torch.float32)
    check = exact_check(lambda x: x.exp() * x.sin(), (x,))
    (row,) = check.details["inputs"]
    assert check.status == "pass" and row["rtol"] == 1e-4
    assert 0 < row["max_rel_error"] < 1e-5  # float32 rounding, measured against the exact float32 point


def test_attach_exact_adds_the_check_and_fills_exact_error_in_the_report():
    x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], requires_grad=True)
    report = gradcheck(SinFactorTwo, (x,), mode="full")
    check = attach_exact(report, SinFactorTwo, (x,))
    assert report.check("exact") is check and check.status == "fail"
    assert check.details["inputs"][0]["failed_elements"] == 6  # elements, whatever the cotangent count
    (result,) = report.inputs
    kinds = len(report.cotangents)
    true = max(np.abs(np.asarray(report.cotangents[k][0]) * np.cos(x.data)).max() for k in range(kinds))
    assert result.exact_error == pytest.approx(true, rel=1e-14)
    data = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert data["inputs"][0]["exact_error"] == pytest.approx(true, rel=1e-14)
    assert [c["name"] for c in data["checks"]][-1] == "exact"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # SumSqrt is in the seed's legacy style
def test_attach_exact_on_a_correct_function_passes_with_a_tiny_error():
    x = torch.tensor([[2.0, 3.0, 4.0]], requires_grad=True)
    report = gradcheck(SumSqrt, (x,), mode="fast")
    attach_exact(report, SumSqrt, (x,))
    assert report.check("exact").status == "pass"
    assert report.inputs[0].exact_error < 1e-15


def test_torch_function_with_expr_gets_the_exact_reference():
    real_torch = pytest.importorskip("torch")

    class TorchSqrtInv(real_torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x.sqrt() + 1 / x + 2 * y ** 2

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * (0.5 / x.sqrt() - 1 / x ** 2), g * 4 * y * 1.001  # y's gradient 0.1% off

    x = real_torch.tensor([3.0, 0.5], dtype=real_torch.float64, requires_grad=True)
    y = real_torch.tensor([2.0, -1.0], dtype=real_torch.float64, requires_grad=True)
    check = exact_check(TorchSqrtInv, (x, y), cotangents=(np.array([1.0, -2.0]),), expr="sqrt(x)+1/x+2*y^2")
    assert check.status == "fail" and check.details["source"] == "formula"
    assert rows(check)["x"]["exact_error"] < 1e-15
    assert rows(check)["y"]["exact_error"] == pytest.approx(0.001 * 8.0, rel=1e-12)  # |4·2·1·0.001|
    assert exact_check(TorchSqrtInv, (x, y)).status == "skip"  # no formula: no reference for torch


def test_attach_exact_never_raises_for_a_backward_that_fails():
    class Broken(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise RuntimeError("boom")

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    report = gradcheck(Broken, (x,))
    check = attach_exact(report, Broken, (x,))
    assert check.status == "skip" and "RuntimeError: boom" in check.message
    assert report.inputs == [] or report.inputs[0].exact_error is None


class Softmax(Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.softmax(x, dim=-1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - (g * y).sum(dim=-1, keepdim=True))


def test_a_cotangent_with_exactly_zero_vjp_tolerates_the_backwards_rounding():
    """Jᵀ1 of softmax is exactly 0; the right backward gives ~1e-17 there. The input's scale comes from
    every cotangent set, and each element may be off by a few ulps of the terms it sums (their
    magnitudes), so rounding passes while a real error of 1e-3 relative size fails."""
    x = torch.tensor(np.random.default_rng(0).uniform(-2, 2, (3, 4)))
    v = np.random.default_rng(1).standard_normal((3, 4))
    sets = [(np.ones((3, 4)),), (v,)]
    ones_only = exact_check(Softmax, [x], cotangents=[sets[0]])  # no other set to take a scale from
    assert ones_only.status == "pass", ones_only.message
    assert 0 < ones_only.details["inputs"][0]["exact_error"] < 1e-15
    check = exact_check(Softmax, [x], cotangents=sets)
    assert check.status == "pass", check.message
    assert 0 < check.details["inputs"][0]["exact_error"] < 1e-15

    class SoftmaxOff(Softmax):
        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return y * (g - (g * y).sum(dim=-1, keepdim=True)) + 1e-3 * y

    assert exact_check(SoftmaxOff, [x], cotangents=sets).status == "fail"
    assert exact_check(SoftmaxOff, [x], cotangents=[sets[0]]).status == "fail"
