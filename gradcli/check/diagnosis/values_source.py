"""Where a gradient's *values* are computed, when the statement that yields it only lays them out
or writes them into an allocated tensor (``return _merge(dkh)``, ``g.index_add_(0, idx, v)``).

A value mistake (a factor, a sign, a term, a tensor, a region's value) is fixed where the values
are computed, not where they are reshaped or stored; ``hints.py`` quotes what this module finds.
"""
from __future__ import annotations

import ast

from gradcli.check.diagnosis.source import Source, _assigns, _index_writes, grad_output_names, statements

# calls that only lay values out (or copy them): the values are computed where their operand is
RELAYOUT_CALLS = {"reshape", "view", "contiguous", "clone", "to", "flatten", "squeeze", "unsqueeze", "expand",
                  "expand_as", "reshape_as", "view_as", "permute", "transpose", "t", "type_as", "double", "float",
                  "detach", "repeat"}
# in-place writes into a gradient: (method, position of the written values among the arguments)
WRITE_VALUES = {"index_add_": 2, "scatter_": 2, "scatter_add_": 2, "index_copy_": 2, "index_put_": 1,
                "masked_scatter_": 1, "copy_": 0, "add_": 0}


def values_statement(src: Source, statement, expr, depth: int = 4):
    """The statement where the *values* of a gradient are computed, when the gradient statement
    only lays them out or writes them: ``return _merge(dkh)`` / ``return out.reshape(shape)`` ->
    where ``dkh`` / ``out`` got its values; ``g.index_add_(0, idx, v.reshape(-1, d))`` or ``g[idx] =
    v`` -> where ``v`` is computed. A factor, a sign, a term or a tensor wrong in those values is
    fixed there. (statement, expression); unchanged when the values are computed in place."""
    for _ in range(depth):
        written = _written_values(statement)
        source = written if written is not None else expr
        name = _laid_out_name(src, source)
        if name is None:
            return statement, expr
        appended = [n for n in statements(src.tree) if n.lineno < statement.lineno and src.ran(n) and _appends(n, name)]
        if appended:  # a list filled in a loop, then stacked: the values are what is appended (a name
            # appended is the loop's recursion too, which must stay as it is: the append is quoted)
            return appended[-1], appended[-1].value.args[-1]
        assigned = [n for n in statements(src.tree) if n.lineno < statement.lineno and src.ran(n) and (
            (isinstance(n, (ast.Assign, ast.AnnAssign)) and _assigns(n, name)) or n in _index_writes(src, {name}))]
        if not assigned or (isinstance(assigned[-1], ast.Assign) and isinstance(
                assigned[-1].value, ast.Attribute) and assigned[-1].value.attr in ("saved_tensors", "saved_variables")):
            return statement, expr
        statement = assigned[-1]
        expr = getattr(statement, "value", None)
        if expr is None:
            return statement, expr
    return statement, expr


def _appends(stmt, name) -> bool:
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "append" \
        and isinstance(call.func.value, ast.Name) and call.func.value.id == name and len(call.args) == 1


def _written_values(stmt):
    """The values an index write or an in-place write call stores, or None."""
    if isinstance(stmt, (ast.Assign, ast.AugAssign)) and any(
            isinstance(t, ast.Subscript) for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])):
        return stmt.value
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in WRITE_VALUES:
        k = WRITE_VALUES[call.func.attr]
        return call.args[k] if k < len(call.args) else None
    return None


def _laid_out_name(src: Source, expr):
    """``name`` when ``expr`` is a backward-assigned name, only laid out (``v.reshape(-1, d)``,
    ``v[:, None]``, ``helper(v)``): no arithmetic on it; else None."""
    # only the chain of layout steps is walked: arithmetic anywhere on it stops the walk
    node = expr
    while True:
        if isinstance(node, ast.Name):
            break
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RELAYOUT_CALLS:
            node = node.func.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("stack", "cat") \
                and node.args:
            node = node.args[0]  # `torch.stack(grads[::-1])`: the list's values
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) >= 1 \
                and node.func.id not in _assigned_names(src):
            node = node.args[0]  # a module-level helper given the values first (`_merge(dkh)`)
        else:
            return None
    if node.id in grad_output_names(src) or node.id not in _assigned_names(src):
        return None
    return node.id


def _assigned_names(src: Source):
    names = set()
    for stmt in statements(src.tree):
        for target in (stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]):
            names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)} if target is not None else set()
    return names


def strided_cotangent_read(src: Source, position: int):
    """The statement of the gradient's chain that reads grad_output with a step (``g[:, ::2]``): a
    backward keeping one of every k copies forward made, where it must add them — the source side
    of a not_accumulated finding with no write. A plain slice (``g[:n]``, one block of a ``cat``) is
    not evidence. None if there is none."""
    from gradcli.check.diagnosis.source import chain, gradient_statement

    statement, expr = gradient_statement(src, position)
    if statement is None:
        return None
    cotangents = grad_output_names(src)
    for stmt in chain(src, statement, expr if expr is not None else statement):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in cotangents:
                parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                if any(isinstance(p, ast.Slice) and p.step is not None and not (
                        isinstance(p.step, ast.Constant) and p.step.value in (1, None)) for p in parts):
                    return stmt
    return None
