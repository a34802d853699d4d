"""Importing a user's file the way its package does (pytest's rootdir / ``--import-mode`` logic).

* In a **regular package** (its folder has ``__init__.py``): the package root is found by walking
  up the ``__init__.py`` files, the root's parent goes on ``sys.path`` and the file is imported by
  its dotted name (``pkg.sub.module``), so relative imports and the package's absolute imports of
  itself work. Folders inside the package are taken off ``sys.path`` first: a file's own folder
  in front of its package makes ``import pkg`` find ``pkg/pkg.py`` ("'pkg' is not a package").
  A src-layout needs nothing more (``src/pkg/__init__.py``: ``src`` goes on the path).
* In a **namespace package** (no ``__init__.py``): when a ``sys.path`` entry above the file
  makes it importable by a dotted name (installed namespace packages), that name is used; else
  when the file imports relatively, or absolutely by the name of a folder above it, that folder's
  parent goes on the path and the file is imported under the dotted name from there.
* Otherwise it is a **script**: imported under a unique name with its folder first on
  ``sys.path`` (sibling imports work as with ``python file.py``).

``resolve_module(name)`` finds the file or folder of an installed module or package from its
dotted name without running any of its code (the CLI parent never imports user code).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import zlib
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class ImportPlan:
    name: str  # the dotted name the module is imported (and reported) under; a script's own stem
    root: str  # the folder put on sys.path
    kind: str  # "package" (regular or namespace: imported by dotted name) | "script"
    package_dir: Optional[str] = None  # the topmost package folder: folders inside it leave sys.path


class ImportClash(ImportError):
    """The dotted name imports another file (another copy of the package comes first)."""


def package_root(abspath: str) -> str:
    """The folder that must be on sys.path for the file's package: the parent of the topmost
    folder with ``__init__.py`` above the file (the file's own folder when it has none)."""
    folder = os.path.dirname(os.path.abspath(abspath))
    while os.path.isfile(os.path.join(folder, "__init__.py")) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    return folder


def _is_name(part: str) -> bool:
    return part.isidentifier()


def _dotted(root: str, abspath: str) -> Optional[str]:
    rel = os.path.relpath(os.path.splitext(abspath)[0], root)
    parts = rel.split(os.sep)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(_is_name(p) for p in parts[:-1]) or parts[0] in ("", ".", ".."):
        return None
    return ".".join(parts)


def _path_entries() -> list:
    """sys.path folders that name installed code (the working directory excluded: it is only on
    the path because of how gradcli was started)."""
    cwd = os.path.realpath(os.getcwd())
    out = []
    for entry in sys.path:
        real = os.path.realpath(entry or ".")
        if entry and real != cwd and os.path.isdir(real):
            out.append(real)
    return out


def plan_import(abspath: str, relative_level: int = 0, absolute_tops=()) -> ImportPlan:
    """How to import ``abspath`` (see the module docstring); ``relative_level`` and
    ``absolute_tops`` come from the syntax scan (scan.FileScan)."""
    abspath = os.path.realpath(abspath)
    folder = os.path.dirname(abspath)
    tops = set(absolute_tops)
    entries = _path_entries()
    if os.path.isfile(os.path.join(folder, "__init__.py")):
        root = package_root(abspath)
        top = os.path.join(root, os.path.relpath(abspath, root).split(os.sep)[0])
        # a regular package inside installed namespace packages (google/cloud/storage): the full name
        for candidate in _ancestors(root):
            if candidate in entries:
                name = _dotted(candidate, abspath)
                # not when the package imports itself by its own top name (then it is not namespaced)
                if name and (name.split(".")[0] in tops or os.path.basename(top) not in tops):
                    return ImportPlan(name, candidate, "package", top)
                break
        name = _dotted(root, abspath)
        if name:
            return ImportPlan(name, root, "package", top)
    else:
        for candidate in _ancestors(folder):  # installed namespace packages
            if candidate in entries:
                name = _dotted(candidate, abspath)
                if name and candidate != folder:
                    return ImportPlan(name, candidate, "package", os.path.join(
                        candidate, os.path.relpath(abspath, candidate).split(os.sep)[0]))
                break
        above = _namespace_root(folder, relative_level, tops)
        if above is not None:
            name = _dotted(above, abspath)
            if name:
                return ImportPlan(name, above, "package",
                                  os.path.join(above, os.path.relpath(abspath, above).split(os.sep)[0]))
    return script_plan(abspath)


def script_plan(abspath: str) -> ImportPlan:
    """A lone file: a unique module name (two ``ops.py`` never collide), its folder on sys.path."""
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(abspath))[0])
    return ImportPlan(f"gradcli_check_{zlib.crc32(abspath.encode()):08x}_{stem}", os.path.dirname(abspath), "script")


