"""The additive terms of the statement that computes one input's gradient, evaluated.

``grad_output * (1 / (2 * x.sqrt()) + 1 / x ** 2)`` has two terms, ``grad_output * (1 / (2 *
x.sqrt()))`` and ``grad_output * (1 / x ** 2)``; a wrong sign on one of them leaves a difference of
exactly twice that term, which is what ``term_sign`` looks for. To know a term's values the
expression is walked over a *closed* vocabulary — numbers, the backward's grad_output arguments,
the tensors forward saved, ``ctx`` attributes, names assigned earlier in backward, + − × ÷ **, and
a fixed list of elementwise functions (exp, log, sqrt, sigmoid, ...). Anything else (a call
outside the list, indexing, a loop) makes the whole evaluation give up; nothing is ever ``eval``ed.
"""
from __future__ import annotations

import ast

import numpy as np

from gradcli.check.diagnosis.evaluator import Unsupported, _context, _Evaluator, statement_context
from gradcli.check.diagnosis.source import gradient_statement

MAX_TERMS = 8


def _inline(node, evaluator, depth=0):
    """A name assigned a sum in backward (``d = a + b``) is expanded, so its terms are visible."""
    if isinstance(node, ast.Name) and depth < 3 and node.id not in evaluator.env:
        for stmt in reversed(evaluator.assignments):
            if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == node.id:
                if isinstance(stmt.value, ast.BinOp) and isinstance(stmt.value.op, (ast.Add, ast.Sub, ast.Mult,
                                                                                    ast.Div)):
                    return stmt.value
                break
    return node


