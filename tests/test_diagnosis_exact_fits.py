"""Issue 17: what counts as an exact explanation, and which exact explanation wins.

Each case is a small user file written to a temporary folder and imported as a user's module is
(so the one-edit search can recompile its backward), once with ``import torch`` and once with
``import gradcli as torch`` where the engine has the ops. Covered here:

- a part of forward's expression held constant (``held_constant.py``): a broadcast parameter's
  quotient, a loss that reduces its input (one element at a time), the outermost part named;
- an edited backward judged at float32-constant precision (``torch.where(c, 0.3, -0.7)`` is float32);
- a comparison's constant read as a tensor, and a step where a sign is meant (``region`` edits);
- two inputs given each other's gradient is ``swapped`` (not two factors);
- a mask no input satisfies is ``zero``; one these inputs do not satisfy stays ``region``;
- an infinite value agrees only with itself; no ``wrong_axis`` from a NaN operator;
- exactly Jᵀ is ``transposed`` (a triangular matrix), not a reverse accumulation;
- an index or a two-valued tensor is not flipped (another permutation is a ``wrong_variable``);
- one-edit search: a softmax Jacobian without its centering term, ``g[i] -= v`` with repeats, an
  integer bound off by one, a comparison's integer bound off by one (a hinge's margin forgotten), a
  recurrence's state read one step off;
- a per-channel weight aligned with its channel axis (also when C = L) for a normalisation's missing term;
- a log-softmax normaliser's gradient left out (a mixture's weights).
"""
from __future__ import annotations

import numpy as np
import pytest

from gradcli.check.diagnosis.evidence import Evidence
from gradcli.check.gradcheck import gradcheck
from tests.user_files import failing_findings, float_tensor, line_of, user_module

_module, _tensor, _findings, _line = user_module, float_tensor, failing_findings, line_of


RNG = np.random.default_rng(909)
X = RNG.uniform(-2, 2, (3, 4))
Y = RNG.uniform(-2, 2, (3, 4))


# ----- held constant: a broadcast parameter's quotient ------------------------------------------
SNAKE = """
class SnakeFrequency(torch.autograd.Function):
    # x + sin(a x)^2 / a with a learned frequency a of shape (1,); d/da keeps the chain rule's part
    # and drops the quotient's -sin(a x)^2 / a^2
    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return x + (a * x).sin() ** 2 / a

    @staticmethod
    def backward(ctx, g):
        x, a = ctx.saved_tensors
        grad_x = g * (1 + (2 * a * x).sin())
        grad_a = (g * x * (2 * a * x).sin() / a).sum().reshape(1)
        return grad_x, grad_a
"""


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_a_broadcast_parameters_denominator_held_constant_is_a_missing_term(tmp_path, backend):
    module, path = _module(tmp_path, backend, SNAKE, "snake")
    findings = _findings(module.SnakeFrequency, (_tensor(module, X), _tensor(module, [1.3])))
    assert [(f.input, f.kind) for f in findings] == [(1, "missing_term")], findings
    params = findings[0].params
    assert (params["variant"], params["factor"], params["role"]) == ("held_constant", "a", "denominator")
    assert "quotient rule" in findings[0].message
    # the gradient is summed to a's shape after its formula: the formula's statement is quoted
    assert params["source"]["line"] == _line(path, "grad_a = ")


# ----- held constant: a loss that reduces its input ---------------------------------------------
FOCAL = """
class ModulatedMean(torch.autograd.Function):
    # mean of -(1 - p)^2 log p, p = sigmoid(x); backward holds the modulator (1 - p)^2 constant
    @staticmethod
    def forward(ctx, x):
        pt = x.sigmoid()
        ctx.save_for_backward(pt)
        loss = -(1 - pt) ** 2 * pt.log()
        return loss.mean()

    @staticmethod
    def backward(ctx, g):
        (pt,) = ctx.saved_tensors
        d_pt = -(1 - pt) ** 2 / pt
        return g * d_pt * pt * (1 - pt) / pt.numel()
"""


