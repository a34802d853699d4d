"""Issue 17: edits of backward the one-edit search (and the statement-level rules) try, and which
explanation wins where two fit. Each case is a small user file written for this test, imported as
a user's module is, with ``import torch`` and, where the engine has the ops, ``import gradcli as
torch``. Covered here:

- another input's *right* gradient copied into this one's place is a ``wrong_variable`` (the line
  copied), not a ``swapped`` (a swap leaves both wrong);
- a channel shuffle undone with the input's grouping (``view(n, c, r, l)`` where the output's
  ``(n, r, c, l)`` is needed) is a ``missing_reshape`` at the view, not "Jᵀ" in general;
- a reduction over the wrong dim of a batched square tensor is a ``wrong_axis`` (``.mT`` would also
  fix it; the dim is the mistake);
- ``grad[:, :-1] += v`` where the difference needs ``-=`` is a ``term_sign`` on that statement;
- a correlation's antisymmetric kernel not flipped negates the gradient: ``missing_flip``, not
  ``sign``;
- ``g = v`` in a loop where the loop's sum needs ``g += v``, and ``g[i] = g[i] + v`` with repeated
  indices, are ``not_accumulated``;
- a mean's term left out (``v − v.mean(d)``) is a ``missing_term`` where the local derivative is
  formed; a term's sign is named where the sign is written (the quotient rule's
  ``+``), a whole sign where backward recomputes forward's ``-(expr)`` without its minus;
- ``sign(pred)`` where ``sign(pred - target)`` is needed, and ``h_t`` where ``h_{t-1}`` is needed,
  are ``wrong_variable``; a comparison with 0 where forward's number argument (a margin) is the
  bound is a ``region``; so are the wrong elements that are every column but the target's, or one
  side of a mask input;
- ``2·A·x`` for a general A needs A's symmetric part: ``transposed``;
- a weight matrix formed the wrong way round (``cols @ gᵀ`` summed over the batch, then reshaped)
  and a permute with two dims exchanged are ``transposed``; a batched result reshaped where it
  needs a transpose back stays a ``missing_reshape``;
- every dim of a routing statement wrong together (``scatter_(0, i.unsqueeze(0), …)`` on a square
  input) is a ``wrong_axis``, not a transpose; a slice one position off is a ``region``, and so is a
  gradient wrong exactly where the function does not depend on the input (a max's losers);
- a saved tensor's sign dropped (a clip's two sides summed with one sign) is a ``term_sign``; a
  normalisation's projection term −x̂·mean(g·x̂) left out is a ``missing_term``;
- a saved tensor read where forward's unsaved local is needed (a GCN's raw x for its aggregate) is
  a ``wrong_variable`` naming that local;
- a recurrence's adjoint without the term it carries back (``adj = g[:, t]`` where ``+ alpha * adj`` is
  needed) is a ``missing_term``;
- a relaxation's Jacobian behind a piecewise-constant forward (a hard one-hot with the softmax's
  Jacobian backward) is a ``straight_through`` estimator;
- a ``scale`` is quoted where the input's gradient alone lacks the factor (scaling a shared factor
  would spoil another input's gradient).
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.user_files import failing_findings, float_tensor, line_of, user_module

_module, _tensor, _findings, _line = user_module, float_tensor, failing_findings, line_of
BOTH = pytest.mark.parametrize("backend", ["gradcli", "torch"])


LOG_NORM = """
class LogSquaredNormCopied(torch.autograd.Function):
    # log(a² + b²); b's line was copied from a's and `a` left in it
    @staticmethod
    def forward(ctx, a, b):
        s = a * a + b * b
        ctx.save_for_backward(a, b, s)
        return torch.log(s)

    @staticmethod
    def backward(ctx, g):
        a, b, s = ctx.saved_tensors
        grad_a = g * 2 * a / s
        grad_b = g * 2 * a / s
        return grad_a, grad_b
"""


@BOTH
def test_a_right_gradient_copied_into_another_inputs_place_is_a_wrong_variable(tmp_path, backend):
    module, path = _module(tmp_path, backend, LOG_NORM, "log_norm")
    rng = np.random.default_rng(61)
    findings = _findings(module.LogSquaredNormCopied, (_tensor(module, rng.uniform(0.5, 2, (3, 2))),
                                                       _tensor(module, rng.uniform(0.5, 2, (3, 2)))))
    assert [(f.input, f.kind) for f in findings] == [(1, "wrong_variable")], findings
    assert findings[0].params["source"]["line"] == _line(path, "grad_b = g * 2 * a / s")


SHUFFLE = """
GROUPS = 2


