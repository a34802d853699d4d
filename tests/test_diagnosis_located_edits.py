"""Issue 17: more edits of backward the one-edit search tries, and where a finding is quoted. Each
case is a small user file written for this test, imported as a user's module is, with ``import
torch`` and, where the engine has the ops, ``import gradcli as torch``. Covered here:

- a permute applied the forward's way where its inverse is needed (pixel unshuffle) is
  ``transposed`` at the permute;
- an EMA's dα reading the current state where the previous one is needed is exactly α× the right
  gradient: the state read one step off (``wrong_variable``) explains it, not a factor 0.6; a
  plain factor of 2 on a scalar parameter stays a ``scale``;
- ``roll``'s dim is its third argument (the second is the shift): rolls along the wrong dim are a
  ``wrong_axis``;
- ``nb * nb`` where ``na * na`` is needed (a square copied from the other input's line) and
  ``ctx.x`` where the saved, grouped x̂ is needed (in x's shape) are ``wrong_variable``;
- a previous state built by a shift along the features (``cat([zeros, h[:, :-1]], dim=1)``) where
  time is dim 0 is a ``wrong_axis`` on that statement;
- a term constant along one axis left out (squeeze-and-excitation's pooled path) is a
  ``missing_term`` on the gradient's statement, but not when such a term is written, only wrong;
- ``ignores_grad_output`` is quoted at the alias (``grad_logits = p``) where grad_output was left
  out, not where the shared softmax is computed;
- ``swapped`` is quoted at the tuple assignment that pairs names and values wrongly when the
  return names forward's inputs in order, and at the return when it does not;
- a Jacobian applied untransposed (a rotation by +θ) is quoted where the values are made, not at
  the reshape that returns them;
- a zero gradient because an update's result is discarded (``g[:, j:j + t] + v`` on its own line)
  is quoted at that line;
- a ``wrong_axis`` read off the operator is quoted at the statement one dim edit fixes;
- GELU's derivative written as its CDF alone (Φ(b) where Φ(b) + b·φ(b) is needed) is a
  ``missing_term`` where the CDF is read;
- a zero gradient is quoted at an integer division that gives 0 (``inv_n = 1 // n``), and at the
  assignment a wrong ``needs_input_grad`` guard skipped (also after ``ga = gb = None``);
- a ``scale`` made by a count computed wrongly (``area = H * W`` for a box) is quoted at the count;
- one branch of a ``where`` with the wrong sign (a pinball loss's ``1 - tau`` for ``tau - 1``) is a
  ``region``: wrong only on that side of the condition;
- a result that is right but reversed (a polynomial's coefficient gradients collected highest
  first) is a ``missing_flip`` quoted where it is collected: the stack, or the index write;
- a pair max routed to ``1 - which`` (the loser) is a ``region`` at that complement;
- ``return grad[:, None] * ratio``: a local derivative times a laid-out cotangent is followed to
  the derivative's assignment, like ``grad * ratio``.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.user_files import failing_findings, float_tensor, line_of, user_module

BOTH = pytest.mark.parametrize("backend", ["gradcli", "torch"])


def _only(findings, index, kind):
    mine = [f for f in findings if f.input == index]
    assert [f.kind for f in mine] == [kind], findings
    return mine[0]


UNSHUFFLE = """
class UnshuffleSamePermute(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        n, c, h, w = x.shape
        ctx.shape = x.shape
        y = x.reshape(n, c, h // 2, 2, w // 2, 2).permute(0, 1, 3, 5, 2, 4)
        return y.reshape(n, c * 4, h // 2, w // 2)

    @staticmethod
    def backward(ctx, g):
        n, c, h, w = ctx.shape
        g = g.reshape(n, c, 2, 2, h // 2, w // 2)
        g = g.permute(0, 1, 3, 5, 2, 4)
        return g.reshape(n, c, h, w)
"""


@BOTH
def test_a_permute_applied_again_where_its_inverse_is_needed_is_transposed(tmp_path, backend):
    module, path = user_module(tmp_path, backend, UNSHUFFLE, "unshuffle")
    x = float_tensor(module, np.random.default_rng(1).standard_normal((1, 2, 4, 4)))
    found = _only(failing_findings(module.UnshuffleSamePermute, (x,)), 0, "transposed")
    assert found.params["source"]["line"] == line_of(path, "g = g.permute(0, 1, 3, 5, 2, 4)")
    assert "permute(0, 1, 4, 2, 5, 3)" in found.message


EMA = """
def _ema(ctx, x, alpha):
    out = torch.zeros_like(x)
    h = torch.zeros_like(x[0])
    for t in range(x.shape[0]):
        h = alpha * h + (1 - alpha) * x[t]
        out[t] = h
    ctx.save_for_backward(x, alpha, out)
    return out


class EmaCurrentState(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        return _ema(ctx, x, alpha)

    @staticmethod
    def backward(ctx, g):
        x, alpha, out = ctx.saved_tensors
        grad_x = torch.zeros_like(x)
        grad_alpha = torch.zeros_like(alpha)
        carry = torch.zeros_like(x[0])
        for t in reversed(range(x.shape[0])):
            carry = g[t] + carry
            grad_x[t] = (1 - alpha) * carry
            grad_alpha += (carry * (out[t] - x[t])).sum()
            carry = alpha * carry
        return grad_x, grad_alpha


class EmaDoubled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        return _ema(ctx, x, alpha)

    @staticmethod
    def backward(ctx, g):
        x, alpha, out = ctx.saved_tensors
        grad_x = torch.zeros_like(x)
        grad_alpha = torch.zeros_like(alpha)
        carry = torch.zeros_like(x[0])
        for t in reversed(range(x.shape[0])):
            carry = g[t] + carry
            prev = out[t - 1] if t > 0 else torch.zeros_like(out[0])
            grad_x[t] = (1 - alpha) * carry
            grad_alpha += 2 * (carry * (prev - x[t])).sum()
            carry = alpha * carry
        return grad_x, grad_alpha
"""


def _ema_inputs(module):
    rng = np.random.default_rng(2)
    return float_tensor(module, rng.standard_normal((5, 3))), float_tensor(module, [0.6])


@BOTH
def test_a_scalar_gradient_off_by_the_decay_is_the_state_read_one_step_off(tmp_path, backend):
    module, path = user_module(tmp_path, backend, EMA, "ema")
    found = _only(failing_findings(module.EmaCurrentState, _ema_inputs(module)), 1, "wrong_variable")
    assert found.params["source"]["line"] == line_of(path, "grad_alpha += (carry * (out[t] - x[t])).sum()")
    assert "out[t - 1]" in found.message


@BOTH
def test_a_scalar_gradient_off_by_two_stays_a_scale(tmp_path, backend):
    module, _ = user_module(tmp_path, backend, EMA, "ema")
    found = _only(failing_findings(module.EmaDoubled, _ema_inputs(module)), 1, "scale")
    assert found.params["factor"] == 2.0


SHOELACE = """
class ShoelaceRollBatch(torch.autograd.Function):
    @staticmethod
    def forward(ctx, xs, ys):
        ctx.save_for_backward(xs, ys)
        return 0.5 * (xs * torch.roll(ys, -1, dims=1) - torch.roll(xs, -1, dims=1) * ys).sum(dim=1)

    @staticmethod
    def backward(ctx, g):
        xs, ys = ctx.saved_tensors
        g = g[:, None]
        grad_x = 0.5 * g * (torch.roll(ys, -1, dims=0) - torch.roll(ys, 1, dims=0))
        grad_y = 0.5 * g * (torch.roll(xs, 1, dims=1) - torch.roll(xs, -1, dims=1))
        return grad_x, grad_y
"""


@BOTH
def test_rolls_along_the_wrong_dim_are_a_wrong_axis(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SHOELACE, "shoelace")
    rng = np.random.default_rng(3)
    args = (float_tensor(module, rng.standard_normal((3, 5))), float_tensor(module, rng.standard_normal((3, 5))))
    found = _only(failing_findings(module.ShoelaceRollBatch, args), 0, "wrong_axis")
    assert found.params["source"]["line"] == line_of(path, "grad_x = 0.5 * g")


COSINE = """
class CosineOtherNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        na, nb = a.norm(dim=1, keepdim=True), b.norm(dim=1, keepdim=True)
        cos = (a * b).sum(dim=1, keepdim=True) / (na * nb)
        ctx.save_for_backward(a, b, na, nb, cos)
        return cos[:, 0]

    @staticmethod
    def backward(ctx, grad_out):
        a, b, na, nb, cos = ctx.saved_tensors
        g = grad_out[:, None]
        grad_a = g * (b / (na * nb) - cos * a / (nb * nb))
        grad_b = g * (a / (na * nb) - cos * b / (nb * nb))
        return grad_a, grad_b
"""


@BOTH
def test_a_square_copied_from_the_other_inputs_line_is_a_wrong_variable(tmp_path, backend):
    module, path = user_module(tmp_path, backend, COSINE, "cosine")
    rng = np.random.default_rng(4)
    args = (float_tensor(module, rng.standard_normal((3, 4))), float_tensor(module, rng.standard_normal((3, 4))))
    found = _only(failing_findings(module.CosineOtherNorm, args), 0, "wrong_variable")
    assert found.params["source"]["line"] == line_of(path, "grad_a = g * (b / (na * nb)")
    assert "`na * na`" in found.message


GROUP_NORM = """
class GroupNormGammaRaw(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, gamma):
        n, c, length = x.shape
        grouped = x.reshape(n, 2, -1)
        mean = grouped.mean(-1, keepdim=True)
        rstd = 1 / ((grouped - mean) ** 2).mean(-1, keepdim=True).add(1e-5).sqrt()
        xhat = (grouped - mean) * rstd
        ctx.save_for_backward(xhat, rstd, gamma)
        ctx.x = x
        return xhat.reshape(n, c, length) * gamma[:, None]

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, gamma = ctx.saved_tensors
        n, c, length = g.shape
        grad_gamma = (g * ctx.x).sum(dim=(0, 2))
        gx = (g * gamma[:, None]).reshape(n, 2, -1)
        grad_x = rstd * (gx - gx.mean(-1, keepdim=True) - xhat * (gx * xhat).mean(-1, keepdim=True))
        return grad_x.reshape(n, c, length), grad_gamma
"""


@BOTH
def test_a_ctx_attribute_read_where_the_saved_normalised_tensor_is_needed_is_a_wrong_variable(tmp_path, backend):
    module, path = user_module(tmp_path, backend, GROUP_NORM, "group_norm")
    rng = np.random.default_rng(5)
    args = (float_tensor(module, rng.standard_normal((2, 4, 3))), float_tensor(module, rng.uniform(0.5, 1.5, 4)))
    found = _only(failing_findings(module.GroupNormGammaRaw, args), 1, "wrong_variable")
    assert found.params["source"]["line"] == line_of(path, "grad_gamma = (g * ctx.x)")
    assert "`xhat`" in found.message


SCAN = """
class ScanShiftAlongFeatures(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, x):
        h = torch.zeros_like(x)
        state = torch.zeros_like(x[0])
        for t in range(x.shape[0]):
            state = a[t] * state + x[t]
            h[t] = state
        ctx.save_for_backward(a, h)
        return h

    @staticmethod
    def backward(ctx, g):
        a, h = ctx.saved_tensors
        grad_x = torch.zeros_like(g)
        carry = torch.zeros_like(g[0])
        for t in reversed(range(g.shape[0])):
            carry = g[t] + carry
            grad_x[t] = carry
            carry = a[t] * carry
        h_prev = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], dim=1)
        return grad_x * h_prev, grad_x
"""


@BOTH
def test_a_previous_state_shifted_along_the_wrong_dim_is_a_wrong_axis(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SCAN, "scan")
    rng = np.random.default_rng(6)
    args = (float_tensor(module, rng.uniform(0.5, 0.9, (5, 3))), float_tensor(module, rng.standard_normal((5, 3))))
    found = _only(failing_findings(module.ScanShiftAlongFeatures, args), 0, "wrong_axis")
    assert found.params["source"]["line"] == line_of(path, "h_prev = torch.cat(")


SQUEEZE = """
def _se(ctx, x, w1, w2):
    s = x.mean(dim=2)
    pre = s @ w1.t()
    h = torch.relu(pre)
    a = torch.sigmoid(h @ w2.t())
    ctx.save_for_backward(x, w1, w2, s, pre, h, a)
    return x * a[:, :, None]


class GateOnly(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w1, w2):
        return _se(ctx, x, w1, w2)

    @staticmethod
    def backward(ctx, g):
        x, w1, w2, s, pre, h, a = ctx.saved_tensors
        grad_z = (g * x).sum(dim=2) * a * (1 - a)
        grad_w2 = grad_z.t() @ h
        grad_pre = (grad_z @ w2) * (pre > 0)
        grad_w1 = grad_pre.t() @ s
        grad_x = g * a[:, :, None]
        return grad_x, grad_w1, grad_w2


class TanhGate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w1, w2):
        return _se(ctx, x, w1, w2)

    @staticmethod
    def backward(ctx, g):
        x, w1, w2, s, pre, h, a = ctx.saved_tensors
        grad_z = (g * x).sum(dim=2) * (1 - a * a)
        grad_w2 = grad_z.t() @ h
        grad_pre = (grad_z @ w2) * (pre > 0)
        grad_w1 = grad_pre.t() @ s
        grad_s = grad_pre @ w1
        grad_x = g * a[:, :, None] + grad_s[:, :, None] / x.shape[2]
        return grad_x, grad_w1, grad_w2
"""


def _se_inputs(module):
    rng = np.random.default_rng(7)
    return (float_tensor(module, rng.standard_normal((2, 4, 5))), float_tensor(module, rng.standard_normal((3, 4))),
            float_tensor(module, rng.standard_normal((4, 3))))


@BOTH
def test_a_term_constant_along_the_pooled_axis_left_out_is_a_missing_term(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SQUEEZE, "squeeze")
    found = _only(failing_findings(module.GateOnly, _se_inputs(module)), 0, "missing_term")
    assert found.params["source"]["line"] == line_of(path, "grad_x = g * a[:, :, None]")


def _evidence(analytic, numeric):
    from gradcli.check.diagnosis.evidence import Evidence

    return Evidence(0, "x", analytic.shape[1:], "float64", analytic, numeric, np.zeros_like(numeric),
                    ["random"] * len(analytic), [])


def test_the_evidence_of_a_term_constant_along_one_axis():
    from gradcli.check.diagnosis.named_terms import missing_broadcast_term

    rng = np.random.default_rng(13)
    numeric = rng.standard_normal((3, 2, 4, 5))
    pooled = np.broadcast_to(rng.standard_normal((3, 2, 4, 1)), numeric.shape)
    found = missing_broadcast_term(_evidence(numeric - pooled, numeric))
    assert (found.kind, found.params["dim"]) == ("missing_term", 2)
    assert missing_broadcast_term(_evidence(numeric - rng.standard_normal(numeric.shape), numeric)) is None
    assert missing_broadcast_term(_evidence(0.5 * numeric, numeric)) is None  # a factor, no term


@BOTH
def test_a_written_pooled_term_that_is_wrong_is_no_missing_term(tmp_path, backend):
    module, _ = user_module(tmp_path, backend, SQUEEZE, "squeeze")
    findings = failing_findings(module.TanhGate, _se_inputs(module))
    assert {f.kind for f in findings} == {"none"}, findings


SAMPLED = """
class SoftmaxNoUpstream(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, tau):
        lse = torch.logsumexp(x / tau, dim=1)
        ctx.save_for_backward(x, tau, lse)
        return tau * lse

    @staticmethod
    def backward(ctx, g):
        x, tau, lse = ctx.saved_tensors
        p = torch.exp(x / tau - lse[:, None])
        grad_x = p
        grad_tau = (g * (lse - (p * x).sum(dim=1) / tau)).sum().reshape(1)
        return grad_x, grad_tau
"""


@BOTH
def test_ignores_grad_output_is_quoted_at_the_alias_that_left_it_out(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SAMPLED, "sampled")
    rng = np.random.default_rng(8)
    args = (float_tensor(module, rng.standard_normal((3, 4))), float_tensor(module, [1.5]))
    found = _only(failing_findings(module.SoftmaxNoUpstream, args), 0, "ignores_grad_output")
    assert found.params["source"]["line"] == line_of(path, "grad_x = p")


GATES = """
class UpdateGateExchanged(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z_pre, h_prev, cand):
        z = torch.sigmoid(z_pre)
        ctx.save_for_backward(z, h_prev, cand)
        return (1 - z) * h_prev + z * cand

    @staticmethod
    def backward(ctx, g):
        z, h_prev, cand = ctx.saved_tensors
        grad_z_pre = g * (cand - h_prev) * z * (1 - z)
        grad_cand, grad_prev = g * (1 - z), g * z
        return grad_z_pre, grad_prev, grad_cand


class ReturnExchanged(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z_pre, h_prev, cand):
        z = torch.sigmoid(z_pre)
        ctx.save_for_backward(z, h_prev, cand)
        return (1 - z) * h_prev + z * cand

    @staticmethod
    def backward(ctx, g):
        z, h_prev, cand = ctx.saved_tensors
        grad_z_pre = g * (cand - h_prev) * z * (1 - z)
        grad_prev, grad_cand = g * (1 - z), g * z
        return grad_z_pre, grad_cand, grad_prev
"""


def _gate_inputs(module):
    rng = np.random.default_rng(9)
    return tuple(float_tensor(module, rng.standard_normal((3, 4))) for _ in range(3))


@BOTH
def test_swapped_is_quoted_where_names_and_values_are_paired_wrongly(tmp_path, backend):
    module, path = user_module(tmp_path, backend, GATES, "gates")
    found = _only(failing_findings(module.UpdateGateExchanged, _gate_inputs(module)), 1, "swapped")
    assert found.params["source"]["line"] == line_of(path, "grad_cand, grad_prev = g * (1 - z), g * z")
    found = _only(failing_findings(module.ReturnExchanged, _gate_inputs(module)), 1, "swapped")
    assert found.params["source"]["line"] == line_of(path, "return grad_z_pre, grad_cand, grad_prev")


ROTARY = """
class RotateForwardWay(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, theta):
        pairs = x.reshape(x.shape[0], -1, 2)
        x0, x1 = pairs[..., 0], pairs[..., 1]
        cos, sin = torch.cos(theta), torch.sin(theta)
        ctx.save_for_backward(cos, sin)
        return torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        cos, sin = ctx.saved_tensors
        pairs = g.reshape(g.shape[0], -1, 2)
        g0, g1 = pairs[..., 0], pairs[..., 1]
        grad = torch.stack([g0 * cos - g1 * sin, g0 * sin + g1 * cos], dim=-1)
        return grad.reshape(g.shape), None
"""


@BOTH
def test_a_jacobian_applied_untransposed_is_quoted_where_the_values_are_made(tmp_path, backend):
    module, path = user_module(tmp_path, backend, ROTARY, "rotary")
    rng = np.random.default_rng(10)
    theta = module.torch.tensor(rng.uniform(0.3, 1.2, (3, 2)), dtype=module.torch.float64)
    found = _only(failing_findings(module.RotateForwardWay,
                                   (float_tensor(module, rng.standard_normal((3, 4))), theta)), 0, "transposed")
    assert found.params["source"]["line"] == line_of(path, "grad = torch.stack([g0 * cos - g1 * sin")


CONV = """
class UnfoldConvDiscarded(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return torch.einsum("nctk,ock->not", x.unfold(2, weight.shape[2], 1), weight)

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        k, t = weight.shape[2], g.shape[2]
        grad_w = torch.einsum("not,nctk->ock", g, x.unfold(2, k, 1))
        grad_x = torch.zeros_like(x)
        for j in range(k):
            grad_x[:, :, j:j + t] + torch.einsum("not,oc->nct", g, weight[:, :, j])
        return grad_x, grad_w
"""


def test_a_zero_gradient_from_a_discarded_update_is_quoted_at_the_update(tmp_path):
    module, path = user_module(tmp_path, "torch", CONV, "conv")
    rng = np.random.default_rng(11)
    args = (float_tensor(module, rng.standard_normal((1, 2, 6))), float_tensor(module, rng.standard_normal((3, 2, 3))))
    found = _only(failing_findings(module.UnfoldConvDiscarded, args), 0, "zero")
    assert found.params["source"]["line"] == line_of(path, "grad_x[:, :, j:j + t] + torch.einsum")
    assert "discarded" in found.hint


SHIFT = """
class TemporalShiftWrongDim(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.zeros_like(x)
        y[..., 0:2] = x[..., 0:2].roll(1, -2)
        y[..., 2:] = x[..., 2:]
        return y

    @staticmethod
    def backward(ctx, g):
        grad = g.clone()
        grad[..., 0:2] = g[..., 0:2].roll(-1, -1)
        return grad
"""


def test_a_wrong_axis_read_off_the_operator_is_quoted_at_the_dim_that_fixes_it(tmp_path):
    module, path = user_module(tmp_path, "torch", SHIFT, "shift")
    x = float_tensor(module, np.random.default_rng(12).standard_normal((2, 4, 4)))
    found = _only(failing_findings(module.TemporalShiftWrongDim, (x,)), 0, "wrong_axis")
    assert found.params["source"]["line"] == line_of(path, "grad[..., 0:2] = g[..., 0:2].roll(-1, -1)")


GEGLU = """
import math


def _gelu(z):
    return z * 0.5 * (1 + torch.erf(z / math.sqrt(2)))


class GegluCdfOnly(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        a, b = x[:, :2], x[:, 2:]
        ctx.save_for_backward(a, b)
        return a * _gelu(b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        cdf = 0.5 * (1 + torch.erf(b / math.sqrt(2)))
        return torch.cat([g * _gelu(b), g * a * cdf], dim=1)
"""


@BOTH
def test_gelus_derivative_written_as_its_cdf_alone_misses_the_pdf_term(tmp_path, backend):
    module, path = user_module(tmp_path, backend, GEGLU, "geglu")
    x = float_tensor(module, np.random.default_rng(14).standard_normal((3, 4)))
    found = _only(failing_findings(module.GegluCdfOnly, (x,)), 0, "missing_term")
    assert found.params["source"]["line"] == line_of(path, "return torch.cat([g * _gelu(b), g * a * cdf]")
    assert "b·φ(b)" in found.message


POISSON = """
class PoissonIntegerMean(torch.autograd.Function):
    @staticmethod
    def forward(ctx, log_rate, target):
        ctx.save_for_backward(log_rate, target)
        ctx.n = log_rate.numel()
        return (torch.exp(log_rate) - target * log_rate).mean()

    @staticmethod
    def backward(ctx, g):
        log_rate, target = ctx.saved_tensors
        inv_n = 1 // ctx.n
        return g * inv_n * (torch.exp(log_rate) - target), g * inv_n * -log_rate
"""


@BOTH
def test_a_gradient_zeroed_by_an_integer_division_is_quoted_at_the_division(tmp_path, backend):
    module, path = user_module(tmp_path, backend, POISSON, "poisson")
    rng = np.random.default_rng(15)
    args = (float_tensor(module, rng.standard_normal((3, 4))), float_tensor(module, rng.uniform(0, 3, (3, 4))))
    found = _only(failing_findings(module.PoissonIntegerMean, args), 0, "zero")
    assert found.params["source"]["line"] == line_of(path, "inv_n = 1 // ctx.n")


GUARDED = """
class GuardedByTheWrongIndex(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, labels):
        ctx.save_for_backward(a, b)
        return ((a - b) ** 2).sum(dim=1) * labels

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        grad = 2 * (a - b) * g[:, None]
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_a = grad
        if ctx.needs_input_grad[2]:
            grad_b = -grad
        return grad_a, grad_b, None
"""


def test_a_gradient_left_none_by_a_wrong_guard_is_quoted_at_the_guarded_assignment(tmp_path):
    module, path = user_module(tmp_path, "torch", GUARDED, "guarded")
    rng = np.random.default_rng(16)
    labels = module.torch.tensor([1.0, 2.0, 3.0], dtype=module.torch.float64)
    args = (float_tensor(module, rng.standard_normal((3, 2))), float_tensor(module, rng.standard_normal((3, 2))), labels)
    found = _only(failing_findings(module.GuardedByTheWrongIndex, args), 1, "zero")
    assert found.params["source"]["line"] == line_of(path, "grad_b = -grad")


ROI = """
class RoiMeanWholeMap(torch.autograd.Function):
    @staticmethod
    def forward(ctx, feat):
        ctx.shape = feat.shape
        return feat[:, 1:4, 0:3].mean(dim=(1, 2))

    @staticmethod
    def backward(ctx, g):
        grad = g.new_zeros(ctx.shape)
        area = ctx.shape[1] * ctx.shape[2]
        grad[:, 1:4, 0:3] = (g / area)[:, None, None]
        return grad
"""


@BOTH
def test_a_scale_made_by_a_wrong_count_is_quoted_where_the_count_is_computed(tmp_path, backend):
    module, path = user_module(tmp_path, backend, ROI, "roi")
    feat = float_tensor(module, np.random.default_rng(17).standard_normal((2, 4, 5)))
    found = _only(failing_findings(module.RoiMeanWholeMap, (feat,)), 0, "scale")
    assert found.params["source"]["line"] == line_of(path, "area = ctx.shape[1] * ctx.shape[2]")


PINBALL = """
class PinballSlopeSign(torch.autograd.Function):
    @staticmethod
    def forward(ctx, pred, target):
        d = target - pred
        ctx.save_for_backward(d)
        return torch.maximum(0.3 * d, (0.3 - 1) * d).mean()

    @staticmethod
    def backward(ctx, g):
        (d,) = ctx.saved_tensors
        slope = torch.where(d > 0, torch.full_like(d, 0.3), torch.full_like(d, 1 - 0.3))
        grad_target = g * slope / d.numel()
        return -grad_target, grad_target
"""


@BOTH
def test_one_where_branch_negated_is_a_region_on_that_side(tmp_path, backend):
    module, path = user_module(tmp_path, backend, PINBALL, "pinball")
    rng = np.random.default_rng(18)
    args = (float_tensor(module, rng.standard_normal((4, 5))), float_tensor(module, rng.standard_normal((4, 5))))
    found = _only(failing_findings(module.PinballSlopeSign, args), 0, "region")
    assert found.params["source"]["line"] == line_of(path, "slope = torch.where(d > 0")
    assert found.params["description"] == "where not (d > 0)"


HORNER = """
def _poly(x, coeffs):
    p = torch.zeros_like(x)
    for k in reversed(range(coeffs.shape[0])):
        p = p * x + coeffs[k]
    return p


class PowersCollectedHighestFirst(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, coeffs):
        ctx.save_for_backward(x, coeffs)
        return _poly(x, coeffs)

    @staticmethod
    def backward(ctx, g):
        x, coeffs = ctx.saved_tensors
        deriv = torch.zeros_like(x)
        for k in range(1, coeffs.shape[0]):
            deriv = deriv + k * coeffs[k] * x ** (k - 1)
        grads = []
        for k in reversed(range(coeffs.shape[0])):
            grads.append((g * x ** k).sum())
        grad_c = torch.stack(grads)
        return g * deriv, grad_c


class PowersWrittenHighestFirst(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, coeffs):
        ctx.save_for_backward(x, coeffs)
        return _poly(x, coeffs)

    @staticmethod
    def backward(ctx, g):
        x, coeffs = ctx.saved_tensors
        deriv = torch.zeros_like(x)
        for k in range(1, coeffs.shape[0]):
            deriv = deriv + k * coeffs[k] * x ** (k - 1)
        grad_coeffs = torch.zeros_like(coeffs)
        power = torch.ones_like(x)
        for k in reversed(range(coeffs.shape[0])):
            grad_coeffs[k] = (g * power).sum()
            power = power * x
        return g * deriv, grad_coeffs
"""


@BOTH
def test_a_result_that_is_right_but_reversed_is_quoted_where_it_is_collected(tmp_path, backend):
    module, path = user_module(tmp_path, backend, HORNER, "horner")
    rng = np.random.default_rng(19)
    args = (float_tensor(module, rng.uniform(-1, 1, 6)), float_tensor(module, rng.standard_normal(4)))
    found = _only(failing_findings(module.PowersCollectedHighestFirst, args), 1, "missing_flip")
    assert found.params["source"]["line"] == line_of(path, "grad_c = torch.stack(grads)")
    found = _only(failing_findings(module.PowersWrittenHighestFirst, args), 1, "missing_flip")
    assert found.params["source"]["line"] == line_of(path, "grad_coeffs[k] = (g * power).sum()")


PAIR_MAX = """
class PairMaxToTheLoser(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        values, which = x.reshape(x.shape[0], -1, 2).max(-1)
        ctx.save_for_backward(which)
        return values

    @staticmethod
    def backward(ctx, g):
        (which,) = ctx.saved_tensors
        slot = (1 - which).unsqueeze(-1)
        grad = g.new_zeros(g.shape[0], g.shape[1], 2).scatter_(-1, slot, g.unsqueeze(-1))
        return grad.reshape(g.shape[0], -1)
"""


def test_a_pair_max_routed_to_the_complement_of_its_argmax_is_a_region(tmp_path):
    module, path = user_module(tmp_path, "torch", PAIR_MAX, "pair_max")
    x = float_tensor(module, np.random.default_rng(20).standard_normal((3, 6)))
    found = _only(failing_findings(module.PairMaxToTheLoser, (x,)), 0, "region")
    assert found.params["source"]["line"] == line_of(path, "slot = (1 - which).unsqueeze(-1)")


POWER_MEAN = """
class PowerMeanSummed(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        m = (x ** 3).mean(dim=1) ** (1 / 3)
        ctx.save_for_backward(x, m)
        return m

    @staticmethod
    def backward(ctx, grad):
        x, m = ctx.saved_tensors
        ratio = (x / m[:, None]) ** 2
        return grad[:, None] * ratio
"""


@BOTH
def test_a_scale_of_a_local_derivative_times_a_laid_out_cotangent_is_quoted_at_the_derivative(tmp_path, backend):
    module, path = user_module(tmp_path, backend, POWER_MEAN, "power_mean")
    x = float_tensor(module, np.random.default_rng(21).uniform(0.5, 2, (3, 4)))
    found = _only(failing_findings(module.PowerMeanSummed, (x,)), 0, "scale")
    assert found.params["factor"] == 4.0
    assert found.params["source"]["line"] == line_of(path, "ratio = (x / m[:, None]) ** 2")
