"""Issue 17, sixth pass: mistake classes found by re-running or re-reading the user's backward with
one edit, each reproduced with a small Function of its own, on both backends:

- index writes that overwrite where they must add (``index_writes.py``): a table lookup whose
  backward assigns ``gw[idx] = …`` (or ``gw[idx] += …``) with a repeated index, and a product of
  neighbours whose backward assigns its second half over the first (``g[1:] = …`` after
  ``g[:-1] = …``) — both ``not_accumulated``, quoting the write to fix;
- a mask with the wrong threshold: replacing the tensor a comparison reads can move the mask's
  edge onto the right one (``x > 0`` → ``output > 0`` for relu(x − 1)), but the threshold is the
  mistake, so it is a ``region``, never "x where the output is needed".
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


def _line_of(cls, text):
    lines, first = inspect.getsourcelines(cls)
    return next(first + k for k, line in enumerate(lines) if text in line)


# ----- index writes: a repeated index overwritten ---------------------------------------------------
def table_lookup(B, augmented):
    class ScaledTableLookup(B.Function):
        """out[k] = w[idx[k]] * s[k], idx repeating some entries of the table w."""

        @staticmethod
        def forward(ctx, w, s, idx):
            ctx.save_for_backward(w, s, idx)
            return w[idx] * s

        @staticmethod
        def backward(ctx, g):
            w, s, idx = ctx.saved_tensors
            gw = B.ns.zeros_like(w)
            if augmented:
                gw[idx] += g * s  # a repeated index keeps one of its writes
            else:
                gw[idx] = g * s  # a repeated index keeps one of its writes
            return gw, g * w[idx], None

    return ScaledTableLookup


@pytest.mark.parametrize("augmented", [False, True], ids=["assigned", "augmented"])
@pytest.mark.parametrize("name", BACKENDS)
def test_an_index_write_with_a_repeated_index_is_not_accumulated(name, augmented):
    B = backend(name)
    rng = np.random.default_rng(61)
    w = B.tensor(rng.uniform(0.5, 1.5, size=5))
    s = B.tensor(rng.uniform(-1.0, 1.0, size=7))
    idx = B.ns.tensor([0, 3, 3, 1, 4, 0, 3])
    cls = table_lookup(B, augmented)
    findings = _findings(cls, (w, s, idx))
    assert [(f.input, f.kind) for f in findings] == [(0, "not_accumulated")], findings
    finding = findings[0]
    line = _line_of(cls, "gw[idx] += g * s" if augmented else "gw[idx] = g * s")
    assert finding.params["at_line"] == line and finding.params["lines"] == [line]
    assert finding.params["source"]["line"] == line
    assert "index_add_" in finding.hint


def test_the_index_write_rerun_restores_setitem_and_leaves_other_code_alone():
    B = backend("gradcli")
    from gradcli.autograd.tensor import Tensor

    before = Tensor.__dict__["__setitem__"]
    rng = np.random.default_rng(62)
    args = (B.tensor(rng.uniform(0.5, 1.5, size=5)), B.tensor(rng.uniform(-1, 1, size=7)),
            B.ns.tensor([0, 3, 3, 1, 4, 0, 3]))
    _findings(table_lookup(B, False), args)
    assert Tensor.__dict__["__setitem__"] is before
    t = B.ns.zeros(4)
    t[B.ns.tensor([1, 1])] = B.tensor(np.array([2.0, 5.0]))  # outside backward: plain numpy semantics
    assert t.data.tolist() == [0.0, 5.0, 0.0, 0.0]


# ----- index writes: a second write replaces the first -------------------------------------------
def neighbour_product(B):
    class NeighbourProduct(B.Function):
        """out[i] = x[i] * x[i + 1] along dim 0."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x[:-1] * x[1:]

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            grad = B.ns.zeros_like(x)
            grad[:-1] = g * x[1:]
            grad[1:] = g * x[:-1]  # assigned: the first write's contributions to x[1:-1] are lost
            return grad

    return NeighbourProduct


