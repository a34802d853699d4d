"""Issue 17, fifth pass: evidence that is no evidence. Each guard is a mistake class where a rule's
story is literally true but not specific, reproduced with a small Function of its own, on both
backends:

- an elementwise derivative missing a square, (1 − x²)/(1 + x²) for (1 − x²)/(1 + x²)² of
  x/(1 + x²): the wrong gradient is the right one times x/output, which the scaled-cotangent
  rule would call "x where the output is needed" although no tensor is swapped;
- a row-min mask taken from the global minimum: of the three elements that carry a gradient,
  the two wrong ones happen to lie on one side of a threshold (any three values split 2:1 at an
  extreme by chance two times in three), which is no evidence of a region (since the sixth
  pass it is the whole-tensor reduction given a dim: `wrong_axis`).
"""
from __future__ import annotations

import inspect
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_diagnosis_cases import backend  # noqa: E402

from gradcli.check.diagnosis import diagnose  # noqa: E402
from gradcli.check.gradcheck import gradcheck  # noqa: E402

BACKENDS = ["gradcli", "torch"]


def _findings(cls, args):
    report = gradcheck(cls.apply, args)
    assert not report.ok
    return diagnose(report, cls.apply, args)


def rational_bump(B):
    class RationalBumpSquareMissing(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x / (1 + x * x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (1 - x * x) / (1 + x * x)  # the square of the denominator is missing

    return RationalBumpSquareMissing


@pytest.mark.parametrize("name", BACKENDS)
def test_an_elementwise_derivative_off_by_a_ratio_of_x_and_output_is_no_swapped_tensor(name):
    B = backend(name)
    x = np.random.default_rng(51).uniform(0.3, 2.5, size=(3, 4)) * np.array([1, -1, 1, -1])
    cls = rational_bump(B)
    x_t = B.tensor(x)
    # the premise: the wrong gradient is exactly the right one times x / output
    y = x / (1 + x * x)
    assert np.allclose((1 - x * x) / (1 + x * x), (1 - x * x) / (1 + x * x) ** 2 * (x / y), rtol=1e-12)
    findings = _findings(cls, (x_t,))
    assert [f.kind for f in findings] == ["none"], findings


def row_min_global_mask(B):
    class RowMinGlobalMask(B.Function):
        @staticmethod
        def forward(ctx, x):
            values, _ = x.min(dim=1)
            ctx.save_for_backward(x, values)
            return values

        @staticmethod
        def backward(ctx, g):
            x, values = ctx.saved_tensors
            mask = (x == x.min()).to(g.dtype)  # the whole tensor's minimum, not each row's
            return mask * g[:, None]

    return RowMinGlobalMask


@pytest.mark.parametrize("name", BACKENDS)
def test_two_of_three_informative_elements_beside_a_threshold_are_no_region(name):
    B = backend(name)
    x = np.array([[0.4, 1.3, -2.6, 0.9], [1.8, -0.5, 0.7, 2.2], [-0.6, 1.1, 0.3, 1.6]])
    cls = row_min_global_mask(B)
    findings = _findings(cls, (B.tensor(x),))
    # the wrong elements are the row minima -0.5 and -0.6, the right one -2.6: "x > -1" would
    # separate them, with one element on its side among three. Never a region: since the sixth
    # pass the mistake is named for what it is, `x.min()` where the per-row minimum is needed
    assert [f.kind for f in findings] == ["wrong_axis"], findings
    assert findings[0].params["expected_dims"] in ([1], [-1])
    lines, first = inspect.getsourcelines(cls)
    assert findings[0].params["source"]["line"] == next(
        first + k for k, line in enumerate(lines) if "x == x.min()" in line)


# ----- a factor two gradients share is quoted where they share it ---------------------------------
def cubed_product(B):
    class CubedProductFactor(B.Function):
        @staticmethod
        def forward(ctx, a, b, c):
            ctx.save_for_backward(a, b, c)
            return (a * b) ** 3 + c

        @staticmethod
        def backward(ctx, g):
            a, b, c = ctx.saved_tensors
            h = 2 * g * (a * b) ** 2  # the power rule's 3 written as 2
            return h * b, h * a, g

    return CubedProductFactor


@pytest.mark.parametrize("name", BACKENDS)
def test_one_factor_shared_by_two_gradients_is_quoted_where_they_share_it(name):
    import inspect

    B = backend(name)
    rng = np.random.default_rng(53)
    args = tuple(B.tensor(rng.uniform(0.5, 1.5, size=(3, 4))) for _ in range(3))
    cls = cubed_product(B)
    findings = _findings(cls, args)
    assert sorted((f.input, f.kind) for f in findings) == [(0, "scale"), (1, "scale")], findings
    lines, first = inspect.getsourcelines(cls)
    h_line = next(first + k for k, line in enumerate(lines) if "h = 2 * g" in line)
    for f in findings:
        assert f.params["factor"] == pytest.approx(2 / 3, rel=1e-9)
        assert f.params["source"]["line"] == h_line


# ----- missing_term: one term of a sum dropped after backward prepared its pieces -----------------
def two_pair_scores(B):
    class TwoPairScoresDroppedTerm(B.Function):
        @staticmethod
        def forward(ctx, a, b, c):
            ctx.save_for_backward(a, b, c)
            return (a * b).sum(1) - 0.5 * (a * c).sum(1)

        @staticmethod
        def backward(ctx, g):
            a, b, c = ctx.saved_tensors
            w = g[:, None]
            u = b
            r = 0.5 * c
            grad_a = w * u  # w * (u - r): the second pair's pull is dropped
            return grad_a, w * a, -w * a * 0.5

    return TwoPairScoresDroppedTerm


@pytest.mark.parametrize("name", BACKENDS)
def test_a_dropped_term_built_from_backwards_own_names_is_missing_term(name):
    import inspect

    B = backend(name)
    rng = np.random.default_rng(54)
    args = tuple(B.tensor(rng.standard_normal((3, 4))) for _ in range(3))
    cls = two_pair_scores(B)
    findings = _findings(cls, args)
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    finding = findings[0]
    assert (finding.params["term"], finding.params["coefficient"]) == ("w·r", -1.0)
    lines, first = inspect.getsourcelines(cls)
    assert finding.params["source"]["line"] == next(
        first + k for k, line in enumerate(lines) if "grad_a = w * u" in line)
    assert "add the term −w·r" in finding.hint


# ----- missing_flip: a reverse recursion written as a loop that runs forwards -----------------------
def leaky_prefix(B):
    class LeakyPrefixLoopForwards(B.Function):
        @staticmethod
        def forward(ctx, x):
            out, acc = [], x[:, 0] * 0
            for t in range(x.shape[1]):
                acc = 0.6 * acc + x[:, t]
                out.append(acc)
            return B.ns.stack(out, dim=1)

        @staticmethod
        def backward(ctx, g):
            acc, grads = g[:, 0] * 0, []
            for t in range(g.shape[1]):  # must run from the last step: reversed(range(...))
                acc = g[:, t] + 0.6 * acc
                grads.append(acc)
            return B.ns.stack(grads, dim=1)

    return LeakyPrefixLoopForwards


@pytest.mark.parametrize("name", BACKENDS)
def test_a_loop_running_the_wrong_way_is_a_missing_flip_quoted_at_its_header(name):
    import inspect

    B = backend(name)
    x = B.tensor(np.random.default_rng(55).standard_normal((3, 4)))
    cls = leaky_prefix(B)
    findings = _findings(cls, (x,))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_flip")], findings
    lines, first = inspect.getsourcelines(cls)
    loop = next(first + k for k, line in enumerate(lines) if "for t in range(g.shape[1])" in line)
    assert findings[0].params["source"]["line"] == loop
    assert findings[0].params["source"]["code"] == "for t in range(g.shape[1]):"


# ----- missing_term (edited): the product rule's half through a transposed grad_output --------------
def half_gram(B):
    class HalfGramOneSided(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.t() @ x * 0.5

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 0.5 * x @ g  # the half from the left factor, x @ g.t(), is missing

    return HalfGramOneSided


@pytest.mark.parametrize("name", BACKENDS)
def test_the_product_rules_half_through_a_transposed_grad_output_is_missing_term(name):
    B = backend(name)
    x = B.tensor(np.random.default_rng(56).standard_normal((5, 3)))
    findings = _findings(half_gram(B), (x,))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    params = findings[0].params
    assert (params["variant"], params["coefficient"]) == ("edited", 1.0)
    assert params["term"] == "`g` replaced by g.T"


# ----- transposed: the fix that keeps the right gradient right (and torch.eye in the vocabulary) ---
def orthogonality_penalty(B):
    torch = B.ns  # the backward reads the library under its usual name

    class CrossOrthogonalityKeysUntransposed(B.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            n = a.shape[0]
            return ((a @ b.t() - torch.eye(n, dtype=a.dtype)) ** 2).sum() * 0.5

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            s = a @ b.t()
            r = (s - torch.eye(a.shape[0], dtype=a.dtype)) * g
            return r @ b, r @ a  # b's gradient needs r.t() @ a

    return CrossOrthogonalityKeysUntransposed


@pytest.mark.parametrize("name", BACKENDS)
def test_a_transpose_is_named_where_it_keeps_the_other_gradient_right(name):
    import inspect

    B = backend(name)
    rng = np.random.default_rng(57)
    args = (B.tensor(rng.standard_normal((3, 4))), B.tensor(rng.standard_normal((3, 4))))
    cls = orthogonality_penalty(B)
    findings = _findings(cls, args)
    assert [(f.input, f.kind) for f in findings] == [(1, "transposed")], findings
    # transposing `s` in r's statement fits b's gradient too, but would break a's, which reads r
    assert (findings[0].params["operand"], findings[0].params["expected"]) == ("r", "r.T")
    lines, first = inspect.getsourcelines(cls)
    assert findings[0].params["source"]["line"] == next(
        first + k for k, line in enumerate(lines) if "return r @ b, r @ a" in line)


# ----- wrong_axis, not transposed: grad_output summed over the wrong dim --------------------------
def row_column_offsets(B):
    class RowColumnOffsetsWrongSum(B.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a[:, None] + 2 * b[None, :]

        @staticmethod
        def backward(ctx, g):
            return g.sum(1), 2 * g.sum(1)  # b's gradient sums over dim 0

    return RowColumnOffsetsWrongSum


@pytest.mark.parametrize("name", BACKENDS)
def test_grad_output_summed_over_the_wrong_dim_is_a_wrong_axis_not_a_transposed_grad_output(name):
    B = backend(name)
    rng = np.random.default_rng(58)
    args = (B.tensor(rng.standard_normal(3)), B.tensor(rng.standard_normal(3)))
    findings = _findings(row_column_offsets(B), args)
    # `g.T.sum(1)` is right too, but the dim is the simpler edit (and the one written)
    assert [(f.input, f.kind) for f in findings] == [(1, "wrong_axis")], findings
    assert (findings[0].params["dims"], findings[0].params["expected_dims"]) == ([1], [0])


# ----- term_sign through ctx attributes unpacked as a tuple ----------------------------------------
def ratio_of_sums(B):
    class RatioOfSumsQuotientSign(B.Function):
        @staticmethod
        def forward(ctx, x):
            top, bottom = (x * x).sum(), x.sum() + 20.0
            ctx.save_for_backward(x)
            ctx.top, ctx.bottom = top, bottom
            return top / bottom

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            top, bottom = ctx.top, ctx.bottom
            return (2 * x * bottom + top) / bottom ** 2 * g  # the quotient rule subtracts top

    return RatioOfSumsQuotientSign


@pytest.mark.parametrize("name", BACKENDS)
def test_a_quotient_rule_sign_reading_tuple_unpacked_ctx_attributes_is_term_sign(name):
    B = backend(name)
    x = B.tensor(np.random.default_rng(59).uniform(0.2, 1.5, size=(3, 4)))
    findings = _findings(ratio_of_sums(B), (x,))
    assert [(f.input, f.kind) for f in findings] == [(0, "term_sign")], findings
    assert "top" in findings[0].params["term"] and "bottom" in findings[0].params["term"]


# ----- region on a tensor backward reads (a saved residual), not on an input -------------------------
def soft_clip_residual(B):
    torch = B.ns

    class SoftClipResidualLinearBranch(B.Function):
        @staticmethod
        def forward(ctx, p, q):
            e = p - q
            ctx.save_for_backward(e)
            return torch.where(e.abs() < 1.5, e * e, 3 * e.abs() - 2.25)

        @staticmethod
        def backward(ctx, g):
            (e,) = ctx.saved_tensors
            dp = torch.where(e.abs() < 1.5, 2 * e, e.sign()) * g  # the linear branch's slope is 3·sign(e)
            return dp, -dp

    return SoftClipResidualLinearBranch


@pytest.mark.parametrize("name", BACKENDS)
def test_a_branch_on_a_saved_residual_is_a_region_of_that_residual(name):
    B = backend(name)
    p = np.random.default_rng(60).standard_normal((3, 4))
    e = np.array([[0.3, -2.1, 0.8, 1.9], [-0.4, 2.6, -1.1, 0.2], [1.2, -0.7, -2.4, 0.5]])
    findings = _findings(soft_clip_residual(B), (B.tensor(p), B.tensor(p - e)))
    by_input = {f.input: f for f in findings}
    assert sorted(by_input) == [0, 1] and {f.kind for f in findings} == {"region"}, findings
    params = by_input[0].params
    assert params["description"] == "|e| > 1.5" and (params["count"], params["total"]) == (4, 12)
    assert (params["within"], params["factor"]) == ("scale", pytest.approx(1 / 3))


# ----- wrong_axis: one dim where forward reduced over two -------------------------------------------
def spatial_centering(B):
    class SpatialCenteringLastDimOnly(B.Function):
        @staticmethod
        def forward(ctx, x):
            c = x - x.mean(dim=(1, 2), keepdim=True)
            y = c.tanh()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            h = g * (1 - y * y)
            return h - h.mean(dim=-1, keepdim=True)  # forward's mean runs over dims 1 and 2

    return SpatialCenteringLastDimOnly


@pytest.mark.parametrize("name", BACKENDS)
def test_a_mean_over_one_dim_where_forward_reduced_two_is_a_wrong_axis(name):
    B = backend(name)
    x = B.tensor(np.random.default_rng(61).standard_normal((2, 3, 4)))
    findings = _findings(spatial_centering(B), (x,))
    assert [(f.input, f.kind) for f in findings] == [(0, "wrong_axis")], findings
    assert findings[0].params["dims"] in ([-1], [2]) and findings[0].params["expected_dims"] == [1, 2]


# ----- no region on an index tensor backward reads ---------------------------------------------------
def sliced_scatter(B):
    class GatherRowsSlicedInsteadOfScattered(B.Function):
        @staticmethod
        def forward(ctx, src, index):
            ctx.save_for_backward(index)
            return src.gather(1, index)

        @staticmethod
        def backward(ctx, g):
            (index,) = ctx.saved_tensors
            return g[:, : index.shape[1]] * 1.0, None  # a wrong formula: the columns, not a scatter

    return GatherRowsSlicedInsteadOfScattered


def test_an_index_tensor_is_no_variable_of_a_region():
    B = backend("torch")
    import torch

    src = B.tensor([[-0.8, -1.9, 1.1, -0.9], [0.4, -0.1, 0.1, 2.1], [0.0, 1.5, 1.1, 1.6]])
    index = torch.tensor([[0, 3, 1, 2], [0, 3, 2, 2], [2, 1, 3, 1]])
    findings = _findings(sliced_scatter(B), (src, index))
    # the wrong elements happen to be those where index > 0: a threshold on positions, no region
    assert [f.kind for f in findings] == ["none"], findings
