"""Issue 17: diagnoses met first on signal-processing backwards — scalar parameters, neighbour
pairs, recurrences, selections and boundaries. Each case is a small user file written for this
test, imported as a user's module is, under ``import torch`` and ``import gradcli as torch``:

- a scalar parameter's gradient off by a factor at no simple fraction (π/2, ln 10) is a ``scale``
  when three independent cotangents agree on it, named as π/2 or ln 10; a log10's ln 10 left out is
  quoted where 1/x is written; a factor 2 is not quoted at a shape's ``steps + 2``;
- ``grad.sum() * d.sum()`` for ``(grad * d).sum()`` uses grad_output only through its sum: an
  ``ignores_grad_output``, which a scalar loss (whose one cotangent always scales the gradient)
  never is;
- a product of neighbours ``x[:, 1:] * x[:, :-1]`` whose backward writes one end only
  (``g[:, :-1] += …``, or a lag's ``g[:, :n - k] += …``) is a ``missing_term``: the pair's other end;
- a recurrence whose backward stores the carried adjoint (``carry = g_y``) but never adds it back
  is a ``missing_term`` at the statement that must read it;
- a value forward selects with ``torch.where(mask, fill, x)`` whose backward sums grad_output
  everywhere is a ``region``: forward's selection left out;
- a replicate pad's gradient cropped away instead of folded back is a ``region`` at the edges of
  that axis, quoted at the crop;
- every read of one saved tensor in a statement where another is needed (``x`` at each lag where
  ``y`` is needed) is one ``wrong_variable``; an extra saved factor (the windowed frames for the
  frames) is a ``wrong_variable`` too, and so is ``y * y`` for ``t * t`` when y = t / c (not a
  coefficient at no simple number);
- ``sign(x)`` multiplied in where the outer sign cancels it is a ``region`` (wrong where x < 0),
  never "x where exp(x) is needed" (sign(exp(x)) is 1); a comparison reading the wrong tensor is a
  ``region`` too;
- a piece held constant is quoted where backward reads it, and one mistake in an adjoint several
  inputs share (a piece held constant, a tensor misread) where that adjoint is made;
- frames formed by a transpose and flattened back without undoing it are a ``missing_reshape``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from tests.user_files import failing_findings, float_tensor, line_of, user_module

BOTH = pytest.mark.parametrize("backend", ["gradcli", "torch"])


def _only(findings, index, kind):
    mine = [f for f in findings if f.input == index]
    assert [f.kind for f in mine] == [kind], findings
    return mine[0]


def _randn(module, seed, *shape):
    return float_tensor(module, np.random.default_rng(seed).standard_normal(shape))


SCALARS = """
class PhaseGainNoChain(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, phase):
        ctx.save_for_backward(x, phase)
        return x * torch.cos(phase * math.pi / 2)

    @staticmethod
    def backward(ctx, g):
        x, phase = ctx.saved_tensors
        gx = g * torch.cos(phase * math.pi / 2)
        gphase = (g * x * -torch.sin(phase * math.pi / 2)).sum().reshape(1)
        return gx, gphase


class DecibelsNaturalLog(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p):
        ctx.save_for_backward(p)
        return 10 * torch.log10(p)

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        coeff = 10 / p
        return g * coeff


