"""The single edits ``rewrites.py`` tries: each a mistake people make in a backward, as a change
to one node of its syntax tree (see ``rewrites.py`` for the list and the order); the edits of a
comparison or a call are in ``rewrite_calls.py``, those of whole statements and loops in
``rewrite_statements.py``."""
from __future__ import annotations

import ast
import math
import copy

from gradcli.check.diagnosis.rewrite_runs import FORWARD_PREFIX
from gradcli.check.diagnosis.rewrite_pairs import (
    _analogies, _component_gradients, _derivative_partner_edits, _other_output_edits, _partner_term_edits,
    _reaction_edits, _shifted_reaction_edits, _sibling_indices)
from gradcli.check.diagnosis.rewrite_statements import (
    _carried_edits, _every_dim_edits, _leading_axis_edits, _loop_copies, _loop_first_bindings, _loop_overwrites,
    _mean_dims, _order_edits, _previous_step, _projected, _reduces, _saved_names, _shift_axis_edits, _slice_shift_edits,
    _summed_from_zero)
from gradcli.check.diagnosis.source import grad_output_names, last_return, statements
from gradcli.check.diagnosis.rewrite_syntax import (
    COMPARISONS, CTX_NOT_TENSORS, SYMBOLS, _bound_before, _call_name, _const, _containers, _exchanged, _has_slice, _index_put,
    _int, _matmul_operands, _nonlinear, _own_nodes, _receivers, _times_everywhere, _transposed)
from gradcli.check.diagnosis.rewrite_calls import _call_edits, _centering_edits, _step_edits, _threshold_edits

KIND_ORDER = ("term_sign", "region", "wrong_axis", "transposed", "missing_reshape", "not_accumulated", "missing_flip",
              "wrong_variable", "ignores_grad_output", "unread_factor", "missing_term", "swapped",
              "negated_value", "scaled_value")


class _Edit:
    """One edit: ``apply(tree_copy)`` makes it on a copy of backward's tree (nodes found by their
    position in ``ast.walk``); ``kind``, ``words`` and the statement for the finding."""

    def __init__(self, kind, stmt, node, words, make, **params):
        self.kind, self.stmt, self.node, self.words, self.make, self.params = kind, stmt, node, words, make, params


