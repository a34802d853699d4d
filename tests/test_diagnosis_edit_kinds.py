"""Issue 17, fourth pass: the mistake classes the held-out corpus showed the rules missing or
misnaming, each reproduced with a small Function of its own (not the corpus's), with exact
expectations on both backends:

- a batched square operand used untransposed (``h @ b`` for ``h @ b.mT``): ``transposed``, not
  the coupling-axes ``wrong_axis``;
- a tensor replaced by a lower-rank one that broadcasts (a per-column weight), by another saved
  tensor, and a name backward recomputes where the saved tensor is needed: ``wrong_variable``;
- the sign of one term nested in a product, and of a term holding a module-level constant:
  ``term_sign``;
- a term missing in one branch of a ``where``, and the product rule's other half (the same
  statements with an operand transposed): ``missing_term``;
- a gradient with an extra dim whose sum is right: ``not_reduced``;
- a cotangent weighted by exp(−x) where exp(−y) is needed: ``wrong_variable`` (scaled cotangent);
- the evaluator's einsum / one_hot / transpose vocabulary.
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
SHIFT = 0.7  # a module-level constant a backward reads


def _diagnose(cls, args, **options):
    report = gradcheck(cls.apply, args, **options)
    assert not report.ok
    return diagnose(report, cls.apply, args)


def _line_of(cls, text):
    lines, first = inspect.getsourcelines(cls)
    return next(first + k for k, line in enumerate(lines) if text in line)


def _only(findings, index):
    found = [f for f in findings if f.input == index]
    assert len(found) == 1, findings
    return found[0]


# ----- transposed: a batched square operand ------------------------------------------------------
def batched_tanh_product(B, right):
    class BatchedTanhProduct(B.Function):
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
            return da, a.transpose(-2, -1) @ h

    class Fixed(BatchedTanhProduct):
        @staticmethod
        def backward(ctx, g):
            a, b, y = ctx.saved_tensors
            h = g * (1 - y * y)
            return h @ b.transpose(-2, -1), a.transpose(-2, -1) @ h

    return Fixed if right else BatchedTanhProduct


@pytest.mark.parametrize("name", BACKENDS)
def test_a_batched_square_operand_used_untransposed_is_transposed_not_a_wrong_axis(name):
    B = backend(name)
    rng = np.random.default_rng(31)
    args = (B.tensor(rng.standard_normal((2, 3, 3))), B.tensor(rng.standard_normal((2, 3, 3))))
    cls = batched_tanh_product(B, right=False)
    finding = _only(_diagnose(cls, args), 0)
    assert finding.kind == "transposed"
    assert (finding.params["operand"], finding.params["expected"]) == ("b", "b.mT")
    assert finding.params["source"]["line"] == _line_of(cls, "da = h @ b")
    assert gradcheck(batched_tanh_product(B, right=True).apply, args).ok  # the edit named is the fix


# ----- wrong_variable: a lower-rank tensor, another saved tensor, a recomputed name ---------------
def column_gain(B, right):
    class ColumnGainTanh(B.Function):
        @staticmethod
        def forward(ctx, x, w):
            y = (x * w).tanh()
            ctx.save_for_backward(x, w, y)
            return y

        @staticmethod
        def backward(ctx, g):
            x, w, y = ctx.saved_tensors
            dx = g * (1 - y * y) * x
            return dx, (g * (1 - y * y) * x).sum(0)

    class Fixed(ColumnGainTanh):
        @staticmethod
        def backward(ctx, g):
            x, w, y = ctx.saved_tensors
            return g * (1 - y * y) * w, (g * (1 - y * y) * x).sum(0)

    return Fixed if right else ColumnGainTanh


@pytest.mark.parametrize("name", BACKENDS)
def test_a_per_column_weight_replaced_by_the_input_is_a_wrong_variable(name):
    B = backend(name)
    rng = np.random.default_rng(32)
    args = (B.tensor(rng.standard_normal((3, 4))), B.tensor(rng.uniform(0.5, 1.5, 4)))
    finding = _only(_diagnose(column_gain(B, right=False), args), 0)
    assert finding.kind == "wrong_variable"
    assert (finding.params["used"], finding.params["needed"]) == ("x", "w")
    assert gradcheck(column_gain(B, right=True).apply, args).ok


def sine_and_cosine_saved(B):
    class ThreeSine(B.Function):
        @staticmethod
        def forward(ctx, x):
            s, c = x.sin(), x.cos()
            ctx.save_for_backward(s, c)
            return 3 * s

        @staticmethod
        def backward(ctx, g):
            s, c = ctx.saved_tensors
            return g * 3 * s

    return ThreeSine


@pytest.mark.parametrize("name", BACKENDS)
def test_the_wrong_one_of_two_saved_tensors(name):
    B = backend(name)
    args = (B.tensor(np.random.default_rng(33).uniform(0.2, 1.4, (3, 4))),)
    cls = sine_and_cosine_saved(B)
    (finding,) = _diagnose(cls, args)
    assert finding.kind == "wrong_variable"
    assert (finding.params["used"], finding.params["needed"]) == ("s", "c")
    assert finding.hint.startswith("use c instead of s in `return g * 3 * s`")


def recomputed_gate(B):
    class SharpSigmoid(B.Function):
        @staticmethod
        def forward(ctx, x):
            gate = (2 * x).sigmoid()
            ctx.save_for_backward(x, gate)
            return gate * 5

        @staticmethod
        def backward(ctx, g):
            x, _ = ctx.saved_tensors
            gate = x.sigmoid()
            return g * 10 * gate * (1 - gate)

    return SharpSigmoid


@pytest.mark.parametrize("name", BACKENDS)
def test_a_name_recomputed_in_backward_where_the_saved_tensor_is_needed(name):
    B = backend(name)
    args = (B.tensor(np.random.default_rng(34).standard_normal((3, 4))),)
    cls = recomputed_gate(B)
    (finding,) = _diagnose(cls, args)
    assert finding.kind == "wrong_variable"
    assert finding.params["used"] == "gate"
    assert finding.params["needed"] == "ctx.saved_tensors[1]"  # `_` is named by its place
    assert finding.params["source"]["line"] == _line_of(cls, "gate = x.sigmoid()")


# ----- term_sign: nested in a product; holding a module constant ----------------------------------
def x_tanh(B, sign):
    class XTanh(B.Function):
        @staticmethod
        def forward(ctx, x):
            t = x.tanh()
            ctx.save_for_backward(x, t)
            return x * t

        @staticmethod
        def backward(ctx, g):
            x, t = ctx.saved_tensors
            return g * (t - x * (1 - t * t))

    class Fixed(XTanh):
        @staticmethod
        def backward(ctx, g):
            x, t = ctx.saved_tensors
            return g * (t + x * (1 - t * t))

    return Fixed if sign > 0 else XTanh


@pytest.mark.parametrize("name", BACKENDS)
def test_the_sign_of_one_term_nested_in_a_product(name):
    B = backend(name)
    args = (B.tensor(np.random.default_rng(35).standard_normal((3, 4))),)
    (finding,) = _diagnose(x_tanh(B, -1), args)
    assert finding.kind == "term_sign"
    assert finding.params["term"] == "x * (1 - t * t)"
    assert gradcheck(x_tanh(B, 1).apply, args).ok


def shifted_decay(B):
    class ShiftedDecay(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (-SHIFT * x).exp() + x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (SHIFT * (-SHIFT * x).exp() + 2 * x)

    return ShiftedDecay


@pytest.mark.parametrize("name", BACKENDS)
def test_the_sign_of_a_term_with_a_module_level_constant(name):
    B = backend(name)
    args = (B.tensor(np.random.default_rng(36).standard_normal((3, 4))),)
    (finding,) = _diagnose(shifted_decay(B), args)
    assert finding.kind == "term_sign"
    assert finding.params["term"] == "g * SHIFT * (-SHIFT * x).exp()"  # the statement's terms, distributed


# ----- missing_term: one branch; the product rule's other half -------------------------------------
def square_or_line(B, right):
    class SquareOrLine(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return B.ns.where(x > 0, x * x + x, 2 * x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return B.ns.where(x > 0, g * 2 * x, 2 * g)

    class Fixed(SquareOrLine):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return B.ns.where(x > 0, g * (2 * x + 1), 2 * g)

    return Fixed if right else SquareOrLine


@pytest.mark.parametrize("name", BACKENDS)
def test_a_term_missing_in_one_branch_is_a_missing_term_not_a_region(name):
    B = backend(name)
    rng = np.random.default_rng(37)
    x = rng.uniform(0.3, 2.0, (3, 4)) * np.where(rng.random((3, 4)) > 0.5, 1, -1)
    args = (B.tensor(x),)
    (finding,) = _diagnose(square_or_line(B, right=False), args)
    assert finding.kind == "missing_term"
    assert {k: finding.params[k] for k in ("term", "coefficient", "region")} == {
        "term": "1", "coefficient": 1.0, "region": "x > 0"}
    assert gradcheck(square_or_line(B, right=True).apply, args).ok


def row_quadratic(B, right):
    class RowQuadratic(B.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return (x @ w * x).sum(1)

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            dx = g[:, None] * (x @ w)
            return dx, x.T @ (g[:, None] * x)

    class Fixed(RowQuadratic):
        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g[:, None] * (x @ w + x @ w.T), x.T @ (g[:, None] * x)

    return Fixed if right else RowQuadratic


@pytest.mark.parametrize("name", BACKENDS)
def test_the_product_rules_other_half_is_an_edited_copy(name):
    B = backend(name)
    rng = np.random.default_rng(38)
    args = (B.tensor(rng.standard_normal((3, 4))), B.tensor(rng.standard_normal((4, 4))))
    finding = _only(_diagnose(row_quadratic(B, right=False), args), 0)
    assert finding.kind == "missing_term"
    assert finding.params["variant"] == "edited" and finding.params["coefficient"] == 1.0
    assert finding.params["term"] == "`w` replaced by w.T"
    assert "add its copy with w.T for `w` (the product rule's other half)" in finding.hint
    assert gradcheck(row_quadratic(B, right=True).apply, args).ok


# ----- not_reduced: an extra dim -----------------------------------------------------------------
def row_bias(B):
    class RowBias(B.Function):
        @staticmethod
        def forward(ctx, x, b):
            return x + b[:, None]

        @staticmethod
        def backward(ctx, g):
            return g, g * 1.0  # the bias gradient is (3, 5): not summed over dim 1

    return RowBias


@pytest.mark.parametrize("name", BACKENDS)
def test_a_gradient_with_an_extra_dim_whose_sum_is_right(name):
    B = backend(name)
    rng = np.random.default_rng(39)
    args = (B.tensor(rng.standard_normal((3, 5))), B.tensor(rng.standard_normal(3)))
    report = gradcheck(row_bias(B).apply, args)
    assert not report.ok
    finding = _only(diagnose(report, row_bias(B).apply, args), 1)
    assert finding.kind == "not_reduced"
    assert {k: finding.params[k] for k in ("dims", "returned_shape", "expected_shape", "values_ok_once_summed")} == {
        "dims": [1], "returned_shape": [3, 5], "expected_shape": [3], "values_ok_once_summed": True}


# ----- a scaled cotangent: exp(−x) where exp(−y) ---------------------------------------------------
def _mix(h, w):
    """A helper of the user's: outside the evaluator's vocabulary, so no statement edit sees
    through it, and only the operator (G against J) shows the wrongly weighted cotangent."""
    return h @ w.T


def log_mixture(B, right):
    class LogMixture(B.Function):
        @staticmethod
        def forward(ctx, x, w):
            y = (x.exp() @ w).log()
            ctx.save_for_backward(x, w, y)
            return y

        @staticmethod
        def backward(ctx, g):
            x, w, y = ctx.saved_tensors
            h = g * (-x).exp()
            return x.exp() * _mix(h, w), x.exp().T @ (g * (-y).exp())

    class Fixed(LogMixture):
        @staticmethod
        def backward(ctx, g):
            x, w, y = ctx.saved_tensors
            h = g * (-y).exp()
            return x.exp() * (h @ w.T), x.exp().T @ h

    return Fixed if right else LogMixture


@pytest.mark.parametrize("name", BACKENDS)
def test_a_cotangent_weighted_by_exp_of_the_input_where_the_outputs_is_needed(name):
    B = backend(name)
    rng = np.random.default_rng(40)
    args = (B.tensor(rng.standard_normal((3, 4))), B.tensor(rng.uniform(0.5, 1.5, (4, 4))))
    finding = _only(_diagnose(log_mixture(B, right=False), args), 0)
    assert finding.kind == "wrong_variable"
    assert (finding.params["used"], finding.params["needed"]) == ("exp(-x)", "exp(-output)")
    assert gradcheck(log_mixture(B, right=True).apply, args).ok


# ----- the evaluator's vocabulary ------------------------------------------------------------------
def test_the_evaluator_computes_einsum_one_hot_transpose_and_permute():
    import ast

    from gradcli.check.diagnosis.calls import Unsupported
    from gradcli.check.diagnosis.evaluator import _Evaluator
    from gradcli.check.diagnosis.source import Source

    text = "def backward(ctx, g):\n    return g\n"
    src = Source(file="f.py", first_line=1, text=text, tree=ast.parse(text).body[0], constants={"K": 2.5})
    rng = np.random.default_rng(41)
    a, w = rng.standard_normal((2, 3)), rng.standard_normal((3, 3))
    t = np.array([2.0, 0.0])
    env = {"a": a, "w": w, "t": t, "z": rng.standard_normal((2, 3, 4))}

    def value(code):
        return _Evaluator(src, 10, env, [], {}).value(ast.parse(code, mode="eval").body)

    assert np.allclose(value('torch.einsum("bi,ij->bj", a, w)'), a @ w)
    assert np.array_equal(value("F.one_hot(t, 3)"), np.array([[0, 0, 1], [1, 0, 0]], dtype=float))
    assert value("z.transpose(-2, -1)").shape == (2, 4, 3)
    assert np.array_equal(value("z.permute(2, 0, 1)"), np.transpose(env["z"], (2, 0, 1)))
    assert value("K * 2") == 5.0  # a module-level number
    with pytest.raises(Unsupported):
        value('torch.einsum(spec, a, w)')  # subscripts must be a string constant
    with pytest.raises(Unsupported):
        value("F.one_hot(a, 3)")  # not class ids


# ----- a sign shared by several gradients is quoted where they share it ----------------------------
def tanh_product_plus(B):
    class TanhProductPlus(B.Function):
        @staticmethod
        def forward(ctx, x, y, z):
            t = (x * y).tanh()
            ctx.save_for_backward(x, y, t)
            return t + z

        @staticmethod
        def backward(ctx, g):
            x, y, t = ctx.saved_tensors
            dh = g * (t * t - 1)
            return dh * y, dh * x, g

    return TanhProductPlus


@pytest.mark.parametrize("name", BACKENDS)
def test_a_sign_two_gradients_share_is_quoted_at_the_statement_they_share(name):
    B = backend(name)
    rng = np.random.default_rng(42)
    args = tuple(B.tensor(rng.standard_normal((3, 4))) for _ in range(3))
    cls = tanh_product_plus(B)
    findings = _diagnose(cls, args)
    assert sorted((f.kind, f.input) for f in findings) == [("sign", 0), ("sign", 1)]
    line = _line_of(cls, "dh = g * (t * t - 1)")
    assert all(f.params["source"]["line"] == line for f in findings)
    assert findings[0].hint.startswith("check the sign in `dh = g * (t * t - 1)`")
