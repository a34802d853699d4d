"""One edit of the gradient's statements that makes backward right, exactly.

The statement computing an input's gradient and the assignments feeding it are evaluated as
written (``evaluator.py``: a closed vocabulary, nothing ``eval``ed); when that reproduces what
backward returned, single edits are tried, each a mistake people make, and a finding is named
only when the edited statements give the numerical gradient at every element for every cotangent
(while the unedited ones do not):

- ``wrong_axis``: one reduction (``sum``/``mean``/``softmax``/``log_softmax``/``cumsum``) with another
  literal dim — a softmax backward summing over the query dim instead of the key dim;
- ``transposed``: one operand whose last two dims are equal (a name, a ``.T``/``.t()``/``.mT``, a
  ``.transpose(a, b)``) with those two dims swapped — ``ds @ q`` where ``ds.T @ q`` is needed,
  batched (``dscores.transpose(-2, -1) @ q``) too;
- ``wrong_variable``: one occurrence of a tensor (a saved tensor, a name assigned in backward)
  replaced by an input, the output, or exp/sigmoid/tanh of one, or by another saved tensor, of the
  same shape or one that broadcasts to it — the logits where their sigmoid is needed, the hard
  one-hot targets where the smoothed ones are, x where PReLU's slope is;
- ``term_sign``: one operand of a ``+``/``-`` (or of a unary minus) negated — the sign of one term
  of a sum, wherever the sum sits in the expression (``0.5 * (1 + t) - 0.5 * x * ...``).

The edited statement is the finding's location (``params.at_line``), so the hint quotes it.
"""
from __future__ import annotations

import ast
import time

import numpy as np

from gradcli.check.diagnosis.edit_sites import every_occurrence, saved_variables, written_dim
from gradcli.check.diagnosis.evaluator import DIM_OPS, Unsupported, _Evaluator, statement_context
from gradcli.check.diagnosis.evidence import nice_number, short_number
from gradcli.check.diagnosis.fitted import constant_term_left_out
from gradcli.check.diagnosis.source import chain, grad_output_names, gradient_statement
from gradcli.check.report import Finding

# a mask's comparison: its strictness (`p >= 0` where `p > 0` keeps sparsemax's support) or inverted
OTHER_COMPARISONS = {ast.Gt: (ast.GtE, ast.LtE), ast.GtE: (ast.Gt, ast.Lt), ast.Lt: (ast.LtE, ast.GtE),
                     ast.LtE: (ast.Lt, ast.Gt), ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,)}
SYMBOLS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!="}
MAX_EDITS = 400  # evaluations of edited statements per input (each is a few small numpy ops)
BUDGET_S = 2.0  # and at most this much CPU time (large tensors; not wall time: load must not change findings)
FUNCTIONS = (("{z}", lambda z: z), ("exp({z})", np.exp), ("sigmoid({z})", lambda z: 1 / (1 + np.exp(-z))),
             ("tanh({z})", np.tanh))