def edits(src, position=None, tensors=None, simplex=None, scalars=(), factor=None, forward_attrs=(), unsaved=None,
          cdfs=None, forward_calls=None, conditions=(), forward_names=()):
    """The edits of ``src`` (backward; or a helper it calls, ``position`` None: no argument is a
    context, no grad_output is known), simplest kind first."""
    tree = src.tree
    ctx_name = (tree.args.args[0].arg if tree.args.args else "ctx") if position is not None else None
    grads = grad_output_names(src) if position is not None else []
    bound = _bound_before(tree, ctx_name)
    for name in _containers(tree):  # a list built up in a loop is no tensor to read in another's place
        bound.pop(name, None)
    if tensors is not None:  # the names backward held tensors under when it returned (probe.raw)
        bound = {name: line for name, line in bound.items() if name in tensors or line == 0}
    functions = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    ctx_attrs = sorted({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                        and n.value.id == ctx_name and isinstance(n.ctx, ast.Load) and n.attr not in CTX_NOT_TENSORS
                        and not any(isinstance(c, ast.Call) and c.func is n for c in ast.walk(tree))})
    ran = [s for s in statements(tree) if src.ran(s) and not isinstance(s, (ast.If, ast.For, ast.While, ast.With, ast.Try))]
    in_while = {id(n) for s in ast.walk(tree) if isinstance(s, ast.While) for n in ast.walk(s.test)}
    steps = {s.target.id for s in ast.walk(tree) if isinstance(s, ast.For) and isinstance(s.target, ast.Name)}
    by_kind = {kind: [] for kind in KIND_ORDER + ("mean_term",)}
    carried = _loop_overwrites(tree)
    copies = _loop_copies(tree)
    first_bound = _loop_first_bindings(tree)
    saved = _saved_names(tree, ctx_name)
    looped = any(isinstance(n, (ast.For, ast.While)) for n in ast.walk(tree))
    mean_dims = _mean_dims(tree)
    siblings = _sibling_indices(tree)
    analogies = _analogies(tree, set(grads)) if len(grads) > 1 else {}
    partners = _component_gradients(tree)
    constants = sorted(({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | set(forward_names))
                       & set(src.constants))[:6]
    centred = []  # (whether the statement has no reduction, order) of the mean-term edits
    assigned = set(bound) | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}

    def add(kind, stmt, node, words, make, **params):
        by_kind[kind].append(_Edit(kind, stmt, node, words, make, **params))

    loop_of = {id(n): loop.target.id for loop in ast.walk(tree) if isinstance(loop, ast.For)
               and isinstance(loop.target, ast.Name) for body in loop.body for n in ast.walk(body)}
    for stmt in ran:
        if id(stmt) in loop_of and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            _carried_edits(add, stmt, loop_of[id(stmt)], carried, saved, ctx_name,
                           ctx_attrs + [a for a in forward_attrs if a not in ctx_attrs], copies)
        _every_dim_edits(add, stmt)
        if analogies:
            _other_output_edits(add, stmt, analogies, grads)
        if partners:
            _partner_term_edits(add, stmt, partners)
        _derivative_partner_edits(add, stmt, assigned, saved)
        _every_read_edits(add, stmt, {n: line for n, line in bound.items() if n in saved and n not in grads})
        _shift_axis_edits(add, stmt)
        receivers = _receivers(stmt)
        inside = _nonlinear(stmt)
        value = getattr(stmt, "value", None) if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Return)) else None
        if isinstance(stmt, ast.Return) and isinstance(value, ast.Tuple):
            value = value.elts[position] if position is not None and position < len(value.elts) else None
        passing = isinstance(stmt, ast.Return) and isinstance(value, ast.Name)  # formed elsewhere
        if value is not None and not passing and not isinstance(value, (ast.Tuple, ast.Constant)):
            add("negated_value", stmt, value, f"`{ast.unparse(value)}` negated",
                lambda n: ast.UnaryOp(ast.USub(), n), term=ast.unparse(value))
            if factor is not None:  # locating a `scale`: the statement whose value lacks the factor
                add("scaled_value", stmt, value, f"`{ast.unparse(value)}` times {factor:.6g}",
                    lambda n: ast.BinOp(n, ast.Mult(), ast.Constant(factor)), term=ast.unparse(value))
        for node in _own_nodes(stmt):
            if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
                term = ast.unparse(node.value)  # `grad[:, :-1] += v` where the difference's `-=` is needed
                written, needed = ("+=", "-=") if isinstance(node.op, ast.Add) else ("-=", "+=")
                add("term_sign", stmt, node, f"the term `{term}`: `{written}` where `{needed}` is needed",
                    lambda n: ast.AugAssign(n.target, ast.Sub() if isinstance(n.op, ast.Add) else ast.Add(), n.value),
                    term=term)
            if node is stmt and id(stmt) in first_bound:
                add("not_accumulated", stmt, node, f"`{ast.unparse(node.targets[0])} = …` where its sum over the loop "
                    f"(`{ast.unparse(node.targets[0])} += …` from zero before the loop) is needed", _summed_from_zero,
                    loop=True)
            if node is stmt and id(stmt) in carried:
                add("not_accumulated", stmt, node, f"`{ast.unparse(node.targets[0])} = …` where "
                    f"`{ast.unparse(node.targets[0])} += …` is needed",
                    lambda n: ast.AugAssign(n.targets[0], ast.Add(), n.value), loop=True)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and isinstance(node.left, ast.Constant) \
                    and node.left.value == 1 and isinstance(node.right, ast.Name):
                m = node.right.id  # `1 - which` (kept only for a 0/1 m): the pair's other element selected
                add("region", stmt, node, f"the complement `1 - {m}` where `{m}` is needed", lambda n: n.right,
                    comparison=f"1 - {m}", expected=m, complement_of=m)
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and id(node) not in inside:
                right, left = ast.unparse(node.right), ast.unparse(node.left)
                flipped = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
                add("term_sign", stmt, node, f"the term `{right}`",
                    lambda n, op=flipped: ast.BinOp(n.left, op, n.right), term=right)
                if not (isinstance(node.left, ast.BinOp) and isinstance(node.left.op, (ast.Add, ast.Sub))):
                    add("term_sign", stmt, node, f"the term `{left}`",
                        lambda n: ast.BinOp(ast.UnaryOp(ast.USub(), n.left), n.op, n.right), term=left)
                add("missing_term", stmt, node, f"`{right}`", lambda n: n.left, term=right)
                if not (isinstance(node.left, ast.BinOp) and isinstance(node.left.op, (ast.Add, ast.Sub))):
                    add("missing_term", stmt, node, f"`{left}`",
                        lambda n: n.right if isinstance(n.op, ast.Add) else ast.UnaryOp(ast.USub(), n.right), term=left)
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _int(node) is None \
                    and id(node) not in inside:
                term = ast.unparse(node.operand)
                add("term_sign", stmt, node, f"the term `-{term}`", lambda n: n.operand, term=f"-{term}")
            elif isinstance(node, ast.Compare) and len(node.ops) == 1 and id(node) not in in_while:
                for other in COMPARISONS.get(type(node.ops[0]), ()):
                    add("region", stmt, node, f"`{ast.unparse(node)}` with {SYMBOLS[other]}",
                        lambda n, o=other: ast.Compare(n.left, [o()], n.comparators),
                        comparison=SYMBOLS[type(node.ops[0])], expected=SYMBOLS[other])
                _threshold_edits(add, stmt, node, bound, functions, grads, scalars, constants)
            elif isinstance(node, ast.Call):
                _call_edits(add, stmt, node)
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and steps:
                _step_edits(add, stmt, node, steps)
            if isinstance(node, ast.Subscript):
                _slice_shift_edits(add, stmt, node)
            if node is stmt and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], ast.Name) and not isinstance(stmt.value, (ast.Tuple, ast.Constant)):
                for dim in (-1, 1, 0):  # `dx = g * rstd` where the mean's share `- mean(g * rstd)` is needed
                    centred.append((not _reduces(stmt.value), len(centred)))
                    add("mean_term", stmt, stmt.value, f"`{ast.unparse(stmt.value)}` without its mean along dim {dim} "
                        "subtracted", lambda n, d=dim: ast.BinOp(n, ast.Sub(), ast.Call(
                            ast.Attribute(n, "mean", ast.Load()), [_const(d)], [ast.keyword("keepdim", ast.Constant(True))])),
                        term=f"-mean(…, {dim})", mean_term=dim)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and simplex:
                _centering_edits(add, stmt, node, simplex)
            elif isinstance(node, ast.Tuple) and isinstance(node.ctx, ast.Load) and 2 <= len(node.elts) <= 6:
                for a in range(len(node.elts)):  # two values written in each other's place
                    for b in range(a + 1, len(node.elts)):
                        add("swapped", stmt, node, f"`{ast.unparse(node.elts[a])}` and `{ast.unparse(node.elts[b])}` "
                            "exchanged", lambda n, a=a, b=b: ast.Tuple(_exchanged(n.elts, a, b), ast.Load()),
                            first=ast.unparse(node.elts[a]), second=ast.unparse(node.elts[b]))
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript) \
                    and isinstance(node.op, (ast.Add, ast.Sub)) and not _has_slice(node.target.slice):
                # `g[i] -= v` with i repeating: each duplicate's update replaces the last
                add("not_accumulated", stmt, node, f"`{ast.unparse(node)}` accumulating (index_put_ with accumulate=True)",
                    lambda n: ast.Expr(_index_put(n.target, n.value if isinstance(n.op, ast.Add)
                                                  else ast.UnaryOp(ast.USub(), n.value))))
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
                target = node.targets[0]
                add("not_accumulated", stmt, node, f"`{ast.unparse(node)}` accumulating (`+=`)",
                    lambda n: ast.AugAssign(n.targets[0], ast.Add(), n.value))
                if not _has_slice(target.slice):
                    add("not_accumulated", stmt, node, f"`{ast.unparse(node)}` accumulating (index_put_ with accumulate=True)",
                        lambda n: ast.Expr(_index_put(n.targets[0], n.value)))
                    value = node.value
                    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) \
                            and ast.unparse(value.left) == ast.unparse(target):
                        # `g[i] = g[i] + v`: a read-modify-write keeps one write per repeated index
                        add("not_accumulated", stmt, node, f"`{ast.unparse(node)}` as an index_put_ with accumulate=True",
                            lambda n: ast.Expr(_index_put(n.targets[0], n.value.right, wrap=True)))
            for operand in _matmul_operands(node):
                code = ast.unparse(operand)
                add("transposed", stmt, operand, f"`{code}` transposed", _transposed, operand=code)
            for operand in _matmul_operands(node):  # d(xᵀAx)/dx = (A + Aᵀ)x, written 2Ax
                code, other = ast.unparse(operand), ast.unparse(_transposed(copy.deepcopy(operand)))
                add("transposed", stmt, operand, f"the symmetric part `({code} + {other}) / 2` where `{code}` is "
                    "written (2·A·x is the gradient of xᵀAx only for a symmetric A)",
                    lambda n: ast.BinOp(ast.BinOp(n, ast.Add(), _transposed(n)), ast.Div(), ast.Constant(2)),
                    operand=code, symmetric=True)
            if _matmul_operands(node):  # the product itself the wrong way round: cols @ gyᵀ for gy @ colsᵀ
                code = ast.unparse(node)
                summed = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "sum"
                             and n.func.value is node for n in ast.walk(stmt))  # a batch of them summed: a matrix
                add("transposed", stmt, node, f"`{code}` transposed", _transposed, operand=code, product=True,
                    matrix=summed)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in (cdfs or {}):
                u = cdfs[node.id]  # d(u·Φ(u))/du = Φ(u) + u·φ(u): GELU's derivative written as its CDF alone
                add("missing_term", stmt, node, f"`{node.id}` (Φ({u})) where GELU's derivative `{node.id} + {u}·φ({u})` "
                    "is needed", lambda n, u=u: ast.BinOp(n, ast.Add(), _times_pdf(u)), term=f"{u}·φ({u})", pdf_of=u)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and isinstance(node.left, ast.Name) \
                    and isinstance(node.right, ast.Name) and node.left.id == node.right.id and node.left.id in bound:
                for other in bound:  # `nb * nb` where `na * na` is needed: a square copied from another line
                    if other != node.left.id and other not in functions and other not in grads \
                            and bound[other] < node.lineno:
                        add("wrong_variable", stmt, node, f"`{ast.unparse(node)}` where `{other} * {other}` is needed",
                            lambda n, o=other: ast.BinOp(ast.Name(o, ast.Load()), ast.Mult(), ast.Name(o, ast.Load())),
                            used=node.left.id, needed=other)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and isinstance(node.left, ast.Name) \
                    and isinstance(node.right, ast.Name) and node.left.id == node.right.id and node.left.id in saved:
                for code in (forward_calls or {}).get(node.left.id, ()):  # `den * den` for (den + eps)**2
                    add("wrong_variable", stmt, node, f"`{ast.unparse(node)}` where forward's `{code} * {code}` is "
                        "needed", lambda n, c=code: ast.BinOp(ast.parse(c, mode="eval").body, ast.Mult(),
                                                              ast.parse(c, mode="eval").body),
                        used=node.left.id, needed=code)
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
                _leading_axis_edits(add, stmt, node, set(grads) | saved)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "sign" and (
                    len(node.args) + isinstance(node.func.value, ast.Name) * (not node.args)) == 1:
                arg = ast.unparse(node.args[0] if node.args else node.func.value)  # d|x|/dx where the sign cancels
                add("region", stmt, node, f"`{ast.unparse(node)}`, which negates the gradient where {arg} < 0, where "
                    "no sign is needed", lambda n: ast.Constant(1.0), comparison=ast.unparse(node), expected="1",
                    sign_dropped=arg)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):  # the windowed frames for the frames
                for drop, keep in ((node.right, node.left), (node.left, node.right)):
                    if isinstance(drop, ast.Name) and drop.id in saved and drop.id not in grads and not (
                            isinstance(keep, ast.Constant)):
                        kept = ast.unparse(keep)
                        add("wrong_variable", stmt, node, f"`{ast.unparse(node)}` where `{kept}` is needed (an extra "
                            f"factor `{drop.id}`)", lambda n, right=drop is node.right: n.left if right else n.right,
                            used=ast.unparse(node), needed=kept, extra_factor=drop.id)
            _reaction_edits(add, stmt, node, siblings)
            _shifted_reaction_edits(add, stmt, node)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in grads:
                for code in conditions:  # grad_output taken whole where only forward's selection reaches it
                    if {n.id for n in ast.walk(ast.parse(code, mode="eval")) if isinstance(n, ast.Name)} <= set(bound):
                        for shown in (code, f"~({code})"):
                            add("region", stmt, node, f"`{node.id}` where `{node.id} * {shown}` is needed (forward "
                                f"selects by `{code}`)", lambda n, c=shown: ast.BinOp(
                                    n, ast.Mult(), ast.parse(c, mode="eval").body), comparison=node.id,
                                expected=f"{node.id} * {shown}", forward_mask=shown)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in bound \
                    and node.id not in functions:
                m = node.id  # the mask of one branch read where the other branch's is needed (kept for a 0/1 m)
                for complement, shown in ((lambda n: ast.BinOp(ast.Constant(1), ast.Sub(), n), f"1 - {m}"),
                                          (lambda n: ast.UnaryOp(ast.Invert(), n), f"~{m}")):
                    add("region", stmt, node, f"`{m}` where its complement `{shown}` is needed", complement,
                        comparison=m, expected=shown, complement_of=m)
                compared = next((c for c in ast.walk(stmt) if isinstance(c, ast.Compare)
                                 and any(n is node for n in ast.walk(c))), None)
                for other in bound:  # inside a comparison the other tensor selects other elements: a region
                    if other != node.id and other not in functions and other not in grads \
                            and bound[other] < node.lineno and (other, id(node)) not in receivers:
                        add("region" if compared is not None else "wrong_variable", stmt, node,
                            f"`{node.id}` where `{other}` is needed", lambda n, o=other: ast.Name(o, ast.Load()),
                            used=node.id, needed=other)
                if node.id in saved and looped:
                    for dim in (0, 1):  # a recurrence's gate times h_t where h_{t-1} is needed
                        add("wrong_variable", stmt, node, f"`{node.id}` where the previous step's (`{node.id}` shifted "
                            f"by one along dim {dim}, zero first) is needed", lambda n, d=dim: _previous_step(n, d),
                            used=node.id, needed=f"{node.id} one step back along dim {dim}", step=-1)
                for code in (forward_calls or {}).get(node.id, ()) if node.id in saved else ():
                    # inside a comparison, the mask's bound is tested on the wrong quantity: `d < 1` for |d| < 1
                    add("region" if compared is not None else "wrong_variable", stmt, node,
                        f"`{node.id}` where forward's `{code}` is needed", lambda n, c=code: ast.parse(c, mode="eval").body,
                        used=node.id, needed=code)
                for local in (unsaved or {}).get(node.id, ()) if node.id in saved else ():  # `x` for forward's `agg`
                    if isinstance(local, tuple):  # `scores` read unmasked: forward's mask left out here
                        key, code = local
                        add("region", stmt, node, f"`{node.id}` where forward's masked `{code}` is needed (forward's "
                            "mask left out)", lambda n, k=key: ast.Name(FORWARD_PREFIX + k, ast.Load()),
                            used=node.id, needed=code, forward_local=key, forward_mask=code)
                        continue
                    add("wrong_variable", stmt, node, f"`{node.id}` where forward's `{local}` (not saved) is needed",
                        lambda n, l=local: ast.Name(FORWARD_PREFIX + l, ast.Load()), used=node.id,
                        needed=f"forward's {local}", forward_local=local)
                for other in saved if node.id in saved else ():  # sign(pred) where sign(pred - target) is meant
                    if other != node.id:
                        add("wrong_variable", stmt, node, f"`{node.id}` where the difference `{node.id} - {other}` "
                            "is needed", lambda n, o=other: ast.BinOp(n, ast.Sub(), ast.Name(o, ast.Load())),
                            used=node.id, needed=f"{node.id} - {other}")
                for attr in ctx_attrs:
                    add("wrong_variable", stmt, node, f"`{node.id}` where `{ctx_name}.{attr}` is needed",
                        lambda n, a=attr: ast.Attribute(ast.Name(ctx_name, ast.Load()), a, ast.Load()),
                        used=node.id, needed=f"{ctx_name}.{attr}")
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == ctx_name \
                    and node.attr in ctx_attrs and isinstance(node.ctx, ast.Load):
                for attr in ctx_attrs:
                    if attr != node.attr:
                        add("wrong_variable", stmt, node, f"`{ctx_name}.{node.attr}` where `{ctx_name}.{attr}` is needed",
                            lambda n, a=attr: ast.Attribute(n.value, a, ast.Load()),
                            used=f"{ctx_name}.{node.attr}", needed=f"{ctx_name}.{attr}")
                for other in sorted(saved):  # `ctx.x` where the saved x̂ (kept grouped, (n, g, -1)) is needed
                    add("wrong_variable", stmt, node, f"`{ctx_name}.{node.attr}` where `{other}` (in its shape) is "
                        "needed", lambda n, o=other: ast.Call(ast.Attribute(ast.Name(o, ast.Load()), "reshape", ast.Load()),
                                                              [ast.Attribute(n, "shape", ast.Load())], []),
                        used=f"{ctx_name}.{node.attr}", needed=other)
    _order_edits(add, tree, ran)
    loads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    unread = [name for name, line in bound.items() if line > 0 and name not in loads]
    for stmt in ran:  # a tensor backward unpacks and never reads: the factor it forgot
        if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Return)) or stmt.value is None:
            continue
        for g in [g for g in grads if any(isinstance(n, ast.Name) and n.id == g for n in ast.walk(stmt.value))]:
            for h in sorted(saved):  # a normalisation's projection term −x̂·mean(g·x̂) left out
                for dims in mean_dims:
                    add("missing_term", stmt, stmt, f"`{g}` where `{g} - {h} * ({g} * {h}).mean({ast.unparse(dims)}, "
                        "keepdim=True)` is needed", lambda n, g=g, h=h, d=dims: _projected(n, g, h, d),
                        term=f"-{h}·mean({g}·{h})", projection=h, dim=ast.unparse(dims))
            for u in sorted(saved):  # a clip's two sides summed with one sign: sign(u) dropped
                add("term_sign", stmt, stmt, f"`{g}` where `{g} * {u}.sign()` is needed (the sign of `{u}` dropped)",
                    lambda n, g=g, u=u: _times_everywhere(n, g, u, sign=True), term=f"the sign of {u}", sign_of=u)
            for u in unread:
                add("unread_factor", stmt, stmt, f"`{g}` where `{g} * {u}` is needed",
                    lambda n, g=g, u=u: _times_everywhere(n, g, u), used=g, needed=f"{g} * {u}", factor=u)
    returned = last_return(src) if position is not None else None
    if returned is not None and grads:
        value = returned.value
        elts = value.elts if isinstance(value, ast.Tuple) else [value]
        if position < len(elts) and not (isinstance(elts[position], ast.Constant) and elts[position].value is None):
            target = elts[position]
            reads = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
            for g in grads:
                if g not in reads:
                    add("ignores_grad_output", returned, target, f"`{ast.unparse(target)}` times `{g}`",
                        lambda n, g=g: ast.BinOp(n, ast.Mult(), ast.Name(g, ast.Load())), grad_output=g)
    for stmt in ran if grads else ():  # `DT * lap.sum(dims)` where `(lap * g).sum(dims)` is the chain rule
        value = getattr(stmt, "value", None)
        if not isinstance(stmt, ast.Assign) or value is None or \
                {n.id for n in ast.walk(value) if isinstance(n, ast.Name)} & set(grads):
            continue
        for node in ast.walk(value):
            if isinstance(node, ast.Call) and _call_name(node) == ("sum", True) and (node.args or node.keywords):
                for g in grads:
                    add("ignores_grad_output", stmt, node.func.value, f"`{ast.unparse(node.func.value)}` summed "
                        f"without `{g}` (`({ast.unparse(node.func.value)} * {g})` is summed)",
                        lambda n, g=g: ast.BinOp(n, ast.Mult(), ast.Name(g, ast.Load())), grad_output=g)
    by_kind["negated_value"].reverse()  # a sign forgotten where the value is last formed, before earlier ones
    by_kind["scaled_value"].reverse()
    # a mean's term left out: the statement that already subtracts one mean term (LayerNorm's
    # `gx - xhat * mean(gx * xhat)`) before the others (centring `gx` itself also fits), else the first
    for _, k in sorted(centred):
        edit = by_kind["mean_term"][k]
        edit.kind = "missing_term"
        by_kind["missing_term"].append(edit)
    return [edit for kind in KIND_ORDER for edit in by_kind[kind]]


