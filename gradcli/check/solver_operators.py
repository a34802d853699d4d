"""The operator of a conjugate-gradient solve is symmetric positive definite (``infer.read_hints`` calls ``refine``).

``linear_cg(prec.matmul, rhs, ...)`` with ``prec = natural_mat.mul(-2.0)``: conjugate gradients converge only for
a symmetric positive definite operator; on a random matrix they run to their iteration limit (slow, and the
result is not the solve the package means). The operator's matrix, followed back to a parameter through one
local assignment that scales it by a number (``p.mul(c)``, ``p * c``, ``c * p``, ``-p``, ``p / c``), gets the
structure ``spd`` — or ``nsd`` (negative definite) where the number is negative: a natural parameter ``-Σ⁻¹/2``.
A solver is a call whose name says conjugate gradients (``linear_cg``, ``cg``, ``pcg``, ``conjugate_gradient``);
its first argument is the matrix, its ``.matmul`` / ``.mm`` / ``.__matmul__``, or a lambda applying one.
Nothing is evaluated; forward running is still the oracle.
"""
from __future__ import annotations

import ast
import re
from typing import Optional

from gradcli.check.infer_calls import _scaled

_CG = re.compile(r"(^|_)(p?cg|conjugate_gradients?)($|_)", re.IGNORECASE)
_APPLY = {"matmul", "mm", "__matmul__", "mv", "bmm"}


def refine(forward: ast.AST, hints: dict):
    scaled = _local_scalings(forward, hints)
    for node in ast.walk(forward):
        if not isinstance(node, ast.Call) or not node.args or not _CG.search(_func_name(node.func) or ""):
            continue
        found = _operator(node.args[0], hints, scaled)
        if found is None:
            continue
        name, sign = found
        hint = hints.get(name)
        if hint is None or hint.kind is not None or hint.structure in ("spd", "nsd"):
            continue
        hint.structure, hint.square = ("nsd" if sign < 0 else "spd"), True
        hint.why = (f"the operator of {_func_name(node.func)}() is {'minus a multiple of ' if sign < 0 else ''}it: "
                    f"conjugate gradients need a symmetric positive definite operator, so it is "
                    f"{'negative' if sign < 0 else 'positive'} definite")


def _func_name(func) -> Optional[str]:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _local_scalings(forward, hints) -> dict:
    """{local name: (parameter, sign)} for ``v = p.mul(c)`` / ``v = c * p`` / ``v = -p`` / ``v = p``."""
    out = {}
    for node in ast.walk(forward):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found = _scaling(node.value)
            if found is not None and found[0] in hints:
                out[node.targets[0].id] = found
    return out


def _scaling(node) -> Optional[tuple]:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("mul", "div") \
            and isinstance(node.func.value, ast.Name) and len(node.args) == 1:
        c = _number(node.args[0])
        if c is not None and c != 0:
            return node.func.value.id, (1 if c > 0 else -1)
        return None
    name, sign = _scaled(node)
    return (name, sign) if name is not None else None


def _number(node) -> Optional[float]:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _number(node.operand)
        return -value if value is not None else None
    return node.value if isinstance(node, ast.Constant) and type(node.value) in (int, float) else None


def _operator(node, hints, scaled) -> Optional[tuple]:
    """(parameter, sign) of the matrix a solver's first argument applies."""
    if isinstance(node, ast.Lambda):  # lambda v: prec @ v, lambda v: prec.matmul(v)
        body = node.body
        if isinstance(body, ast.BinOp) and isinstance(body.op, ast.MatMult):
            return _matrix(body.left, hints, scaled)
        if isinstance(body, ast.Call) and isinstance(body.func, ast.Attribute) and body.func.attr in _APPLY:
            return _matrix(body.func.value, hints, scaled)
        return None
    if isinstance(node, ast.Attribute) and node.attr in _APPLY:
        return _matrix(node.value, hints, scaled)
    return _matrix(node, hints, scaled)


def _matrix(node, hints, scaled) -> Optional[tuple]:
    if isinstance(node, ast.Name) and node.id in scaled:
        return scaled[node.id]
    found = _scaling(node)
    return found if found is not None and found[0] in hints else None
