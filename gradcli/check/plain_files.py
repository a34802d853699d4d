"""Plain Function files: files whose import and checks cannot change the process for the next file.

Every file is checked in a process no other user file has touched (processes.py), because a file
may monkeypatch torch at import (``torch.cos = ...``) or set global state in its forward
(``torch.set_default_dtype``, ``np.seterr``). A fork of a process holding torch costs ~11 ms of
CPU (its ~150 MB of anonymous memory: page tables at the fork, unmapping at the exit) plus
~20 ms of copy-on-write faults and cold caches, more than checking a small Function. A file
that, read (``ast``, never run), can do neither is **plain**, and plain files of one kind share a
reused worker (shared_worker.py) whose random generators, ``sys.path`` and the file's modules are
put back before each file: it sees what a fresh fork would. Plain means, conservatively:

* the module's statements: a docstring, imports of torch/numpy/math/gradcli/typing/``__future__``
  only, assignments of constants to names, classes and functions (no decorators beyond
  ``staticmethod``/``classmethod``/``once_differentiable``, no class keywords: no metaclass code);
* no ``__init__.py`` next to it (a package's ``__init__`` is user code run at import);
* in every function and class body: no ``global``/``nonlocal``/``import``/``while``/``yield``/
  ``await``/``del``, no assignment to anything but local names and their attributes or items
  (``ctx.k = 2``, ``out[0] = 1``; never ``torch.x = ...``), no dunder attribute, no call of a
  name that is neither local, nor defined in the file, nor a harmless builtin, and no call through
  torch/numpy/math of an attribute that sets, seeds, registers, loads, compiles or is private.

Anything else (most real packages) keeps a worker of its own per file, as before. And the rule is
not trusted alone: after each file the shared worker compares ``fingerprint()`` (the namespaces of
torch, ``torch.Tensor``, ``torch.nn.functional``, numpy, math and builtins, torch's and numpy's global
modes, the working directory, the environment, the warning filters) with what it was before the
file; a file that changed any of it retires the worker, and the next file gets a fresh one.
"""
from __future__ import annotations

import ast
import functools
import os
import sys

LIBRARIES = {"torch", "numpy", "math", "gradcli", "typing", "__future__"}
DECORATORS = {"staticmethod", "classmethod", "once_differentiable"}
BUILTINS = {"len", "range", "min", "max", "abs", "sum", "tuple", "list", "dict", "set", "frozenset", "zip",
            "enumerate", "isinstance", "issubclass", "int", "float", "bool", "str", "round", "sorted", "reversed",
            "any", "all", "map", "filter", "print", "hasattr", "type", "super", "slice", "divmod",
            "pow", "repr", "iter", "next", "complex", "ValueError", "TypeError", "RuntimeError", "IndexError",
            "NotImplementedError", "ZeroDivisionError", "ArithmeticError", "KeyError", "AssertionError"}
# attribute names that, called through a library, change the process: set_default_dtype, manual_seed,
# seterr, use_deterministic_algorithms, library.register_*, ops.load_library, compile, private API
_IMPURE_PREFIXES = ("set", "seed", "manual_seed", "use_", "register", "load", "compile", "enable", "disable",
                    "_", "fork", "spawn", "save", "open")
_IMPURE_PARTS = {"library", "jit", "cuda", "backends", "ops", "hub", "distributed", "multiprocessing", "utils",
                 "random", "testing", "config", "fx", "export", "compiler", "cpu", "mps", "xpu", "lib"}


@functools.lru_cache(maxsize=4096)
def is_plain(abspath: str) -> bool:
    """Whether importing and checking ``abspath`` can leave nothing behind for another file (above)."""
    folder = os.path.dirname(abspath)
    if os.path.exists(os.path.join(folder, "__init__.py")):
        return False
    try:
        with open(abspath, "rb") as f:
            tree = ast.parse(f.read(), filename=abspath)
    except (OSError, SyntaxError, ValueError):
        return False
    defined = {node.name for node in tree.body if isinstance(node, (ast.ClassDef, ast.FunctionDef))}
    imported = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if node.__class__ is ast.ImportFrom and node.level:
                return False
            if any(n.split(".")[0] not in LIBRARIES for n in names):
                return False
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
    if any(name.startswith(_IMPURE_PREFIXES) or name in _IMPURE_PARTS for name in imported):
        return False  # from torch import manual_seed
    known = defined | imported
    return all(_plain_statement(node, known) for node in tree.body)