FOCAL_HELPER = """
GAMMA = 2.0


def _focal(ctx, x):
    pt = x.sigmoid()
    ctx.save_for_backward(pt)
    return (-(1 - pt) ** GAMMA * pt.log()).mean()


class ModulatedMeanByHelper(torch.autograd.Function):
    # forward returns a helper of its own file; backward holds (1 - pt) ** GAMMA constant
    @staticmethod
    def forward(ctx, x):
        return _focal(ctx, x)

    @staticmethod
    def backward(ctx, g):
        (pt,) = ctx.saved_tensors
        d_pt = -(1 - pt) ** GAMMA / pt
        return g * d_pt * pt * (1 - pt) / pt.numel()
"""


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_a_forward_that_returns_a_helpers_result_is_read_as_that_helper(tmp_path, backend):
    module, path = _module(tmp_path, backend, FOCAL_HELPER, "focal_helper")
    findings = _findings(module.ModulatedMeanByHelper, (_tensor(module, X),))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    assert findings[0].params["factor"] == "(1 - pt) ** GAMMA"
    assert findings[0].params["source"]["line"] == _line(path, "d_pt = ")
    assert "differentiate `(1 - pt) ** GAMMA` too" in findings[0].hint


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_a_reducing_forwards_factor_held_constant_is_found_one_element_at_a_time(tmp_path, backend):
    module, path = _module(tmp_path, backend, FOCAL, "focal")
    findings = _findings(module.ModulatedMean, (_tensor(module, X),))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    params = findings[0].params
    assert (params["variant"], params["factor"], params["role"]) == ("held_constant", "(1 - pt) ** 2", "factor")
    assert params["source"]["line"] == _line(path, "d_pt = ")


def test_held_vjps_reproduce_the_exact_gradient_with_nothing_frozen(tmp_path):
    """The measured vᵀJ of forward's expression (no part frozen) is the numerical gradient, and a
    part frozen gives the closed form of what remains (here d/da with 1/a frozen: x·sin(2ax)/a)."""
    from gradcli.check.diagnosis import _Diagnosis

    module, _ = _module(tmp_path, "gradcli", SNAKE, "snake_vjps")
    x, a = _tensor(module, X), _tensor(module, [1.3])
    report = gradcheck(module.SnakeFrequency.apply, (x, a))
    diag = _Diagnosis(report, module.SnakeFrequency.apply, (x, a))
    evidence = diag._evidence()
    ev = evidence[1]
    full, parts = ev.forward_pieces()
    assert ev.fits(full, ev.numeric, ev.numeric_error)
    frozen = {code: held for _, role, code, held, _, _ in parts if role == "denominator"}
    V = np.stack([row[0] for row in ev.cotangents])
    expected = (V * X * np.sin(2 * 1.3 * X) / 1.3).sum(axis=(1, 2)).reshape(-1, 1)
    np.testing.assert_allclose(frozen["a"], expected, rtol=1e-9, atol=1e-12)


# ----- an edited backward at float32-constant precision -----------------------------------------
PINBALL = """
Q = 0.3


class PinballExchanged(torch.autograd.Function):
    @staticmethod
    def forward(ctx, pred, target):
        diff = target - pred
        ctx.save_for_backward(diff)
        return torch.maximum(Q * diff, (Q - 1) * diff)

    @staticmethod
    def backward(ctx, g):
        (diff,) = ctx.saved_tensors
        slope = torch.where(diff > 0, Q - 1, Q)
        return -g * slope, g * slope
"""


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_branches_of_float_constants_exchanged_are_found_though_torch_makes_them_float32(tmp_path, backend):
    module, path = _module(tmp_path, backend, PINBALL, "pinball")
    findings = _findings(module.PinballExchanged, (_tensor(module, X), _tensor(module, Y)))
    assert [(f.input, f.kind) for f in findings] == [(0, "region"), (1, "region")], findings
    assert findings[0].params["source"]["line"] == _line(path, "slope = ")
    if backend == "torch":  # float32 branches: only the edit's re-run finds it, at float32-constant precision
        assert findings[0].params["branches"] is True


