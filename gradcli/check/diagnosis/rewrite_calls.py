"""Edits of one expression that ``rewrite_edits.edits`` adds for a node: a comparison's bound read
as the wrong quantity or off by one, a call's arguments (dims, flips, kernels, `where`'s branches,
accumulation, `.conj()`), a loop step's index one off, a softmax's centering term."""
from __future__ import annotations

import ast
import copy

from gradcli.check.diagnosis.rewrite_statements import _regrouping_edits
from gradcli.check.diagnosis.rewrite_syntax import (
    ACCUMULATING, OTHER_DIMS, VALUE_ARGUMENTS, _call_name, _const, _dim_sites, _einsum_swaps, _int, _mult_factors,
    _with_accumulate)


SCANS = ("cumsum", "cumprod", "logcumsumexp")


def _flipped(node, dim):
    return ast.Call(ast.Attribute(node, "flip", ast.Load()), [_const(dim)], [])


def _reversed_scan(call, dim):
    """``x.cumsum(d)`` → ``x.flip(d).cumsum(d).flip(d)`` (a suffix scan, the adjoint of a prefix one)."""
    call = copy.deepcopy(call)
    if _call_name(call)[1]:
        call.func.value = _flipped(call.func.value, dim)
    else:
        call.args[0] = _flipped(call.args[0], dim)
    return _flipped(call, dim)


def _threshold_edits(add, stmt, compare, bound, functions, grads, scalars=(), constants=()):
    """``pred < 0`` where ``pred < target`` is meant: a comparison's constant side read as one of
    backward's tensors (the branch chosen by the wrong quantity's sign) — a ``region``. And
    ``s > 0`` where ``s.sign()`` is meant: |s|'s derivative taken as a ReLU's step (the other side
    gets 0 instead of −1) — a ``region`` too."""
    zero = compare.comparators[0] if isinstance(compare.ops[0], (ast.Gt, ast.GtE)) else None
    if zero is not None and _int(zero) == 0 and not isinstance(compare.left, ast.Constant):
        code = ast.unparse(compare.left)
        add("region", stmt, compare, f"`{ast.unparse(compare)}` (a step) where `{code}.sign()` is needed",
            lambda n: ast.Call(ast.Attribute(n.left, "sign", ast.Load()), [], []),
            comparison=ast.unparse(compare), expected=f"{code}.sign()", sign_for_step=True)
    for side in ("left", "right"):
        constant = getattr(compare, side) if side == "left" else compare.comparators[0]
        literal = _int(constant) is not None or (isinstance(constant, ast.Constant) and isinstance(constant.value, float))
        for other in constants if literal else ():  # `dot > 0` where the wrapped term is lit down to `dot > -WRAP`
            for negated in (False, True):
                code = ast.unparse(compare)
                shown = f"-{other}" if negated else other
                add("region", stmt, constant, f"`{code}` with the bound {ast.unparse(constant)} where `{shown}` is "
                    "needed", lambda n, o=other, neg=negated: ast.UnaryOp(ast.USub(), ast.Name(o, ast.Load())) if neg
                    else ast.Name(o, ast.Load()), comparison=ast.unparse(constant), expected=shown, threshold=shown)
        if isinstance(constant, ast.Name) and constant.id in constants:  # the decoder's knee for the encoder's
            for other in constants:
                if other != constant.id:
                    code = ast.unparse(compare)
                    add("region", stmt, constant, f"`{code}` compared with `{constant.id}` where `{other}` is needed",
                        lambda n, o=other: ast.Name(o, ast.Load()), comparison=constant.id, expected=other,
                        threshold=other)
        if (isinstance(constant, ast.Name) and constant.id in constants) or (literal and constant.value != 0):
            code = ast.unparse(constant)
            for power, shown in ((2, f"{code}²"), (0.5, f"√{code}")):  # r² against a cutoff written as r
                add("region", stmt, constant, f"`{ast.unparse(compare)}` with the bound {code} where {shown} is needed",
                    lambda n, p=power: ast.BinOp(copy.deepcopy(n), ast.Pow(), ast.Constant(p)), comparison=code,
                    expected=f"{code} ** {power}", threshold=f"{code} ** {power}")
        if _int(constant) is None and not (isinstance(constant, ast.Constant) and isinstance(constant.value, float)):
            continue
        if _int(constant) is not None:  # `s - t > 0` where the margin's `s - t > -1` is meant
            for moved in (_int(constant) - 1, _int(constant) + 1):
                code = ast.unparse(compare)

                def shifted(n, v=moved, side=side):
                    value = ast.Constant(v) if v >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-v))
                    return ast.Compare(value, n.ops, n.comparators) if side == "left" else \
                        ast.Compare(n.left, n.ops, [value])
                add("region", stmt, compare, f"`{code}` with the bound {moved} instead of {_int(constant)}",
                    shifted, comparison=code, expected=ast.unparse(shifted(copy.deepcopy(compare))),
                    threshold=str(moved))
        for name, number in scalars:  # `s < 0` where forward's margin is the bound: it was never saved
            if number == _int(constant) or isinstance(constant, ast.Constant) and constant.value == number:
                continue
            code = ast.unparse(compare)

            def literal(n, v=number, side=side):
                value = _const(v) if isinstance(v, int) else (ast.Constant(v) if v >= 0 else
                                                              ast.UnaryOp(ast.USub(), ast.Constant(-v)))
                return ast.Compare(value, n.ops, n.comparators) if side == "left" else ast.Compare(n.left, n.ops, [value])
            add("region", stmt, compare, f"`{code}` compared with {ast.unparse(constant)} where forward's `{name}` "
                f"({number}) is needed", literal, comparison=code, expected=ast.unparse(literal(copy.deepcopy(compare))),
                threshold=name)
        for other in bound:
            if other in functions or other in grads or bound[other] >= compare.lineno:
                continue
            code = ast.unparse(compare)

            def make(n, o=other, side=side):
                name = ast.Name(o, ast.Load())
                return ast.Compare(name, n.ops, n.comparators) if side == "left" else ast.Compare(n.left, n.ops, [name])
            add("region", stmt, compare, f"`{code}` compared with `{other}` instead of {ast.unparse(constant)}",
                make, comparison=code, expected=ast.unparse(make(copy.deepcopy(compare))), threshold=other)