class PaddedDifferenceNoHalf(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return (x[:, 2:] - x[:, :-2]) / 2

    @staticmethod
    def backward(ctx, g):
        half = g
        out = g.new_zeros(g.shape[0], g.shape[1] + 2)
        out[:, 2:] += half
        out[:, :-2] -= half
        return out


class DriveSummedApart(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        y = torch.tanh(k * x)
        ctx.save_for_backward(x, k, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, k, y = ctx.saved_tensors
        gx = g * k * (1 - y * y)
        gk = (g.sum() * (x * (1 - y * y)).sum()).reshape(1)
        return gx, gk


class SquareLossTriple(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x * x).sum()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x
"""


@BOTH
def test_a_scalar_parameters_factor_pi_over_two_is_a_scale_seen_through_the_cotangents(tmp_path, backend):
    module, path = user_module(tmp_path, backend, "import math\n" + SCALARS, "scalars")
    x, phase = _randn(module, 1, 3, 4), float_tensor(module, [0.3])
    found = _only(failing_findings(module.PhaseGainNoChain, (x, phase)), 1, "scale")
    assert found.params["factor"] == pytest.approx(2 / math.pi, rel=1e-5)
    assert "π/2 times too small" in found.message and "factor 2/π" in found.message


@BOTH
def test_a_log10_without_its_ln10_is_a_scale_quoted_where_one_over_x_is_written(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SCALARS, "decibels")
    p = float_tensor(module, np.random.default_rng(2).uniform(0.5, 2.0, (3, 4)))
    found = _only(failing_findings(module.DecibelsNaturalLog, (p,)), 0, "scale")
    assert found.params["factor"] == pytest.approx(math.log(10), rel=1e-5)
    assert "ln 10 times too large" in found.message
    assert found.params["source"]["line"] == line_of(path, "coeff = 10 / p")


@BOTH
def test_a_factor_two_is_not_quoted_at_a_shapes_plus_two(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SCALARS, "padded")
    found = _only(failing_findings(module.PaddedDifferenceNoHalf, (_randn(module, 3, 2, 6),)), 0, "scale")
    assert found.params["factor"] == 2
    assert found.params["source"]["line"] == line_of(path, "half = g")


@BOTH
def test_grad_output_used_only_through_its_sum_ignores_grad_output(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SCALARS, "summed")
    x, k = _randn(module, 4, 3, 4), float_tensor(module, [1.5])
    found = _only(failing_findings(module.DriveSummedApart, (x, k)), 1, "ignores_grad_output")
    assert found.params["through"] == "sum" and not found.params["ones_ok"]
    assert found.params["source"]["line"] == line_of(path, "gk = (g.sum()")


@BOTH
def test_a_scalar_losss_wrong_gradient_is_never_grad_output_through_its_sum(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SCALARS, "scalar_loss")
    found = _only(failing_findings(module.SquareLossTriple, (_randn(module, 5, 3, 4),)), 0, "scale")
    assert found.params["factor"] == 1.5


PAIRS = """
class NeighbourProductLeftEnd(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x[:, 1:] * x[:, :-1]).sum(1)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        gx = torch.zeros_like(x)
        gx[:, :-1] += g[:, None] * x[:, 1:]
        return gx


class LagProductsFirstFactor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        n = x.shape[1]
        return torch.stack([(x[:, :n - k] * x[:, k:]).sum(1) for k in range(1, 3)], dim=1)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        n = x.shape[1]
        gx = torch.zeros_like(x)
        for k in range(1, 3):
            gx[:, :n - k] += g[:, k - 1:k] * x[:, k:]
        return gx


class SmootherCarryUnread(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, a):
        state = x.new_zeros(x.shape[0])
        out = []
        for t in range(x.shape[1]):
            state = a * state + (1 - a) * x[:, t]
            out.append(state)
        ctx.save_for_backward(a)
        return torch.stack(out, dim=1)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        gx = torch.zeros_like(g)
        carry = g.new_zeros(g.shape[0])
        for t in reversed(range(g.shape[1])):
            g_state = g[:, t]
            gx[:, t] = (1 - a) * g_state
            carry = g_state
        return gx, None
"""


@BOTH
def test_a_neighbour_product_written_at_one_end_misses_the_pairs_other_end(tmp_path, backend):
    module, path = user_module(tmp_path, backend, PAIRS, "pairs")
    found = _only(failing_findings(module.NeighbourProductLeftEnd, (_randn(module, 6, 3, 5),)), 0, "missing_term")
    assert found.params["source"]["line"] == line_of(path, "gx[:, :-1] += g[:, None] * x[:, 1:]")
    assert "gx[:, 1:] += g[:, None] * x[:, :-1]" in found.message


@BOTH
def test_a_lags_product_written_at_one_end_misses_the_other(tmp_path, backend):
    module, path = user_module(tmp_path, backend, PAIRS, "lags")
    found = _only(failing_findings(module.LagProductsFirstFactor, (_randn(module, 7, 2, 6),)), 0, "missing_term")
    assert found.params["source"]["line"] == line_of(path, "gx[:, :n - k] += g[:, k - 1:k] * x[:, k:]")
    assert "gx[:, k:] += g[:, k - 1:k] * x[:, :n - k]" in found.message


@BOTH
def test_a_carry_stored_but_never_added_back_is_a_missing_term(tmp_path, backend):
    module, path = user_module(tmp_path, backend, PAIRS, "carry")
    x = _randn(module, 8, 2, 5)
    a = module.torch.tensor([0.6], dtype=module.torch.float64)  # no gradient asked for a
    found = _only(failing_findings(module.SmootherCarryUnread, (x, a)), 0, "missing_term")
    assert found.params["source"]["line"] == line_of(path, "g_state = g[:, t]")
    assert "a * carry" in found.message


SELECTIONS = """
class FillEverywhere(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, mask, fill):
        ctx.save_for_backward(mask)
        return torch.where(mask[..., None], fill, x)

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        gx = g.masked_fill(mask[..., None], 0.0)
        gfill = g.sum(dim=(0, 1))
        return gx, None, gfill


class ReplicatePadCropped(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        padded = torch.cat([x[:, :1], x, x[:, -1:]], dim=1)
        ctx.steps = x.shape[1]
        return padded[:, 2:] - padded[:, :-2]

    @staticmethod
    def backward(ctx, g):
        gp = g.new_zeros(g.shape[0], ctx.steps + 2, g.shape[2])
        gp[:, 2:] += g
        gp[:, :-2] -= g
        gx = gp[:, 1:-1].clone()
        return gx


class FeedbackOnInputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, a):
        y = x.clone()
        y[:, 1:] = x[:, 1:] + a[0] * x[:, :-1]
        y[:, 2:] = y[:, 2:] + a[1] * x[:, :-2]
        ctx.save_for_backward(x, a, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, a, y = ctx.saved_tensors
        gx = g.clone()
        gx[:, :-1] += a[0] * g[:, 1:]
        gx[:, :-2] += a[1] * g[:, 2:]
        ga = torch.stack([(g[:, 1:] * y[:, :-1]).sum(), (g[:, 2:] * y[:, :-2]).sum()])
        return gx, ga


class WindowTwice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, frames, window):
        ctx.save_for_backward(frames, window)
        return (frames * window).pow(2).sum(-1)

    @staticmethod
    def backward(ctx, g):
        frames, window = ctx.saved_tensors
        windowed = frames * window
        g_w = (2 * g[..., None] * windowed * frames * window).sum(dim=(0, 1))
        g_f = 2 * g[..., None] * windowed * window
        return g_f, g_w


class WindowTwiceInline(torch.autograd.Function):
    @staticmethod
    def forward(ctx, frames, window):
        ctx.save_for_backward(frames, window)
        return (frames * window).sum(-1)

    @staticmethod
    def backward(ctx, g):
        frames, window = ctx.saved_tensors
        g_w = (g[..., None] * frames * window).sum(dim=(0, 1))
        return g[..., None] * window, g_w


class ClipperNormalisedSquare(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        t = torch.tanh(2 * x)
        y = t / math.tanh(2.0)
        ctx.save_for_backward(t, y)
        return y

    @staticmethod
    def backward(ctx, g):
        t, y = ctx.saved_tensors
        return g * 2 * (1 - y * y) / math.tanh(2.0)


class CompandSignTwice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x) * torch.log1p(5 * x.abs()) / math.log(6)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.sign(x) * 5 / ((1 + 5 * x.abs()) * math.log(6))


class ShiftedReluWrongTest(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, b):
        z = x - b
        ctx.save_for_backward(x, z)
        return torch.relu(z)

    @staticmethod
    def backward(ctx, g):
        x, z = ctx.saved_tensors
        on = x > 0
        gz = g * on
        return gz, -gz
"""


@BOTH
def test_a_value_forward_selects_gets_grad_output_everywhere_a_region(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SELECTIONS, "fill")
    x = _randn(module, 9, 2, 4, 3)
    mask = module.torch.tensor([[True, False, False, True], [False, True, True, False]])
    found = _only(failing_findings(module.FillEverywhere, (x, mask, _randn(module, 10, 3))), 2, "region")
    assert found.params["source"]["line"] == line_of(path, "gfill = g.sum(dim=(0, 1))")
    assert "g * mask[..., None]" in found.message


@BOTH
def test_a_replicate_pads_gradient_cropped_away_is_a_region_at_the_edges(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SELECTIONS, "pad")
    found = _only(failing_findings(module.ReplicatePadCropped, (_randn(module, 11, 2, 5, 3),)), 0, "region")
    assert found.params["description"] == "the first and last positions along dim 1 (the edges)"
    assert found.params["count"] == 12 and found.params["total"] == 30
    assert found.params["source"]["line"] == line_of(path, "gx = gp[:, 1:-1].clone()")


@BOTH
def test_every_read_of_one_tensor_where_another_is_needed_is_one_wrong_variable(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SELECTIONS, "feedback")
    x, a = _randn(module, 12, 2, 6), float_tensor(module, [0.5, -0.3])
    found = _only(failing_findings(module.FeedbackOnInputs, (x, a)), 1, "wrong_variable")
    assert (found.params["used"], found.params["needed"]) == ("y", "x")
    assert found.params["source"]["line"] == line_of(path, "ga = torch.stack(")


@BOTH
def test_an_extra_saved_factor_is_a_wrong_variable(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SELECTIONS, "window")
    frames, window = _randn(module, 13, 2, 3, 4), _randn(module, 14, 4)
    found = _only(failing_findings(module.WindowTwice, (frames, window)), 1, "wrong_variable")
    # `windowed` read where `frames` is needed says the same: windowed · frames · window = frames² · window²
    assert (found.params["expression"], found.params["expected"]) == ("windowed", "frames")
    assert found.params["source"]["line"] == line_of(path, "windowed = frames * window")


@BOTH
def test_an_extra_saved_factor_in_one_statement_is_a_wrong_variable(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SELECTIONS, "window_inline")
    frames, window = _randn(module, 16, 2, 3, 4), _randn(module, 17, 4)
    found = _only(failing_findings(module.WindowTwiceInline, (frames, window)), 1, "wrong_variable")
    assert found.params["extra_factor"] == "window"
    assert found.params["source"]["line"] == line_of(path, "g_w = (g[..., None] * frames")


@BOTH
def test_the_normalised_output_squared_for_the_tanh_squared_is_a_wrong_variable(tmp_path, backend):
    module, path = user_module(tmp_path, backend, "import math\n" + SELECTIONS, "clipper")
    found = _only(failing_findings(module.ClipperNormalisedSquare, (_randn(module, 15, 3, 4),)), 0,
                  "wrong_variable")
    assert "`y` where t is needed" in found.message


@BOTH
def test_a_sign_the_outer_sign_cancels_is_a_region_not_a_misread_tensor(tmp_path, backend):
    module, path = user_module(tmp_path, backend, "import math\n" + SELECTIONS, "compand")
    x = float_tensor(module, [[0.5, -0.4, 0.9, -1.2], [-0.3, 0.7, -0.8, 0.2], [1.1, -0.6, 0.4, -0.9]])
    found = _only(failing_findings(module.CompandSignTwice, (x,)), 0, "region")
    assert found.params["sign_dropped"] == "x"
    assert "exp(" not in found.message


@BOTH
def test_a_comparison_reading_the_wrong_tensor_is_a_region(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SELECTIONS, "shifted_relu")
    x = float_tensor(module, [[0.5, -0.4, 0.9, 1.2], [-0.3, 0.7, 0.1, 0.2], [1.1, -0.6, 0.4, 0.3]])
    b = float_tensor(module, np.full((3, 4), 0.35))
    found = _only(failing_findings(module.ShiftedReluWrongTest, (x, b)), 0, "region")
    assert (found.params["expression"], found.params["expected"]) == ("x", "z")
    assert found.params["source"]["line"] == line_of(path, "on = x > 0")


SHARED = """
class CompandNormHeld(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, mu):
        ctx.save_for_backward(x, mu)
        return torch.log1p(mu * x) / torch.log1p(mu)

    @staticmethod
    def backward(ctx, g):
        x, mu = ctx.saved_tensors
        norm = torch.log1p(mu)
        gx = g * mu / ((1 + mu * x) * norm)
        d_mu = x / ((1 + mu * x) * norm)
        g_mu = (g * d_mu).sum().reshape(1)
        return gx, g_mu


class LogProjectionDividesByLog(torch.autograd.Function):
    @staticmethod
    def forward(ctx, spec, fb):
        out = torch.log(spec @ fb)
        ctx.save_for_backward(spec, fb, out)
        return out

    @staticmethod
    def backward(ctx, g):
        spec, fb, out = ctx.saved_tensors
        g_z = g / out
        g_spec = g_z @ fb.T
        g_fb = spec.T @ g_z
        return g_spec, g_fb
"""


@BOTH
def test_a_piece_held_constant_is_quoted_where_backward_reads_it(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SHARED, "held")
    x = float_tensor(module, np.random.default_rng(18).uniform(0.2, 1.5, (3, 4)))
    found = _only(failing_findings(module.CompandNormHeld, (x, float_tensor(module, [4.0]))), 1, "missing_term")
    assert found.params["variant"] == "held_constant" and found.params["factor"] == "torch.log1p(mu)"
    assert found.params["source"]["line"] == line_of(path, "d_mu = x / ((1 + mu * x) * norm)")


@BOTH
def test_one_tensor_misread_for_two_inputs_is_quoted_where_their_adjoint_is_made(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SHARED, "logproj")
    spec = float_tensor(module, np.random.default_rng(19).uniform(0.5, 1.5, (3, 4)))
    fb = float_tensor(module, np.random.default_rng(20).uniform(0.5, 1.5, (4, 4)))
    findings = failing_findings(module.LogProjectionDividesByLog, (spec, fb))
    for index in (0, 1):
        found = _only(findings, index, "wrong_variable")
        assert (found.params["used"], found.params["needed"]) == ("out", "exp(output)")
        assert found.params["source"]["line"] == line_of(path, "g_z = g / out")


FRAMES = """
class FramesFlattenedAsTheyAre(torch.autograd.Function):
    @staticmethod
    def forward(ctx, signal):
        idx = torch.arange(4)[:, None] * 2 + torch.arange(3)[None, :]  # 4 frames of 3, hop 2
        ctx.save_for_backward(idx)
        ctx.length = signal.shape[-1]
        return signal[:, idx].transpose(1, 2)

    @staticmethod
    def backward(ctx, grad_frames):
        (idx,) = ctx.saved_tensors
        flat = grad_frames.reshape(grad_frames.shape[0], -1)
        grad = grad_frames.new_zeros(grad_frames.shape[0], ctx.length)
        return grad.index_add_(1, idx.reshape(-1), flat)
"""


@BOTH
def test_frames_flattened_without_moving_their_axes_back_is_a_missing_reshape(tmp_path, backend):
    module, path = user_module(tmp_path, backend, FRAMES, "frames")
    found = _only(failing_findings(module.FramesFlattenedAsTheyAre, (_randn(module, 21, 2, 9),)), 0,
                  "missing_reshape")
    assert found.params["transposed_first"] == "grad_frames.transpose(1, 2)"
    assert found.params["source"]["line"] == line_of(path, "flat = grad_frames.reshape(")


SWISH = """
class SwishBetaDroppedInOneTerm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, beta):
        bx = beta * x
        s = torch.sigmoid(bx)
        ctx.save_for_backward(x, beta, bx, s)
        return x * s

    @staticmethod
    def backward(ctx, g):
        x, beta, bx, s = ctx.saved_tensors
        gx = g * (s + x * s * (1 - s))
        gbeta = (g * x * x * s * (1 - s)).sum().reshape(1)
        return gx, gbeta
"""


@BOTH
def test_a_parameter_dropped_from_one_term_is_a_coefficient_at_the_parameters_value(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SWISH, "swish")
    x, beta = _randn(module, 22, 3, 4), float_tensor(module, [1.7])
    found = _only(failing_findings(module.SwishBetaDroppedInOneTerm, (x, beta)), 0, "missing_term")
    assert found.params["variant"] == "coefficient" and found.params["factor"] == pytest.approx(1.7)


SCENES = """
KNEE_LOW = 0.25
KNEE_HIGH = 0.5
WRAP = 0.3


class RunningProductKeptInAList(torch.autograd.Function):
    @staticmethod
    def forward(ctx, alpha):
        trans = torch.ones(alpha.shape[0], dtype=alpha.dtype)
        ctx.trans = []
        out = torch.zeros(alpha.shape[0], dtype=alpha.dtype)
        for t in range(alpha.shape[1]):
            ctx.trans.append(trans)
            out = out + trans * alpha[:, t]
            trans.mul_(1 - alpha[:, t])
        ctx.save_for_backward(alpha)
        return out

    @staticmethod
    def backward(ctx, g):
        (alpha,) = ctx.saved_tensors
        trans = torch.stack(ctx.trans, dim=1)
        return g[:, None] * trans


class ProjectionDepthFromOneOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p, f):
        ctx.save_for_backward(p, f)
        x, y, z = p.unbind(-1)
        return f[0] * x / z, f[1] * y / z

    @staticmethod
    def backward(ctx, grad_u, grad_v):
        p, f = ctx.saved_tensors
        x, y, z = p.unbind(-1)
        fx, fy = f[0], f[1]
        grad_z = -grad_u * fx * x / z ** 2
        grad_p = torch.stack([grad_u * fx / z, grad_v * fy / z, grad_z], dim=-1)
        grad_f = torch.stack([(grad_u * x / z).sum(), (grad_v * y / z).sum()])
        return grad_p, grad_f


class KneeFromTheOtherCurve(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return torch.where(v <= KNEE_LOW, 4 * v, v * v + 0.9375)

    @staticmethod
    def backward(ctx, g):
        (v,) = ctx.saved_tensors
        low = v <= KNEE_HIGH
        return g * torch.where(low, 4 + 0 * v, 2 * v)


class WrappedClampAtZero(torch.autograd.Function):
    @staticmethod
    def forward(ctx, d):
        ctx.save_for_backward(d)
        return torch.clamp(d + WRAP, min=0) / (1 + WRAP)

    @staticmethod
    def backward(ctx, g):
        (d,) = ctx.saved_tensors
        return g * (d > 0) / (1 + WRAP)
"""


@BOTH
def test_a_tensor_kept_in_a_ctx_list_and_changed_in_place_is_inplace(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SCENES, "scenes_list")
    alpha = float_tensor(module, np.random.default_rng(23).uniform(0.1, 0.6, (3, 4)))
    findings = failing_findings(module.RunningProductKeptInAList, (alpha,))
    assert [f.kind for f in findings] == ["inplace"]
    assert findings[0].params["ctx_attributes"][0]["attribute"] == "trans[0]"
    assert findings[0].params["source"]["line"] == line_of(path, "trans.mul_(1 - alpha[:, t])")


@BOTH
def test_a_quantity_both_outputs_read_missing_one_outputs_term_is_a_missing_term(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SCENES, "scenes_projection")
    p = float_tensor(module, np.random.default_rng(24).uniform(1.0, 2.0, (4, 3)))
    found = _only(failing_findings(module.ProjectionDepthFromOneOutput, (p, float_tensor(module, [1.5, 1.2]))), 0,
                  "missing_term")
    assert found.params["output_term"] == "grad_v" and found.params["term"] == "-grad_v * fy * y / z ** 2"
    assert found.params["source"]["line"] == line_of(path, "grad_z = -grad_u * fx * x / z ** 2")


@BOTH
def test_a_branch_compared_with_another_module_constant_is_a_region(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SCENES, "scenes_knee")
    v = float_tensor(module, [[0.1, 0.3, 0.45, 0.8], [0.2, 0.35, 0.6, 0.05], [0.4, 0.9, 0.15, 0.3]])
    found = _only(failing_findings(module.KneeFromTheOtherCurve, (v,)), 0, "region")
    assert (found.params["comparison"], found.params["expected"]) == ("KNEE_HIGH", "KNEE_LOW")
    assert found.params["source"]["line"] == line_of(path, "low = v <= KNEE_HIGH")


@BOTH
def test_a_literal_bound_where_a_module_constant_is_needed_is_a_region(tmp_path, backend):
    module, path = user_module(tmp_path, backend, SCENES, "scenes_wrap")
    d = float_tensor(module, [[0.5, -0.1, -0.2, 0.8], [-0.25, 0.35, -0.6, 0.05], [0.4, -0.05, -0.5, 0.3]])
    found = _only(failing_findings(module.WrappedClampAtZero, (d,)), 0, "region")
    assert found.params["expected"] == "-WRAP"
    assert found.params["source"]["line"] == line_of(path, "return g * (d > 0) / (1 + WRAP)")


PRODUCTS = """
class CrossTermForOneComponent(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p, w):
        ctx.save_for_backward(p, w)
        x, y = p.unbind(-1)
        return w[0] * x + w[1] * y + w[2] * x * y

    @staticmethod
    def backward(ctx, g):
        p, w = ctx.saved_tensors
        x, y = p.unbind(-1)
        gx = g * w[0] + g * w[2] * y
        gy = g * w[1]
        grad_w = torch.stack([(g * x).sum(), (g * y).sum(), (g * x * y).sum()])
        return torch.stack([gx, gy], dim=-1), grad_w
"""


@BOTH
def test_a_product_of_two_components_differentiated_for_one_only_misses_its_partner_term(tmp_path, backend):
    module, path = user_module(tmp_path, backend, PRODUCTS, "products")
    p, w = _randn(module, 25, 5, 2), float_tensor(module, [0.5, -1.2, 0.8])
    found = _only(failing_findings(module.CrossTermForOneComponent, (p, w)), 0, "missing_term")
    assert found.params["variant"] == "partner"
    assert found.params["source"]["line"] == line_of(path, "gy = g * w[1]")


BASIS = """
class BasisReadBackInAnotherOrder(torch.autograd.Function):
    @staticmethod
    def forward(ctx, normal, coeffs):
        x, y, z = normal.unbind(-1)
        basis = torch.stack([y, z, x], dim=-1)
        ctx.save_for_backward(coeffs, basis)
        return basis @ coeffs

    @staticmethod
    def backward(ctx, g):
        coeffs, basis = ctx.saved_tensors
        g_basis = g @ coeffs.T
        return g_basis, basis.T @ g
"""


@BOTH
def test_entries_stored_in_another_order_and_read_back_unpermuted_are_a_missing_reshape(tmp_path, backend):
    module, path = user_module(tmp_path, backend, BASIS, "basis")
    normal, coeffs = _randn(module, 26, 5, 3), _randn(module, 27, 3, 2)
    found = _only(failing_findings(module.BasisReadBackInAnotherOrder, (normal, coeffs)), 0, "missing_reshape")
    assert (found.params["axis"], found.params["order"]) == (1, [1, 2, 0])
    assert "entries 0, 1, 2 hold the gradients of entries 1, 2, 0" in found.message
