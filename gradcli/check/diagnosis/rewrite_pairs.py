"""Edits of a pairwise term's backward: the reaction on the pair's other end left out.

A spring pushing on its first node only (``grad[a] += f`` with no ``grad[b] -= f``, an
``index_add_(0, i, f)`` with no ``(0, j, -f)``), and a product of neighbours along one axis written
at one end only (``g[:, :-1] += x[:, 1:]`` with no ``g[:, 1:] += x[:, :-1]``; a lag's
``g[:, :n - k] += x[:, k:]``). Used by ``rewrite_edits.edits``.
"""
from __future__ import annotations

import ast
import copy


def _sibling_indices(tree):
    """{index name: [the names indexing the pair's other end]}: names bound together (`a, b = …`)
    or by two statements alike but for a constant or a name (`i = src[e]`, `j = dst[e]`)."""
    found = {}

    def pair(names):
        for n in names:
            found.setdefault(n, []).extend(m for m in names if m != n and m not in found.get(n, ()))

    def shape(value):
        value = copy.deepcopy(value)
        for n in ast.walk(value):
            if isinstance(n, ast.Constant):
                n.value = 0
            elif isinstance(n, ast.Name):
                n.id = "_"
        return ast.dump(value)

    for body in [n.body for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.For, ast.While, ast.If, ast.With))]:
        singles = []
        for s in body:
            if not (isinstance(s, ast.Assign) and len(s.targets) == 1):
                continue
            target = s.targets[0]
            if isinstance(target, ast.Tuple) and 2 <= len(target.elts) <= 3 \
                    and all(isinstance(e, ast.Name) for e in target.elts):
                pair([e.id for e in target.elts])
            elif isinstance(target, ast.Name) and any(isinstance(n, ast.Subscript) for n in ast.walk(s.value)):
                singles.append((target.id, shape(s.value)))
        for k, (a, form) in enumerate(singles):
            for b, other in singles[k + 1:]:
                if form == other:
                    pair([a, b])
    return found


def _reaction_edits(add, stmt, node, siblings):
    """`grad[a] += f` (or `grad.index_add_(0, a, f)`) for a pairwise term whose reaction on the
    pair's other end, `grad[b] -= f`, was left out (a spring pushing on its first node only)."""
    if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)) and isinstance(node.target, ast.Subscript):
        index = node.target.slice
        first = index.elts[0] if isinstance(index, ast.Tuple) and index.elts else index
        if not isinstance(first, ast.Name):
            return
        for b in siblings.get(first.id, ()):
            for same in (False, True):
                def make(n, b=b, same=same):
                    target = copy.deepcopy(n.target)
                    where = target.slice.elts if isinstance(target.slice, ast.Tuple) else None
                    if where is not None:
                        where[0] = ast.Name(b, ast.Load())
                    else:
                        target.slice = ast.Name(b, ast.Load())
                    op = n.op if same else (ast.Sub() if isinstance(n.op, ast.Add) else ast.Add())
                    return ast.If(ast.Constant(True), [n, ast.AugAssign(target, op, copy.deepcopy(n.value))], [])
                shown = make(copy.deepcopy(node)).body[1]
                term = ast.unparse(shown)
                add("missing_term", stmt, node, f"the reaction on the pair's other end, `{term}`", make, term=term,
                    reaction=b)
        return
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and len(node.args) == 3 \
            and node.func.attr in ("index_add_", "index_add", "scatter_add_", "scatter_add"):
        for b in _other_ends(node.args[1], siblings):
            for same in (False, True):
                def make(n, b=b, same=same):
                    value = copy.deepcopy(n.args[2])
                    return ast.Call(ast.Attribute(n, "index_add_" if "index" in n.func.attr else "scatter_add_",
                                                  ast.Load()),
                                    [copy.deepcopy(n.args[0]), copy.deepcopy(b),
                                     value if same else ast.UnaryOp(ast.USub(), value)], [])
                other = ast.unparse(b)
                term = f"{'+' if same else '-'}{ast.unparse(node.args[2])} at `{other}`"
                add("missing_term", stmt, node, f"the reaction on the pair's other end, {term}", make, term=term,
                    reaction=other)


def _other_ends(index, siblings):
    """The index of a pair's other end: a sibling name (`j` for `i`), or the other column of a
    pair list (`pairs[:, 1]` for `pairs[:, 0]`, `edge_index[1]` for `edge_index[0]`)."""
    if isinstance(index, ast.Name):
        return [ast.Name(b, ast.Load()) for b in siblings.get(index.id, ())]
    if not isinstance(index, ast.Subscript):
        return []
    last = index.slice.elts[-1] if isinstance(index.slice, ast.Tuple) and index.slice.elts else index.slice
    if not (isinstance(last, ast.Constant) and last.value in (0, 1) and type(last.value) is int):
        return []
    other = copy.deepcopy(index)
    if isinstance(other.slice, ast.Tuple):
        other.slice.elts[-1] = ast.Constant(1 - last.value)
    else:
        other.slice = ast.Constant(1 - last.value)
    return [other]

