"""One-line hints that point at the line of the backward to fix.

``source.py`` finds the statement that computes the gradient for an input; a finding
may narrow it further (the line with the constant 2 for a factor-2 finding, the line with a
comparison for a region). When the source is unavailable (a lambda in a REPL, a C extension) the
hint says what to do without a location.
"""
from __future__ import annotations

import ast
import math
import os
import re
from typing import Optional

from gradcli.check.diagnosis.evidence import nice_number
from gradcli.check.diagnosis.mask_location import region_statement
from gradcli.check.diagnosis.written import ALLOCATIONS, _discarded_update, _skipped_assignment, _written_into
from gradcli.check.diagnosis.values_source import values_statement
from gradcli.check.diagnosis.source import (FACTOR_OPS, SIGN_OPS, backward_source, chain, computed_assignment, constant_line, fed_names,
                                            first_statement_with, forward_source, grad_output_names, gradient_statement, in_chain,
                                            inplace_statement, last_return, local_derivative,
                                            shared_with_right_gradient, statement_at, statements)


def hint(kind: str, params: dict, cls, position: Optional[int], names: dict, name: str,
         executed: Optional[frozenset] = None, failed_positions: Optional[set] = None) -> tuple:
    """(one-line hint, source location dict or None) for a finding; ``executed``: the file lines
    of backward that ran in one traced call (see ``probe.Probe.raw``)."""
    if kind == "kink":
        return ("not a bug: check at inputs away from the kink, or accept any value between the one-sided "
                "derivatives"), None
    if kind == "none":
        if params.get("reason") == "changed_after_backward":
            return "backward's return value is right: look at hooks on the tensors, or report an engine bug", None
        return "compare the backward with your derivation term by term; the error map shows where it is wrong", None
    if kind == "inplace":
        advice = "clone a tensor before modifying it in place, or save the copy for backward"
        if params.get("after_save"):
            advice = "modify a copy (or save the tensor after the in-place change), not a tensor already saved"
        for where, src in (("forward", forward_source(cls)), ("backward", backward_source(cls))):
            # a tensor kept as a ctx attribute is changed after it is stored, whenever save_for_backward runs
            after = bool(params.get("after_save")) and where == "forward" and not params.get("ctx_attributes")
            stmt = src and inplace_statement(src, after_save=after)
            if stmt:
                return _with_code(advice, src, stmt, f"in {where}: ")
        return advice, None
    if params.get("edit") == "rewrite" and params.get("location"):  # rewrites.py: the edit that fits, where
        location = dict(params.pop("location"))
        return (f"{params['advice']} in `{location['code']}` ({os.path.basename(location['file'])}:"
                f"{location['line']})"), location
    src = backward_source(cls, executed)
    statement = expr = None
    written = gradient = (None, None)
    pinned = None
    if src is not None and position is not None:
        statement, expr = gradient_statement(src, position)
        shared = shared_with_right_gradient(src, position, failed_positions)
        if shared is not None:
            statement, expr = shared
        gradient = statement, expr  # before it is narrowed to a local derivative or its values
        if shared is not None:
            pass
        elif statement is not None and kind in LOCAL_DERIVATIVE_KINDS:
            # `return grad * grad_output`: a factor, a sign, a term or a tensor is wrong in `grad`
            statement, expr = local_derivative(src, statement, expr)
        written = statement, expr  # a sign or factor may sit in how values are written (`g[:, 1:] -= d`)
        if statement is not None and kind in VALUE_KINDS and shared is None:
            # `return _merge(dkh)`, `g.index_add_(0, idx, v)`: the values are wrong where computed
            statement, expr = values_statement(src, statement, expr)
        pinned = params.get("at_line") and statement_at(src, params["at_line"])
        if pinned:  # a rule that edited one statement says which (a dim, a transpose, a tensor)
            statement = pinned
            written = pinned, written[1]
        elif kind == "wrong_variable" and statement is not None and params.get("used"):
            # a name backward computes itself, bound to another tensor everywhere: its definition
            # is what is wrong (`p = softmax(x)` recomputed without forward's mask)
            statement = computed_assignment(src, params["used"], statement) or statement
    if kind == "precision":
        stmt = src and expr is not None and next(
            (c for c in chain(src, statement, expr) if any(_rounded(n) for n in ast.walk(c))), None)
        return _with_code("keep forward and backward in float64 (no .float(), float32 buffers, rounded constants), "
                          "or check the Function at float32 with --dtype float32", src, stmt or statement, "in ")
    if kind == "nondeterministic":
        stmt = src and first_statement_with(src, lambda n: isinstance(n, ast.Attribute) and "rand" in n.attr)
        return _with_code("backward must return the same gradient every time: remove randomness or state",
                          src, stmt or statement, "in ")
    if kind in ("scale", "sign"):
        factor = params.get("factor", -1.0)
        stmt = src and expr is not None and (constant_line(src, written[1], written[0], factor) or _written_into(
            src, written[0], written[1], SIGN_OPS if factor < 0 else FACTOR_OPS) or constant_line(
            src, expr, statement, factor)) or statement
        if any(abs(abs(factor) * b - 1) < 1e-5 or abs(abs(factor) - b) < 1e-5 * b for b in (math.log(10), math.log(2))) \
                and gradient[0] is not None:  # a log10's or log2's ln b left out: where 1/x is written
            stmt = next((c for c in chain(src, *gradient) if any(
                isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) and not isinstance(n.right, ast.Constant)
                for n in ast.walk(c))), stmt)
        what = "the sign" if kind == "sign" or (factor < 0 and abs(factor) == 1) else "the factor"
        advice = f"check {what}"
        if "mean" in params.get("note", ""):
            advice = "sum over the broadcast dims instead of averaging"
        if params.get("per_slice"):
            advice = f"check the per-slice count or length (the factor differs along dim {params.get('axis')})"
        return _with_code(advice, src, stmt, "in ")
    if kind == "ignores_grad_output":
        used = set() if expr is None else {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
        uses = expr is not None and bool((grad_output_names(src) & used) | fed_names(src, expr))
        advice = "multiply by grad_output (the chain rule)" if not uses else "check how grad_output is used"
        if not uses and gradient[0] is not None:  # `grad_logits = p`: the alias is where grad_output was left out
            statement = next((c for c in chain(src, *gradient) if isinstance(c, ast.Assign) and isinstance(
                c.value, ast.Name) and c.value.id not in grad_output_names(src)), statement)
            if statement is gradient[0]:  # `gt = -(s * x).sum()` returned: grad_output had to enter before the sum
                statement = next((c for c in chain(src, *gradient) if c is not gradient[0] and _reduces_alone(c)),
                                 statement)
        return _with_code(advice, src, statement, "in ")
    if kind == "transposed":
        if params.get("jacobian"):
            advice = "apply the transpose of forward's map: scatter where forward gathers, or invert the permutation"
            if statement is not None and _reshaped_name(expr):  # `return grad.reshape(b, t, d)`: where grad is made
                statement = values_statement(src, statement, expr)[0]
        elif "operand" in params:
            advice = f"use {params['expected']}"
        elif "reshape" in params:
            advice = "reshape the gradient to the input's shape"
        else:
            advice = "transpose the gradient (or swap the matmul operands)"
        return _with_code(advice, src, statement, "in ")
    if kind == "swapped":
        order = ", ".join(names[i] for i in sorted(names))
        returned = src and last_return(src)
        exchanged = src and params.get("at_line") and statement_at(src, params["at_line"])
        if exchanged is not returned and not _named_in_order(returned, forward_source(cls), src):
            exchanged = None  # `return grad_k, grad_q`: the return is what reads wrong
        # else `grad_cand, grad_prev = g * (1 - z), g * z` returned as (…, grad_prev, grad_cand): the values
        return _with_code(f"return the gradients in forward's input order ({order})", src, exchanged or
                          returned or statement, "in ")
    if kind == "not_reduced":
        dims = tuple(params.get("dims", ()))
        dims_text = dims[0] if len(dims) == 1 else dims
        return _with_code(f"sum the gradient over dim {dims_text} (e.g. `.sum({dims_text})`) to the shape of {name}",
                          src, statement, "in ")
    if kind == "region" and params.get("coincide") and pinned:  # the read to replace, not the mask before it
        return _with_code(f"use {params['needed']} instead of `{params['used']}` (they differ where forward's clamp "
                          "or mask acts)", src, statement, "in ")
    if kind == "region":
        advice, stmt = region_statement(src, params, statement, expr, gradient)
        return _with_code(advice, src, stmt or statement, "in ")
    if kind == "missing_term":
        if params.get("variant") == "coefficient" and params.get("factor") == 0:
            return _with_code(f"remove the term `{params.get('term')}`", src, statement, "in ")
        if params.get("variant") == "coefficient":
            return _with_code(f"multiply `{params.get('term')}` by {params.get('factor')} (or restore the parameter "
                              "it lost)", src, statement, "in ")
        if params.get("variant") == "output":
            arguments = [a.arg for a in src.tree.args.args][1:] if src is not None else []
            k = params.get("output", 0)
            what = f"`{arguments[k]}`" if k < len(arguments) else f"output {k}'s gradient"
            return _with_code(f"add the term {what} contributes (the chain rule through output {k})",
                              src, statement, "in ")
        if params.get("variant") == "held_constant":
            try:
                held = {n.id for n in ast.walk(ast.parse(str(params.get("factor")), mode="eval")) if isinstance(n, ast.Name)}
            except SyntaxError:
                held = set()
            computed = {t.id for c in statements(src.tree) if isinstance(c, ast.Assign) for t in c.targets
                        if isinstance(t, ast.Name)} if src is not None else set()
            held &= computed  # a piece backward computes itself (`norm = log1p(mu)`), not a saved tensor
            held |= {t.id for c in (statements(src.tree) if src is not None else ()) if isinstance(c, ast.Assign)
                     for t in c.targets if isinstance(t, ast.Name) and ast.unparse(c.value) == params.get("factor")}
            pinned = params.get("at_line") and statement_at(src, params["at_line"])
            computes = isinstance(pinned, ast.Assign) and any(isinstance(t, ast.Name) and t.id in held
                                                               for t in pinned.targets)
            if held and gradient[0] is not None and (computes or not pinned):  # added where the held piece is read
                statement = next((c for c in reversed(list(chain(src, *gradient))) if reads_outside_masks(c, held)),
                                 statement)
            return _with_code(f"differentiate `{params.get('factor')}` too: add its term, d({params.get('factor')}) "
                              "times the rest", src, statement, "in ")
        if params.get("variant") == "forward_term":
            return _with_code(f"add the derivative of forward's term `{params.get('forward_term')}`", src,
                              statement, "in ")
        if params.get("variant") == "wrong_saved":
            return _with_code(f"save and use {params.get('needed')} instead of {params.get('term')}",
                              src, statement, "in ")
        always_added = params.get("variant") in ("reduction", "named", "normaliser")  # the expression carries its sign
        verb = "add" if params.get("coefficient", 1) > 0 or always_added else "remove"
        if params.get("variant") == "edited":
            return _with_code(f"{verb} {params.get('expression', '')} (the product rule's other half)", src,
                              statement, "in ")
        where = f" where {params['region']}" if params.get("region") else ""
        return _with_code(f"{verb} the term {params.get('expression', '')}{where}", src, statement, "in ")
    if kind in SURROGATES:
        return _with_code(f"if this surrogate is intended, declare it with `surrogate = True` on the class; "
                          f"else {SURROGATES[kind]}", src, statement, "in ")
    if kind == "term_sign":
        return _with_code(f"flip the sign of `{params.get('term', 'that term')}`", src, statement, "in ")
    if kind == "wrong_variable":
        needed = params.get("needed", "the right tensor").split(" = ")[-1]
        return _with_code(f"use {needed} instead of {params.get('used', 'that tensor').split(' = ')[-1]}",
                          src, statement, "in ")
    if kind == "missing_reshape" and params.get("entries"):  # (y, z, x) read back as (x, y, z)
        return _with_code(f"index the entries along dim {params.get('axis')} in forward's order", src, statement, "in ")
    if kind == "missing_reshape" and "reshape" in params:  # returned flat: fixed where it is computed
        return _with_code("reshape the gradient to the input's shape", src, statement, "in ")
    if kind in CHAIN_ADVICE:
        names, advice = CHAIN_ADVICE[kind]
        # a result laid out wrongly is fixed where the result is reshaped last; grad_output read in
        # the wrong layout, where it is reshaped first
        last = kind == "missing_reshape" and params.get("side") == "result"
        stmt = None if params.get("at_line") else (
            src and expr is not None and in_chain(src, statement, expr, names, last=last))
        if kind == "missing_flip" and not stmt and src is not None and params.get("variant") == "operand":
            stmt = _collected_in_order(src, params.get("operand"))  # a result collected highest first
        if kind == "missing_flip" and not stmt and src is not None:
            # no cumulative call: a recursion written as a loop runs the wrong way, fixed in its header
            stmt = next((n for n in statements(src.tree) if isinstance(n, ast.For) and src.ran(n)), None)
        stmt = stmt or statement
        if kind == "wrong_axis" and params.get("call"):
            advice = f"{params['call']} along dim {{expected_dims}}, not dim {{dims}}"
        return _with_code(advice.format(**{k: _dims_text(v) for k, v in params.items()}), src, stmt, "in ")
    if kind == "zero":
        if params.get("mask"):  # a mask no input satisfies, quoted where it is written (params.at_line)
            return _with_code(f"the mask `{params['mask']}` can never be true: fix its condition", src, statement, "in ")
        if params.get("returned") == "missing":
            return _with_code("return one gradient per forward input (None only where no gradient flows)",
                              src, last_return(src), "in ")
        if params.get("returned") == "zeros" and statement is not None:
            # zeros computed, not forgotten: quoted where the values are (`g.scatter_(2, i, grad_which)`)
            statement = values_statement(src, statement, expr)[0] or statement
        floored = src is not None and gradient[0] is not None and next(
            (c for c in chain(src, *gradient) if isinstance(c, ast.Assign) and isinstance(c.value, ast.BinOp)
             and isinstance(c.value.op, ast.FloorDiv)), None)  # a factor `1 // n`, not a size `length // k`
        if floored:  # `inv_n = 1 // n`: an integer division that is 0 zeroes the gradient
            return _with_code("divide with `/`: the integer division `//` gives 0 here", src, floored, "in ")
        discarded = src is not None and statement is not None and _discarded_update(src, statement)
        if discarded:  # `grad_x[:, :, j:j + t] + v` on a line of its own: the sum is thrown away
            return _with_code(f"assign the update to {name}'s gradient (`+=`): its result is discarded", src,
                              discarded, "in ")
        skipped = src is not None and statement is not None and _skipped_assignment(src, statement)
        if skipped:  # the gradient's real assignment is on a branch that did not run
            return _with_code(f"the assignment of {name}'s gradient never ran: check the condition that guards",
                              src, skipped, "")
        return _with_code(f"return a gradient for {name} instead of "
                          f"{'None' if params.get('returned') == 'None' else 'zeros'}", src, statement, "in ")
    return "", None


# kinds whose mistake sits in the local derivative, not in how grad_output is applied
LOCAL_DERIVATIVE_KINDS = ("scale", "sign", "precision", "missing_term", "term_sign", "wrong_variable", "region")
# kinds whose mistake sits in a gradient's values, not in how they are laid out or stored
VALUE_KINDS = LOCAL_DERIVATIVE_KINDS + ("ignores_grad_output",)








def reads_outside_masks(stmt, names) -> bool:
    """Whether ``stmt`` reads one of ``names`` other than inside a comparison (a mask)."""
    masked = {id(n) for c in ast.walk(stmt) if isinstance(c, ast.Compare) for n in ast.walk(c)}
    return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names and id(n) not in masked
               for n in ast.walk(stmt))


