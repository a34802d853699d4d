"""Symbolic tracing: engine Functions run on SymPy symbols; what cannot run says why."""
import numpy as np
import pytest
import sympy

import gradcli as torch
from gradcli.autograd import Function
from gradcli.autograd.ops.elementwise import SYMBOLIC_OPS, SYMBOLIC_UNARY, UNARY
from gradcli.symbolic.ops import Indicator
from gradcli.symbolic.trace import NotTraceable, trace_function


def sym(name, **assumptions):
    return sympy.Symbol(name, real=True, **assumptions)


# ---- the seeds' Functions, written as the seeds write them -----------------------------------------
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


class SqrtAndInverse(Function):  # seed 002, legacy instance style
    def forward(self, input_x, input_y):
        self.save_for_backward(input_x, input_y)
        return torch.sqrt(input_x) + torch.reciprocal(input_x) + 2 * torch.pow(input_y, 2)

    def backward(self, grad_output):
        input_x, input_y = self.saved_tensors
        grad_x = grad_output * (torch.reciprocal(2 * torch.sqrt(input_x)) - torch.reciprocal(torch.pow(input_x, 2)))
        grad_y = grad_output * (4 * input_y)
        return grad_x, grad_y


def test_exp_traces_to_exp_of_each_symbol_and_its_backward_to_g_times_exp():
    trace = trace_function(Exp, shape=(2,))
    x0, x1, g0, g1 = sym("i[0]"), sym("i[1]"), sym("g[0]"), sym("g[1]")
    assert list(trace.outputs[0]) == [sympy.exp(x0), sympy.exp(x1)]
    assert list(trace.vjp[0]) == [g0 * sympy.exp(x0), g1 * sympy.exp(x1)]
    assert list(trace.exact_vjp()[0]) == [g0 * sympy.exp(x0), g1 * sympy.exp(x1)]


def test_seed_002_traces_to_its_formula_with_x_positive_for_sqrt():
    trace = trace_function(SqrtAndInverse, shape=())
    x, y, g = sym("input_x", positive=True), sym("input_y"), sym("g")
    assert trace.names == ["input_x", "input_y"]
    assert trace.signs == {"input_x": "positive", "input_y": "real"}
    assert trace.outputs[0][()] == sympy.sqrt(x) + 1 / x + 2 * y ** 2
    assert sympy.simplify(trace.vjp[0][()] - g * (1 / (2 * sympy.sqrt(x)) - 1 / x ** 2)) == 0
    assert trace.vjp[1][()] == 4 * g * y


def test_example_inputs_fix_shapes_and_non_tensor_arguments_pass_through():
    def scaled(x, k):
        return x * k

    trace = trace_function(scaled, (torch.zeros(3), 2.5))
    assert sorted(trace.inputs) == [0]
    assert list(trace.outputs[0]) == [2.5 * sym(f"x[{j}]") for j in range(3)]


def test_every_unary_op_has_a_symbolic_rule_registered_from_its_table_row():
    assert set(SYMBOLIC_UNARY) >= set(UNARY)
    assert "where" in SYMBOLIC_OPS
    x = sym("x")
    assert SYMBOLIC_UNARY["sigmoid"](np.array([x], dtype=object))[0] == 1 / (1 + sympy.exp(-x))
    assert SYMBOLIC_UNARY["rsqrt"](np.array(x, dtype=object))[()] == 1 / sympy.sqrt(x)


def test_a_comparison_on_symbols_is_an_indicator_that_refuses_to_be_a_bool():
    trace = trace_function(lambda x: torch.relu(x), shape=())
    x, g = sym("x"), sym("g")
    assert trace.vjp[0][()] == g * Indicator(x > 0)
    with pytest.raises(TypeError, match="truth value"):
        bool(Indicator(x > 0))
    assert Indicator(sympy.true) == 1 and Indicator(sympy.false) == 0


def test_where_on_a_symbolic_mask_selects_by_indicators():
    trace = trace_function(lambda x: torch.where(x > 0, x, 0.1 * x), shape=())
    x = sym("x")
    assert trace.outputs[0][()] == Indicator(x > 0) * x + Indicator(sympy.Not(x > 0)) * 0.1 * x


# ---- not traceable, with the reason ------------------------------------------------------------------
class NumpyOnData(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.from_numpy(np.exp(x.data))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.exp()


class BranchesOnData(Function):
    @staticmethod
    def forward(ctx, x):
        if x.sum() > 0:
            return x * 2
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g * 2


class TruthOfAnExpression(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2 if x.sum() else x  # Python would call any SymPy expression true

    @staticmethod
    def backward(ctx, g):
        return g * 2


class ConvertsToFloat(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.scale = float(x.sum())
        return x * ctx.scale

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale


class NumpyInBackward(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.from_numpy(np.cos(x.data))


@pytest.mark.parametrize("fn, phase, words", [
    (NumpyOnData, "forward", "numpy's exp is called on an array of symbols"),
    (BranchesOnData, "forward", "data-dependent: the code branches on a symbolic value"),
    (TruthOfAnExpression, "forward", "data-dependent: the code branches on a symbolic value"),
    (ConvertsToFloat, "forward", "a symbolic value is converted to a number"),
    (NumpyInBackward, "backward", "numpy's cos is called on an array of symbols"),
    (lambda x: x.sort(dim=1).values, "forward", "the built-in op sort cannot run on symbols: it orders"),
    (lambda x: x[x > 0].sum(), "forward", "data-dependent indexing: the index is computed from symbolic values"),
], ids=["numpy on .data", "branch", "truthiness", "float()", "numpy in backward", "sort", "mask index"])
def test_untraceable_code_raises_not_traceable_with_reason_and_line(fn, phase, words):
    with pytest.raises(NotTraceable) as caught:
        trace_function(fn)
    assert caught.value.phase == phase
    assert words in caught.value.reason
    if not words.startswith("the built-in op"):  # user code: the line that did it is quoted
        assert "test_trace.py:" in caught.value.location


def test_torch_function_is_not_traceable_and_says_how_to_get_an_exact_reference():
    torch_module = pytest.importorskip("torch")

    class TorchExp(torch_module.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.exp()

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(NotTraceable, match="expr="):
        trace_function(TorchExp)


def test_tracing_leaves_numeric_use_of_the_same_function_unchanged():
    trace_function(Exp)
    x = torch.tensor([0.5, 1.0], requires_grad=True)
    Exp.apply(x).sum().backward()
    assert x.grad.tolist() == pytest.approx([np.exp(0.5), np.exp(1.0)], rel=1e-15)
