"""The issue-17 kinds and the surrogate kinds (issue 14.4): hints quote the statement that computes
the wrong gradient, the rules stay silent where their evidence is not specific, and the CLI shows
them as a user meets them."""
from __future__ import annotations

import inspect
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner
from test_diagnosis_cases import BACKENDS, SEEDED, backend

from gradcli.check.diagnosis import operator
from gradcli.check.diagnosis import cotangents
from gradcli.check.diagnosis import diagnose
from gradcli.check.diagnosis.evidence import Evidence
from gradcli.check.gradcheck import gradcheck


def case_named(name):
    return next(c for c in SEEDED if c.name == name)


def diagnosed(name, backend_name):
    case = case_named(name)
    fn, inputs = case.build(backend(backend_name))
    report = gradcheck(fn, inputs)
    fn, inputs = case.build(backend(backend_name))
    return case, fn, diagnose(report, fn, inputs)


def source_line(fn, text):
    cls = getattr(fn, "__self__", None)
    for method in (cls.forward, cls.backward):
        lines, first = inspect.getsourcelines(method)
        for k, line in enumerate(lines):
            if text in line:
                return first + k
    raise AssertionError(text)


@pytest.mark.parametrize("backend_name", BACKENDS)
@pytest.mark.parametrize("name, advice, quoted", [
    ("term_sign: +1/x² where -1/x² is right", "flip the sign of `grad_output / (x ** 2)`",
     "return grad_output * (1 / (2 * x.sqrt()) + 1 / x ** 2)"),
    ("not_accumulated: embedding overwrites duplicates", "accumulate repeated indices",
     "grad_weight[tokens] = grad_output"),
    ("missing_flip: cumsum backward without flips", "flip grad_output along dim 1",
     "return grad_output.cumsum(1)"),
    ("wrong_axis: softmax summed over dim 0", "reduce over dim 1 (forward's dim), not dim 0",
     "return y * (grad_output - (grad_output * y).sum(0, keepdim=True))"),
    ("wrong_variable: batch-norm dgamma uses x", "use (output − beta)/gamma instead of x",
     "return dx, (grad_output * x).sum(0), grad_output.sum(0)"),
    ("missing_reshape: reshape where a transpose is needed", "transpose/permute to forward's layout",
     "grad_x = grad_output.reshape(3, 4) * w"),
    ("inplace: saved exp changed by sub_", "modify a copy", "return e.sub_(1)"),
    ("inplace: saved output shifted by add_", "modify a copy", "y.add_(1.0)"),
    ("straight_through: round", "if this surrogate is intended, declare it with `surrogate = True`",
     "return grad_output"),
    ("gradient_reversal: lambda 0.5", "if this surrogate is intended, declare it with `surrogate = True`",
     "return -0.5 * grad_output"),
])
def test_hint_quotes_the_statement_that_computes_the_gradient(name, advice, quoted, backend_name):
    case, fn, findings = diagnosed(name, backend_name)
    mine = [f for f in findings if f.input == case.input]
    assert [f.kind for f in mine] == [case.kind]
    assert mine[0].hint.startswith(advice), mine[0].hint
    source = mine[0].params["source"]
    assert source["code"] == quoted
    assert source["line"] == source_line(fn, quoted)


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_attention_missing_its_scale_is_a_factor_for_q_and_k_and_v_is_not_blamed(backend_name):
    _, _, findings = diagnosed("scale: attention missing 1/sqrt(d)", backend_name)
    assert [(f.kind, f.input, f.params["factor"]) for f in findings] == [("scale", 0, 2.0), ("scale", 1, 2.0)]


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_saved_tensor_changed_after_saving_names_the_function_and_the_versions(backend_name):
    _, _, (finding,) = diagnosed("inplace: saved exp changed by sub_", backend_name)
    assert finding.params["saved"] == [{"function": "ExpM1InPlace", "saved": 0, "at_save": 0, "at_return": 1}]
    assert finding.message.startswith("ExpM1InPlace.forward changes saved tensor 0 in place after save_for_backward")


# ----- silence where the evidence is not specific --------------------------------------------------------
RNG = np.random.default_rng(3)
ROWS = np.concatenate([np.ones((1, 6)), RNG.standard_normal((2, 6))])


