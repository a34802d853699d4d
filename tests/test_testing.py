"""gradcli.testing.assert_gradcheck: passes quietly, fails with gradcli check's plain panel, and the
reproduction it prints really reproduces the failure."""
import re

import numpy as np
import pytest

import gradcli
from gradcli.autograd import Function
from gradcli.testing import GradcheckAssertionError, assert_gradcheck


class Sin(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gradcli.sin(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * gradcli.cos(x)


class SinTwiceTooLarge(Sin):
    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 2 * grad_output * gradcli.cos(x)


class BackwardRaises(Sin):
    @staticmethod
    def backward(ctx, grad_output):
        raise ValueError("boom in backward")


class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        if a.shape[0] != 7:  # no automatic shape has 7 rows: the inputs must be given
            raise ValueError("a needs 7 rows")
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        return grad_output @ b.t(), a.t() @ grad_output


def leaf(values):
    return gradcli.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def failure_of(call) -> GradcheckAssertionError:
    with pytest.raises(AssertionError) as info:
        call()
    assert isinstance(info.value, GradcheckAssertionError)
    return info.value


def test_a_correct_function_passes_and_returns_its_report():
    report = assert_gradcheck(Sin.apply, leaf([0.3, -1.2, 2.0]))
    assert report.ok and report.function == "Sin"
    assert report.inputs[0].status == "pass"


def test_a_wrong_backward_fails_with_the_plain_panel():
    x = leaf([[0.3, -1.2], [2.0, 0.7]])
    error = failure_of(lambda: assert_gradcheck(SinTwiceTooLarge.apply, x))
    text = str(error)
    lines = text.splitlines()
    assert re.fullmatch(r"FAIL  SinTwiceTooLarge  \(tests/test_testing\.py:\d+, backward at line \d+\)", lines[0])
    assert re.search(r"values: x: 4 of 4 elements wrong; worst at \[\d, \d\]: backward \S+ vs numeric \S+", text)
    assert "Looks like: backward is 2× too large for input x" in text  # the diagnosis layer's finding
    assert "inputs: x = float64[2,2] = [[0.3, -1.2], [2.0, 0.7]] (given)" in text
    assert "reproduce: gradcli.gradcheck(SinTwiceTooLarge.apply, (x,), seed=0)" in text
    assert "error map of x" in text  # the heat-map of a 2-D input
    assert error.result.status == "fail" and not error.reports[0].ok


def test_the_printed_reproduction_reproduces_the_failure():
    rng = np.random.default_rng(3)
    x = leaf(rng.uniform(-2, 2, (2, 3)))
    text = str(failure_of(lambda: assert_gradcheck(SinTwiceTooLarge.apply, x, mode="full")))
    assignment = next(line.strip() for line in text.splitlines() if line.strip().startswith("x = gradcli.tensor("))
    namespace = {"gradcli": gradcli}
    exec(assignment, namespace)  # noqa: S102 -- the line the panel tells the user to run
    np.testing.assert_array_equal(namespace["x"].detach().numpy(), x.detach().numpy())  # exact values
    assert "mode='full'" in text
    report = gradcli.gradcheck(SinTwiceTooLarge.apply, (namespace["x"],), seed=0, mode="full")
    assert not report.ok


def test_large_inputs_are_summarised_not_dumped():
    x = leaf(np.linspace(0.1, 1.0, 100).reshape(10, 10))
    text = str(failure_of(lambda: assert_gradcheck(SinTwiceTooLarge.apply, x)))
    assert "x = float64[10, 10]: values not shown (more than 64 elements)" in text
    assert len(text) < 4000


def test_an_exception_in_backward_is_reported_as_an_error_panel():
    text = str(failure_of(lambda: assert_gradcheck(BackwardRaises.apply, leaf([0.5, 1.5]))))
    assert text.startswith("ERROR  BackwardRaises  (tests/test_testing.py:")
    assert "ValueError: boom in backward" in text


def test_any_callable_is_checked_and_named_in_the_panel():
    def shifted(t):
        return SinTwiceTooLarge.apply(t) + 1

    text = str(failure_of(lambda: assert_gradcheck(shifted, leaf([0.5, 1.5]))))
    assert re.match(r"FAIL  \S*shifted  \(tests/test_testing\.py:\d+\)", text)
    assert "reproduce: gradcli.gradcheck(shifted, (t,), seed=0)" in text  # named by its parameter
    text = str(failure_of(lambda: assert_gradcheck(lambda t: shifted(t) * 3, leaf([0.5, 1.5]))))
    assert "reproduce: gradcli.gradcheck(fn, (t,), seed=0)" in text  # a lambda has no usable name


def test_a_check_that_compares_nothing_fails():
    text = str(failure_of(lambda: assert_gradcheck(Sin.apply, gradcli.tensor([1, 2]))))
    assert "compared nothing" in text and "no floating-point tensor inputs" in text


def test_a_function_class_alone_gets_gradcli_check_inputs():
    reports = assert_gradcheck(Sin, seed=4)
    assert [r.inputs[0].shape for r in reports] == [(3, 4)]
    assert assert_gradcheck(Sin, shape="5")[0].inputs[0].shape == (5,)
    text = str(failure_of(lambda: assert_gradcheck(SinTwiceTooLarge)))
    assert "inputs: x = float64[3,4]@(-2,2) (auto)" in text
    # a module-level Function can be re-checked from the command line, inputs included
    assert "reproduce: gradcli check tests/test_testing.py::SinTwiceTooLarge --seed 0 --input 'x=float64[3,4]@(-2,2)'" \
        in text


def test_the_exact_reference_of_gradcli_check_can_be_asked_for():
    text = str(failure_of(lambda: assert_gradcheck(SinTwiceTooLarge, exact="auto")))
    assert re.search(r"^    exact: backward differs from the exact derivative", text, re.M)
    assert "exact:" not in str(failure_of(lambda: assert_gradcheck(SinTwiceTooLarge)))  # off by default


def test_a_local_function_class_is_reproduced_in_python():
    class LocalTwice(SinTwiceTooLarge):
        pass

    text = str(failure_of(lambda: assert_gradcheck(LocalTwice, seed=2, shape="2x2", mode="full")))
    assert "reproduce: gradcli.testing.assert_gradcheck(LocalTwice, seed=2, shape='2x2', mode='full')" in text
    assert "gradcli check" not in text


def test_a_function_whose_inputs_cannot_be_built_fails_with_advice():
    text = str(failure_of(lambda: assert_gradcheck(MatMul)))
    assert text.startswith("SKIP MatMul (tests/test_testing.py:")
    assert "pass inputs: assert_gradcheck(MatMul, ...)" in text
    assert assert_gradcheck(MatMul, leaf(np.ones((7, 3))), leaf(np.ones((3, 2)))).ok


def test_misuse_is_a_type_error_not_a_verdict():
    with pytest.raises(TypeError, match="needs an autograd Function class"):
        assert_gradcheck(lambda t: t * 2)
    with pytest.raises(TypeError, match="does not take: no_such_option"):
        assert_gradcheck(Sin, no_such_option=1)


def test_torch_functions_fail_with_a_torch_reproduction():
    torch = pytest.importorskip("torch")

    class TorchTwice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return 2 * grad_output * x.cos()

    x = torch.tensor([0.25, -0.5], dtype=torch.float64, requires_grad=True)
    text = str(failure_of(lambda: assert_gradcheck(TorchTwice.apply, x)))
    assert "x = torch.tensor([0.25, -0.5], dtype=torch.float64, requires_grad=True)" in text
    assert "Looks like: backward is 2× too large" in text
