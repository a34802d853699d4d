"""``missing_term``: a factor of forward's product held constant — the product rule's other half
dropped.

Forward writes its output as a product of factors, y = F₁·F₂·… (``x * torch.sigmoid(beta * x)``,
``-(1 - pt) ** gamma * pt.log()``). A backward that differentiates every factor but one, F_k,
held as if it were a constant, gives exactly v·(dy/dx − F_k′·Π_{i≠k} F_i). For an elementwise
forward (one output shaped like the input, its Jacobian diagonal: checked against the numerical
gradient) each factor is evaluated over forward's own locals (recorded by a line tracer when
forward returns, at x and at x ± h, all elements moved at once) with the closed-vocabulary
evaluator, F_k′ by central differences; a finding needs A to fit that for every cotangent while
N does not. Nothing is ``eval``ed."""
from __future__ import annotations

import ast

import numpy as np

from gradcli.check.diagnosis.evidence import Evidence
from gradcli.check.report import Finding


def _factors(node, sign=1.0):
    """The top-level factors of a product (through unary minus): [(node, ...)], and its sign."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left, s1 = _factors(node.left)
        right, s2 = _factors(node.right)
        return left + right, sign * s1 * s2
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner, s = _factors(node.operand)
        return inner, -sign * s
    return [node], sign


def _terms(node, sign=1.0):
    """The top-level terms of a sum (through ``+``, ``-`` and unary minus): [(node, sign)]."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        right = -1.0 if isinstance(node.op, ast.Sub) else 1.0
        return _terms(node.left, sign) + _terms(node.right, sign * right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _terms(node.operand, -sign)
    return [(node, sign)]


def factor_values(diag, ev):
    """(sign, [(code, values at x, at x + h, at x − h, backward line)], h) of the top-level
    factors of forward's output expression, evaluated over forward's locals; None when forward is
    not such a product or a factor is outside the evaluator's vocabulary."""
    found = _output_expression(diag)
    if found is None:
        return None
    src, code, value, before = found
    factors, sign = _factors(value)
    if len(factors) < 2:
        return None
    values, h = _evaluated(diag, ev, src, code, before, factors)
    where = _backward_lines(diag, factors)
    return sign, [(ast.get_source_segment(src.text, node) or "?", *v, line)
                  for node, v, line in zip(factors, values, where)], h


def term_values(diag, ev):
    """([(code, sign, values at x, at x + h, at x − h)], h) of the top-level terms of forward's
    output expression that the evaluator reads (the others, e.g. a constant ``math.log(2.0)``,
    left out); None when forward's output is not a sum of two or more terms."""
    found = _output_expression(diag)
    if found is None:
        return None
    src, code, value, before = found
    terms = _terms(value)
    if len(terms) < 2:
        return None
    values, h = _evaluated(diag, ev, src, code, before, [node for node, _ in terms], unreadable=None)
    out = [(ast.get_source_segment(src.text, node) or "?", sign, *v)
           for (node, sign), v in zip(terms, values) if v is not None]
    return (out, h) if out else None


def _output_expression(diag):
    """(forward's source, code object, the returned expression, its line) or None."""
    from gradcli.check.diagnosis.source import forward_source, statements

    src = forward_source(diag.cls)
    func = diag.cls.__dict__.get("forward") or getattr(diag.cls, "forward", None)
    code = getattr(getattr(func, "__func__", func), "__code__", None)
    if src is None or code is None:
        return None
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


def _evaluated(diag, ev, src, code, before, nodes, unreadable="raise"):
    """Each node's values over forward's locals at x, x + h and x − h (all elements moved at once;
    forward runs three times whatever the number of nodes). A node outside the evaluator's
    vocabulary raises, or with ``unreadable=None`` gets None in its place."""
    from gradcli.check.diagnosis.evaluator import _Evaluator
    from gradcli.check.diagnosis.probe import _LineTrace, _to_numpy

    x = ev.values
    h = 1e-6 * max(1.0, float(np.max(np.abs(x))))
    evaluated = [[] for _ in nodes]
    for shifted in (x, x + h, x - h):
        local_names = {}
        with _LineTrace(code, set(), local_names):
            diag.probe.forward({ev.index: shifted})
        env = {k: (np.asarray(_to_numpy(v), dtype=float) if hasattr(v, "shape") and hasattr(v, "dtype") else v)
               for k, v in local_names.items() if not isinstance(v, type)}
        for k, node in enumerate(nodes):
            if evaluated[k] is None:
                continue
            try:
                value = _Evaluator(src, before, env, [], {}).value(node)
            except Exception:  # noqa: BLE001 -- outside the vocabulary
                if unreadable == "raise":
                    raise
                evaluated[k] = None
                continue
            evaluated[k].append(np.broadcast_to(np.asarray(value, dtype=float), x.shape))
    return evaluated, h


class _Unctx(ast.NodeTransformer):
    """``ctx.gamma`` read as ``gamma``: forward's local and backward's ctx attribute compare equal."""

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id in ("ctx", "self"):
            return ast.Name(id=node.attr, ctx=ast.Load())
        return self.generic_visit(node)


def _dump(node):
    import copy

    return ast.dump(_Unctx().visit(copy.deepcopy(node)), annotate_fields=False, include_attributes=False)


def _backward_lines(diag, factors):
    """Per factor, the first backward statement that ran and writes that factor's expression (the
    one holding it constant: ``dl_dpt = -(1 - pt) ** ctx.gamma / pt``), or None."""
    from gradcli.check.diagnosis.source import backward_source, statements

    src = backward_source(diag.cls, diag.executed)
    found = [None] * len(factors)
    if src is None:
        return found
    wanted = [_dump(node) for node in factors]
    for stmt in statements(src.tree):
        if not src.ran(stmt):
            continue
        dumps = {_dump(n) for n in ast.walk(stmt) if isinstance(n, ast.expr)}
        for k, dump in enumerate(wanted):
            if found[k] is None and dump in dumps:
                found[k] = src.line_of(stmt)
    return found


def held_constant_factor(ev: Evidence):
    if ev.analytic is None or ev.values is None or len(ev.outputs) != 1 or ev.support() < 3:
        return None
    if ev.outputs[0].shape != ev.values.shape or ev.forward_factors is None:
        return None
    found = ev.forward_factors()
    if found is None:
        return None
    sign, factors, h = found
    V = np.stack([np.reshape(row[0], ev.shape) for row in ev.cotangents])
    products = [sign * np.prod([f[i] for f in factors], axis=0) for i in (1, 2, 3)]
    dy = (products[1] - products[2]) / (2 * h)
    if not ev.fits(V * dy, ev.numeric, ev.numeric_error):
        return None  # not elementwise (or the factors are not forward's output): no evidence
    for k, (code, value, up, down, line) in enumerate(factors):
        others = sign * np.prod([f[1] for j, f in enumerate(factors) if j != k], axis=0)
        held = V * (dy - others * (up - down) / (2 * h))
        if ev.fits(ev.analytic, held, ev.numeric_error) and not ev.fits(ev.numeric, held, ev.numeric_error):
            return Finding("missing_term",
                           f"backward for input {ev.name} differentiates forward's product as if `{code}` were a "
                           f"constant: the term d({code})/d{ev.name} times the other factors is missing (the product "
                           "rule's other half)", input=ev.index,
                           params={"variant": "held_constant", "term": f"d({code})/d{ev.name}·…", "factor": code,
                                   **({"at_line": line} if line is not None else {})},
                           confidence=0.8)
    return None


def dropped_forward_term(ev: Evidence):
    """Forward's output a sum of terms, elementwise in the input, and A = v·(y′ − T_k′) for one
    term T_k: backward differentiates every term but that one (logcosh written as sign(x), the
    log1p correction's derivative left out)."""
    if ev.analytic is None or ev.values is None or len(ev.outputs) != 1 or ev.support() < 3:
        return None
    if ev.outputs[0].shape != ev.values.shape or getattr(ev, "forward_terms", None) is None:
        return None
    V = np.stack([np.reshape(row[0], ev.shape) for row in ev.cotangents])
    if not _elementwise(ev, V):
        return None
    found = ev.forward_terms()
    if found is None:
        return None
    terms, h = found
    dy = ev.numeric / np.where(V == 0, 1.0, V)
    for code, sign, value, up, down in terms:
        derivative = sign * (up - down) / (2 * h)
        if ev.support(derivative[None]) < 2:
            continue  # a constant term has no derivative to drop
        held = V * (dy - derivative)
        if ev.fits(ev.analytic, held, ev.numeric_error) and not ev.fits(ev.numeric, held, ev.numeric_error):
            return Finding("missing_term",
                           f"backward for input {ev.name} leaves out the derivative of forward's term `{code}`: "
                           "it differentiates every other term of the sum", input=ev.index,
                           params={"variant": "forward_term", "term": f"d({code})/d{ev.name}", "forward_term": code},
                           confidence=0.8)
    return None


def _elementwise(ev, V):
    """N = v·d elementwise, one d for every cotangent (each output reads its own input element)."""
    if np.any(V == 0):
        return False
    ratios = ev.numeric / V
    return ev.fits(ev.numeric, V * ratios[:1], ev.numeric_error)