def forward_edits(src):
    """Forward saving the wrong tensor: one name given to ``save_for_backward`` or assigned to a
    ``ctx`` attribute replaced by another name forward binds before that statement."""
    tree = src.tree
    ctx_name = tree.args.args[0].arg if tree.args.args else "ctx"
    bound = _bound_before(tree, ctx_name)
    found = []
    for stmt in statements(tree):
        saved = []
        for node in _own_nodes(stmt):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "save_for_backward":
                saved.extend(a for a in node.args if isinstance(a, ast.Name))
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                                                and t.value.id == ctx_name for t in stmt.targets):
            saved.extend(n for n in ast.walk(stmt.value) if isinstance(n, ast.Name) and n.id in bound)
        for node in saved:
            for other in bound:
                if other != node.id and bound[other] < stmt.lineno:
                    found.append(_Edit("wrong_variable", stmt, node, f"forward saves `{node.id}` where `{other}` is needed",
                                       lambda n, o=other: ast.Name(o, ast.Load()), used=node.id, needed=other,
                                       saved=True))
    return found


def _times_pdf(u):
    """``u * (-0.5 * u * u).exp() * 0.3989422804014327``: u·φ(u), with tensor methods only."""
    name = lambda: ast.Name(u, ast.Load())  # noqa: E731
    square = ast.BinOp(ast.BinOp(ast.Constant(-0.5), ast.Mult(), name()), ast.Mult(), name())
    density = ast.Call(ast.Attribute(square, "exp", ast.Load()), [], [])
    return ast.BinOp(ast.BinOp(name(), ast.Mult(), density), ast.Mult(), ast.Constant(1 / math.sqrt(2 * math.pi)))


def _every_read_edits(add, stmt, tensors):
    """Every read of one saved tensor in a statement replaced by another together: a feedback
    coefficient's gradient written with the past inputs ``x`` where the past outputs ``y`` are
    needed, at each of its lags (one replacement alone fixes one lag)."""
    value = getattr(stmt, "value", None) if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Return)) else None
    if value is None:
        return
    reads = [n.id for n in ast.walk(value) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    for name in sorted({r for r in reads if r in tensors and reads.count(r) >= 2}):
        for other in sorted(tensors):
            if other == name:
                continue
            def make(n, name=name, other=other):
                for m in ast.walk(n):
                    if isinstance(m, ast.Name) and m.id == name and isinstance(m.ctx, ast.Load):
                        m.id = other
                return n
            add("wrong_variable", stmt, value, f"`{name}` where `{other}` is needed (at each of its "
                f"{reads.count(name)} reads)", make, used=name, needed=other)

