"""Python values from uses ``infer.py`` does not read (``infer.read_hints`` calls ``refine``):

* ``ctx.keep = keep`` in forward, then ``if not ctx.keep:`` (in forward or backward): a bool, as ``if keep:``
  is;
* ``[inputs] * n`` / ``(x,) * n``: n repeats a list or tuple, an int;
* ``w.reshape_as(mean)`` / ``w.view_as(mean)`` (forward, backward on the saved tensors, a helper forward
  hands them to): w has mean's number of elements (``Hint.reshaped_to``; guided.reduced_shapes uses it);
* ``dist.all_reduce(v, group=pg)`` (in forward, or in backward through ``ctx.pg = pg``): a process group,
  None (torch.distributed's default group, which gradcli starts with one process where one is needed).

Nothing is evaluated; a wrong hint costs a trial (forward running is the oracle), never a verdict.
"""
from __future__ import annotations

import ast
from typing import Optional

_SEQUENCES = (ast.List, ast.Tuple, ast.ListComp)
_GROUP_KEYWORDS = ("group", "process_group")


def _param_of(node, hints, stored) -> Optional[str]:
    """The parameter ``node`` is: ``p`` itself, or ``ctx.attr`` holding it."""
    if isinstance(node, ast.Name) and node.id in hints:
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in stored:
        return stored[node.attr]
    return None


def refine(forward: ast.AST, backward: Optional[ast.AST], hints: dict):
    from gradcli.check.infer import count_choices
    from gradcli.check.infer_flow import saved_names

    stored = _ctx_stored(forward, hints)
    kept = _kept_on_ctx(forward)
    reshapes(forward, hints)
    if backward is not None:
        reshapes(backward, hints, saved_names(forward, backward, hints))
    for tree in (forward, backward):
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.If, ast.IfExp, ast.While)):
                for name in _ctx_condition_names(node.test, stored):
                    _claim(hints, name, "bool", f"ctx.{_attr_of(stored, name)} used as a condition")
            elif isinstance(node, ast.Call):
                for kw in node.keywords:
                    name = _param_of(kw.value, hints, stored)
                    if kw.arg in _GROUP_KEYWORDS and name is not None:
                        _claim(hints, name, "none", f"passed as {kw.arg}= (a process group): None, the default group")
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                for seq, count in ((node.left, node.right), (node.right, node.left)):
                    if isinstance(seq, _SEQUENCES) and isinstance(count, ast.Name) and tree is forward:
                        _claim(hints, count.id, "int", "repeats a list in forward ([...] * n)")
                        if id(node) not in kept:  # copies of data: 2 of them; copies kept on ctx count passes
                            count_choices(hints.get(count.id))


def reshapes(tree, hints: dict, rename: Optional[dict] = None):
    """``a.reshape_as(b)`` with a and b parameters (through ``rename``: backward's locals): a.reshaped_to = b."""
    rename = rename if rename is not None else {n: n for n in hints}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("reshape_as", "view_as") and len(node.args) == 1 \
                and isinstance(node.func.value, ast.Name) and isinstance(node.args[0], ast.Name):
            a, b = rename.get(node.func.value.id), rename.get(node.args[0].id)
            if a in hints and b in hints and a != b and hints[a].reshaped_to is None:
                hints[a].reshaped_to = b


def _claim(hints, name, kind, why):
    hint = hints.get(name)
    if hint is not None and hint.kind is None and not hint.tensor_use:
        hint.kind, hint.why = kind, why


def _kept_on_ctx(forward) -> set:
    """ids of ``[...] * n`` expressions forward assigns to a ctx attribute (``ctx.left = [x] * passes``): a
    list of copies backward consumes pass by pass, whose count backward's own error asks to raise
    (auto_inputs._larger_counts), not copies of data."""
    kept = set()
    for node in ast.walk(forward):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.BinOp) \
                and any(isinstance(target, ast.Attribute) for target in node.targets):
            kept.add(id(node.value))
    return kept


def _ctx_stored(forward, hints) -> dict:
    """``ctx.attr = param`` (or ``ctx.a, ctx.b = a, b``) in forward: {attr: param}."""
    out = {}
    for node in ast.walk(forward):
        if not isinstance(node, ast.Assign):
            continue
        for t in node.targets:  # ctx.a = a, and ctx.a, ctx.b = a, b
            pairs = zip(t.elts, node.value.elts) if isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple) \
                and len(t.elts) == len(node.value.elts) else [(t, node.value)]
            for target, value in pairs:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and isinstance(value, ast.Name) and value.id in hints:
                    out[target.attr] = value.id
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
