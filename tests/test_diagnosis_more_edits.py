"""Issue 17: more edits of backward — pairwise terms, broadcast layouts, a branch's mask, forward's
elementwise calls — and a probe that keeps integer inputs intact. Each case is a small user file written for this test, imported as a user's module is,
under ``import torch`` and ``import gradcli as torch``. Covered here:

- a pairwise energy whose backward pushes on each pair's first end only (``grad[a] += f`` with no
  ``grad[b] -= f``; ``index_add_(0, i, f)`` with no ``index_add_(0, j, -f)``) is a ``missing_term``
  quoted at that write, and the edges the diagnosis re-ran backward with are unchanged after it;
- a per-sample weight of shape (B,) multiplying a (B, n, n) tensor broadcasts along the last axis
  (hidden when B == n): a ``missing_reshape`` at that product;
- a gradient formed in another axis order (r, p, q) and reshaped to the input's (p, q, r) is a
  ``missing_reshape`` (a three-axis cycle is no transpose the wrong way), quoted at the reshape;
- a parameter acting on one branch only whose gradient is masked with the other branch's 0/1 mask
  (``pos`` where ``1 - pos`` is needed) is a ``region`` at that product;
- ``2 * v`` where d(v·|v|)/dv = 2·|v| is needed reads ``v`` where forward's ``v.abs()`` is: a
  ``wrong_variable`` at that statement — but inside a comparison (``d < 1`` where forward tests
  ``d.abs() < 1``) a ``region``: the mask's bound is tested on the wrong quantity;
- a softmax recomputed in backward from the saved scores without forward's causal
  ``masked_fill`` (and a max's winners found again without forward's ``where`` over the valid
  steps) is a ``region`` where the unmasked name is read: forward's mask left out;
- a chain-rule sum `gx * dx_dt + gy * dy_dt` with one term's sign wrong is quoted where that
  local derivative is made (once, read only there): the derivative's sign is the mistake.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.user_files import failing_findings, float_tensor, line_of, user_module

BOTH = pytest.mark.parametrize("backend", ["gradcli", "torch"])
EDGES = [[0, 1], [1, 2], [2, 0], [0, 3], [3, 4], [1, 4]]


def _only(findings, index, kind):
    mine = [f for f in findings if f.input == index]
    assert [f.kind for f in mine] == [kind], findings
    return mine[0]


SPRINGS = """
class SpringLoopFirstEndOnly(torch.autograd.Function):
    @staticmethod
    def forward(ctx, pos, k, edges):
        d = pos[edges[:, 0]] - pos[edges[:, 1]]
        ctx.save_for_backward(pos, k, edges)
        return 0.5 * k * (d * d).sum(1)

    @staticmethod
    def backward(ctx, g):
        pos, k, edges = ctx.saved_tensors
        grad_pos = torch.zeros_like(pos)
        grad_k = torch.zeros_like(k)
        for e in range(edges.shape[0]):
            a, b = int(edges[e, 0]), int(edges[e, 1])
            delta = pos[a] - pos[b]
            grad_pos[a] += g[e] * k[e] * delta
            grad_k[e] = 0.5 * g[e] * (delta * delta).sum()
        return grad_pos, grad_k, None


class SpringIndexAddFirstEndOnly(torch.autograd.Function):
    @staticmethod
    def forward(ctx, pos, edges):
        d = pos[edges[:, 0]] - pos[edges[:, 1]]
        ctx.save_for_backward(pos, edges)
        return 0.5 * (d * d).sum(1)

    @staticmethod
    def backward(ctx, g):
        pos, edges = ctx.saved_tensors
        i, j = edges[:, 0], edges[:, 1]
        force = g[:, None] * (pos[i] - pos[j])
        grad_pos = torch.zeros_like(pos).index_add_(0, i, force)
        return grad_pos, None
