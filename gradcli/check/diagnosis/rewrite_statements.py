"""Edits of whole statements and loops that ``rewrite_edits.py`` adds to its list: a reshape's
grouping, a loop's running sum or a recurrence's carried adjoint, every dim of a statement, a slice
one position off, a normalisation's projection term, a state one step back; and the small readers
they need (the names unpacked from ``ctx.saved_tensors``, the dims backward's means reduce over)."""
from __future__ import annotations

import ast
import copy

from gradcli.check.diagnosis.rewrite_syntax import OTHER_DIMS, _const, _dim_sites, _int


def _previous_step(node, dim):
    """``torch.cat([node[:1] * 0, node[:-1]], dim)`` along ``dim`` (0 or 1): the state one step back."""
    def part(s):
        index = s if dim == 0 else ast.Tuple([ast.Slice(), s], ast.Load())
        return ast.Subscript(copy.deepcopy(node), index, ast.Load())
    first = ast.BinOp(part(ast.Slice(None, ast.Constant(1))), ast.Mult(), ast.Constant(0))
    rest = part(ast.Slice(None, _const(-1)))
    return ast.Call(ast.Attribute(ast.Name("torch", ast.Load()), "cat", ast.Load()),
                    [ast.List([first, rest], ast.Load()), ast.Constant(dim)], [])


def _mean_dims(tree):
    """The dims backward's ``.mean(...)`` calls reduce over (as nodes, each once)."""
    found = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "mean":
            dims = n.args[0] if n.args else next((k.value for k in n.keywords if k.arg == "dim"), None)
            if dims is not None:
                found.setdefault(ast.unparse(dims), dims)
    return list(found.values())[:3]


