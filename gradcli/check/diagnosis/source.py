"""Where in a Function's source a gradient is computed: the statements a hint quotes.

The backward's source is parsed with ``ast``; the gradient for an input is the matching element
of the last ``return`` (followed back through a plain ``name = ...`` assignment, an index write or an
in-place call). When the Function was probed, only the statements that ran count (the branch that
computed the gradient). ``hints.py`` words the advice around what this module finds.
"""
from __future__ import annotations

import ast
import inspect
import os
import re
import textwrap
from dataclasses import dataclass, field
from typing import Optional


MAX_CODE = 70  # characters of code quoted in a hint


@dataclass
class Source:
    file: str
    first_line: int  # line number of the def in the file
    text: str  # dedented source of the def
    tree: ast.FunctionDef
    # file lines that ran during one backward call (None: unknown, every statement counts as run)
    executed: Optional[frozenset] = None
    # the numbers the function's module holds under a name (``GAMMA = 2.0``): constants a
    # statement may read (never called, never anything but an int or a float)
    constants: dict = field(default_factory=dict)

    def ran(self, node) -> bool:
        """Whether ``node`` (a statement) ran in the traced backward call: the statement to quote
        is the one that computed the gradient, not one on a branch that was not taken."""
        if self.executed is None:
            return True
        first = self.line_of(node)
        return any(line in self.executed for line in range(first, first + node.end_lineno - node.lineno + 1))

    def line_of(self, node) -> int:
        return self.first_line + node.lineno - 1

    def code(self, node) -> str:
        """The source of ``node``'s statement (no comments) on one line, shortened."""
        segment = ast.get_source_segment(self.text, node) or ""
        code = " ".join(line.strip() for line in segment.splitlines())
        return code if len(code) <= MAX_CODE else code[: MAX_CODE - 1] + "…"

    def location(self, node) -> dict:
        return {"file": self.file, "line": self.line_of(node), "code": self.code(node)}


