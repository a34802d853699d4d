"""Issue 17, tenth pass: evidence guards and mistake classes, each reproduced with a small Function
of its own, on both backends.

- A gradient returned flat whose values are right in forward's own (C) order — a per-row op
  applied to every row of a (2, 3, 4) input by flattening it to (6, 4), whose backward forgets to
  reshape the result back — is a ``missing_reshape`` (only the reshape is missing) quoted at the
  statement that computes it, never a ``transposed`` (no axis is out of order).
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


def _line_of(cls, text):
    import inspect
    lines, start = inspect.getsourcelines(cls.backward)
    return next(start + k for k, line in enumerate(lines) if text in line)


# ----- a gradient left flat ------------------------------------------------------------------------------
def rows_scaled(B, reshaped):
    class RowsScaled(B.Function):
        """Every row of x (2, 3, 4) times the column scales s (4,), by flattening to (6, 4)."""

        @staticmethod
        def forward(ctx, x, s):
            flat = x.reshape(-1, x.shape[-1])
            ctx.save_for_backward(flat, s)
            ctx.in_shape = x.shape
            return (flat * s).reshape(x.shape)

        @staticmethod
        def backward(ctx, grad):
            flat, s = ctx.saved_tensors
            g = grad.reshape(-1, grad.shape[-1])
            dx = g * s  # the gradient, flat
            if reshaped:
                dx = dx.reshape(ctx.in_shape)
            return dx, (g * flat).sum(0)

    return RowsScaled


@pytest.mark.parametrize("name", BACKENDS)
def test_a_gradient_returned_flat_is_a_missing_reshape_at_its_statement(name):
    B = backend(name)
    rng = np.random.default_rng(91)
    args = (B.tensor(rng.standard_normal((2, 3, 4))), B.tensor(rng.uniform(0.5, 2.0, size=4)))
    assert gradcheck(rows_scaled(B, True).apply, args).ok
    cls = rows_scaled(B, False)
    findings = _findings(cls, args)
    assert [(f.kind, f.input) for f in findings] == [("missing_reshape", 0)]
    f = findings[0]
    assert f.params["reshape"] == "C" and f.params["returned_shape"] == [6, 4] and f.params["side"] == "result"
    assert "shape (6, 4): reshape it to (2, 3, 4)" in f.message
    assert f.params["source"]["line"] == _line_of(cls, "dx = g * s")


# ----- the statement evaluator's vocabulary: `.mm` chains, literal indices and slices ------------------
def chain_first(B, transposed):
    class ChainFirst(B.Function):
        """y = x·p·q (a chain of `.mm` calls) with p square; x's gradient is g·qᵀ·pᵀ."""

        @staticmethod
        def forward(ctx, x, p, q):
            ctx.save_for_backward(x, p, q)
            return x.mm(p).mm(q)

        @staticmethod
        def backward(ctx, grad):
            x, p, q = ctx.saved_tensors
            grad_x = grad.mm(q.t()).mm(p.t())
            return grad_x, x.t().mm(grad).mm(q.t()), x.mm(p).t().mm(grad)

    class ChainFirstUntransposed(ChainFirst):
        @staticmethod
        def backward(ctx, grad):
            x, p, q = ctx.saved_tensors
            grad_x = grad.mm(q.t()).mm(p)  # p where p.t() is needed
            return grad_x, x.t().mm(grad).mm(q.t()), x.mm(p).t().mm(grad)

    return ChainFirstUntransposed if transposed else ChainFirst


@pytest.mark.parametrize("name", BACKENDS)
def test_an_mm_chain_with_one_operand_untransposed_is_transposed_at_that_statement(name):
    B = backend(name)
    rng = np.random.default_rng(92)
    args = tuple(B.tensor(rng.standard_normal(s)) for s in ((3, 4), (4, 4), (4, 2)))
    assert gradcheck(chain_first(B, False).apply, args).ok
    cls = chain_first(B, True)
    findings = _findings(cls, args)
    assert [(f.kind, f.input) for f in findings] == [("transposed", 0)]
    assert findings[0].params["expected"] == "p.T"
    assert findings[0].params["source"]["line"] == _line_of(cls, "grad_x = grad.mm(q.t())")


def phase_mix(B, wrong_sign):
    class PhaseMix(B.Function):
        """y_i = sin(t_i)·a_i0 + cos(t_i)·a_i1 for t (n,) and a (n, 2): the columns read by literal
        index; t's gradient g·(cos t·a0 − sin t·a1)."""

        @staticmethod
        def forward(ctx, t, a):
            ctx.save_for_backward(t, a)
            return t.sin() * a[:, 0] + t.cos() * a[:, 1]

        @staticmethod
        def backward(ctx, grad):
            t, a = ctx.saved_tensors
            a0, a1 = a[:, 0], a[:, 1]
            sign = 1.0 if wrong_sign else -1.0
            grad_t = grad * (t.cos() * a0 + sign * t.sin() * a1)  # one term's sign wrong, or right
            grad_a = B.ns.stack([grad * t.sin(), grad * t.cos()], 1)
            return grad_t, grad_a

    return PhaseMix