def _call_edits(add, stmt, call):
    name, method = _call_name(call)
    if name == "where" and not method and len(call.args) == 3:  # the two branches in each other's place
        code = ast.unparse(call.args[0])
        add("region", stmt, call, f"`{ast.unparse(call)}` with its two branches exchanged",
            lambda n: ast.Call(n.func, [n.args[0], n.args[2], n.args[1]], n.keywords),
            comparison=code, expected=f"not {code}", branches=True)
    if name in ("masked_fill", "masked_fill_") and method and call.args:
        code = ast.unparse(call.args[0])
        add("region", stmt, call.args[0], f"the mask `{code}` inverted",
            lambda n: ast.UnaryOp(ast.Invert(), n), comparison=code, expected=f"~{code}", branches=True)
    if name == "conj" and method and not call.args:
        code = ast.unparse(call.func.value)
        add("term_sign", stmt, call, f"`{ast.unparse(call)}` where `{code}` is needed (the imaginary part's sign)",
            lambda n: n.func.value, term=f"the imaginary part of {code}")
    for k in VALUE_ARGUMENTS.get(name, ()):
        k = k if method or name == "where" else k + 1
        k = k - 1 if name == "where" and method else k
        if k < len(call.args) and not isinstance(call.args[k], ast.Constant):
            code = ast.unparse(call.args[k])
            side = {}
            if name == "where" and call.args:  # one branch negated: wrong on one side of the condition only
                condition = ast.unparse(call.args[0] if not method else call.func.value)
                side = dict(branch_of=condition, side="true" if k == (0 if method else 1) else "false")
            add("term_sign", stmt, call.args[k], f"the term `{code}`", lambda n: ast.UnaryOp(ast.USub(), n), term=code,
                **side)
    for node, value in _dim_sites(call):
        for other in OTHER_DIMS:
            if other != value:
                add("wrong_axis", stmt, node, f"`{ast.unparse(call)}` along dim {other} instead of {value}",
                    lambda n, o=other: _const(o), call=name, dims=[value], expected_dims=[other])
    if name in ACCUMULATING and method:
        add("not_accumulated", stmt, call, f"`{name}` where `{ACCUMULATING[name]}` is needed",
            lambda n, new=ACCUMULATING[name]: ast.Call(ast.Attribute(n.func.value, new, ast.Load()), n.args, n.keywords),
            call=name)
    if name in ("index_put_", "index_put", "put_", "put"):
        accumulate = next((kw for kw in call.keywords if kw.arg == "accumulate"), None)
        if accumulate is None or isinstance(accumulate.value, ast.Constant) and not accumulate.value.value:
            add("not_accumulated", stmt, call, f"`{name}` with accumulate=True", _with_accumulate, call=name)
    spatial = {"conv1d": 1, "conv2d": 2, "conv3d": 3, "conv_transpose1d": 1, "conv_transpose2d": 2,
               "conv_transpose3d": 3}.get(name)
    if spatial and not method and len(call.args) >= 2:  # a full correlation needs the kernel rotated
        dims = [_const(-d) for d in range(spatial, 0, -1)]
        code = ast.unparse(call.args[1])
        add("missing_flip", stmt, call.args[1], f"`{code}` where it is needed flipped along its {spatial} spatial dim"
            f"{'s' if spatial > 1 else ''}", lambda n, dims=dims: ast.Call(ast.Attribute(n, "flip", ast.Load()), dims, []),
            flipped=False, operand=code, dims=[-d for d in range(spatial, 0, -1)])
    if name == "flip" and method:
        add("missing_flip", stmt, call, f"`{ast.unparse(call)}` unflipped", lambda n: n.func.value,
            flipped=True, operand=ast.unparse(call.func.value))
    if name in SCANS and _dim_sites(call) and (method or call.args):  # a scan's adjoint runs the other way
        dim = _dim_sites(call)[0][1]
        code = ast.unparse(call.func.value if method else call.args[0])
        add("missing_flip", stmt, call, f"`{ast.unparse(call)}` where the scan is needed in reverse (`{code}` "
            "flipped, accumulated and flipped back)", lambda n, d=dim: _reversed_scan(n, d), flipped=False,
            operand=code, dims=[dim], scan=name)
    if name in ("reshape", "view") and method:
        _regrouping_edits(add, stmt, call)
    if name in ("reshape", "view", "flatten") and method and isinstance(call.func.value, ast.Name):
        receiver = call.func.value.id  # forward's `.transpose(1, 2)` output flattened without undoing it
        for a, b in ((1, 2), (-1, -2)):
            moved = f"{receiver}.transpose({a}, {b})"
            add("missing_reshape", stmt, call, f"`{ast.unparse(call)}` without moving the axes back first "
                f"(`{moved}` before the {name})", lambda n, a=a, b=b: ast.Call(ast.Attribute(ast.Call(ast.Attribute(
                    n.func.value, "transpose", ast.Load()), [_const(a), _const(b)], []), name, ast.Load()), n.args,
                    n.keywords), reshape=ast.unparse(call), transposed_first=moved)
    if name == "permute" and method and 3 <= len(call.args) <= 6 and all(_int(a) is not None for a in call.args):
        dims = [_int(a) for a in call.args]
        for a in range(len(dims)):  # the inverse permutation with two of its dims exchanged
            for b in range(a + 1, len(dims)):
                order = list(dims)
                order[a], order[b] = order[b], order[a]
                add("transposed", stmt, call, f"`{ast.unparse(call)}` with dims {dims[a]} and {dims[b]} exchanged",
                    lambda n, o=order: ast.Call(n.func, [_const(d) for d in o], n.keywords),
                    operand=ast.unparse(call), expected=f"permute({', '.join(map(str, order))})", permute=True)
        inverse = sorted(range(len(dims)), key=dims.__getitem__)
        if sorted(dims) == list(range(len(dims))) and inverse != dims:  # the forward's permutation applied again
            add("transposed", stmt, call, f"`{ast.unparse(call)}` inverted, `permute({', '.join(map(str, inverse))})`",
                lambda n, o=inverse: ast.Call(n.func, [_const(d) for d in o], n.keywords),
                operand=ast.unparse(call), expected=f"permute({', '.join(map(str, inverse))})", permute=True)
    if name == "einsum" and call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        for spec, term, swapped in _einsum_swaps(call.args[0].value):
            add("transposed", stmt, call, f"einsum operand `{term}` as `{swapped}`",
                lambda n, s=spec: ast.Call(n.func, [ast.Constant(s)] + n.args[1:], n.keywords),
                operand=term, expected=swapped,
                matrix=term == call.args[0].value.replace(" ", "").split("->")[1] and len(term) == 2)