def _source(func) -> Optional[Source]:
    func = inspect.unwrap(getattr(func, "__func__", func))
    try:
        lines, first = inspect.getsourcelines(func)
        file = inspect.getsourcefile(func) or inspect.getfile(func)
    except (OSError, TypeError):
        return None
    text = textwrap.dedent("".join(lines))
    try:
        module = ast.parse(text)
    except SyntaxError:
        return None
    defs = [n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not defs:
        return None
    # decorators are part of getsourcelines' output; ast numbers lines from the first of them
    constants = {name: float(value) for name, value in getattr(func, "__globals__", {}).items()
                 if isinstance(value, (int, float)) and not isinstance(value, bool)}
    return Source(file=os.path.abspath(file), first_line=first, text=text, tree=defs[0], constants=constants)


def backward_source(cls, executed: Optional[frozenset] = None) -> Optional[Source]:
    if cls is None:
        return None
    func = cls.__dict__.get("backward") or getattr(cls, "backward", None)
    src = None if func is None else _source(func)
    if src is not None and executed:
        src.executed = frozenset(executed)
    return src


def backward_code(cls):
    """The code object of ``cls``'s backward (whose line events are traced), or None."""
    func = None if cls is None else (cls.__dict__.get("backward") or getattr(cls, "backward", None))
    func = inspect.unwrap(getattr(func, "__func__", func)) if func is not None else None
    return getattr(func, "__code__", None)


def forward_source(cls) -> Optional[Source]:
    if cls is None:
        return None
    func = cls.__dict__.get("forward") or getattr(cls, "forward", None)
    return None if func is None else _source(func)


def statements(tree):
    """The function's statements in source order (nested blocks included)."""
    return sorted((n for n in ast.walk(tree) if isinstance(n, ast.stmt) and n is not tree), key=lambda n: n.lineno)


def gradient_statement(src: Source, position: int):
    """(statement, expression) computing the gradient at ``position`` of backward's return: the
    return that ran (the last one when nothing was traced) and, for a returned name, the last
    statement that ran and gave it its value — an assignment, an augmented or index assignment
    (``g[idx] = …``, ``g[mask] *= 0.1``) or an in-place call (``g.index_add_(…)``)."""
    returns = [n for n in statements(src.tree) if isinstance(n, ast.Return) and n.value is not None]
    if not returns:
        return None, None
    ran = [n for n in returns if src.ran(n)]
    ret = (ran or returns)[-1]
    value = ret.value
    if isinstance(value, (ast.Tuple, ast.List)):
        if position >= len(value.elts):
            return ret, None
        value = value.elts[position]
    elif position != 0:
        return ret, None
    if isinstance(value, ast.Name):
        assigned = [n for n in statements(src.tree) if n.lineno < ret.lineno and src.ran(n) and (
            (isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and _assigns(n, value.id))
            or n in _index_writes(src, {value.id}))]
        if assigned:
            return assigned[-1], assigned[-1].value
    return ret, value


LAYOUT_ONLY = ("sum", "reshape", "view", "sum_to_size", "view_as", "reshape_as")


def local_derivative(src: Source, statement, expr):
    """``return grad * grad_output`` (or ``grad_output * grad``): the chain rule applied to a name
    computed earlier, so the statement that computes the gradient's values is the last one that
    gave ``grad`` its value (an assignment, or an index write ``grad[idx] = …``), not the return.
    So is a name, or such a product, only summed or reshaped to the input's shape (``return
    dfreq.sum(0)``). (statement, expression), unchanged when the return is anything else or the
    last change is an augmented assignment."""
    outer = expr
    while (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in LAYOUT_ONLY
           and isinstance(expr.func.value, (ast.Name, ast.BinOp))):
        expr = expr.func.value  # `return dfreq.sum(0)`, `(g * d).sum(0)`: reduced to the input's shape after
    cotangents = grad_output_names(src)
    if isinstance(expr, ast.Name) and expr is not outer and expr.id not in cotangents:
        local = expr.id
    elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        sides = [_laid_out_cotangent(n, cotangents) for n in (expr.left, expr.right)]  # `grad[:, None] * ratio`
        names = [n.id if isinstance(n, ast.Name) else None for n in sides]
        if sum(n in cotangents for n in names) != 1 or None in names:
            return statement, outer
        local = names[0] if names[1] in cotangents else names[1]
    else:
        return statement, outer
    assigned = [n for n in statements(src.tree) if n.lineno < statement.lineno and src.ran(n) and (
        (isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and _assigns(n, local))
        or n in _index_writes(src, {local}))]
    if not assigned or assigned[-1].value is None or isinstance(assigned[-1], ast.AugAssign):
        # `grad[idx] -= 1` adjusts part of a computed tensor: no one statement holds the values
        return statement, outer
    return assigned[-1], assigned[-1].value


def _laid_out_cotangent(node, cotangents):
    """A grad_output argument when ``node`` only lays it out (``grad[:, None]``, ``g.unsqueeze(-1)``),
    else ``node`` itself."""
    inner = node
    while True:
        if isinstance(inner, ast.Subscript):
            inner = inner.value
        elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr in (
                "unsqueeze", "view", "reshape", "expand", "expand_as", "view_as", "reshape_as"):
            inner = inner.func.value
        else:
            break
    return inner if isinstance(inner, ast.Name) and inner.id in cotangents and inner is not node else node


def statement_at(src: Source, line: int):
    """The innermost simple statement of ``src`` covering file line ``line``, or None."""
    best = None
    for stmt in statements(src.tree):
        first = src.line_of(stmt)
        if first <= line <= first + stmt.end_lineno - stmt.lineno and not hasattr(stmt, "body"):
            if best is None or stmt.end_lineno - stmt.lineno <= best.end_lineno - best.lineno:
                best = stmt
    return best


def shared_with_right_gradient(src: Source, position: int, failed_positions):
    """``return g, g, None`` where only one of the two gradients is wrong: the shared ``g`` is
    right for the other input, so the statement to fix is the return (a sign or factor missing
    at this position), not the line computing ``g``. (statement, expression) or None."""
    if failed_positions is None:
        return None
    returns = [n for n in statements(src.tree) if isinstance(n, ast.Return) and src.ran(n)]
    if not returns or not isinstance(returns[-1].value, (ast.Tuple, ast.List)):
        return None
    ret = returns[-1]
    elts = ret.value.elts
    if position >= len(elts):
        return None
    mine = _tensor_names(elts[position])
    for other, elt in enumerate(elts):
        if other == position or other in failed_positions:
            continue
        if mine & _tensor_names(elt) - grad_output_names(src):
            return ret, elts[position]
    return None


def _tensor_names(expr):
    """The names ``expr`` reads as values: not a called function's name (``_merge(dkh)`` shares no
    tensor with ``_merge(dqh)``)."""
    called = {id(n.func) for n in ast.walk(expr) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and id(n) not in called}


def _assigns(stmt, name):
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return any(isinstance(t, ast.Name) and t.id == name for t in targets)


def computed_assignment(src: Source, name: str, before):
    """The last statement that ran before ``before`` assigning ``name`` alone (``p = softmax(x)``),
    unless it unpacks the saved tensors: where a tensor backward recomputes is defined."""
    found = None
    for stmt in statements(src.tree):
        if isinstance(stmt, ast.Assign) and stmt.lineno < before.lineno and src.ran(stmt) \
                and len(stmt.targets) == 1 and _assigns(stmt, name) \
                and not (isinstance(stmt.value, ast.Attribute) and stmt.value.attr in ("saved_tensors", "saved_variables")):
            found = stmt
    return found


def grad_output_names(src: Source):
    args = [a.arg for a in src.tree.args.args]
    if args and args[0] in ("ctx", "self", "cls"):
        args = args[1:]
    if args and args[0] == "ctx":  # classmethod: (cls, ctx, grad_output)
        args = args[1:]
    return set(args) | {a.arg for a in [src.tree.args.vararg] if a is not None}


def _feeding_assignments(src: Source, expr):
    """The assignments to the names ``expr`` uses (where a constant or grad_output may hide)."""
    if expr is None:
        return []
    names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    feeding = [n for n in statements(src.tree) if isinstance(n, (ast.Assign, ast.AugAssign))
               and any(_assigns(n, name) for name in names) and src.ran(n)]
    return feeding


def constant_line(src: Source, expr, statement, factor):
    """The statement holding a numeric constant equal to ``factor`` (or its inverse for a division)."""
    candidates = {factor, abs(factor)}
    if factor:
        candidates |= {1 / factor, abs(1 / factor)}
    for stmt in [statement] + _feeding_assignments(src, expr):
        # in the gradient's own statement only its expression: a constant of another input's
        # gradient in the same return (`return g_x, -g_x / 2`) does not set this one's factor
        within = expr if stmt is statement and expr is not None else stmt
        for node in _factors(within):
            if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(
                    node.value, bool) and node.value != 1 and any(abs(node.value - c) < 1e-9 for c in candidates):
                return stmt
    return None


def _factors(tree):
    """The nodes of ``tree`` that multiply or divide a value (`2 * g`, `g / 2`, `g.mul(0.5)`), not
    a shape's `steps + 2` or a slice's `[:, 2:]`."""
    for parent in ast.walk(tree):
        if isinstance(parent, ast.BinOp) and isinstance(parent.op, (ast.Mult, ast.Div)):
            for side in (parent.left, parent.right):
                yield side.operand if isinstance(side, ast.UnaryOp) and isinstance(side.op, ast.USub) else side
        elif isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and parent.func.attr in (
                "mul", "mul_", "div", "div_", "multiply", "true_divide"):
            yield from parent.args


def first_statement_with(src: Source, predicate):
    for stmt in statements(src.tree):
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Return, ast.Expr)) and src.ran(stmt) and any(
                predicate(n) for n in ast.walk(stmt)):
            return stmt
    return None