@pytest.mark.parametrize("name", BACKENDS)
def test_a_term_over_columns_read_by_literal_index_has_its_sign_named(name):
    B = backend(name)
    rng = np.random.default_rng(93)
    args = (B.tensor(rng.standard_normal(5)), B.tensor(rng.standard_normal((5, 2))))
    assert gradcheck(phase_mix(B, False).apply, args).ok
    cls = phase_mix(B, True)
    findings = _findings(cls, args)
    assert [(f.kind, f.input) for f in findings] == [("term_sign", 0)]
    assert "t.sin() * a1" in findings[0].message
    assert findings[0].params["source"]["line"] == _line_of(cls, "grad_t = grad * (t.cos()")


def gamma_rate(torch, wrong_sign):
    class GammaRate(torch.autograd.Function):
        """y = lgamma(a) − a·log(x) + log(a)/2; a's gradient is g·(digamma(a) − log x + 1/(2a)),
        computed in an intermediate the return multiplies by grad_output."""

        @staticmethod
        def forward(ctx, a, x):
            ctx.save_for_backward(a, x)
            return torch.lgamma(a) - a * torch.log(x) + 0.5 * torch.log(a)

        @staticmethod
        def backward(ctx, grad):
            a, x = ctx.saved_tensors
            sign = -1.0 if wrong_sign else 1.0
            grad_a = sign * torch.digamma(a) - torch.log(x) + 0.5 / a  # digamma's sign wrong, or right
            return grad * grad_a, -grad * a / x

    return GammaRate


def test_a_term_of_digamma_in_an_intermediate_has_its_sign_named():
    torch = pytest.importorskip("torch")
    B = backend("torch")
    rng = np.random.default_rng(94)
    args = (B.tensor(rng.uniform(0.8, 3.0, (3, 4))), B.tensor(rng.uniform(0.5, 2.0, (3, 4))))
    assert gradcheck(gamma_rate(torch, False).apply, args).ok
    cls = gamma_rate(torch, True)
    findings = _findings(cls, args)
    assert [(f.kind, f.input) for f in findings] == [("term_sign", 0)]
    assert "torch.digamma(a)" in findings[0].message
    assert findings[0].params["source"]["line"] == _line_of(cls, "grad_a = sign * torch.digamma(a)")


# ----- where a factor is quoted ------------------------------------------------------------------------
def half_square(B, doubled):
    class HalfSquare(B.Function):
        """y = (x − z)²/2 elementwise; z's gradient is written as −(x's gradient)."""

        @staticmethod
        def forward(ctx, x, z):
            d = x - z
            ctx.save_for_backward(d)
            return 0.5 * d * d

        @staticmethod
        def backward(ctx, grad):
            (d,) = ctx.saved_tensors
            if doubled:
                grad_x = 2 * grad * d  # a stray factor 2
                return grad_x, -grad_x / 2  # z's gradient undoes it: right
            grad_x = grad * d
            return grad_x, -grad_x

    return HalfSquare


@pytest.mark.parametrize("name", BACKENDS)
def test_a_factor_is_quoted_where_this_gradient_writes_it_not_at_another_gradients_constant(name):
    B = backend(name)
    rng = np.random.default_rng(95)
    args = (B.tensor(rng.standard_normal((3, 4))), B.tensor(rng.standard_normal((3, 4))))
    assert gradcheck(half_square(B, False).apply, args).ok
    cls = half_square(B, True)
    findings = _findings(cls, args)
    assert [(f.kind, f.input, f.params["factor"]) for f in findings] == [("scale", 0, 2.0)]
    assert findings[0].params["source"]["line"] == _line_of(cls, "grad_x = 2 * grad * d")


def guarded_scale(B, inverted):
    class GuardedScale(B.Function):
        """y = x·w elementwise; w's gradient is computed only when it is needed — or, inverted,
        only when it is not, so zeros are returned."""

        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            grad_w = B.ns.zeros_like(w)
            if ctx.needs_input_grad[1] != inverted:
                grad_w = grad * x  # the gradient, on a branch
            return grad * w, grad_w

    return GuardedScale


