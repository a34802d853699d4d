"""prove(): untraceable code, the time budget, kinks, float constants, several outputs, and the
engine's own op rules (each op traced and its derivative rule proved)."""
import json
import time

import numpy as np
import pytest

import gradcli as torch
from gradcli.autograd import Function
from gradcli.autograd.ops.elementwise import UNARY
from gradcli.symbolic.prove import SHAPE_NOTE, ProofResult, prove



class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


class FactorTwo(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * torch.cos(x)


# ---- not traceable, budgets, kinks, constants -------------------------------------------------------
class NumpyForward(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.from_numpy(np.tanh(x.data))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (1 - x.tanh() ** 2)


def test_untraceable_function_is_reported_as_such_for_every_input():
    (r,) = prove(NumpyForward)
    assert r.verdict == "not_traceable"
    assert "numpy's tanh is called on an array of symbols" in r.message
    assert "test_prove_more.py:" in r.message


class Sleepy(Function):
    @staticmethod
    def forward(ctx, x):
        time.sleep(30)  # stands for a simplification that never ends
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return g


def test_the_time_budget_stops_the_work_and_leaves_the_numeric_verdict():
    (r,) = prove(Sleepy, timeout=0.5)  # forward sleeps 30 s: only a budget that holds can answer
    assert r.verdict == "undecided"
    assert "0.5 s budget ran out" in r.message and "numeric verdict stands" in r.message


def test_relu_mask_with_either_kink_convention_is_proved_almost_everywhere():
    class ReluGe(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.relu()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (x >= 0)  # 1 at x = 0 where torch says 0: a convention, not a bug

    assert prove(ReluGe)[0].verdict == "proved"


def test_a_domain_bound_beyond_sympys_assumptions_is_used_and_noted():
    (r,) = prove(lambda x: torch.acosh(x))  # x > 1: derivative 1/(sqrt(x-1)·sqrt(x+1)), rule (x²-1)^(-1/2)
    assert r.verdict == "proved"
    assert r.assumptions == {"x": "positive"}
    assert "within the forward's domain: x > 1" in r.notes


def test_a_float_constant_for_2_over_sqrt_pi_is_identified_and_noted():
    (r,) = prove(lambda x: torch.erf(x))  # erf's rule multiplies by the float 2/math.sqrt(math.pi)
    assert r.verdict == "proved"
    assert "the constant 1.1283791670955126 was read as 2/sqrt(pi)" in r.notes


def test_proof_results_are_plain_data_for_json():
    results = prove(FactorTwo) + prove(NumpyForward) + prove(Exp)
    data = json.loads(json.dumps([r.to_dict() for r in results], allow_nan=False))
    assert [d["verdict"] for d in data] == ["disproved", "not_traceable", "proved"]
    assert data[0]["shape"] == [2, 2]
    assert set(data[0]["counterexample"]) == {"kind", "element", "at", "point", "backward", "backward_value",
                                               "expected", "expected_value", "numeric_backward"}
    assert data[0]["counterexample"]["kind"] == "value"
    assert isinstance(results[0], ProofResult)


class PolarToCartesian(Function):
    """Two outputs, forward without ctx (setup_context style)."""

    @staticmethod
    def forward(r, theta):
        return r * theta.cos(), r * theta.sin()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad_x, grad_y):
        r, theta = ctx.saved_tensors
        return grad_x * theta.cos() + grad_y * theta.sin(), r * (grad_y * theta.cos() - grad_x * theta.sin())


class PolarSwappedSigns(PolarToCartesian):
    @staticmethod
    def backward(ctx, grad_x, grad_y):
        r, theta = ctx.saved_tensors
        return grad_x * theta.cos() + grad_y * theta.sin(), r * (grad_x * theta.sin() - grad_y * theta.cos())


def test_two_outputs_get_one_cotangent_each():
    assert [(r.input, r.verdict) for r in prove(PolarToCartesian)] == [("r", "proved"), ("theta", "proved")]
    r, theta = prove(PolarSwappedSigns)
    assert (r.verdict, theta.verdict) == ("proved", "disproved")
    assert {k.split("[")[0] for k in theta.counterexample["at"]} == {"g0", "g1", "r", "theta"}


def test_code_that_treats_one_element_specially_is_not_claimed_for_every_shape():
    (r,) = prove(lambda x: x[0, 0] * x)
    assert r.verdict == "proved"
    assert r.uniform is False and SHAPE_NOTE not in r.notes


# ---- the engine's own rules ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(UNARY))
def test_every_unary_rule_of_the_engine_is_proved(name):
    (r,) = prove(lambda x: getattr(torch, name)(x))
    assert r.verdict == "proved", r.message


STRUCTURAL_OPS = {
    "add/sub/mul/div": lambda x, y: (x + y) * (x - y) / y,
    "pow": lambda x: x ** 3 + x.abs() ** 1.5,
    "rpow/rsub/rdiv": lambda x: 2.0 ** x + (1 - x) / (2 + x * x),
    "matmul": lambda x, y: x @ y,
    "sum/mean/prod/var": lambda x: x.sum(dim=1) * x.mean(dim=0) + x.prod(dim=1) + x.var(dim=1),
    "index/reshape/permute/expand": lambda x: x[0, 1] * x.reshape(4).reshape(2, 2).t() + x[:, :1].expand(2, 2),
    "cat/stack/split/gather": lambda x, y: torch.cat([x, y]).sum(0) * torch.stack([x, y])[1]
    + torch.split(x, 1)[1] + torch.gather(x, 1, torch.tensor([[1, 0], [0, 0]])),
    "cumsum/repeat/cast": lambda x: torch.cumsum(x, dim=1) * x.repeat(1, 1).float(),
}


@pytest.mark.parametrize("fn", list(STRUCTURAL_OPS.values()), ids=list(STRUCTURAL_OPS))
def test_structural_ops_trace_and_their_rules_are_proved(fn):
    assert {r.verdict for r in prove(fn)} == {"proved"}


SELECTION_OPS = {
    "maximum": lambda x, y: torch.maximum(x, y) * torch.minimum(x, y),
    "clamp": lambda x: x.clamp(min=0.5, max=2.0),
    "relu/where": lambda x: torch.where(x > 1, x.relu(), x * x),
}


@pytest.mark.parametrize("fn", list(SELECTION_OPS.values()), ids=list(SELECTION_OPS))
def test_ops_that_select_by_comparison_are_proved_away_from_their_kinks(fn):
    assert {r.verdict for r in prove(fn)} == {"proved"}


@pytest.mark.parametrize("fn", [
    lambda x: x.amax(dim=1), lambda x: torch.softmax(x, dim=1), lambda x: torch.logsumexp(x, dim=1),
    lambda x: x.norm(), lambda x: x.std(dim=0), lambda x, p: x ** p,
], ids=["amax", "softmax", "logsumexp", "norm", "std", "pow tensor exponent"])
def test_ops_that_compare_or_shift_values_or_call_numpy_on_data_are_proved(fn):
    # their numeric code compares values (the max), shifts by the max or calls numpy on .data; on
    # symbols they take SymPy's Max, skip the shift and use the UNARY table's symbolic rules
    # (every op of the ops table: tests/test_trace_ops.py)
    assert {r.verdict for r in prove(fn)} == {"proved"}
