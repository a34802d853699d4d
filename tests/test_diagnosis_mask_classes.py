"""Issue 17, ninth pass: evidence guards and mistake classes, each reproduced with a small Function
of its own, on both backends.

- A gradient that is zero everywhere only because a mask backward computes by a comparison is
  false at every element (an active set tested without its margin: ``x > 1.5`` for inputs below
  it) is a ``region`` quoted at the mask, not a forgotten gradient (``zero``); a zero gradient
  with no such mask stays ``zero``.
- A term dropped from a gradient built of backward's names, over a name's square of any shape
  (a row-normalised dot product's ``−g·f·a/na²``), with the grad_output argument reassigned
  first (``g = g[:, None]``: its reassigned value is what the statements read).
- A reduction over the wrong axis of a view (``g.view(n, 3, w).sum(1)`` where each element's
  copies are adjacent: ``view(n, w, 3).sum(2)``) is a ``wrong_axis`` (the re-run's permute only
  moves the reduced axis), found although backward is right for a cotangent of ones.
- A tensor read unflipped at one statement (a valid correlation's input gradient: the full
  correlation with the *flipped* kernel, given the kernel as it is) is a ``missing_flip`` at that
  statement, found by re-running backward with that one read flipped; never by undoing a
  statement that reassigns the flipped name (``d = d * (x > 0)``: restoring d would drop the
  statement), nor by a flip along 2 elements (a pair's other element: a wrong index).
- A factor of forward's product held constant (y = x·tanh(x), backward grad_output·tanh(x); a
  modulated log-loss −(1 − p)²·log p whose backward drops the modulator's derivative) is a
  ``missing_term`` (``held_constant``), quoted where backward writes that factor; so is a
  quotient's denominator held constant (x/(1 + |x|) differentiated as 1/(1 + |x|): the quotient
  rule's other half).
- A per-row loss (one output per row) missing a constant part of its target: α·v·1 with v
  grad_output broadcast along the row (the scalar loss's rule, per row).
- A mask built by ``triu``/``tril`` with its diagonal offset off by one (a causal mask re-applied
  with ``triu(0)``, zeroing the diagonal too) is a ``region`` at that call, found by re-running
  backward with the offset changed by one.
- A gradient of zeros that backward computes and writes (``out[:, :] = g * 0.0`` then a reshape)
  is quoted at that write, where the values are, not at the return.
- A term with coefficient −1 (numeric = analytic − that term) is an *extra* term, factor 0 — not
  "a factor 1e-16".
"""
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


def _findings(cls, args):
    report = gradcheck(cls.apply, args)
    assert not report.ok
    return diagnose(report, cls.apply, args)


def _inputs(B, seed, shape=(3, 4)):
    rng = np.random.default_rng(seed)
    return B.tensor(rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape))


# ----- a mask false everywhere, or no mask at all ------------------------------------------------------
def shifted_relu(B, masked):
    class ShiftedRelu(B.Function):
        """relu(x + 0.5)·3; backward's active set forgets the shift and tests x > 2 (no input is
        above it: the gradient is zero everywhere), or backward returns zeros outright."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x + 0.5).clamp(min=0.0) * 3.0

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            if masked:
                on = x > 2.0  # the shift of 0.5 forgotten, and the wrong bound
                return g * on * 3.0
            return g * 0.0

    return ShiftedRelu


@pytest.mark.parametrize("name", BACKENDS)
def test_a_gradient_zeroed_by_a_mask_false_everywhere_is_a_region_at_the_mask(name):
    B = backend(name)
    x = _inputs(B, 11)
    findings = _findings(shifted_relu(B, masked=True), (x,))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    params = findings[0].params
    assert params["empty"] is True and params["mask"] == "on"
    values = np.asarray(x.detach().numpy() if hasattr(x, "detach") else x.numpy() if hasattr(x, "numpy") else x)
    assert params["count"] == int(np.sum(values > -0.5)) and params["total"] == 12
    assert params["source"]["code"] == "on = x > 2.0"


@pytest.mark.parametrize("name", BACKENDS)
def test_a_gradient_of_zeros_with_no_mask_is_still_zero(name):
    B = backend(name)
    findings = _findings(shifted_relu(B, masked=False), (_inputs(B, 12),))
    assert [(f.input, f.kind) for f in findings] == [(0, "zero")], findings


# ----- an extra term ------------------------------------------------------------------------------------
def cubic_with_extra_exp(B, extra_only):
    class CubicWithExtraExp(B.Function):
        """x³ + x²; backward adds exp(x)/3 to 3x² + 2x (an extra term: its fitted coefficient −1 up to
        rounding), or (extra_only) the gradient of x² with exp(x)/3 added."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x + x * x if not extra_only else x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            if extra_only:
                return g * (2.0 * x + x.exp() / 3.0)
            return g * (3.0 * x * x + 2.0 * x + x.exp() / 3.0)

    return CubicWithExtraExp


