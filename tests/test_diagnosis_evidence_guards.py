"""Issue 17, eighth pass: guards that keep a rule from firing on evidence that is not specific,
each reproduced with a small Function of its own, on both backends.

- ``missing_reshape`` needs a *layout* permutation (the axes of some C-order reshape of the flat
  index, permuted: what a missing transpose/permute before a reshape does). Any other reordering
  of right values — a swap inside each pair, a gradient routed to the wrong element of a window —
  is a wrong index, not a wrong layout, and gets no missing_reshape finding.
- ``wrong_variable`` by one edit that replaces *every* read of a name in one statement (tanh′
  written ``1 - z * z`` on the pre-activation z where the output is needed): the same variable
  mistaken consistently, which no single replacement fixes.
- ``region`` by a value's threshold needs ≥ 8 informative elements when one element is alone on
  its side (the lone one is the smallest or largest by chance 2 times in n).
- ``inplace`` for a tensor kept as a ctx attribute (``ctx.t = t``) and changed in place before
  forward returns (``return t.mul_(2.0)``): forward's frame traced, the version when it is first
  seen on ctx against the version at return.
- ``inplace`` for a tensor kept as a ctx attribute (``ctx.t = t``) and changed in place before
  forward returns (``return t.mul_(2.0)``): forward's frame traced, the version when it is first
  seen on ctx against the version at return.
- ``region`` by one edit of a mask's comparison (its strictness, or inverted: ``y == 0`` where
  ``y != 0`` is needed), quoted at the mask, where no set of values describes the wrong elements.
- a statement outside the evaluator's vocabulary (a helper of the user's) takes the value backward
  itself held for that name, so the statements that read it can still be evaluated and edited.
"""
from __future__ import annotations

import contextlib
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_diagnosis_cases import backend  # noqa: E402

from gradcli.check.diagnosis import diagnose  # noqa: E402
from gradcli.check.diagnosis.operator import _is_relayout  # noqa: E402
from gradcli.check.diagnosis.saved import ctx_attributes_changed  # noqa: E402
from gradcli.check.gradcheck import gradcheck  # noqa: E402

BACKENDS = ["gradcli", "torch"]


def _findings(cls, args):
    report = gradcheck(cls.apply, args)
    assert not report.ok
    return diagnose(report, cls.apply, args)


def _inputs(B, seed, shape=(3, 4)):
    rng = np.random.default_rng(seed)
    return B.tensor(rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape))


# ----- a layout permutation, or any reordering ----------------------------------------------------
def test_a_layout_permutation_is_a_permutation_of_axes_of_a_reshape():
    flat = np.arange(24)
    assert _is_relayout(list(flat.reshape(4, 6).T.ravel()))
    assert _is_relayout(list(flat.reshape(2, 3, 4).transpose(0, 2, 1).ravel()))
    assert _is_relayout(list(flat.reshape(2, 3, 2, 2).transpose(2, 0, 3, 1).ravel()))
    assert not _is_relayout(list(flat.reshape(12, 2)[:, ::-1].ravel()))  # a swap inside each pair
    assert not _is_relayout(list(flat[::-1]))  # a flip
    assert not _is_relayout([0, 2, 1, 3, 5, 4, 6, 7])  # two swaps that no axes explain
    assert not _is_relayout(list(range(24)))  # the identity is no permutation of axes
    # a pooling window tiled where it must be interleaved: bits of h and of w swapped (6 axes)
    assert _is_relayout(list(np.arange(64).reshape(2, 2, 2, 2, 2, 2).transpose(0, 1, 3, 2, 5, 4).ravel()))


