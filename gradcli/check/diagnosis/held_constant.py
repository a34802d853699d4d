"""``missing_term``: one part of forward's expression held constant — the product rule's, the
quotient rule's or the chain rule's other half dropped, or one term of a sum not differentiated.

Forward's output is read as the expression it returns (a returned name followed to its
assignment; names forward assigns once from an expression the closed-vocabulary evaluator reads
are expanded into that expression, so ``loss = -(1 - pt) ** g * pt.log(); return loss.mean()``
is one expression). A backward that differentiates all of it but one sub-expression P — held as
if it were a constant — gives exactly vᵀJ_P, J_P the Jacobian of the expression with P frozen at
its value. J and each J_P are measured over forward's own locals (recorded by a line tracer when
forward returns) with a 4-point stencil: all elements moved at once when the input is elementwise
in the output (broadcast included: a learned β of shape (1,)), else one element at a time (small
inputs only). The expression must reproduce forward's output and vᵀJ the numerical gradient; a
finding needs A = vᵀJ_P for every cotangent while N ≠ vᵀJ_P, and names the outermost such P.
Nothing is ``eval``ed."""
from __future__ import annotations

import ast
import os

import numpy as np

from gradcli.check.diagnosis.evidence import Evidence
from gradcli.check.report import Finding

STENCIL = ((-2, 1.0), (-1, -8.0), (1, 8.0), (2, -1.0))  # f′ ≈ Σ w·f(x + k·h) / 12h
MAX_ELEMENTS = 48  # one element at a time only for inputs this small (4 forward runs per element)
MAX_PIECES = 40


