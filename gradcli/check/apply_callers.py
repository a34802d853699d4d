"""Where a package calls a Function: the ``Cls.apply(...)`` call sites in the Function's own package, read with
``ast`` (never run here). They are the strongest evidence of what forward takes: the package's own code builds the
arguments (``Matmul.apply(self.representation_tree(), rhs, *self.representation())``), so calling that code is how
a user of the package would reach the Function (``captured_calls.py`` does, specs/check.md §2 "Inputs the package's
own caller builds").

A call site counts when it is inside a module-level function or a method of a module-level class, and calls
``NAME.apply(...)`` directly or through a local alias (``func = NAME.apply`` ... ``func(...)``); after those, the
module-level functions of the same file that call such a module-level function (one level up). Test folders are
not read: a test's call is the test's inputs, not the package's.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from typing import Optional

MAX_FILES = 400  # a package larger than this is not read whole (the Function's own file is read first)
SKIPPED_FOLDERS = {"tests", "test", "_tests", "testing", "benchmarks", "examples", "docs"}


@dataclass(frozen=True)
class Caller:
    module: str  # dotted module name of the file the call is in
    qualname: str  # "func" or "Class.method"
    file: str
    line: int
    strings: tuple = ()  # (parameter, (str, ...)): the caller compares a parameter with these strings
    called: tuple = ()  # parameters the caller calls (``fcn(x, *params)``): callables


def package_root(module: str) -> Optional[tuple]:
    """(top-level package name, its folder) of a dotted module inside a package, else None (a script)."""
    import importlib.util

    top = (module or "").split(".")[0]
    if not top or "." not in (module or ""):
        return None
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    locations = list(getattr(spec, "submodule_search_locations", None) or ()) if spec else []
    return (top, locations[0]) if locations else None


def _files(root: str, first: Optional[str]):
    if first and os.path.isfile(first):
        yield first
    count = 0
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED_FOLDERS and not d.startswith("."))
        for name in sorted(files):
            path = os.path.join(folder, name)
            if name.endswith(".py") and not name.startswith("test_") and path != first:
                count += 1
                if count > MAX_FILES:
                    return
                yield path


def _module_name(top: str, root: str, path: str) -> str:
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    if rel[-1] == "__init__":
        rel = rel[:-1]
    return ".".join([top, *rel])


def dispatch_names(target) -> tuple:
    """The string keys of dict literals in forward (``methods = {"cg": cg, "gmres": gmres}`` ...
    ``methods[method]``): the names a mode parameter that reaches forward may take."""
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(target.forward)))
    except (OSError, TypeError, SyntaxError):
        return ()
    keys = [k.value for node in ast.walk(tree) if isinstance(node, ast.Dict)
            for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return tuple(dict.fromkeys(keys))


def find_callers(target) -> list:
    """The call sites of ``target.cls.apply`` in its package, the Function's own file first."""
    found = package_root(getattr(target, "module", "") or "")
    if found is None:
        return []
    top, root = found
    name = target.cls.__name__
    out = []
    for path in _files(root, getattr(target, "file", None)):
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError):
            continue
        if f"{name}.apply" not in text:
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        module = _module_name(top, root, path)
        for qualname, fn in _functions(tree):
            line = _apply_line(fn, name)
            if line is not None:
                out.append(Caller(module, qualname, path, line, _compared_strings(fn), _called_parameters(fn)))
    return out + _outer_callers(out, root, getattr(target, "file", None), top)


def _outer_callers(direct, root, first, top) -> list:
    """The module-level functions of the same files that call a module-level direct caller (``mcquad`` calls
    ``_mcquad``, which calls ``Cls.apply``): one level up, after the direct ones."""
    names = {c.qualname: c for c in direct if "." not in c.qualname}
    out = []
    for path in dict.fromkeys(c.file for c in direct if c.qualname in names):
        try:
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
        except (OSError, UnicodeDecodeError, SyntaxError):
            continue
        for qualname, fn in _functions(tree):
            if "." in qualname or qualname in names:
                continue
            line = next((n.lineno for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                         and n.func.id in names and names[n.func.id].file == path), None)
            if line is not None:
                out.append(Caller(_module_name(top, root, path), qualname, path, line, _compared_strings(fn),
                                  _called_parameters(fn)))
    return out


def _functions(tree):
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{node.name}.{item.name}", item


def _is_apply(node, name) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "apply" and isinstance(node.value, ast.Name) \
        and node.value.id == name


def _apply_line(fn, name) -> Optional[int]:
    aliases = {t.id for node in ast.walk(fn) if isinstance(node, ast.Assign) and _is_apply(node.value, name)
               for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and (_is_apply(node.func, name)
                                           or isinstance(node.func, ast.Name) and node.func.id in aliases):
            return node.lineno
    return None


def _parameters(fn) -> set:
    a = fn.args
    return {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}


def _compared_strings(fn) -> tuple:
    """``if method == "lanczos":`` / ``mode in ("a", "b")``: the strings each parameter is compared with."""
    params, found = _parameters(fn), {}
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id in params):
            continue
        for op, right in zip(node.ops, node.comparators):
            values = right.elts if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List,
                                                                                              ast.Set)) else [right]
            for v in values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str):
                    found.setdefault(node.left.id, []).append(v.value)
    return tuple((k, tuple(dict.fromkeys(v))) for k, v in found.items())


def _called_parameters(fn) -> tuple:
    params = _parameters(fn)
    return tuple(sorted({n.func.id for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                         and n.func.id in params}))
