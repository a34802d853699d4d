"""Issue 17: the kind-agnostic search (``diagnosis/rewrites.py``) — one edit of backward's own
code (or of a helper in its file, or of what forward saves) that makes the gradient exact, found
by re-running it; each case a small Function of its own, on both backends.

The Functions' backwards use only tensor methods and module-level helpers (no closure), as a
user's file has them: a closure cannot be recompiled on its own and is left to the other rules.
"""
from __future__ import annotations

import inspect
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_diagnosis_cases import backend  # noqa: E402

from gradcli.check.diagnosis import diagnose, rewrites  # noqa: E402
from gradcli.check.gradcheck import gradcheck  # noqa: E402

BACKENDS = ["gradcli", "torch"]


def _findings(cls, args):
    report = gradcheck(cls.apply, args)
    assert not report.ok
    return diagnose(report, cls.apply, args)


def _line(obj, text):
    lines, first = inspect.getsourcelines(obj)
    return next(first + k for k, line in enumerate(lines) if text in line)


# ----- a sign inside a helper of the same file --------------------------------------------------
def _layer_norm_input_grad(g, xhat, rstd, gamma):
    n = xhat.shape[-1]
    dxhat = g * gamma
    inner = dxhat.sum(-1, keepdim=True)
    return rstd / n * (n * dxhat - inner + xhat * (dxhat * xhat).sum(-1, keepdim=True))


def layer_norm(B):
    class LayerNormByHelper(B.Function):
        @staticmethod
        def forward(ctx, x, gamma):
            mu = x.mean(-1, keepdim=True)
            var = ((x - mu) ** 2).mean(-1, keepdim=True)
            rstd = 1 / (var + 1e-5).sqrt()
            xhat = (x - mu) * rstd
            ctx.save_for_backward(xhat, rstd, gamma)
            return xhat * gamma

        @staticmethod
        def backward(ctx, g):
            xhat, rstd, gamma = ctx.saved_tensors
            return _layer_norm_input_grad(g, xhat, rstd, gamma), (g * xhat).sum(0)

    return LayerNormByHelper


@pytest.mark.parametrize("name", BACKENDS)
def test_the_sign_of_one_term_in_a_helper_is_found_and_quoted_there(name):
    B = backend(name)
    rng = np.random.default_rng(3)
    cls = layer_norm(B)
    findings = _findings(cls, (B.tensor(rng.standard_normal((3, 5))), B.tensor(rng.uniform(0.5, 1.5, 5))))
    assert [(f.input, f.kind) for f in findings] == [(0, "term_sign")], findings
    finding = findings[0]
    line = _line(_layer_norm_input_grad, "return rstd / n")
    assert finding.params["source"]["line"] == line
    assert finding.params["source"]["file"] == os.path.abspath(__file__)
    assert finding.params["term"] == "xhat * (dxhat * xhat).sum(-1, keepdim=True)"
    assert "flip the sign of `xhat * (dxhat * xhat).sum(-1, keepdim=True)`" in finding.hint
    assert f"test_diagnosis_one_edit.py:{line}" in finding.hint
    assert globals()["_layer_norm_input_grad"].__code__.co_filename == os.path.abspath(__file__)  # put back
    assert inspect.getsource(globals()["_layer_norm_input_grad"]).count("+ xhat") == 1


