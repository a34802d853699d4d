"""What forward tells the one-edit search (``rewrites.py``): its plain-number arguments, the ctx
attributes it sets, the expressions it negates, its elementwise calls of a name, and — from one
traced call — the tensors it computed but never saved and its masked reads of a name."""
from __future__ import annotations

import ast
import functools

import numpy as np

from gradcli.check.diagnosis.probe import _to_numpy
from gradcli.check.diagnosis.rewrite_runs import forward_locals
from gradcli.check.diagnosis.source import forward_source


def _scalars(probe):
    """(name, value) of forward's plain-number arguments (a margin of 0.3 backward never sees)."""
    from gradcli.check.diagnosis.probe import parameter_name

    found = []
    for i, arg in enumerate(getattr(probe, "args", ())):
        if isinstance(arg, float) or isinstance(arg, int) and not isinstance(arg, bool):
            try:
                found.append((parameter_name(probe.fn, i), arg))
            except Exception:  # noqa: BLE001 -- an unnamed argument
                continue
    return found[:4]


def _unsaved(probe, cls, recorded):
    """({backward name: [forward locals of its shape whose values differ]}, {local: tensor}): the
    tensors forward computed but never saved that backward may have needed in a name's place."""
    traced = getattr(probe, "forward_locals", None)
    if traced is None:
        try:
            traced = forward_locals(probe, cls)
        except Exception:  # noqa: BLE001 -- forward cannot be traced again: no such edits
            traced = ({}, {})
        probe.forward_locals = traced  # one traced forward call per check, whichever input asks
    values, masked = traced
    rows = list(recorded.values())
    if not rows or not (values or masked):
        return {}, {}
    held = rows[0]
    found = {}
    for name, value in held.items():
        for local, tensor in values.items():
            array = np.asarray(_to_numpy(tensor))
            if local != name and array.shape == value.shape and array.size > 1 and not np.allclose(array, value):
                found.setdefault(name, []).append(local)
    values = dict(values)
    for name, reads in masked.items():  # forward's `scores.masked_fill(future, -inf)`, injected by a key of its own
        for k, (code, tensor) in enumerate(reads):
            if name in held and np.shape(_to_numpy(tensor)) == held[name].shape:
                key = f"masked_{name}_{k}"
                values[key] = tensor
                found.setdefault(name, []).append((key, code))
    return found, values


@functools.lru_cache(maxsize=64)
def _forward_tree(cls):
    """Forward's parsed source, or None (no source to read). Parsed once per class: every edit
    search of every input reads it (attributes, calls, conditions, names); nothing mutates it."""
    try:
        src = forward_source(cls)
    except Exception:  # noqa: BLE001 -- no forward to read
        return None
    return src.tree if src is not None else None


def _forward_attributes(cls):
    """The ctx attributes forward assigns (``ctx.gamma = gamma``), which backward may have left unread."""
    tree = _forward_tree(cls)
    if tree is None or not tree.args.args:
        return []
    ctx = tree.args.args[0].arg
    return sorted({t.attr for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets
                   if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == ctx})


# elementwise functions whose value backward may need where it reads their argument (`2 * v` for
# d(v·|v|)/dv = 2·|v|)
UNARY = ("abs", "exp", "log", "sqrt", "sigmoid", "tanh", "sign", "square", "reciprocal", "rsqrt")


def _forward_calls(cls):
    """{name: [code]}: forward's elementwise calls of one name (``v.abs()``, ``torch.exp(s)``)."""
    tree = _forward_tree(cls)
    found = {}
    for node in ast.walk(tree) if tree is not None else ():
        if not isinstance(node, ast.Call) or node.keywords or not isinstance(node.func, ast.Attribute) \
                or node.func.attr not in UNARY:
            continue
        if not node.args and isinstance(node.func.value, ast.Name):
            name = node.func.value.id  # v.abs()
        elif len(node.args) == 1 and isinstance(node.args[0], ast.Name) and isinstance(node.func.value, ast.Name) \
                and node.func.value.id in ("torch", "F", "np", "math"):
            name = node.args[0].id  # torch.abs(v)
        else:
            continue
        code = ast.unparse(node)
        if code not in found.setdefault(name, []):
            found[name].append(code)
    for name, code in _shifted(tree):
        if code not in found.setdefault(name, []):
            found[name].append(code)
    return found


def _shifted(tree):
    """(name, backward's code) of forward's ``den + eps``: a name shifted by a number, a module
    constant, or an argument forward keeps on ctx (``ctx.eps = eps``, read ``ctx.eps``) — the eps
    a backward forgets (``den * den`` where ``(den + eps)**2`` is needed)."""
    if tree is None or not tree.args.args:
        return []
    ctx = tree.args.args[0].arg
    arguments = {a.arg for a in tree.args.args}
    kept = {s.value.id: ast.unparse(t) for s in ast.walk(tree) if isinstance(s, ast.Assign)
            and isinstance(s.value, ast.Name) for t in s.targets
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == ctx}
    local = {t.id for s in ast.walk(tree) if isinstance(s, ast.Assign) for t in ast.walk(s)
             if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))
                and isinstance(node.left, ast.Name)):
            continue
        shift = node.right
        if isinstance(shift, ast.Constant) and isinstance(shift.value, (int, float)) and not isinstance(shift.value, bool):
            code = ast.unparse(shift)
        elif isinstance(shift, ast.Name) and shift.id in kept:
            code = kept[shift.id]
        elif isinstance(shift, ast.Name) and shift.id not in arguments and shift.id not in local:
            code = shift.id  # a module constant: backward's globals are forward's
        else:
            continue
        found.append((node.left.id, f"({node.left.id} {'+' if isinstance(node.op, ast.Add) else '-'} {code})"))
    return found


def _negated_in_forward(cls):
    """The expressions forward writes negated (``-(i - j).abs()``), as code."""
    tree = _forward_tree(cls)
    if tree is None:
        return set()
    return {ast.unparse(n.operand) for n in ast.walk(tree) if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub)}


def _forward_conditions(cls):
    """Codes of the conditions forward selects by (``torch.where(mask[..., None], fill, spec)``,
    ``x.masked_fill(pad, 0)``): which elements reach which input, which a backward may forget."""
    tree = _forward_tree(cls)
    found = []
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords and (
                (node.func.attr == "where" and len(node.args) == 3) or (node.func.attr in ("masked_fill", "masked_fill_")
                                                                        and len(node.args) == 2)):
            code = ast.unparse(node.args[0])
            if code not in found and not isinstance(node.args[0], ast.Constant):
                found.append(code)
    return found[:3]


def _forward_names(cls):
    """The names forward reads (a module constant among them is a bound backward may need)."""
    tree = _forward_tree(cls)
    return sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
                  if tree is not None else ())