class ShuffleSameGrouping(torch.autograd.Function):
    # (N, G*C, L) -> (N, G, C, L) -> swap -> (N, C*G, L); backward views the gradient like the input
    @staticmethod
    def forward(ctx, x):
        n, channels, length = x.shape
        return x.view(n, GROUPS, channels // GROUPS, length).permute(0, 2, 1, 3).reshape(n, channels, length)

    @staticmethod
    def backward(ctx, g):
        n, channels, length = g.shape
        grouped = g.reshape(n, GROUPS, channels // GROUPS, length)
        return grouped.permute(0, 2, 1, 3).reshape(n, channels, length)
"""


@BOTH
def test_a_shuffle_undone_with_the_inputs_grouping_is_a_missing_reshape_at_the_reshape(tmp_path, backend):
    module, path = _module(tmp_path, backend, SHUFFLE, "shuffle")
    findings = _findings(module.ShuffleSameGrouping, (_tensor(module, np.random.default_rng(62).standard_normal((2, 6, 2))),))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_reshape")], findings
    assert findings[0].params["regrouped"] is True
    assert findings[0].params["source"]["line"] == _line(path, "grouped = g.reshape(")
    assert "GROUPS` and `channels // GROUPS` exchanged" in findings[0].message


OUTER = """
class GatedOuterRowSum(torch.autograd.Function):
    # M[b, i, j] = tanh(w[b, i]) * x[b, j] (I == J); x's gradient sums over j where i is needed
    @staticmethod
    def forward(ctx, w, x):
        t = torch.tanh(w)
        ctx.save_for_backward(t, x)
        return t.unsqueeze(2) * x.unsqueeze(1)

    @staticmethod
    def backward(ctx, g):
        t, x = ctx.saved_tensors
        grad_w = (g * x.unsqueeze(1)).sum(2) * (1 - t * t)
        weighted = g * t.unsqueeze(2)
        grad_x = weighted.sum(2)
        return grad_w, grad_x
"""


@BOTH
def test_a_reduction_over_the_wrong_dim_is_a_wrong_axis_though_a_transpose_also_fixes_it(tmp_path, backend):
    module, path = _module(tmp_path, backend, OUTER, "outer")
    rng = np.random.default_rng(63)
    findings = _findings(module.GatedOuterRowSum, (_tensor(module, rng.standard_normal((2, 3))),
                                                   _tensor(module, rng.standard_normal((2, 3)))))
    assert [(f.input, f.kind) for f in findings] == [(1, "wrong_axis")], findings
    assert findings[0].params["source"]["line"] == _line(path, "grad_x = weighted.sum(2)")


SMOOTHNESS = """
class SmoothnessPenalty(torch.autograd.Function):
    # sum over t of (x[:, t+1] - x[:, t])² per row; the left pixel's share added with += not -=
    @staticmethod
    def forward(ctx, x):
        d = x[:, 1:] - x[:, :-1]
        ctx.save_for_backward(d)
        ctx.shape = x.shape
        return (d * d).sum(1)

    @staticmethod
    def backward(ctx, g):
        d, = ctx.saved_tensors
        grad = torch.zeros(ctx.shape, dtype=g.dtype)
        share = 2 * g.unsqueeze(1) * d
        grad[:, 1:] += share
        grad[:, :-1] += share
        return grad
"""


@BOTH
def test_an_augmented_assignment_with_the_wrong_sign_is_a_term_sign(tmp_path, backend):
    module, path = _module(tmp_path, backend, SMOOTHNESS, "smoothness")
    findings = _findings(module.SmoothnessPenalty, (_tensor(module, np.random.default_rng(64).standard_normal((2, 5))),))
    assert [(f.input, f.kind) for f in findings] == [(0, "term_sign")], findings
    assert findings[0].params["source"]["line"] == _line(path, "grad[:, :-1] += share")
    assert "`+=` where `-=` is needed" in findings[0].message


DERIVATIVE_FILTER = """
KERNEL = torch.tensor([[[-1.0, 0.0, 1.0]]], dtype=torch.float64)


class DerivativeFilter(torch.autograd.Function):
    # y = x ⋆ [-1, 0, 1] (a correlation); its adjoint needs the kernel flipped, and unflipped the
    # antisymmetric kernel gives exactly minus the gradient
    @staticmethod
    def forward(ctx, x):
        return F.conv1d(x, KERNEL, padding=1)

    @staticmethod
    def backward(ctx, g):
        return F.conv1d(g, KERNEL, padding=1)
"""


def test_an_antisymmetric_kernel_not_flipped_is_a_missing_flip_not_a_sign(tmp_path):
    module, path = _module(tmp_path, "torch", DERIVATIVE_FILTER, "derivative_filter")
    findings = _findings(module.DerivativeFilter, (_tensor(module, np.random.default_rng(65).standard_normal((2, 1, 6))),))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_flip")], findings
    assert findings[0].params["flipped"] is False and findings[0].params["dims"] == [-1]
    assert findings[0].params["source"]["line"] == _line(path, "return F.conv1d(g, KERNEL")


ROWS = """
class RowOuterProducts(torch.autograd.Function):
    # out[r] = x[r] @ W; W's gradient is the sum over rows of outer(x[r], g[r]); the loop assigns it
    @staticmethod
    def forward(ctx, x, W):
        ctx.save_for_backward(x, W)
        return x @ W

    @staticmethod
    def backward(ctx, g):
        x, W = ctx.saved_tensors
        grad_W = torch.zeros_like(W)
        for r in range(x.shape[0]):
            grad_W = torch.outer(x[r], g[r])
        return g @ W.T, grad_W
"""


@BOTH
def test_a_loops_running_sum_assigned_is_not_accumulated(tmp_path, backend):
    module, path = _module(tmp_path, backend, ROWS, "rows")
    rng = np.random.default_rng(66)
    findings = _findings(module.RowOuterProducts, (_tensor(module, rng.standard_normal((3, 2))),
                                                   _tensor(module, rng.standard_normal((2, 4)))))
    assert [(f.input, f.kind) for f in findings] == [(1, "not_accumulated")], findings
    assert findings[0].params["loop"] is True
    assert findings[0].params["source"]["line"] == _line(path, "grad_W = torch.outer(")
    assert "keeps only the last step of a loop's sum" in findings[0].message


BAG = """
class EmbeddingBagSum(torch.autograd.Function):
    # out[b] = sum_k table[ids[b, k]]; backward's read-modify-write keeps one write per repeated id
    @staticmethod
    def forward(ctx, table, ids):
        ctx.save_for_backward(ids)
        ctx.rows = table.shape[0]
        return table[ids].sum(1)

    @staticmethod
    def backward(ctx, g):
        ids, = ctx.saved_tensors
        grad = torch.zeros(ctx.rows, g.shape[1], dtype=g.dtype)
        for k in range(ids.shape[1]):
            grad[ids[:, k]] = grad[ids[:, k]] + g
        return grad, None
"""


@BOTH
def test_a_read_modify_write_with_repeated_indices_is_not_accumulated(tmp_path, backend):
    module, path = _module(tmp_path, backend, BAG, "bag")
    ids = module.torch.tensor([[0, 2], [0, 1], [3, 2]])  # ids 0 and 2 repeat within a column
    findings = _findings(module.EmbeddingBagSum, (_tensor(module, np.random.default_rng(67).standard_normal((4, 3))), ids))
    assert [(f.input, f.kind) for f in findings] == [(0, "not_accumulated")], findings
    assert findings[0].params["source"]["line"] == _line(path, "grad[ids[:, k]] = grad[ids[:, k]] + g")


THIRD_MOMENT = """
class ThirdCentralMoment(torch.autograd.Function):
    # mean((x - mean(x))³) per row; d(d³)/dx keeps 3d²/n but drops the −3·m₂/n through the mean
    @staticmethod
    def forward(ctx, x):
        d = x - x.mean(1, keepdim=True)
        ctx.save_for_backward(d)
        return (d * d * d).mean(1)

    @staticmethod
    def backward(ctx, g):
        d, = ctx.saved_tensors
        n = d.shape[1]
        dm3 = 3.0 * d * d / n
        return g[:, None] * dm3
"""


@BOTH
def test_a_means_term_left_out_is_a_missing_term_where_the_local_derivative_is_formed(tmp_path, backend):
    module, path = _module(tmp_path, backend, THIRD_MOMENT, "third_moment")
    findings = _findings(module.ThirdCentralMoment, (_tensor(module, np.random.default_rng(68).standard_normal((3, 5))),))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    assert (findings[0].params["variant"], findings[0].params["dim"]) == ("mean", -1)
    # the return's value, centred, fits too: the first statement that fits is the local derivative's
    assert findings[0].params["source"]["line"] == _line(path, "dm3 = 3.0 * d * d / n")


QUOTIENT = """
class SquaredRatio(torch.autograd.Function):
    # x² / (1 + x²); the quotient rule written with + between its terms
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x / (1 + x * x)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        u, v = x * x, 1 + x * x
        du = dv = 2 * x
        d_ratio = (du * v + u * dv) / (v * v)
        return g * d_ratio
"""


@BOTH
def test_a_terms_sign_is_located_where_the_sign_is_written(tmp_path, backend):
    module, path = _module(tmp_path, backend, QUOTIENT, "quotient")
    findings = _findings(module.SquaredRatio, (_tensor(module, np.random.default_rng(69).uniform(0.3, 2, 5)),))
    assert [(f.input, f.kind) for f in findings] == [(0, "term_sign")], findings
    assert findings[0].params["source"]["line"] == _line(path, "d_ratio = (du * v + u * dv)")


DISTANCE_BIAS = """
class DistancePenalty(torch.autograd.Function):
    # x + s * (-|i - 2|) along the last dim; backward rebuilds the distance without forward's minus
    @staticmethod
    def forward(ctx, x, s):
        pos = torch.arange(x.shape[-1], dtype=x.dtype)
        penalty = -(pos - 2.0).abs()
        ctx.length = x.shape[-1]
        return x + s * penalty

    @staticmethod
    def backward(ctx, g):
        pos = torch.arange(ctx.length, dtype=g.dtype)
        penalty = (pos - 2.0).abs()
        grad_s = (g * penalty).sum().reshape(1)
        return g, grad_s
"""


@BOTH
def test_a_sign_is_located_where_backward_recomputes_forwards_negated_expression(tmp_path, backend):
    module, path = _module(tmp_path, backend, DISTANCE_BIAS, "distance_bias")
    rng = np.random.default_rng(70)
    findings = _findings(module.DistancePenalty, (_tensor(module, rng.standard_normal((2, 5))),
                                                  _tensor(module, [0.7])))
    assert [(f.input, f.kind) for f in findings] == [(1, "sign")], findings
    assert findings[0].params["source"]["line"] == _line(path, "penalty = (pos - 2.0).abs()")


ABSOLUTE = """
class AbsoluteError(torch.autograd.Function):
    # |pred - target|; the direction read off pred alone
    @staticmethod
    def forward(ctx, pred, target):
        ctx.save_for_backward(pred, target)
        return (pred - target).abs()

    @staticmethod
    def backward(ctx, g):
        pred, target = ctx.saved_tensors
        direction = torch.sign(pred)
        return g * direction, -g * torch.sign(pred - target)
"""


@BOTH
def test_an_input_read_where_its_difference_with_another_is_needed_is_a_wrong_variable(tmp_path, backend):
    module, path = _module(tmp_path, backend, ABSOLUTE, "absolute")
    pred = _tensor(module, [0.5, -0.4, 1.2, -1.5, 0.2, 0.9])
    target = _tensor(module, [1.0, -1.0, 0.3, -0.5, -0.6, 1.4])  # sign(pred) ≠ sign(pred − target) at 4 of 6
    findings = _findings(module.AbsoluteError, (pred, target))
    assert [(f.input, f.kind) for f in findings] == [(0, "wrong_variable")], findings
    assert (findings[0].params["used"], findings[0].params["needed"]) == ("pred", "pred - target")
    assert findings[0].params["source"]["line"] == _line(path, "direction = torch.sign(pred)")


HINGE_MARGIN = """
class MarginHinge(torch.autograd.Function):
    # sum relu(margin - y * x); backward's active set compares with 0: margin was never saved
    @staticmethod
    def forward(ctx, x, y, margin):
        ctx.save_for_backward(x, y)
        return torch.relu(margin - y * x).sum()

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        active = (y * x < 0).to(x.dtype)
        return -g * y * active, None, None
"""


@BOTH
def test_a_bound_forward_was_given_as_a_number_is_a_region_edit(tmp_path, backend):
    module, path = _module(tmp_path, backend, HINGE_MARGIN, "hinge_margin")
    x = _tensor(module, [0.5, -0.2, 0.1, 1.2, -0.8, 0.3])
    y = module.torch.tensor([1.0, 1.0, 1.0, 1.0, -1.0, -1.0], dtype=module.torch.float64)
    findings = _findings(module.MarginHinge, (x, y, 0.4))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    assert (findings[0].params["threshold"], findings[0].params["expected"]) == ("margin", "y * x < 0.4")
    assert findings[0].params["source"]["line"] == _line(path, "active = (y * x < 0)")


TARGET_MARGIN = """
class TargetScaledLogits(torch.autograd.Function):
    # the target class's logit doubled; backward doubles every class
    @staticmethod
    def forward(ctx, z, target):
        rows = torch.arange(z.shape[0])
        out = z.clone()
        out[rows, target] = 2 * z[rows, target]
        return out

    @staticmethod
    def backward(ctx, g):
        return 2 * g, None
"""


@BOTH
def test_wrong_on_every_column_but_the_targets_is_a_region_of_the_target(tmp_path, backend):
    module, path = _module(tmp_path, backend, TARGET_MARGIN, "target_margin")
    target = module.torch.tensor([0, 2, 1, 0])
    findings = _findings(module.TargetScaledLogits, (_tensor(module, np.random.default_rng(71).standard_normal((4, 3))),
                                                     target))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    assert findings[0].params["description"] == "every column but the target one"
    assert findings[0].params["count"] == 8 and findings[0].params["within"] == "scale"


SCAN = """
class GatedScan(torch.autograd.Function):
    # h_t = a_t * h_{t-1} + x_t along dim 0 (h_{-1} = 0); the gate's gradient reads h_t, not h_{t-1}
    @staticmethod
    def forward(ctx, a, x):
        states, h = [], x[0] * 0
        for t in range(x.shape[0]):
            h = a[t] * h + x[t]
            states.append(h)
        states = torch.stack(states)
        ctx.save_for_backward(a, states)
        return states

    @staticmethod
    def backward(ctx, g):
        a, states = ctx.saved_tensors
        adj = g.clone()
        for t in range(a.shape[0] - 2, -1, -1):
            adj[t] = adj[t] + a[t + 1] * adj[t + 1]
        grad_a = adj * states
        return grad_a, adj
"""


@BOTH
def test_a_state_read_where_the_previous_one_is_needed_is_a_wrong_variable(tmp_path, backend):
    module, path = _module(tmp_path, backend, SCAN, "scan")
    rng = np.random.default_rng(72)
    findings = _findings(module.GatedScan, (_tensor(module, rng.uniform(0.2, 0.9, (4, 2))),
                                            _tensor(module, rng.standard_normal((4, 2)))))
    assert [(f.input, f.kind) for f in findings] == [(0, "wrong_variable")], findings
    assert findings[0].params["step"] == -1 and "dim 0" in findings[0].params["needed"]
    assert findings[0].params["source"]["line"] == _line(path, "grad_a = adj * states")


MASKED_MEAN = """
class MaskedMeanOverTime(torch.autograd.Function):
    # (N, C, L) averaged over the kept steps of a (N, L) mask; backward spreads to every step
    @staticmethod
    def forward(ctx, x, mask):
        keep = mask.to(x.dtype)
        ctx.count = keep.sum(1, keepdim=True)
        ctx.length = x.shape[-1]
        return (x * keep.unsqueeze(1)).sum(-1) / ctx.count

    @staticmethod
    def backward(ctx, g):
        share = g / ctx.count
        return share.unsqueeze(-1).expand(-1, -1, ctx.length) * 1.0, None
"""


@BOTH
def test_a_mask_input_backward_forgets_is_a_region_of_the_mask(tmp_path, backend):
    module, path = _module(tmp_path, backend, MASKED_MEAN, "masked_mean")
    mask = module.torch.tensor([[True, True, False, True], [True, False, False, True]])
    findings = _findings(module.MaskedMeanOverTime, (_tensor(module, np.random.default_rng(73).standard_normal((2, 3, 4))),
                                                     mask))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    assert findings[0].params["description"] == "mask is False" and findings[0].params["count"] == 9


QUADRATIC = """
class QuadraticForm(torch.autograd.Function):
    # q = xᵀAx per row for a general A; backward uses 2Ax, right only for a symmetric A
    @staticmethod
    def forward(ctx, x, A):
        ctx.save_for_backward(x, A)
        return ((x @ A) * x).sum(-1)

    @staticmethod
    def backward(ctx, g):
        x, A = ctx.saved_tensors
        grad_x = 2 * g.unsqueeze(-1) * (x @ A)
        return grad_x, x.T @ (g.unsqueeze(-1) * x)
"""


@BOTH
def test_twice_a_x_for_a_general_a_needs_its_symmetric_part_a_transposed(tmp_path, backend):
    module, path = _module(tmp_path, backend, QUADRATIC, "quadratic")
    rng = np.random.default_rng(74)
    findings = _findings(module.QuadraticForm, (_tensor(module, rng.standard_normal((3, 3))),
                                                _tensor(module, rng.standard_normal((3, 3)))))
    assert [(f.input, f.kind) for f in findings] == [(0, "transposed")], findings
    assert findings[0].params["symmetric"] is True and findings[0].params["operand"] == "A"
    assert findings[0].params["source"]["line"] == _line(path, "grad_x = 2 * g.unsqueeze(-1) * (x @ A)")


PATCH_WEIGHT = """
class PatchProjection(torch.autograd.Function):
    # out[n] = w @ cols[n] for unfolded patches cols (N, K, L); w's gradient formed as (K, O)
    # (cols @ gᵀ summed over the batch) and reshaped to (O, K) without its transpose
    @staticmethod
    def forward(ctx, cols, w):
        ctx.save_for_backward(cols, w)
        return w @ cols

    @staticmethod
    def backward(ctx, g):
        cols, w = ctx.saved_tensors
        grad_w = (cols @ g.mT).sum(0).reshape(w.shape)
        return w.T @ g, grad_w
"""


@BOTH
def test_a_weight_matrix_formed_the_wrong_way_round_is_transposed_though_reshaped_after(tmp_path, backend):
    module, path = _module(tmp_path, backend, PATCH_WEIGHT, "patch_weight")
    rng = np.random.default_rng(75)
    findings = _findings(module.PatchProjection, (_tensor(module, rng.standard_normal((2, 4, 5))),
                                                  _tensor(module, rng.standard_normal((3, 4)))))
    assert [(f.input, f.kind) for f in findings] == [(1, "transposed")], findings
    assert findings[0].params["product"] is True and findings[0].params["matrix"] is True
    assert findings[0].params["source"]["line"] == _line(path, "grad_w = (cols @ g.mT).sum(0)")


SUBPIXEL = """
R = 2


class SubpixelShuffle1d(torch.autograd.Function):
    # (N, C*R, L) -> (N, C, L*R): the R sub-positions interleaved; backward permutes with two dims
    # exchanged
    @staticmethod
    def forward(ctx, x):
        n, cr, length = x.shape
        return x.view(n, cr // R, R, length).permute(0, 1, 3, 2).reshape(n, cr // R, length * R)

    @staticmethod
    def backward(ctx, g):
        n, c, lr = g.shape
        blocks = g.view(n, c, lr // R, R).permute(0, 2, 3, 1)
        return blocks.reshape(n, c * R, lr // R)
"""


@BOTH
def test_a_permute_with_two_dims_exchanged_is_transposed(tmp_path, backend):
    module, path = _module(tmp_path, backend, SUBPIXEL, "subpixel")
    findings = _findings(module.SubpixelShuffle1d, (_tensor(module, np.random.default_rng(76).standard_normal((1, 6, 3))),))
    assert [(f.input, f.kind) for f in findings] == [(0, "transposed")], findings
    assert findings[0].params["permute"] is True and findings[0].params["expected"] == "permute(0, 1, 3, 2)"
    assert findings[0].params["source"]["line"] == _line(path, "blocks = g.view(")


CHANNELS_LAST = """
class ChannelsLastProjection(torch.autograd.Function):
    # (N, C, L) -> (N, L, C) @ w -> (N, D, L); x's gradient (N, L, C) reshaped where it needs the
    # transpose back
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return (x.transpose(1, 2) @ w).transpose(1, 2)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gt = g.transpose(1, 2)
        grad_x = (gt @ w.T).reshape(x.shape)
        return grad_x, (x @ gt).sum(0)
"""


@BOTH
def test_a_batched_result_reshaped_where_it_needs_a_transpose_back_is_a_missing_reshape(tmp_path, backend):
    module, path = _module(tmp_path, backend, CHANNELS_LAST, "channels_last")
    rng = np.random.default_rng(77)
    findings = _findings(module.ChannelsLastProjection, (_tensor(module, rng.standard_normal((2, 3, 4))),
                                                         _tensor(module, rng.standard_normal((3, 5)))))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_reshape")], findings
    assert findings[0].params["source"]["line"] == _line(path, "grad_x = (gt @ w.T).reshape(x.shape)")


ROW_MIN = """
class RowMinRouting(torch.autograd.Function):
    # min over dim 1 of a square input; the gradient routed with every dim of the scatter at 0
    @staticmethod
    def forward(ctx, x):
        values, index = x.min(dim=1)
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return values

    @staticmethod
    def backward(ctx, g):
        index, = ctx.saved_tensors
        grad = torch.zeros(ctx.shape, dtype=g.dtype)
        return grad.scatter_(0, index.unsqueeze(0), g.unsqueeze(0))
"""


@BOTH
def test_every_dim_of_a_routing_statement_wrong_is_a_wrong_axis_not_a_transpose(tmp_path, backend):
    module, path = _module(tmp_path, backend, ROW_MIN, "row_min")
    x = _tensor(module, [[0.3, -1.2, 0.8], [1.5, 0.4, -0.6], [-0.9, 2.0, 0.1]])
    findings = _findings(module.RowMinRouting, (x,))
    assert [(f.input, f.kind) for f in findings] == [(0, "wrong_axis")], findings
    params = findings[0].params
    assert (params["every"], params["dims"], params["expected_dims"]) == (True, [0], [1])
    assert params["source"]["line"] == _line(path, "return grad.scatter_(0,")


PAIR_MAX = """
class PairMaxToBoth(torch.autograd.Function):
    # max over pairs along the last dim; backward sends the pair's gradient to both elements
    @staticmethod
    def forward(ctx, x):
        return x.reshape(x.shape[0], -1, 2).max(dim=-1).values

    @staticmethod
    def backward(ctx, g):
        return g.repeat_interleave(2, dim=1)
"""


@BOTH
def test_wrong_exactly_where_the_function_does_not_depend_on_the_input_is_a_region(tmp_path, backend):
    module, path = _module(tmp_path, backend, PAIR_MAX, "pair_max")
    x = _tensor(module, [[0.3, -1.2, 0.8, 1.9], [1.5, 0.4, -0.6, -0.1], [-0.9, 2.0, 0.1, 0.7]])
    findings = _findings(module.PairMaxToBoth, (x,))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    assert findings[0].params["description"].startswith("the function does not depend on x")
    assert (findings[0].params["count"], findings[0].params["total"]) == (6, 12)


DIFFERENCES = """
class NeighbourDifferences(torch.autograd.Function):
    # y = x[:, 1:] - 0.5 * x[:, :-1]; the left neighbour's share written one position off
    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return x[:, 1:] - 0.5 * x[:, :-1]

    @staticmethod
    def backward(ctx, g):
        grad = torch.zeros(ctx.shape, dtype=g.dtype)
        grad[:, 1:] += g
        grad[:, 1:] -= 0.5 * g
        return grad
"""


@BOTH
def test_a_slice_one_position_off_is_a_region(tmp_path, backend):
    module, path = _module(tmp_path, backend, DIFFERENCES, "differences")
    findings = _findings(module.NeighbourDifferences, (_tensor(module, np.random.default_rng(78).standard_normal((2, 5))),))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    params = findings[0].params
    assert (params["used"], params["needed"], params["slice"]) == ("grad[:, 1:]", "grad[:, :-1]", True)
    assert params["source"]["line"] == _line(path, "grad[:, 1:] -= 0.5 * g")


CLIP_SCALE = """
class ScaledClip(torch.autograd.Function):
    # s * clamp(x / s, -1, 1): d/ds is sign(x / s) where clipped; backward sums the clipped side with +
    @staticmethod
    def forward(ctx, x, s):
        u = x / s
        ctx.save_for_backward(u)
        return s * u.clamp(-1.0, 1.0)

    @staticmethod
    def backward(ctx, g):
        u, = ctx.saved_tensors
        inside = u.abs() < 1
        grad_s = (g * (~inside)).sum().reshape(1)
        return g * inside, grad_s
"""


@BOTH
def test_a_sign_of_a_saved_tensor_dropped_is_a_term_sign(tmp_path, backend):
    module, path = _module(tmp_path, backend, CLIP_SCALE, "clip_scale")
    x = _tensor(module, [2.5, -0.3, -3.1, 0.9, -2.2, 1.7])
    findings = _findings(module.ScaledClip, (x, _tensor(module, [1.2])))
    assert [(f.input, f.kind) for f in findings] == [(1, "term_sign")], findings
    assert findings[0].params["sign_of"] == "u"
    assert findings[0].params["source"]["line"] == _line(path, "grad_s = (g * (~inside))")


STANDARDISE = """
class StandardisePerSample(torch.autograd.Function):
    # (N, C, L) standardised over dims (1, 2); dx keeps the mean's term, drops −x̂·mean(g·x̂)
    @staticmethod
    def forward(ctx, x):
        mean = x.mean(dim=(1, 2), keepdim=True)
        rstd = (((x - mean) ** 2).mean(dim=(1, 2), keepdim=True) + 1e-5) ** -0.5
        xhat = (x - mean) * rstd
        ctx.save_for_backward(xhat, rstd)
        return xhat

    @staticmethod
    def backward(ctx, g):
        xhat, rstd = ctx.saved_tensors
        centred = g - g.mean(dim=(1, 2), keepdim=True)
        return rstd * centred
"""


@BOTH
def test_a_normalisations_projection_term_left_out_is_a_missing_term(tmp_path, backend):
    module, path = _module(tmp_path, backend, STANDARDISE, "standardise")
    findings = _findings(module.StandardisePerSample,
                         (_tensor(module, np.random.default_rng(79).standard_normal((2, 3, 4)) * 2 + 1),))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    params = findings[0].params
    assert (params["variant"], params["projection"], params["dim"]) == ("projection", "xhat", "(1, 2)")
    assert params["source"]["line"] == _line(path, "centred = g - g.mean(")


GAIN_TANH = """
class GainTanh(torch.autograd.Function):
    # tanh(s * x) with a learnable gain s; x's gradient copies the shared factor without its s
    @staticmethod
    def forward(ctx, x, s):
        y = torch.tanh(s * x)
        ctx.save_for_backward(x, s, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, s, y = ctx.saved_tensors
        common = g * (1 - y * y)
        grad_x = common
        grad_s = (common * x).sum().reshape(1)
        return grad_x, grad_s
"""


@BOTH
def test_a_factor_left_out_is_located_where_the_input_alone_needs_it(tmp_path, backend):
    module, path = _module(tmp_path, backend, GAIN_TANH, "gain_tanh")
    findings = _findings(module.GainTanh, (_tensor(module, np.random.default_rng(80).standard_normal(5)),
                                           _tensor(module, [1.6])))
    assert [(f.input, f.kind) for f in findings] == [(0, "scale")], findings
    assert findings[0].params["factor"] == 0.625  # 1/s
    # scaling `common` would spoil s's gradient: the factor is missing where x's is formed
    assert findings[0].params["source"]["line"] == _line(path, "grad_x = common")


MOVING_AVERAGE = """
class ExponentialMovingAverage(torch.autograd.Function):
    # y_t = alpha * y_{t-1} + (1 - alpha) * x_t along dim 1; the adjoint forgets what it carries back
    @staticmethod
    def forward(ctx, x, alpha):
        ys, y = [], x[:, 0] * 0
        for t in range(x.shape[1]):
            y = alpha * y + (1 - alpha) * x[:, t]
            ys.append(y)
        ctx.alpha = alpha
        return torch.stack(ys, dim=1)

    @staticmethod
    def backward(ctx, g):
        adj = g[:, 0] * 0
        dx = torch.zeros_like(g)
        for t in reversed(range(g.shape[1])):
            adj = g[:, t]
            dx[:, t] = (1 - ctx.alpha) * adj
        return dx, None
"""


@BOTH
def test_a_recurrences_carried_adjoint_left_out_is_a_missing_term(tmp_path, backend):
    module, path = _module(tmp_path, backend, MOVING_AVERAGE, "moving_average")
    findings = _findings(module.ExponentialMovingAverage,
                         (_tensor(module, np.random.default_rng(81).standard_normal((2, 5))), 0.6))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    params = findings[0].params
    assert (params["variant"], params["term"]) == ("carried", "ctx.alpha * adj")
    assert params["source"]["line"] == _line(path, "adj = g[:, t]")


AGGREGATE = """
class MeanNeighbourProjection(torch.autograd.Function):
    # (A @ x) @ W for a fixed row-normalised adjacency; W's gradient reads the saved raw x where
    # forward's aggregate (never saved) is needed
    @staticmethod
    def forward(ctx, x, W, adjacency):
        agg = adjacency @ x
        ctx.save_for_backward(x, W, adjacency)
        return agg @ W

    @staticmethod
    def backward(ctx, g):
        x, W, adjacency = ctx.saved_tensors
        grad_W = x.T @ g
        grad_x = adjacency.T @ (g @ W.T)
        return grad_x, grad_W, None
"""


@BOTH
def test_a_saved_tensor_read_where_forwards_unsaved_local_is_needed_is_a_wrong_variable(tmp_path, backend):
    module, path = _module(tmp_path, backend, AGGREGATE, "aggregate")
    rng = np.random.default_rng(82)
    adjacency = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.5, 0.5, 0.0], [0.0, 0.0, 0.5, 0.5], [0.5, 0.0, 0.0, 0.5]])
    findings = _findings(module.MeanNeighbourProjection,
                         (_tensor(module, rng.standard_normal((4, 3))), _tensor(module, rng.standard_normal((3, 2))),
                          module.torch.tensor(adjacency, dtype=module.torch.float64)))
    assert [(f.input, f.kind) for f in findings] == [(1, "wrong_variable")], findings
    params = findings[0].params
    assert (params["used"], params["needed"], params["forward_local"]) == ("x", "forward's agg", "agg")
    assert params["source"]["line"] == _line(path, "grad_W = x.T @ g")


HARD_SOFTMAX = """
class HardSoftmaxStraightThrough(torch.autograd.Function):
    # a one-hot of each row's argmax forward; the softmax's Jacobian backward (deliberate)
    @staticmethod
    def forward(ctx, z):
        p = torch.softmax(z, dim=-1)
        ctx.save_for_backward(p)
        return torch.zeros_like(p).scatter_(-1, p.argmax(-1, keepdim=True), 1.0)

    @staticmethod
    def backward(ctx, g):
        p, = ctx.saved_tensors
        return p * (g - (g * p).sum(-1, keepdim=True))
"""


def test_a_relaxations_jacobian_behind_a_piecewise_constant_forward_is_straight_through(tmp_path):
    module, path = _module(tmp_path, "torch", HARD_SOFTMAX, "hard_softmax")
    findings = _findings(module.HardSoftmaxStraightThrough,
                         (_tensor(module, np.random.default_rng(83).standard_normal((3, 4)) * 2),))
    assert [(f.input, f.kind) for f in findings] == [(0, "straight_through")], findings
    assert findings[0].params["relaxed"] is True
