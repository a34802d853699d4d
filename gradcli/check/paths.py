"""Which files ``gradcli check PATHS`` reads: arguments, folders walked like pytest collects.

An argument is a file, a folder, ``file.py::Name``, or the dotted name of an installed module or
package (``torchdiffeq._impl.misc``, ``entmax``; also with ``::Name``). Walking a folder skips what
pytest skips by default (``norecursedirs``: build trees, virtual environments, installed packages,
hidden folders) and never reads ``setup.py``-like files; anything named explicitly is read. Links
are not followed out of the folder; loops and dangling links are skipped with a note. Only files
whose syntax defines a Function are imported later (scan.py); this module only lists them.
"""
from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from typing import Optional

# pytest's default norecursedirs, plus installed-package and virtual-environment folders
NORECURSEDIRS = ("*.egg", "*.egg-info", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "env",
                 ".venv", "{arch}", "site-packages", "dist-packages", "__pypackages__", "__pycache__")
ENV_MARKERS = ("pyvenv.cfg", "conda-meta")  # a folder holding one is an environment: not walked
NEVER_IMPORTED = ("setup.py", "conftest.py", "noxfile.py", "manage.py")  # unless named explicitly


class UsageError(Exception):
    """A bad path, selector or -k expression: one line for the user, exit code 2."""


@dataclass
class FileItem:
    path: str  # as displayed and reported (relative to the working directory when inside it)
    abspath: str
    names: Optional[list] = None  # ``file.py::Name`` selectors; None: every Function
    explicit: bool = False  # named on the command line (imported even without a Function in its syntax)
    module: str = ""  # set once imported: its dotted module name (a script's stem)


def locate(arg: str) -> tuple:
    """(filesystem path, "::" or "", Name) of one argument; a module name becomes its file/folder."""
    path, sep, name = arg.partition("::")
    if os.path.lexists(path):
        return path, sep, name
    from gradcli.check.imports import looks_like_module, resolve_module

    if looks_like_module(path):
        place = resolve_module(path)
        if place is not None:
            return place, sep, name
        raise UsageError(f"file or directory not found: {path} (and no importable module has that name)")
    raise UsageError(f"file or directory not found: {path}")


def expand_paths(args, notes: Optional[list] = None, norecursedirs=None) -> list:
    """Files to check, in order: those named, and the walked files whose syntax defines a Function
    (scan.py: an unrelated file's import error is no result). ``notes`` (a list) gets one line per link skipped while walking;
    ``norecursedirs`` replaces NORECURSEDIRS (``[tool.gradcli] norecursedirs``)."""
    items: dict = {}
    patterns = tuple(NORECURSEDIRS if norecursedirs is None else norecursedirs)
    notes = [] if notes is None else notes
    for arg in args:
        path, sep, name = locate(arg)
        if not os.path.exists(path):
            raise UsageError(f"file or directory not found: {path} (a dangling link)")
        if os.path.isdir(path):
            if sep:
                raise UsageError(f"a ::Name selector needs a file, not a directory: {arg}")
            from gradcli.check.scan import has_functions

            files = [(f, False) for f in walk(path, patterns, notes) if has_functions(f)]
        elif path.endswith(".py"):
            files = [(path, True)]
        else:
            raise UsageError(f"not a Python file: {path}")
        for f, explicit in files:
            key = os.path.realpath(f)
            item = items.setdefault(key, FileItem(display(f), key, [] if sep else None, explicit))
            item.explicit = item.explicit or explicit
            if sep and item.names is not None:
                if not name or "::" in name:
                    raise UsageError(f"bad selector {arg!r}: use path/to/file.py::ClassName")
                item.names.append(name)
            elif not sep:
                item.names = None
    return list(items.values())


def walk(top: str, patterns=NORECURSEDIRS, notes: Optional[list] = None) -> list:
    """``*.py`` files under ``top`` in sorted order, skipping ``patterns`` folders, environments,
    NEVER_IMPORTED files, hidden files and links leading out of ``top``, in a loop or nowhere."""
    notes = [] if notes is None else notes
    tree = os.path.realpath(top)
    found = []
    for root, dirs, files in os.walk(top):  # never follows links to folders itself
        kept = []
        for d in sorted(dirs):
            full = os.path.join(root, d)
            if os.path.islink(full):
                why = _link_problem(full, tree)
                if why:
                    notes.append(f"skipped {display(full)}: {why}")
                continue  # a link inside the tree: its files are walked where they really are
            if not skipped_dir(full, patterns):
                kept.append(d)
        dirs[:] = kept
        for f in sorted(files):
            full = os.path.join(root, f)
            if not f.endswith(".py") or f.startswith(".") or f in NEVER_IMPORTED:
                continue
            if os.path.islink(full):
                why = _link_problem(full, tree)
                if why:
                    notes.append(f"skipped {display(full)}: {why}")
                continue  # a link inside the tree: the file is walked where it really is
            found.append(full)
    return found


def _link_problem(link: str, tree: str) -> Optional[str]:
    """Why a link is not followed: a loop, dangling, or leading out of the tree (None: fine)."""
    try:
        os.stat(link)
    except OSError as e:
        import errno

        return "a symlink loop" if e.errno == errno.ELOOP else f"a dangling symlink to {os.readlink(link)}"
    target = os.path.realpath(link)
    if target != tree and not target.startswith(tree + os.sep):
        return f"a symlink to {target}, outside {display(tree)}"
    if os.path.isdir(target) and (tree == target or os.path.realpath(os.path.dirname(link)).startswith(target)):
        return "a symlink loop"
    return None


def skipped_dir(path: str, patterns=NORECURSEDIRS) -> bool:
    name = os.path.basename(path)
    return (any(fnmatch.fnmatch(name, p) for p in patterns)
            or any(os.path.exists(os.path.join(path, marker)) for marker in ENV_MARKERS))


def display(path: str) -> str:
    rel = os.path.relpath(os.path.abspath(path))
    return path if rel.startswith("..") else rel


def common_folder(paths) -> str:
    """The deepest folder holding every path (where the pyproject.toml search starts)."""
    folders = [os.path.realpath(p) if os.path.isdir(p) else os.path.dirname(os.path.realpath(p)) for p in paths]
    try:
        return os.path.commonpath(folders) if folders else os.getcwd()
    except ValueError:  # different drives
        return os.getcwd()
