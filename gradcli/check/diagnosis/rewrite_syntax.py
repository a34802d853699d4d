"""The syntax the one-edit search reads and writes (``rewrite_edits.py`` makes the edits): which
calls take a dim, compare, accumulate or carry values; the names bound before a statement; where a
term sits under a nonlinear function; and the small tree builders the edits share."""
from __future__ import annotations

import ast

DIM_CALLS = {"sum", "mean", "softmax", "log_softmax", "cumsum", "cumprod", "logcumsumexp", "amax", "amin",
             "max", "min", "norm", "logsumexp", "var", "std", "prod", "gather", "scatter", "scatter_",
             "scatter_add", "scatter_add_", "index_select", "index_add", "index_add_", "cat", "stack",
             "unsqueeze", "squeeze", "diff", "nansum", "cummax", "cummin", "vector_norm", "expand_dims",
             "repeat_interleave", "take_along_dim", "flip", "argmax", "argmin", "sort", "argsort", "roll"}
MODULES = {"torch", "F", "np", "numpy", "gradcli", "math", "nn", "functional", "linalg"}
OTHER_DIMS = (0, 1, 2, 3, -1, -2)  # as people write them: a dim from the front, then from the back
COMPARISONS = {ast.Gt: (ast.GtE, ast.Lt, ast.LtE), ast.GtE: (ast.Gt, ast.LtE, ast.Lt),
               ast.Lt: (ast.LtE, ast.Gt, ast.GtE), ast.LtE: (ast.Lt, ast.GtE, ast.Gt),
               ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,)}
SYMBOLS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!="}
ACCUMULATING = {"scatter_": "scatter_add_", "scatter": "scatter_add", "index_copy_": "index_add_",
                "index_copy": "index_add"}
CTX_NOT_TENSORS = {"saved_tensors", "needs_input_grad", "saved_variables", "mark_dirty", "mark_non_differentiable",
                   "save_for_backward", "set_materialize_grads", "materialize_grads"}
# a sum inside these is no term of the gradient: `cos(x + 0.1)`, `1 / (x + 1)` are other formulas
NONLINEAR = {"exp", "log", "log1p", "expm1", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
             "sigmoid", "softplus", "pow", "reciprocal", "abs", "sign", "clamp", "clip", "erf", "erfc", "atan",
             "asin", "acos", "sinh", "cosh", "lgamma", "digamma", "softmax", "log_softmax", "relu", "gelu",
             "silu", "elu", "logsumexp", "norm", "square", "maximum", "minimum", "max", "min", "where"}
# calls writing or selecting values: the sign of the values they are given (`where(c, a, -b)`,
# `scatter(1, i, -n)`), by positional argument (methods; functions take the tensor first)
VALUE_ARGUMENTS = {"where": (1, 2), "scatter": (2,), "scatter_": (2,), "scatter_add": (2,), "scatter_add_": (2,),
                   "index_add": (2,), "index_add_": (2,), "index_put": (1,), "index_put_": (1,),
                   "masked_scatter": (1,), "masked_scatter_": (1,)}


# ----- edits ------------------------------------------------------------------------------------


def _call_name(call):
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr, not (isinstance(func.value, ast.Name) and func.value.id in MODULES) \
            and not (isinstance(func.value, ast.Attribute) and func.value.attr in MODULES)
    if isinstance(func, ast.Name):
        return func.id, False
    return None, False


def _int(node):
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) is int:
        return -node.operand.value
    return None


def _const(value):
    return ast.UnaryOp(ast.USub(), ast.Constant(-value)) if value < 0 else ast.Constant(value)


def _is_transpose(node):
    if isinstance(node, ast.Attribute) and node.attr in ("T", "mT", "H", "mH"):
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
            node.func.attr == "t" and not node.args or node.func.attr in ("transpose", "swapaxes") and len(node.args) == 2):
        return node.func.value
    return None


def _transposed(node):
    undone = _is_transpose(node)
    if undone is not None:
        return undone
    return ast.Call(ast.Attribute(node, "transpose", ast.Load()), [_const(-2), _const(-1)], [])


def _matmul_operands(node):
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return [node.left, node.right]
    if isinstance(node, ast.Call):
        name, method = _call_name(node)
        if name in ("matmul", "mm", "bmm"):
            return ([node.func.value] if method else []) + list(node.args[: 1 if method else 2])
    return []


def _einsum_swaps(spec):
    """Each einsum spec with two indices of one operand (or of the output) swapped."""
    if "->" not in spec:
        return
    inputs, output = spec.replace(" ", "").split("->")
    terms = inputs.split(",") + [output]
    for t, term in enumerate(terms):
        if "." in term:
            continue
        for a in range(len(term)):
            for b in range(a + 1, len(term)):
                letters = list(term)
                letters[a], letters[b] = letters[b], letters[a]
                swapped = terms[:t] + ["".join(letters)] + terms[t + 1:]
                yield ",".join(swapped[:-1]) + "->" + swapped[-1], term, "".join(letters)