@pytest.mark.parametrize("name", BACKENDS)
def test_a_zero_gradient_whose_assignment_never_ran_is_quoted_at_that_assignment(name):
    B = backend(name)
    rng = np.random.default_rng(96)
    args = (B.tensor(rng.standard_normal((3, 4))), B.tensor(rng.standard_normal((3, 4))))
    assert gradcheck(guarded_scale(B, False).apply, args).ok
    cls = guarded_scale(B, True)
    findings = _findings(cls, args)
    assert [(f.kind, f.input) for f in findings] == [("zero", 1)]
    assert findings[0].params["source"]["line"] == _line_of(cls, "grad_w = grad * x")
    assert "never ran" in findings[0].hint


# ----- a literal threshold where forward's parameter is needed -------------------------------------------
def clipped_ramp(B, literal):
    class ClippedRamp(B.Function):
        """y = x where x < c, else c (a clip at the level c, kept on ctx); x's gradient is grad_output
        below c. Written with the literal 2.0 in the mask where ctx.level is needed, or right."""

        @staticmethod
        def forward(ctx, x, level):
            ctx.save_for_backward(x)
            ctx.level = level
            return B.ns.where(x < level, x, x * 0 + level)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            if literal:
                return grad * (x < 2.0), None  # the literal level
            return grad * (x < ctx.level), None

    return ClippedRamp


@pytest.mark.parametrize("name", BACKENDS)
def test_a_mask_comparing_with_a_literal_where_a_ctx_value_is_needed_is_a_region_there(name):
    B = backend(name)
    x = B.tensor([[-1.0, 0.3, 0.9, 1.4], [1.7, 2.3, -0.4, 1.2], [0.1, 2.6, 1.9, -2.2]])
    args = (x, 1.0)
    assert gradcheck(clipped_ramp(B, False).apply, args).ok
    cls = clipped_ramp(B, True)
    findings = _findings(cls, args)
    assert [(f.kind, f.input) for f in findings] == [("region", 0)]
    assert findings[0].params["threshold"] == "2.0" and findings[0].params["expected"] == "ctx.level"
    assert findings[0].params["source"]["line"] == _line_of(cls, "return grad * (x < 2.0)")


# ----- a flip missing on a continuation line --------------------------------------------------------------
def valid_correlation(torch, flipped):
    import torch.nn.functional as F

    class ValidCorrelation(torch.autograd.Function):
        """y = the valid correlation of each row of x with the kernel w (F.conv1d); x's gradient is
        the full correlation of grad_output with the *flipped* kernel, written over two lines."""

        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return F.conv1d(x.unsqueeze(1), w.view(1, 1, -1)).squeeze(1)

        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            k = w.shape[0]
            grad_x = F.conv1d(F.pad(grad.unsqueeze(1), (k - 1, k - 1)),
                              w.flip(0).view(1, 1, k)).squeeze(1)
            grad_w = F.conv1d(x.unsqueeze(0), grad.unsqueeze(1), groups=x.shape[0]).squeeze(0).sum(0)
            return grad_x, grad_w

    class ValidCorrelationUnflipped(ValidCorrelation):
        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            k = w.shape[0]
            grad_x = F.conv1d(F.pad(grad.unsqueeze(1), (k - 1, k - 1)),
                              w.view(1, 1, k)).squeeze(1)  # w where w.flip(0) is needed
            grad_w = F.conv1d(x.unsqueeze(0), grad.unsqueeze(1), groups=x.shape[0]).squeeze(0).sum(0)
            return grad_x, grad_w

    return ValidCorrelation if flipped else ValidCorrelationUnflipped


def test_a_kernel_read_unflipped_on_a_continuation_line_is_a_missing_flip():
    torch = pytest.importorskip("torch")
    B = backend("torch")
    rng = np.random.default_rng(97)
    args = (B.tensor(rng.standard_normal((2, 8))), B.tensor(rng.standard_normal(3)))
    assert gradcheck(valid_correlation(torch, True).apply, args).ok
    cls = valid_correlation(torch, False)
    findings = _findings(cls, args)
    assert [(f.kind, f.input) for f in findings] == [("missing_flip", 0)]
    assert findings[0].params["operand"] == "w" and not findings[0].params["flipped"] and findings[0].params["dim"] == 0
    assert findings[0].params["source"]["line"] == _line_of(cls, "grad_x = F.conv1d(F.pad(")


# ----- a norm over the wrong dim, next to a helper's tuple --------------------------------------------
def _unit_rows(x):
    n = x.norm(dim=1, keepdim=True)
    return x / n, n