def _terms(node, evaluator, depth=0):
    """[(sign, [(factor node, 'mul' | 'div')])] with the sum distributed over products."""
    node = _inline(node, evaluator, depth)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        right = _terms(node.right, evaluator, depth + 1)
        if isinstance(node.op, ast.Sub):
            right = [(-s, f) for s, f in right]
        return _terms(node.left, evaluator, depth + 1) + right
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return [(-s, f) for s, f in _terms(node.operand, evaluator, depth + 1)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left, right = _terms(node.left, evaluator, depth + 1), _terms(node.right, evaluator, depth + 1)
        if len(left) == 1 or len(right) == 1:
            return [(s1 * s2, f1 + f2) for s1, f1 in left for s2, f2 in right]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left = _terms(node.left, evaluator, depth + 1)
        return [(s, f + [(node.right, "div")]) for s, f in left]
    return [(1, [(node, "mul")])]


def _code(sign, factors):
    parts = []
    if len(factors) > 1:  # a factor 1 left over from distributing `1 / x` is noise in the quoted term
        factors = [(f, op) for f, op in factors if not (op == "mul" and isinstance(f, ast.Constant) and f.value == 1)]
    for factor, op in factors:
        text = ast.unparse(factor)
        if not isinstance(factor, (ast.Name, ast.Constant, ast.Call, ast.Attribute, ast.Subscript)):
            text = f"({text})"
        parts.append(("/ " if op == "div" else "* ") + text if parts else (text if op == "mul" else f"1 / {text}"))
    return ("-" if sign < 0 else "") + " ".join(parts)


def gradient_terms(src, position, rows, grad_names, saved, ctx_attrs):
    """``(statement, [(code, values (K, ...))])`` for the additive terms of the gradient at
    ``position`` of backward's return, one value per cotangent row. One term outside the
    evaluator's vocabulary (a one_hot, an index) has values None: the caller recovers it as what
    backward returned minus the other terms. None when two or more terms lie outside it."""
    statement, expr = gradient_statement(src, position)
    if statement is None or expr is None or len(grad_names) != len(rows[0]):
        return None
    per_row, codes = [], None
    for row in rows:
        evaluator = _Evaluator(src, statement.lineno + 1 if isinstance(statement, ast.Assign) else statement.lineno,
                               dict(zip(grad_names, row)), saved, ctx_attrs)
        if isinstance(statement, ast.Assign):
            evaluator.assignments = [a for a in evaluator.assignments if a is not statement]
        terms = _terms(expr, evaluator)
        if not 2 <= len(terms) <= MAX_TERMS:
            return None
        values = []
        with np.errstate(all="ignore"):
            for sign, factors in terms:
                try:
                    value = 1.0
                    for factor, op in factors:
                        part = evaluator.value(factor)
                        value = value / part if op == "div" else value * part
                    values.append(sign * np.asarray(value, dtype=float))
                except (Unsupported, ValueError, TypeError, IndexError):
                    values.append(None)  # outside the vocabulary: at most one, recovered as the residual
        if sum(v is None for v in values) > 1:
            return None
        codes = [_code(s, f) for s, f in terms]
        per_row.append(values)
    return statement, [(codes[t], [row[t] for row in per_row]) for t in range(len(codes))]

def terms_for(probe, cls, position, rows, executed=None):
    """``gradient_terms`` for a Function re-run by ``probe``: the saved tensors and ``ctx``
    attributes come from one more forward call at the probe's values."""
    context = _context(probe, cls, position, rows, executed)
    if context is None:
        return None
    src, shaped, args, saved, ctx_attrs = context
    found = gradient_terms(src, position, shaped, args, saved, ctx_attrs)
    return None if found is None else found[1]


def substitutions_for(probe, cls, position, rows, executed=None):
    """``(names, evaluate)`` for the gradient statement: the tensor names it reads (saved tensors
    and names assigned in backward, not grad_output), and ``evaluate(name, value)`` giving the
    statement's value per cotangent row with ``name`` bound to ``value`` (None outside the
    vocabulary). None when the statement cannot be evaluated as written."""
    context = statement_context(probe, cls, position, rows, executed)
    if context is None:
        return None
    src, shaped, args, saved, ctx_attrs, statement, expr, before = context

    def evaluate(name=None, value=None):
        per_row = []
        for row in shaped:
            env = dict(zip(args, row))
            if name is not None:
                env[name] = value
            evaluator = _Evaluator(src, before, env, saved, ctx_attrs)
            if isinstance(statement, ast.Assign):
                evaluator.assignments = [a for a in evaluator.assignments if a is not statement]
            try:
                with np.errstate(all="ignore"):
                    per_row.append(np.asarray(evaluator.value(expr), dtype=float))
            except (Unsupported, ValueError, TypeError, IndexError):
                return None
        return per_row

    if evaluate() is None:
        return None
    # a name read only inside comparisons decides a mask: swapping it can move the mask's edge
    # onto the right one, but then the threshold is the mistake (a region's story)
    masked = {id(n) for c in ast.walk(expr) if isinstance(c, ast.Compare) for n in ast.walk(c)}
    names = sorted({n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and id(n) not in masked} - set(args)
                   - {"ctx", "self", "torch", "np", "math", "F"})
    return names, evaluate


def backward_names_for(probe, cls, position, rows, executed=None):
    """(name, value) of the tensors backward has at hand before the gradient statement that do not
    depend on grad_output — the saved tensors as it unpacks them and the names it assigns
    (``ds = s * (1 - s)``) — evaluated over the closed vocabulary; the terms a product rule's
    missing half is made of. [] when the statement's context is unavailable."""
    return [(name, values[0]) for name, values in backward_rows_for(probe, cls, position, rows, executed)
            if values[0].ndim and all(v.shape == values[0].shape and np.array_equal(v, values[0]) for v in values[1:])]


def backward_rows_for(probe, cls, position, rows, executed=None):
    """(name, [value per cotangent row]) of the tensors backward has at hand before the gradient
    statement, those that depend on grad_output too (``w = mask * grad_out / n``), 0-d ones (a
    saved ``r = x·Mx / x·x``) and the grad_output arguments themselves included. [] when the
    statement's context is unavailable."""
    context = statement_context(probe, cls, position, rows, executed)
    if context is None:
        return []
    src, shaped, args, saved, ctx_attrs, statement, expr, before = context
    evaluators = [_Evaluator(src, before, dict(zip(args, row)), saved, ctx_attrs) for row in shaped]
    names = []
    for stmt in evaluators[0].assignments:
        for target in stmt.targets:
            for node in ast.walk(target):
                if isinstance(node, ast.Name) and node.id not in names and node.id not in args:
                    names.append(node.id)
    found = []
    for name in names:
        try:
            with np.errstate(all="ignore"):
                values = [np.asarray(e.name(name), dtype=float) for e in evaluators]
        except (Unsupported, ValueError, TypeError, IndexError, ArithmeticError):
            continue
        if not all(np.all(np.isfinite(v)) for v in values):
            continue
        found.append((name, values))
    return found + [(name, [np.asarray(e.env.get(name, row[k]), dtype=float) for e, row in zip(evaluators, shaped)])
                    for k, name in enumerate(args)]