# ----- region edits: a threshold read as a tensor; a step for a sign ------------------------------
THRESHOLD = """
class PinballByPred(torch.autograd.Function):
    # mean pinball loss; backward picks the branch by pred's sign instead of the residual's
    @staticmethod
    def forward(ctx, pred, target):
        r = target - pred
        ctx.save_for_backward(pred, target)
        return torch.where(r > 0, 0.25 * r, -0.75 * r).mean()

    @staticmethod
    def backward(ctx, g):
        pred, target = ctx.saved_tensors
        under = pred < 0
        weight = under.to(pred.dtype) * 0.25 + (~under).to(pred.dtype) * (-0.75)
        grad = weight * g / pred.numel()
        return -grad, grad
"""

ABS_AS_STEP = """
class PlaneDistance(torch.autograd.Function):
    # |s| per element; backward takes |s|' as the step s > 0 (a ReLU's), not sign(s)
    @staticmethod
    def forward(ctx, s):
        ctx.save_for_backward(s)
        return s.abs()

    @staticmethod
    def backward(ctx, g):
        (s,) = ctx.saved_tensors
        return g * (s > 0).to(g.dtype)
"""


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_a_comparisons_constant_read_as_a_tensor_is_a_region(tmp_path, backend):
    module, path = _module(tmp_path, backend, THRESHOLD, "threshold")
    findings = _findings(module.PinballByPred, (_tensor(module, X), _tensor(module, Y)))
    assert [(f.input, f.kind) for f in findings] == [(0, "region"), (1, "region")], findings
    params = findings[0].params
    assert (params["threshold"], params["expected"]) == ("target", "pred < target")
    assert params["source"]["line"] == _line(path, "under = pred < 0")
    assert "compare with pred < target instead of pred < 0" in findings[0].hint


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_a_step_where_the_sign_is_meant_is_a_region(tmp_path, backend):
    module, path = _module(tmp_path, backend, ABS_AS_STEP, "abs_step")
    findings = _findings(module.PlaneDistance, (_tensor(module, X),))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    params = findings[0].params
    assert params["sign_for_step"] is True and params["expected"] == "s.sign()"
    assert "use s.sign() instead of the step s > 0" in findings[0].hint


# ----- which exact explanation wins ---------------------------------------------------------------
MIXUP = """
MIX = 0.3


class MixupExchanged(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return MIX * a + (1 - MIX) * b

    @staticmethod
    def backward(ctx, g):
        return (1 - MIX) * g, MIX * g
"""


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_two_inputs_given_each_others_gradient_are_swapped_not_two_factors(tmp_path, backend):
    module, _ = _module(tmp_path, backend, MIXUP, "mixup")
    findings = _findings(module.MixupExchanged, (_tensor(module, X), _tensor(module, Y)))
    assert [(f.input, f.kind) for f in findings] == [(0, "swapped"), (1, "swapped")], findings
    assert all(f.params["mutual"] for f in findings)


MASKS = """
class NeverInside(torch.autograd.Function):
    # relu6(x + 3) / 6; backward's inside mask can never be true
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x + 3).clamp(0, 6) / 6

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        inside = (x < -3) & (x > 3)
        return g * inside.to(g.dtype) / 6


class ThresholdTooHigh(torch.autograd.Function):
    # relu(x); backward's mask x > 10 selects nothing for these inputs
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        active = x > 10
        return g * active.to(g.dtype)
"""


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_a_mask_no_input_satisfies_is_zero_one_these_inputs_miss_is_a_region(tmp_path, backend):
    module, path = _module(tmp_path, backend, MASKS, "masks")
    x = X * 3  # both sides of ±3
    never = _findings(module.NeverInside, (_tensor(module, x),))
    assert [(f.input, f.kind) for f in never] == [(0, "zero")], never
    assert never[0].params["mask"] == "inside" and "can never be true" in never[0].message
    assert never[0].params["source"]["line"] == _line(path, "inside = (x < -3)")
    high = _findings(module.ThresholdTooHigh, (_tensor(module, X),))
    assert [(f.input, f.kind) for f in high] == [(0, "region")], high
    assert high[0].params["empty"] is True


