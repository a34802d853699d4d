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
  ``wrong_variable`` at that statement.
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