# ----- forward saves the wrong tensor ----------------------------------------------------------
def sigmoid_saving_input(B):
    class SigmoidSavesInput(B.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.sigmoid()
            ctx.save_for_backward(x)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y * (1 - y)

    return SigmoidSavesInput


@pytest.mark.parametrize("name", BACKENDS)
def test_forward_saving_its_input_where_backward_needs_its_output_is_quoted_where_backward_reads_it(name):
    B = backend(name)
    cls = sigmoid_saving_input(B)
    backward, forward = cls.__dict__["backward"], cls.__dict__["forward"]
    args = (B.tensor(np.random.default_rng(4).standard_normal((3, 4))),)
    # the formula rules name it first ("x where the output is needed"); the saved-tensor search,
    # tried after every other rule, says where the wrong tensor comes from
    assert [f.kind for f in _findings(cls, args)] == ["wrong_variable"]
    diag, ev = _diagnosis_and_evidence(cls, args)
    finding = rewrites.search(diag.probe, diag.cls, ev, diag.executed, 0, saves=True)
    assert finding.kind == "wrong_variable"
    assert (finding.params["used"], finding.params["needed"], finding.params["read_as"]) == ("x", "y", "y")
    assert finding.params["at_line"] == _line(cls, "return g * y * (1 - y)")
    assert finding.params["advice"] == "save y instead of x in forward (read as y here)"
    assert "which forward saves from `x` where `y` is needed" in finding.message
    assert cls.__dict__["backward"] is backward and cls.__dict__["forward"] is forward  # put back


def _diagnosis_and_evidence(cls, args):
    from gradcli.check.diagnosis import _Diagnosis

    diag = _Diagnosis(gradcheck(cls.apply, args), cls.apply, args)
    return diag, diag._evidence()[0]


# ----- a loop over time: one term's sign inside it ---------------------------------------------
def decayed_sum(B):
    class DecayedRunningSum(B.Function):
        """out[:, t] = sum_{s <= t} 0.5^(t - s) x[:, s] - 0.25 x[:, t]."""

        @staticmethod
        def forward(ctx, x):
            outs, running = [], x[:, 0] * 0
            for t in range(x.shape[1]):
                running = 0.5 * running + x[:, t]
                outs.append(running - 0.25 * x[:, t])
            ctx.steps = x.shape[1]
            return B.ns.stack(outs, 1)

        @staticmethod
        def backward(ctx, g):
            grads, carry = [], g[:, 0] * 0
            for t in reversed(range(ctx.steps)):
                carry = 0.5 * carry + g[:, t]
                grads.append(carry + 0.25 * g[:, t])
            return _stack_columns(grads[::-1])

    return DecayedRunningSum


def _stack_columns(rows):
    import gradcli

    ns = sys.modules["torch"] if type(rows[0]).__module__.startswith("torch") else gradcli
    return ns.stack(rows, 1)


@pytest.mark.parametrize("name", BACKENDS)
def test_a_sign_inside_a_loop_over_time_is_found_and_the_list_it_builds_is_never_given_to_itself(name):
    B = backend(name)
    cls = decayed_sum(B)
    findings = _findings(cls, (B.tensor(np.random.default_rng(5).standard_normal((2, 4))),))
    assert [(f.input, f.kind) for f in findings] == [(0, "term_sign")], findings
    assert findings[0].params["source"]["line"] == _line(cls, "grads.append(carry + 0.25 * g[:, t])")
    assert findings[0].params["term"] == "0.25 * g[:, t]"


# ----- the guards -------------------------------------------------------------------------------
def test_a_whole_gradient_off_by_a_factor_is_left_to_the_scale_rule():
    B = backend("gradcli")

    class Doubled(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x  # d(x²) = 2x: the factor is the whole gradient's, no term's

    findings = _findings(Doubled, (B.tensor(np.random.default_rng(6).standard_normal(5)),))
    assert [(f.kind, f.params.get("factor")) for f in findings] == [("scale", 0.5)]
    args = (B.tensor(np.random.default_rng(6).standard_normal(5)),)
    assert rewrites._proportional(_diagnosis_and_evidence(Doubled, args)[1])


def test_a_closure_backward_is_not_recompiled():
    B = backend("gradcli")
    factor = 3.0

    class Closure(B.Function):
        @staticmethod
        def forward(ctx, x):
            return x * factor

        @staticmethod
        def backward(ctx, g):
            return g * factor - g

    assert rewrites._method(Closure, "backward") is None
    assert rewrites._targets(Closure, None, 0) == []


# ----- kernels, carried terms, masks --------------------------------------------------------------
def _full_correlation(dy, weight):
    import torch.nn.functional as F

    k = weight.shape[-1]
    return F.conv2d(F.pad(dy, (k - 1, k - 1, k - 1, k - 1)), weight.transpose(0, 1))


def _conv2d(x, weight):
    import torch.nn.functional as F

    return F.conv2d(x, weight)


class _Conv2dUnflipped:
    @staticmethod
    def build():
        import torch

        class Conv2dKernelNotRotated(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, weight):
                ctx.save_for_backward(x, weight)
                return _conv2d(x, weight)

            @staticmethod
            def backward(ctx, dy):  # no closure (torch is build's local): it can be recompiled
                x, weight = ctx.saved_tensors
                dx = _full_correlation(dy, weight)
                dw = _conv2d(x.transpose(0, 1), dy.transpose(0, 1)).transpose(0, 1)
                return dx, dw

        return Conv2dKernelNotRotated


def test_a_full_2d_correlation_with_the_kernel_unrotated_is_a_missing_flip_at_the_conv_call():
    torch = pytest.importorskip("torch")
    cls = _Conv2dUnflipped.build()
    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, 1, 5, 5, dtype=torch.float64, generator=g, requires_grad=True)
    w = torch.randn(1, 1, 3, 3, dtype=torch.float64, generator=g, requires_grad=True)
    findings = _findings(cls, (x, w))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_flip")], findings
    finding = findings[0]
    assert (finding.params["operand"], finding.params["dims"], finding.params["flipped"]) == \
        ("weight.transpose(0, 1)", [-2, -1], False)
    assert finding.params["source"]["line"] == _line(_full_correlation, "return F.conv2d")
    assert finding.hint.startswith("flip `weight.transpose(0, 1)` along dims -2, -1 in `return F.conv2d(")


def running_sum_without_carry(B):
    class RunningSumNoCarry(B.Function):
        """out[:, t] = x[:, t] + 0.5 out[:, t - 1]; backward forgets what later steps carry back."""

        @staticmethod
        def forward(ctx, x):
            out = x.clone()
            for t in range(1, x.shape[1]):
                out[:, t] = x[:, t] + 0.5 * out[:, t - 1]
            return out

        @staticmethod
        def backward(ctx, g):
            dx = g * 0
            for t in range(g.shape[1]):
                dx[:, t] = g[:, t]
            return dx

    return RunningSumNoCarry


@pytest.mark.parametrize("name", BACKENDS)
def test_contributions_dropped_by_a_missing_carried_term_are_no_overwrite(name):
    # the operator sees "some contributions kept, the others dropped" — what an overwrite does,
    # and what a carried term left out of a loop does too; with nothing that adds them back the
    # index writes are no evidence, and the diagnosis does not claim `not_accumulated`
    B = backend(name)
    cls = running_sum_without_carry(B)
    findings = _findings(cls, (B.tensor(np.random.default_rng(8).standard_normal((2, 5))),))
    assert "not_accumulated" not in [f.kind for f in findings], findings


def masked_energy(B):
    class CutoffEnergy(B.Function):
        """0.5 Σ q d² over the pairs inside the cutoff (d < 1.2), 0 outside."""

        @staticmethod
        def forward(ctx, d, q):
            inside = (d < 1.2) * 1.0
            near = (d < 2.0) * 1.0
            ctx.save_for_backward(d, q, inside, near)
            return (0.5 * q * d * d * inside).sum()

        @staticmethod
        def backward(ctx, g):
            d, q, inside, near = ctx.saved_tensors
            dd = g * q * d * near
            return dd, g * 0.5 * d * d * inside

    return CutoffEnergy


@pytest.mark.parametrize("name", BACKENDS)
def test_one_mask_read_where_another_is_needed_is_a_region(name):
    B = backend(name)
    cls = masked_energy(B)
    d = B.tensor(np.array([0.3, 0.9, 1.5, 1.7, 2.5, 0.6, 1.9, 1.1]))
    q = B.tensor(np.random.default_rng(9).uniform(0.5, 1.5, 8))
    findings = _findings(cls, (d, q))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    assert (findings[0].params["used"], findings[0].params["needed"]) == ("near", "inside")
    assert findings[0].params["source"]["line"] == _line(cls, "dd = g * q * d * near")


def leaky_slope(B):
    class LeakySlopeWrongBranch(B.Function):
        """PReLU with a learned slope; the slope's gradient collected on the positive side."""

        @staticmethod
        def forward(ctx, x, slope):
            ctx.save_for_backward(x, slope)
            return B.ns.where(x > 0, x, slope * x)

        @staticmethod
        def backward(ctx, g):
            x, slope = ctx.saved_tensors
            dx = _where(x > 0, g, slope * g)
            dslope = _where(x > 0, x * g, x * 0).sum(0)
            return dx, dslope

    return LeakySlopeWrongBranch


def _where(condition, a, b):
    return condition * a + (~condition) * b


@pytest.mark.parametrize("name", BACKENDS)
def test_a_where_with_its_branches_exchanged_in_a_helper_is_a_region(name):
    B = backend(name)
    rng = np.random.default_rng(10)
    cls = leaky_slope(B)
    x = B.tensor(rng.standard_normal((4, 3)))
    slope = B.tensor(rng.uniform(0.1, 0.3, 3))
    findings = _findings(cls, (x, slope))
    assert [(f.input, f.kind) for f in findings] == [(1, "region")], findings
    assert findings[0].params["source"]["line"] == _line(cls, "dslope = _where(x > 0, x * g, x * 0).sum(0)")


def target_column(B):
    class TargetColumnReplaced(B.Function):
        """out = Σ_j x_ij − 2 x_i,t(i): backward writes the target column with `scatter_`, and its
        value forgets the 1 the row already holds there (no index repeats: no overwrite)."""

        @staticmethod
        def forward(ctx, x, target):
            ctx.save_for_backward(x, target)
            return x.sum(1) - 2 * x.gather(1, target[:, None])[:, 0]

        @staticmethod
        def backward(ctx, g):
            x, target = ctx.saved_tensors
            grad = x * 0 + 1
            grad.scatter_(1, target[:, None], (x * 0 - 2).gather(1, target[:, None]))
            return grad * g[:, None], None

    return TargetColumnReplaced


def test_adding_where_one_value_per_row_is_written_is_no_overwrite():
    torch = pytest.importorskip("torch")
    cls = target_column(backend("torch"))
    x = torch.randn(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(11), requires_grad=True)
    target = torch.tensor([0, 3, 3, 1])
    findings = _findings(cls, (x, target))
    assert "not_accumulated" not in [f.kind for f in findings], findings


# ----- a factor per row ---------------------------------------------------------------------------
def row_means(B):
    class RowMeanOverOwnLength(B.Function):
        """out[i] = mean of row i's first length[i] entries; backward divides by the padded width."""

        @staticmethod
        def forward(ctx, x, keep):
            ctx.save_for_backward(keep)
            return (x * keep).sum(1) / keep.sum(1)

        @staticmethod
        def backward(ctx, g):
            (keep,) = ctx.saved_tensors
            return g[:, None] * keep / keep.shape[1], None

    return RowMeanOverOwnLength


@pytest.mark.parametrize("name", BACKENDS)
def test_a_mean_over_the_padded_width_is_a_scale_that_differs_per_row(name):
    B = backend(name)
    x = B.tensor(np.random.default_rng(12).standard_normal((3, 4)))
    keep = B.ns.tensor(np.array([[1.0, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0]]))
    findings = _findings(row_means(B), (x, keep))
    assert [(f.input, f.kind) for f in findings] == [(0, "scale")], findings
    assert findings[0].params["factors"] == [1.0, 0.5, 0.75] and findings[0].params["axis"] == 0
    assert "×1, 0.5, 0.75" in findings[0].message


# ----- forward's sum with one term's derivative left out -------------------------------------------
def log_cosh(B):
    class LogCoshAbsOnly(B.Function):
        """log cosh x = |x| + log(1 + exp(−2|x|)) − log 2; backward differentiates |x| alone."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.abs() + (1 + (-2 * x.abs()).exp()).log() - LOG_2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.sign()

    return LogCoshAbsOnly


LOG_2 = 0.6931471805599453


@pytest.mark.parametrize("name", BACKENDS)
def test_a_forward_term_whose_derivative_backward_leaves_out_is_a_missing_term(name):
    B = backend(name)
    x = B.tensor(np.random.default_rng(13).uniform(-2, 2, (3, 4)))
    findings = _findings(log_cosh(B), (x,))
    assert [(f.input, f.kind) for f in findings] == [(0, "missing_term")], findings
    assert findings[0].params["variant"] == "forward_term"
    assert findings[0].params["forward_term"] == "(1 + (-2 * x.abs()).exp()).log()"


def product_grads_swapped(B):
    class ProductGradsSwapped(B.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            da = g * b
            db = g * a
            return db, da

    return ProductGradsSwapped


@pytest.mark.parametrize("name", BACKENDS)
def test_swapped_returns_are_located_at_the_return_and_the_search_alone_edits_a_statement(name):
    B = backend(name)
    rng = np.random.default_rng(14)
    cls = product_grads_swapped(B)
    args = (B.tensor(rng.standard_normal(5)), B.tensor(rng.standard_normal(5)))
    assert [(f.input, f.kind) for f in _findings(cls, args)] == [(0, "swapped"), (1, "swapped")]
    diag, ev = _diagnosis_and_evidence(cls, args)
    # alone, the search finds no "db where da" in the return (that is `swapped`'s, which runs
    # first); the one edit left is an operand of db's own statement (a's gradient right with it)
    found = rewrites.search(diag.probe, diag.cls, ev, diag.executed, 0)
    assert found.params["at_line"] == _line(cls, "db = g * a")
    line, lines, written = rewrites.locate(diag.probe, diag.cls, ev, "swapped", diag.executed, 0)
    assert line == _line(cls, "return db, da") and written