def _plain_statement(node, known: set) -> bool:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(node, ast.Expr):
        return isinstance(node.value, ast.Constant)  # a docstring
    if isinstance(node, ast.Assign):
        return all(isinstance(t, ast.Name) for t in node.targets) and _constant(node.value)
    if isinstance(node, ast.FunctionDef):
        return not node.decorator_list and _plain_function(node, known)
    if isinstance(node, ast.ClassDef):
        if node.keywords or node.decorator_list or not all(_dotted(b) for b in node.bases):
            return False
        for item in node.body:
            if isinstance(item, ast.FunctionDef):
                if not all(_decorator(d) for d in item.decorator_list) or not _plain_function(item, known):
                    return False
            elif not (isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant)) and not (
                    isinstance(item, ast.Assign) and all(isinstance(t, ast.Name) for t in item.targets)
                    and _constant(item.value)):
                return False
        return True
    return False


def _constant(node) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _constant(node.operand)
    return isinstance(node, ast.Tuple) and all(_constant(e) for e in node.elts)


def _dotted(node) -> bool:
    return isinstance(node, ast.Name) or (isinstance(node, ast.Attribute) and _dotted(node.value))


def _decorator(node) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return name in DECORATORS and _dotted(node)


def _root(node):
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _chain(node) -> list:
    """Attribute names of a call's function, outermost last: ``torch.nn.functional.relu`` -> [nn, functional, relu]."""
    names = []
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        if isinstance(node, ast.Attribute):
            names.append(node.attr)
        node = node.func if isinstance(node, ast.Call) else node.value
    return names[::-1]


def _plain_function(fn: ast.FunctionDef, known: set) -> bool:
    local = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    local |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
        elif isinstance(node, ast.arg):
            local.add(node.arg)
    for node in ast.walk(fn):
        if isinstance(node, (ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom, ast.While, ast.Yield,
                             ast.YieldFrom, ast.Await, ast.Delete, ast.ClassDef, ast.AsyncFunctionDef)):
            return False
        if isinstance(node, ast.FunctionDef) and node is not fn and node.decorator_list:
            return False
        if isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr != "__name__":
            return False
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            return False
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for part in (target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]):
                    part = part.value if isinstance(part, ast.Starred) else part
                    if not isinstance(part, ast.Name) and _root(part) not in local:
                        return False
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Name, ast.Attribute)) \
                and _root(node.value) not in local:
            return False  # an alias of a library or of its function (t = torch; t.manual_seed(0))
        if isinstance(node, ast.Attribute) and _root(node) not in local and _impure(_chain(node)):
            return False  # also passed on uncalled: map(torch.manual_seed, ...)
        if isinstance(node, ast.Call) and not _plain_call(node, local, known):
            return False
    return True


def _impure(chain: list) -> bool:
    return any(name.startswith(_IMPURE_PREFIXES) or name in _IMPURE_PARTS for name in chain)


def _plain_call(call: ast.Call, local: set, known: set) -> bool:
    root = _root(call.func)
    if root is None or root in local:
        # a call on an expression's result ((x * 2).sum()), a method of a tensor or of ctx (the only
        # objects a plain forward holds)
        return True
    chain = _chain(call.func)
    if root in known:  # a class or function of this file (plain too), a library or a name imported from one
        return not _impure(chain)
    return root in BUILTINS and not chain


def fingerprint() -> tuple:
    """What a file could change for the next one in the same process, cheaply taken and compared
    (well under a millisecond): the identity of every name in the libraries' namespaces, their global
    modes, the working directory, the environment and the warning filters."""
    import builtins
    import math
    import warnings

    spaces = [builtins, math]
    modes: list = [os.getcwd(), tuple(sorted(os.environ.items())), tuple(warnings.filters)]
    numpy = sys.modules.get("numpy")
    if hasattr(numpy, "geterr"):
        spaces.append(numpy)
        modes.append(tuple(sorted(numpy.geterr().items())))
    torch = sys.modules.get("torch")
    if hasattr(torch, "autograd"):
        spaces += [torch, torch.Tensor, torch.autograd, torch.autograd.Function, torch.nn.functional]
        modes += [torch.get_default_dtype(), torch.is_grad_enabled(), torch.is_anomaly_enabled(),
                  torch.are_deterministic_algorithms_enabled(), torch.get_num_threads()]
    return [(space, dict(vars(space))) for space in spaces], tuple(modes)  # the objects: `is`, not ids that recur


def unchanged(before: tuple, after: tuple) -> bool:
    """Whether ``after`` (a fingerprint) shows nothing a file did: every name still bound to the same
    object, the same modes; a name added is allowed only as a submodule (a library's lazy import)."""
    (spaces, modes), (now_spaces, now_modes) = before, after
    if modes != now_modes or len(spaces) != len(now_spaces):
        return False
    for (space, names), (_, now) in zip(spaces, now_spaces):
        if any(now.get(k, unchanged) is not v for k, v in names.items()):
            return False
        added = now.keys() - names.keys()
        if any(not isinstance(vars(space)[k], type(os)) for k in added):
            return False
    return True
