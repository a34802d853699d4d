"""Where a parameter's value flows in forward (and backward), for ``infer.read_hints`` (read with ``ast``,
nothing is evaluated):

* **views of a parameter**: ``w = which.unsqueeze(-1).expand(...)`` or ``torch.gather(locs, -2,
  which.expand(t))``: what is true of the view as an index or a mask is true of ``which`` (``root``);
* **scalars read out of a tensor**: ``p.item()`` makes ``p`` a one-element tensor; used as a dim
  (``x.squeeze(p.item())``, ``dim=p.item()``, a helper's int parameter) an int64 one;
* **saved tensors read in backward**: ``ctx.save_for_backward(w, dim)`` in forward and ``w, dim =
  ctx.saved_tensors`` in backward: what backward does with ``dim`` (``dim.item()`` as a dim) is read
  for forward's ``dim``;
* **negated conditions**: ``if not skip:`` is a bare condition on ``skip`` (``condition_names``);
* **ctx and backward**: ``ctx.eps = eps`` in ``setup_context`` (``setup_context``), ``None`` in a
  parameter's place in every ``return`` of backward (``backward_nones``);
* **callables kept on ctx** (``backward_calls``): ``ctx.func = func`` in forward, then ``func = ctx.func;
  func(t, y)`` or ``ctx.func(t, y)`` or ``vjp(ctx.event_fn, (t, y))`` in backward: ``func`` is a callable of
  two arguments;
* **subscripts** (``subscript_uses``): ``args[n:]`` makes ``n`` an int; ``x[idx[0], idx[1]]`` makes ``idx``
  an int64 tensor of coordinates into ``x`` (one row per dimension of ``x``).
"""
from __future__ import annotations

import ast
from typing import Optional

# methods whose result holds the same values as the tensor they are called on (an index stays an index)
VIEW_METHODS = {"unsqueeze", "squeeze", "expand", "expand_as", "view", "view_as", "reshape", "reshape_as", "long",
                "int", "bool", "to", "flatten", "contiguous", "clone", "detach", "t", "transpose", "permute",
                "repeat", "type", "narrow", "flip", "unsqueeze_", "squeeze_", "cpu"}


def _name(node) -> Optional[str]:
    return node.id if isinstance(node, ast.Name) else None


def views(forward: ast.AST, names) -> dict:
    """{local name: parameter} for locals assigned a view of a parameter (``w = x.unsqueeze(-1)``)."""
    out: dict = {}
    for _ in range(2):  # views of views, in either order of appearance
        for node in ast.walk(forward):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and _name(node.targets[0]):
                local = _name(node.targets[0])
                source = root(node.value, names, out)
                if source is not None and local != source and local not in names:
                    out[local] = source
    return out


def root(node, names, aliases: dict) -> Optional[str]:
    """The parameter whose values ``node`` holds: ``p``, a view of it (``p.expand(...)``, ``p[..., None]``)
    or a local holding one; None otherwise."""
    while True:
        if isinstance(node, ast.Name):
            return node.id if node.id in names else aliases.get(node.id)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in VIEW_METHODS:
            node = node.func.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Attribute) and node.attr in ("data", "T", "mT"):  # the same values
            node = node.value
        else:
            return None


def item_of(node, names) -> Optional[str]:
    """``p.item()`` -> "p" for a parameter p."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "item" \
            and not node.args and _name(node.func.value) in names:
        return _name(node.func.value)
    return None


def condition_names(test) -> list:
    """Parameters a test uses bare: ``p``, ``not p``, ``p and q``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return condition_names(test.operand)
    if isinstance(test, ast.BoolOp):
        return [n for v in test.values for n in condition_names(v)]
    return [test.id] if isinstance(test, ast.Name) else []


def saved_names(forward: ast.AST, backward: ast.AST, names) -> dict:
    """{backward's local: forward's parameter} through ``ctx.save_for_backward(a, b)`` and
    ``x, y = ctx.saved_tensors`` (by position)."""
    saved = None
    for node in ast.walk(forward):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "save_for_backward":
            saved = [_name(a) for a in node.args]
    if not saved:
        return {}
    out = {}
    for node in ast.walk(backward):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute) \
                and node.value.attr in ("saved_tensors", "saved_variables"):
            for t in node.targets:
                if isinstance(t, (ast.Tuple, ast.List)) and len(t.elts) == len(saved):
                    out.update({_name(e): s for e, s in zip(t.elts, saved) if _name(e) and s in names})
    return out


