"""The library calls the statement evaluator (``evaluator.py``) knows besides arithmetic, the
elementwise functions and the reductions: where, ones_like/zeros_like, clamp/clip, erf, softplus,
reshape/view, squeeze, expand_as, type_as/to, transpose/swapaxes/permute with literal dims,
einsum with a literal subscript string, one_hot with a class count, and eye. Each is computed with
numpy on the evaluated arguments; anything else raises ``Unsupported`` (nothing is ``eval``ed:
an einsum's subscripts are a string constant of the source, checked to be letters and ``,->.``).
"""
from __future__ import annotations

import ast
import math

import numpy as np

MORE = ("where", "ones_like", "zeros_like", "clamp", "clip", "erf", "softplus", "reshape", "view", "squeeze",
        "expand_as", "type_as", "to", "transpose", "swapaxes", "swapdims", "permute", "einsum", "one_hot", "eye",
        "unbind", "chunk", "split", "stack", "cat", "outer", "dot", "inverse", "cholesky_inverse", "diagonal",
        "index_add", "index_add_")
_SUBSCRIPT_CHARACTERS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ,->. ")


class Unsupported(Exception):
    pass


class Parts(tuple):
    """The tensors one call returns several of (``unbind``, ``chunk``, ``split``): unpacked by a
    tuple assignment (``gx, gy = grad.unbind(1)``) or indexed, never used in arithmetic."""


def more(evaluator, node):
    """The value of the call ``node`` (``node.func`` an attribute named in ``MORE``), as a method
    or a module function (``torch.where(c, x, y)``, ``x.where(c, y)``)."""
    attr, owner = node.func.attr, node.func.value
    args = list(node.args)
    module = evaluator._is_module(owner)
    if attr == "einsum" and module:
        return _einsum(evaluator, args, node.keywords)
    if attr in ("stack", "cat") and module:  # torch.stack([a, b], dim=1)
        return _joined(evaluator, attr, args, node.keywords)
    if attr == "eye" and module:  # torch.eye(n[, m], dtype=..., device=...): an identity matrix
        sizes = [evaluator.value(a) for a in args]
        if not 1 <= len(sizes) <= 2 or {k.arg for k in node.keywords} - {"dtype", "device"} or any(
                isinstance(d, tuple) or np.ndim(d) or float(d) != int(d) for d in sizes):
            raise Unsupported(attr)
        return np.eye(*(int(d) for d in sizes))
    if module:
        if not args:
            raise Unsupported(attr)
        base = evaluator.value(args.pop(0))
    else:
        base = evaluator.value(owner)
    if isinstance(base, tuple):
        raise Unsupported(attr)
    keywords = {k.arg: k.value for k in node.keywords}
    if attr in ("type_as", "to"):
        return np.asarray(base, dtype=float)
    if attr in ("ones_like", "zeros_like") and not args:
        return (np.ones_like if attr == "ones_like" else np.zeros_like)(np.asarray(base, dtype=float))
    if attr == "where" and len(args) == 2 and not keywords:
        if module:  # torch.where(condition, x, y)
            return np.where(np.asarray(base) != 0, evaluator.value(args[0]), evaluator.value(args[1]))
        return np.where(np.asarray(evaluator.value(args[0])) != 0, base, evaluator.value(args[1]))  # x.where(c, y)
    if attr in ("clamp", "clip"):
        low = evaluator.value(args[0]) if args else (evaluator.value(keywords["min"]) if "min" in keywords else None)
        high = evaluator.value(args[1]) if len(args) > 1 else (
            evaluator.value(keywords["max"]) if "max" in keywords else None)
        if set(keywords) - {"min", "max"} or (low is None and high is None):
            raise Unsupported(attr)
        return np.clip(np.asarray(base, dtype=float), low, high)
    if attr in SEVERAL:
        return _several(evaluator, attr, np.asarray(base, dtype=float), args, keywords)
    if keywords:
        raise Unsupported(attr)
    if attr in LINALG and len(args) == LINALG[attr][0]:
        return LINALG[attr][1](np.asarray(base, dtype=float), *[np.asarray(evaluator.value(a), dtype=float)
                                                                 for a in args])
    if attr == "erf" and not args:
        return np.vectorize(math.erf, otypes=[float])(np.asarray(base, dtype=float))
    if attr == "softplus" and not args:
        return np.logaddexp(0.0, np.asarray(base, dtype=float))
    if attr in ("reshape", "view"):
        shape = [evaluator.value(a) for a in args]
        if len(shape) == 1 and isinstance(shape[0], tuple):
            shape = list(shape[0])
        if not shape or any(isinstance(d, tuple) or np.ndim(d) or float(d) != int(d) for d in shape):
            raise Unsupported(attr)
        return np.reshape(np.asarray(base, dtype=float), tuple(int(d) for d in shape))
    if attr == "squeeze" and len(args) <= 1:
        array = np.asarray(base, dtype=float)
        if not args:
            return np.squeeze(array)
        dim = evaluator._int(args[0])
        return np.squeeze(array, axis=dim) if array.shape[dim] == 1 else array
    if attr == "expand_as" and len(args) == 1:
        return np.broadcast_to(np.asarray(base, dtype=float), np.shape(evaluator.value(args[0])))
    if attr in ("transpose", "swapaxes", "swapdims") and len(args) == 2:
        return np.swapaxes(np.asarray(base, dtype=float), evaluator._int(args[0]), evaluator._int(args[1]))
    if attr == "permute" and args and not module:
        dims = evaluator._int(args[0]) if len(args) == 1 else tuple(evaluator._int(a) for a in args)
        return np.transpose(np.asarray(base, dtype=float), dims if isinstance(dims, tuple) else (dims,))
    if attr == "one_hot" and module and len(args) == 1:
        classes = evaluator.value(args[0])
        labels = np.asarray(base)
        if np.ndim(classes) or float(classes) != int(classes) or labels.size == 0 or np.any(labels != np.round(labels)):
            raise Unsupported(attr)
        return np.eye(int(classes))[labels.astype(np.int64)]
    raise Unsupported(attr)


