"""Issue 17, third pass: a dropped output, a cotangent scaled by the wrong tensor, reduction terms
over a second output or carrying a weight, rows of one integer target, where the hints point,
and the evidence these rules refuse (no wrong diagnosis) — with exact expectations, on both
backends where the engine has the ops."""
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
