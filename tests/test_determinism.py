"""A forward that draws random numbers (determinism.py): checked with the random generators re-seeded
before each forward call, said on the result; a forward that no seed makes repeatable is never a PASS.
Found on pyro's samplers: `_GSMSample` (noise from `.new(shape).normal_()`) passed with a made-up gradient,
because the numeric derivative was noise and its error estimate grew past the values compared."""
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner

import gradcli
from gradcli.autograd import Function
from gradcli.check import gradcheck
from gradcli.cli import main


class Sample(Function):
    """loc + scale * eps, eps ~ N(0, 1) drawn in forward: the pathwise gradient is (g, g * eps)."""
    @staticmethod
    def forward(ctx, loc, scale):
        eps = gradcli.randn_like(loc)
        ctx.save_for_backward(eps)
        return loc + scale * eps

    @staticmethod
    def backward(ctx, g):
        (eps,) = ctx.saved_tensors
        return g, g * eps


class SampleTwiceTooLarge(Sample):
    @staticmethod
    def backward(ctx, g):
        (eps,) = ctx.saved_tensors
        return g, 2 * g * eps


class Drifting(Function):
    """Output depends on how often forward ran: no seed makes it repeatable."""
    calls = 0

    @staticmethod
    def forward(ctx, x):
        Drifting.calls += 1
        return x * (1.0 + 0.01 * Drifting.calls)

    @staticmethod
    def backward(ctx, g):
        return g * 1.01


def _inputs():
    rng = np.random.default_rng(3)
    return (gradcli.tensor(rng.normal(size=(3, 4)), requires_grad=True),
            gradcli.tensor(rng.normal(size=(3, 4)), requires_grad=True))


def test_a_correct_sampler_passes_and_says_it_was_checked_for_one_fixed_draw():
    report = gradcheck(Sample, _inputs())
    assert report.status == "pass"
    random = report.check("random")
    assert random.status == "warn" and random.details["seed"] == 0x5EED and random.details["difference"] > 0.1
    assert "re-seeded (seed 24301) before each forward call" in random.message
    assert report.check("layouts").message.startswith("not tried: forward draws random numbers")


def test_a_wrong_sampler_fails_and_its_diagnosis_sees_the_same_draws():
    report = gradcheck(SampleTwiceTooLarge, _inputs())
    assert report.status == "fail"
    failed = {r.name for r in report.inputs if r.status == "fail"}
    assert failed == {"scale"}
    assert report.diagnosis[0].kind != "nondeterministic"
    assert report.diagnosis[0].params.get("factor") == pytest.approx(2.0)


def test_a_forward_no_seed_makes_repeatable_is_skipped_with_the_reason_never_passed():
    report = gradcheck(Drifting, (gradcli.tensor(np.linspace(-1, 1, 6), requires_grad=True),))
    assert report.status == "skip"
    values = report.check("values")
    assert values.status == "skip" and "forward is not deterministic" in values.message
    assert values.details["difference"] >= 0.01   # |x| max 1, 1 % more per call since the first


def test_a_deterministic_forward_gets_no_random_check():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    report = gradcheck(Square, (_inputs()[0],))
    assert report.status == "pass" and report.check("random") is None


def test_the_callers_random_generators_are_left_as_they_were():
    import random
    np.random.seed(11)
    random.seed(13)
    expected_np, expected_py = np.random.random(), random.random()
    np.random.seed(11)
    random.seed(13)
    gradcheck(Sample, _inputs())   # forward draws from the engine's stream only
    assert (np.random.random(), random.random()) == (expected_np, expected_py)
    gradcli.manual_seed(0x5EED)
    reseeded_draw = gradcli.randn(3).data.copy()
    gradcli.manual_seed(12)
    gradcheck(Sample, _inputs())
    assert not np.array_equal(gradcli.randn(3).data, reseeded_draw)   # not left at the check's own seed


SAMPLERS = textwrap.dedent('''
    import torch


    class NormalSample(torch.autograd.Function):
        @staticmethod
        def forward(ctx, loc, scale):
            eps = torch.randn_like(loc)
            ctx.save_for_backward(eps)
            return loc + scale * eps

        @staticmethod
        def backward(ctx, g):
            (eps,) = ctx.saved_tensors
            return g, g * eps


    class MadeUpGradient(torch.autograd.Function):
        @staticmethod
        def forward(ctx, loc, scale):
            return loc + scale * loc.new(loc.shape).normal_()

        @staticmethod
        def backward(ctx, g):
            return g, g * 0.37
''')


def test_torch_samplers_through_the_cli(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "samplers.py").write_text(SAMPLERS)
    outcome = CliRunner().invoke(main, ["check", str(tmp_path / "samplers.py"), "--format", "plain"])
    assert outcome.exit_code == 1, outcome.output
    head = outcome.output.splitlines()
    assert any(line.endswith("1 passed: NormalSample; 1 failed") for line in head), outcome.output
    assert "warning NormalSample: random: forward draws random numbers" in outcome.output
    assert "FAIL  MadeUpGradient" in outcome.output
    assert "forward gives different outputs" not in outcome.output