def _dim_sites(call):
    """(node holding a literal dim, its value) of a call taking dims."""
    name, method = _call_name(call)
    if name not in DIM_CALLS:
        return []
    sites = []
    for kw in call.keywords:
        if kw.arg in ("dim", "axis", "dims"):
            value = kw.value
            if isinstance(value, (ast.Tuple, ast.List)):
                sites.extend((elt, _int(elt)) for elt in value.elts if _int(elt) is not None)
            elif _int(value) is not None:
                sites.append((value, _int(value)))
    position = 0 if method else 1
    if name in ("cat", "stack") and not method:
        position = 1
    if name == "roll":  # roll(x, shifts, dims): the dim comes after the shift
        position += 1
    if name == "flip" and len(call.args) > position and isinstance(call.args[position], (ast.Tuple, ast.List)):
        sites.extend((elt, _int(elt)) for elt in call.args[position].elts if _int(elt) is not None)
    elif len(call.args) > position and _int(call.args[position]) is not None:
        sites.append((call.args[position], _int(call.args[position])))
    return sites


def _bound_before(tree, ctx_name):
    """{name: first line it is bound}: backward's arguments (line 0) and names it assigns."""
    bound = {a.arg: 0 for a in tree.args.args + tree.args.kwonlyargs if a.arg != ctx_name}
    if tree.args.vararg is not None:
        bound[tree.args.vararg.arg] = 0
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = [node.target]
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                    bound.setdefault(name.id, node.end_lineno)
    return bound


def _nonlinear(stmt):
    """ids of the nodes under a denominator, a power or a nonlinear function's arguments (the
    condition of a `where` too, its values not)."""
    found = set()
    for node in ast.walk(stmt):
        under = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            under = [node.right]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            under = [node.left, node.right]
        elif isinstance(node, ast.Call):
            name, method = _call_name(node)
            if name == "where":
                under = [node.args[0]] if node.args and not method else []
            elif name in NONLINEAR:
                under = list(node.args) + ([node.func.value] if method else [])
        for part in under:
            found.update(id(n) for n in ast.walk(part))
    return found


def _containers(tree):
    """Names bound to a list, dict or set display or comprehension, or ``list(...)``."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and (isinstance(node.value, (ast.List, ast.ListComp, ast.Dict, ast.DictComp,
                                                                      ast.Set, ast.SetComp))
                                             or isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                                             and node.value.func.id in ("list", "dict", "set")):
            found.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return found


def _receivers(stmt):
    """{(name, id(argument))} for ``name.method(..., argument, ...)`` in ``stmt``: an edit giving a
    list to its own ``append`` makes it contain itself (and numpy recurse into it for ever)."""
    found = set()
    for call in ast.walk(stmt):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
            for arg in call.args:
                found.update((call.func.value.id, id(n)) for n in ast.walk(arg))
    return found


def _own_nodes(stmt):
    """The nodes of ``stmt`` that are not inside a nested statement (those are visited on their own)."""
    stack = [stmt]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed([c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.stmt)]))


def _exchanged(items, a, b):
    items = list(items)
    items[a], items[b] = items[b], items[a]
    return items


def _times_everywhere(stmt, name, factor, sign=False):
    """``stmt`` with every read of ``name`` made ``(name * factor)`` (``sign``: ``factor.sign()``)."""
    class Times(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id == name and isinstance(node.ctx, ast.Load):
                times = ast.Name(factor, ast.Load())
                if sign:
                    times = ast.Call(ast.Attribute(times, "sign", ast.Load()), [], [])
                return ast.BinOp(ast.Name(name, ast.Load()), ast.Mult(), times)
            return node

    return Times().visit(stmt)


def _with_accumulate(call):
    keywords = [kw for kw in call.keywords if kw.arg != "accumulate"]
    return ast.Call(call.func, call.args, keywords + [ast.keyword("accumulate", ast.Constant(True))])


def _mult_factors(node):
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _mult_factors(node.left) + _mult_factors(node.right)
    return [node]


def _has_slice(index):
    return any(isinstance(e, ast.Slice) for e in (index.elts if isinstance(index, ast.Tuple) else [index]))


def _index_put(target, value, wrap=False):
    """``target.index_put_((i, j), value, accumulate=True)``; ``wrap``: each index through
    ``torch.as_tensor`` (an int column, ``g[ids, q]``, is no index for index_put_)."""
    index = target.slice
    elts = index.elts if isinstance(index, ast.Tuple) else [index]
    if wrap:
        elts = [ast.Call(ast.Attribute(ast.Name("torch", ast.Load()), "as_tensor", ast.Load()), [e], []) for e in elts]
    return ast.Call(ast.Attribute(target.value, "index_put_", ast.Load()),
                    [ast.Tuple(list(elts), ast.Load()), value], [ast.keyword("accumulate", ast.Constant(True))])
