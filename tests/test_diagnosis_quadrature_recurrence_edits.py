"""Issue 17: diagnoses met first on quadrature, recurrences, scans and pair potentials (the
seventeenth pass of specs/diagnosis.md). Each case is a small user file written for this test,
imported as a user's module is, under ``import torch`` and ``import gradcli as torch``:

- a running (prefix) sum's adjoint taken as a prefix sum again is a ``missing_flip``, quoted at
  the scan, with the advice to accumulate in reverse;
- a squared distance compared with a cutoff written unsquared is a ``region`` ("CUTOFF² is
  needed");
- a pair potential whose backward adds the force at the pair list's first column only is a
  ``missing_term``: the reaction at the other column (``PAIRS[:, 1]``);
- a window read one step early (``x[:, :T]`` where ``x[:, 1:T + 1]`` is needed) is a
  ``wrong_variable``;
- a Horner derivative updated after its value (two statements of the loop in the wrong order) is a
  ``wrong_variable`` with the advice to move the statement;
- a parameter's gradient summed without grad_output (``lap.sum(dims)`` for ``(lap * g).sum(dims)``)
  is ``ignores_grad_output`` at that statement;
- ``1/(e^x − 1)`` for d log(e^x − 1) = 1 + 1/(e^x − 1) is the constant term left out
  (``missing_term``), not a tensor read in another's place;
- a gain cancelled to rounding (2.2e-16) is never a ``scale``;
- a trapezoid rule's two end weights wrong is a ``region`` at the edges, not a per-slice scale;
- a step down (``x < 0``) with a negative sigmoid bump for backward is a ``smooth_surrogate``;
- the input read where its clamp is needed is a ``region`` (wrong only where the clamp acts),
  quoted at the read;
- a recurrence's derivative ``2 * x * dH[k]`` without the product rule's ``2 * H[k]`` is a
  ``missing_term`` naming that term;
- a loop that overwrites a gradient first bound in a tuple (``gx, gw = …``) is
  ``not_accumulated``;
- log-probabilities read where probabilities are needed name ``exp(logp)``; the output ``y = h·S``
  read for ∂y/∂h names ``output / h`` — but a mask read from a ReLU-like output stays a region.
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


def _randn(module, seed, *shape):
    return float_tensor(module, np.random.default_rng(seed).standard_normal(shape))


def _uniform(module, seed, low, high, *shape):
    return float_tensor(module, np.random.default_rng(seed).uniform(low, high, shape))


QUADRATURE = """
CUTOFF = 1.5
PAIRS = torch.tensor([[0, 1], [1, 2], [2, 3], [0, 3], [1, 3]])


class TrapezoidRunningPrefix(torch.autograd.Function):
    @staticmethod
    def forward(ctx, f):
        return 0.1 * torch.cumsum(0.5 * (f[:, :-1] + f[:, 1:]), dim=1)

    @staticmethod
    def backward(ctx, g):
        acc = torch.cumsum(g, dim=1) * 0.05
        gf = torch.zeros(g.shape[0], g.shape[1] + 1, dtype=g.dtype)
        gf[:, :-1] += acc
        gf[:, 1:] += acc
        return gf