def statement_edits(probe, cls, position, rows, executed=None):
    """``(edits, evaluate, src)``: the candidate edits of the gradient's statements as
    ``(kind, node, statement, argument)``, and ``evaluate(edit)`` giving the value per cotangent
    row with that edit made (None: outside the vocabulary); None when the statements cannot be
    evaluated as written."""
    context = statement_context(probe, cls, position, rows, executed)
    if context is None:
        return None
    src, shaped, args, saved, ctx_attrs, statement, expr, before = context
    cotangents = grad_output_names(src)

    seen = {}  # the ndim of the last transposed operand (its text: `.T` or `.mT`)
    occurrences = {}  # id(first occurrence) -> every occurrence of that name in one statement

    def transpose(value):
        seen["ndim"] = np.ndim(value)
        return _transpose(value)

    def evaluate(edit=None):
        per_row = []
        for row in shaped:
            evaluator = _Evaluator(src, before, dict(zip(args, row)), saved, ctx_attrs)
            if isinstance(statement, ast.Assign):
                evaluator.assignments = [a for a in evaluator.assignments if a is not statement]
            if edit is not None:
                kind, node, _, argument = edit
                if kind == "dim":
                    evaluator.dim_overrides[id(node)] = argument
                elif kind == "transpose":
                    evaluator.overrides[id(node)] = transpose
                elif kind == "sign":
                    evaluator.overrides[id(node)] = np.negative
                elif kind == "compare":
                    evaluator.compare_overrides[id(node)] = argument
                elif kind == "threshold":
                    evaluator.overrides[id(node)] = _replace(argument[1])
                else:  # a tensor, or (a name backward computes from grad_output) one value per row
                    value = argument[1][len(per_row)] if isinstance(argument[1], list) else argument[1]
                    for each in occurrences.get(id(node), [node]) if kind == "every" else [node]:
                        evaluator.overrides[id(each)] = _replace(value)
            try:
                with np.errstate(all="ignore"):
                    per_row.append(np.asarray(evaluator.value(expr), dtype=float))
            except (Unsupported, ValueError, TypeError, IndexError, ArithmeticError):
                return None
        return per_row

    if evaluate() is None:
        return None
    saved_named = saved_variables(src, saved)
    edits = []
    for stmt in chain(src, statement, expr):
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Return)) else None
        if value is None or (isinstance(stmt, ast.Assign) and not all(isinstance(t, ast.Name) for t in stmt.targets)):
            continue
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and not isinstance(value, ast.Name) and not any(isinstance(n, ast.Compare) for n in ast.walk(value)):
            # the whole value of a name backward recomputes (`probs = softmax(...)` without forward's
            # mask) replaced by the tensor that is needed (the saved one); not a recomputed mask
            # (`m = (x > t).float()`): that is a region's story, its threshold is what is wrong
            edits.append(("variable", value, stmt, None))
        # a tensor inside a comparison decides a mask: replacing it can move the mask's edge onto the
        # right one (x by the output: zero exactly where |x| ≤ λ), but that is a region: none replaced
        masked = {id(n) for c in ast.walk(value) if isinstance(c, ast.Compare) for n in ast.walk(c)}
        every_occurrence(value, masked, cotangents, edits, occurrences, stmt)
        for node in ast.walk(value):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in DIM_OPS \
                    and node.func.attr != "unsqueeze":
                written = written_dim(node)
                # one dim, or (sum/mean) two: a LayerNorm's dim=-1 where an InstanceNorm needs (2, 3)
                pairs = [(a, b) for a in range(4) for b in range(a + 1, 4)] \
                    if node.func.attr in ("sum", "mean") else []
                for dim in [0, 1, 2, 3, -1] + pairs:
                    if dim != written:
                        edits.append(("dim", node, stmt, dim))
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in cotangents:
                # a square grad_output used untransposed (a Gram matrix's `x @ g` where `x @ g.T`,
                # or the product rule's half `x @ g.T` dropped); never replaced by a tensor, only
                # by a name backward computed from it (`h.T @ grad` where `h.T @ d`, d = grad·tanh′)
                edits.append(("transpose", node, stmt, None))
                edits.append(("inner", node, stmt, None))
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                    and node.id not in ("ctx", "self", "torch", "np", "math", "F"):
                edits.append(("transpose", node, stmt, None))
                if id(node) not in masked:
                    edits.append(("variable", node, stmt, None))
            elif (isinstance(node, ast.Attribute) and node.attr in ("T", "mT")) or (
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("t", "transpose", "swapaxes", "swapdims")):
                edits.append(("transpose", node, stmt, None))
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
                for operand in (node.left, node.right):
                    if not (isinstance(operand, ast.BinOp) and isinstance(operand.op, (ast.Add, ast.Sub))):
                        edits.append(("sign", operand, stmt, None))  # a nested sum: its own terms are tried
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
                edits.append(("sign", node, stmt, None))
            if isinstance(node, ast.Compare) and len(node.ops) == 1:
                edits += [("compare", node, stmt, op) for op in OTHER_COMPARISONS.get(type(node.ops[0]), ())]
                literal = node.comparators[0]  # a literal threshold where a scalar ctx attribute is needed
                edits += [("threshold", literal, stmt, (f"ctx.{attr}", float(v))) for attr, v in sorted(ctx_attrs.items())
                          if _numeric_literal(literal) and _is_number(v) and float(v) != _numeric_literal(literal, True)]
    evaluate.seen = seen
    return edits, evaluate, src, saved_named