def _ancestors(folder: str):
    while True:
        yield folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def _namespace_root(folder: str, relative_level: int, tops: set) -> Optional[str]:
    """The folder to import a file of a namespace package from, or None (a plain script)."""
    ancestors = list(_ancestors(folder))[:16]
    for i, above in enumerate(ancestors[:-1]):  # absolute imports of the namespace's own name
        name = os.path.basename(above)
        if name in tops and _is_name(name) and not _installed_elsewhere(name, above):
            return ancestors[i + 1]
    if relative_level and len(ancestors) > relative_level:
        return ancestors[relative_level]  # ``from . import x`` needs one package level, ``..`` two
    return None


def _installed_elsewhere(name: str, folder: str) -> bool:
    """Whether ``import name`` finds something other than ``folder`` (torch, numpy, ...)."""
    try:
        spec = importlib.util.find_spec(name)  # a top-level name: nothing is imported
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    places = [os.path.realpath(p) for p in spec.submodule_search_locations or ()]
    return folder not in places  # found, and not as this very folder (a namespace portion of it)


def import_file(abspath: str, plan: ImportPlan, relative_level: int = 0):
    """Import the file as ``plan`` says; the module object, or the exception propagates.

    Falls back to loading the file as a script when the dotted import finds another copy of the
    package, or when it fails with an ImportError before the file itself ran (in the package's
    ``__init__`` chain: a missing dependency of the package, not of the file) and the file has no
    relative import (``relative_level``); if that fails too, the package's error is raised."""
    abspath = os.path.realpath(abspath)
    if plan.kind == "package":
        try:
            return _import_dotted(abspath, plan)
        except ImportClash:  # another copy of the package is imported already: load this file as a script
            pass
        except ImportError as e:
            if relative_level or _ran(e, abspath):
                raise
            try:
                return _import_script(abspath, script_plan(abspath))
            except Exception:  # noqa: BLE001 -- the package's own error says more
                raise e from None
        plan = script_plan(abspath)
    return _import_script(abspath, plan)


def _ran(error: BaseException, abspath: str) -> bool:
    """Whether the traceback reaches the file itself (its own code raised or imported the failure)."""
    import traceback

    return any(os.path.realpath(f.filename) == abspath for f in traceback.extract_tb(error.__traceback__))


def _import_dotted(abspath: str, plan: ImportPlan):
    inside = os.path.realpath(plan.package_dir or plan.root)
    sys.path[:] = [p for p in sys.path if not _within(os.path.realpath(p or "."), inside)]
    if os.path.realpath(plan.root) not in {os.path.realpath(p or ".") for p in sys.path}:
        sys.path.insert(0, plan.root)
    importlib.invalidate_caches()
    parent, _, last = plan.name.rpartition(".")
    if _is_name(last):
        existing = sys.modules.get(plan.name)
        module = importlib.import_module(plan.name)
    else:  # pkg/my-ops.py has no dotted name: loaded by path inside its package
        if parent:
            importlib.import_module(parent)
        existing, module = None, _exec_as(plan.name, abspath)
    where = getattr(module, "__file__", None)
    if where is None or os.path.realpath(where) != abspath:
        if existing is None and module is not None and sys.modules.get(plan.name) is module:
            del sys.modules[plan.name]
        raise ImportClash(f"{plan.name} is {where}, not {abspath}")
    return module


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + os.sep)


def _import_script(abspath: str, plan: ImportPlan):
    if plan.root not in sys.path:
        sys.path.insert(0, plan.root)  # sibling imports work as with ``python file.py``
    return _exec_as(plan.name, abspath)


def _exec_as(name: str, abspath: str):
    spec = importlib.util.spec_from_file_location(name, abspath)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


# ----- a module named on the command line ---------------------------------------------------------

_MODULE_NAME_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def looks_like_module(text: str) -> bool:
    return bool(_MODULE_NAME_RE.match(text)) and not text.endswith(".py")


def resolve_module(name: str) -> Optional[str]:
    """The file (module) or folder (package) of the importable module ``name``, found on sys.path
    without running its code; None when there is none (or it is not Python source)."""
    top, *rest = name.split(".")
    try:
        spec = importlib.util.find_spec(top)  # top-level: consults the finders, imports nothing
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if not rest:
        return _spec_place(spec)
    for location in spec.submodule_search_locations or ():
        path = os.path.join(location, *rest)
        if os.path.isfile(path + ".py"):
            return path + ".py"
        if os.path.isdir(path):
            return path
    return None


def _spec_place(spec) -> Optional[str]:
    if spec.submodule_search_locations:
        locations = list(spec.submodule_search_locations)
        return locations[0] if locations else None
    origin = spec.origin
    return origin if origin and origin.endswith(".py") and os.path.isfile(origin) else None