def _terms(node, sign=1.0):
    """The top-level terms of a sum (through ``+``, ``-`` and unary minus): [(node, sign)]."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        right = -1.0 if isinstance(node.op, ast.Sub) else 1.0
        return _terms(node.left, sign) + _terms(node.right, sign * right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _terms(node.operand, -sign)
    return [(node, sign)]


def _output_expression(diag):
    """(forward's source, code object, the returned expression, its line) or None. A forward that
    returns a module-level helper's result (``return _focal(ctx, logits, target)``, a helper of
    its own file) is read as that helper."""
    from gradcli.check.diagnosis.source import _source, forward_source

    src = forward_source(diag.cls)
    func = diag.cls.__dict__.get("forward") or getattr(diag.cls, "forward", None)
    func = getattr(func, "__func__", func)
    code = getattr(func, "__code__", None)
    if src is None or code is None:
        return None
    found = _returned(src, code)
    if found is not None and isinstance(found[2], ast.Call) and isinstance(found[2].func, ast.Name):
        helper = getattr(func, "__globals__", {}).get(found[2].func.id)
        helper_src = _source(helper) if callable(helper) and hasattr(helper, "__code__") else None
        if helper_src is not None and os.path.abspath(helper_src.file) == os.path.abspath(src.file):
            return _returned(helper_src, helper.__code__)
    return found


def _returned(src, code):
    from gradcli.check.diagnosis.source import statements

    body = statements(src.tree)
    returns = [n for n in body if isinstance(n, ast.Return) and n.value is not None]
    if not returns:
        return None
    value, before = returns[-1].value, returns[-1].lineno
    if isinstance(value, ast.Name):  # `y = x * s; return y`
        assigned = [n for n in body if isinstance(n, ast.Assign) and n.lineno < before and any(
            isinstance(t, ast.Name) and t.id == value.id for t in n.targets)]
        if not assigned:
            return None
        value, before = assigned[-1].value, assigned[-1].lineno
    return src, code, value, before


def _expandable(src, before):
    """{name: its assignment's value} for names forward assigns exactly once, at the top level of
    its body, before ``before``, by ``name = expression``, and never changes in place."""
    from gradcli.check.diagnosis.calls import assigns_or_changes
    from gradcli.check.diagnosis.source import statements

    every = statements(src.tree)
    found = {}
    for stmt in src.tree.body:
        if (isinstance(stmt, ast.Assign) and stmt.lineno < before and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            name = stmt.targets[0].id
            if sum(1 for s in every if assigns_or_changes(s, name)) == 1:
                found[name] = stmt.value
    return found


class _Forward:
    """Forward's locals at a shifted input, and the expression evaluated over them with any of
    its sub-expressions frozen."""

    def __init__(self, diag, ev, src, code, before, value):
        self.diag, self.ev, self.src, self.code, self.before, self.value = diag, ev, src, code, before, value
        self.expand = _expandable(src, before)

    def locals_at(self, x):
        from gradcli.check.diagnosis.probe import _LineTrace, _to_numpy

        local_names = {}
        with _LineTrace(self.code, set(), local_names):
            outputs = self.diag.probe.forward({self.ev.index: x})
        env = {k: (np.asarray(_to_numpy(v), dtype=float) if hasattr(v, "shape") and hasattr(v, "dtype") else v)
               for k, v in local_names.items() if not isinstance(v, type)}
        ctx = local_names.get("ctx")
        attrs = {k: (np.asarray(_to_numpy(v), dtype=float) if hasattr(v, "shape") and hasattr(v, "dtype") else v)
                 for k, v in getattr(ctx, "__dict__", {}).items() if isinstance(v, (int, float)) or hasattr(v, "shape")}
        return env, attrs, outputs

    def evaluate(self, env, attrs, node=None, frozen=()):
        """The expression (or ``node``) over ``env`` with the names of ``self.expand`` recomputed
        from their assignments, each (node, value) of ``frozen`` held at that value."""
        from gradcli.check.diagnosis.evaluator import _Evaluator

        kept = {k: v for k, v in env.items() if k not in self.expand}
        evaluator = _Evaluator(self.src, self.before + 1, kept, [], attrs)
        for piece, held in frozen:
            evaluator.overrides[id(piece)] = lambda _, held=held: held
        return np.asarray(evaluator.value(self.value if node is None else node), dtype=float)

    def settle(self, env, attrs):
        """Drop from ``expand`` every name whose assignment the evaluator cannot read (read from
        forward's locals instead: nothing inside it can be frozen)."""
        from gradcli.check.diagnosis.calls import Unsupported

        for name in list(self.expand):
            try:
                self.evaluate({k: v for k, v in env.items() if k != name}, attrs, ast.Name(id=name, ctx=ast.Load()))
            except (Unsupported, ValueError, TypeError, IndexError, ArithmeticError, KeyError):
                del self.expand[name]

    def pieces(self):
        """Sub-expressions of the (expanded) output expression, outermost first: [(node, role)],
        role "term" for a top-level term of the output's sum, "denominator", "factor" or "part"."""
        top = {id(node) for node, _ in _terms(self.value)} if len(_terms(self.value)) > 1 else set()
        found, queue, seen = [], [(self.value, None)], set()
        while queue and len(found) < MAX_PIECES:
            node, role = queue.pop(0)
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
                queue.insert(0, (node.operand, role))  # −F frozen is F frozen: the sign is no part
                continue
            if node is not self.value and not isinstance(node, ast.Constant):
                found.append((node, "term" if id(node) in top else role or "part"))
            if isinstance(node, ast.Name) and node.id in self.expand:
                queue.append((self.expand[node.id], None))
                continue
            if isinstance(node, ast.BinOp):
                left, right = {ast.Mult: ("factor", "factor"), ast.Div: ("factor", "denominator")}.get(
                    type(node.op), (None, None))
                queue += [(node.left, left), (node.right, right)]
            elif isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
                children = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)
                            and not (isinstance(node, ast.Call) and c is node.func and not isinstance(c, ast.Attribute))]
                queue += [(c, None) for c in children if not isinstance(c, (ast.Load, ast.Constant))]
        return [(node, role) for node, role in found if not isinstance(node, (ast.Compare, ast.BoolOp))]


def _unbroadcast(array, shape):
    """(K, *out) summed down to (K, *shape) — numpy's broadcast undone; None when it does not fit."""
    out = array.shape[1:]
    extra = len(out) - len(shape)
    if extra < 0:
        return None
    if extra:
        array = array.sum(axis=tuple(range(1, 1 + extra)))
    for axis, (n_in, n_out) in enumerate(zip(shape, array.shape[1:])):
        if n_in == 1 and n_out != 1:
            array = array.sum(axis=1 + axis, keepdims=True)
        elif n_in != n_out:
            return None
    return array


