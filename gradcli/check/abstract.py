"""Abstract bases among collected Functions: a forward/backward that cannot run on its own.

A base such as ``_GenericLossFunction`` has a forward and a backward, but its forward calls
``cls.project`` and ``cls.omega``, which only its subclasses define (in its module, or in modules
imported so far: a package ``__init__`` importing them); checking it alone can only
raise. Such a class is reported as a skip saying why (its subclasses are checked), never as an
error. Read from the methods' source (``ast``); nothing is run.

A Function with no backward (nor vjp, nor jvp) of its own or of a user base (an ONNX-export stub defining
only ``forward``/``symbolic``) has nothing to check: torch's default backward raises. It is a skip saying so
before any input is built (its forward may need inputs nobody could build, and would not matter).
"""
from __future__ import annotations

import ast
import textwrap
from typing import Callable, Optional

from gradcli.check import source_code


def abstract_reason(cls, subclasses: list, own: Callable) -> Optional[str]:
    """Why ``cls`` cannot be checked on its own, or None. ``subclasses``: the module's classes
    derived from it; ``own(cls, name)``: the user-defined attribute in the MRO (discovery._own)."""
    if all(own(cls, method) is None for method in ("backward", "vjp", "jvp")):
        return NO_BACKWARD
    for method in ("forward", "backward"):
        raw = own(cls, method)
        if raw is None:
            continue
        node, first = _parse(raw)
        if node is None:
            continue
        why = None
        if _is_stub(node):
            why = f"{method} raises NotImplementedError"
        elif first is not None:
            why = _hook_problem(cls, subclasses, node, first, method, own)
        if why:
            derived = [s.__name__ for s in subclasses]
            tail = f" (its subclasses {', '.join(derived)} are checked)" if derived else ""
            return f"abstract base: {why}; not checked on its own{tail}"
    return None


NO_BACKWARD = ("no backward of its own (nor vjp, nor jvp): torch's default backward raises NotImplementedError: "
               "You must implement either the backward or vjp method for your custom autograd.Function; nothing "
               "to check (a forward-only or export stub), not checked")


def _parse(raw) -> tuple:
    """(the method's FunctionDef, the name of its class/instance parameter or None)."""
    func = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    try:
        tree = ast.parse(textwrap.dedent(source_code.source(func)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None, None
    node = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if node is None:
        return None, None
    takes_class = isinstance(raw, classmethod) or not isinstance(raw, staticmethod)  # cls, or legacy self
    args = node.args.posonlyargs + node.args.args
    return node, (args[0].arg if takes_class and args else None)


def _is_stub(node) -> bool:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # the docstring
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _hook_problem(cls, subclasses, node, first: str, method: str, own) -> Optional[str]:
    used = []
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == first \
                and not n.attr.startswith("__") and n.attr not in used:
            used.append(n.attr)
    for name in used:
        if not hasattr(cls, name):
            definers = [s.__name__ for s in _all_subclasses(cls, subclasses) if hasattr(s, name)]
            if definers:
                return f"{method} uses {first}.{name}, which only its subclasses define"
            continue
        hook = own(cls, name)
        if hook is not None and callable(getattr(hook, "__func__", hook)):
            hook_node, _ = _parse(hook)
            if hook_node is not None and _is_stub(hook_node):
                return f"{method} calls {first}.{name}, which raises NotImplementedError"
    return None


def _all_subclasses(cls, in_module: list) -> list:
    """The module's subclasses, then those imported from elsewhere so far (``type.__subclasses__``)."""
    found, todo = list(in_module), [cls]
    while todo:
        for sub in type.__subclasses__(todo.pop()):
            if sub not in found:
                found.append(sub)
                todo.append(sub)
    return found