"""


def _spring_inputs(module):
    pos = float_tensor(module, np.random.default_rng(3).standard_normal((5, 2)))
    return pos, module.torch.tensor(EDGES)


@BOTH
def test_a_pairwise_force_on_the_first_end_only_is_a_missing_term_at_its_write(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SPRINGS, "springs")
    pos, edges = _spring_inputs(module)
    k = float_tensor(module, [0.5, 1.0, 1.5, 0.7, 1.2, 0.9])
    found = _only(failing_findings(module.SpringLoopFirstEndOnly, (pos, k, edges)), 0, "missing_term")
    assert found.params["source"]["line"] == line_of(path, "grad_pos[a] += g[e]")
    assert found.params["reaction"] == "b"
    assert "grad_pos[b] -= g[e] * k[e] * delta" in found.message
    # the edits re-ran backward with `edges` saved, one of them as `edges[e] = …` (grad_k's write
    # with edges in grad_k's place): none may change the caller's edges, nor the next run's
    assert edges.tolist() == EDGES


@BOTH
def test_an_index_add_on_the_first_end_only_is_a_missing_term_at_it(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SPRINGS, "springs_vectorised")
    pos, edges = _spring_inputs(module)
    found = _only(failing_findings(module.SpringIndexAddFirstEndOnly, (pos, edges)), 0, "missing_term")
    assert found.params["source"]["line"] == line_of(path, "grad_pos = torch.zeros_like(pos).index_add_")
    assert found.params["reaction"] == "j"
    assert "-force at `j`" in found.message
    assert edges.tolist() == EDGES


WEIGHTS = """
class WeightedBatchSumLastAxis(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return (x * w[:, None, None]).sum(0)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        grad_x = w * g.expand(x.shape)
        grad_w = (g * x).sum((1, 2))
        return grad_x, grad_w
"""


@BOTH
def test_a_per_sample_weight_broadcast_along_the_last_axis_is_a_missing_reshape(tmp_path, backend):
    module, path = user_module(tmp_path, backend, WEIGHTS, "weights")
    rng = np.random.default_rng(5)
    x, w = float_tensor(module, rng.standard_normal((3, 3, 3))), float_tensor(module, rng.standard_normal(3))
    found = _only(failing_findings(module.WeightedBatchSumLastAxis, (x, w)), 0, "missing_reshape")
    assert found.params["source"]["line"] == line_of(path, "grad_x = w * g.expand(x.shape)")
    assert found.params["aligned"] == "w"
    assert "broadcasts a tensor along the wrong axis" in found.message


CORE = """
class CoreGradientOtherAxisOrder(torch.autograd.Function):
    @staticmethod
    def forward(ctx, core, a):
        ctx.save_for_backward(core, a)
        return torch.einsum("pqr,ip->iqr", core, a)

    @staticmethod
    def backward(ctx, g):
        core, a = ctx.saved_tensors
        rpq = torch.einsum("iqr,ip->rpq", g, a)
        grad_core = rpq.reshape(core.shape)
        grad_a = torch.einsum("iqr,pqr->ip", g, core)
        return grad_core, grad_a
"""


@BOTH
def test_a_gradient_reshaped_from_another_axis_order_is_a_missing_reshape(tmp_path, backend):
    module, path = user_module(tmp_path, backend, CORE, "core")
    rng = np.random.default_rng(7)
    core, a = float_tensor(module, rng.standard_normal((2, 2, 2))), float_tensor(module, rng.standard_normal((3, 2)))
    found = _only(failing_findings(module.CoreGradientOtherAxisOrder, (core, a)), 0, "missing_reshape")
    assert found.params["permutation"] == [2, 0, 1]
    assert found.params["source"]["line"] == line_of(path, "grad_core = rpq.reshape(core.shape)")
    assert "a permute back to the input's axis order is missing" in found.message


BRANCH = """
class NegativeBranchScaleOtherMask(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, a):
        pos = (x >= 0).to(x.dtype)
        ctx.save_for_backward(x, a, pos)
        return pos * x + (1 - pos) * a * x

    @staticmethod
    def backward(ctx, g):
        x, a, pos = ctx.saved_tensors
        grad_x = g * (pos + (1 - pos) * a)
        grad_a = (g * pos * x).sum(0)
        return grad_x, grad_a
"""


@BOTH
def test_a_branch_parameter_masked_with_the_other_branch_is_a_region(tmp_path, backend):
    module, path = user_module(tmp_path, backend, BRANCH, "branch")
    rng = np.random.default_rng(11)
    x, a = float_tensor(module, rng.standard_normal((3, 4))), float_tensor(module, rng.uniform(0.2, 0.8, 4))
    found = _only(failing_findings(module.NegativeBranchScaleOtherMask, (x, a)), 1, "region")
    assert found.params["source"]["line"] == line_of(path, "grad_a = (g * pos * x).sum(0)")
    assert "`pos` where its complement `1 - pos` is needed" in found.message


DRAG = """
class SmoothL1OneSidedTest(torch.autograd.Function):
    @staticmethod
    def forward(ctx, d):
        ctx.save_for_backward(d)
        return torch.where(d.abs() < 1, 0.5 * d * d, d.abs() - 0.5)

    @staticmethod
    def backward(ctx, g):
        (d,) = ctx.saved_tensors
        slope = torch.where(d < 1, d, torch.sign(d))
        return slope * g


class DragSquareRule(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, c):
        ctx.save_for_backward(v, c)
        return -(c * v * v.abs())

    @staticmethod
    def backward(ctx, g):
        v, c = ctx.saved_tensors
        slope = 2.0 * v
        grad_v = -c * slope * g
        grad_c = -(g * v * v.abs()).sum(0)
        return grad_v, grad_c
"""


@BOTH
def test_an_argument_read_where_forward_takes_its_absolute_value_is_a_wrong_variable(tmp_path, backend):
    module, path = user_module(tmp_path, backend, DRAG, "drag")
    rng = np.random.default_rng(13)
    v, c = float_tensor(module, rng.standard_normal((3, 4))), float_tensor(module, rng.uniform(0.5, 1.5, 4))
    found = _only(failing_findings(module.DragSquareRule, (v, c)), 0, "wrong_variable")
    assert found.params["source"]["line"] == line_of(path, "slope = 2.0 * v")
    assert "`v` where forward's `v.abs()` is needed" in found.message


MASKED = """
class CausalAttentionRecomputedUnmasked(torch.autograd.Function):
    @staticmethod
    def forward(ctx, s, v):
        future = torch.ones(s.shape[0], s.shape[1], dtype=torch.bool).triu(1)
        ctx.save_for_backward(s, v)
        return s.masked_fill(future, float("-inf")).softmax(-1) @ v

    @staticmethod
    def backward(ctx, g):
        s, v = ctx.saved_tensors
        p = s.softmax(-1)
        dp = g @ v.T
        return p * (dp - (p * dp).sum(-1, keepdim=True)), p.T @ g
"""


@BOTH
def test_a_softmax_recomputed_without_forwards_mask_is_a_region_where_it_reads_the_scores(tmp_path, backend):
    module, path = user_module(tmp_path, backend, MASKED, "masked")
    rng = np.random.default_rng(17)
    s, v = float_tensor(module, rng.standard_normal((4, 4))), float_tensor(module, rng.standard_normal((4, 3)))
    findings = failing_findings(module.CausalAttentionRecomputedUnmasked, (s, v))
    assert {f.kind for f in findings} == {"region"} and {f.input for f in findings} == {0, 1}
    found = _only(findings, 0, "region")
    assert found.params["source"]["line"] == line_of(path, "p = s.softmax(-1)")
    assert found.params["forward_mask"] == "s.masked_fill(future, float('-inf'))"
    assert "forward's mask left out" in found.message


@BOTH
def test_an_argument_compared_where_forward_compares_its_absolute_value_is_a_region(tmp_path, backend):
    module, path = user_module(tmp_path, backend, DRAG, "smooth_l1")
    d = float_tensor(module, [[-2.5, -1.5, -0.4, 0.3], [1.7, -0.8, 2.2, -3.1]])
    found = _only(failing_findings(module.SmoothL1OneSidedTest, (d,)), 0, "region")
    assert found.params["source"]["line"] == line_of(path, "slope = torch.where(d < 1, d, torch.sign(d))")
    assert "`d` where forward's `d.abs()` is needed" in found.message


ARM = """
L1, L2 = 1.0, 0.7


class ArmTipElbowSign(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t1, t2):
        ctx.save_for_backward(t1, t2)
        return L1 * torch.cos(t1) + L2 * torch.cos(t1 + t2), L1 * torch.sin(t1) + L2 * torch.sin(t1 + t2)

    @staticmethod
    def backward(ctx, gx, gy):
        t1, t2 = ctx.saved_tensors
        s1, c1, s12, c12 = torch.sin(t1), torch.cos(t1), torch.sin(t1 + t2), torch.cos(t1 + t2)
        dx_dt1, dy_dt1 = -L1 * s1 - L2 * s12, L1 * c1 + L2 * c12
        dx_dt2 = L2 * s12
        dy_dt2 = L2 * c12
        return gx * dx_dt1 + gy * dy_dt1, gx * dx_dt2 + gy * dy_dt2
"""


@BOTH
def test_one_chain_rule_terms_sign_is_quoted_where_its_local_derivative_is_made(tmp_path, backend):
    module, path = user_module(tmp_path, backend, ARM, "arm")
    rng = np.random.default_rng(19)
    t1, t2 = float_tensor(module, rng.uniform(-1, 1, 5)), float_tensor(module, rng.uniform(-1, 1, 5))
    found = _only(failing_findings(module.ArmTipElbowSign, (t1, t2)), 1, "term_sign")
    assert found.params["source"]["line"] == line_of(path, "dx_dt2 = L2 * s12")
    assert found.params["derivative"] == "dx_dt2"
    assert "flip the sign of `dx_dt2`" in found.params["advice"]