def _projected(stmt, g, h, dims):
    """``stmt`` with every read of ``g`` made ``(g - h * (g * h).mean(dims, keepdim=True))``."""
    class Project(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id == g and isinstance(node.ctx, ast.Load):
                inner = ast.BinOp(ast.Name(g, ast.Load()), ast.Mult(), ast.Name(h, ast.Load()))
                mean = ast.Call(ast.Attribute(inner, "mean", ast.Load()), [copy.deepcopy(dims)],
                                [ast.keyword("keepdim", ast.Constant(True))])
                return ast.BinOp(ast.Name(g, ast.Load()), ast.Sub(), ast.BinOp(ast.Name(h, ast.Load()), ast.Mult(), mean))
            return node
    return Project().visit(stmt)


def _slice_shift_edits(add, stmt, node):
    """``g[:, :-k]`` where ``g[:, k:]`` is needed, or the reverse: a neighbour's share written to (or
    read from) the positions one step off."""
    elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    for k, e in enumerate(elts):
        if not isinstance(e, ast.Slice) or e.step is not None:
            continue
        lower, upper = (_int(e.lower) if e.lower is not None else None), (_int(e.upper) if e.upper is not None else None)
        if e.lower is None and upper is not None and upper < 0:
            moved = ast.Slice(_const(-upper), None, None)
        elif e.upper is None and lower is not None and lower > 0:
            moved = ast.Slice(None, _const(-lower), None)
        elif isinstance(node.ctx, ast.Load) and e.upper is not None and (upper is None or upper > 0):
            _window_shift_edits(add, stmt, node, k, e)  # `G[:, :T]` where the next step's `G[:, 1:T + 1]` is read
            continue
        else:
            continue

        def make(n, k=k, moved=moved):
            parts = list(n.slice.elts) if isinstance(n.slice, ast.Tuple) else [n.slice]
            parts[k] = copy.deepcopy(moved)
            n.slice = ast.Tuple(parts, ast.Load()) if isinstance(n.slice, ast.Tuple) else parts[0]
            return n
        code = ast.unparse(node)
        needed = ast.unparse(make(copy.deepcopy(node)))
        add("region", stmt, node, f"`{code}` where `{needed}` is needed (the positions one step off)", make,
            used=code, needed=needed, slice=True)


def _window_shift_edits(add, stmt, node, k, window):
    """A window ``a[:, :T]`` (or ``a[:, s:e]``) read where the one a step later (earlier) is needed:
    ``G_t`` where the next return ``G_{t+1}`` belongs — a ``wrong_variable``."""
    def end(bound, delta):
        if bound is None:
            return _const(delta) if delta > 0 else None
        return ast.BinOp(copy.deepcopy(bound), ast.Add() if delta > 0 else ast.Sub(), ast.Constant(1))
    for delta in ((1,) if window.lower is None else (1, -1)):
        moved = ast.Slice(end(window.lower, delta), end(window.upper, delta), None)

        def make(n, k=k, moved=moved):
            parts = list(n.slice.elts) if isinstance(n.slice, ast.Tuple) else [n.slice]
            parts[k] = copy.deepcopy(moved)
            n.slice = ast.Tuple(parts, ast.Load()) if isinstance(n.slice, ast.Tuple) else parts[0]
            return n
        code = ast.unparse(node)
        needed = ast.unparse(make(copy.deepcopy(node)))
        add("wrong_variable", stmt, node, f"`{code}` where `{needed}` is needed (the window one step "
            f"{'later' if delta > 0 else 'earlier'})", make, used=code, needed=needed, step=delta)

def _order_edits(add, tree, ran):
    """``y = y * x + c; d = d * x + y`` where d needs y's old value: two statements of a block in
    the wrong order (a Horner derivative updated after its value) — the second's read is a
    ``wrong_variable``, quoted at that statement."""
    ran = {id(s) for s in ran}
    for owner in ast.walk(tree):
        for field in ("body", "orelse"):
            block = getattr(owner, field, None)
            if not isinstance(block, list) or not isinstance(owner, (ast.For, ast.While, ast.FunctionDef)):
                continue
            for i in range(len(block) - 1):
                first, second = block[i], block[i + 1]
                if not all(isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
                           for s in (first, second)) or id(second) not in ran:
                    continue
                a, b = first.targets[0].id, second.targets[0].id
                reads = lambda s: {n.id for n in ast.walk(s.value) if isinstance(n, ast.Name)}  # noqa: E731
                if a == b or a not in reads(first) or a not in reads(second):
                    continue  # only a value updated from itself (carried) has an old value to read

                def make(n, field=field, i=i):
                    body = list(getattr(n, field))
                    body[i], body[i + 1] = body[i + 1], body[i]
                    setattr(n, field, body)
                    return n
                add("wrong_variable", second, owner, f"`{a}` after its update (`{ast.unparse(first)}`) where its "
                    f"value before it is needed (`{ast.unparse(second)}` belongs before that update)", make,
                    used=f"{a} (updated)", needed=f"{a} before `{ast.unparse(first)}`", order=True)

def _shifted(node, k, t, delta):
    """``node`` (a subscript whose index holds the loop variable ``t`` at position k) read at t + delta,
    zero outside the range (``(a[:, t + 1] if t + 1 < a.shape[1] else 0)``)."""
    parts = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    moved = ast.Name(t, ast.Load()) if delta == 0 else ast.BinOp(ast.Name(t, ast.Load()),
                                                                 ast.Add() if delta > 0 else ast.Sub(), ast.Constant(1))
    parts[k] = moved
    index = ast.Tuple(parts, ast.Load()) if isinstance(node.slice, ast.Tuple) else parts[0]
    read = ast.Subscript(copy.deepcopy(node.value), index, ast.Load())
    if delta == 0:
        return read
    size = ast.Subscript(ast.Attribute(copy.deepcopy(node.value), "shape", ast.Load()), ast.Constant(k), ast.Load())
    inside = ast.Compare(copy.deepcopy(moved), [ast.GtE()], [ast.Constant(0)]) if delta < 0 else \
        ast.Compare(copy.deepcopy(moved), [ast.Lt()], [size])
    return ast.IfExp(inside, read, ast.Constant(0))


def _loop_position(node, t):
    """The position of the loop variable ``t`` (alone) in a subscript's index, or None."""
    if not isinstance(node, ast.Subscript):
        return None
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    found = [k for k, e in enumerate(parts) if isinstance(e, ast.Name) and e.id == t]
    return found[0] if len(found) == 1 else None


def _loop_copies(tree):
    """{g: c} for a ``c = g`` inside a ``for`` loop, c bound before it: the state a recurrence's
    adjoint carries to the next step (``carry = g_y``), whether or not a step reads it back."""
    found = {}
    for loop in (n for n in ast.walk(tree) if isinstance(n, ast.For)):
        before = {t.id for s in ast.walk(tree) if isinstance(s, ast.Assign) and s.lineno < loop.lineno
                  for t in s.targets if isinstance(t, ast.Name)}
        for stmt in (n for body in loop.body for n in ast.walk(body)):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and isinstance(stmt.value, ast.Name) and stmt.targets[0].id in before:
                found.setdefault(stmt.value.id, stmt.targets[0].id)
    return found


def _carried_edits(add, stmt, t, carried, saved, ctx_name, ctx_attrs, copies=None):
    """A recurrence's adjoint without the term it carries from the other steps: ``c = v`` where
    ``c = v + K * c`` is needed (c carried over the loop), or ``g[:, t] = v`` where ``g[:, t] = v +
    K * g[:, t ∓ 1]``; K a ctx attribute (a discount), or a saved tensor read like v at t, t ± 1
    (the next step's gate)."""
    reads = [n for n in ast.walk(stmt.value) if _loop_position(n, t) is not None]
    factors = [(f"{ctx_name}.{a}", lambda a=a: ast.Attribute(ast.Name(ctx_name, ast.Load()), a, ast.Load()))
               for a in ctx_attrs[:4]]
    for read in reads[:2]:
        k = _loop_position(read, t)
        for name in sorted(saved)[:4]:
            for delta in (1, -1, 0):
                template = ast.Subscript(ast.Name(name, ast.Load()), copy.deepcopy(read.slice), ast.Load())
                factors.append((ast.unparse(_shifted(template, k, t, delta)),
                                lambda tp=template, k=k, d=delta: _shifted(tp, k, t, d)))
    target = stmt.targets[0]
    carries = []
    if isinstance(target, ast.Name) and id(stmt) in carried:
        carries.append((target.id, lambda: ast.Name(target.id, ast.Load())))
    if isinstance(target, ast.Name) and target.id in (copies or {}) and copies[target.id] != target.id:
        state = copies[target.id]  # `g_y = grad[:, t]` ... `carry = g_y`: the last step's g_y, unread
        if not any(isinstance(n, ast.Name) and n.id == state for n in ast.walk(stmt.value)):
            carries.append((state, lambda: ast.Name(state, ast.Load())))
            factors += [(name, lambda name=name: ast.Name(name, ast.Load())) for name in sorted(saved)[:4]]
    k = _loop_position(target, t)
    if k is not None:
        for delta in (-1, 1):
            carries.append((ast.unparse(_shifted(target, k, t, delta).body),
                            lambda d=delta: _shifted(ast.Subscript(target.value, target.slice, ast.Load()), k, t, d)))
    for carry_code, carry in carries:
        for factor_code, factor in factors:
            add("missing_term", stmt, stmt.value, f"`{ast.unparse(stmt.value)}` without the carried term "
                f"`{factor_code} * {carry_code}`",
                lambda n, f=factor, c=carry: ast.BinOp(n, ast.Add(), ast.BinOp(f(), ast.Mult(), c())),
                term=f"{factor_code} * {carry_code}", carried=True)


def _every_dim_edits(add, stmt):
    """Every literal dim ``d`` of one statement made ``d'`` together: ``scatter_(0, i.unsqueeze(0),
    g.unsqueeze(0))`` where the reduced dim 1 is needed throughout (a max's routing)."""
    sites = [(node, value) for call in ast.walk(stmt) if isinstance(call, ast.Call) for node, value in _dim_sites(call)
             if isinstance(node, ast.Constant)]
    for value in sorted({v for _, v in sites}):
        if sum(v == value for _, v in sites) < 2:
            continue
        for other in (d for d in OTHER_DIMS if d >= 0 and d != value):
            def make(n, value=value, other=other):
                for call in [c for c in ast.walk(n) if isinstance(c, ast.Call)]:
                    for node, v in _dim_sites(call):
                        if v == value and isinstance(node, ast.Constant):
                            node.value = other
                return n
            add("wrong_axis", stmt, stmt, f"every dim {value} of the statement as dim {other}", make,
                call="the statement", dims=[value], expected_dims=[other], every=True)


def _shift_axis_edits(add, stmt):
    """``torch.cat([zeros_like(h[:, :1]), h[:, :-1]], dim=1)`` where the shift along dim 0 is needed:
    the concatenation's dim and the slices it joins moved to another dim together (a previous
    state built along the features instead of time)."""
    for call in [c for c in ast.walk(stmt) if isinstance(c, ast.Call)]:
        sites = [(node, value) for node, value in _dim_sites(call) if isinstance(node, ast.Constant)]
        if getattr(call.func, "attr", getattr(call.func, "id", None)) != "cat" or len(sites) != 1 \
                or not call.args or not isinstance(call.args[0], (ast.List, ast.Tuple)):
            continue
        value = sites[0][1]
        if value not in (0, 1) or not any(_sliced_at(n, value) is not None for n in ast.walk(call.args[0])):
            continue
        other = 1 - value

        def make(n, value=value, other=other, line=call.lineno, col=call.col_offset):
            target = next(c for c in ast.walk(n) if isinstance(c, ast.Call) and c.lineno == line
                          and c.col_offset == col)
            for node, v in _dim_sites(target):
                node.value = other
            for sub in [m for m in ast.walk(target.args[0]) if _sliced_at(m, value) is not None]:
                piece = _sliced_at(sub, value)
                parts = [ast.Slice(None, None, None) for _ in range(other)] + [piece]
                sub.slice = ast.Tuple(parts, ast.Load()) if len(parts) > 1 else parts[0]
            return n
        add("wrong_axis", stmt, stmt, f"`{ast.unparse(call)}` joined along dim {other} instead of {value}", make,
            call="cat", dims=[value], expected_dims=[other], every=True)


def _sliced_at(node, position):
    """The slice of subscript ``node`` when its only partial slice is at ``position`` (``h[:, :-1]`` at 1)."""
    if not isinstance(node, ast.Subscript) or not isinstance(node.ctx, ast.Load):
        return None
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    full = [isinstance(p, ast.Slice) and p.lower is None and p.upper is None and p.step is None for p in parts]
    if len(parts) <= position or not isinstance(parts[position], ast.Slice) or full[position]:
        return None
    return parts[position] if all(f for k, f in enumerate(full) if k != position) else None


def _saved_names(tree, ctx_name):
    """The names backward unpacks from ``ctx.saved_tensors`` (``pred, target = ctx.saved_tensors``)."""
    return {e.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Attribute)
            and n.value.attr in ("saved_tensors", "saved_variables") and isinstance(n.value.value, ast.Name) and n.value.value.id == ctx_name
            for t in n.targets if isinstance(t, (ast.Tuple, ast.List)) for e in t.elts if isinstance(e, ast.Name)}


