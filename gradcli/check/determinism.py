"""A forward that draws random numbers: the numeric reference of such a forward is noise.

A sampler written as a Function (``eps = x.new(shape).normal_(); return loc + scale * eps``) gives
different outputs on two identical calls, so its finite differences measure the noise, not the
derivative, and their error estimate grows until any backward "passes". After a session has compared
values, ``settle`` calls forward once more at the same inputs. When the outputs differ it runs the
session again with every random generator (Python's, numpy's, torch's, gradcli's engine) re-seeded
before each forward call, so that every evaluation - the one whose graph backward differentiates
included - draws the same numbers: what a user does by hand to check a reparameterised sampler. The
result says so (a ``random`` warning). If the outputs still differ (a random source it cannot seed:
the OS, a CUDA generator, a counter), values are not compared: the result is a SKIP that says why,
never a PASS. The generators' states are restored afterwards (``gradcli.gradcheck`` runs in-process).
"""
from __future__ import annotations

import functools
import random as _random
from contextlib import contextmanager

import numpy as np

from gradcli.check.report import Check

SEED = 0x5EED


def _torch():
    import sys
    return sys.modules.get("torch")


@contextmanager
def preserved_generators():
    """Restore Python's, numpy's, torch's and the engine's random states after the block."""
    from gradcli.autograd import creation
    engine = creation._default_generator
    states = (_random.getstate(), np.random.get_state(), engine._rng, engine._rng.bit_generator.state, engine._seed)
    torch = _torch()
    torch_state = torch.get_rng_state() if torch is not None and hasattr(torch, "get_rng_state") else None
    try:
        yield
    finally:
        _random.setstate(states[0])
        np.random.set_state(states[1])
        engine._rng, engine._seed = states[2], states[4]   # manual_seed replaced the stream object
        engine._rng.bit_generator.state = states[3]
        if torch_state is not None:
            torch.set_rng_state(torch_state)


def reseed_all(seed: int = SEED) -> None:
    from gradcli.autograd import creation
    _random.seed(seed)
    np.random.seed(seed % 2**32)
    creation.manual_seed(seed)
    torch = _torch()
    if torch is not None and hasattr(torch, "manual_seed"):
        torch.manual_seed(seed)


def reseeding(call, seed: int = SEED):
    """``call`` with every random generator re-seeded before each forward evaluation."""
    @functools.wraps(call)
    def seeded(*args, **kwargs):
        reseed_all(seed)
        return call(*args, **kwargs)
    return seeded


def repeat_difference(session):
    """Largest difference between forward's outputs at the checked inputs and one more call there
    (0.0 when they agree to rounding; None when it cannot be told: no numeric function, a raise)."""
    nf = getattr(session, "nf", None)
    if nf is None:
        return None
    nf.phase("repeat")
    try:
        with np.errstate(all="ignore"):
            again = nf([np.array(x, copy=True) for x in nf.inputs])
    except Exception:  # noqa: BLE001 -- a forward that raises now is not this check's business
        return None
    finally:  # the timing's counts were taken before this call: it is one of forward's calls too
        timing = getattr(session, "timing", None)
        if timing is not None and "forward_evaluations" in timing:
            from gradcli.check.checks import evaluation_counts

            timing["forward_evals"] = nf.evaluations
            timing["forward_evaluations"] = evaluation_counts(nf)
    worst = 0.0
    for first, second in zip(nf.outputs, again):
        first, second = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
        if first.shape != second.shape:
            return float("inf")
        both = np.isfinite(first) & np.isfinite(second)
        if not np.array_equal(np.isfinite(first), np.isfinite(second)):
            return float("inf")
        if not both.any():
            continue
        scale = float(np.max(np.abs(first[both])))
        gap = float(np.max(np.abs(first[both] - second[both])))
        if gap > 1e-10 * max(scale, 1e-300):
            worst = max(worst, gap)
    return worst


def _compared(report) -> bool:
    values = report.check("values")
    return values is not None and values.status != "skip"


def settle(session, report, reseeded_session):
    """``(session, report)``: the given ones for a deterministic forward; else the re-seeded run, or
    the given report with values skipped when re-seeding does not make forward repeatable."""
    if not _compared(report):
        return session, report
    gap = repeat_difference(session)
    if not gap:
        return session, report
    with preserved_generators():
        seeded = reseeded_session()
        seeded_report = seeded.run()
        seeded_gap = repeat_difference(seeded) if _compared(seeded_report) else None
    if seeded_gap == 0.0:
        seeded_report.checks.append(Check(
            "random", "warn", f"forward draws random numbers (two identical calls differed by {gap:.3g}): "
            f"checked with every random generator re-seeded (seed {SEED}) before each forward call, so the "
            "backward was compared for one fixed draw", None, {"difference": gap, "seed": SEED}))
        return seeded, seeded_report
    report.inputs.clear()
    report.checks = [c for c in report.checks if c.name != "values"]
    report.checks.append(Check(
        "values", "skip", f"not compared: forward is not deterministic (two identical calls differed by "
        f"{gap:.3g}, also with the random generators re-seeded), so its numerical derivative is noise; "
        "pass the random draw in as an input to check it", None, {"difference": gap}))
    return session, report


def explain_layouts(report) -> None:
    """The layouts check was not run for a re-seeded forward: say why (not "not requested")."""
    for check in report.checks:
        if check.name == "layouts":
            check.message = ("not tried: forward draws random numbers, and a non-contiguous or expanded "
                             "input changes which element gets which draw")