_is_number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)  # noqa: E731


def _numeric_literal(node, value=False):
    """Whether ``node`` is a literal number (``1.0``, ``-0.5``); with ``value``, that number."""
    sign, node = (-1.0, node.operand) if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) else (1.0, node)
    ok = isinstance(node, ast.Constant) and _is_number(node.value)
    return (sign * float(node.value) if ok else None) if value else ok


def _dims(dim) -> list:
    return list(dim) if isinstance(dim, (tuple, list)) else [dim]


def _transpose(value):
    value = np.asarray(value)
    if value.ndim < 2 or value.shape[-1] != value.shape[-2]:
        raise Unsupported("transpose")
    return np.swapaxes(value, -1, -2)


def _replace(new):
    def edit(value):
        shape = np.shape(value)
        if np.shape(new) != shape:
            try:  # a lower-rank tensor that broadcasts to it (PReLU's per-channel slope for x)
                if np.ndim(new) >= len(shape) or np.broadcast_shapes(np.shape(new), shape) != shape:
                    raise Unsupported("shape")
            except ValueError:
                raise Unsupported("shape") from None
            return np.broadcast_to(new, shape)
        return new
    return edit


def _stack(ev, rows):
    try:
        return None if rows is None else np.stack([np.broadcast_to(r, ev.shape) for r in rows])
    except ValueError:
        return None


def _variables(ev):
    variables = [(ev.name, ev.values)] + [(o.name, o.values) for o in ev.others.values() if o.values is not None]
    if len(ev.outputs) == 1:
        variables.append(("output", ev.outputs[0]))
    with np.errstate(all="ignore"):
        found = [(form.format(z=label), f(np.asarray(z, dtype=float))) for label, z in variables for form, f in FUNCTIONS]
        if len(ev.outputs) == 1:  # y = h·S read where ∂y/∂h = S = y/h is needed (the output, not divided)
            out = np.asarray(ev.outputs[0], dtype=float)
            for label, z in variables[:-1]:
                z = np.asarray(z, dtype=float)
                if z.shape == out.shape or z.size == 1:
                    found.append((f"output / {label}", out / z))
    return [(label, z) for label, z in found if np.all(np.isfinite(z))]


def _output_names(ev, saved_named) -> set:
    """The saved names holding forward's output: only the output read itself may be y/h where
    ∂(h·S)/∂h is meant (for a ReLU-like y, y/x is the derivative whatever a mask read there)."""
    if len(ev.outputs) != 1:
        return set()
    out = np.asarray(ev.outputs[0], dtype=float)
    return {label for label, value in saved_named if np.shape(value) == out.shape and np.allclose(value, out)}

def _locals(ev):  # the names backward computes, not from grad_output: `fx` read where `fy` is needed
    return list(ev.backward_names() or []) if ev.backward_names is not None else []


def operand_transposed(ev):
    """``statement_edit`` with transposes only, tried before the coupling-axes rule: a batched
    square operand used untransposed (``dscores @ q``) changes which axes couple, and the single
    transpose that makes it right exactly is the simpler, more specific story. Not grad_output
    itself: `g.sum(1)` where `g.sum(0)` is needed is a dim's story, tried in ``statement_edit``
    before the transposes. Where a dim edit fits as well (``(g * u).sum(2)`` where ``.sum(1)`` is
    needed is fixed too by ``.mT.sum(2)``) the dim is the mistake."""
    found = statement_edit(ev, kinds=("transpose",), cotangents=False)
    if found is None:
        return None
    return statement_edit(ev, kinds=("dim",), cotangents=False) or found