def vector_evidence(analytic, numeric, outputs=None):
    numeric = np.asarray(numeric, float)
    return Evidence(0, "x", (6,), "float64", np.asarray(analytic, float), numeric, np.zeros_like(numeric),
                    ["ones", "random", "random"], [(row,) for row in ROWS], values=RNG.standard_normal(6),
                    outputs=outputs or [np.zeros(6)])


def test_right_for_ones_alone_is_no_cotangent_story():
    permutation = [2, 0, 1, 5, 3, 4]
    inverse = np.argsort(permutation)
    numeric = ROWS[:, inverse]  # a scatter: right
    analytic = ROWS[:, permutation]  # a gather: right for ones only
    assert cotangents.ignores_grad_output(vector_evidence(analytic, numeric)) is None


def test_grad_output_reduced_to_a_scalar_is_a_cotangent_story():
    local = np.cos(np.arange(6.0))
    numeric = ROWS * local
    analytic = ROWS.mean(axis=1, keepdims=True) * local  # grad_output.mean() * local
    finding = cotangents.ignores_grad_output(vector_evidence(analytic, numeric))
    assert finding.params == {"ones_ok": True, "uses_grad_output": True, "reduced": True}


def operator_evidence(J, G, shape):
    m, n = J.shape
    ev = vector_evidence(np.zeros((3,) + shape), np.ones((3,) + shape), outputs=[np.zeros(shape)])
    ev.shape = shape
    ev.operator = lambda: (J, np.zeros_like(J), G)
    return ev


def test_a_permutation_is_not_a_cumulative_op_missing_its_flips():
    J = np.eye(6)[[2, 0, 1, 5, 3, 4]]
    ev = operator_evidence(J, J.T, (6,))
    assert operator.missing_flip(ev) is None  # P·J·P happens to equal Jᵀ here: only the transpose story holds
    assert operator.jacobian_transposed(ev).params == {"jacobian": True}


def test_wrong_axis_needs_a_coupling_along_another_axis():
    shape = (2, 3)
    J = np.kron(np.eye(2), np.full((3, 3), 1.0 / 3))  # a mean over dim 1
    G_other = np.kron(np.full((2, 2), 0.5), np.eye(3))  # a mean over dim 0
    assert operator.wrong_axis(operator_evidence(J, G_other, shape)).params == {"dims": [0], "expected_dims": [1]}
    assert operator.wrong_axis(operator_evidence(J, 2 * J, shape)) is None  # wrong, but along the right axis


def test_not_accumulated_needs_a_gather_and_a_write_into_the_gradient():
    J = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    kept_last = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    ev = operator_evidence(J, kept_last, (2,))
    ev.shape = (2,)
    ev.overwrites = lambda: True  # the source assigns into the gradient (`g[idx] = ...`)
    assert operator.not_accumulated(ev).params == {"kept": "last", "duplicates": 1}
    mixing = np.array([[1.0, 0.5], [1.0, 0.0], [0.0, 1.0]])  # an output reads two inputs: not a gather
    ev = operator_evidence(mixing, kept_last, (2,))
    ev.overwrites = lambda: True
    assert operator.not_accumulated(ev) is None
    # the same operators without a write into the gradient in the source (forward reads x twice,
    # `cat([sin x, x**3])`, and backward drops one block's term): no overwrite story
    ev = operator_evidence(J, kept_last, (2,))
    ev.overwrites = lambda: False
    assert operator.not_accumulated(ev) is None


# ----- the CLI as a user meets it ----------------------------------------------------------------------
STE = """
    from gradcli.autograd import Function


    class RoundSTE(Function):
        @staticmethod
        def forward(ctx, x):
            return x.round()

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output
"""


def test_cli_names_an_undeclared_straight_through_estimator_and_how_to_declare_it(tmp_path):
    from gradcli.cli import main

    path = tmp_path / "ste.py"
    path.write_text(textwrap.dedent(STE))
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "straight-through estimator" in text
    assert "surrogate = True" in text


# ----- the gradient statement's terms are read over a closed vocabulary ---------------------------------
def backward_of(source):
    import ast

    from gradcli.check.diagnosis.source import Source

    text = textwrap.dedent(source)
    return Source(file="f.py", first_line=1, text=text, tree=ast.parse(text).body[0])