def test_an_infinite_value_agrees_only_with_itself():
    ev = Evidence(index=0, name="x", shape=(3,), dtype="float64", analytic=None, numeric=np.ones((1, 3)),
                  numeric_error=np.zeros((1, 3)), kinds=["random"], cotangents=[])
    a = np.array([np.inf, 1.0, -np.inf])
    assert ev.near(a, np.array([1.0, 1.0, -np.inf])).tolist() == [False, True, True]
    assert not ev.fits(np.array([np.inf]), np.array([2.0]), np.array([0.1]))
    assert not ev.fits(np.array([2.0]), np.array([np.inf]))


CAUSAL = """
import math


class CausalDiagonalMasked(torch.autograd.Function):
    # causal attention; backward masks the diagonal too (triu(0) for triu(1)): row 0 all -inf
    @staticmethod
    def forward(ctx, q, k, v):
        t = q.shape[0]
        future = torch.ones(t, t).triu(diagonal=1) > 0
        s = (q @ k.T / math.sqrt(q.shape[1])).masked_fill(future, float("-inf"))
        ctx.save_for_backward(q, k, v)
        return s.softmax(-1) @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v = ctx.saved_tensors
        t = q.shape[0]
        future = torch.ones(t, t).triu(diagonal=0) > 0
        s = (q @ k.T / math.sqrt(q.shape[1])).masked_fill(future, float("-inf"))
        p = s.softmax(-1)
        gp = g @ v.T
        gs = p * (gp - (gp * p).sum(-1, keepdim=True)) / math.sqrt(q.shape[1])
        return gs @ k, gs.T @ q, p.T @ g
"""


def test_no_wrong_axis_from_an_operator_with_nan(tmp_path):
    module, _ = _module(tmp_path, "torch", CAUSAL, "causal")
    rng = np.random.default_rng(23)
    args = tuple(_tensor(module, rng.standard_normal((4, 4))) for _ in range(3))
    findings = _findings(module.CausalDiagonalMasked, args)
    assert findings and all(f.kind != "wrong_axis" for f in findings), findings
    assert {f.kind for f in findings} == {"region"}, findings


TRIANGULAR = """
class LowerTimes(torch.autograd.Function):
    # tril(A) @ B; B's gradient multiplies by tril(A), not by its transpose
    @staticmethod
    def forward(ctx, a, b):
        lower = a.tril()
        ctx.save_for_backward(lower, b)
        return lower @ b

    @staticmethod
    def backward(ctx, g):
        lower, b = ctx.saved_tensors
        return (g @ b.T).tril(), lower @ g
"""


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_exactly_the_transpose_of_a_triangular_operator_is_transposed(tmp_path, backend):
    module, path = _module(tmp_path, backend, TRIANGULAR, "triangular")
    rng = np.random.default_rng(31)
    findings = _findings(module.LowerTimes, (_tensor(module, rng.standard_normal((4, 4))),
                                             _tensor(module, rng.standard_normal((4, 3)))))
    assert [(f.input, f.kind) for f in findings] == [(1, "transposed")], findings


