"""Plans for automatic inputs and the small search over them (the oracle: forward runs and its
floating outputs are finite).

A ``Plan`` says, per automatic parameter, what to draw: a float tensor of a shape, an int64 index
in the range of the tensor it indexes, a bool mask, or a Python value. ``first_plan`` reads the
source's hints; ``alternatives`` yields the plans tried when it fails: other Python values, one
parameter's shape at a time (last parameters first: biases and scales are trailing), whole shape
families (square 4x4, batch x D x D 2x3x3, (n,k)·(k,m) chains, 1-d, 3-d, 4-d NCHW), and the plan
without hints (in case the source read wrong).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Optional

INT_CHOICES = (1, 0, 2, -1)
# not 1.0: a backward that forgets the factor would pass at 1. The k-th float parameter gets the k-th
# value (ascending: clamp(x, low, high) gets a real range)
FLOAT_CHOICES = (0.5, 1.5, 2.5, -0.5)
FLOAT_CHOICE = FLOAT_CHOICES[0]
TOLERANCE_CHOICE = 1e-6  # a float parameter named eps/epsilon/tol/tolerance (gradient_eps, ...)
MAX_ALTERNATIVES = 160


@dataclass(frozen=True)
class Plan:
    kind: str  # tensor | index | mask | int | float | bool | str | shape (a tuple of ints) | callable | none
    shape: Optional[tuple] = None  # tensors; for index/mask: None = follow the tensor they belong to
    value: Any = None  # Python values
    why: str = ""  # what in the source chose this (shown with -v)
    requires_grad: bool = True
    structure: Optional[str] = None  # sym | spd matrices (forward takes eigh / cholesky of it)


def first_plans(hints: dict, base_shape: tuple) -> dict:
    """{name: Plan}: each parameter's first guess; float parameters get ascending values."""
    plans = {n: first_plan(h, base_shape) for n, h in hints.items()}
    floats = [n for n, p in plans.items() if p.kind == "float" and not _is_tolerance(n) and not (hints[n] and hints[n].choices)]
    for k, n in enumerate(floats):
        plans[n] = replace(plans[n], value=FLOAT_CHOICES[k % len(FLOAT_CHOICES)])
    for n, p in plans.items():
        if p.kind == "float" and _is_tolerance(n) and not (hints[n] and hints[n].choices):  # eps, tol: a small number, as their defaults are
            plans[n] = replace(p, value=TOLERANCE_CHOICE)
    return plans


def _is_tolerance(name: str) -> bool:
    return bool(re.search(r"(^|_)(eps|epsilon|tol|tolerance)($|_)", name.lower()))


def first_plan(hint, base_shape: tuple) -> Plan:
    """The first guess for one parameter from its hint."""
    kind = hint.kind if hint is not None else None
    if kind == "int":
        return Plan("int", value=hint.choices[0] if hint.choices else INT_CHOICES[0], why=hint.why)
    if kind == "float":  # the first number forward compares it with (nu == 0.5), else FLOAT_CHOICE
        return Plan("float", value=hint.choices[0] if hint.choices else FLOAT_CHOICE, why=hint.why)
    if kind == "bool":
        return Plan("bool", value=False, why=hint.why)
    if kind == "str":
        return Plan("str", value=hint.choices[0] if hint.choices else "", why=hint.why)
    if kind in ("index", "mask"):
        return Plan(kind, why=hint.why)
    if kind == "object":  # a dataclass / NamedTuple annotation whose fields all have defaults
        return Plan("object", value="default()", why=hint.why)
    if kind == "callable":  # a function or module forward calls on a tensor: tanh (smooth, shape-preserving)
        return Plan("callable", value=hint.stand_in or "tanh", why=hint.why)  # or a pairwise distance
    if kind == "none":  # a process group passed as group=: the default one
        return Plan("none", why=hint.why)
    if kind == "strings":  # annotated Tuple[str, ...] (string_tuples.py): no names
        return Plan("shape", value=(), why=hint.why)
    if kind == "shape":  # a size forward draws or views with: the base shape
        return Plan("shape", value=tuple(base_shape), why=hint.why)
    if hint is not None and hint.structure is not None:
        return Plan("tensor", shape=hinted_shape(hint, base_shape), why=hint.why, structure=hint.structure)
    if hint is not None and hint.backward_none and hint.ctx_attribute and not hint.tensor_use:
        return Plan("float", value=FLOAT_CHOICE, why="kept on ctx, and backward returns None for it")
    if hint is not None and hint.no_grad:  # forward raises when it requires grad
        return Plan("tensor", shape=hinted_shape(hint, base_shape), requires_grad=False,
                    why="forward refuses it requiring grad (ctx.needs_input_grad)")
    return Plan("tensor", shape=hinted_shape(hint, base_shape), why=_shape_why(hint))


