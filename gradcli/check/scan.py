"""The syntax pre-scan of ``gradcli check``: which files define autograd Functions, read, never run.

A folder holds more than Functions: a package's tests need pytest, its ``__main__`` parses argv, a
module needs an optional dependency. Importing all of them turns their problems into results that
are not about any Function. So each walked file is parsed (``ast``) first, and only files with a
module-level class deriving from an autograd ``Function`` are imported: directly
(``torch.autograd.Function``, ``autograd.Function``, ``Function`` imported from ``torch.autograd`` or
``gradcli``, ``import gradcli as torch``) or through a base that is itself one — defined in the file,
or imported from another file the scan can find (a relative import, a sibling, a module on
``sys.path``; torch's and gradcli's own files are never scanned).

The scan also says what importing needs: the deepest relative import and the top-level names
imported absolutely (``imports.plan_import`` uses them to pick a package context).
"""
from __future__ import annotations

import ast
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Optional

# qualified names of the framework classes a Function derives from -> backend
FRAMEWORK_BASES = {
    "torch.autograd.Function": "torch",
    "torch.autograd.function.Function": "torch",
    "torch.autograd.function.InplaceFunction": "torch",
    "torch.autograd.function.NestedIOFunction": "torch",
    "gradcli.Function": "gradcli",
    "gradcli.autograd.Function": "gradcli",
    "gradcli.autograd.function.Function": "gradcli",
}
_FRAMEWORK_TOPS = ("torch", "gradcli")
MAX_DEPTH = 6  # files followed to resolve a base imported from elsewhere


@dataclass
class FileScan:
    functions: dict = field(default_factory=dict)  # class name -> backend ("torch" | "gradcli")
    relative_level: int = 0  # deepest ``from .`` / ``from ..`` import
    absolute_tops: set = field(default_factory=set)  # first components of absolute imports
    unreadable: Optional[str] = None  # why the file could not be parsed (it is imported: its error is news)
    # internal: name -> qualified origin ("torch.autograd.Function", ".base.Name", "pkg.mod.Name")
    bindings: dict = field(default_factory=dict, repr=False)
    classes: dict = field(default_factory=dict, repr=False)  # name -> [base expressions as dotted text]
    star_from: list = field(default_factory=list, repr=False)  # modules star-imported
    custom_ops: list = field(default_factory=list)  # functions decorated @torch.library.custom_op (custom_ops.py)


_CACHE: dict = {}


def scan_file(abspath: str) -> FileScan:
    """The scan of one file (cached per process); Functions resolved through other files too."""
    key = os.path.realpath(abspath)
    if key not in _CACHE:
        _CACHE[key] = FileScan()  # a cycle of imports ends here instead of recursing
        _CACHE[key] = _scan(key)
    return _CACHE[key]


def has_functions(abspath: str) -> bool:
    """Whether the file may define a Function: it does syntactically, or it does not parse and
    mentions ``Function`` (then its import error is a result worth reporting)."""
    try:
        with open(abspath, "rb") as f:
            text = f.read()
    except OSError:
        return False
    if not _CLASS_WITH_BASES.search(text) and b"Function" not in text and b"custom_op" not in text:
        return False  # no class with a base, no mention of Function or custom_op: nothing to parse
    scan = scan_file(abspath)
    return bool(scan.functions) or bool(scan.custom_ops) or scan.unreadable == "mentions Function"


_CLASS_WITH_BASES = re.compile(rb"^[ \t]*class[ \t]+\w+[ \t]*\(", re.M)


def _scan(abspath: str) -> FileScan:
    try:
        with open(abspath, "rb") as f:
            source = f.read()
        tree = ast.parse(source, filename=abspath)
    except (OSError, ValueError, SyntaxError, RecursionError, MemoryError):
        try:
            with open(abspath, "rb") as f:
                mentions = re.search(rb"\bFunction\b", f.read()) is not None
        except OSError:
            mentions = False
        return FileScan(unreadable="mentions Function" if mentions else "unparsable")
    scan = FileScan()
    for node in _module_level(tree.body):
        _bind(scan, node)
    for name in scan.classes:
        backend = _class_backend(scan, name, abspath, 0, set())
        if backend:
            scan.functions[name] = backend
    from gradcli.check.custom_ops import custom_op_names

    scan.custom_ops = custom_op_names(_module_level(tree.body), scan.bindings, _dotted)
    return scan