def _reduces(node):
    """Whether the expression calls a mean or a sum."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("mean", "sum")
               for n in ast.walk(node))


def _loop_overwrites(tree):
    """ids of ``g = v`` statements inside a ``for`` loop where ``g`` was bound before the loop and
    ``v`` does not read it: each step's contribution replaces the last (``+=`` is meant)."""
    found = set()
    for loop in (n for n in ast.walk(tree) if isinstance(n, ast.For)):
        before = {t.id for s in ast.walk(tree) if isinstance(s, ast.Assign) and s.lineno < loop.lineno
                  for target in s.targets for t in ast.walk(target) if isinstance(t, ast.Name)}  # `a, b = …` too
        for stmt in (n for body in loop.body for n in ast.walk(body)):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and stmt.targets[0].id in before and not any(
                        isinstance(n, ast.Name) and n.id == stmt.targets[0].id for n in ast.walk(stmt.value)):
                found.add(id(stmt))
    return found


def _loop_first_bindings(tree):
    """ids of ``g = v`` statements inside a ``for`` loop that first bind ``g`` (not bound before
    the loop, ``v`` does not read it) while ``g`` is read after the loop: a sum over the loop's
    chunks kept for the last chunk only (``grad_w = p.t() @ h_c``, returned after the loop)."""
    found = set()
    for loop in (n for n in ast.walk(tree) if isinstance(n, ast.For)):
        before = {t.id for s in ast.walk(tree) if isinstance(s, (ast.Assign, ast.AugAssign)) and s.lineno < loop.lineno
                  for t in ast.walk(s) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
        after = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                 and n.lineno > loop.end_lineno}
        for stmt in (n for body in loop.body for n in ast.walk(body)):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and stmt.targets[0].id not in before and stmt.targets[0].id in after and not any(
                        isinstance(n, ast.Name) and n.id == stmt.targets[0].id for n in ast.walk(stmt.value)):
                found.add(id(stmt))
    return found