class SoftCutoffUnsquared(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        r2 = (x * x).sum(1)
        ctx.save_for_backward(x, r2)
        inside = r2 < CUTOFF ** 2
        return torch.where(inside, r2, torch.zeros_like(r2))

    @staticmethod
    def backward(ctx, g):
        x, r2 = ctx.saved_tensors
        inside = r2 < CUTOFF
        return (g * inside)[:, None] * 2 * x


class SpringsOneEnd(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        d = x[PAIRS[:, 0]] - x[PAIRS[:, 1]]
        return (d * d).sum()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        d = x[PAIRS[:, 0]] - x[PAIRS[:, 1]]
        gx = torch.zeros_like(x)
        gx.index_add_(0, PAIRS[:, 0], 2 * g * d)
        return gx


class TrapezoidEndsFull(torch.autograd.Function):
    @staticmethod
    def forward(ctx, f):
        return 0.1 * (0.5 * f[:, 0] + f[:, 1:-1].sum(1) + 0.5 * f[:, -1])

    @staticmethod
    def backward(ctx, g):
        w = torch.ones(6, dtype=g.dtype)
        return 0.1 * g[:, None] * w


class GainCancelledToRounding(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3.0

    @staticmethod
    def backward(ctx, g):
        gain = (1.0 + 3e-16) - 1.0
        return g * 3.0 * gain
"""


@BOTH
def test_a_prefix_sums_adjoint_taken_as_a_prefix_sum_is_a_missing_flip_at_the_scan(tmp_path, backend):
    module, path = user_module(tmp_path, backend, QUADRATURE, "prefix")
    found = _only(failing_findings(module.TrapezoidRunningPrefix, (_randn(module, 2, 3, 6),)), 0, "missing_flip")
    assert found.params["scan"] == "cumsum" and found.params["dims"] == [1] and found.params["operand"] == "g"
    assert found.params["source"]["line"] == line_of(path, "acc = torch.cumsum(g, dim=1)")
    assert "accumulate in reverse: `g` flipped along dim 1, cumsum, flipped back" in found.hint


@BOTH
def test_a_squared_distance_against_an_unsquared_cutoff_is_a_region(tmp_path, backend):
    module, path = user_module(tmp_path, backend, QUADRATURE, "cutoff")
    found = _only(failing_findings(module.SoftCutoffUnsquared, (_randn(module, 2, 40, 2),)), 0, "region")
    assert found.params["threshold"] == "CUTOFF ** 2"
    assert "where CUTOFF² is needed" in found.message
    assert found.params["source"]["line"] == max(
        k for k, line in enumerate(path.read_text().splitlines(), 1) if line.strip() == "inside = r2 < CUTOFF")


@BOTH
def test_a_pair_lists_first_column_alone_misses_the_reaction_at_its_second(tmp_path, backend):
    module, path = user_module(tmp_path, backend, QUADRATURE, "springs")
    found = _only(failing_findings(module.SpringsOneEnd, (_randn(module, 3, 4, 3),)), 0, "missing_term")
    assert found.params["reaction"] == "PAIRS[:, 1]" and found.params["term"] == "-2 * g * d at `PAIRS[:, 1]`"
    assert found.params["source"]["line"] == line_of(path, "gx.index_add_(0, PAIRS[:, 0]")


@BOTH
def test_a_trapezoids_two_end_weights_wrong_is_a_region_at_the_edges(tmp_path, backend):
    module, path = user_module(tmp_path, backend, QUADRATURE, "ends")
    found = _only(failing_findings(module.TrapezoidEndsFull, (_randn(module, 6, 3, 6),)), 0, "region")
    assert found.params["description"] == "the first and last positions along dim 1 (the edges)"
    assert (found.params["count"], found.params["total"]) == (6, 18) and found.params["factor"] == 2.0


@BOTH
def test_a_gain_cancelled_to_rounding_is_never_a_scale(tmp_path, backend):
    module, path = user_module(tmp_path, backend, QUADRATURE, "rounding")
    findings = failing_findings(module.GainCancelledToRounding, (_randn(module, 1, 3, 4),))
    assert findings and all(f.kind != "scale" for f in findings), findings
    assert all(f.params.get("source", {}).get("line") == line_of(path, "gain = (1.0 + 3e-16) - 1.0")
               for f in findings if f.kind != "none")


RECURRENCES = """
STEP = 0.1


def _second_difference(u):
    return torch.roll(u, 1, 2) - 2 * u + torch.roll(u, -1, 2)


class NextStepWindowStale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, x):
        T = x.shape[1] - 1
        ctx.save_for_backward(a, x)
        return a * x[:, 1:T + 1]

    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        T = x.shape[1] - 1
        ga = g * x[:, :T]
        gx = torch.zeros_like(x)
        gx[:, 1:T + 1] = g * a
        return ga, gx


class HornerDerivativeLate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        p = torch.zeros_like(x)
        for c in (0.5, -1.0, 2.0, 3.0):
            p = p * x + c
        return p

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        p = torch.zeros_like(x)
        d = torch.zeros_like(x)
        for c in (0.5, -1.0, 2.0, 3.0):
            p = p * x + c
            d = d * x + p
        return g * d


class DiffusionRateSummedAlone(torch.autograd.Function):
    @staticmethod
    def forward(ctx, u, rate):
        lap = _second_difference(u)
        ctx.save_for_backward(rate, lap)
        return u + STEP * rate[:, None] * lap

    @staticmethod
    def backward(ctx, g):
        rate, lap = ctx.saved_tensors
        gu = g + STEP * _second_difference(rate[:, None] * g)
        grate = STEP * lap.sum(dim=(0, 2))
        return gu, grate


class HermiteNoProductTerm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        H = [torch.ones_like(x), 2 * x]
        for k in range(1, 4):
            H.append(2 * x * H[k] - 2 * k * H[k - 1])
        return H[4]

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        H = [torch.ones_like(x), 2 * x]
        dH = [torch.zeros_like(x), 2 * torch.ones_like(x)]
        for k in range(1, 4):
            H.append(2 * x * H[k] - 2 * k * H[k - 1])
            dH.append(2 * x * dH[k] - 2 * k * dH[k - 1])
        return g * dH[4]


class SharedGainOverwritten(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w[:, None]

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx, gw = torch.zeros_like(x), torch.zeros_like(w)
        for k in range(x.shape[1]):
            gx[:, k] = g[:, k] * w
            gw = g[:, k] * x[:, k]
        return gx, gw
"""


@BOTH
def test_a_window_read_one_step_early_is_a_wrong_variable(tmp_path, backend):
    module, path = user_module(tmp_path, backend, RECURRENCES, "window")
    a, x = _randn(module, 4, 2, 4), _randn(module, 5, 2, 5)
    found = _only(failing_findings(module.NextStepWindowStale, (a, x)), 0, "wrong_variable")
    assert (found.params["used"], found.params["needed"], found.params["step"]) == ("x[:, :T]", "x[:, 1:T + 1]", 1)
    assert found.params["source"]["line"] == line_of(path, "ga = g * x[:, :T]")
    assert not [f for f in failing_findings(module.NextStepWindowStale, (a, x)) if f.input == 1]


@BOTH
def test_a_horner_derivative_updated_after_its_value_is_two_statements_in_the_wrong_order(tmp_path, backend):
    module, path = user_module(tmp_path, backend, RECURRENCES, "horner")
    found = _only(failing_findings(module.HornerDerivativeLate, (_randn(module, 6, 3, 4),)), 0, "wrong_variable")
    assert found.params["order"] is True and found.params["used"] == "p (updated)"
    lines = [k for k, line in enumerate(path.read_text().splitlines(), 1) if line.strip() == "d = d * x + p"]
    assert found.params["source"]["line"] == lines[-1]
    assert "compute this statement before `p = p * x + c`" in found.hint


@BOTH
def test_a_parameter_gradient_summed_without_grad_output_is_located_at_the_sum(tmp_path, backend):
    module, path = user_module(tmp_path, backend, RECURRENCES, "diffusion")
    u, rate = _randn(module, 1, 2, 3, 6), float_tensor(module, [0.5, 1.0, 1.5])
    findings = failing_findings(module.DiffusionRateSummedAlone, (u, rate))
    found = _only(findings, 1, "ignores_grad_output")
    assert found.params["grad_output"] == "g" and found.params["edit"] == "rewrite"
    assert found.params["source"]["line"] == line_of(path, "grate = STEP * lap.sum(dim=(0, 2))")
    assert not [f for f in findings if f.input == 0]


@BOTH
def test_a_recurrences_derivative_without_the_product_rules_other_term_names_it(tmp_path, backend):
    module, path = user_module(tmp_path, backend, RECURRENCES, "hermite")
    found = _only(failing_findings(module.HermiteNoProductTerm, (_uniform(module, 5, -1, 1, 3, 4),)), 0,
                  "missing_term")
    assert (found.params["term"], found.params["partner_of"]) == ("2 * H[k]", "2 * x * dH[k]")
    assert found.params["source"]["line"] == line_of(path, "dH.append(2 * x * dH[k]")


@BOTH
def test_a_loop_overwriting_a_gradient_bound_in_a_tuple_is_not_accumulated(tmp_path, backend):
    module, path = user_module(tmp_path, backend, RECURRENCES, "overwrite")
    findings = failing_findings(module.SharedGainOverwritten, (_randn(module, 6, 4, 3), _randn(module, 7, 4)))
    found = _only(findings, 1, "not_accumulated")
    assert found.params["loop"] is True
    assert found.params["source"]["line"] == line_of(path, "gw = g[:, k] * x[:, k]")
    assert not [f for f in findings if f.input == 0]


READS = """
class SoftplusInverseNoOne(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log(torch.expm1(x))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / torch.expm1(x)


class BelowZeroSurrogate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x < 0).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(4 * x)
        return -g * 4 * s * (1 - s)


class ClampedSquareReadsRaw(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        c = x.clamp(-1.0, 1.0)
        ctx.save_for_backward(x, c)
        return x * c

    @staticmethod
    def backward(ctx, g):
        x, c = ctx.saved_tensors
        inside = (x > -1.0) & (x < 1.0)
        return g * (x + x * inside)


class NllReadsLogProbabilities(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, onehot):
        logp = x - torch.logsumexp(x, dim=1, keepdim=True)
        ctx.save_for_backward(logp, onehot)
        return -(logp * onehot).sum(1)

    @staticmethod
    def backward(ctx, g):
        logp, onehot = ctx.saved_tensors
        return g[:, None] * (logp - onehot), None


class ScaledWaveReadsOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, h):
        y = h * torch.sin(x) * torch.exp(-x * x)
        ctx.save_for_backward(x, h, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, h, y = ctx.saved_tensors
        gx = g * h * torch.exp(-x * x) * (torch.cos(x) - 2 * x * torch.sin(x))
        return gx, g * y


class LeakyMaskFromOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, a):
        y = torch.where(x > 0, x, a * x)
        ctx.save_for_backward(x, a, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, a, y = ctx.saved_tensors
        gx = g * (y > 0)
        ga = (g * torch.where(x > 0, torch.zeros_like(x), x)).sum().reshape(1)
        return gx, ga
"""


@BOTH
def test_a_constant_term_left_out_is_a_missing_term_not_a_tensor_read_in_anothers_place(tmp_path, backend):
    module, path = user_module(tmp_path, backend, READS, "softplus_inverse")
    found = _only(failing_findings(module.SoftplusInverseNoOne, (_uniform(module, 4, 0.3, 2.0, 3, 4),)), 0,
                  "missing_term")
    assert (found.params["term"], found.params["coefficient"]) == ("1", 1.0)
    assert found.params["source"]["line"] == line_of(path, "return g / torch.expm1(x)")


@BOTH
def test_a_step_down_with_a_negative_bump_is_a_smooth_surrogate(tmp_path, backend):
    module, path = user_module(tmp_path, backend, READS, "below_zero")
    x = _randn(module, 2, 3, 5)
    found = _only(failing_findings(module.BelowZeroSurrogate, (x,)), 0, "smooth_surrogate")
    assert found.params["falling"] is True and "negative bump" in found.message
    values = np.asarray(x.detach().numpy() if hasattr(x, "detach") else x.data).ravel()
    assert found.params["peak_at"] == values[np.argmin(np.abs(values))]  # the sample nearest the step


@BOTH
def test_the_input_read_where_its_clamp_is_needed_is_a_region_quoted_at_the_read(tmp_path, backend):
    module, path = user_module(tmp_path, backend, READS, "clamped")
    x = float_tensor(module, 1.5 * np.random.default_rng(3).standard_normal((4, 5)))
    found = _only(failing_findings(module.ClampedSquareReadsRaw, (x,)), 0, "region")
    values = np.asarray(x.detach().numpy() if hasattr(x, "detach") else x.data)
    outside = int(np.count_nonzero(np.abs(values) > 1.0))
    assert found.params["coincide"] == [outside, 20] and 0 < outside < 20
    assert (found.params["used"], found.params["needed"]) == ("x", "c")
    assert found.params["source"]["line"] == line_of(path, "return g * (x + x * inside)")
    assert "use c instead of `x`" in found.hint


@BOTH
def test_log_probabilities_read_where_probabilities_are_needed_name_exp_of_the_saved_log(tmp_path, backend):
    module, path = user_module(tmp_path, backend, READS, "nll")
    onehot = module.torch.tensor(np.eye(5)[[0, 3, 1]], dtype=module.torch.float64)
    found = _only(failing_findings(module.NllReadsLogProbabilities, (_randn(module, 8, 3, 5), onehot)), 0,
                  "wrong_variable")
    assert (found.params["used"], found.params["needed"]) == ("logp", "exp(logp)")
    assert found.params["source"]["line"] == line_of(path, "return g[:, None] * (logp - onehot), None")


@BOTH
def test_the_output_read_where_output_over_a_factor_is_needed_names_it(tmp_path, backend):
    module, path = user_module(tmp_path, backend, READS, "wave")
    x, h = _randn(module, 9, 3, 4), _uniform(module, 10, 0.5, 2.0, 3, 4)
    findings = failing_findings(module.ScaledWaveReadsOutput, (x, h))
    found = _only(findings, 1, "wrong_variable")
    assert (found.params["used"], found.params["needed"]) == ("y", "output / h")
    assert found.params["source"]["line"] == line_of(path, "return gx, g * y")
    assert not [f for f in findings if f.input == 0]


@BOTH
def test_a_mask_read_from_a_relu_like_output_stays_a_region_never_output_over_x(tmp_path, backend):
    module, path = user_module(tmp_path, backend, READS, "leaky")
    findings = failing_findings(module.LeakyMaskFromOutput, (_randn(module, 11, 3, 4), float_tensor(module, [0.2])))
    found = _only(findings, 0, "region")
    assert found.params["description"] == "x < 0" and (found.params["count"], found.params["total"]) == (6, 12)
    assert all("output /" not in str(f.params.get("needed", "")) for f in findings)