INPLACE_CALL = re.compile(r"\.\w+_\(")


def chain(src: Source, statement, expr):
    """The gradient's statement and, transitively, the assignments that feed it, in source order."""
    # from the gradient's own expression: another input's gradient in the same return
    # (`return grad_pred, -g * clipped`) is fed by statements that do not make this one
    found = [statement]
    frontier = [expr if expr is not None and isinstance(statement, ast.Return) else statement]
    end = getattr(last_return(src), "lineno", statement.lineno)
    while frontier:
        node = frontier.pop()
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        for stmt in _feeding_assignments(src, node) + _index_writes(src, names):
            if stmt not in found and stmt.lineno <= end:
                found.append(stmt)
                frontier.append(stmt.value)
    return sorted(found, key=lambda n: n.lineno)


SIGN_OPS = (ast.Sub, ast.USub)  # where a sign can be wrong
FACTOR_OPS = (ast.Mult, ast.Div)  # where a factor can be wrong


def shared_statement(src: Source, positions, right_positions=(), ops=SIGN_OPS):
    """The last assignment with one of ``ops`` (a subtraction or a unary minus: a sign; a product or
    a quotient: a factor) feeding the gradients at every one of ``positions`` (two or more) and at
    none of ``right_positions``: where a mistake those gradients share is made. None if none."""
    chains = []
    for position in list(positions) + list(right_positions):
        statement, expr = gradient_statement(src, position)
        if statement is None or expr is None:
            return None
        # from the gradient's own expression: a tuple return holds the other gradients too
        chains.append({id(s): s for s in chain(src, expr, expr)})
    shared = {k: s for k, s in chains[0].items() if all(k in c for c in chains[1:len(positions)])}
    for other in chains[len(positions):]:
        shared = {k: s for k, s in shared.items() if k not in other}
    # only a statement where that mistake can be made is named (``ops``: node types, or a predicate)
    holds = ops if callable(ops) and not isinstance(ops, tuple) else (lambda n: isinstance(n, ops))
    assignments = [s for s in shared.values() if isinstance(s, ast.Assign) and any(
        holds(n) for n in ast.walk(s.value))]
    return max(assignments, key=lambda s: s.lineno) if assignments else None