def _summed_from_zero(n):
    """``g = v`` made ``g = v + locals().get("g", 0)``: the sum over the loop, from zero."""
    name = n.targets[0].id
    earlier = ast.Call(ast.Attribute(ast.Call(ast.Name("locals", ast.Load()), [], []), "get", ast.Load()),
                       [ast.Constant(name), ast.Constant(0)], [])
    return ast.Assign([n.targets[0]], ast.BinOp(n.value, ast.Add(), earlier))


def _regrouping_edits(add, stmt, call):
    """``g.reshape(n, a, b, h)`` where the output's grouping ``(n, b, a, h)`` is needed: two
    adjacent sizes of a reshape exchanged (a ``*sizes`` argument reversed) — a channel shuffle
    undone with the forward's own grouping applies it again."""
    packed = len(call.args) == 1 and isinstance(call.args[0], (ast.Tuple, ast.List))
    sizes = call.args[0].elts if packed else call.args
    code = ast.unparse(call)

    def rebuilt(n, order):
        old = n.args[0].elts if packed else n.args
        new = [old[k] for k in order]
        return ast.Call(n.func, [type(n.args[0])(new, ast.Load())] if packed else new, n.keywords)
    for k in range(len(sizes) - 1):
        a, b = sizes[k], sizes[k + 1]
        if isinstance(a, ast.Starred) or isinstance(b, ast.Starred) or ast.unparse(a) == ast.unparse(b) \
                or _int(a) == -1 or _int(b) == -1:
            continue
        order = list(range(len(sizes)))
        order[k], order[k + 1] = k + 1, k
        add("missing_reshape", stmt, call, f"`{code}` with `{ast.unparse(a)}` and `{ast.unparse(b)}` exchanged",
            lambda n, order=order: rebuilt(n, order), reshape=code, regrouped=True)
    for k, size in enumerate(sizes):
        if isinstance(size, ast.Starred):
            def reversed_sizes(n, k=k):
                old = list(n.args[0].elts if packed else n.args)
                old[k] = ast.Starred(ast.Subscript(old[k].value, ast.Slice(None, None, ast.Constant(-1)), ast.Load()),
                                     ast.Load())
                return ast.Call(n.func, [type(n.args[0])(old, ast.Load())] if packed else old, n.keywords)
            add("missing_reshape", stmt, call, f"`{code}` with `{ast.unparse(size)}` reversed", reversed_sizes,
                reshape=code, regrouped=True)