def _module_level(body):
    """Statements at module level, also inside if/try/with blocks (not inside functions/classes)."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)) or type(node).__name__ == "TryStar":
            for block in ("body", "orelse", "finalbody"):
                yield from _module_level(getattr(node, block, []) or [])
            for handler in getattr(node, "handlers", []) or []:
                yield from _module_level(handler.body)


def _bind(scan: FileScan, node):
    if isinstance(node, ast.Import):
        for alias in node.names:
            scan.absolute_tops.add(alias.name.split(".")[0])
            if alias.asname:
                scan.bindings[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                scan.bindings[top] = top
    elif isinstance(node, ast.ImportFrom):
        module = "." * node.level + (node.module or "")
        if node.level:
            scan.relative_level = max(scan.relative_level, node.level)
        elif node.module:
            scan.absolute_tops.add(node.module.split(".")[0])
        for alias in node.names:
            if alias.name == "*":
                scan.star_from.append(module)
            else:
                joined = f"{module}.{alias.name}" if not module.endswith(".") else module + alias.name
                scan.bindings[alias.asname or alias.name] = joined
    elif isinstance(node, ast.ClassDef):
        scan.classes[node.name] = [text for text in (_dotted(b) for b in node.bases) if text]
        scan.bindings.pop(node.name, None)
    elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        text = _dotted(node.value)  # Function = torch.autograd.Function
        name = node.targets[0].id
        if text and name not in scan.bindings:  # the first binding wins: ``except ImportError: Function = object``
            scan.bindings[name] = "=" + text


def _dotted(node) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id] + parts[::-1])
    if isinstance(node, ast.Subscript):  # Generic[...]-style bases: the subscripted class
        return _dotted(node.value)
    return None


def _class_backend(scan: FileScan, name: str, abspath: str, depth: int, seen: set) -> Optional[str]:
    if (abspath, name) in seen:
        return None
    seen.add((abspath, name))
    for base in scan.classes.get(name, ()):
        backend = _expr_backend(scan, base, abspath, depth, seen)
        if backend:
            return backend
    return None


def _expr_backend(scan: FileScan, text: str, abspath: str, depth: int, seen: set) -> Optional[str]:
    """The backend of the class that ``text`` (a base written in the file) names, or None."""
    head, _, rest = text.partition(".")
    if head in scan.classes and not rest:
        return _class_backend(scan, head, abspath, depth, seen)
    origin = scan.bindings.get(head)
    if origin is None:
        if head in ("Function", "InplaceFunction") and not rest and scan.star_from:
            return _star_backend(scan)
        return None
    if origin.startswith("="):
        return _expr_backend(scan, origin[1:] + ("." + rest if rest else ""), abspath, depth, seen)
    qualified = origin + ("." + rest if rest else "")
    return _qualified_backend(qualified, abspath, depth, seen)


def _star_backend(scan: FileScan) -> Optional[str]:
    for module in scan.star_from:
        top = module.split(".")[0]
        if top in _FRAMEWORK_TOPS:
            return "torch" if top == "torch" else "gradcli"
    return "torch"  # ``Function`` from a star import of somewhere else: most likely torch's


def _qualified_backend(qualified: str, abspath: str, depth: int, seen: set) -> Optional[str]:
    if qualified in FRAMEWORK_BASES:
        return FRAMEWORK_BASES[qualified]
    if qualified.lstrip(".").split(".")[0] in _FRAMEWORK_TOPS and not qualified.startswith("."):
        return None  # some other framework class (torch.nn.Module, ...): not a Function
    if depth >= MAX_DEPTH:
        return None
    module, _, name = qualified.rpartition(".")
    if not module or not name:
        return None
    path = find_module_file(module, abspath)
    if path is None and not module.endswith("."):  # ``from pkg import sub`` then ``sub.Name``
        module2, _, name2 = module.rpartition(".")
        path = find_module_file(module2, abspath) if module2 else None
        if path is not None:
            return _symbol_backend(path, f"{name2}.{name}", depth + 1, seen)
    if path is None:
        return None
    return _symbol_backend(path, name, depth + 1, seen)


def _symbol_backend(path: str, text: str, depth: int, seen: set) -> Optional[str]:
    scan = scan_file(path)
    if text in scan.functions:
        return scan.functions[text]
    return _expr_backend(scan, text, path, depth, seen)


def find_module_file(module: str, from_file: str) -> Optional[str]:
    """The file of ``module`` (``.base``, ``..pkg.mod`` relative to ``from_file``, or absolute:
    looked up next to the file, in its package root and on sys.path), without importing anything."""
    level = len(module) - len(module.lstrip("."))
    parts = [p for p in module.lstrip(".").split(".") if p]
    if level:
        base = os.path.dirname(from_file)
        for _ in range(level - 1):
            base = os.path.dirname(base)
        return _module_in(base, parts)
    if not parts or parts[0] in _FRAMEWORK_TOPS:
        return None
    from gradcli.check.imports import package_root

    folders = [os.path.dirname(from_file), package_root(from_file)] + [p or os.getcwd() for p in sys.path]
    for folder in dict.fromkeys(folders):
        found = _module_in(folder, parts)
        if found:
            return found
    return None


def _module_in(folder: str, parts: list) -> Optional[str]:
    path = os.path.join(folder, *parts)
    for candidate in (path + ".py", os.path.join(path, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    if not parts:
        init = os.path.join(folder, "__init__.py")
        return init if os.path.isfile(init) else None
    return None
