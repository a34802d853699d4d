"""Issue 17, third pass: findings from one edit of backward that makes it right exactly (a dim, a
transpose, one tensor occurrence, a permute before a reshape), a dropped output, a cotangent
scaled by the wrong tensor, reduction terms over a second output, rows of one integer target,
and where the hints point — each with exact expectations, on both backends where the engine has
the ops; plus the evidence these rules refuse (no wrong diagnosis)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_diagnosis_cases import backend  # noqa: E402

from gradcli.check.diagnosis import diagnose  # noqa: E402
from gradcli.check.diagnosis.hints import _rounded  # noqa: E402
from gradcli.check.gradcheck import gradcheck  # noqa: E402

BACKENDS = ["gradcli", "torch"]


def _diagnose(cls, args):
    report = gradcheck(cls.apply, args)
    assert not report.ok
    return diagnose(report, cls.apply, args)


def _line_of(cls, text):
    """The file line of ``cls``'s source holding ``text`` (where a hint must point)."""
    import inspect

    lines, first = inspect.getsourcelines(cls)
    return next(first + k for k, line in enumerate(lines) if text in line)


def softmax_pool(B, dim):
    class SoftmaxPool(B.Function):
        @staticmethod
        def forward(ctx, x, v):
            p = x.softmax(1)
            ctx.save_for_backward(p, v)
            return (p * v).sum(1)

        @staticmethod
        def backward(ctx, g):
            p, v = ctx.saved_tensors
            gv = g[:, None] * v
            dx = p * (gv - (gv * p).sum(dim, keepdim=True))
            return dx, g[:, None] * p

    return SoftmaxPool


@pytest.mark.parametrize("name", BACKENDS)
def test_a_reduction_over_the_wrong_dim_is_found_by_editing_that_dim(name):
    B = backend(name)
    rng = np.random.default_rng(1)
    args = (B.tensor(rng.standard_normal((4, 5))), B.tensor(rng.standard_normal((4, 5))))
    cls = softmax_pool(B, 0)
    (finding,) = _diagnose(cls, args)
    assert finding.kind == "wrong_axis" and finding.input == 0
    assert {k: finding.params[k] for k in ("dims", "expected_dims", "call")} == {
        "dims": [0], "expected_dims": [1], "call": "sum"}
    assert finding.params["source"]["line"] == _line_of(cls, "dx = p * (gv")
    assert finding.hint.startswith("sum along dim 1, not dim 0 in `dx = p * (gv - (gv * p).sum(dim, keepdim=True))`")
    assert gradcheck(softmax_pool(B, 1).apply, args).ok  # the edit named is the fix


def tanh_matmul(B):
    class TanhMatmul(B.Function):
        @staticmethod
        def forward(ctx, a, b):
            y = (a @ b).tanh()
            ctx.save_for_backward(a, b, y)
            return y

        @staticmethod
        def backward(ctx, g):
            a, b, y = ctx.saved_tensors
            h = g * (1 - y * y)
            da = h @ b
            return da, a.t() @ h

    return TanhMatmul


@pytest.mark.parametrize("name", BACKENDS)
def test_an_intermediate_operand_missing_its_transpose(name):
    B = backend(name)
    rng = np.random.default_rng(2)
    args = (B.tensor(rng.standard_normal((3, 3))), B.tensor(rng.standard_normal((3, 3))))
    cls = tanh_matmul(B)
    (finding,) = _diagnose(cls, args)
    assert finding.kind == "transposed" and finding.input == 0
    assert (finding.params["operand"], finding.params["expected"]) == ("b", "b.T")
    assert finding.params["source"]["code"] == "da = h @ b"
    assert finding.hint == f"use b.T in `da = h @ b` (test_diagnosis_edits.py:{_line_of(cls, 'da = h @ b')})"


def logistic(B):
    class WeightedLogistic(B.Function):
        @staticmethod
        def forward(ctx, z, t):
            ctx.save_for_backward(z, t)
            return ((1 + z.exp()).log() - t * z).mean()

        @staticmethod
        def backward(ctx, g):
            z, t = ctx.saved_tensors
            n = z.numel()
            dz = (z - t) / n
            return dz * g, -g * z / n

    return WeightedLogistic


