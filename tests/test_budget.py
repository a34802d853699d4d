"""Estimate before allocating (issue 20.3) and budget-aware numerics (issue 16.3).

Oversized checks are refused up front with what they need (``--max-memory``); full mode that would
take longer than its time budget checks an input along random directions and says so; the numeric
reference spends Richardson only where a verdict is still open, and counts its forward calls.
"""
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import gradcli
from gradcli.autograd import Function
from gradcli.check.budget import Needs, estimate, format_size, parse_size, refusal
from gradcli.cli import main

GiB = 2**30


# ----- sizes ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, size", [("2G", 2 * GiB), ("512M", 512 * 2**20), ("1.5GiB", int(1.5 * GiB)),
                                        ("3e9", 3_000_000_000), ("64 kb", 64 * 1024), ("1T", 2**40)])
def test_memory_sizes_parse(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "abc", "-1G", "0", "2X", "nanG", "infG"])
def test_bad_memory_sizes_are_refused(text):
    with pytest.raises(ValueError, match="is not a memory size"):
        parse_size(text)


def test_sizes_are_printed_in_binary_units():
    assert [format_size(s) for s in (512, 2048, 1.5 * GiB, 34.4 * GiB, 3 * 2**40)] == \
        ["512 B", "2 KiB", "1.5 GiB", "34 GiB", "3 TiB"]


# ----- the estimate ---------------------------------------------------------------------------------
def test_the_estimate_grows_with_the_inputs_and_full_mode_needs_more():
    small, large = estimate([12]), estimate([400_000_000])
    assert large.fast_bytes > 10**7 * small.fast_bytes
    assert large.full_bytes > large.fast_bytes > 400_000_000 * 8  # at least the input itself
    # full mode evaluates every element (central 4 + complex step 1) up to 20 000 elements
    assert estimate([4096]).full_evaluations == 5 * 4096 + 4
    assert estimate([4096]).fast_evaluations == 7


def test_refusal_names_the_need_the_limit_and_the_cheaper_mode():
    needs = Needs(full_bytes=241 * GiB, fast_bytes=int(1.5 * GiB), full_evaluations=16, fast_evaluations=7,
                  elements=400_000_000)
    assert refusal(needs, "full", 2 * GiB) == (
        "not checked: needs ~241 GiB for full mode (limit 2 GiB; --mode fast needs ~1.5 GiB) at 400,000,000 input "
        "elements, and ~16 forward evaluations (fast mode: ~7); raise the limit with --max-memory")
    assert refusal(needs, "auto", 2 * GiB) is None  # auto runs fast mode at this size, and that fits
    assert refusal(needs, "fast", GiB) == (
        "not checked: needs ~1.5 GiB even in fast mode (limit 1 GiB) at 400,000,000 input elements: check at a "
        "smaller --shape, or raise the limit with --max-memory")
    assert refusal(needs, "full", None) is None  # no limit known: nothing refused


CALIBRATE = """
import json, sys, tracemalloc
import numpy as np
import gradcli
from gradcli.autograd import Function
from gradcli.check.budget import estimate

class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g

mode, n = sys.argv[1], int(sys.argv[2])
gradcli.gradcheck(Cube, (gradcli.tensor(np.ones((2, 2)), requires_grad=True),), mode=mode)  # imports, warm-up
tracemalloc.start()  # numpy's allocations are traced: the peak is exact, whatever else the process holds
x = gradcli.tensor(np.random.default_rng(0).standard_normal((n, n)), requires_grad=True)
report = gradcli.gradcheck(Cube, (x,), mode=mode)
peak = tracemalloc.get_traced_memory()[1]
needs = estimate([n * n])
print(json.dumps({"ok": report.ok, "peak": peak, "estimate": needs.full_bytes if mode == "full" else needs.fast_bytes}))
"""