def _einsum(evaluator, args, keywords):
    if keywords or len(args) < 2 or not isinstance(args[0], ast.Constant) or not isinstance(args[0].value, str):
        raise Unsupported("einsum")
    subscripts = args[0].value
    if not set(subscripts) <= _SUBSCRIPT_CHARACTERS:
        raise Unsupported("einsum")
    operands = [np.asarray(evaluator.value(a), dtype=float) for a in args[1:]]
    return np.einsum(subscripts, *operands)


def _dim_keyword(evaluator, keywords, default=0):
    if set(keywords) - {"dim"}:
        raise Unsupported("keyword")
    return evaluator._int(keywords["dim"]) if "dim" in keywords else default


def _joined(evaluator, attr, args, keywords):
    """``torch.stack(list, dim)`` / ``torch.cat(list, dim)`` of evaluated tensors."""
    if not args or not isinstance(args[0], (ast.List, ast.Tuple)) or len(args) > 2:
        raise Unsupported(attr)
    arrays = [np.asarray(evaluator.value(e), dtype=float) for e in args[0].elts]
    dim = evaluator._int(args[1]) if len(args) == 2 else _dim_keyword(evaluator, {k.arg: k.value for k in keywords})
    return np.stack(arrays, axis=dim) if attr == "stack" else np.concatenate(arrays, axis=dim)


def _several(evaluator, attr, base, args, keywords):
    """unbind(dim) / chunk(n, dim) / split(size or sizes, dim) as ``Parts``; index_add(dim, index, source)
    and diagonal() as one array."""
    if attr == "diagonal" and not args and not keywords and base.ndim >= 2:
        return np.diagonal(base, 0, 0, 1)
    if attr in ("index_add", "index_add_"):
        if len(args) != 3 or keywords:
            raise Unsupported(attr)
        dim, index = evaluator._int(args[0]), np.asarray(evaluator.value(args[1]))
        source = np.asarray(evaluator.value(args[2]), dtype=float)
        if index.ndim != 1 or np.any(index != np.round(index)):
            raise Unsupported(attr)
        out = np.array(base, dtype=float)
        np.add.at(np.moveaxis(out, dim, 0), index.astype(np.int64), np.moveaxis(source, dim, 0))
        return out
    if attr == "unbind":
        dim = evaluator._int(args[0]) if args else _dim_keyword(evaluator, keywords)
        return Parts(np.moveaxis(base, dim, 0))
    if not args:
        raise Unsupported(attr)
    dim = evaluator._int(args[1]) if len(args) > 1 else _dim_keyword(evaluator, keywords)
    size = base.shape[dim]
    if attr == "chunk":
        count = evaluator._int(args[0])
        step = -(-size // count) if isinstance(count, int) and count > 0 else 0
        if not step:
            raise Unsupported(attr)
        return Parts(np.split(base, list(range(step, size, step)), axis=dim))
    sizes = evaluator._int(args[0])
    if isinstance(sizes, int):
        sizes = [sizes] * (-(-size // sizes)) if sizes > 0 else None
    if not sizes or sum(sizes) < size:
        raise Unsupported(attr)
    return Parts(np.split(base, list(np.cumsum(sizes)[:-1]), axis=dim))


SEVERAL = ("unbind", "chunk", "split", "diagonal", "index_add", "index_add_")
# name -> (number of further arguments, function): linear algebra on evaluated tensors
LINALG = {
    "outer": (1, lambda a, b: np.multiply.outer(a, b) if a.ndim == b.ndim == 1 else _refuse("outer")),
    "dot": (1, lambda a, b: np.dot(a, b) if a.ndim == b.ndim == 1 else _refuse("dot")),
    "inverse": (0, np.linalg.inv),
    "cholesky_inverse": (0, lambda lower: np.linalg.inv(lower @ np.swapaxes(lower, -1, -2))),
}


def _refuse(what):
    raise Unsupported(what)


def special(name, z):
    """lgamma/digamma elementwise (mpmath, imported when a backward calls one: numpy has neither)."""
    import mpmath

    f = getattr(mpmath, name)
    return np.vectorize(lambda t: float(mpmath.re(f(t))), otypes=[float])(np.asarray(z, dtype=float))


def assigns_or_changes(stmt, name) -> bool:
    """``stmt`` binds or changes ``name`` (an assignment, an augmented one, an in-place method)."""
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
            return True
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr.endswith("_")
               and isinstance(n.func.value, ast.Name) and n.func.value.id == name
               for n in ast.walk(stmt) if isinstance(stmt, ast.Expr))
