"""The finding of one fitting edit of backward (``rewrites.search``): the edit's kind, renamed where
what it changed says more (an integer bound of positions, one 0/1 mask for another, one branch
of a ``where``), with its message, its advice and the statement it changed."""
from __future__ import annotations

import ast

from gradcli.check.report import Finding


def edit_finding(ev, edit, src, masks=frozenset()):
    """The finding an edit that makes the gradient exact gives: its kind (renamed where the edit says
    more: a position bound, a mask, one `where` branch), message, advice and params."""
    if edit.kind == "term_sign":
        edit.stmt = _derivative_assignment(src, edit) or edit.stmt
    statement = src.code(edit.stmt)
    params = dict(edit.params, at_line=int(src.line_of(edit.stmt)), statement=statement, edit="rewrite",
                  location=src.location(edit.stmt))
    kind, name, words = edit.kind, ev.name, edit.words
    if kind in ("missing_term", "term_sign") and _index_bound(src, edit):
        # `keep = int(lengths[b]) + 1`: an integer bound of the positions written, off by one
        kind = "region"
        params.update(comparison=statement, expected=f"without `{params.get('term')}`" if edit.kind == "missing_term"
                      else f"`{params.get('term')}` negated", bound=True)
    if kind == "term_sign" and params.get("branch_of"):  # `where(d > 0, tau, 1 - tau)` for `tau - 1`
        kind = "region"
        where = params["branch_of"] if params["side"] == "true" else f"not ({params['branch_of']})"
        params.update(description=f"where {where}", comparison=params["branch_of"], expected=f"`-({params['term']})`")
        return Finding(kind, f"backward for input {name} is wrong only where {where}: that branch's value "
                       f"`{params['term']}` has the wrong sign (`{statement}`): with it negated the gradient is right, "
                       "exactly", input=ev.index, params=dict(params, advice=f"negate `{params['term']}` (the branch "
                                                              f"taken where {where})"), confidence=0.85)
    if kind == "unread_factor":  # backward unpacks it and never reads it
        kind = "region" if params["factor"] in masks else "wrong_variable"
    elif kind == "wrong_variable" and params["used"] in masks and params["needed"] in masks:
        kind = "region"  # one mask read for another: the wrong elements are selected
    if kind == "region" and params.get("slice"):
        params["description"] = f"the positions `{params['used']}`"
        advice = f"use {params['needed']} instead of {params['used']}"
        message = f"backward for input {name} reads or writes the wrong positions: {words}"
    elif kind == "wrong_variable" or kind == "region" and "needed" in params:
        params.update(expression=params["used"], expected=params["needed"])
        advice = f"use {params['needed']} instead of {params['used']}"
        if params.get("saved"):
            advice = f"save {params['needed']} instead of {params['used']} in forward (read as {params.get('read_as')} here)"
        if params.get("order"):
            advice = f"compute this statement before {params['needed'].split(' before ', 1)[1]}"
        message = f"backward for input {name} uses {words}"
        if kind == "region":
            params["description"] = f"the mask `{params.get('factor') or params['needed']}`"
            message = f"backward for input {name} selects the wrong elements: it uses {words}"
    elif kind == "region" and params.get("branches"):
        params["description"] = f"the mask `{params['comparison']}`"
        advice = f"select with {params['expected']} (the branches are exchanged)"
        message = f"backward for input {name} selects the wrong elements: {words}"
    elif kind == "region" and params.get("bound"):
        params["description"] = f"the positions bounded by `{statement}`"
        advice = f"check the bound: {'drop' if edit.kind == 'missing_term' else 'negate'} `{params.get('term')}`"
        off = params.get("term", "").lstrip("-")
        message = (f"backward for input {name} writes the wrong positions: a position bound is off by "
                   f"{off if edit.kind == 'missing_term' else 2 * int(off)}")
    elif kind == "region":
        params["description"] = f"the mask `{ast.unparse(edit.node)}`"
        advice = f"compare with {params['expected']} instead of {params['comparison']}"
        if params.get("sign_for_step"):
            advice = f"use {params['expected']} instead of the step {params['comparison']} (|s|′ is sign(s))"
        if params.get("sign_dropped"):
            advice = f"drop the factor {params['comparison']}"
        if params.get("forward_mask") and params.get("expected", "").endswith(params["forward_mask"]):
            advice = f"apply forward's selection: {params['expected']} instead of {params['comparison']}"
        message = f"backward for input {name} masks the wrong elements: {words}"
    else:
        advice, message = {
            "term_sign": (f"flip the sign of `{params.get('term')}`",
                          f"backward for input {name} has the wrong sign on {words}"),
            "wrong_axis": (f"{params.get('call')} along dim {params.get('expected_dims', [''])[0]}, not dim "
                           f"{params.get('dims', [''])[0]}", f"backward for input {name} uses the wrong dim: {words}"),
            "transposed": (f"transpose `{params.get('operand')}`", f"backward for input {name} needs {words}"),
            "missing_reshape": (f"reshape to the output's grouping: {words}",
                                f"backward for input {name} reshapes with the input's grouping where the output's "
                                f"is needed: {words}"),
            "not_accumulated": ("accumulate repeated indices (index_add_ / scatter_add_ / index_put_ with "
                                "accumulate=True) instead of assigning",
                                f"backward for input {name} overwrites where repeated indices must add up: {words}"),
            "missing_flip": (f"use `{params.get('operand')}` unflipped" if params.get("flipped") else
                             f"flip `{params.get('operand')}` along dims {', '.join(map(str, params.get('dims', [])))}",
                             f"backward for input {name} flips where no flip is needed: {words}"
                             if params.get("flipped") else f"backward for input {name} reads {words}"),
            "ignores_grad_output": (f"multiply by {params.get('grad_output')}",
                                    f"backward for input {name} does not multiply by grad_output: {words}"),
            "missing_term": (f"remove the term `{params.get('term')}`",
                             f"backward for input {name} has an extra term {words}; remove it"),
            "negated_value": (f"negate `{params.get('term')}`", f"backward for input {name} needs {words}"),
            "scaled_value": (f"multiply `{params.get('term')}` by the missing factor",
                             f"backward for input {name} needs {words}"),
            "swapped": (f"exchange `{params.get('first')}` and `{params.get('second')}`",
                        f"backward for input {name} needs {words}"),
        }[kind]
        if kind == "missing_flip" and params.get("scan"):
            advice = (f"accumulate in reverse: `{params['operand']}` flipped along dim {params['dims'][0]}, "
                      f"{params['scan']}, flipped back")
        if kind == "missing_term" and params.get("reaction"):
            advice = f"add the reaction on the pair's other end: {params['term']}"
            message = (f"backward for input {name} misses the term of each pair's other end "
                       f"(`{params['reaction']}`): {words} is needed as well")
            if params["reaction"] == params.get("term"):  # a neighbour pair along an axis (`g[:, 1:]` for `g[:, :-1]`)
                advice = f"add the pair's other end: {params['term']}"
                message = f"backward for input {name} misses each pair's other end: {words}"
        if kind == "missing_reshape" and params.get("transposed_first"):
            advice = f"move the axes back before flattening: `{params['transposed_first']}`"
            message = f"backward for input {name} flattens a tensor without moving its axes back first: {words}"
        if kind == "missing_reshape" and params.get("aligned"):
            advice = f"reshape `{params['aligned']}` to end in 1s (`{params['aligned']}[:, None, …]`) so it broadcasts " \
                     "along its leading axis"
            message = f"backward for input {name} broadcasts a tensor along the wrong axis: {words}"
        if kind == "term_sign" and params.get("derivative"):
            advice = f"flip the sign of `{params['derivative']}` (the local derivative in `{params.get('term')}`)"
        if kind == "not_accumulated" and params.get("loop"):
            advice = "add each step's contribution (`+=`) instead of assigning it"
            message = f"backward for input {name} keeps only the last step of a loop's sum: {words}"
        if kind == "missing_term" and params.get("centering"):
            p = params["centering"]
            advice = f"subtract the softmax's centering term: {p} * (r - ({p} * r).sum({params['dim']}, keepdim=True))"
            message = (f"backward for input {name} applies the softmax Jacobian of `{p}` without its centering "
                       f"term −{p}·Σ({p}·…): {words}")
            params.update(variant="softmax_centering")
        elif kind == "missing_term" and params.get("partner_of"):  # d(x·y)/dy = x: the term written for x only
            advice = f"add the product rule's partner term: + {params['term']}"
            message = f"backward for input {name} misses {words}"
            params.update(variant="partner")
        elif kind == "missing_term" and params.get("output_term"):  # z feeds both outputs: grad_v's term left out
            advice = f"add the term of output `{params['output_term']}`: + {params['term']}"
            message = (f"backward for input {name} misses the term of output `{params['output_term']}`: "
                       f"`{params['term']}` is needed as well")
            params.update(variant="output_term")
        elif kind == "missing_term" and params.get("carried"):
            advice = f"add the term carried from the other steps: + {params['term']}"
            message = f"backward for input {name} leaves out the gradient carried through the recurrence: {words}"
            params.update(variant="carried")
        elif kind == "missing_term" and "projection" in params:
            h = params["projection"]
            advice = f"subtract the projection term {h} * (g * {h}).mean({params['dim']}, keepdim=True)"
            message = f"backward for input {name} leaves out the term −{h}·mean(g·{h}) (a normalisation's variance): {words}"
            params.update(variant="projection")
        elif kind == "missing_term" and "pdf_of" in params:
            u = params["pdf_of"]
            advice = f"add the product rule's other half: d(u·Φ(u))/du = Φ(u) + u·φ(u), with u = {u}"
            message = f"backward for input {name} leaves out the term {u}·φ({u}) of GELU's derivative: {words}"
            params.update(variant="missing")
        elif kind == "missing_term" and "mean_term" in params:
            dim = params["mean_term"]
            advice = f"subtract its mean along dim {dim} (the part of the gradient through a mean)"
            message = f"backward for input {name} leaves out the term through a mean along dim {dim}: {words}"
            params.update(variant="mean", dim=dim)
        elif kind == "missing_term":
            params.update(coefficient=-1.0, variant="extra")
    params["advice"] = advice
    message += f" (`{statement}`): with that one change the gradient is right, exactly"
    return Finding(kind, message, input=ev.index, params=params, confidence=0.85)