def _step_edits(add, stmt, node, steps):
    """``out[:, t]`` where the previous step's ``out[:, t - 1]`` is needed (zero before the first
    step), or the next one's (zero after the last): a recurrence's state read one step off."""
    index = node.slice
    elts = index.elts if isinstance(index, ast.Tuple) else [index]
    if any(isinstance(e, ast.Starred) or (isinstance(e, ast.Constant) and e.value in (None, Ellipsis)) for e in elts):
        return
    for k, e in enumerate(elts):
        if not (isinstance(e, ast.Name) and e.id in steps):
            continue
        code = ast.unparse(node)
        for delta in (-1, 1):
            def make(n, k=k, t=e.id, delta=delta):
                parts = list(n.slice.elts) if isinstance(n.slice, ast.Tuple) else [n.slice]
                moved = ast.BinOp(ast.Name(t, ast.Load()), ast.Sub() if delta < 0 else ast.Add(), ast.Constant(1))
                parts[k] = moved
                index = ast.Tuple(parts, ast.Load()) if isinstance(n.slice, ast.Tuple) else parts[0]
                shifted = ast.Subscript(n.value, index, ast.Load())
                size = ast.Subscript(ast.Attribute(n.value, "shape", ast.Load()), ast.Constant(k), ast.Load())
                inside = ast.Compare(moved, [ast.GtE()], [ast.Constant(0)]) if delta < 0 else \
                    ast.Compare(moved, [ast.Lt()], [size])
                return ast.IfExp(inside, shifted, ast.BinOp(n, ast.Mult(), ast.Constant(0)))
            needed = ast.unparse(make(copy.deepcopy(node)).body)  # the shifted read, without its guard
            add("wrong_variable", stmt, node, f"`{code}` where the {'previous' if delta < 0 else 'next'} step's "
                f"`{needed}` is needed", make, used=code, needed=needed, step=delta)