@pytest.mark.parametrize("name", BACKENDS)
def test_a_second_write_over_the_first_is_not_accumulated_at_the_second(name):
    B = backend(name)
    x = B.tensor(np.random.default_rng(63).uniform(0.5, 2.0, size=(5, 3)))
    cls = neighbour_product(B)
    findings = _findings(cls, (x,))
    assert [(f.input, f.kind) for f in findings] == [(0, "not_accumulated")], findings
    line = _line_of(cls, "grad[1:] = g * x[:-1]")
    assert findings[0].params["at_line"] == line
    assert findings[0].params["source"]["line"] == line


# ----- a mask's threshold, not its tensor ----------------------------------------------------------
def shifted_relu(B):
    class ShiftedReluThresholdAtZero(B.Function):
        """relu(x − 1), whose backward tests x > 0 instead of x > 1."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x - 1).clamp(min=0)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (x > 0).to(g.dtype)  # the threshold is 1

    return ShiftedReluThresholdAtZero


@pytest.mark.parametrize("name", BACKENDS)
def test_a_wrong_threshold_is_a_region_not_the_output_for_x(name):
    B = backend(name)
    x = np.array([[-0.8, 0.3, 1.6, 2.2], [0.6, -1.4, 1.2, 0.1], [2.5, 0.8, -0.3, 1.9]])
    # the premise: with the output in x's place the mask would be exactly right
    y = np.maximum(x - 1, 0)
    assert np.array_equal(y > 0, x > 1)
    cls = shifted_relu(B)
    findings = _findings(cls, (B.tensor(x),))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    assert findings[0].params["source"]["line"] == _line_of(cls, "(x > 0)")


# ----- the evaluator reads tuple-returning calls: the sign of one term -----------------------------
def product_and_difference(B):
    torch = B.ns  # the module name backward's statements read
    class ProductAndDifferenceTermSign(B.Function):
        """out = [a·b, a − b] for the two columns a, b of p."""

        @staticmethod
        def forward(ctx, p):
            a, b = p.unbind(1)
            ctx.save_for_backward(p)
            return torch.stack([a * b, a - b], dim=1)

        @staticmethod
        def backward(ctx, grad):
            (p,) = ctx.saved_tensors
            a, b = p.unbind(1)
            g0, g1 = grad.unbind(1)
            return torch.stack([g0 * b + g1, g0 * a + g1], dim=1)  # b's column needs g0 * a - g1

    return ProductAndDifferenceTermSign


@pytest.mark.parametrize("name", BACKENDS)
def test_unbind_and_stack_are_read_so_one_terms_sign_is_found(name):
    B = backend(name)
    p = B.tensor(np.random.default_rng(64).uniform(-1.5, 1.5, size=(4, 2)))
    cls = product_and_difference(B)
    findings = _findings(cls, (p,))
    assert [(f.input, f.kind) for f in findings] == [(0, "term_sign")], findings
    assert findings[0].params["source"]["line"] == _line_of(cls, "g0 * a + g1")


# ----- a dropped term that is a longer product of backward's names ---------------------------------
def sine_and_cube(B):
    torch = B.ns  # the module name backward's statements read
    class SineAndCubeDroppedBlock(B.Function):
        """out = [sin x, x³] side by side."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.cat([x.sin(), x ** 3], dim=1)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            g_sin, g_cube = grad.chunk(2, dim=1)
            return g_sin * x.cos()  # the cube block's 3·x²·g_cube is dropped

    return SineAndCubeDroppedBlock


def ratio_to_norm(B):
    class RatioToSquaredNormDroppedTerm(B.Function):
        """r = (x·a) / (x·x) for vectors x, a; dr/dx = (a − 2·r·x) / (x·x)."""

        @staticmethod
        def forward(ctx, x, a):
            xx = x.dot(x)
            r = x.dot(a) / xx
            ctx.save_for_backward(x, a, xx, r)
            return r

        @staticmethod
        def backward(ctx, grad):
            x, a, xx, r = ctx.saved_tensors
            return grad * a / xx, grad * x / xx  # x's gradient drops −2·grad·r·x/xx

    return RatioToSquaredNormDroppedTerm