@pytest.mark.parametrize("name", BACKENDS)
def test_one_occurrence_of_a_tensor_replaced_by_its_sigmoid(name):
    B = backend(name)
    rng = np.random.default_rng(3)
    args = (B.tensor(rng.standard_normal((3, 4))), B.tensor(rng.random((3, 4))))
    cls = logistic(B)
    (finding,) = _diagnose(cls, args)
    assert finding.kind == "wrong_variable" and finding.input == 0
    assert (finding.params["used"], finding.params["needed"]) == ("z", "sigmoid(z)")
    # the hint quotes dz's assignment, not `return dz * g, ...`
    assert finding.params["source"]["code"] == "dz = (z - t) / n"


def tanh_sigmoid(B, drop):
    class TanhSigmoid(B.Function):
        @staticmethod
        def forward(ctx, x):
            t, s = x.tanh(), x.sigmoid()
            ctx.save_for_backward(t, s)
            return t, s

        @staticmethod
        def backward(ctx, grad_t, grad_s):
            t, s = ctx.saved_tensors
            if drop:
                return grad_t * (1 - t * t)
            return grad_t * (1 - t * t) + grad_s * s * (1 - s)

    return TanhSigmoid


@pytest.mark.parametrize("name", BACKENDS)
def test_a_dropped_output_is_a_missing_term_not_an_overwrite(name):
    B = backend(name)
    args = (B.tensor(np.random.default_rng(4).standard_normal((3, 4))),)
    assert gradcheck(tanh_sigmoid(B, False).apply, args).ok
    (finding,) = _diagnose(tanh_sigmoid(B, True), args)
    assert finding.kind == "missing_term"
    assert finding.params["variant"] == "output" and finding.params["output"] == 1
    assert finding.hint.startswith("add the term `grad_s` contributes (the chain rule through output 1) in "
                                   "`return grad_t * (1 - t * t)`")


