"""Issue 17, seventh pass: the statement a hint quotes is where the wrong *values* are computed,
each reproduced with a small Function of its own, on both backends:

- a gradient returned through a layout step (``return _rows(d)``, ``return flat.reshape(shape)``)
  or stored by an in-place write (``gw.index_add_(0, idx, contrib.reshape(-1))``): a factor, a
  tensor, a missing cotangent is wrong where the values are computed, not where they are laid out
  or stored (``values_source.py``);
- a region whose edge is the edge of a mask backward computes (``keep = x > 0`` where the gradient
  is wrong for x < 0): the mask is right, the value on one side of it is wrong, so the gradient's
  statement is quoted; a mask with another edge is still quoted (its threshold is the mistake).
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
QUARTER = 4.0  # forward divides by it; the buggy backwards forget it


def _findings(cls, args):
    report = gradcheck(cls.apply, args)
    assert not report.ok
    return diagnose(report, cls.apply, args)


def _line_of(cls, text):
    lines, first = inspect.getsourcelines(cls)
    return next(first + k for k, line in enumerate(lines) if text in line)


def _rows(t):
    """A module-level layout helper: (12,) -> (3, 4)."""
    return t.reshape(3, 4)


def _inputs(B, seed, shape=(3, 4)):
    rng = np.random.default_rng(seed)
    return B.tensor(rng.uniform(-1.0, 1.0, size=shape))


# ----- values laid out by a helper or a reshape --------------------------------------------------
def exp_quarter(B):
    class FlatExpQuarter(B.Function):
        """exp(x) / 4, flattened; backward forgets the 1/4 and lays its result out with a helper."""

        @staticmethod
        def forward(ctx, x):
            e = x.exp()
            ctx.save_for_backward(e)
            return (e / QUARTER).reshape(-1)

        @staticmethod
        def backward(ctx, g):
            (e,) = ctx.saved_tensors
            d = g * e.reshape(-1)  # the 1/4 is missing here
            return _rows(d)

    return FlatExpQuarter


@pytest.mark.parametrize("name", BACKENDS)
def test_a_factor_missing_before_a_layout_helper_is_quoted_where_the_values_are_computed(name):
    B = backend(name)
    cls = exp_quarter(B)
    findings = _findings(cls, (_inputs(B, 71),))
    assert [(f.input, f.kind) for f in findings] == [(0, "scale")], findings
    assert findings[0].params["factor"] == pytest.approx(4.0)
    assert findings[0].params["source"]["line"] == _line_of(cls, "d = g * e.reshape(-1)")
    assert "`d = g * e.reshape(-1)`" in findings[0].hint


def square_ignoring_cotangent(B):
    class FlatSquareNoCotangent(B.Function):
        """x², flattened; backward computes 2x and never multiplies by g, then reshapes it."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.shape = tuple(x.shape)
            return (x * x).reshape(-1)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            flat = 2 * x.reshape(-1)  # g never enters
            return flat.reshape(ctx.shape)

    return FlatSquareNoCotangent


@pytest.mark.parametrize("name", BACKENDS)
def test_a_cotangent_never_applied_is_quoted_where_the_values_are_computed_not_at_the_reshape(name):
    B = backend(name)
    cls = square_ignoring_cotangent(B)
    findings = _findings(cls, (_inputs(B, 72),))
    assert [(f.input, f.kind) for f in findings] == [(0, "ignores_grad_output")], findings
    assert findings[0].params["source"]["line"] == _line_of(cls, "flat = 2 * x.reshape(-1)")


# ----- values stored by an in-place write --------------------------------------------------------
def quartered_lookup(B):
    class QuarteredLookup(B.Function):
        """out[k] = w[idx[k]] / 4 with repeated ids; backward accumulates right but forgets the 1/4."""

        @staticmethod
        def forward(ctx, w, idx):
            ctx.save_for_backward(idx)
            ctx.rows = w.shape[0]
            return w[idx] / QUARTER

        @staticmethod
        def backward(ctx, g):
            (idx,) = ctx.saved_tensors
            gw = B.ns.zeros(ctx.rows, dtype=g.dtype)
            contrib = g * 1.0  # the 1/4 is missing here
            gw.index_add_(0, idx, contrib.reshape(-1))
            return gw, None

    return QuarteredLookup


@pytest.mark.parametrize("name", BACKENDS)
def test_a_factor_missing_in_values_an_index_add_stores_is_quoted_where_they_are_computed(name):
    B = backend(name)
    cls = quartered_lookup(B)
    w = _inputs(B, 73, shape=(5,))
    idx = B.ns.tensor([0, 2, 2, 4, 1, 0, 2])
    findings = _findings(cls, (w, idx))
    assert [(f.input, f.kind) for f in findings] == [(0, "scale")], findings
    assert findings[0].params["factor"] == pytest.approx(4.0)
    assert findings[0].params["source"]["line"] == _line_of(cls, "contrib = g * 1.0")


