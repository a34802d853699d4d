"""Issue 17, third pass: findings from one edit of backward that makes it right exactly — a dim,
a transpose, one tensor occurrence (statement edits, mutations.py), a call's dim or a permute
before a reshape (re-runs, relayout.py) — and the evaluator's vocabulary they rely on, with exact
expectations on both backends where the engine has the ops. The other rules of the pass are in
tests/test_diagnosis_terms_regions_hints.py."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_diagnosis_cases import backend  # noqa: E402

from gradcli.check.diagnosis import diagnose  # noqa: E402
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


def _vocabulary_backward(ctx, g):
    n, c = g.shape
    m = g.numel() / g.size(0)
    picked = np.where(g > 0, g, 0.5 * g).clamp(min=-1.0)  # only parsed and evaluated, never run
    return picked.reshape(c, n).t() * (n + m + len(g)) + g.erf() + (g >= 0).type_as(g) + g.where(g < 1, 1.0)


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
    expected = picked.reshape(3, 2).T * (2 + 3 + 2) + np.vectorize(math.erf)(g) + (g >= 0) + np.where(g < 1, g, 1.0)
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
