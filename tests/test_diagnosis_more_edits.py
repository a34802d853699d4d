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
  local derivative is made (once, read only there): the derivative's sign is the mistake;
- a weight gradient assigned per chunk inside the loop (first bound there, returned after it) is a
  ``not_accumulated``: only the last chunk survives;
- ``den * den`` where forward divides by ``den + eps`` (eps kept as ``ctx.eps``) is a
  ``wrong_variable``: the eps forgotten;
- a backward that never reads grad_output has it missing where the factor all its gradients share
  is made (``p = probs(...) / n``), not in each gradient's own statement;
- ``ga, gb = g * a, g * b`` returned as ``ga, gb, g`` is ``swapped`` at that tuple assignment: the
  return names the inputs in order (``ga`` for a; grad_output passed on names none);
- a per-head gradient (B, H, T, D) flattened straight back to (B, T, H·D) is a ``missing_reshape``
  of the result, quoted at that reshape, although reading grad_output in another layout fits too
  (a per-head map is block diagonal);
- a scalar parameter's gradient summed without grad_output (``gt = -(s * x).sum() / t``, returned
  reshaped) is an ``ignores_grad_output`` quoted at that sum: grad_output had to enter before it.
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


CHUNKS = """
def _probs(h, w, t):
    p = torch.softmax(h @ w.t(), dim=1)
    p[torch.arange(len(t)), t] -= 1.0
    return p


def _loss(ctx, h, w, t):
    ctx.save_for_backward(h, w, t)
    logits = h @ w.t()
    return (torch.logsumexp(logits, dim=1) - logits.gather(1, t[:, None])[:, 0]).sum() / h.shape[0]


class ChunkedCEWeightAssigned(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h, w, t):
        return _loss(ctx, h, w, t)

    @staticmethod
    def backward(ctx, g):
        h, w, t = ctx.saved_tensors
        n = h.shape[0]
        grad_h = torch.zeros_like(h)
        for start in range(0, n, 2):
            p = _probs(h[start:start + 2], w, t[start:start + 2]) * (g / n)
            grad_h[start:start + 2] = p @ w
            grad_w = p.t() @ h[start:start + 2]
        return grad_h, grad_w, None


class ChunkedCENeverReadsGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h, w, t):
        return _loss(ctx, h, w, t)

    @staticmethod
    def backward(ctx, g):
        h, w, t = ctx.saved_tensors
        n = h.shape[0]
        grad_h = torch.zeros_like(h)
        grad_w = torch.zeros_like(w)
        for start in range(0, n, 2):
            p = _probs(h[start:start + 2], w, t[start:start + 2]) / n
            grad_h[start:start + 2] = p @ w
            grad_w += p.t() @ h[start:start + 2]
        return grad_h, grad_w, None
"""


def _chunk_inputs(module):
    rng = np.random.default_rng(23)
    return (float_tensor(module, rng.standard_normal((6, 3))), float_tensor(module, rng.standard_normal((4, 3))),
            module.torch.tensor([0, 3, 1, 1, 2, 0]))


@BOTH
def test_a_gradient_assigned_per_chunk_in_a_loop_is_not_accumulated(tmp_path, backend):
    module, path = user_module(tmp_path, backend, CHUNKS, "chunks")
    found = _only(failing_findings(module.ChunkedCEWeightAssigned, _chunk_inputs(module)), 1, "not_accumulated")
    assert found.params["source"]["line"] == line_of(path, "grad_w = p.t() @ h[start:start + 2]")
    assert "keeps only the last step of a loop's sum" in found.message


@BOTH
def test_grad_output_never_read_is_missing_where_the_shared_factor_is_made(tmp_path, backend):
    module, path = user_module(tmp_path, backend, CHUNKS, "chunks_unread")
    findings = failing_findings(module.ChunkedCENeverReadsGrad, _chunk_inputs(module))
    assert [f.kind for f in findings] == ["ignores_grad_output", "ignores_grad_output"]
    line = line_of(path, "p = _probs(h[start:start + 2], w, t[start:start + 2]) / n")
    assert [f.params["source"]["line"] for f in findings] == [line, line]