def squares_routed(B, layout):
    class SquaresRouted(B.Function):
        """x² on (3, 4); backward computes the right values, then puts each one at the other
        element of its pair (a wrong index) or reads the (4, 3) transpose flat (a wrong layout)."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            d = 2.0 * x * g
            if layout:
                return d.t().reshape(3, 4)  # the transpose is one too many
            cols = [d[:, 1:2], d[:, 0:1], d[:, 3:4], d[:, 2:3]]
            return B.ns.cat(cols, dim=1)  # each pair's values swapped

    return SquaresRouted


@pytest.mark.parametrize("name", BACKENDS)
def test_values_swapped_inside_pairs_are_no_missing_reshape(name):
    B = backend(name)
    findings = _findings(squares_routed(B, layout=False), (_inputs(B, 91),))
    assert "missing_reshape" not in [f.kind for f in findings], findings


@pytest.mark.parametrize("name", BACKENDS)
def test_values_read_in_a_transposed_layout_are_still_a_missing_reshape(name):
    B = backend(name)
    findings = _findings(squares_routed(B, layout=True), (_inputs(B, 92),))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_reshape")], findings
    assert findings[0].params["layout"] == [3, 4]


# ----- one tensor used for another at every read of a statement ------------------------------------
def tanh_layer_slope_on_preactivation(B):
    class TanhLayerSlopeOnPreactivation(B.Function):
        """tanh(x @ w); backward writes tanh′ = 1 − t² with the pre-activation z read for t, both
        times, in a statement both gradients read."""

        @staticmethod
        def forward(ctx, x, w):
            z = x @ w
            ctx.save_for_backward(x, w, z)
            return z.tanh()

        @staticmethod
        def backward(ctx, g):
            x, w, z = ctx.saved_tensors
            dz = g * (1.0 - z * z)  # the output tanh(z) is needed at both reads
            return dz @ w.T, x.T @ dz

    return TanhLayerSlopeOnPreactivation


@pytest.mark.parametrize("name", BACKENDS)
def test_a_tensor_read_wrongly_at_every_place_of_a_statement_is_a_wrong_variable(name):
    B = backend(name)
    cls = tanh_layer_slope_on_preactivation(B)
    rng = np.random.default_rng(93)
    args = (B.tensor(rng.uniform(-1.0, 1.0, size=(3, 4))), B.tensor(rng.uniform(-0.6, 0.6, size=(4, 2))))
    findings = _findings(cls, args)
    assert [(f.input, f.kind) for f in findings] == [(0, "wrong_variable"), (1, "wrong_variable")], findings
    for finding in findings:
        params = finding.params
        assert params["every"] is True and params["used"] == "z" and params["needed"] == "output"
        assert params["statement"] == "dz = g * (1.0 - z * z)"
        assert params["source"]["code"].strip() == "dz = g * (1.0 - z * z)"


# ----- a lone element at the extreme of a value among few is no region ------------------------------
def forward_difference_both_negated(B):
    class ForwardDifferenceBothNegated(B.Function):
        """y_i = x_{i+1} − x_i; backward subtracts grad_output for both neighbours, so every element
        but the first (which has only the −x_i term) is wrong."""

        @staticmethod
        def forward(ctx, x):
            return x[1:] - x[:-1]

        @staticmethod
        def backward(ctx, g):
            middle = -g[:-1] - g[1:]  # g[:-1] must be added
            return B.ns.cat([-g[:1], middle, -g[-1:]])

    return ForwardDifferenceBothNegated


@pytest.mark.parametrize("name", BACKENDS)
def test_one_element_alone_at_a_round_threshold_among_six_is_no_region(name):
    B = backend(name)
    # the one right element (the first) is also the smallest, by a round threshold (x < 0)
    x = B.tensor(np.array([-0.9, 0.6, 0.8, 1.3, 0.7, 1.1]))
    findings = _findings(forward_difference_both_negated(B), (x,))
    assert "region" not in [f.kind for f in findings], findings


# ----- a statement outside the evaluator's vocabulary: backward's own value for it ------------------
def _ramp(B, shape):
    """A helper of the test's own: any call of one is outside the statement evaluator's vocabulary."""
    return B.tensor(np.arange(1.0, 1.0 + int(np.prod(shape))).reshape(shape) / 4.0)


def cubic_minus_ramp(B):
    class CubicMinusRamp(B.Function):
        """c·(x³ − x) with c from a helper; backward adds the 1 where it must subtract it, in an
        intermediate the gradient multiplies by c."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return _ramp(B, x.shape) * (x * x * x - x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            c = _ramp(B, x.shape)
            slope = 3.0 * x * x + 1.0  # the 1 must be subtracted
            return g * slope * c

    return CubicMinusRamp


@pytest.mark.parametrize("name", BACKENDS)
def test_a_value_from_a_helper_is_read_from_backward_and_the_term_sign_is_found(name):
    B = backend(name)
    cls = cubic_minus_ramp(B)
    findings = _findings(cls, (_inputs(B, 94),))
    assert [(f.input, f.kind) for f in findings] == [(0, "term_sign")], findings
    # the expanded product's term g·c·1 (without c's value from backward: no finding at all)
    assert findings[0].params["term"] == "g * c"