def _edited(ev, kinds, cotangents=True):
    """(candidate, its value stacked per cotangent row, src, batched) for each single edit of the
    given kinds whose statements evaluate to something other than A, within the budget."""
    if ev.analytic is None or ev.values is None or ev.edits is None or ev.support() < 3:
        return
    found = ev.edits()
    if not found:
        return
    edits, evaluate, src, saved_named = found
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error
    written = _stack(ev, evaluate())
    if written is None or not ev.fits(written, A) or ev.fits(A, N, E):
        return
    variables = outputs = None
    tried, started = 0, time.process_time()
    for kind in kinds:
        skip = set() if cotangents else grad_output_names(src)
        for edit in (e for e in edits if e[0] == kind and getattr(e[1], "id", None) not in skip):
            candidates = [edit]
            if kind in ("variable", "every"):
                if variables is None:
                    variables, outputs = _variables(ev) + saved_named + _locals(ev), _output_names(ev, saved_named)
                signed = _sign_argument(edit[1], edit[2])
                candidates = [(kind, edit[1], edit[2], v) for v in variables
                              if v[0] != getattr(edit[1], "id", None) and not (
                                  signed and np.all(np.asarray(v[1], dtype=float) > 0)) and not (
                                  v[0].startswith("output / ") and getattr(edit[1], "id", None) not in outputs)]
            elif kind == "inner":
                candidates = [(kind, edit[1], edit[2], v) for v in _followers(ev, grad_output_names(src))]
            for candidate in candidates:
                tried += 1
                if tried > MAX_EDITS or time.process_time() - started > BUDGET_S:
                    return
                changed = _stack(ev, evaluate(candidate))
                if changed is not None and not ev.fits(changed, A):
                    yield candidate, changed, src, evaluate.seen.get("ndim", 2) > 2


def _sign_argument(node, stmt) -> bool:
    """Whether ``node`` is what ``torch.sign(·)`` / ``·.sign()`` reads in ``stmt``: a positive
    tensor there (exp(x), sigmoid(x)) makes the sign 1 — the sign deleted, not a tensor misread."""
    for call in ast.walk(stmt):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in ("sign", "sgn"):
            if (call.args and call.args[0] is node) or (not call.args and call.func.value is node):
                return True
    return False


def _followers(ev, arguments):
    """(name, [value per row]) of the names backward computes from grad_output before the gradient
    statement (``d = grad * (1 - y * y)``), not grad_output itself."""
    found = []
    for name, values in (ev.backward_rows() or []) if ev.backward_rows is not None else ():
        if name in arguments or len(values) != len(ev.kinds) or not np.ndim(values[0]):
            continue
        if any(not np.array_equal(values[0], v) for v in values[1:]):
            found.append((name, list(values)))
    return found


def statement_edit(ev, kinds=("dim", "transpose", "variable", "inner", "sign", "every", "compare", "threshold"),
                   cotangents=True):
    """The first single edit (a dim, a transpose, a tensor, the sign of a term) that makes the
    gradient statements give the numerical gradient exactly."""
    fallback = None
    for candidate, changed, src, batched in _edited(ev, kinds, cotangents):
        if not ev.fits(changed, ev.numeric, ev.numeric_error):
            continue
        if candidate[0] == "variable" and "(" in candidate[3][0] and constant_term_left_out(ev):
            continue  # 1/sigmoid(log u) is 1 + 1/u: the constant term left out is the simpler story
        if not isinstance(candidate[2], ast.Return) and id(candidate[2]) in _feeding_right(ev, src):
            # the same fix in a statement a right gradient reads too would break that one: an
            # edit nearer this gradient that fits is the fix (`g @ z1` → `g.t() @ z1`, not in `g`)
            fallback = fallback or (candidate, src, batched)
            continue
        return _finding(ev, candidate, src, batched)
    return _finding(ev, *fallback) if fallback else None


