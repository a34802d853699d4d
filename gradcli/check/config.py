"""``[tool.gradcli]`` in ``pyproject.toml``: project settings for ``gradcli check``.

Found like pytest finds its rootdir: the first ``pyproject.toml`` holding a ``[tool.gradcli]``
table, walking up from the common folder of the paths checked. Each key has one reader in
``_KEYS`` (add a key: add a reader and a ``Config`` field); an unknown key is a warning, a bad
value a usage error naming the file. Paths in the file are relative to the file's folder.

Read in the CLI process: only TOML is parsed here (``tomllib``, or ``tomli`` on Python 3.10;
without either the table is ignored with a warning). Nothing in it is evaluated.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

from gradcli.check.paths import UsageError


@dataclass
class Config:
    path: Optional[str] = None  # the pyproject.toml read; None when there is none
    inputs_from: Optional[str] = None  # absolute path of an inputs file (inputs_from.py)
    inputs: dict = field(default_factory=dict)  # "module.Class" or "Class" -> {param name: inputs.Spec}
    norecursedirs: Optional[tuple] = None  # folder patterns not walked; None: paths.NORECURSEDIRS
    nondet_tol: Optional[float] = None  # gradcheck's nondet_tol for every Function; None: 0.0
    warnings: list = field(default_factory=list)


def _toml_loader():
    try:
        import tomllib  # Python 3.11+
    except ImportError:
        try:
            import tomli as tomllib  # the same parser, for Python 3.10
        except ImportError:
            return None
    return tomllib


def find_config(paths) -> Config:
    """The Config of the first pyproject.toml with a [tool.gradcli] table above ``paths``."""
    from gradcli.check.paths import common_folder

    folder = common_folder(paths)
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate):
            config = read_config(candidate)
            if config is not None:
                return config
        parent = os.path.dirname(folder)
        if parent == folder:
            return Config()
        folder = parent


def read_config(path: str) -> Optional[Config]:
    """The Config of one pyproject.toml, or None when it has no [tool.gradcli] table."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"tool.gradcli" not in data and b"[tool]" not in data:
        return None  # no table of ours: not worth parsing
    loader = _toml_loader()
    if loader is None:
        return Config(path, warnings=[f"{path}: [tool.gradcli] ignored: reading TOML on Python 3.10 needs tomli "
                                      f"(pip install tomli)"])
    try:
        document = loader.loads(data.decode("utf-8", "replace"))
    except ValueError as e:  # tomllib.TOMLDecodeError
        raise UsageError(f"{path}: not valid TOML: {e}") from None
    table = document.get("tool", {}).get("gradcli") if isinstance(document.get("tool"), dict) else None
    if not isinstance(table, dict):
        return None
    config = Config(path)
    for key, value in table.items():
        reader = _KEYS.get(key)
        if reader is None:
            config.warnings.append(f"{path}: [tool.gradcli] {key}: unknown key, ignored")
            continue
        reader(config, value, f"{path}: [tool.gradcli] {key}")
    return config


def _inputs_from(config: Config, value, where: str):
    if not isinstance(value, str) or not value:
        raise UsageError(f"{where}: expected a path to a Python file, got {value!r}")
    path = os.path.join(os.path.dirname(config.path), value)
    if not os.path.isfile(path) or not path.endswith(".py"):
        raise UsageError(f"{where}: not a Python file: {path}")
    config.inputs_from = os.path.realpath(path)


def _inputs(config: Config, value, where: str):
    from gradcli.check.inputs import SpecError, parse_assignment

    if not isinstance(value, dict):
        raise UsageError(f"{where}: expected a table of \"module.Class\" = [\"x=3x4\", ...]")
    for key, specs in value.items():
        if isinstance(specs, str):
            specs = [specs]
        if not isinstance(specs, list) or not all(isinstance(s, str) for s in specs):
            raise UsageError(f"{where} {key!r}: expected a list of NAME=SPEC strings, got {specs!r}")
        parsed = {}
        for text in specs:
            try:
                name, spec = parse_assignment(text)
            except SpecError as e:
                raise UsageError(f"{where} {key!r}: {e}") from None
            parsed[name] = spec
        config.inputs[key] = parsed


def _norecursedirs(config: Config, value, where: str):
    if isinstance(value, str):
        value = value.split()
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise UsageError(f"{where}: expected a list of folder patterns, got {value!r}")
    config.norecursedirs = tuple(value)


def _nondet_tol(config: Config, value, where: str):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
        raise UsageError(f"{where}: expected a number >= 0 (the allowed difference between two backward passes), "
                         f"got {value!r}")
    config.nondet_tol = float(value)


_KEYS = {"inputs-from": _inputs_from, "inputs": _inputs, "norecursedirs": _norecursedirs, "nondet_tol": _nondet_tol}
