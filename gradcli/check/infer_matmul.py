"""Shapes that ``a @ b``, ``torch.matmul``/``mm``/``bmm`` and ``F.linear`` between forward's parameters imply
(``infer.read_hints`` calls ``matmul_shapes``; read with ``ast``, nothing is evaluated).
"""
from __future__ import annotations

import ast


def _name(node):
    return node.id if isinstance(node, ast.Name) else None


def _operand(node) -> tuple:
    """(parameter name, transposed?) for ``a``, ``a.t()``, ``a.T``, ``a.mT``, ``a.transpose(-2,-1)``."""
    if _name(node):
        return _name(node), False
    if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
        return _name(node.value), True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("t", "transpose"):
        return _name(node.func.value), True
    return None, False


def matmul_shapes(forward, hints: dict):
    """``a @ b`` / ``torch.matmul(a, b)`` / ``a.mm(b)`` / ``F.linear(x, w, b)`` between two parameters:
    shapes that fit, (3,4)·(4,5) (batched (2,3,4)·(2,4,5) when one asserts 3 dims)."""
    from gradcli.check.infer import _MATMUL_CALLS, _call_name, _is_module  # infer imports this module

    pairs = []
    for node in ast.walk(forward):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            pairs.append((node.left, node.right))
        elif isinstance(node, ast.Call):
            name, obj = _call_name(node)
            if name in _MATMUL_CALLS and obj is not None and not _is_module(obj) and node.args:
                pairs.append((obj, node.args[0]))
            elif name in _MATMUL_CALLS and len(node.args) >= 2:
                pairs.append((node.args[0], node.args[1]))
            elif name == "linear" and len(node.args) >= 2:
                x, w = _name(node.args[0]), _name(node.args[1])
                if x in hints and w in hints and hints[x].shape is None and hints[w].shape is None:
                    hints[x].shape, hints[w].shape = (3, 4), (5, 4)
                    if len(node.args) > 2 and _name(node.args[2]) in hints:
                        hints[_name(node.args[2])].shape = (5,)
    for left, right in pairs:
        (a, ta), (b, tb) = _operand(left), _operand(right)
        if a not in hints or b not in hints or a == b or hints[a].shape or hints[b].shape:
            continue
        batch = (2,) if 3 in (hints[a].ndim, hints[b].ndim) else ()
        sa, sb = (3, 4), (4, 5)
        hints[a].shape = batch + (sa[::-1] if ta else sa)
        hints[b].shape = batch + (sb[::-1] if tb else sb)