def exp_cumsum(B):
    class ExpCumsum(B.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.cumsum(1).exp()
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return (g * x).flip(1).cumsum(1).flip(1)

    return ExpCumsum


@pytest.mark.parametrize("name", BACKENDS)
def test_grad_output_scaled_by_the_input_where_the_output_is_needed(name):
    B = backend(name)
    args = (B.tensor(0.3 * np.random.default_rng(5).standard_normal((3, 4))),)
    (finding,) = _diagnose(exp_cumsum(B), args)
    assert finding.kind == "wrong_variable"
    assert {k: finding.params[k] for k in ("used", "needed", "side")} == {
        "used": "x", "needed": "output", "side": "grad_output"}


def sum_and_centred(B):
    class SumAndCentred(B.Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum(0, keepdim=True), x - x.mean(0, keepdim=True)

        @staticmethod
        def backward(ctx, grad_sum, grad_centred):
            return grad_sum + grad_centred

    return SumAndCentred


@pytest.mark.parametrize("name", BACKENDS)
def test_a_reduction_term_of_the_second_output(name):
    B = backend(name)
    args = (B.tensor(np.random.default_rng(6).standard_normal((4, 3))),)
    (finding,) = _diagnose(sum_and_centred(B), args)
    assert finding.kind == "missing_term"
    assert {k: finding.params[k] for k in ("variant", "term", "coefficient", "dim")} == {
        "variant": "reduction", "term": "mean_0(grad_output[1])", "coefficient": -1.0, "dim": 0}


def rms_norm(B):
    class RMSNormWeighted(B.Function):
        @staticmethod
        def forward(ctx, x, gamma):
            rms = ((x * x).mean(-1, keepdim=True) + 1e-6).sqrt()
            xhat = x / rms
            ctx.save_for_backward(xhat, rms, gamma)
            return xhat * gamma

        @staticmethod
        def backward(ctx, g):
            xhat, rms, gamma = ctx.saved_tensors
            return g * gamma / rms, (g * xhat).sum(0)

    return RMSNormWeighted


@pytest.mark.parametrize("name", BACKENDS)
def test_a_norm_missing_a_term_whose_mean_carries_the_weight(name):
    B = backend(name)
    rng = np.random.default_rng(7)
    args = (B.tensor(rng.standard_normal((3, 5))), B.tensor(rng.random(5) + 0.5))
    findings = _diagnose(rms_norm(B), args)
    assert [(f.kind, f.input) for f in findings] == [("missing_term", 0)]
    assert findings[0].params["variant"] == "reduction" and findings[0].params["dim"] == 1
    assert findings[0].params["coefficient"] == -1.0


def gather_columns(torch, dim):
    class GatherColumns(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, idx):
            ctx.save_for_backward(idx)
            ctx.shape = x.shape
            return x.gather(1, idx)

        @staticmethod
        def backward(ctx, g):
            (idx,) = ctx.saved_tensors
            return torch.zeros(ctx.shape, dtype=g.dtype).scatter_add(dim, idx, g), None

    return GatherColumns


def test_a_scatter_along_the_wrong_dim_is_found_by_rerunning_backward():
    torch = pytest.importorskip("torch")
    x = torch.tensor(np.random.default_rng(8).standard_normal((4, 4)), requires_grad=True)
    idx = torch.tensor([[0, 3], [1, 1], [2, 0], [3, 2]])
    assert gradcheck(gather_columns(torch, 1).apply, (x, idx)).ok
    (finding,) = _diagnose(gather_columns(torch, 0), (x, idx))
    assert finding.kind == "wrong_axis"
    assert {k: finding.params[k] for k in ("dims", "expected_dims", "call")} == {
        "dims": [0], "expected_dims": [1], "call": "scatter_add"}
    assert finding.hint.startswith("scatter_add along dim 1, not dim 0 in `return torch.zeros(ctx.shape")
    assert torch.Tensor.scatter_add is torch._C.TensorBase.scatter_add  # the wrapper is gone
    assert "reshape" not in torch.Tensor.__dict__


def conv1d(B, permute):
    class Conv1dLoop(B.Function):
        @staticmethod
        def forward(ctx, x, w):
            o, c, k = w.shape
            n, _, length = x.shape
            cols = B.ns.stack([x[:, :, i:i + length - k + 1] for i in range(k)], 3)  # (n, c, l_out, k)
            cols = cols.permute(0, 2, 1, 3).reshape(n, length - k + 1, c * k)
            ctx.save_for_backward(cols, w)
            ctx.length = length
            return (cols @ w.reshape(o, c * k).t()).transpose(1, 2)

        @staticmethod
        def backward(ctx, g):
            cols, w = ctx.saved_tensors
            o, c, k = w.shape
            n, _, l_out = g.shape
            gt = g.transpose(1, 2)
            dw = (gt.reshape(n * l_out, o).t() @ cols.reshape(n * l_out, c * k)).reshape(o, c, k)
            if permute:
                dcols = (gt @ w.reshape(o, c * k)).reshape(n, l_out, c, k).permute(0, 2, 1, 3)
            else:
                dcols = (gt @ w.reshape(o, c * k)).reshape(n, c, l_out, k)
            dx = B.ns.zeros(n, c, ctx.length, dtype=g.dtype)
            for i in range(k):
                dx[:, :, i:i + l_out] += dcols[..., i]
            return dx, dw

    return Conv1dLoop


@pytest.mark.parametrize("name", BACKENDS)
def test_a_permute_missing_before_a_reshape_of_overlapping_patches(name):
    B = backend(name)
    rng = np.random.default_rng(9)
    args = (B.tensor(rng.standard_normal((2, 2, 5))), B.tensor(rng.standard_normal((3, 2, 2))))
    assert gradcheck(conv1d(B, True).apply, args).ok
    cls = conv1d(B, False)
    findings = _diagnose(cls, args)
    assert [(f.kind, f.input) for f in findings] == [("missing_reshape", 0)]
    params = findings[0].params
    assert {k: params[k] for k in ("side", "written", "layout", "permute")} == {
        "side": "intermediate", "written": [2, 2, 4, 2], "layout": [2, 4, 2, 2], "permute": [0, 2, 1, 3]}
    assert params["source"]["code"] == "dcols = (gt @ w.reshape(o, c * k)).reshape(n, c, l_out, k)"


def nll_ignore(torch, masked):
    class NLLIgnore(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logp, target):
            kept = target >= 0
            safe = target.clamp(min=0)
            ctx.save_for_backward(safe, kept)
            ctx.shape = logp.shape
            return -(logp.gather(1, safe[:, None])[:, 0] * kept).sum() / kept.sum()

        @staticmethod
        def backward(ctx, g):
            safe, kept = ctx.saved_tensors
            grad = torch.zeros(ctx.shape, dtype=g.dtype).scatter(1, safe[:, None], -1.0)
            if masked:
                grad = grad * kept[:, None]
            return grad / kept.sum() * g, None

    return NLLIgnore


def test_rows_of_an_ignored_target_are_a_region_of_the_target():
    torch = pytest.importorskip("torch")
    logp = torch.tensor(np.random.default_rng(10).standard_normal((5, 3)), requires_grad=True)
    target = torch.tensor([2, 0, -100, 1, -100])
    assert gradcheck(nll_ignore(torch, True).apply, (logp, target)).ok
    (finding,) = _diagnose(nll_ignore(torch, False), (logp, target))
    assert finding.kind == "region"
    assert (finding.params["description"], finding.params["count"]) == ("target < 0", 2)


# ----- where the hints point ---------------------------------------------------------------------
def cross_entropy(B, mark_factor):
    class CrossEntropyNoMean(B.Function):
        @staticmethod
        def forward(ctx, logits, onehot):
            logp = logits.log_softmax(1)
            ctx.save_for_backward(logp, onehot)
            return -(logp * onehot).sum() / logits.shape[0]

        @staticmethod
        def backward(ctx, grad_output):
            logp, onehot = ctx.saved_tensors
            grad = logp.exp() - onehot
            if mark_factor:
                grad = grad * 2.5
            return grad * grad_output, None

    return CrossEntropyNoMean


@pytest.mark.parametrize("name", BACKENDS)
def test_a_factor_is_quoted_where_the_local_derivative_is_computed(name):
    B = backend(name)
    rng = np.random.default_rng(11)
    onehot = np.eye(3)[[0, 2, 1, 1]]
    args = (B.tensor(rng.standard_normal((4, 3))), B.ns.tensor(onehot))
    (finding,) = _diagnose(cross_entropy(B, False), args)
    assert (finding.kind, finding.params["factor"]) == ("scale", 4.0)
    assert finding.params["source"]["code"] == "grad = logp.exp() - onehot"
    (finding,) = _diagnose(cross_entropy(B, True), args)
    assert (finding.kind, finding.params["factor"]) == ("scale", 10.0)
    assert finding.params["source"]["code"] == "grad = grad * 2.5"


def test_a_rounded_constant_is_a_float_with_four_or_more_digits_that_is_no_simple_fraction():
    import ast

    def constant(text):
        return ast.parse(text, mode="eval").body

    assert _rounded(constant("1.1284")) and _rounded(constant("0.7979"))
    assert not _rounded(constant("0.5")) and not _rounded(constant("2.0")) and not _rounded(constant("0.125"))
    assert not _rounded(constant("3")) and not _rounded(constant("1e-05"))


# ----- evidence the rules refuse -----------------------------------------------------------------
def leaky_slope_lost(B):
    class LeakySlopeLost(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return B.ns.where(x > 0, x, 0.1 * x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * B.ns.ones_like(x)

    return LeakySlopeLost


@pytest.mark.parametrize("name", BACKENDS)
def test_a_two_valued_ratio_is_a_region_not_the_input_used_for_the_output(name):
    """G = diag(x/y)·J holds here (y = 0.1·x below 0), but x/y takes two values: a region."""
    B = backend(name)
    args = (B.tensor(np.random.default_rng(12).standard_normal((3, 4))),)
    (finding,) = _diagnose(leaky_slope_lost(B), args)
    assert finding.kind == "region" and finding.params["description"] == "x < 0"


def scatter_add_sliced(torch):
    class ScatterAddSliced(torch.autograd.Function):
        @staticmethod
        def forward(ctx, base, src, index):
            ctx.save_for_backward(index)
            return base.scatter_add(1, index, src)

        @staticmethod
        def backward(ctx, grad_output):
            (index,) = ctx.saved_tensors
            return grad_output, grad_output[:, :index.shape[1]], None

    return ScatterAddSliced


def test_a_threshold_on_a_same_shaped_index_tensor_is_no_region():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(13)
    args = (torch.tensor(rng.standard_normal((3, 4)), requires_grad=True),
            torch.tensor(rng.standard_normal((3, 2)), requires_grad=True), torch.tensor([[3, 1], [2, 2], [0, 3]]))
    findings = _diagnose(scatter_add_sliced(torch), args)
    assert [(f.kind, f.input) for f in findings] == [("none", 1)]


def test_the_cotangents_message_claims_no_misuse_of_grad_output():
    from gradcli.check.checks import cotangents_check

    check = cotangents_check(["ones", "random", "random"], [1, 2], True, 0.0)
    assert check.status == "fail"
    assert check.message.startswith("backward is right for grad_output = ones but wrong for random grad_output: a "
                                    "cotangent of ones hides this error")
    assert "misuse" in check.message and "ignores or misuses" not in check.message


# ----- the evaluator's vocabulary ----------------------------------------------------------------
def _vocabulary_backward(ctx, g):
    n, c = g.shape
    m = g.numel() / g.size(0)
    picked = torch.where(g > 0, g, 0.5 * g).clamp(min=-1.0)  # noqa: F821 (only parsed, never run)
    return picked.reshape(c, n).t() * (n + m + len(g)) + g.erf() + (g >= 0).type_as(g) + g.zeros_like()


def test_the_evaluator_reads_shapes_where_clamp_comparisons_and_reshapes():
    import ast
    import math

    from gradcli.check.diagnosis.evaluator import _Evaluator
    from gradcli.check.diagnosis.source import _source

    src = _source(_vocabulary_backward)
    ret = next(n for n in ast.walk(src.tree) if isinstance(n, ast.Return))
    g = np.array([[-3.0, -0.4, 0.2], [1.5, -1.0, 0.0]])
    got = _Evaluator(src, ret.lineno, {"g": g}, [], {}).value(ret.value)
    picked = np.clip(np.where(g > 0, g, 0.5 * g), -1.0, None)
    expected = picked.reshape(3, 2).T * (2 + 3 + 2) + np.vectorize(math.erf)(g) + (g >= 0)
    assert np.array_equal(got, expected)


def layer_norm_term_sign(B):
    class LayerNormTermSign(B.Function):
        @staticmethod
        def forward(ctx, x):
            mu = x.mean(-1, keepdim=True)
            rstd = 1.0 / (((x - mu) ** 2).mean(-1, keepdim=True) + 1e-5).sqrt()
            xhat = (x - mu) * rstd
            ctx.save_for_backward(xhat, rstd)
            return xhat

        @staticmethod
        def backward(ctx, g):
            xhat, rstd = ctx.saved_tensors
            n = xhat.shape[-1]
            return rstd / n * (n * g - g.sum(-1, keepdim=True) + xhat * (g * xhat).sum(-1, keepdim=True))

    return LayerNormTermSign


@pytest.mark.parametrize("name", BACKENDS)
def test_a_term_sign_in_a_statement_that_reads_the_shape(name):
    B = backend(name)
    args = (B.tensor(np.random.default_rng(14).standard_normal((3, 5))),)
    (finding,) = _diagnose(layer_norm_term_sign(B), args)
    assert finding.kind == "term_sign"
    assert finding.params["term"] == "rstd / n * xhat * (g * xhat).sum(-1, keepdim=True)"


def gather_columns_module_style(torch, dim):
    class GatherColumnsModuleStyle(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, idx):
            ctx.save_for_backward(idx)
            ctx.shape = x.shape
            return torch.gather(x, 1, idx)

        @staticmethod
        def backward(ctx, g):
            (idx,) = ctx.saved_tensors
            return torch.scatter_add(torch.zeros(ctx.shape, dtype=g.dtype), dim, idx, g), None

    return GatherColumnsModuleStyle


def test_a_namespace_function_called_along_the_wrong_dim():
    torch = pytest.importorskip("torch")
    x = torch.tensor(np.random.default_rng(15).standard_normal((4, 4)), requires_grad=True)
    idx = torch.tensor([[0, 3], [1, 1], [2, 0], [3, 2]])
    assert gradcheck(gather_columns_module_style(torch, 1).apply, (x, idx)).ok
    (finding,) = _diagnose(gather_columns_module_style(torch, 0), (x, idx))
    assert finding.kind == "wrong_axis"
    assert {k: finding.params[k] for k in ("dims", "expected_dims", "call")} == {
        "dims": [0], "expected_dims": [1], "call": "torch.scatter_add"}
    assert torch.scatter_add is torch._C._VariableFunctions.scatter_add  # the wrapper is gone