def _centering_edits(add, stmt, node, simplex):
    """``p * r`` where a softmax's Jacobian needs ``p * (r - (p * r).sum(d, keepdim=True))``: the
    centering term dropped (p: a tensor backward holds that is ≥ 0 and sums to 1 along d)."""
    factors = _mult_factors(node)
    if len(factors) < 2:
        return
    for k, factor in enumerate(factors):
        if not (isinstance(factor, ast.Name) and factor.id in simplex):
            continue
        p, dim = factor.id, simplex[factor.id]

        def make(n, k=k, p=p, dim=dim):
            parts = _mult_factors(n)
            rest = [f for j, f in enumerate(parts) if j != k]
            r = rest[0]
            for f in rest[1:]:
                r = ast.BinOp(r, ast.Mult(), f)
            inner = ast.Call(ast.Attribute(ast.BinOp(ast.Name(p, ast.Load()), ast.Mult(), r), "sum", ast.Load()),
                             [ast.Constant(dim)], [ast.keyword("keepdim", ast.Constant(True))])
            return ast.BinOp(ast.Name(p, ast.Load()), ast.Mult(), ast.BinOp(r, ast.Sub(), inner))
        add("missing_term", stmt, node, f"`{ast.unparse(node)}` is written",
            make, term=f"-{p}·({p}·…).sum({dim})", centering=p, dim=dim)