SORTED = """
class SortedDistance(torch.autograd.Function):
    # mean |sort(x) - sort(y)|; x's gradient is scattered back with y's permutation
    @staticmethod
    def forward(ctx, x, y):
        xs, ix = x.sort()
        ys, iy = y.sort()
        ctx.save_for_backward(xs, ys, ix, iy)
        return (xs - ys).abs().mean()

    @staticmethod
    def backward(ctx, g):
        xs, ys, ix, iy = ctx.saved_tensors
        per_rank = (xs - ys).sign() * (g / xs.shape[0])
        grad_x = torch.zeros_like(xs).scatter_(0, iy, per_rank)
        grad_y = torch.zeros_like(ys).scatter_(0, iy, -per_rank)
        return grad_x, grad_y
"""


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_index_and_two_valued_tensors_are_not_flipped_another_permutation_is_a_wrong_variable(tmp_path, backend):
    module, path = _module(tmp_path, backend, SORTED, "sorted")
    rng = np.random.default_rng(50)
    x, y = rng.standard_normal(6), rng.standard_normal(6) + 0.3
    # here per_rank (two-valued: ±g/6) flipped happens to fit as well as ix for iy
    findings = _findings(module.SortedDistance, (_tensor(module, x), _tensor(module, y)))
    assert [(f.input, f.kind) for f in findings] == [(0, "wrong_variable")], findings
    assert (findings[0].params["used"], findings[0].params["needed"]) == ("iy", "ix")


# ----- one-edit search: softmax centering, accumulating an augmented write, a bound off by one ----
ATTENTION = """
import math


class AttentionUncentred(torch.autograd.Function):
    # softmax(q k^T / sqrt(d)) v; the score gradient is p * dp, without -p * sum(p * dp)
    @staticmethod
    def forward(ctx, q, k, v):
        p = (q @ k.T / math.sqrt(q.shape[1])).softmax(-1)
        ctx.save_for_backward(q, k, v, p)
        return p @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        dp = g @ v.T
        ds = p * dp / math.sqrt(q.shape[1])
        return ds @ k, ds.T @ q, p.T @ g
"""

NEAREST = """
class TwoSidedNearest(torch.autograd.Function):
    # sum_i |p_i - q_j(i)|^2 + sum_k |q_k - p_nn(k)|^2; two q points share p[0], and the second
    # side's update of p overwrites instead of adding (the operator sees one scalar output)
    @staticmethod
    def forward(ctx, p, q, j, nn):
        ctx.save_for_backward(p, q, j, nn)
        return ((p - q[j]) ** 2).sum() + ((q - p[nn]) ** 2).sum()

    @staticmethod
    def backward(ctx, g):
        p, q, j, nn = ctx.saved_tensors
        grad_p = 2 * g * (p - q[j])
        grad_p[nn] -= 2 * g * (q - p[nn])
        grad_q = 2 * g * (q - p[nn])
        grad_q.index_add_(0, j, -2 * g * (p - q[j]))
        return grad_p, grad_q, None, None
"""

LENGTHS = """
class MaskedMean(torch.autograd.Function):
    # mean over the first n[b] steps; backward keeps one step too many
    @staticmethod
    def forward(ctx, x, n):
        ctx.save_for_backward(n)
        ctx.steps = x.shape[1]
        keep = torch.arange(x.shape[1]).unsqueeze(0) < n.unsqueeze(1)
        return (x * keep.to(x.dtype)).sum(1) / n.to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        (n,) = ctx.saved_tensors
        grad = (g / n.to(g.dtype)).unsqueeze(1).repeat(1, ctx.steps)
        for b in range(grad.shape[0]):
            stop = int(n[b]) + 1
            grad[b, stop:] = 0
        return grad, None
"""


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_a_softmax_jacobian_without_its_centering_term_is_a_missing_term(tmp_path, backend):
    module, path = _module(tmp_path, backend, ATTENTION, "attention")
    rng = np.random.default_rng(41)
    findings = _findings(module.AttentionUncentred, tuple(_tensor(module, rng.standard_normal((4, 4)))
                                                          for _ in range(3)))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term"), (1, "missing_term")], findings
    params = findings[0].params
    assert (params["variant"], params["centering"], params["dim"]) == ("softmax_centering", "p", -1)
    assert params["source"]["line"] == _line(path, "ds = p * dp")
    assert "p * (r - (p * r).sum(-1, keepdim=True))" in findings[0].hint


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_an_augmented_index_write_with_repeats_is_not_accumulated(tmp_path, backend):
    module, path = _module(tmp_path, backend, NEAREST, "nearest")
    rng = np.random.default_rng(43)
    j, nn = module.torch.tensor([1, 0, 3]), module.torch.tensor([0, 2, 0, 1])
    findings = _findings(module.TwoSidedNearest, (_tensor(module, rng.standard_normal((3, 2))),
                                                  _tensor(module, rng.standard_normal((4, 2))), j, nn))
    assert [(f.input, f.kind) for f in findings] == [(0, "not_accumulated")], findings
    assert findings[0].params["source"]["line"] == _line(path, "grad_p[nn] -= ")


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_an_integer_bound_off_by_one_is_a_region(tmp_path, backend):
    module, path = _module(tmp_path, backend, LENGTHS, "lengths")
    n = module.torch.tensor([2, 4, 1])
    findings = _findings(module.MaskedMean, (_tensor(module, RNG.standard_normal((3, 5))), n))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    assert findings[0].params["bound"] is True and "off by 1" in findings[0].message
    assert findings[0].params["source"]["line"] == _line(path, "stop = int(n[b]) + 1")