def _feeding_right(ev, src) -> set:
    """ids of the statements feeding the gradient of another input that is right."""
    found = set()
    for other in ev.others.values():
        wrong = other.wrong()
        if other.position is None or wrong is None or wrong.any():
            continue
        statement, expr = gradient_statement(src, other.position)
        if statement is not None and expr is not None:
            found |= {id(s) for s in chain(src, statement, expr)}
    return found


def edited_term(ev):
    """The product rule's other half missing: numeric − analytic = α·B exactly, B the gradient's
    statements with one operand transposed or one tensor swapped for another, α a simple number,
    B proportional to neither A nor N — ``W x`` written for d(xᵀWx)/dx, whose other half is
    ``Wᵀ x`` (x appears twice; one side of the product rule dropped)."""
    A, N, E = ev.analytic, ev.numeric, ev.numeric_error
    for candidate, B, src, batched in _edited(ev, ("transpose", "variable")):
        denominator = float(np.sum(B * B))
        if denominator == 0 or _cosine(B, A) > 1 - 1e-9 or _cosine(B, N) > 1 - 1e-9:
            continue
        alpha = nice_number(float(np.sum((N - A) * B)) / denominator)
        if alpha is None or alpha == 0 or not ev.fits(A + alpha * B, N, E):
            continue
        kind, node, stmt, argument = candidate
        edited = _transposed_text(node, batched) if kind == "transpose" else argument[0]
        what = f"`{ast.unparse(node)}` replaced by {edited}"
        size = "" if abs(alpha) == 1 else f"{short_number(abs(alpha))}× "
        verb = "misses" if alpha > 0 else "has an extra"
        return Finding("missing_term",
                       f"backward for input {ev.name} {verb} a term: numeric − analytic is exactly "
                       f"{short_number(alpha)}× the same statements with {what} (the product rule's other half)",
                       input=ev.index, params={"variant": "edited", "term": what, "coefficient": alpha,
                                               "expression": f"{size}its copy with {edited} for "
                                                             f"`{ast.unparse(node)}`",
                                               "at_line": src.line_of(stmt), "statement": src.code(stmt)},
                       confidence=0.8)
    return None


def _cosine(a, b):
    na, nb = float(np.sqrt(np.sum(a * a))), float(np.sqrt(np.sum(b * b)))
    return 0.0 if na == 0 or nb == 0 else abs(float(np.sum(a * b)) / (na * nb))