# ----- a region on one side of a right mask --------------------------------------------------------
def leaky_dropped_slope(B, mask_as_name=False):
    class LeakyDroppedSlope(B.Function):
        """x for x > 0, 0.3·x below; backward copies a ReLU's: 0 below instead of 0.3."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return B.ns.where(x > 0, x, 0.3 * x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            if mask_as_name:
                keep = (x > 0).to(g.dtype)
                return g * keep  # 0.3 is missing below the edge
            keep = x > 0
            dx = g * keep.to(g.dtype)  # 0.3 is missing below the edge
            return dx

    return LeakyDroppedSlope


def clamp_wrong_edge(B):
    class ClampBelowWrongEdge(B.Function):
        """clamp(x, min=-0.5); backward's mask tests x > 0, not x > -0.5."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clamp(min=-0.5)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            keep = (x > 0).to(g.dtype)  # the edge is -0.5
            return g * keep

    return ClampBelowWrongEdge


def _away_from(B, seed, edges, shape=(4, 5)):
    rng = np.random.default_rng(seed)
    values = rng.uniform(-1.0, 1.0, size=shape)
    for edge in edges:
        values = np.where(np.abs(values - edge) < 0.05, edge + 0.1, values)
    return B.tensor(values)


@pytest.mark.parametrize("mask_as_name", [False, True], ids=["mask-in-statement", "mask-named"])
@pytest.mark.parametrize("name", BACKENDS)
def test_a_region_on_one_side_of_a_right_mask_is_quoted_at_the_gradient_not_the_mask(name, mask_as_name):
    B = backend(name)
    cls = leaky_dropped_slope(B, mask_as_name)
    findings = _findings(cls, (_away_from(B, 75, (0.0,)),))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    assert findings[0].params["description"] == "x < 0" and findings[0].params["all_informative"] is True
    quoted = "return g * keep" if mask_as_name else "dx = g * keep.to(g.dtype)"
    assert findings[0].params["source"]["line"] == _line_of(cls, quoted)


@pytest.mark.parametrize("name", BACKENDS)
def test_a_mask_with_another_edge_than_the_region_is_still_quoted(name):
    B = backend(name)
    cls = clamp_wrong_edge(B)
    findings = _findings(cls, (_away_from(B, 76, (0.0, -0.5)),))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    assert findings[0].params["description"] == "x < 0" and findings[0].params["all_informative"] is False
    # the region's edge (0) is the mask's edge, and yet the mask is the mistake: below -0.5 both
    # gradients are 0, so those elements tell nothing and the true edge (-0.5) is hidden; a mask is
    # only taken for right when every element was informative
    assert findings[0].params["source"]["line"] == _line_of(cls, "keep = (x > 0).to(g.dtype)")


# ----- a helper's name is no tensor shared with a right gradient ---------------------------------
def _flat(t):
    return t.reshape(-1)


def product_through_helper(B):
    class FlatProductHalfFactor(B.Function):
        """(a·b) flattened; every gradient is returned through the same helper, only b's is wrong."""

        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            ctx.spread = 3.0  # backward divides by it; forward never did
            return (a * b).reshape(-1)

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            g2 = g.reshape(a.shape)
            da = g2 * b
            db = g2 * a / ctx.spread  # the factor
            return _flat(da).reshape(a.shape), _flat(db).reshape(b.shape)

    return FlatProductHalfFactor


@pytest.mark.parametrize("name", BACKENDS)
def test_gradients_returned_through_one_helper_share_no_tensor_and_the_factor_is_quoted(name):
    B = backend(name)
    cls = product_through_helper(B)
    findings = _findings(cls, (_inputs(B, 77), _inputs(B, 78)))
    assert [(f.input, f.kind) for f in findings] == [(1, "scale")], findings
    assert findings[0].params["factor"] == pytest.approx(1 / 3)
    assert findings[0].params["source"]["line"] == _line_of(cls, "db = g2 * a / ctx.spread")


# ----- a dim chosen at backward's line, used inside a helper of its file; an in-place write's dim ---
def _normalised_grad(g, y, s, dim):
    """d(x / x.sum(dim))ᵀ g for y = x / s."""
    return (g - (g * y).sum(dim, keepdim=True)) / s


def column_normalise(B):
    class ColumnNormaliseMix(B.Function):
        """(x / x.sum(0)) @ w: backward passes dim=1 to its helper where forward normalised over dim 0."""

        @staticmethod
        def forward(ctx, x, w):
            s = x.sum(0, keepdim=True)
            y = x / s
            ctx.save_for_backward(y, s, w)
            return y @ w

        @staticmethod
        def backward(ctx, g):
            y, s, w = ctx.saved_tensors
            dy = g @ w.T
            dx = _normalised_grad(dy, y, s, dim=1)  # dim 0 is forward's
            return dx, y.T @ g

    return ColumnNormaliseMix