def held_vjps(diag, ev):
    """(full vᵀJ of the expression, [(node, role, code, vᵀJ with node frozen, backward line, how many
    parts read as that code)]) or None
    when forward's output is no expression the evaluator reads or it does not reproduce N."""
    found = _output_expression(diag)
    if found is None:
        return None
    src, code, value, before = found
    forward = _Forward(diag, ev, src, code, before, value)
    x = np.asarray(ev.values, dtype=float)
    env, attrs, outputs = forward.locals_at(x)
    if len(outputs) != 1:
        return None
    forward.settle(env, attrs)
    centre = forward.evaluate(env, attrs)
    if centre.shape != outputs[0].shape or not np.allclose(centre, outputs[0], rtol=1e-9, atol=1e-12):
        return None
    pieces = forward.pieces()
    frozen = []
    for node, role in pieces:
        try:
            frozen.append((node, role, forward.evaluate(env, attrs, node)))
        except Exception:  # noqa: BLE001 -- a part outside the vocabulary is not a candidate
            continue
    V = np.stack([np.reshape(row[0], centre.shape) for row in ev.cotangents])
    h = 1e-4 * max(1.0, float(np.max(np.abs(x))) if x.size else 1.0)

    def derivative(shift):
        """d/dt of the expression (and of each frozen variant) at x + t·shift."""
        total = 0.0
        parts = [0.0] * len(frozen)
        for k, w in STENCIL:
            env_k, attrs_k, _ = forward.locals_at(x + k * h * shift)
            total = total + w * forward.evaluate(env_k, attrs_k)
            for j, (node, _, held) in enumerate(frozen):
                parts[j] = parts[j] + w * forward.evaluate(env_k, attrs_k, frozen=((node, held),))
        return total / (12 * h), [p / (12 * h) for p in parts]

    whole, parts = derivative(np.ones_like(x))
    full = _unbroadcast(V * whole, x.shape)
    if full is None or not ev.fits(full.reshape(ev.numeric.shape), ev.numeric, ev.numeric_error):
        if x.size > MAX_ELEMENTS or x.size == 0:
            return None
        columns = []
        for i in range(x.size):
            shift = np.zeros_like(x)
            shift.flat[i] = 1.0
            columns.append(derivative(shift))
        flat = V.reshape(len(V), -1)
        full = np.stack([flat @ np.ravel(c[0]) for c in columns], axis=1)
        parts = [np.stack([flat @ np.ravel(c[1][j]) for c in columns], axis=1) for j in range(len(frozen))]
        if not ev.fits(full.reshape(ev.numeric.shape), ev.numeric, ev.numeric_error):
            return None
    else:
        parts = [_unbroadcast(V * p, x.shape) for p in parts]
    shape = ev.numeric.shape
    codes = [ast.get_source_segment(src.text, node) or "?" for node, _, _ in frozen]
    return full.reshape(shape), [(node, role, code, p.reshape(shape), _backward_line(diag, node), codes.count(code))
                                 for (node, role, _), p, code in zip(frozen, parts, codes)]


class _Unctx(ast.NodeTransformer):
    """``ctx.gamma`` read as ``gamma``: forward's local and backward's ctx attribute compare equal."""

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id in ("ctx", "self"):
            return ast.Name(id=node.attr, ctx=ast.Load())
        return self.generic_visit(node)


def _dump(node):
    import copy

    return ast.dump(_Unctx().visit(copy.deepcopy(node)), annotate_fields=False, include_attributes=False)


def _backward_line(diag, node):
    """The first backward statement that ran and writes ``node``'s expression (the one holding it
    constant: ``dl_dpt = -(1 - pt) ** ctx.gamma / pt``), or None."""
    from gradcli.check.diagnosis.source import backward_source, statements

    src = backward_source(diag.cls, diag.executed)
    if src is None or isinstance(node, ast.Name):
        return None
    wanted = _dump(node)
    for stmt in statements(src.tree):
        if src.ran(stmt) and wanted in {_dump(n) for n in ast.walk(stmt) if isinstance(n, ast.expr)}:
            return src.line_of(stmt)
    return None


RULE = {"factor": " (the product rule's other half)", "denominator": " (the quotient rule's other half)"}


def held_constant(ev: Evidence):
    if ev.analytic is None or ev.values is None or len(ev.outputs) != 1 or ev.forward_pieces is None:
        return None
    found = ev.forward_pieces()
    if found is None:
        return None
    for node, role, code, held, line, occurrences in found[1]:
        if not ev.fits(ev.analytic, held, ev.numeric_error) or ev.fits(ev.numeric, held, ev.numeric_error):
            continue  # A must be vᵀJ_P, and freezing P must change the gradient
        if role == "term":
            return Finding("missing_term",
                           f"backward for input {ev.name} leaves out the derivative of forward's term `{code}`: "
                           "it differentiates every other term of the sum", input=ev.index,
                           params={"variant": "forward_term", "term": f"d({code})/d{ev.name}", "forward_term": code},
                           confidence=0.8)
        return Finding("missing_term",
                       f"backward for input {ev.name} differentiates forward as if "
                       f"{'one occurrence of ' if occurrences > 1 else ''}`{code}` were a constant: "
                       f"the part of the gradient through d({code})/d{ev.name} is missing{RULE.get(role, '')}",
                       input=ev.index,
                       params={"variant": "held_constant", "term": f"d({code})/d{ev.name}·…", "factor": code,
                               "role": role, **({"at_line": line} if line is not None else {})},
                       confidence=0.8)
    return None