def hinted_shape(hint, base_shape: tuple) -> tuple:
    shape = _hinted_shape(hint, base_shape)
    if hint is None or not hint.unit_dims or not shape:
        return shape
    out = list(shape)  # if p.size(-1) > 1: raise  -> size 1 there
    for d in hint.unit_dims:
        if -len(out) <= d < len(out):
            out[d] = 1
    return tuple(out)


def _hinted_shape(hint, base_shape: tuple) -> tuple:
    if hint is None:
        return tuple(base_shape)
    if hint.leading is not None and hint.shape is None:  # B, C = p: p stacks them along dim 0
        return (hint.leading,) + tuple(base_shape)
    if hint.shape is not None:
        return tuple(hint.shape)
    if hint.ndim is not None:
        n = hint.ndim
        if n <= 0:
            return ()
        family = {1: (4,), 2: (4, 4) if hint.square else tuple(base_shape) if len(base_shape) == 2 else (3, 4),
                  3: (2, 3, 3) if hint.square else (2, 3, 4), 4: (2, 3, 4, 4)}
        return family.get(n, (2,) * (n - 2) + ((3, 3) if hint.square else (3, 4)))
    if hint.square:
        return (4, 4)
    return tuple(base_shape)


def _shape_why(hint) -> str:
    if hint is None:
        return ""
    if hint.shape is not None:  # or a callable's parameter (callable_params.py), whose why says so
        return hint.why if hint.why.startswith("a parameter of ") else "shape fits forward's matmul/einsum"
    if hint.ndim is not None or hint.square or hint.unit_dims:
        return "shape satisfies forward's shape checks"
    if hint.leading is not None:
        return f"unpacked into {hint.leading} along its first dim"
    return ""


def variants_of_one(base: tuple, sizes=()) -> list:
    """Shapes to try for one tensor parameter, given its planned shape (3x4 by default) and the sizes
    the other tensors have (a bias is usually 1-d with one of them, the trailing ones first)."""
    n = base[-1] if base else 4
    m = base[0] if base else 3
    shapes = [(k,) for k in sizes] + [(n,), (m,), (1, n)] + [(1, k) for k in sizes]
    shapes += [(n, n), (m, m), (n, m), (2, m, n), (), (1,), (m, 1), (2, m, m), (2, n, n),
               (2, m, n, n), (5, n), (n, 5), (m, 5), (5, m), (2, n, 5), (2, 5, m)]
    out = []
    for s in shapes:
        if s != tuple(base) and s not in out:
            out.append(s)
    return out


FAMILIES = ((4, 4), (2, 3, 3), (4,), (2, 3, 4), (2, 3, 4, 4), (3,), ())


def chains(count: int) -> list:
    """(n,k)·(k,m)·...: parameter i has shape (d_i, d_{i+1}); batched, and each transposed pair."""
    dims = (3, 4, 5, 2, 6, 7, 8)
    plain = [(dims[i % 7], dims[(i + 1) % 7]) for i in range(count)]
    out = [plain, [(2,) + s for s in plain]]
    if count >= 2:  # x @ w.t(): (3,4) and (5,4), bias (5,)
        out.append([(3, 4), (5, 4)] + [(5,)] * (count - 2))
        out.append([(3, 4), (4, 5)] + [(5,)] * (count - 2))
    return out