def _finding(ev, edit, src, batched=False):
    kind, node, stmt, argument = edit
    line = src.line_of(stmt)
    code = ast.unparse(node)
    statement = src.code(stmt)
    if kind == "dim":
        written = written_dim(node)
        return Finding("wrong_axis",
                       f"backward for input {ev.name} reduces over the wrong dim: `{code}` with dim {argument} "
                       f"instead of {written} makes the gradient right, exactly",
                       input=ev.index, params={"dims": _dims(written), "expected_dims": _dims(argument),
                                               "call": node.func.attr,
                                               "at_line": line, "statement": statement}, confidence=0.9)
    if kind == "transpose":
        expected = _transposed_text(node, batched)
        return Finding("transposed",
                       f"backward for input {ev.name} uses `{code}` where its transpose `{expected}` is needed: with "
                       "it the gradient is right, exactly",
                       input=ev.index, params={"operand": code, "expected": expected, "got": code, "at_line": line,
                                               "statement": statement}, confidence=0.9)
    if kind == "compare":
        written, needed = SYMBOLS[type(node.ops[0])], SYMBOLS[argument]
        return Finding("region",
                       f"backward for input {ev.name} masks the wrong elements: `{code}` with {needed} instead of "
                       f"{written} makes the gradient right, exactly",
                       input=ev.index, params={"description": f"the mask `{code}`", "comparison": written,
                                               "expected": needed, "at_line": line, "statement": statement},
                       confidence=0.85)
    if kind == "threshold":
        return Finding("region",
                       f"backward for input {ev.name} masks the wrong elements: its mask compares with the literal "
                       f"`{code}` where {argument[0]} (= {argument[1]:g}) makes the gradient right, exactly",
                       input=ev.index, params={"description": f"the mask's threshold `{code}`", "threshold": code,
                                               "expected": argument[0], "at_line": line, "statement": statement},
                       confidence=0.85)
    if kind == "sign":
        return Finding("term_sign",
                       f"backward for input {ev.name} has the wrong sign on the term `{code}`: with it negated the "
                       "gradient is right, exactly",
                       input=ev.index, params={"term": code, "at_line": line, "statement": statement},
                       confidence=0.9)
    label = argument[0]
    coincide = _coinciding(ev, code, argument) if kind in ("variable", "every") else None
    if coincide is not None:  # x where clamp(x) is needed: wrong only where the clamp acts
        return Finding("region", f"backward for input {ev.name} uses `{code}` where {label} is needed, and the two "
                       f"differ only at {coincide[0]} of {coincide[1]} elements (forward's clamp or mask applied to "
                       f"`{code}`): with {label} in its place the gradient is right, exactly",
                       input=ev.index, params={"used": code, "needed": label, "expression": code, "expected": label,
                                               "description": f"where `{code}` and {label} differ",
                                               "coincide": list(coincide), "at_line": line, "statement": statement},
                       confidence=0.85)
    if kind == "inner":
        return Finding("wrong_variable",
                       f"backward for input {ev.name} uses grad_output `{code}` where `{label}` (computed from it "
                       f"earlier in backward) is needed: with `{label}` in its place the gradient is right, exactly",
                       input=ev.index, params={"used": code, "needed": label, "expression": code, "expected": label,
                                               "at_line": line, "statement": statement}, confidence=0.85)
    if kind == "every":
        return Finding("wrong_variable",
                       f"backward for input {ev.name} uses `{code}` where {label} is needed, every time it reads it "
                       f"in `{statement}`: with {label} in each place the gradient is right, exactly",
                       input=ev.index, params={"used": code, "needed": label, "expression": code, "expected": label,
                                               "every": True, "at_line": line, "statement": statement},
                       confidence=0.85)
    if isinstance(stmt, ast.Assign) and node is stmt.value:  # the whole value of a recomputed name
        code = ast.unparse(stmt.targets[0])
        return Finding("wrong_variable",
                       f"backward for input {ev.name} recomputes `{code}` where {label} is needed: with {label} as "
                       f"`{code}` the gradient is right, exactly",
                       input=ev.index, params={"used": code, "needed": label, "expression": code, "expected": label,
                                               "at_line": line, "statement": statement}, confidence=0.85)
    return Finding("wrong_variable",
                   f"backward for input {ev.name} uses `{code}` where {label} is needed: with {label} in its place "
                   "there the gradient is right, exactly",
                   input=ev.index, params={"used": code, "needed": label, "expression": code, "expected": label,
                                           "at_line": line, "statement": statement}, confidence=0.85)


def _coinciding(ev, code, argument):
    """(differing, total) when the tensor read (the input itself) and the one needed are equal at a
    quarter to nine tenths of the elements: a clamp or a mask forward applied and backward left out."""
    if code != ev.name or ev.values is None:
        return None
    used, needed = np.asarray(ev.values, dtype=float), np.asarray(argument[1], dtype=float)
    if used.shape != needed.shape:
        return None
    same = np.isclose(used, needed, rtol=1e-12, atol=0)
    share = np.count_nonzero(same) / same.size
    return (int(same.size - np.count_nonzero(same)), int(same.size)) if 0.25 <= share <= 0.9 else None

def _transposed_text(node, batched):
    if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
        return ast.unparse(node.value)
    if isinstance(node, ast.Call):
        return ast.unparse(node.func.value)
    return f"{ast.unparse(node)}.mT" if batched else f"{ast.unparse(node)}.T"