HINGE = """
class HingeNoMargin(torch.autograd.Function):
    # sum of relu(1 + s - s_target) over the other classes; backward's active set forgets the margin
    @staticmethod
    def forward(ctx, scores, target):
        correct = scores.gather(1, target.unsqueeze(1))
        ctx.save_for_backward(scores, correct, target)
        margins = (1 + scores - correct).clamp(min=0)
        return (margins.sum() - scores.shape[0]) / scores.shape[0]

    @staticmethod
    def backward(ctx, g):
        scores, correct, target = ctx.saved_tensors
        n = scores.shape[0]
        active = (scores - correct > 0).to(scores.dtype)
        active = active.scatter(1, target.unsqueeze(1), torch.zeros_like(correct))
        grad = active.scatter(1, target.unsqueeze(1), -active.sum(1, keepdim=True))
        return grad * g / n, None
"""


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_a_comparisons_bound_off_by_one_is_a_region(tmp_path, backend):
    module, path = _module(tmp_path, backend, HINGE, "hinge")
    rng = np.random.default_rng(47)
    target = module.torch.tensor([0, 2, 1, 3])
    findings = _findings(module.HingeNoMargin, (_tensor(module, rng.uniform(-1, 1, (4, 5))), target))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    params = findings[0].params
    assert (params["threshold"], params["expected"]) == ("-1", "scores - correct > -1")
    assert params["source"]["line"] == _line(path, "active = (scores - correct > 0)")


RECURRENCE = """
class GatedRecurrence(torch.autograd.Function):
    # h_t = a_t * h_{t-1} + x_t over dim 1, h_0 = 0; a's gradient reads h_t where h_{t-1} is needed
    @staticmethod
    def forward(ctx, a, x):
        hs, h = [], x[:, 0] * 0
        for t in range(x.shape[1]):
            h = a[:, t] * h + x[:, t]
            hs.append(h)
        out = torch.stack(hs, dim=1)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        steps = out.shape[1]
        grad_a, grad_x = torch.zeros_like(a), torch.zeros_like(out)
        carry = out[:, 0] * 0
        for t in reversed(range(steps)):
            carry = g[:, t] + (a[:, t + 1] * carry if t + 1 < steps else 0)
            grad_x[:, t] = carry
            prev = out[:, t]
            grad_a[:, t] = carry * prev
        return grad_a, grad_x
"""


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_a_recurrences_state_read_one_step_off_is_a_wrong_variable(tmp_path, backend):
    module, path = _module(tmp_path, backend, RECURRENCE, "recurrence")
    rng = np.random.default_rng(53)
    findings = _findings(module.GatedRecurrence, (_tensor(module, rng.uniform(0.2, 0.9, (2, 4))),
                                                  _tensor(module, rng.standard_normal((2, 4)))))
    assert [(f.input, f.kind) for f in findings] == [(0, "wrong_variable")], findings
    params = findings[0].params
    assert (params["used"], params["needed"], params["step"]) == ("out[:, t]", "out[:, t - 1]", -1)
    assert params["source"]["line"] == _line(path, "prev = out[:, t]")


