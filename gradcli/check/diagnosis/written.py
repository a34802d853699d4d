"""Statements a hint quotes besides the gradient's own: an update computed and thrown away, an
assignment in an ``if`` that did not run, the index write of a gradient allocated empty that sets
its sign or factor."""
from __future__ import annotations

import ast

from gradcli.check.diagnosis.source import chain, statements


def _discarded_update(src, statement):
    """A statement of backward that computes arithmetic on the name ``statement`` binds and throws
    the result away (``grad_x[:, j] + v`` where ``grad_x[:, j] += v`` was meant), or None."""
    targets = statement.targets if isinstance(statement, ast.Assign) else []
    if len(targets) != 1 or not isinstance(targets[0], ast.Name):
        return None
    name = targets[0].id
    return next((s for s in statements(src.tree) if isinstance(s, ast.Expr) and isinstance(s.value, ast.BinOp)
                 and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(s.value))), None)


def _skipped_assignment(src, statement):
    """A later assignment to the name ``statement`` binds, inside an ``if`` of backward, that did
    not run in the traced call (``grad_w = zeros_like(w)`` then ``if not ctx.needs_input_grad[1]:
    grad_w = …``): the zeros are returned because of that condition."""
    targets = statement.targets if isinstance(statement, ast.Assign) else []  # `gx = gy = None`: either
    names = {t.id for t in targets if isinstance(t, ast.Name)}
    if not names or len(names) != len(targets) or src.executed is None:
        return None
    for node in ast.walk(src.tree):
        if not isinstance(node, ast.If) or node.lineno <= statement.lineno:
            continue
        for stmt in (s for branch in (node.body, node.orelse) for s in branch):
            binds = isinstance(stmt, (ast.Assign, ast.AugAssign)) and any(
                isinstance(t, ast.Name) and t.id in names
                for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]))
            if binds and not src.ran(stmt):
                return stmt
    return None


ALLOCATIONS = ("zeros", "zeros_like", "empty", "empty_like", "new_zeros", "new_empty", "full", "full_like")


def _written_into(src, statement, expr, ops):
    """A gradient allocated empty and then written by index (``g = zeros(…)``, ``g[:, 1:] -= grad``):
    the first of those writes holding one of ``ops`` (``-=`` counts as a subtraction), where a sign
    or a factor is set; None when the gradient is computed otherwise."""
    value = getattr(statement, "value", None)
    written = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
    if isinstance(statement, ast.Assign) and isinstance(value, ast.Call) and isinstance(
            value.func, (ast.Attribute, ast.Name)) and getattr(value.func, "attr", getattr(value.func, "id", "")) \
            in ALLOCATIONS:
        targets = {t.id for t in written if isinstance(t, ast.Name)}
    else:  # the gradient statement is itself the last index write (`g[:, :-1] += grad`)
        targets = {t.value.id for t in written if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)}
    if not targets:
        return None
    for stmt in chain(src, statement, expr):
        written = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
        if not any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in targets
                   for t in written):
            continue
        if (isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ops)) or any(
                isinstance(n, ops) for n in ast.walk(stmt.value)):
            return stmt
    return None
