"""A package's own set-up, called when forward or backward stops at an assert that it was not done
(``assert _MODEL_PARALLEL_GROUP is not None, "model parallel group is not initialized"``).

The assert names a module global; a function of the same module that assigns that global (``global
_MODEL_PARALLEL_GROUP`` ... ``_MODEL_PARALLEL_GROUP = ...``) and takes only sizes (int parameters, or ones
with defaults) is the package's initializer: gradcli calls it with 1 for each size (one process: world size
1), after starting a single-process torch.distributed group, as a user's one-machine test would. The input
set says so in ``not_checked``. Nothing else is ever called; an initializer that raises leaves the skip as
it was (environment.environment_skip).
"""
from __future__ import annotations

import ast
import inspect
import linecache
import re
import sys
import textwrap
from typing import Optional


def initialize(exc: BaseException) -> Optional[str]:
    """Call the initializer of the global ``exc``'s assert checks; its description (``pkg.mod.init(1)``) when
    it ran, None when there is none or it raised."""
    found = _asserted_global(exc)
    if found is None:
        return None
    module, name = found
    init = _initializer(module, name)
    if init is None:
        return None
    from gradcli.check import environment

    environment.start_single_process_group()
    sizes = [1 for p in inspect.signature(init).parameters.values()
             if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    try:
        init(*sizes)
    except Exception:  # noqa: BLE001 -- it needs more than sizes: the skip stands
        return None
    if getattr(module, name, None) is None:
        return None
    return f"{module.__name__}.{init.__name__}({', '.join(map(str, sizes))})"


def not_checked(called: str) -> dict:
    return {"input": "environment", "reason": f"the package's set-up {called} was called first (world size 1, in "
                                               f"a single-process group): nothing was exchanged between ranks"}


def _asserted_global(exc) -> Optional[tuple]:
    """(module, NAME) for ``assert NAME is not None`` / ``assert NAME`` at the frame ``exc`` was raised in."""
    if not isinstance(exc, AssertionError) or exc.__traceback__ is None:
        return None
    tb = exc.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    line = linecache.getline(frame.f_code.co_filename, tb.tb_lineno).strip()
    try:
        node = ast.parse(line).body[0]
    except (SyntaxError, IndexError):
        return None
    if not isinstance(node, ast.Assert):
        return None
    test = node.test
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot) \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        test = test.left
    if not isinstance(test, ast.Name) or test.id in frame.f_code.co_varnames:
        return None
    module = sys.modules.get(frame.f_globals.get("__name__", ""))
    return (module, test.id) if module is not None and hasattr(module, test.id) else None


def _initializer(module, name: str):
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(module)))
    except (OSError, TypeError, SyntaxError):
        return None
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or not _assigns_global(node, name):
            continue
        fn = getattr(module, node.name, None)
        if callable(fn) and _takes_sizes(fn):
            return fn
    return None


def _assigns_global(node: ast.FunctionDef, name: str) -> bool:
    declared = any(isinstance(n, ast.Global) and name in n.names for n in ast.walk(node))
    assigned = any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
                   and not (isinstance(n.value, ast.Constant) and n.value.value is None) for n in ast.walk(node))
    return declared and assigned


def _takes_sizes(fn) -> bool:
    """Every parameter without a default is a positional int (annotated int, or not annotated)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    for p in params:
        if p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.kind == p.KEYWORD_ONLY or p.annotation not in (p.empty, int, "int"):
            return False
    return True


_MAY_NEED_SETUP = re.compile(r"distributed|initiali[sz]e")


def given_case(builder, args, records):
    """The Case of inputs nobody left to gradcli (``--input`` for each, or defaults), with the set-up they
    need done as the automatic search does it (a single-process group, the package's initializer), so that a
    printed reproduce line runs where the automatic inputs did. Probed only when the Function's file (or a
    module of its package it takes names from) mentions torch.distributed or an initialization: one forward and one backward on copies, whose errors are left to
    the check."""
    from gradcli.check import environment
    from gradcli.check.inputs import Case, forward_problem
    from gradcli.check.trials import backward_runs

    be, target = builder.be, builder.target
    if be.name != "torch" or not _mentions_setup(target):
        return Case(args, records)
    for _ in range(3):  # a group, then an initializer, then the run they allow
        raised: list = []
        try:
            forward_problem(be, target.fn, args)
            ok, why = backward_runs(be, target.fn, args, raised=raised)
        except Exception as e:  # noqa: BLE001 -- forward's own error is the check's to report
            ok, why, raised = False, str(e), [e]
        if ok or not raised:
            break
        if environment.needs_process_group(raised[0]) and not builder.group_started \
                and environment.start_single_process_group():
            builder.group_started = True
        elif not (environment.missing_environment(why) and builder._initialize(raised[0])):
            break
    notes = [dict(environment.WORLD_SIZE_ONE)] if builder.group_started else []
    notes += [not_checked(builder.initialized)] if builder.initialized else []
    return Case(args, records, notes)


def _mentions_setup(target) -> bool:
    """The Function's file, or a module of its package it takes names from, mentions distributed/initialize."""
    module = sys.modules.get(getattr(target.cls, "__module__", ""))
    top = (getattr(module, "__name__", "") or "").split(".")[0]
    files = {getattr(module, "__file__", None)}
    for value in list(vars(module).values()) if module is not None else ():
        try:
            home = sys.modules.get(getattr(value, "__module__", None) or getattr(value, "__name__", ""))
        except Exception:  # noqa: BLE001 -- an odd global (a lazy proxy): not a module of the package
            continue
        if not isinstance(home, type(sys)):
            continue
        if home is not None and (home.__name__ or "").split(".")[0] == top and top:
            files.add(getattr(home, "__file__", None))
    for path in files - {None}:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                if _MAY_NEED_SETUP.search(fh.read()):
                    return True
        except OSError:
            continue
    return False
