"""Reading shape conditions in forward's source (``infer.read_hints``): the parameter and dim that
``x.dim()``, ``len(x.shape)``, ``x.shape[-1]``, ``x.size(0)`` name, and the parts of ``a and b`` / ``a or b``.
Read with ``ast``; nothing is evaluated.
"""
from __future__ import annotations

import ast
from typing import Optional


def _name(node) -> Optional[str]:
    return node.id if isinstance(node, ast.Name) else None


def _conjuncts(node, op_type):
    if isinstance(node, ast.BoolOp) and isinstance(node.op, op_type):
        for v in node.values:
            yield from _conjuncts(v, op_type)
    else:
        yield node


def _ndim_of(node) -> Optional[str]:
    """x.dim(), x.ndim, x.ndimension(), len(x.shape), len(x.size()) -> "x"."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("dim", "ndimension"):
        return _name(node.func.value)
    if isinstance(node, ast.Attribute) and node.attr == "ndim":
        return _name(node.value)
    if isinstance(node, ast.Call) and _name(node.func) == "len" and node.args:
        inner = node.args[0]
        if isinstance(inner, ast.Attribute) and inner.attr == "shape":
            return _name(inner.value)
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "size":
            return _name(inner.func.value)
    return None


def int_literal(n) -> Optional[int]:
    """``3`` -> 3, ``-1`` -> -1; anything else -> None (also the diagnosis's written dims)."""
    if isinstance(n, ast.Constant) and isinstance(n.value, int):
        return n.value
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and isinstance(n.operand, ast.Constant):
        return -n.operand.value
    return None


def _size_of(node) -> Optional[tuple]:
    """x.shape[-1], x.size(-1), x.size()[-1] -> ("x", -1)."""
    const = int_literal
    if isinstance(node, ast.Subscript) and const(node.slice) is not None:
        base = node.value
        if isinstance(base, ast.Attribute) and base.attr == "shape":
            return _name(base.value), const(node.slice)
        if isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and base.func.attr == "size":
            return _name(base.func.value), const(node.slice)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size" \
            and len(node.args) == 1 and const(node.args[0]) is not None:
        return _name(node.func.value), const(node.args[0])
    return None
