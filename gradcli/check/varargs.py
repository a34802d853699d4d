"""How many arguments a ``forward(ctx, x, *args)`` takes in its ``*args``, read from the source.

Nothing is evaluated. The evidence, strongest first:

* forward unpacks them: ``a, b = args`` (their names, too);
* forward indexes them: ``args[2]`` (at least three);
* the package calls it: ``Cls.apply(x, w, b)`` in the Function's own module;
* backward returns a fixed tuple: one gradient per forward input (``return gx, None, ga, gb``).

With none of these, or as a fallback, no extra argument at all, then one, then two (a forward that
loops over ``args`` runs with any number). Each candidate is one list of names for the extra
arguments (``args_0``, ``args_1``, ...: what ``--input NAME=SPEC``, the records and the report use;
what forward's source says of ``a`` in ``a, b = args`` is read for ``args_0``); ``inputs.build_cases``
tries them in order.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Optional

from gradcli.check import callable_params, source_code

MAX_EXTRA = 6  # a count above this from the source is ignored (a generic wrapper, not this Function's use)


def star_name(target) -> Optional[str]:
    """The name of forward's ``*args`` parameter, or None."""
    try:
        sig = inspect.signature(target.forward)
    except (TypeError, ValueError):
        return None
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            return p.name
    return None


def candidates(target, named: int) -> list:
    """Lists of names for the extra arguments to try, best evidence first (no duplicates)."""
    star = star_name(target)
    if star is None:
        return [[]]
    forward = _function_node(getattr(target.cls, "forward", None))
    out = []
    unpacked = _unpacked_names(forward, star) if forward is not None else None
    counts = [len(unpacked)] if unpacked else []
    if forward is not None:
        counts.append(_indexed_count(forward, star))
    counts += callable_params.extra_counts(target, named)  # .apply(fn, *inputs, *fn_parameters): one per *
    counts += _apply_call_counts(target, named)
    counts.append(_backward_count(getattr(target.cls, "backward", None), named))
    counts += [0, 1, 2]
    for n in counts:
        if n is None or not 0 <= n <= MAX_EXTRA:
            continue
        names = [f"{star}_{i}" for i in range(n)]
        if names not in out:
            out.append(names)
    return out


def aliases(target) -> dict:
    """{name forward unpacks an extra argument into: its ``args_i`` name}: ``a, b = args`` -> a: args_0."""
    star = star_name(target)
    forward = _function_node(getattr(target.cls, "forward", None)) if star else None
    unpacked = _unpacked_names(forward, star) if forward is not None else None
    return {n: f"{star}_{i}" for i, n in enumerate(unpacked or ())}


def _function_node(fn) -> Optional[ast.AST]:
    fn = getattr(fn, "__func__", fn)
    try:
        tree = ast.parse(textwrap.dedent(source_code.source(fn)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _unpacked_names(forward, star: str) -> Optional[list]:
    """``a, b = args`` (or ``(a, b) = args``) anywhere in forward: ["a", "b"]."""
    for node in ast.walk(forward):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id == star:
            for t in node.targets:
                if isinstance(t, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in t.elts):
                    return [e.id for e in t.elts]
    return None


def _indexed_count(forward, star: str) -> Optional[int]:
    """``args[k]`` with constant k: k+1 for the largest k (None when never indexed so)."""
    top = None
    for node in ast.walk(forward):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == star \
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int) \
                and node.slice.value >= 0:
            top = max(top or 0, node.slice.value + 1)
    return top


def _apply_call_counts(target, named: int) -> list:
    """Extra-argument counts of ``Cls.apply(...)`` calls in the Function's own module (no ``*`` in them)."""
    module = inspect.getmodule(target.cls)
    try:
        tree = ast.parse(inspect.getsource(module)) if module is not None else None
    except (OSError, TypeError, SyntaxError):
        tree = None
    if tree is None:
        return []
    counts = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "apply" \
                and callable_params.tail_name(node.func.value) == target.cls.__name__ and not node.keywords \
                and not any(isinstance(a, ast.Starred) for a in node.args):
            n = len(node.args) - named
            if n >= 0 and n not in counts:
                counts.append(n)
    return counts


def _backward_count(backward, named: int) -> Optional[int]:
    """One gradient per forward input: a backward whose every return is a plain tuple of the same length
    says how many inputs forward has (None when a return is built otherwise: ``(g,) + tuple(grads)``)."""
    node = _function_node(backward)
    if node is None:
        return None
    lengths = set()
    for r in ast.walk(node):
        if isinstance(r, ast.Return) and r.value is not None:
            if not isinstance(r.value, ast.Tuple) or any(isinstance(e, ast.Starred) for e in r.value.elts):
                return None
            lengths.add(len(r.value.elts))
    if len(lengths) != 1:
        return None
    n = lengths.pop() - named
    return n if n >= 0 else None