def _reduces_alone(stmt) -> bool:
    """``gt = -(s * x).sum() / t`` assigning a name: a whole reduction (no dim) computed without
    grad_output, after which no elementwise grad_output can be multiplied in."""
    value = getattr(stmt, "value", None) if isinstance(stmt, ast.Assign) else None
    return value is not None and any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("sum", "mean")
        and not n.args and not n.keywords for n in ast.walk(value))











def _rounded(node) -> bool:
    """A float literal with 4+ significant digits that is no simple fraction (1.1284 for 2/√π)."""
    if not isinstance(node, ast.Constant) or not isinstance(node.value, float):
        return False
    from decimal import Decimal

    digits = Decimal(repr(abs(node.value))).normalize().as_tuple().digits  # 1e-05 has one, 1.1284 five
    return len(digits) >= 4 and nice_number(node.value, rel=1e-12) is None


SURROGATES = {
    "straight_through": "return the true derivative (zero almost everywhere: the function is piecewise constant)",
    "smooth_surrogate": "return the true derivative (zero almost everywhere: the function is a step)",
    "gradient_reversal": "return grad_output (forward is the identity)",
}


# kind -> (calls that mark the statement to quote among those computing the gradient, advice)
CHAIN_ADVICE = {
    "missing_flip": (("cumsum", "cumprod", "flip", "flipud", "fliplr"),
                     "flip grad_output along dim {dim} before the cumulative op and flip the result back"),
    "not_accumulated": (("index_add", "index_add_", "scatter_add", "scatter_add_", "index_copy", "index_copy_",
                         "scatter", "scatter_", "index_put", "index_put_", "[]="),
                        "accumulate repeated indices (index_add_ / scatter_add_ / +=) instead of assigning"),
    "missing_reshape": (("reshape", "view", "transpose", "permute", "fold", "unfold", "flatten", "T", "mT"),
                        "transpose/permute to forward's layout before reshaping"),
    "wrong_axis": (("sum", "mean", "softmax", "log_softmax", "norm", "var", "std", "amax", "max", "logsumexp",
                    "cumsum"), "reduce over dim {expected_dims} (forward's dim), not dim {dims}"),
}