@pytest.mark.parametrize("name", BACKENDS)
def test_a_wrong_dim_passed_to_a_helper_of_backwards_file_is_a_wrong_axis_at_the_call(name):
    B = backend(name)
    cls = column_normalise(B)
    rng = np.random.default_rng(79)
    x = B.tensor(rng.uniform(0.5, 2.0, size=(3, 4)))
    w = B.tensor(rng.uniform(-1.0, 1.0, size=(4, 2)))
    findings = _findings(cls, (x, w))
    assert [(f.input, f.kind) for f in findings] == [(0, "wrong_axis")], findings
    assert findings[0].params["dims"] == [1] and findings[0].params["expected_dims"] == [0]
    assert findings[0].params["call"] == "sum (in _normalised_grad)"
    assert findings[0].params["source"]["line"] == _line_of(cls, "dx = _normalised_grad(dy, y, s, dim=1)")


def gather_rows_scattered_on_columns(B):
    class PickPerRowScatteredWrong(B.Function):
        """x.gather(1, idx): backward scatter-adds along dim 0."""

        @staticmethod
        def forward(ctx, x, idx):
            ctx.save_for_backward(idx)
            ctx.shape = tuple(x.shape)
            return x.gather(1, idx)

        @staticmethod
        def backward(ctx, g):
            (idx,) = ctx.saved_tensors
            gx = B.ns.zeros(ctx.shape, dtype=g.dtype)
            gx.scatter_add_(0, idx, g)  # forward gathered along dim 1
            return gx, None

    return PickPerRowScatteredWrong


@pytest.mark.parametrize("name", BACKENDS)
def test_an_in_place_scatter_add_along_the_wrong_dim_is_a_wrong_axis_at_the_write(name):
    B = backend(name)
    cls = gather_rows_scattered_on_columns(B)
    x = _inputs(B, 80, shape=(4, 4))
    idx = B.ns.tensor([[0, 2], [3, 3], [1, 0], [2, 1]])
    findings = _findings(cls, (x, idx))
    assert [(f.input, f.kind) for f in findings] == [(0, "wrong_axis")], findings
    assert findings[0].params["dims"] == [0] and findings[0].params["expected_dims"] == [1]
    assert findings[0].params["source"]["line"] == _line_of(cls, "gx.scatter_add_(0, idx, g)")


# ----- one copy of several kept by a strided read of grad_output -----------------------------------
def repeat_pairs_keeps_one(B, step):
    class RepeatPairsKeepsOne(B.Function):
        """Each element repeated twice along the last dim; backward keeps one copy of each pair."""

        @staticmethod
        def forward(ctx, x):
            return B.ns.stack([x, x], dim=-1).reshape(x.shape[0], 2 * x.shape[1])

        @staticmethod
        def backward(ctx, g):
            if step:
                return g[:, ::2] * 1.0  # the pair's two copies must be added
            return g[:, : g.shape[1] // 2] * 1.0  # no copy kept: a plain slice

    return RepeatPairsKeepsOne


@pytest.mark.parametrize("name", BACKENDS)
def test_a_strided_read_of_grad_output_keeping_one_copy_is_not_accumulated(name):
    B = backend(name)
    cls = repeat_pairs_keeps_one(B, step=True)
    findings = _findings(cls, (_inputs(B, 81, shape=(3, 4)),))
    assert [(f.input, f.kind) for f in findings] == [(0, "not_accumulated")], findings
    assert findings[0].params["kept"] == "first" and findings[0].params["duplicates"] == 12
    assert findings[0].params["source"]["line"] == _line_of(cls, "return g[:, ::2] * 1.0")


@pytest.mark.parametrize("name", BACKENDS)
def test_a_plain_slice_of_grad_output_is_no_evidence_of_an_overwrite(name):
    B = backend(name)
    cls = repeat_pairs_keeps_one(B, step=False)
    findings = _findings(cls, (_inputs(B, 82, shape=(3, 4)),))
    assert "not_accumulated" not in [f.kind for f in findings], findings


def shifted_leaky_output_mask(B):
    class ShiftedLeakyOutputMask(B.Function):
        """x − 0.3 above 0.3, 0.1·(x − 0.3) below; backward masks by the output and drops the 0.1."""

        @staticmethod
        def forward(ctx, x):
            y = B.ns.where(x > 0.3, x - 0.3, 0.1 * (x - 0.3))
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            keep = (y > 0).to(g.dtype)
            dx = g * keep  # 0.1 is missing where keep is 0
            return dx

    return ShiftedLeakyOutputMask


@pytest.mark.parametrize("name", BACKENDS)
def test_a_region_that_is_exactly_one_side_of_backwards_own_mask_is_quoted_at_the_gradient(name):
    """The mask compares the output with 0 and the region is a threshold on x: no number to match,
    but evaluated, the mask's zero side is exactly the wrong elements."""
    B = backend(name)
    cls = shifted_leaky_output_mask(B)
    findings = _findings(cls, (_away_from(B, 83, (0.3,)),))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    assert findings[0].params["mask_sides"] == ["keep"]
    assert findings[0].params["source"]["line"] == _line_of(cls, "dx = g * keep  #")
