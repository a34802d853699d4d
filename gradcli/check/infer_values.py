"""Python values from uses ``infer.py`` does not read (``infer.read_hints`` calls ``refine``):

* ``ctx.keep = keep`` in forward, then ``if not ctx.keep:`` (in forward or backward): a bool, as ``if keep:``
  is;
* ``[inputs] * n`` / ``(x,) * n``: n repeats a list or tuple, an int.

Nothing is evaluated; a wrong hint costs a trial (forward running is the oracle), never a verdict.
"""
from __future__ import annotations

import ast
from typing import Optional

_SEQUENCES = (ast.List, ast.Tuple, ast.ListComp)


def refine(forward: ast.AST, backward: Optional[ast.AST], hints: dict):
    stored = _ctx_stored(forward, hints)
    for tree in (forward, backward):
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.If, ast.IfExp, ast.While)):
                for name in _ctx_condition_names(node.test, stored):
                    _claim(hints, name, "bool", f"ctx.{_attr_of(stored, name)} used as a condition")
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                for seq, count in ((node.left, node.right), (node.right, node.left)):
                    if isinstance(seq, _SEQUENCES) and isinstance(count, ast.Name) and tree is forward:
                        _claim(hints, count.id, "int", "repeats a list in forward ([...] * n)")


def _claim(hints, name, kind, why):
    hint = hints.get(name)
    if hint is not None and hint.kind is None and not hint.tensor_use:
        hint.kind, hint.why = kind, why


def _ctx_stored(forward, hints) -> dict:
    """``ctx.attr = param`` in forward: {attr: param}."""
    out = {}
    for node in ast.walk(forward):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in hints:
            for t in node.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                    out[t.attr] = node.value.id
    return out


def _attr_of(stored, name) -> str:
    return next((a for a, p in stored.items() if p == name), name)


def _ctx_condition_names(test, stored) -> list:
    """Parameters a test uses bare through ctx: ``ctx.p``, ``not ctx.p``, ``ctx.p and q``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _ctx_condition_names(test.operand, stored)
    if isinstance(test, ast.BoolOp):
        return [n for v in test.values for n in _ctx_condition_names(v, stored)]
    if isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.attr in stored:
        return [stored[test.attr]]
    return []