def scalar_uses(tree: ast.AST, fn, names, hints: dict, rename: Optional[dict] = None):
    """``p.item()`` in ``tree`` (``rename``: backward's locals -> forward's parameters): a one-element
    tensor; an int64 one where the scalar is a dim (a dim method or ``dim=``, or a helper's int)."""
    from gradcli.check import infer_calls
    from gradcli.check.infer import _DIM_FUNCTIONS, _DIM_METHODS

    rename = rename or {n: n for n in names}
    local = set(rename)

    def mark(name, as_int):
        hint = hints.get(rename.get(name))
        if hint is None or hint.kind not in (None, "index") or hint.why.startswith("annotated"):
            return
        if as_int:
            if hint.kind == "index" and hint.index_kind != "scalar":
                return
            hint.kind, hint.index_kind, hint.index_of, hint.ndim = "index", "scalar", None, 0
            hint.why = "its .item() is used as a dim"
        elif hint.kind is None and hint.ndim is None:
            hint.ndim, hint.why = 0, hint.why or "its .item() is read"

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        item = item_of(node, local)
        if item is not None:
            mark(item, False)
        name = node.func.attr if isinstance(node.func, ast.Attribute) else _name(node.func)
        dims = [k.value for k in node.keywords if k.arg in ("dim", "axis")]
        if isinstance(node.func, ast.Attribute) and name in _DIM_METHODS and node.args:
            dims.append(node.args[0])
        if name in _DIM_FUNCTIONS and len(node.args) > _DIM_FUNCTIONS[name]:
            dims.append(node.args[_DIM_FUNCTIONS[name]])
        for d in dims:
            if item_of(d, local):
                mark(item_of(d, local), True)
        for pname in infer_calls.helper_int_items(node, fn, local):
            mark(pname, True)


def subscript_uses(node: ast.Subscript, names, aliases: dict) -> list:
    """(parameter, kind, why, extra Hint fields) for what one subscript says (see the module's docstring)."""
    out = []
    index = node.slice
    if isinstance(index, ast.Slice):
        for bound in (index.lower, index.upper, index.step):
            if _name(bound) in names:
                out.append((_name(bound), "int", "used as a slice bound", {}))
    if isinstance(node.ctx, ast.Store) and _name(index) in names and root(node.value, names, aliases) \
            and _name(index) != root(node.value, names, aliases):  # x.data[i] = v: the position written
        out.append((_name(index), "int", f"the position written in {root(node.value, names, aliases)}[...]", {}))
    if isinstance(index, ast.Tuple) and len(index.elts) >= 2 and root(node.value, names, aliases):
        rows = [root(e.value, names, aliases) if isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Constant)
                and type(e.slice.value) is int else None for e in index.elts]
        if rows[0] is not None and all(r == rows[0] for r in rows):  # x[idx[0], idx[1]]
            out.append((rows[0], "index", f"coordinates into {root(node.value, names, aliases)}[...]",
                        {"index_kind": "coords", "index_of": root(node.value, names, aliases)}))
    return out


def setup_context(cls, names: list, hints: dict):
    """``setup_context(ctx, inputs, output)``: ``M, eps = inputs`` then ``ctx.eps = eps`` keeps ``eps`` on ctx."""
    if "setup_context" not in vars(cls):
        return
    from gradcli.check.infer import _function_node

    node = _function_node(vars(cls)["setup_context"])
    if node is None or len(node.args.args) < 2:
        return
    inputs = node.args.args[1].arg
    local = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and _name(n.value) == inputs:
            for t in n.targets:
                if isinstance(t, ast.Tuple):
                    local.update({_name(e): names[i] for i, e in enumerate(t.elts) if _name(e) and i < len(names)})
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and _name(n.value) in local:
            if any(isinstance(t, ast.Attribute) and _name(t.value) == "ctx" for t in n.targets):
                hints[local[_name(n.value)]].ctx_attribute = True