def alternatives(plans: dict, hints: dict, base_shape: tuple):
    """Plans to try after ``plans`` failed, most likely first (at most MAX_ALTERNATIVES)."""
    names = list(plans)
    yielded = 0
    seen = {_key(plans)}

    def fresh(candidate):
        nonlocal yielded
        k = _key(candidate)
        if k in seen or yielded >= MAX_ALTERNATIVES:
            return False
        seen.add(k)
        yielded += 1
        return True

    for name in reversed(names):  # other Python values, one parameter at a time
        p = plans[name]
        values = (list(hints[name].choices) + list(INT_CHOICES) if p.kind == "int" else
                  hints[name].choices if p.kind == "str" else
                  list(hints[name].choices) + list(FLOAT_CHOICES) if p.kind == "float" else
                  (True,) if p.kind == "bool" else ())
        for v in values:
            c = dict(plans, **{name: replace(p, value=v)})
            if fresh(c):
                yield c
    for name in names:  # an index picking one entry along its gather dim (a target per row), not repeats
        if plans[name].kind == "index" and hints[name] is not None and hints[name].index_dim is not None:
            c = dict(plans, **{name: replace(plans[name], value="one")})
            if fresh(c):
                yield c
    tensors = [n for n in reversed(names) if plans[n].kind == "tensor"]
    for name in tensors:  # one tensor's shape at a time
        sizes = []
        for other in reversed(names):
            for k in reversed(plans[other].shape or ()) if other != name and plans[other].kind == "tensor" else ():
                if k not in sizes:
                    sizes.append(k)
        shapes = variants_of_one(plans[name].shape, sizes)
        if len(plans[name].shape or ()) >= 2 and hints[name] is not None and hints[name].shape is not None:
            # a matmul operand stays a matrix: square ones with the others' sizes first
            shapes = [(k, k) for k in sizes] + [(j, k) for j in sizes for k in sizes if j != k] + shapes
        for s in shapes:
            c = dict(plans, **{name: replace(plans[name], shape=s, why="a shape forward accepts (shape search)")})
            if fresh(c):
                yield c
    ordered = [n for n in names if plans[n].kind == "tensor"]
    families = [[f] * len(ordered) for f in FAMILIES] + chains(len(ordered))
    for shapes in families:  # every tensor at once
        c = dict(plans)
        for n, s in zip(ordered, shapes):
            c[n] = replace(plans[n], shape=s, why="a shape forward accepts (shape search)")
        if fresh(c):
            yield c
    for name in tensors:  # pairs: two tensors' shapes at once, the last ones first
        for other in tensors:
            if other == name:
                continue
            for s in variants_of_one(plans[name].shape)[:8]:
                for t in variants_of_one(plans[other].shape)[:8]:
                    c = dict(plans)
                    c[name] = replace(plans[name], shape=s, why="a shape forward accepts (shape search)")
                    c[other] = replace(plans[other], shape=t, why="a shape forward accepts (shape search)")
                    if fresh(c):
                        yield c
    plain = {n: (Plan("tensor", shape=tuple(base_shape)) if plans[n].kind in ("tensor", "float") else plans[n])
             for n in names}
    if fresh(plain):  # the hints read wrong: tensors everywhere they allowed one
        yield plain


def _key(plans: dict) -> tuple:
    return tuple((n, p.kind, p.shape, repr(p.value)) for n, p in plans.items())


def index_layout(kind: Optional[str], of_shape: Optional[tuple], base_shape: tuple, dim: Optional[int] = None) -> tuple:
    """(shape, (low, high)) of an int64 index drawn for ``kind``, valid for the tensor it indexes; a
    gather along ``dim`` (an alternative plan: the first one repeats indices, which a backward using
    ``scatter`` instead of ``scatter_add`` gets wrong) picks one entry there (size 1: a target per row)."""
    source = tuple(of_shape) if of_shape else tuple(base_shape)
    smallest = max(1, min(source)) if source else 1
    if kind == "scalar":  # p.item() used as a dim: a one-element int64 tensor holding 0
        return (), (0, 1)
    if kind == "coords":  # x[idx[0], idx[1]]: one row of coordinates per dimension of x, valid in each
        return (max(1, len(source)), 4), (0, smallest)
    if kind == "gather" and dim is not None and -len(source) <= dim < len(source):
        shape = list(source)
        high, shape[dim] = shape[dim], 1
        return tuple(shape), (0, max(1, high))
    if kind == "gather":
        return source, (0, smallest)
    if kind == "target":
        if len(source) >= 2:
            return (source[0],), (0, source[1])
        return (), (0, source[0] if source else 1)
    if kind in ("select", "lookup"):
        return ((base_shape[-1] if base_shape else 4),), (0, max(1, source[0]) if kind == "lookup" and source
                                                         else smallest)
    return tuple(base_shape), (0, max(1, min(base_shape)) if base_shape else 1)
