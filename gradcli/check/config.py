"""``[tool.gradcli]`` in ``pyproject.toml``: project settings for ``gradcli check``.

Found like pytest finds its rootdir: the first ``pyproject.toml`` holding a ``[tool.gradcli]``
table, walking up from the common folder of the paths checked. Each key has one reader in
``_KEYS`` (add a key: add a reader and a ``Config`` field); an unknown key is a warning, a bad
value a usage error naming the file. Paths in the file are relative to the file's folder.

Read in the CLI process: only TOML is parsed here (``tomllib``, or ``tomli`` on Python 3.10;
without either the table is ignored with a warning). Nothing in it is evaluated.

Run settings (``SETTINGS``: paths, shape, dtype, timeout, seed, exact, strict, format) land in
``Config.settings`` under the ``check`` command's parameter names; the command line overrides each
(cli.py asks click where a value came from) and ``--show-config`` prints what is in force and from where.
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
    settings: dict = field(default_factory=dict)  # check's parameter name -> value (SETTINGS keys)


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
    return find_config_from(folder)


def find_config_from(folder: str) -> Config:
    """The Config of the first pyproject.toml with a [tool.gradcli] table in ``folder`` or above."""
    folder = os.path.abspath(folder)
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


def _paths(config: Config, value, where: str):
    """Default PATHS (relative to the file) when the command line names none."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(p, str) and p for p in value):
        raise UsageError(f"{where}: expected a list of files, folders or modules, got {value!r}")
    folder = os.path.dirname(config.path)
    # a path relative to the file's folder; what is no path there is a module name (gradcli check torchdiffeq)
    config.settings["paths"] = tuple(os.path.normpath(os.path.join(folder, p))
                                     if os.path.exists(os.path.join(folder, p.split("::")[0])) else p for p in value)


def _shape(config: Config, value, where: str):
    from gradcli.check.spec import SpecError, parse_shape

    if isinstance(value, list) and all(isinstance(n, int) and not isinstance(n, bool) for n in value):
        shape = tuple(value)
    elif isinstance(value, str):
        try:
            shape = parse_shape(value)
        except SpecError as e:
            raise UsageError(f"{where}: {e}") from None
    else:
        raise UsageError(f"{where}: expected a shape such as \"3x4\" or [3, 4], got {value!r}")
    if any(n < 1 for n in shape):
        raise UsageError(f"{where}: every size must be at least 1, got {value!r}")
    config.settings["shape"] = shape


def _choice(key: str, choices: tuple):
    def read(config: Config, value, where: str):
        if value not in choices:
            raise UsageError(f"{where}: expected one of {', '.join(map(repr, choices))}, got {value!r}")
        config.settings[key] = value
    return read


def _timeout(config: Config, value, where: str):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise UsageError(f"{where}: expected a number of seconds > 0, got {value!r}")
    config.settings["timeout"] = float(value)


def _seed(config: Config, value, where: str):
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{where}: expected an integer, got {value!r}")
    config.settings["seed"] = value


def _flag(key: str, allow_auto: bool = False):
    def read(config: Config, value, where: str):
        if allow_auto and value == "auto":
            config.settings[key] = None
            return
        if not isinstance(value, bool):
            expected = 'true, false or "auto"' if allow_auto else "true or false"
            raise UsageError(f"{where}: expected {expected}, got {value!r}")
        config.settings[key] = value
    return read


def _nondet_tol(config: Config, value, where: str):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
        raise UsageError(f"{where}: expected a number >= 0 (the allowed difference between two backward passes), "
                         f"got {value!r}")
    config.nondet_tol = float(value)


# [tool.gradcli] key -> check's parameter name (cli.py): the run settings a file may give
SETTINGS = {"paths": "paths", "shape": "shape", "dtype": "dtype", "timeout": "timeout", "seed": "seed",
            "exact": "exact", "strict": "strict", "format": "fmt"}

_KEYS = {"inputs-from": _inputs_from, "inputs": _inputs, "norecursedirs": _norecursedirs, "paths": _paths,
         "shape": _shape, "dtype": _choice("dtype", ("float64", "float32")), "timeout": _timeout, "seed": _seed,
         "exact": _flag("exact", allow_auto=True), "strict": _flag("strict"),
         "format": _choice("fmt", ("auto", "rich", "plain", "github")), "nondet_tol": _nondet_tol}