EPS = """
class RatioForgetsEps(torch.autograd.Function):
    @staticmethod
    def forward(ctx, num, den, eps=0.3):
        ctx.eps = eps
        ctx.save_for_backward(num, den)
        return num / (den + eps)

    @staticmethod
    def backward(ctx, g):
        num, den = ctx.saved_tensors
        grad_den = -g * num / (den * den)
        return g / (den + ctx.eps), grad_den, None


class FusedMulAddOwnFactor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, c):
        ctx.save_for_backward(a, b)
        return a * b + c

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga, gb = g * a, g * b
        return ga, gb, g
"""


@BOTH
def test_a_square_of_den_where_forward_divides_by_den_plus_eps_is_a_wrong_variable(tmp_path, backend):
    module, path = user_module(tmp_path, backend, EPS, "eps")
    rng = np.random.default_rng(29)
    num, den = float_tensor(module, rng.standard_normal((3, 4))), float_tensor(module, rng.uniform(0.5, 2.0, (3, 4)))
    found = _only(failing_findings(module.RatioForgetsEps, (num, den)), 1, "wrong_variable")
    assert found.params["source"]["line"] == line_of(path, "grad_den = -g * num / (den * den)")
    assert "(den + ctx.eps) * (den + ctx.eps)" in found.message


@BOTH
def test_two_values_exchanged_in_a_tuple_assignment_are_swapped_there(tmp_path, backend):
    module, path = user_module(tmp_path, backend, EPS, "fma")
    rng = np.random.default_rng(31)
    a, b, c = (float_tensor(module, rng.standard_normal((3, 4))) for _ in range(3))
    findings = failing_findings(module.FusedMulAddOwnFactor, (a, b, c))
    assert sorted((f.kind, f.input) for f in findings) == [("swapped", 0), ("swapped", 1)]
    assert {f.params["source"]["line"] for f in findings} == {line_of(path, "ga, gb = g * a, g * b")}


HEADS = """
def _split(x, heads):
    b, t, width = x.shape
    return x.view(b, t, heads, width // heads).transpose(1, 2)


class HeadsFlatMerge(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        xh = _split(x, 2)
        ctx.save_for_backward(xh, w)
        return torch.matmul(xh, w).transpose(1, 2).reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        xh, w = ctx.saved_tensors
        gh = _split(g, 2)
        gxh = gh @ w.mT
        grad_x = gxh.reshape(g.shape)
        grad_w = torch.einsum("bhtd,bhte->de", xh, gh)
        return grad_x, grad_w
"""


@BOTH
def test_a_per_head_gradient_flattened_without_its_permute_is_a_result_layout(tmp_path, backend):
    module, path = user_module(tmp_path, backend, HEADS, "heads")
    rng = np.random.default_rng(37)
    x, w = float_tensor(module, rng.standard_normal((2, 3, 4))), float_tensor(module, rng.standard_normal((2, 2)))
    found = _only(failing_findings(module.HeadsFlatMerge, (x, w)), 0, "missing_reshape")
    assert found.params["side"] == "result"
    assert found.params["source"]["line"] == line_of(path, "grad_x = gxh.reshape(g.shape)")


TEMPERATURE = """
class TemperatureSumWithoutGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, t):
        s = torch.sigmoid(x / t)
        ctx.save_for_backward(x, t, s)
        return s

    @staticmethod
    def backward(ctx, g):
        x, t, s = ctx.saved_tensors
        ds = g * s * (1 - s)
        gt = -(s * (1 - s) * x).sum() / (t * t)
        return ds / t, gt.reshape(t.shape)
"""


@BOTH
def test_a_sum_without_grad_output_is_where_grad_output_was_left_out(tmp_path, backend):
    module, path = user_module(tmp_path, backend, TEMPERATURE, "temperature")
    rng = np.random.default_rng(41)
    x, t = float_tensor(module, rng.standard_normal((3, 4))), float_tensor(module, [1.3])
    found = _only(failing_findings(module.TemperatureSumWithoutGrad, (x, t)), 1, "ignores_grad_output")
    assert found.params["source"]["line"] == line_of(path, "gt = -(s * (1 - s) * x).sum() / (t * t)")
