"""Inputs for Functions the user cannot edit: ``--inputs-from FILE.py`` and ``[tool.gradcli]``.

An inputs file is a Python file of the user's, imported in the checking process the way other
user files are (imports.py), never in the CLI process. Per Function it may define

* ``INPUTS = {"module.Class": entry, "Class": entry, ...}`` (``module`` as discovery imports it:
  ``entmax.losses``; a script's stem), or
* a function named after the class (``def SparsemaxLossFunction(): return X, target``),

where an entry is what ``example_inputs()`` could return — a callable returning a tuple of
forward's arguments or a list of such tuples, or that tuple/list itself — or a list of
``--input``-style ``"NAME=SPEC"`` strings. ``[tool.gradcli.inputs]`` in pyproject.toml gives the
same ``"NAME=SPEC"`` lists under the same keys (config.py). Lookup order: the ``--inputs-from``
file, the ``inputs-from`` file of pyproject.toml, then ``[tool.gradcli.inputs]``; in each,
``module.Class`` before ``Class``. A class with its own ``example_inputs()`` keeps it.
"""
from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from typing import Optional

from gradcli.check.inputs import ForwardBroken


@dataclass(frozen=True)
class GivenInputs:
    files: tuple = ()  # absolute paths of inputs files, first wins
    table: dict = field(default_factory=dict)  # [tool.gradcli.inputs]: key -> {param name: Spec}

    def __bool__(self) -> bool:
        return bool(self.files or self.table)


class InputsFileError(ForwardBroken):
    """The inputs file (or its entry for this Function) is unusable: an error result with this
    message (reported like ForwardBroken: the user's inputs, not the backward, are at fault)."""


_LOADED: dict = {}  # path -> module, or the InputsFileError its import raised (once per process)


def attach(targets: list, given: Optional[GivenInputs]):
    """Give each target without an ``example_inputs()`` of its own the entry the user supplied."""
    if not given:
        return
    for target in targets:
        if getattr(target.cls, "example_inputs", None) is not None:
            continue
        keys = [f"{target.module}.{target.name}" if target.module else None, target.name]
        for path in given.files:
            module = _load(path)
            if isinstance(module, InputsFileError):
                target.given_examples = _raiser(module)
                break
            entry, where = _entry(module, path, [k for k in keys if k])
            if where is not None:
                _apply(target, entry, where, path)
                break
        else:
            key = next((k for k in keys if k and k in given.table), None)
            if key is not None:
                target.given_specs = dict(given.table[key])


def _load(path: str):
    if path not in _LOADED:
        from gradcli.check.discovery import describe_exception
        from gradcli.check.paths import display

        try:
            _LOADED[path] = _import_inputs_file(path)
        except Exception as e:  # noqa: BLE001 -- user code
            _LOADED[path] = InputsFileError(f"the inputs file {display(path)} failed to import: "
                                            f"{describe_exception(e, path)[0]}")
    return _LOADED[path]


def _import_inputs_file(path: str):
    """A file inside a package is imported by its dotted name (imports.py); a lone file as a script,
    with its folder at the END of sys.path: its siblings import, but an inputs file named after the
    package it serves (``norse.py`` next to nothing, importing ``norse.torch``) does not shadow it."""
    import sys

    from gradcli.check import imports
    from gradcli.check.scan import scan_file

    scan = scan_file(path)
    plan = imports.plan_import(path, scan.relative_level, scan.absolute_tops)
    if plan.kind != "script":
        return imports.import_file(path, plan, scan.relative_level)
    if plan.root not in sys.path:
        sys.path.append(plan.root)
    return imports._exec_as(plan.name, os.path.realpath(path))


def _entry(module, path: str, keys: list) -> tuple:
    """(entry, "file: INPUTS['key']" or "file: key()") or (None, None)."""
    from gradcli.check.paths import display

    table = getattr(module, "INPUTS", None)
    if isinstance(table, dict):
        for key in keys:
            if key in table:
                return table[key], f"{display(path)}: INPUTS[{key!r}]"
    name = keys[-1]
    func = vars(module).get(name)
    if inspect.isfunction(func) and func.__module__ == module.__name__:  # not the imported class itself
        return func, f"{display(path)}: {name}()"
    return None, None


def _apply(target, entry, where: str, path: str):
    from gradcli.check.inputs import SpecError, parse_assignment
    from gradcli.check.paths import display

    if isinstance(entry, list) and entry and all(isinstance(s, str) for s in entry):
        specs = {}
        for text in entry:
            try:
                name, spec = parse_assignment(text)
            except SpecError as e:
                target.given_examples = _raiser(InputsFileError(f"{where}: {e}"))
                return
            specs[name] = spec
        target.given_specs = specs
    else:
        target.given_examples = entry if callable(entry) else (lambda: entry)
        target.given_from = display(path)


def mark(result, inputs_file: str):
    """Records of example inputs that came from an inputs file carry ``"inputs_from"``: the
    reproduce line then adds ``--inputs-from FILE``."""
    for case in result.cases:
        for record in case.inputs:
            if isinstance(record, dict) and record.get("source") == "example":
                record["inputs_from"] = inputs_file


def _raiser(error: Exception):
    def fail():
        raise error

    return fail