@pytest.mark.parametrize("name", BACKENDS)
def test_a_dropped_block_with_a_square_is_a_missing_term_of_backwards_names(name):
    B = backend(name)
    x = B.tensor(np.random.default_rng(65).uniform(0.4, 1.6, size=(3, 2)))
    findings = _findings(sine_and_cube(B), (x,))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    params = findings[0].params
    assert params["variant"] == "named" and params["coefficient"] == 3
    assert sorted(params["term"].split("·")) == ["g_cube", "x", "x"]


@pytest.mark.parametrize("name", BACKENDS)
def test_a_dropped_term_over_a_0d_normaliser_is_a_missing_term(name):
    B = backend(name)
    rng = np.random.default_rng(66)
    x, a = B.tensor(rng.uniform(-1, 1, size=5)), B.tensor(rng.uniform(-1, 1, size=5))
    findings = _findings(ratio_to_norm(B), (x, a))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    params = findings[0].params
    assert params["variant"] == "named" and params["coefficient"] == -2
    assert params["term"].endswith("/xx") and sorted(params["term"][:-3].split("·")) == ["grad", "r", "x"]


# ----- grad_output where the gradient through the activation is needed -----------------------------
def sigmoid_layer(B):
    class SigmoidLayerWeightSkipsActivation(B.Function):
        """y = sigmoid(x @ w)."""

        @staticmethod
        def forward(ctx, x, w):
            y = (x @ w).sigmoid()
            ctx.save_for_backward(x, w, y)
            return y

        @staticmethod
        def backward(ctx, grad):
            x, w, y = ctx.saved_tensors
            d = grad * y * (1 - y)
            return d @ w.T, x.T @ grad  # w's gradient needs x.T @ d

    return SigmoidLayerWeightSkipsActivation


@pytest.mark.parametrize("name", BACKENDS)
def test_grad_output_used_where_backwards_inner_gradient_is_needed(name):
    B = backend(name)
    rng = np.random.default_rng(67)
    args = (B.tensor(rng.standard_normal((3, 4))), B.tensor(rng.standard_normal((4, 2))))
    cls = sigmoid_layer(B)
    findings = _findings(cls, args)
    assert [(f.input, f.kind) for f in findings] == [(1, "wrong_variable")], findings
    assert findings[0].params["used"] == "grad" and findings[0].params["needed"] == "d"
    assert findings[0].params["source"]["line"] == _line_of(cls, "x.T @ grad")


# ----- one dropped output shared by two gradients, quoted where they share it ----------------------
def exp_of_product(B):
    class ExpOfProductDroppedOutput(B.Function):
        """returns (exp(a·b), a·b)."""

        @staticmethod
        def forward(ctx, a, b):
            s = a * b
            e = s.exp()
            ctx.save_for_backward(a, b, e)
            return e, s

        @staticmethod
        def backward(ctx, g_exp, g_prod):
            a, b, e = ctx.saved_tensors
            ds = g_prod  # needs g_prod + g_exp * e
            return ds * b, ds * a

    return ExpOfProductDroppedOutput


@pytest.mark.parametrize("name", BACKENDS)
def test_a_dropped_output_several_gradients_share_is_quoted_where_they_share_it(name):
    B = backend(name)
    rng = np.random.default_rng(68)
    args = (B.tensor(rng.uniform(-1, 1, size=(2, 3))), B.tensor(rng.uniform(-1, 1, size=(2, 3))))
    cls = exp_of_product(B)
    findings = _findings(cls, args)
    assert [(f.input, f.kind, f.params["variant"]) for f in findings] == [
        (0, "missing_term", "output"), (1, "missing_term", "output")], findings
    for f in findings:
        assert f.params["output"] == 0
        assert f.params["source"]["line"] == _line_of(cls, "ds = g_prod")