def test_terms_of_the_gradient_statement_are_evaluated_with_saved_tensors_and_ctx_attributes():
    from gradcli.check.diagnosis.backward_terms import gradient_terms

    src = backward_of("""
        def backward(ctx, grad_output):
            x, y = ctx.saved_tensors
            d = x.exp() - ctx.k * y
            return grad_output * d / 2
    """)
    x, y, v = np.array([0.5, -1.0]), np.array([2.0, 3.0]), np.array([1.5, -0.5])
    _, terms = gradient_terms(src, 0, [(v,)], ["grad_output"], [x, y], {"k": 4.0})
    assert [code for code, _ in terms] == ["grad_output * x.exp() / 2", "-grad_output * ctx.k * y / 2"]
    np.testing.assert_allclose(terms[0][1][0], v * np.exp(x) / 2)
    np.testing.assert_allclose(terms[1][1][0], -v * 4.0 * y / 2)


@pytest.mark.parametrize("statement", ["return grad_output * (foo(x) + x[x > 0] + x)",
                                       "return grad_output * (x.unknown() + x[x > 0])", "return grad_output * x.exp()"])
def test_terms_are_not_read_with_two_terms_outside_the_vocabulary_or_from_a_single_term(statement):
    from gradcli.check.diagnosis.backward_terms import gradient_terms

    src = backward_of(f"""
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            {statement}
    """)
    assert gradient_terms(src, 0, [(np.ones(2),)], ["grad_output"], [np.ones(2)], {}) is None


@pytest.mark.parametrize("unknown", ["foo(x)", "x[x > 0]", "x.unknown()", "F.one_hot(t, 3)"])
def test_one_term_outside_the_vocabulary_is_left_for_the_residual(unknown):
    from gradcli.check.diagnosis.backward_terms import gradient_terms

    src = backward_of(f"""
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * ({unknown} - 2 * x)
    """)
    v, x = np.array([1.5, -0.5]), np.array([0.25, 3.0])
    _, terms = gradient_terms(src, 0, [(v,)], ["grad_output"], [x], {})
    assert [code for code, _ in terms] == [f"grad_output * {unknown}", "-grad_output * 2 * x"]
    assert terms[0][1] == [None]
    np.testing.assert_allclose(terms[1][1][0], -2 * v * x)


def test_reductions_matmul_transpose_and_basic_indexing_are_in_the_vocabulary():
    from gradcli.check.diagnosis.backward_terms import gradient_terms

    src = backward_of("""
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g @ y.t() + y.exp() * g.sum(dim=1, keepdim=True) - torch.softmax(y, dim=-1) * g[:, None].mean(0)
    """)
    g = np.array([[1.0, 2.0], [3.0, -1.0]])
    y = np.array([[0.5, -0.25], [1.0, 2.0]])
    _, terms = gradient_terms(src, 0, [(g,)], ["g"], [y], {})
    assert len(terms) == 3
    np.testing.assert_allclose(terms[0][1][0], g @ y.T)
    np.testing.assert_allclose(terms[1][1][0], np.exp(y) * g.sum(1, keepdims=True))
    softmax = np.exp(y) / np.exp(y).sum(-1, keepdims=True)
    np.testing.assert_allclose(terms[2][1][0], -softmax * g[:, None].mean(0))


def test_literal_indices_slices_mm_and_a_keyword_norm_are_in_the_vocabulary():
    from gradcli.check.diagnosis.backward_terms import gradient_terms

    src = backward_of("""
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g[:, 0:1] * y[:, -1:] + g.mm(y.t()) + g[:, ::2].sum(1, keepdim=True) * y.norm(dim=1, keepdim=True)
    """)
    g = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 2.0]])
    y = np.array([[0.5, -0.25, 1.5], [1.0, 2.0, -3.0]])
    _, terms = gradient_terms(src, 0, [(g,)], ["g"], [y], {})
    assert len(terms) == 3
    np.testing.assert_allclose(terms[0][1][0], g[:, 0:1] * y[:, -1:])
    np.testing.assert_allclose(terms[1][1][0], g @ y.T)
    np.testing.assert_allclose(terms[2][1][0], g[:, ::2].sum(1, keepdims=True) * np.sqrt((y * y).sum(1, keepdims=True)))