INSTANCE_NORM = """
class InstanceNormNoVarianceTerm(torch.autograd.Function):
    # (N, C, L) normalised over L, gamma * x̂ + beta per channel; dx subtracts the mean of g*gamma
    # but not the x̂·mean(g·gamma·x̂) term through the variance
    @staticmethod
    def forward(ctx, x, gamma, beta):
        mean = x.mean(dim=-1, keepdim=True)
        rstd = (((x - mean) ** 2).mean(dim=-1, keepdim=True) + 1e-5) ** -0.5
        xhat = (x - mean) * rstd
        ctx.save_for_backward(xhat, rstd, gamma)
        return xhat * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, gamma = ctx.saved_tensors
        gg = g * gamma.reshape(1, -1, 1)
        grad_x = (gg - gg.mean(dim=-1, keepdim=True)) * rstd
        return grad_x, (g * xhat).sum(dim=2).sum(dim=0), g.sum(dim=2).sum(dim=0)
"""


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_a_per_channel_weight_is_aligned_with_its_channel_axis_also_when_c_equals_l(tmp_path, backend):
    module, path = _module(tmp_path, backend, INSTANCE_NORM, "instance_norm")
    rng = np.random.default_rng(51)
    x, gamma, beta = rng.standard_normal((2, 3, 3)) * 2 + 0.5, rng.uniform(0.5, 1.5, 3), rng.standard_normal(3)
    findings = _findings(module.InstanceNormNoVarianceTerm, (_tensor(module, x), _tensor(module, gamma),
                                                             _tensor(module, beta)))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    assert findings[0].params["variant"] == "reduction" and findings[0].params["dim"] == 2


MIXTURE = """
MU = torch.tensor([-1.0, 0.5, 2.0], dtype=torch.float64)


class MixtureNLLUnnormalisedWeights(torch.autograd.Function):
    # -log sum_k softmax(logits)_k N(x; mu_k, 1) per sample (up to a constant); the logits'
    # gradient keeps the responsibilities and drops the normaliser's +softmax(logits)·Σg
    @staticmethod
    def forward(ctx, x, logits):
        joint = logits.log_softmax(0).unsqueeze(0) - 0.5 * (x.unsqueeze(1) - MU.unsqueeze(0)) ** 2
        resp = joint.softmax(1)
        ctx.save_for_backward(x, resp)
        return -torch.logsumexp(joint, dim=1)

    @staticmethod
    def backward(ctx, g):
        x, resp = ctx.saved_tensors
        r = g.unsqueeze(1) * resp
        grad_x = (r * (x.unsqueeze(1) - MU.unsqueeze(0))).sum(1)
        grad_logits = -r.sum(0)
        return grad_x, grad_logits
"""


@pytest.mark.parametrize("backend", ["gradcli", "torch"])
def test_a_log_softmax_normalisers_gradient_left_out_is_a_missing_term(tmp_path, backend):
    module, path = _module(tmp_path, backend, MIXTURE, "mixture")
    rng = np.random.default_rng(59)
    findings = _findings(module.MixtureNLLUnnormalisedWeights, (_tensor(module, rng.standard_normal(5)),
                                                                _tensor(module, rng.standard_normal(3))))
    assert [(f.input, f.kind) for f in findings] == [(1, "missing_term")], findings
    params = findings[0].params
    assert (params["variant"], params["coefficient"], params["dim"]) == ("normaliser", 1.0, 0)
    assert params["source"]["line"] == _line(path, "grad_logits = -r.sum(0)")