def backward_nones(node, names: list, hints: dict):
    """Parameters for which every ``return`` of backward (its ``ast`` node) gives ``None``."""
    if node is None:
        return
    returns = [r.value for r in ast.walk(node) if isinstance(r, ast.Return) and r.value is not None]
    if not returns:
        return
    for i, name in enumerate(names):
        def none_at(value):
            if isinstance(value, ast.Tuple):
                return i < len(value.elts) and isinstance(value.elts[i], ast.Constant) and value.elts[i].value is None
            return i == 0 and len(names) == 1 and isinstance(value, ast.Constant) and value.value is None
        if all(none_at(r) for r in returns):
            hints[name].backward_none = True


_FUNCTIONAL = {"vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"}  # torch.autograd.functional: a function first


def backward_calls(forward: ast.AST, backward: ast.AST, hints: dict):
    """Parameters forward keeps on ctx (``ctx.func = func``) that backward calls: callables, with the
    number of arguments backward gives them."""
    kept = {}
    for node in ast.walk(forward):
        if isinstance(node, ast.Assign) and _name(node.value) in hints:
            for t in node.targets:
                if isinstance(t, ast.Attribute) and _name(t.value) == "ctx":
                    kept[t.attr] = _name(node.value)
    if not kept:
        return
    local = {}
    for node in ast.walk(backward):  # func = ctx.func
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _name(node.targets[0]) \
                and isinstance(node.value, ast.Attribute) and _name(node.value.value) == "ctx" \
                and node.value.attr in kept:
            local[_name(node.targets[0])] = kept[node.value.attr]

    def param(expr):
        if _name(expr) in local:
            return local[_name(expr)]
        if isinstance(expr, ast.Attribute) and _name(expr.value) == "ctx":
            return kept.get(expr.attr)
        return None

    for node in ast.walk(backward):
        if not isinstance(node, ast.Call):
            continue
        called, count = param(node.func), len(node.args)
        name = node.func.attr if isinstance(node.func, ast.Attribute) else _name(node.func)
        if called is None and name in _FUNCTIONAL and node.args and param(node.args[0]):
            called = param(node.args[0])
            inputs = node.args[1] if len(node.args) > 1 else None
            count = len(inputs.elts) if isinstance(inputs, ast.Tuple) else 1
        hint = hints.get(called)
        if hint is not None and hint.kind is None and not any(isinstance(a, ast.Starred) for a in node.args):
            hint.kind, hint.why, hint.call_args = "callable", "called in backward", count


def refused_grads(forward: ast.AST, names: list, hints: dict):
    """``if any(ctx.needs_input_grad[:2]): raise ...`` / ``if ctx.needs_input_grad[0]: raise``: forward refuses
    to run when those inputs require grad, so they are tensors that do not (``Hint.no_grad``)."""
    for node in ast.walk(forward):
        if isinstance(node, ast.If) and any(isinstance(s, ast.Raise) for s in node.body):
            for position in _grad_positions(node.test, len(names)):
                hints[names[position]].no_grad = True


def _grad_positions(test, count: int) -> list:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return [p for v in test.values for p in _grad_positions(v, count)]
    if isinstance(test, ast.Call) and _name(test.func) == "any" and len(test.args) == 1:
        test = test.args[0]  # any(ctx.needs_input_grad[:2])
    if not isinstance(test, ast.Subscript) or not isinstance(test.value, ast.Attribute) \
            or test.value.attr != "needs_input_grad":
        return []
    index = test.slice
    if isinstance(index, ast.Constant) and type(index.value) is int:
        return [index.value] if 0 <= index.value < count else []
    if isinstance(index, ast.Slice) and index.step is None:
        low = index.lower.value if isinstance(index.lower, ast.Constant) else 0 if index.lower is None else None
        high = index.upper.value if isinstance(index.upper, ast.Constant) else count if index.upper is None else None
        if isinstance(low, int) and isinstance(high, int):
            return [p for p in range(low, min(high, count)) if p >= 0]
    return []


def unpacked_tensors(tree: ast.AST, hints: dict, rename: dict):
    """``B, C = p`` with ``p`` a parameter (``rename``: backward's locals holding forward's saved parameters):
    ``p`` is a tensor stacking that many along dim 0 (``Hint.leading``), when nothing else says it is not
    a tensor."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple)):
            continue
        hint = hints.get(rename.get(_name(node.value)))
        elts = node.targets[0].elts
        if hint is not None and hint.kind is None and hint.ndim is None and hint.leading is None \
                and len(elts) >= 2 and not any(isinstance(e, ast.Starred) for e in elts):
            hint.leading = len(elts)