def _complement_shift(node, statement=None):
    """A neighbour pair's other end along one axis: `:-k` ↔ `k:`, and `:n - k` ↔ `k:` where the
    statement holds both forms (`g[:, :n - k] += x[:, k:]`); else None."""
    if not isinstance(node, ast.Slice) or node.step is not None:
        return None
    def number(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and isinstance(n.operand, ast.Constant) \
                and isinstance(n.operand.value, int):
            return -n.operand.value
        return None
    lo = None if node.lower is None else number(node.lower)
    hi = None if node.upper is None else number(node.upper)
    if node.lower is None and hi is not None and hi < 0:
        return ast.Slice(ast.Constant(-hi), None, None)
    if node.upper is None and lo is not None and lo > 0:
        return ast.Slice(None, ast.UnaryOp(ast.USub(), ast.Constant(lo)), None)
    ends = [] if statement is None else [n for n in ast.walk(statement) if isinstance(n, ast.Slice) and n.step is None]
    if node.lower is None and isinstance(node.upper, ast.BinOp) and isinstance(node.upper.op, ast.Sub):
        k = ast.dump(node.upper.right)  # `:n - k` → `k:` when `k:` is read too
        if any(e.upper is None and e.lower is not None and ast.dump(e.lower) == k for e in ends):
            return ast.Slice(copy.deepcopy(node.upper.right), None, None)
    if node.upper is None and node.lower is not None:
        k = ast.dump(node.lower)
        for e in ends:
            if e.lower is None and isinstance(e.upper, ast.BinOp) and isinstance(e.upper.op, ast.Sub) \
                    and ast.dump(e.upper.right) == k:
                return ast.Slice(None, copy.deepcopy(e.upper), None)
    return None


def _shifted_reaction_edits(add, stmt, node):
    """`g[:, :-1] -= s[:, 1:] / 2` for a term of neighbouring pairs (x_t·x_{t+1}, a total variation)
    whose other end, `g[:, 1:] -= s[:, :-1] / 2` (or `+= -…` for a difference), was left out."""
    if not (isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub))
            and isinstance(node.target, ast.Subscript)):
        return
    where = node.target.slice.elts if isinstance(node.target.slice, ast.Tuple) else [node.target.slice]
    axes = [k for k, e in enumerate(where) if _complement_shift(e, node) is not None]
    if len(axes) != 1:
        return
    axis = axes[0]

    def swapped(tree):
        tree = copy.deepcopy(tree)  # `node` (the original) says which forms pair up
        for n in ast.walk(tree):
            if isinstance(n, ast.Subscript):
                elts = n.slice.elts if isinstance(n.slice, ast.Tuple) else None
                if elts is not None and axis < len(elts) and _complement_shift(elts[axis], node) is not None:
                    elts[axis] = _complement_shift(elts[axis], node)
                elif elts is None and axis == 0 and _complement_shift(n.slice, node) is not None:
                    n.slice = _complement_shift(n.slice, node)
        return tree

    for value_too in (True, False):
        for same in (True, False):
            def make(n, value_too=value_too, same=same):
                target = swapped(n.target)
                value = swapped(n.value) if value_too else copy.deepcopy(n.value)
                op = n.op if same else (ast.Sub() if isinstance(n.op, ast.Add) else ast.Add())
                return ast.If(ast.Constant(True), [n, ast.AugAssign(target, op, value)], [])
            shown = make(copy.deepcopy(node)).body[1]
            if value_too and ast.dump(shown.value) == ast.dump(node.value):
                continue  # nothing shifted in the value: the plain variant says it
            term = ast.unparse(shown)
            add("missing_term", stmt, node, f"`{term}` besides", make, term=term, reaction=term)



def _analogies(tree, grads):
    """{g1: {name: name'}}: for each grad_output g1, how backward writes the same term for another
    output g2, read off sibling expressions alike but for their names (``grad_u * fx / z`` and
    ``grad_v * fy / z`` in one stack; ``(grad_u * x / z).sum()`` and ``(grad_v * y / z).sum()``)."""
    def names(node):
        return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]

    def shape(node):
        node = copy.deepcopy(node)
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                n.id = "_"
        return ast.dump(node)

    found = {}
    for group in ast.walk(tree):
        elts = group.elts if isinstance(group, (ast.List, ast.Tuple)) else None
        for a, b in ((a, b) for k, a in enumerate(elts or ()) for b in elts[k + 1:]):
            if shape(a) != shape(b):
                continue
            pairs = {(x, y) for x, y in zip(names(a), names(b)) if x != y}
            for mapping in (dict(pairs), {y: x for x, y in pairs}):
                outputs = [g for g in mapping if g in grads and mapping[g] in grads]
                if len(outputs) == 1 and len(mapping) == len(pairs):  # one consistent renaming
                    found.setdefault(outputs[0], {}).update(mapping)
    return found