@pytest.mark.parametrize("name", BACKENDS)
def test_a_term_with_coefficient_minus_one_is_an_extra_term_of_factor_zero(name):
    B = backend(name)
    findings = _findings(cubic_with_extra_exp(B, extra_only=False), (_inputs(B, 13),))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    params = findings[0].params
    assert params["variant"] == "coefficient" and params["coefficient"] == -1.0 and params["factor"] == 0.0
    assert "extra term" in findings[0].message and "exp" in params["term"]


@pytest.mark.parametrize("name", BACKENDS)
def test_an_extra_term_beside_the_right_one_is_named_too(name):
    B = backend(name)
    findings = _findings(cubic_with_extra_exp(B, extra_only=True), (_inputs(B, 13),))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    assert findings[0].params["factor"] == 0.0 and findings[0].params["coefficient"] == -1.0


# ----- a term over a name's square, with grad_output reassigned ---------------------------------------
def projection_without_norm_term(B):
    class ProjectionWithoutNormTerm(B.Function):
        """Per row, f = (a·b)/|a|; backward for a keeps b/|a| and drops −f·a/|a|² (the norm's own
        derivative); b's gradient is right. grad_output is reassigned to a column first."""

        @staticmethod
        def forward(ctx, a, b):
            na = (a * a).sum(1, keepdim=True).sqrt()
            f = (a * b).sum(1, keepdim=True) / na
            ctx.save_for_backward(a, b, na, f)
            return f.sum(1)

        @staticmethod
        def backward(ctx, g):
            a, b, na, f = ctx.saved_tensors
            g = g[:, None]
            grad_a = g * b / na  # misses - g * f * a / na ** 2
            grad_b = g * a / na
            return grad_a, grad_b

    return ProjectionWithoutNormTerm


@pytest.mark.parametrize("name", BACKENDS)
def test_a_dropped_term_over_a_square_of_a_name_is_a_named_missing_term(name):
    B = backend(name)
    args = (_inputs(B, 14), _inputs(B, 15))
    findings = _findings(projection_without_norm_term(B), args)
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    params = findings[0].params
    assert params["variant"] == "named" and params["coefficient"] == -1.0
    assert sorted(params["term"].split("/")[0].split("·")) == ["a", "f", "g"] and params["term"].endswith("/na²")
    assert params["source"]["code"] == "grad_a = g * b / na"