# ----- a sign set in a gradient built by index writes -----------------------------------------------
def weighted_difference(B):
    torch = B.ns  # the module name backward's statements read
    class WeightedDifferenceNegated(B.Function):
        """out = 3·x[:, :-1] − x[:, 1:]."""

        @staticmethod
        def forward(ctx, x):
            ctx.width = x.shape[1]
            return 3 * x[:, :-1] - x[:, 1:]

        @staticmethod
        def backward(ctx, grad):
            g = torch.zeros(grad.shape[0], ctx.width, dtype=grad.dtype)
            g[:, :-1] -= 3 * grad  # both taps' signs are swapped
            g[:, 1:] += grad
            return g

    return WeightedDifferenceNegated


@pytest.mark.parametrize("name", BACKENDS)
def test_a_sign_in_a_gradient_built_by_index_writes_is_quoted_at_the_first_write_with_a_minus(name):
    B = backend(name)
    x = B.tensor(np.random.default_rng(69).standard_normal((3, 5)))
    cls = weighted_difference(B)
    findings = _findings(cls, (x,))
    assert [(f.input, f.kind) for f in findings] == [(0, "sign")], findings
    assert findings[0].params["source"]["line"] == _line_of(cls, "g[:, :-1] -= 3 * grad")


# ----- torch's inverse read by the evaluator: a transpose ------------------------------------------
def inverse_weighted_sum(B):
    torch = B.ns  # the module name backward's statements read
    class InverseWeightedSumTransposeMissing(B.Function):
        """f(a) = sum(inv(a) ∘ c); df/da = −inv(a)ᵀ c inv(a)ᵀ."""

        @staticmethod
        def forward(ctx, a, c):
            ctx.save_for_backward(a, c)
            return (torch.inverse(a) * c).sum()

        @staticmethod
        def backward(ctx, grad):
            a, c = ctx.saved_tensors
            ainv = torch.inverse(a)
            return -grad * ainv @ c @ ainv.T, grad * ainv  # a's first factor needs ainv.T

    return InverseWeightedSumTransposeMissing


def test_inverse_is_read_so_a_missing_transpose_is_found():
    B = backend("torch")
    rng = np.random.default_rng(70)
    a = B.tensor(rng.standard_normal((4, 4)) + 4 * np.eye(4))
    c = B.tensor(rng.standard_normal((4, 4)))
    cls = inverse_weighted_sum(B)
    findings = _findings(cls, (a, c))
    assert [(f.input, f.kind) for f in findings] == [(0, "transposed")], findings
    assert findings[0].params["expected"] == "ainv.T"


# ----- a whole-tensor reduction where a per-axis one is needed -------------------------------------
def column_max_mask(B):
    class ColumnMaxMaskFromGlobalMax(B.Function):
        """out[j] = max_i x[i, j]."""

        @staticmethod
        def forward(ctx, x):
            values = x.amax(dim=0)
            ctx.save_for_backward(x, values)
            return values

        @staticmethod
        def backward(ctx, grad):
            x, values = ctx.saved_tensors
            mask = (x == x.max()).to(grad.dtype)  # each column's max: x.amax(0, keepdim=True)
            return mask * grad[None, :]

    return ColumnMaxMaskFromGlobalMax


@pytest.mark.parametrize("name", BACKENDS)
def test_a_whole_tensor_max_where_a_per_column_max_is_needed_is_a_wrong_axis(name):
    B = backend(name)
    x = np.array([[0.3, -1.2, 2.5, 0.1], [1.7, 0.4, -0.6, 0.9], [-0.8, 1.1, 0.2, 1.4]])
    cls = column_max_mask(B)
    findings = _findings(cls, (B.tensor(x),))
    assert [(f.input, f.kind) for f in findings] == [(0, "wrong_axis")], findings
    assert findings[0].params["expected_dims"] == [0]
    assert findings[0].params["source"]["line"] == _line_of(cls, "x == x.max()")


# ----- values right, laid out by tiling where interleaving is needed -------------------------------
def pair_average(B):
    class PairAverageTiledGradient(B.Function):
        """out[:, j] = (x[:, 2j] + x[:, 2j + 1]) / 2."""

        @staticmethod
        def forward(ctx, x):
            return (x[:, 0::2] + x[:, 1::2]) / 2

        @staticmethod
        def backward(ctx, grad):
            return grad.repeat(1, 2) / 2  # tiles [g0, g1, g0, g1]; needs repeat_interleave(2, dim=1)

    return PairAverageTiledGradient