@pytest.mark.parametrize("mode", ["full", "fast"])
def test_the_estimate_covers_the_measured_peak(mode):
    """The peak of a real gradcheck on 250,000 elements (traced allocations) lies below the estimate,
    within 3x of it."""
    out = subprocess.run([sys.executable, "-c", CALIBRATE, mode, "500"], capture_output=True, text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["ok"]
    assert got["peak"] <= got["estimate"] <= 3 * got["peak"], got


# ----- refusing before allocating (the CLI) -------------------------------------------------------------
SQUARE = """
    from gradcli.autograd import Function

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g
"""


def check_json(tmp_path, source, *args):
    path = Path(tmp_path) / "fn.py"
    path.write_text(textwrap.dedent(source))
    out = Path(tmp_path) / "report.json"
    result = CliRunner().invoke(main, ["check", str(path), "--format", "plain", "--no-exact", "--json", str(out),
                                       *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result, json.loads(out.read_text())["results"][0]


@pytest.mark.parametrize("shape, need", [("20000x20000", "34 GiB"), ("100000x100000", "857 GiB")])
def test_an_oversized_check_is_refused_with_its_estimate(tmp_path, shape, need):
    result, r = check_json(tmp_path, SQUARE, "--shape", shape, "--max-memory", "2G")
    assert result.exit_code == 0, result.output
    assert r["status"] == "skip" and r["inputs"] == []  # nothing was drawn
    assert r["message"].startswith(f"not checked: needs ~{need} even in fast mode (limit 2 GiB) at ")
    assert f"SKIP Square: not checked: needs ~{need} even in fast mode" in result.output


def test_full_mode_refused_names_fast_mode(tmp_path):
    result, r = check_json(tmp_path, SQUARE, "--shape", "2000x2000", "--mode", "full", "--max-memory", "500M")
    assert r["status"] == "skip"
    assert r["message"].startswith("not checked: needs ~2.4 GiB for full mode (limit 500 MiB; --mode fast needs "
                                   "~351 MiB) at 4,000,000 input elements, and ~16 forward evaluations (fast mode: ~7)"), r["message"]
    result, r = check_json(tmp_path, SQUARE, "--shape", "2000x2000", "--mode", "fast", "--max-memory", "500M")
    assert r["status"] == "pass", r["message"]


def test_given_input_shapes_are_estimated_too(tmp_path):
    result, r = check_json(tmp_path, SQUARE, "--input", "x=30000x30000", "--max-memory", "1G")
    assert r["status"] == "skip" and "at 900,000,000 input elements" in r["message"]


def test_a_bad_max_memory_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(main, ["check", str(tmp_path), "--max-memory", "lots"])
    assert result.exit_code == 2
    assert "'lots' is not a memory size" in result.output and "Traceback" not in result.output


# ----- the time budget of full mode ------------------------------------------------------------------
class SlowCumsum(Function):
    """A costly forward that does not broadcast over a batch axis (per-element strategy: a loop)."""

    @staticmethod
    def forward(ctx, x):
        time.sleep(0.02)
        return x.cumsum(1)

    @staticmethod
    def backward(ctx, g):
        return g.flip(1).cumsum(1).flip(1)


class SlowCumsumWrong(SlowCumsum):
    @staticmethod
    def backward(ctx, g):
        return g.flip(1).cumsum(1).flip(1) * 1.01


def x34():
    return gradcli.tensor(np.random.default_rng(1).standard_normal((3, 4)), requires_grad=True)


def test_full_mode_over_its_time_budget_checks_along_random_directions_and_says_so():
    # 12 elements x 5 evaluations x >= 0.02 s each is at least 1.2 s on any machine: over a 0.1 s budget
    report = gradcli.gradcheck(SlowCumsum, (x34(),), mode="full", time_budget=0.1)
    assert report.ok
    (x,) = report.inputs
    assert x.status == "pass" and x.max_abs_error is None
    assert x.message.startswith("checked in fast mode (random directions, not localised): full mode needs ~60 "
                                "forward evaluations for its 12 elements (~")
    values = report.check("values")
    assert values.details["too_large"] and values.details["why"][0].startswith("full mode needs ~60 forward")
    assert report.timing["forward_evaluations"]["calls"] < 20


def test_a_wrong_backward_over_the_budget_still_fails():
    report = gradcli.gradcheck(SlowCumsumWrong, (x34(),), mode="full", time_budget=0.1)
    assert not report.ok and report.inputs[0].status == "fail"


def test_without_a_budget_full_mode_localises():
    report = gradcli.gradcheck(SlowCumsum, (x34(),), mode="full")
    assert report.ok and report.inputs[0].max_abs_error is not None
    assert report.inputs[0].message.startswith("max error")


# ----- evaluations: Richardson only where the verdict is open -------------------------------------------
class RowSoftplus(Function):
    """Smooth, couples each row (no broadcast strategy), batchable: the per-element path."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x.exp() + 1).log().cumsum(1)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g.flip(1).cumsum(1).flip(1) * x.sigmoid()


class RowSoftplusReal(RowSoftplus):
    @staticmethod
    def forward(ctx, x):
        float(x.sum().item())  # refuses complex input: no complex step, central differences alone
        ctx.save_for_backward(x)
        return (x.exp() + 1).log().cumsum(1)


class RowSoftplusWrong(RowSoftplusReal):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        grad = g.flip(1).cumsum(1).flip(1) * x.sigmoid()
        return grad * gradcli.tensor(np.where(np.arange(12).reshape(3, 4) == 5, 1.001, 1.0))


@pytest.mark.parametrize("fn", [RowSoftplus, RowSoftplusReal])
@pytest.mark.parametrize("strategy", ["loop", "batched"])
def test_smooth_functions_take_no_richardson_and_few_points_per_element(strategy, fn):
    report = gradcli.gradcheck(fn, (x34(),), mode="full", strategy=strategy)
    assert report.ok
    counts = report.timing["forward_evaluations"]
    assert "richardson" not in counts
    assert counts["elements"] == 12
    # central difference (4) + complex step (1) per element, and the probes: torch's default makes 2
    assert counts["points_per_element"] <= 8, counts
    assert counts["central"] >= 4 and ("complex_step" in counts) == (fn is RowSoftplus)
    assert counts["calls"] == report.timing["forward_evals"]
    assert counts["repeat"] == 1  # the determinism check's second call at the checked inputs is counted
    assert counts["calls"] == sum(v for k, v in counts.items()
                                  if k not in ("calls", "points", "elements", "points_per_element"))


def test_richardson_refines_only_the_failing_element():
    report = gradcli.gradcheck(RowSoftplusWrong, (x34(),), mode="full", strategy="loop")
    assert not report.ok
    (x,) = report.inputs
    assert x.status == "fail" and x.worst.index == (1, 1)
    assert "1 of 12 elements wrong" in x.message
    counts = report.timing["forward_evaluations"]
    assert counts["richardson"] == 30  # one element's row: 15 steps x 2 points, the others settled


_WARM = """
import sys
from gradcli.check import warm_parent
from gradcli.check.runner import RunOptions
warm_parent.prepare(False, RunOptions(exact="auto"), symbolic={symbolic})
print("sympy" in sys.modules, "gradcli.check.gradcheck" in sys.modules)
"""


@pytest.mark.parametrize("symbolic, expected", [(False, "False True"), (True, "True True")])
def test_a_run_of_one_file_leaves_sympy_to_its_worker(symbolic, expected):
    # issue 20: an oversized check is refused before anything runs, so for one file the warmed parent does not
    # import SymPy (~0.9 s of the refusal's 1.2 s); with several files it warms it once for all of them
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _WARM.format(symbolic=symbolic)], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == expected