def _index_writes(src: Source, names):
    """``g[idx] = …``, ``g[idx] += …`` and ``g.index_add_(…)``-style statements on one of ``names``."""
    found = []
    for stmt in statements(src.tree):
        if not src.ran(stmt):
            continue
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
            stmt, ast.AugAssign) else []
        if any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in names
               for t in targets):
            found.append(stmt)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(
                stmt.value.func, ast.Attribute) and isinstance(stmt.value.func.value, ast.Name) and \
                stmt.value.func.value.id in names:
            found.append(stmt)
    return found


def in_chain(src: Source, statement, expr, names, last: bool = False):
    """The first (``last``: the last) statement of the gradient's chain that calls one of ``names``
    (or assigns into an index, for "[]=")."""
    found = chain(src, statement, expr)
    for stmt in reversed(found) if last else found:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Attribute) and node.attr in names:
                return stmt
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
        if "[]=" in names and isinstance(stmt, (ast.Assign, ast.AugAssign)) and any(
                isinstance(t, ast.Subscript) for t in targets):
            return stmt
    return None


NON_ACCUMULATING = ("index_copy", "index_copy_", "scatter", "scatter_", "index_put", "index_put_", "masked_scatter",
                    "masked_scatter_")


def overwrite_statement(src: Source, position: int):
    """The statement of the gradient's chain that *assigns* computed values into it — ``g[idx] =
    expr`` (not a constant: zeroing a mask is no overwrite) or a non-accumulating scatter /
    index_copy — or None: the source side of a not_accumulated finding."""
    statement, expr = gradient_statement(src, position)
    if statement is None:
        return None
    for stmt in chain(src, statement, expr if expr is not None else statement):
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Subscript) for t in stmt.targets) and not (
                isinstance(stmt.value, ast.Constant) or (isinstance(stmt.value, ast.UnaryOp)
                                                         and isinstance(stmt.value.operand, ast.Constant))):
            return stmt
        if any(isinstance(n, ast.Attribute) and n.attr in NON_ACCUMULATING for n in ast.walk(stmt)):
            return stmt
    return None


def inplace_statement(src: Source, after_save: bool = False):
    """The first simple statement that modifies a tensor in place: ``x.mul_(2)``, ``x += 1``, ``x[0] = 0``
    (with ``after_save``: the first after the ``save_for_backward`` call)."""
    start = 0
    if after_save:
        saves = [n.lineno for n in ast.walk(src.tree) if isinstance(n, ast.Attribute) and n.attr == "save_for_backward"]
        start = min(saves) if saves else 0
    for stmt in statements(src.tree):
        if stmt.lineno < start or (after_save and "save_for_backward" in src.code(stmt)):
            continue
        if isinstance(stmt, ast.AugAssign):
            return stmt
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Subscript) for t in stmt.targets):
            return stmt
        if isinstance(stmt, (ast.Expr, ast.Assign, ast.Return)) and INPLACE_CALL.search(src.code(stmt)):
            return stmt
    return None


def last_return(src):
    if src is None:
        return None
    returns = [n for n in statements(src.tree) if isinstance(n, ast.Return)]
    ran = [n for n in returns if src.ran(n)]
    return (ran or returns)[-1] if returns else None


def fed_names(src, expr):
    """Names used by the assignments that feed ``expr`` (grad_output may enter one step earlier)."""
    used = set()
    for stmt in _feeding_assignments(src, expr):
        used |= {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
    return used & grad_output_names(src)