@pytest.mark.parametrize("name", BACKENDS)
def test_a_tiled_gradient_of_a_window_average_is_a_missing_reshape(name):
    B = backend(name)
    x = B.tensor(np.random.default_rng(71).standard_normal((2, 6)))
    findings = _findings(pair_average(B), (x,))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_reshape")], findings
    assert findings[0].params["side"] == "result"


# ----- no approximate threshold from a chance split of few elements --------------------------------
WEIGHTS = (1.0, 0.9, 1.0, 0.9, 0.9, 1.0)


def fixed_weights(B):
    class FixedPositionWeightsIgnored(B.Function):
        """out = x ∘ c for a fixed weight vector c; backward forgets c (wrong where c = 0.9)."""

        @staticmethod
        def forward(ctx, x):
            return x * B.ns.tensor(WEIGHTS, dtype=x.dtype)

        @staticmethod
        def backward(ctx, grad):
            return grad  # times c

    return FixedPositionWeightsIgnored


@pytest.mark.parametrize("name", BACKENDS)
def test_three_of_six_elements_beside_a_threshold_at_no_simple_number_are_no_region(name):
    B = backend(name)
    # wrong where c = 0.9 (positions 1, 3, 4), whose values happen to be the three largest: a
    # threshold near 3.3 separates them, as one split in ten of 3 among 6 would by chance (the
    # outputs interleave: no threshold on them)
    x = np.array([3.05, 3.41, 3.12, 3.57, 3.32, 3.2])
    y = x * np.array(WEIGHTS)
    assert y[[1, 3, 4]].min() < y[[0, 2, 5]].max() and y[[1, 3, 4]].max() > y[[0, 2, 5]].min()
    findings = _findings(fixed_weights(B), (B.tensor(x),))
    assert [(f.input, f.kind) for f in findings] == [(0, "none")], findings


# ----- twice one term: its sign, even where the statement cannot be read ---------------------------
def _sine_minus_log_derivative(x):
    return x.cos() + 1 / x  # d/dx (sin x − log x) = cos x − 1/x


def sine_minus_log(B):
    class SineMinusLogTermSign(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin() - x.log()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * _sine_minus_log_derivative(x)  # a helper the evaluator does not read

    return SineMinusLogTermSign


def columns_unreadable(B):
    class ProductAndDifferenceUnreadable(B.Function):
        """out = [a·b, a − b]; backward written through an attribute chain the evaluator does not read."""

        @staticmethod
        def forward(ctx, p):
            a, b = p.unbind(1)
            ctx.save_for_backward(p)
            return B.ns.stack([a * b, a - b], dim=1)

        @staticmethod
        def backward(ctx, grad):
            (p,) = ctx.saved_tensors
            a, b = p.unbind(1)
            g0, g1 = grad.unbind(1)
            return B.ns.stack([g0 * b + g1, g0 * a + g1], dim=1)  # b's column needs g0 * a - g1

    return ProductAndDifferenceUnreadable


@pytest.mark.parametrize("name", BACKENDS)
def test_twice_one_elementwise_term_is_its_sign_not_an_extra_term(name):
    B = backend(name)
    x = B.tensor(np.random.default_rng(72).uniform(0.5, 2.5, size=(3, 4)))
    findings = _findings(sine_minus_log(B), (x,))
    assert [(f.input, f.kind) for f in findings] == [(0, "term_sign")], findings
    assert findings[0].params["term"] == "1 / x"  # the one edit's term, as written (rewrites.py)


@pytest.mark.parametrize("name", BACKENDS)
def test_twice_one_term_in_one_region_is_its_sign_there(name):
    B = backend(name)
    p = B.tensor(np.random.default_rng(64).uniform(-1.5, 1.5, size=(4, 2)))
    findings = _findings(columns_unreadable(B), (p,))
    assert [(f.input, f.kind) for f in findings] == [(0, "term_sign")], findings
    assert findings[0].params["term"] == "grad_output" and "column" in findings[0].params["region"]