def _leading_axis_edits(add, stmt, node, names):
    """`g * a` with g of shape (B,) and a of (B, n, n): g broadcasts along a's last axis where its
    first is meant (hidden when B == n) — `g` reshaped to (B, 1, 1) is needed."""
    for side, other in (("left", "right"), ("right", "left")):
        operand = getattr(node, side)
        if not (isinstance(operand, ast.Name) and operand.id in names):
            continue
        name = operand.id

        def make(n, side=side, other=other):
            g, partner = getattr(n, side), getattr(n, other)
            ones = ast.BinOp(ast.Tuple([ast.Constant(1)], ast.Load()), ast.Mult(), ast.BinOp(
                _method_call(partner, "dim"), ast.Sub(), _method_call(g, "dim")))
            aligned = ast.Call(ast.Attribute(g, "reshape", ast.Load()),
                               [ast.BinOp(ast.Attribute(g, "shape", ast.Load()), ast.Add(), ones)], [])
            return ast.BinOp(aligned, n.op, partner) if side == "left" else ast.BinOp(partner, n.op, aligned)

        add("missing_reshape", stmt, node, f"`{name}` broadcast along the last axis of `{ast.unparse(getattr(node, other))}` "
            f"where its leading axis is meant (`{name}` reshaped with trailing 1s is needed)", make,
            aligned=name, operand=ast.unparse(getattr(node, other)))


def _method_call(node, method):
    return ast.Call(ast.Attribute(node, method, ast.Load()), [], [])