def unit_rows(B, wrong_dim):
    class UnitRows(B.Function):
        """u = x / ‖x‖ per row; backward recomputes u with a helper returning a tuple (outside the
        evaluator's vocabulary: its values are the ones backward held) and the norm itself."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return _unit_rows(x)[0]

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            u, _ = _unit_rows(x)
            n = x.norm(dim=1, keepdim=True)
            return (grad - u * (grad * u).sum(1, keepdim=True)) / n

    class UnitRowsColumnNorm(UnitRows):
        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            u, _ = _unit_rows(x)
            n = x.norm(dim=0, keepdim=True)  # the columns' norms
            return (grad - u * (grad * u).sum(1, keepdim=True)) / n

    return UnitRowsColumnNorm if wrong_dim else UnitRows


@pytest.mark.parametrize("name", BACKENDS)
def test_a_norm_over_the_wrong_dim_is_a_wrong_axis_at_that_call(name):
    B = backend(name)
    rng = np.random.default_rng(98)
    args = (B.tensor(rng.standard_normal((3, 4))),)
    assert gradcheck(unit_rows(B, False).apply, args).ok
    cls = unit_rows(B, True)
    findings = _findings(cls, args)
    assert [(f.kind, f.input) for f in findings] == [("wrong_axis", 0)]
    assert findings[0].params["call"] == "norm" and findings[0].params["expected_dims"] == [1]
    assert findings[0].params["source"]["line"] == _line_of(cls, "n = x.norm(dim=0, keepdim=True)")


# ----- one of backward's own names read where another is needed ------------------------------------------
def blend(B, wrong_local):
    class Blend(B.Function):
        """y = (1 − s)·a + s·b with s = sigmoid(t), elementwise; backward computes s and 1 − s
        itself and reads them for a and b."""

        @staticmethod
        def forward(ctx, a, b, t):
            ctx.save_for_backward(a, b, t)
            s = t.sigmoid()
            return (1 - s) * a + s * b

        @staticmethod
        def backward(ctx, grad):
            a, b, t = ctx.saved_tensors
            s = t.sigmoid()
            r = 1 - s
            return grad * r, grad * s, grad * (b - a) * s * r

    class BlendSwapped(Blend):
        @staticmethod
        def backward(ctx, grad):
            a, b, t = ctx.saved_tensors
            s = t.sigmoid()
            r = 1 - s
            grad_t = grad * (b - a) * s * s  # s where r is needed
            return grad * r, grad * s, grad_t

    return BlendSwapped if wrong_local else Blend


@pytest.mark.parametrize("name", BACKENDS)
def test_one_of_backwards_own_names_read_where_another_is_needed_is_a_wrong_variable(name):
    B = backend(name)
    rng = np.random.default_rng(99)
    args = tuple(B.tensor(rng.standard_normal((3, 4))) for _ in range(3))
    assert gradcheck(blend(B, False).apply, args).ok
    cls = blend(B, True)
    findings = _findings(cls, args)
    assert [(f.kind, f.input) for f in findings] == [("wrong_variable", 2)]
    assert findings[0].params["used"] == "s" and findings[0].params["needed"] == "r"
    assert findings[0].params["source"]["line"] == _line_of(cls, "grad_t = grad * (b - a) * s * s")


# ----- values appended in a loop, then stacked ------------------------------------------------------------
def scaled_running_sum(B, factor_dropped):
    class ScaledRunningSum(B.Function):
        """y_t = c·(x_0 + … + x_t) over dim 0 (c kept on ctx), by a loop; backward runs the loop
        backwards, appending each step's gradient to a list it stacks at the end."""

        @staticmethod
        def forward(ctx, x, c):
            ctx.c = c
            total, rows = x[0] * 0, []
            for t in range(x.shape[0]):
                total = total + x[t]
                rows.append(c * total)
            return B.ns.stack(rows)

        @staticmethod
        def backward(ctx, grad):
            carry, grads = grad[0] * 0, []
            for t in range(grad.shape[0] - 1, -1, -1):
                carry = carry + grad[t]
                grads.append(ctx.c * carry)
            return B.ns.stack(grads[::-1]), None

    class ScaledRunningSumUnscaled(ScaledRunningSum):
        @staticmethod
        def backward(ctx, grad):
            carry, grads = grad[0] * 0, []
            for t in range(grad.shape[0] - 1, -1, -1):
                carry = carry + grad[t]
                grads.append(carry)  # the factor c dropped (the recursion itself is right)
            return B.ns.stack(grads[::-1]), None

    return ScaledRunningSumUnscaled if factor_dropped else ScaledRunningSum


@pytest.mark.parametrize("name", BACKENDS)
def test_a_factor_of_values_appended_in_a_loop_is_quoted_at_the_append(name):
    B = backend(name)
    rng = np.random.default_rng(100)
    args = (B.tensor(rng.standard_normal((4, 3))), 0.5)
    assert gradcheck(scaled_running_sum(B, False).apply, args).ok
    cls = scaled_running_sum(B, True)
    findings = _findings(cls, args)
    assert [(f.kind, f.input, f.params["factor"]) for f in findings] == [("scale", 0, 2.0)]
    assert findings[0].params["source"]["line"] == _line_of(cls, "grads.append(carry)  # the factor c dropped")