def _other_output_edits(add, stmt, analogies, grads):
    """``grad_z = -grad_u * fx * x / z ** 2`` for a quantity both outputs read (z feeds u and v):
    the same term for the other output, renamed by analogy, left out."""
    value = getattr(stmt, "value", None) if isinstance(stmt, ast.Assign) else None
    if value is None:
        return
    read = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    for g, mapping in analogies.items():
        if g not in read or mapping.get(g) in read:
            continue
        renamed = copy.deepcopy(value)
        for n in ast.walk(renamed):
            if isinstance(n, ast.Name) and n.id in mapping:
                n.id = mapping[n.id]
        term = ast.unparse(renamed)
        add("missing_term", stmt, value, f"the other output's term `{term}` (as `{mapping[g]}` is read elsewhere)",
            lambda n, r=renamed: ast.BinOp(n, ast.Add(), copy.deepcopy(r)), term=term, output_term=mapping[g])


def _terms(node, sign=1):
    """[(±1, term)] of an additive chain."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return _terms(node.left, sign) + _terms(node.right, sign if isinstance(node.op, ast.Add) else -sign)
    return [(sign, node)]


def _component_gradients(tree):
    """{gradient statement: its component} for ``x, y, z = p.unbind(-1)`` and ``gx = …``, ``gy = …``
    (a target named after one component, with a g / d / grad prefix)."""
    components = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) and \
                all(isinstance(e, ast.Name) for e in node.targets[0].elts) and 2 <= len(node.targets[0].elts) <= 4:
            components = [e.id for e in node.targets[0].elts]
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            for prefix in ("grad_", "g_", "d_", "g", "d"):
                name = node.targets[0].id
                if name.startswith(prefix) and name[len(prefix):] in components:
                    found[node] = name[len(prefix):]
                    break
    return found if len(set(found.values())) >= 2 else {}


def _partner_term_edits(add, stmt, partners):
    """``gy = C1 * gb[:, 1] + …`` without ``C2 * x * gb[:, 4]``, the product rule's partner of gx's
    ``C2 * y * gb[:, 4]`` (a product x·y of two components differentiated for one of them only)."""
    own = partners.get(stmt)
    if own is None:
        return
    present = {ast.unparse(t) for _, t in _terms(stmt.value)}
    for other, component in partners.items():
        if other is stmt:
            continue
        for sign, term in _terms(other.value):
            reads = {n.id for n in ast.walk(term) if isinstance(n, ast.Name)}
            if own not in reads or component in reads:
                continue
            partner = copy.deepcopy(term)
            for n in ast.walk(partner):
                if isinstance(n, ast.Name) and n.id == own:
                    n.id = component
            code = ast.unparse(partner)
            if code in present:
                continue
            add("missing_term", stmt, stmt.value, f"`{code}`, the product rule's partner of `{ast.unparse(term)}` in "
                f"`{ast.unparse(other.targets[0])}`", lambda n, p=partner, s=sign: ast.BinOp(
                    n, ast.Add() if s > 0 else ast.Sub(), copy.deepcopy(p)), term=code, partner_of=ast.unparse(term))


DERIVATIVE_PREFIXES = ("grad_", "d_", "g_", "d")


def _factors(node):
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors(node.left) + _factors(node.right)
    return [node]


def _derivative_partner_edits(add, stmt, assigned, saved):
    """``2 * x * dT[k]`` where the recurrence T_{k+1} = 2x·T_k − T_{k−1} needs ``2 * x * dT[k] +
    2 * T[k]``: a product differentiated for its recursive factor only (dT, the derivative of the
    bound T, by its name), the product rule's term for the other factor x (saved) left out."""
    products = [n for n in ast.walk(stmt) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult)]
    inner = {id(c) for n in products for c in (n.left, n.right)}
    for node in (n for n in products if id(n) not in inner):
        factors = _factors(node)
        for k, d in enumerate(factors):
            name = d.value if isinstance(d, ast.Subscript) else d
            if not isinstance(name, ast.Name):
                continue
            primal = next((name.id[len(p):] for p in DERIVATIVE_PREFIXES
                           if name.id.startswith(p) and name.id[len(p):] in assigned), None)
            if primal is None:
                continue
            for j, x in enumerate(factors):
                if j == k or not (isinstance(x, ast.Name) and x.id in saved and x.id != primal):
                    continue
                rest = [copy.deepcopy(f) for i, f in enumerate(factors) if i not in (j, k)]
                value = copy.deepcopy(d)
                (value.value if isinstance(value, ast.Subscript) else value).id = primal
                partner = value
                for f in reversed(rest):
                    partner = ast.BinOp(f, ast.Mult(), partner)
                code = ast.unparse(partner)
                add("missing_term", stmt, node, f"`{code}`, the product rule's term for `{x.id}` (`{ast.unparse(node)}` "
                    f"differentiates `{x.id} * {primal}` for `{primal}` only)",
                    lambda n, p=partner: ast.BinOp(n, ast.Add(), copy.deepcopy(p)), term=code,
                    partner_of=ast.unparse(node))