# ----- a tensor kept on ctx, then changed in place before forward returns ---------------------------
def doubled_tanh_on_ctx(B, in_place):
    class DoubledTanhOnCtx(B.Function):
        """2·tanh(x); forward keeps tanh(x) as ctx.t and (buggy) doubles that same tensor in place."""

        @staticmethod
        def forward(ctx, x):
            t = x.tanh()
            ctx.t = t
            if in_place:
                return t.mul_(2.0)  # backward then reads 2·tanh(x) as ctx.t
            return t * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 2.0 * (1.0 - ctx.t * ctx.t)

    return DoubledTanhOnCtx


@pytest.mark.parametrize("name", BACKENDS)
def test_a_ctx_tensor_changed_in_place_after_storing_is_inplace(name):
    B = backend(name)
    cls = doubled_tanh_on_ctx(B, in_place=True)
    findings = _findings(cls, (_inputs(B, 95),))
    assert [(f.input, f.kind) for f in findings] == [(None, "inplace")], findings
    assert findings[0].params["ctx_attributes"] == [
        {"function": "DoubledTanhOnCtx", "attribute": "t", "at_save": 0, "at_return": 1}]


class _ForwardOnly:
    """The two members of a Probe that ctx_attributes_changed uses: one forward call."""

    def __init__(self, cls, args):
        self.fn, self._build = cls.apply, lambda: args

    @staticmethod
    def _grad_enabled(flag):
        return contextlib.nullcontext()


@pytest.mark.parametrize("name", BACKENDS)
def test_a_ctx_tensor_left_alone_is_no_evidence_of_a_change(name):
    B = backend(name)
    right, buggy = doubled_tanh_on_ctx(B, in_place=False), doubled_tanh_on_ctx(B, in_place=True)
    assert gradcheck(right.apply, (_inputs(B, 96),)).ok  # the twin is right
    assert ctx_attributes_changed(_ForwardOnly(right, (_inputs(B, 96),)), right) == []
    assert ctx_attributes_changed(_ForwardOnly(buggy, (_inputs(B, 96),)), buggy) == [
        {"function": "DoubledTanhOnCtx", "attribute": "t", "at_save": 0, "at_return": 1}]


# ----- a scalar loss missing a constant part of its gradient ----------------------------------------
def mean_square_plus_linear(B):
    class MeanSquarePlusLinear(B.Function):
        """mean(x² + x/2) over 12 elements; backward keeps 2x/12 and forgets the constant (1/2)/12."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x * x + 0.5 * x).mean()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2.0 * x / 12.0  # + g * 0.5 / 12.0 is missing

    return MeanSquarePlusLinear


@pytest.mark.parametrize("name", BACKENDS)
def test_a_scalar_loss_missing_a_constant_term_is_a_missing_term(name):
    B = backend(name)
    findings = _findings(mean_square_plus_linear(B), (_inputs(B, 97),))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    assert findings[0].params["term"] == "1"
    assert findings[0].params["coefficient"] == pytest.approx(0.5 / 12.0, rel=1e-5)  # 6 digits


# ----- a mask's comparison inverted -----------------------------------------------------------------
def row_max_kept_inverted(B):
    class RowMaxKeptInverted(B.Function):
        """Each row's largest element kept, the others zeroed; backward's mask of the kept elements
        tests == 0 where != 0 is needed, so every element's gradient is wrong (no region of values)."""

        @staticmethod
        def forward(ctx, x):
            y = x * (x == x.amax(1, keepdim=True)).float()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            kept = (y == 0.0).float()  # the kept elements are those with y != 0
            return g * kept

    return RowMaxKeptInverted


@pytest.mark.parametrize("name", BACKENDS)
def test_an_inverted_mask_comparison_is_a_region_at_the_mask(name):
    B = backend(name)
    x = B.tensor(np.array([[0.3, 1.7, -0.4, 0.9], [1.2, 0.5, -0.9, 0.3], [0.1, -0.2, 0.8, 2.4]]))
    cls = row_max_kept_inverted(B)
    findings = _findings(cls, (x,))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    params = findings[0].params
    assert params["comparison"] == "==" and params["expected"] == "!="
    assert params["source"]["code"].strip().startswith("kept = (y == 0.0).float()")