# ----- a view reduced over the wrong axis --------------------------------------------------------------
def tripled_columns(B, right):
    class TripledColumns(B.Function):
        """Each column repeated 3 times side by side, (n, w) -> (n, 3w); backward sums a view whose
        axes are (copy, column) where the copies are adjacent: (column, copy)."""

        @staticmethod
        def forward(ctx, x):
            return B.ns.stack([x, x, x], dim=2).reshape(x.shape[0], 3 * x.shape[1])

        @staticmethod
        def backward(ctx, g):
            n, width = g.shape
            if right:
                return g.reshape(n, width // 3, 3).sum(2)
            return g.reshape(n, 3, width // 3).sum(1)  # the tiling axis, not the copies'

    return TripledColumns


@pytest.mark.parametrize("name", BACKENDS)
def test_a_view_reduced_over_the_wrong_axis_is_a_wrong_axis(name):
    B = backend(name)
    x = _inputs(B, 16)
    assert gradcheck(tripled_columns(B, right=True).apply, (x,)).ok
    findings = _findings(tripled_columns(B, right=False), (x,))
    assert [(f.input, f.kind) for f in findings] == [(0, "wrong_axis")], findings
    params = findings[0].params
    assert params["dims"] == [1] and params["expected_dims"] == [2] and params["layout"] == [3, 4, 3]
    assert params["source"]["code"] == "return g.reshape(n, 3, width // 3).sum(1)"


# ----- a kernel read unflipped ---------------------------------------------------------------------------
def _full_correlate(B, grad, kernel):
    """Correlate each row of grad (n, L) with kernel (k,) over grad zero-padded by k - 1 each side."""
    k, (n, length) = kernel.shape[0], grad.shape
    pad = B.ns.zeros((n, k - 1), dtype=grad.dtype)
    padded = B.ns.cat([pad, grad, pad], dim=1)
    return sum(kernel[j] * padded[:, j:j + length + k - 1] for j in range(k))


def row_correlation(B, flipped):
    class RowCorrelation(B.Function):
        """A valid correlation of each row of x (n, L) with w (3,): y[:, i] = Σ_j w[j]·x[:, i + j];
        x's gradient is the full correlation of g with the kernel flipped (given as it is: the bug)."""

        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            width = x.shape[1] - 2
            return sum(w[j] * x[:, j:j + width] for j in range(3))

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            if flipped:
                grad_x = _full_correlate(B, g, w.flip(0))
            else:
                grad_x = _full_correlate(B, g, w)  # w.flip(0) is needed
            grad_w = B.ns.stack([(g * x[:, j:j + g.shape[1]]).sum() for j in range(3)])
            return grad_x, grad_w

    return RowCorrelation


@pytest.mark.parametrize("name", BACKENDS)
def test_a_kernel_read_unflipped_is_a_missing_flip_at_that_statement(name):
    B = backend(name)
    rng = np.random.default_rng(17)
    args = (B.tensor(rng.standard_normal((2, 6))), B.tensor(np.array([0.5, -1.25, 2.0])))
    assert gradcheck(row_correlation(B, flipped=True).apply, args).ok
    findings = _findings(row_correlation(B, flipped=False), args)
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_flip")], findings
    params = findings[0].params
    assert params["variant"] == "operand" and params["dim"] == 0
    assert params["operand"] == "w" and params["source"]["code"] == "grad_x = _full_correlate(B, g, w)"


# ----- a gate held constant -----------------------------------------------------------------------------
def tanh_gate_held_constant(B):
    class TanhGateHeldConstant(B.Function):
        """x·tanh(x); backward returns g·tanh(x), the gate's own derivative x·(1 − tanh²x) dropped."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x.tanh()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.tanh()

    return TanhGateHeldConstant


@pytest.mark.parametrize("name", BACKENDS)
def test_a_gate_held_constant_is_the_product_rules_missing_half(name):
    B = backend(name)
    findings = _findings(tanh_gate_held_constant(B), (_inputs(B, 18),))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    params = findings[0].params
    assert params["variant"] == "held_constant" and params["factor"] == "x.tanh()"
    assert params["source"]["code"] == "return g * x.tanh()"


def modulated_log_loss(B):
    class ModulatedLogLoss(B.Function):
        """Per element −(1 − p)²·log p with p = sigmoid(z); backward keeps d(log p) and holds the
        modulator (1 − p)² constant."""

        @staticmethod
        def forward(ctx, z):
            p = B.ns.sigmoid(z)
            ctx.save_for_backward(p)
            return -(1 - p) ** 2 * p.log()

        @staticmethod
        def backward(ctx, g):
            (p,) = ctx.saved_tensors
            dl_dp = -(1 - p) ** 2 / p  # the modulator's own derivative dropped
            return g * dl_dp * p * (1 - p)

    return ModulatedLogLoss


@pytest.mark.parametrize("name", BACKENDS)
def test_a_modulator_held_constant_is_quoted_where_backward_writes_it(name):
    B = backend(name)
    findings = _findings(modulated_log_loss(B), (_inputs(B, 26),))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    params = findings[0].params
    assert params["variant"] == "held_constant" and params["factor"] == "(1 - p) ** 2"
    assert params["source"]["code"] == "dl_dp = -(1 - p) ** 2 / p"


# ----- a per-row loss missing a constant part ---------------------------------------------------------------
def soft_target_rows(B):
    class SoftTargetRows(B.Function):
        """Per row, −Σ_j q_j·x_j with q = 0.8·one-hot(col 0) + 0.05 (a smoothed target of 4 columns);
        backward uses 0.8·one-hot only, dropping the uniform 0.05."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            q = B.ns.tensor(np.array([0.85, 0.05, 0.05, 0.05]), dtype=x.dtype)
            return -(x * q).sum(1)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            hard = B.ns.tensor(np.array([0.8, 0.0, 0.0, 0.0]), dtype=x.dtype)
            return -g[:, None] * hard

    return SoftTargetRows


@pytest.mark.parametrize("name", BACKENDS)
def test_a_per_row_loss_missing_a_constant_term_is_a_missing_term(name):
    B = backend(name)
    findings = _findings(soft_target_rows(B), (_inputs(B, 19),))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    params = findings[0].params
    assert params["variant"] == "missing" and params["term"] == "1" and abs(params["coefficient"] + 0.05) < 1e-12


def square_then_masked(B):
    class SquareThenMasked(B.Function):
        """x²; backward computes 2x·g right, then masks it to x > 0 in a statement reassigning d."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            d = 2.0 * x * g
            d = d * (x > 0)
            return d

    return SquareThenMasked


def pair_swapped(B):
    class PairSwapped(B.Function):
        """Each pair of columns times (1, 3); backward applies the factors swapped within each pair
        (built as a (n, m, 2) array): a flip along the pair's 2 elements would fix it."""

        @staticmethod
        def forward(ctx, x):
            n, width = x.shape
            w = B.ns.tensor(np.array([1.0, 3.0]), dtype=x.dtype)
            return (x.reshape(n, width // 2, 2) * w).reshape(n, width)

        @staticmethod
        def backward(ctx, g):
            n, width = g.shape
            w = B.ns.tensor(np.array([3.0, 1.0]), dtype=g.dtype)
            d = g.reshape(n, width // 2, 2) * w
            return d.reshape(n, width)

    return PairSwapped


@pytest.mark.parametrize("name", BACKENDS)
def test_no_flip_story_from_undoing_a_reassignment_or_from_two_elements(name):
    B = backend(name)
    findings = _findings(square_then_masked(B), (_inputs(B, 20),))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    findings = _findings(pair_swapped(B), (_inputs(B, 21),))
    assert "missing_flip" not in [f.kind for f in findings], findings


# ----- a causal mask's offset off by one -----------------------------------------------------------------
def lower_triangle_products(B, offset):
    class LowerTriangleProducts(B.Function):
        """(a @ b) kept on and below the diagonal (square, 4x4); backward re-masks grad_output with
        ``triu(offset)``: offset 1 is right, 0 also zeroes the diagonal."""

        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            n = a.shape[0]
            return (a @ b).masked_fill(B.ns.ones((n, n), dtype=B.ns.bool).triu(1), 0.0)

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            n = a.shape[0]
            kept = g.masked_fill(B.ns.ones((n, n), dtype=B.ns.bool).triu(offset), 0.0)
            return kept @ b.t(), a.t() @ kept

    return LowerTriangleProducts


@pytest.mark.parametrize("name", BACKENDS)
def test_a_triangular_mask_off_by_one_diagonal_is_a_region_at_the_mask(name):
    B = backend(name)
    args = (_inputs(B, 22, (4, 4)), _inputs(B, 23, (4, 4)))
    assert gradcheck(lower_triangle_products(B, 1).apply, args).ok
    findings = _findings(lower_triangle_products(B, 0), args)
    assert [(f.input, f.kind) for f in findings] == [(0, "region"), (1, "region")], findings
    for finding in findings:
        assert finding.params["diagonal"] == 0 and finding.params["expected"] == 1
        assert finding.params["source"]["code"].startswith("kept = g.masked_fill(")


def quotient_not_squared(B):
    class QuotientNotSquared(B.Function):
        """x / (1 + |x|); backward g / (1 + |x|): the denominator differentiated as a constant."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x / (1.0 + x.abs())

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g / (1.0 + x.abs())

    return QuotientNotSquared


@pytest.mark.parametrize("name", BACKENDS)
def test_a_denominator_held_constant_is_the_quotient_rules_missing_half(name):
    B = backend(name)
    findings = _findings(quotient_not_squared(B), (_inputs(B, 24),))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    params = findings[0].params
    assert params["variant"] == "held_constant" and params["factor"] == "1.0 + x.abs()"
    assert params["role"] == "denominator" and "quotient rule" in findings[0].message
    assert params["source"]["code"] == "return g / (1.0 + x.abs())"


def zeros_written_then_reshaped(B):
    class ZerosWrittenThenReshaped(B.Function):
        """3x; backward writes g·0 into a buffer by index and returns it reshaped."""

        @staticmethod
        def forward(ctx, x):
            return x * 3.0

        @staticmethod
        def backward(ctx, g):
            n, m = g.shape
            out = B.ns.zeros((n, m), dtype=g.dtype)
            out[:, :] = g * 0.0
            return out.reshape(n, m)

    return ZerosWrittenThenReshaped


@pytest.mark.parametrize("name", BACKENDS)
def test_zeros_written_into_a_buffer_are_quoted_at_the_write(name):
    B = backend(name)
    findings = _findings(zeros_written_then_reshaped(B), (_inputs(B, 25),))
    assert [(f.input, f.kind) for f in findings] == [(0, "zero")], findings
    assert findings[0].params["returned"] == "zeros"
    assert findings[0].params["source"]["code"] == "out[:, :] = g * 0.0"
