"""The warmed parent: what every forked worker and checker needs, loaded once where they fork from.

Every file is checked in a worker forked from the ``gradcli check`` process (processes.py), so that
no other user file has touched it. Forking is cheap (copy-on-write) once the heavy modules are in
the parent; importing them after the fork would be paid again in every worker and checker (torch
~1.5 s, SymPy ~0.5 s, gradcli's own checking modules ~0.1 s). Before the first worker of each kind
of file, ``prepare`` loads here what its checks use, then runs one complete check of a tiny
built-in Function (the checking modules imported lazily, SymPy's and torch's first-use costs, the
caches) -- gradcli's own code only: the parent never imports user code. Random generators are
restored afterwards, so a user file imported in a worker draws what it would have drawn without
the warm-up. Nothing here may fail a run: a warm-up that raises is only a missed optimisation.
"""
from __future__ import annotations

import dataclasses
import sys

from gradcli.autograd.function import Function

_DONE: set = set()  # what this process has loaded: "checking", "symbolic", "torch", "check:gradcli", ...
TORCH_HERE: list = []  # [True] once this module imported torch itself (only tiny ops ran: no thread pool)


def warm_square(base):
    """The warm-up Function (a product, a power, a reduction) on ``base``: gradcli's or torch's Function."""

    class WarmSquare(base):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return (x * x * w).sum()

        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            return grad * 2 * x * w, grad * x * x

    return WarmSquare


def prepare(torch_file: bool, options, symbolic: bool = True) -> None:
    """Load, once, what a worker for a file (``torch_file``: one that imports torch) and its
    checkers will use, before that worker is forked. ``symbolic=False`` (a run of one file) leaves
    SymPy to the worker: a check refused before it starts (too large) needs none of it, and a file with
    several Functions warms it there, before its checkers fork (processes.py)."""
    if torch_file and "torch" not in _DONE:
        _DONE.add("torch")
        _import_torch()
    if options.collect_only:
        return
    if "checking" not in _DONE:
        _DONE.add("checking")
        from gradcli.heavy_import import import_paused

        import_paused("gradcli.autograd.namespace")
        import_paused("gradcli.check.diagnosis")
        import_paused("gradcli.check.gradcheck")
        import_paused("gradcli.check.inputs")
        import_paused("gradcli.check.auto_inputs")
        import_paused("gradcli.check.coverage")
    # a torch Function's exact check is a skip that needs no SymPy, unless asked for
    if symbolic and (not torch_file or options.prove or options.expr or options.exact == "on") \
            and "symbolic" not in _DONE:
        _DONE.add("symbolic")
        _symbolic(options)
    backend = "torch" if torch_file and _torch() is not None else "gradcli"
    if f"check:{backend}" not in _DONE:
        _DONE.add(f"check:{backend}")
        _warm_check(backend, options if symbolic else dataclasses.replace(options, exact="off"))


def _torch():
    torch = sys.modules.get("torch")
    return torch if hasattr(torch, "autograd") else None


def _import_torch():
    from gradcli.heavy_import import import_paused

    if _torch() is not None:
        return
    try:
        import_paused("torch")  # without garbage collection during the import
    except Exception:  # noqa: BLE001 -- not installed or broken: each file's own import reports it
        return
    TORCH_HERE.append(True)


def _symbolic(options) -> None:
    if options.exact == "off" and not options.expr and not options.prove:
        return
    from gradcli.heavy_import import import_paused

    import_paused("gradcli.check.symbolic_checks")
    import_paused("gradcli.check.exact")  # SymPy, mpmath: ~0.5 s, once per run
    if options.exact != "off" or options.expr:
        from gradcli.check.symbolic_checks import warm_up

        warm_up()  # SymPy's first-use costs, paid here once rather than in every forked checker
    if options.prove:
        import_paused("gradcli.symbolic.prove")


def _warm_check(backend: str, options) -> None:
    """One full check (inputs, gradcheck, the exact check as the run has it) of a tiny Function,
    on 2x2 inputs: on torch, tensors that small run every op inline, so no thread pool is started
    here that a forked child would wait for."""
    from gradcli.check.discovery import Target

    cls = warm_square(_torch().autograd.Function if backend == "torch" else Function)
    target = Target(cls, cls.__name__, __file__, None, None, "static", backend, module=__name__)
    warm = dataclasses.replace(options, specs={}, given_inputs=None, prove=False, expr=None, shape=(2, 2),
                               timeout=60.0, exact="auto" if backend == "torch" else options.exact)
    states = _random_states()
    try:
        from gradcli.check.runner import check_target

        check_target(target, warm)
    except Exception:  # noqa: BLE001 -- only an optimisation
        pass
    finally:
        _restore(states)


def _random_states() -> dict:
    import copy

    import numpy as np

    from gradcli.autograd import creation

    states = {"numpy": np.random.get_state(), "gradcli": copy.deepcopy(vars(creation._default_generator))}
    torch = _torch()
    if torch is not None:
        states["torch"] = torch.get_rng_state()
    return states


def _restore(states: dict) -> None:
    import numpy as np

    from gradcli.autograd import creation

    np.random.set_state(states["numpy"])
    vars(creation._default_generator).clear()
    vars(creation._default_generator).update(states["gradcli"])
    if "torch" in states:
        _torch().set_rng_state(states["torch"])