def _dims_text(value):
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _with_code(advice, src, stmt, joiner):
    if src is None or stmt is None:
        return advice, None
    location = src.location(stmt)
    if isinstance(stmt, ast.For):  # a loop is quoted by its header, where its direction is set
        location["code"] = f"for {ast.unparse(stmt.target)} in {ast.unparse(stmt.iter)}:"
    text = f"{advice} {joiner}`{location['code']}` ({os.path.basename(location['file'])}:{location['line']})"
    return text, location


def _reshaped_name(expr) -> bool:
    """Whether ``expr`` only reshapes a name (``grad.reshape(b, t, d)``): no values are made there."""
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and isinstance(expr.func.value, ast.Name) \
        and expr.func.attr in ("reshape", "view", "flatten", "reshape_as", "view_as", "contiguous")


def _named_in_order(returned, forward, backward=None) -> bool:
    """Whether ``return grad_x, grad_gate, grad_up`` names forward's inputs (x, w_gate, w_up) in
    their order: every returned name, without a grad prefix, is its input's name or ends it."""
    value = getattr(returned, "value", None)
    elts = value.elts if isinstance(value, ast.Tuple) else []
    params = [a.arg for a in forward.tree.args.args[1:]] if forward is not None else []
    if len(elts) < 2 or len(elts) > len(params):
        return False
    passed = {a.arg for a in backward.tree.args.args} if backward is not None else set()
    named = 0
    for elt, param in zip(elts, params):
        if not isinstance(elt, ast.Name) or elt.id in passed:
            continue  # None, a value formed in the return (`grad_branch.sum(0)`), grad_output passed on
        bare = re.sub(r"^(grad_?|d_?|g_)|_grad$", "", elt.id)
        if elt.id == "g" + param:
            bare = param  # `ga, gb` for a, b
        if not bare or not (bare == param or param.endswith(bare) or param.endswith("_" + bare)):
            return False
        named += 1
    return named >= 2


def _collected_in_order(src, name):
    """Where the values of ``name`` (a result that is right but reversed) are put in order: its
    ``torch.stack(grads)`` of a list filled in a loop, or, for a buffer allocated empty, its first
    index write inside a loop (``grad_c[k] = …`` over ``reversed(range(n))``); None otherwise."""
    if not name:
        return None
    ran = [s for s in statements(src.tree) if src.ran(s)]
    assigned = [s for s in ran if isinstance(s, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == name for t in s.targets)]
    if not assigned:
        return None
    value = assigned[-1].value
    call = value.func if isinstance(value, ast.Call) else None
    called = getattr(call, "attr", getattr(call, "id", None))
    if called in ("stack", "cat"):
        return assigned[-1]
    if called in ALLOCATIONS:
        loops = [n for n in ast.walk(src.tree) if isinstance(n, ast.For) and src.ran(n)]
        return next((w for loop in loops for w in ast.walk(loop) if isinstance(w, ast.Assign) and src.ran(w)
                     and any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name
                             for t in w.targets)), None)
    return None