def _index_bound(src, edit):
    """The edit drops or negates an integer literal of an expression that bounds positions: inside
    ``int(...)``/``range(...)`` or a subscript, or assigned to a name backward reads in a subscript."""
    term = edit.params.get("term", "").lstrip("-")
    if not term.isdigit():
        return False
    stmt, node = edit.stmt, edit.node
    for outer in ast.walk(stmt):
        inside = [n for n in ast.walk(outer) if n is node]
        if not inside or outer is node:
            continue
        if isinstance(outer, ast.Call) and isinstance(outer.func, ast.Name) and outer.func.id in ("int", "range"):
            return True
        if isinstance(outer, ast.Subscript) and any(n is node for n in ast.walk(outer.slice)):
            return True
    targets = stmt.targets if isinstance(stmt, ast.Assign) else []
    names = {t.id for t in targets if isinstance(t, ast.Name)}
    return bool(names) and any(isinstance(n, ast.Subscript) and any(isinstance(m, ast.Name) and m.id in names
                                                                       for m in ast.walk(n.slice))
                               for n in ast.walk(src.tree))


def _derivative_assignment(src, edit):
    """For a term `grad_y * dy_dt` whose sign is wrong in a chain-rule sum (`grad_x * dx_dt +
    grad_y * dy_dt`), the assignment of the local derivative `dy_dt` when it is made once and read
    only there: the sign is wrong in the derivative, not in how the chain rule combines it."""
    try:
        term = ast.parse(edit.params.get("term", ""), mode="eval").body
    except SyntaxError:
        return None
    arguments = {a.arg for a in src.tree.args.args}
    if isinstance(term, ast.UnaryOp) and isinstance(term.op, ast.USub):
        term = term.operand
    if not (isinstance(term, ast.BinOp) and isinstance(term.op, ast.Mult)
            and isinstance(term.left, ast.Name) and isinstance(term.right, ast.Name)):
        return None
    local = [n.id for n in (term.left, term.right) if n.id not in arguments]
    if len(local) != 1:
        return None
    name = local[0]
    reads = [n for n in ast.walk(src.tree) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    made = [s for s in ast.walk(src.tree) if isinstance(s, (ast.Assign, ast.AugAssign))
            and any(isinstance(t, ast.Name) and t.id == name for t in ast.walk(s) if t in _targets(s))]
    if len(reads) != 1 or len(made) != 1 or not isinstance(made[0], ast.Assign):
        return None
    edit.params["derivative"] = name
    return made[0]


def _targets(stmt):
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return [n for t in targets for n in ast.walk(t)]
