"""What forward's source says about each parameter (read with ``ast``; nothing is evaluated).

``read_hints(target, names)`` returns one ``Hint`` per parameter name: the kind of value the
forward needs there (a float tensor, an int64 index, a bool mask, a Python int/float/bool/str),
strings it is compared with, the number of dimensions and squareness its asserts demand, and the
shapes einsum/matmul imply. The input builder turns hints into a first guess and the shape search
(``shape_search.py``) checks every guess by running forward: a wrong hint costs a trial, never a
verdict.
"""
from __future__ import annotations

import ast
import textwrap
import typing
from dataclasses import dataclass, field
from typing import Optional

from gradcli.check import (callable_params, infer_calls, infer_flow, infer_matmul, infer_values, module_arguments,
                           solver_operators, string_tuples)
from gradcli.check.infer_shapes import _conjuncts, _ndim_of, _size_of
from gradcli.check import source_code

# positional argument index of `dim` for methods/functions taking (dim, ...) or (x, dim)
_DIM_METHODS = {"sum", "mean", "prod", "softmax", "log_softmax", "cumsum", "cumprod", "argmax", "argmin",
                "unsqueeze", "squeeze", "size", "flip", "narrow", "select", "logsumexp", "std", "var", "norm_dim",
                "max", "min", "amax", "amin", "chunk", "split", "topk", "kthvalue", "median", "roll", "movedim"}
_DIM_FUNCTIONS = {"softmax": 1, "log_softmax": 1, "cat": 1, "stack": 1, "cumsum": 1, "sum": 1, "mean": 1,
                  "unsqueeze": 1, "squeeze": 1, "logsumexp": 1, "flip": 1, "gather": 1, "index_select": 1}
_INT_CALLS = {"range", "int"}
# (method or function name) -> {argument position: (index kind, position of the tensor it indexes or None)}
_INDEX_METHODS = {"gather": {1: ("gather", "self")}, "scatter": {1: ("gather", "self")},
                  "scatter_add": {1: ("gather", "self")}, "scatter_reduce": {1: ("gather", "self")},
                  "index_select": {1: ("select", "self")}, "index_add": {1: ("select", "self")},
                  "index_copy": {1: ("select", "self")}, "index_fill": {1: ("select", "self")},
                  "take": {0: ("lookup", "self")}, "take_along_dim": {0: ("gather", "self")}}
_INDEX_FUNCTIONS = {"gather": {2: ("gather", 0)}, "scatter": {2: ("gather", 0)}, "scatter_add": {2: ("gather", 0)},
                    "index_select": {2: ("select", 0)}, "take": {1: ("lookup", 0)},
                    "take_along_dim": {1: ("gather", 0)}, "embedding": {0: ("lookup", 1)},
                    "cross_entropy": {1: ("target", 0)}, "nll_loss": {1: ("target", 0)},
                    "one_hot": {0: ("lookup", None)}, "bincount": {0: ("lookup", None)}}
_MASK_METHODS = {"masked_fill": 0, "masked_select": 0, "masked_scatter": 0}
_MASK_FUNCTIONS = {"where": 0, "masked_fill": 1, "masked_select": 1}
_MATMUL_CALLS = {"matmul", "mm", "bmm"}


@dataclass
class Hint:
    kind: Optional[str] = None  # None (a float tensor, as far as the source says) | index | mask | int | float | bool | str
    why: str = ""  # how the source uses it, for -v and not_checked ("used as dim= in forward")
    choices: list = field(default_factory=list)  # str: the strings forward compares it with
    index_kind: Optional[str] = None  # gather | select | lookup | target
    index_of: Optional[str] = None  # the parameter it indexes (its range and shape follow that one)
    mask_of: Optional[str] = None
    ndim: Optional[int] = None
    square: bool = False  # the last two sizes are equal
    shape: Optional[tuple] = None  # implied outright (einsum subscripts, matmul pairs)
    optional: bool = False  # compared with None / Optional[...] annotation
    backward_none: bool = False  # every backward return gives None in its place
    ctx_attribute: bool = False  # stored as ctx.NAME = NAME (how Python numbers are kept), not save_for_backward
    tensor_use: bool = False  # a tensor method/attribute is used on it (x.shape, x.exp(), ...)
    structure: Optional[str] = None  # sym | spd: forward takes eigh / cholesky of it (infer_calls.py)
    index_dim: Optional[int] = None  # gather/scatter along this dim: the index has size 1 there
    call_args: Optional[int] = None  # callable: the number of arguments forward calls it with
    stand_in: Optional[str] = None  # callable: the fn:NAME that stands in for it (None: tanh); infer_calls.py
    reshaped_to: Optional[str] = None  # ``p.reshape_as(q)``: p has q's number of elements (infer_values.py)
    object_class: Optional[type] = None  # object: a dataclass / NamedTuple annotation, built from its defaults
    no_grad: bool = False  # forward raises when it requires grad (``if ctx.needs_input_grad[0]: raise``)
    leading: Optional[int] = None  # ``a, b = p`` (forward, or backward on the saved p): that many along dim 0
    unit_dims: tuple = ()
    dropped: list = field(default_factory=list)  # callable: parameters reaching it through arguments fn:tanh ignores  # dims whose size must be 1 (``if p.size(-1) > 1: raise``)


def read_hints(target, names: list) -> dict:
    """{name: Hint} for forward's parameters ``names``; empty hints when the source cannot be read."""
    hints = {n: Hint() for n in names}
    forward = _function_node(getattr(target.cls, "forward", None))
    if forward is None:
        return hints
    try:
        _annotations(target.cls.forward, hints)
        _Uses(hints, infer_flow.views(forward, hints)).visit(forward)
        infer_flow.backward_nones(_function_node(getattr(target.cls, "backward", None)), names, hints)
        infer_flow.refused_grads(forward, names, hints)
        infer_flow.setup_context(target.cls, names, hints)
        infer_matmul.matmul_shapes(forward, hints)
        infer_calls.refine(forward, target.cls.forward, hints)
        solver_operators.refine(forward, hints)  # linear_cg(prec.matmul, ...): prec is definite
        infer_calls.annotated_objects(target.cls.forward, hints)
        infer_calls.inverse_pairs(hints)
        callable_params.refine(target, hints)  # .apply(fn, *inputs, *fn.parameters()): fn:sinh@args_1
        module_arguments.refine(target, forward, hints)  # args[0].parameters(): args_0 is a module
        string_tuples.refine(target.cls.forward, hints)  # kwarg_keys: Tuple[str, ...] -> ()
        infer_values.refine(forward, _function_node(getattr(target.cls, "backward", None)), hints)
        _scalars(target.cls, forward, hints)
    except Exception:  # noqa: BLE001 -- hints only order the guesses: without them, inputs are built as before
        return {n: Hint() for n in names}
    return hints


def _function_node(fn) -> Optional[ast.AST]:
    fn = getattr(fn, "__func__", fn)
    try:
        source = textwrap.dedent(source_code.source(fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _annotations(fn, hints: dict):
    try:
        annotations = typing.get_type_hints(getattr(fn, "__func__", fn))
    except Exception:  # noqa: BLE001 -- unresolvable annotations: read them as text instead
        annotations = dict(getattr(getattr(fn, "__func__", fn), "__annotations__", {}) or {})
    for name, hint in hints.items():
        if name not in annotations:
            continue
        text = annotations[name] if isinstance(annotations[name], str) else repr(annotations[name])
        bare = getattr(annotations[name], "__name__", text)
        for python_type in ("bool", "int", "float", "str"):
            if bare == python_type or text in (python_type, f"<class '{python_type}'>"):
                hint.kind, hint.why = python_type, f"annotated {python_type}"
        if "Optional" in text or "None" in text:
            hint.optional = True


def _name(node) -> Optional[str]:
    return node.id if isinstance(node, ast.Name) else None


def _dim_arg(node: ast.Call, position: int) -> Optional[int]:
    """The constant dim of ``x.gather(dim, i)`` (position 0) / ``torch.gather(x, dim, i)`` (1) or ``dim=``."""
    value = next((k.value for k in node.keywords if k.arg == "dim"),
                 node.args[position] if position < len(node.args) else None)
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and isinstance(value.operand, ast.Constant):
        value = ast.Constant(-value.operand.value) if isinstance(value.operand.value, int) else None
    return value.value if isinstance(value, ast.Constant) and type(value.value) is int else None


def _call_name(node: ast.Call) -> tuple:
    """(called name, the object it is called on or None): ``x.sum(d)`` -> ("sum", x node)."""
    if isinstance(node.func, ast.Attribute):
        return node.func.attr, node.func.value
    if isinstance(node.func, ast.Name):
        return node.func.id, None
    return None, None


def _is_module(node) -> bool:
    """``torch.gather``, ``F.embedding``, ``torch.nn.functional.x``: a function, not a method."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in ("torch", "F", "functional", "nn", "np", "gradcli")


def _scalars(cls, forward, hints: dict):
    """``p.item()`` in forward, and in backward on the tensors forward saved (infer_flow.py)."""
    infer_flow.scalar_uses(forward, cls.forward, hints, hints)
    backward = _function_node(getattr(cls, "backward", None))
    if backward is not None:
        infer_flow.backward_calls(forward, backward, hints)
        saved = infer_flow.saved_names(forward, backward, hints)
        if saved:
            infer_flow.scalar_uses(backward, cls.backward, hints, hints, rename=saved)
        infer_flow.unpacked_tensors(backward, hints, saved)
    infer_flow.unpacked_tensors(forward, hints, {n: n for n in hints})


COUNT_CHOICES = (2, 3, 1)  # a count (range(n), [x] * n): 1 would run the loop once and test no accumulation


def count_choices(hint):
    """A parameter used as a count: its first value is 2, not 1 (one copy exercises no sum over copies)."""
    if hint is not None and hint.kind == "int" and not hint.choices:
        hint.choices = list(COUNT_CHOICES)


class _Uses(ast.NodeVisitor):
    def __init__(self, hints: dict, views: Optional[dict] = None):
        self.hints = hints
        self.views = views or {}  # locals holding a view of a parameter (an index stays an index)

    def _set(self, name, kind, why, **extra):
        hint = self.hints.get(name)
        if hint is None or (hint.kind is not None and hint.kind != kind and hint.why.startswith("annotated")):
            return
        if hint.kind in ("index", "mask") and kind in ("int", "float"):
            return
        hint.kind, hint.why = kind, hint.why if hint.kind == kind else why
        for key, value in extra.items():
            setattr(hint, key, value)

    def visit_Call(self, node: ast.Call):
        name, obj = _call_name(node)
        module = obj is not None and _is_module(obj)
        for kw in node.keywords:
            if kw.arg == "dim" and _name(kw.value) in self.hints:
                self._set(_name(kw.value), "int", f"used as dim= in {name}()")
        if name in _INT_CALLS and obj is None and node.args and _name(node.args[0]) in self.hints:
            self._set(_name(node.args[0]), "int", f"used in {name}()")
            if name == "range" and len(node.args) == 1:
                count_choices(self.hints[_name(node.args[0])])
        if name == "float" and obj is None and node.args and _name(node.args[0]) in self.hints:
            self._set(_name(node.args[0]), "float", "used in float()")
        if obj is not None and not module:
            if name in _DIM_METHODS and node.args and _name(node.args[0]) in self.hints:
                self._set(_name(node.args[0]), "int", f"used as .{name}(dim)")
            if name in ("transpose", "swapaxes"):
                for a in node.args[:2]:
                    if _name(a) in self.hints:
                        self._set(_name(a), "int", f"used as .{name}(dim)")
            if name in ("gather", "scatter", "scatter_add", "index_select", "index_add") and node.args \
                    and _name(node.args[0]) in self.hints:
                self._set(_name(node.args[0]), "int", f"used as .{name}(dim, ...)")
            self._indexes(_INDEX_METHODS.get(name, {}), node.args, obj, name, _dim_arg(node, 0))
            if name in _MASK_METHODS and len(node.args) > _MASK_METHODS[name]:
                self._mask(node.args[_MASK_METHODS[name]], _name(obj), name)
            if _name(obj) in self.hints:
                self.hints[_name(obj)].tensor_use = True
        else:
            if name in _DIM_FUNCTIONS and len(node.args) > _DIM_FUNCTIONS[name] \
                    and _name(node.args[_DIM_FUNCTIONS[name]]) in self.hints:
                self._set(_name(node.args[_DIM_FUNCTIONS[name]]), "int", f"used as the dim of {name}()")
            self._indexes(_INDEX_FUNCTIONS.get(name, {}), node.args, None, name, _dim_arg(node, 1))
            if name in _MASK_FUNCTIONS and len(node.args) > _MASK_FUNCTIONS[name]:
                of = node.args[0] if name != "where" else (node.args[1] if len(node.args) > 1 else None)
                self._mask(node.args[_MASK_FUNCTIONS[name]], _name(of), name)
            if name == "einsum":
                self._einsum(node.args)
        self.generic_visit(node)

    def _indexes(self, table: dict, args, obj, fname, dim=None):
        for position, (kind, of) in table.items():
            index = infer_flow.root(args[position], self.hints, self.views) if position < len(args) else None
            if index is not None:
                source = _name(obj) if of == "self" else (_name(args[of]) if isinstance(of, int) and of < len(args)
                                                          else None)
                self._set(index, "index", f"an index of {fname}()", index_kind=kind,
                          index_of=source if source in self.hints else None, index_dim=dim)

    def _mask(self, node, of, fname):
        if infer_flow.root(node, self.hints, self.views) is not None:
            self._set(infer_flow.root(node, self.hints, self.views), "mask", f"the mask of {fname}()", mask_of=of if of in self.hints else None)

    def _einsum(self, args):
        if not args or not isinstance(args[0], ast.Constant) or not isinstance(args[0].value, str):
            return
        equation = args[0].value.replace(" ", "").split("->")[0]
        operands = equation.split(",")
        sizes, pool = {}, iter((3, 4, 5, 2, 6, 7, 8, 9, 10, 11, 12, 13))
        for subscripts, arg in zip(operands, args[1:]):
            if "." in subscripts or _name(arg) not in self.hints:
                continue
            for c in subscripts:
                if c not in sizes:
                    sizes[c] = next(pool, 2)
            shape = tuple(sizes[c] for c in subscripts)
            self.hints[_name(arg)].shape = shape

    def visit_Subscript(self, node: ast.Subscript):
        # W[idx] with idx a parameter: an embedding-style lookup
        index = node.slice
        if _name(index) in self.hints and _name(node.value) in self.hints:
            self._set(_name(index), "index", f"an index of {_name(node.value)}[...]", index_kind="lookup",
                      index_of=_name(node.value))
        # x.shape[d]: d is an int
        if isinstance(node.value, ast.Attribute) and node.value.attr == "shape" and _name(index) in self.hints:
            self._set(_name(index), "int", "used as .shape[dim]")
        for name, kind, why, extra in infer_flow.subscript_uses(node, self.hints, self.views):
            self._set(name, kind, why, **extra)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute):
        if _name(node.value) in self.hints and node.attr in ("shape", "dtype", "device", "ndim", "T", "mT", "data"):
            self.hints[_name(node.value)].tensor_use = True
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign):
        pairs = [(t, node.value) for t in node.targets]
        for t in node.targets:  # ctx.n, ctx.scale = n, scale
            if isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple) and len(t.elts) == len(node.value.elts):
                pairs += list(zip(t.elts, node.value.elts))
        for t, v in pairs:
            if _name(v) in self.hints and isinstance(t, ast.Attribute) and _name(t.value) == "ctx":
                self.hints[_name(v)].ctx_attribute = True
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare):
        sides = [node.left] + list(node.comparators)
        names = [_name(s) for s in sides if _name(s) in self.hints]
        strings = []
        for s in sides:
            if isinstance(s, ast.Constant) and isinstance(s.value, str):
                strings.append(s.value)
            elif isinstance(s, (ast.Tuple, ast.List, ast.Set)):
                strings += [e.value for e in s.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        for n in names:
            if strings:
                self._set(n, "str", "compared with strings in forward")
                hint = self.hints[n]
                hint.choices += [s for s in strings if s not in hint.choices]
            if any(isinstance(s, ast.Constant) and s.value is None for s in sides):
                self.hints[n].optional = True
        self._shape_condition(node, negated=False)
        self.generic_visit(node)

    def _int_tests(self, test):
        """``if mode == 1`` / ``assert split_dim == 0``: an int, with those values to try first;
        ``if nu == 0.5: ... elif nu == 1.5:``: a float, likewise."""
        for cond in list(_conjuncts(test, ast.And)) + list(_conjuncts(test, ast.Or)):
            if not isinstance(cond, ast.Compare) or len(cond.ops) != 1:
                continue
            a, b = cond.left, cond.comparators[0]
            for name_node, other in ((a, b), (b, a)):
                values = [other] if not isinstance(other, (ast.Tuple, ast.List, ast.Set)) else other.elts
                ints = [v.value for v in values if isinstance(v, ast.Constant) and type(v.value) is int]
                floats = [v.value for v in values if isinstance(v, ast.Constant) and type(v.value) is float]
                name = _name(name_node)
                if name in self.hints and ints and len(ints) == len(values):
                    self._set(name, "int", "compared with ints in forward")
                    hint = self.hints[name]
                    if hint.kind == "int":
                        hint.choices += [v for v in ints if v not in hint.choices]
                elif name in self.hints and floats and len(floats) + len(ints) == len(values) \
                        and isinstance(cond.ops[0], (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
                    self._set(name, "float", "compared with numbers in forward")
                    hint = self.hints[name]
                    if hint.kind == "float":
                        hint.choices += [float(v) for v in floats + ints if float(v) not in hint.choices]

    def visit_If(self, node: ast.If):
        for name in infer_flow.condition_names(node.test):
            self._set(name, "bool", "used as a condition in forward")
        self._int_tests(node.test)
        raises = any(isinstance(s, ast.Raise) for s in node.body)
        if raises:  # if x.dim() != 3: raise ...  -> x.dim() == 3
            for cond in _conjuncts(node.test, ast.Or):
                if isinstance(cond, ast.Compare):
                    self._shape_condition(cond, negated=True, checked=True)
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp):
        for name in infer_flow.condition_names(node.test):
            self._set(name, "bool", "used as a condition in forward")
        self._int_tests(node.test)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert):
        self._int_tests(node.test)
        for cond in _conjuncts(node.test, ast.And):
            if isinstance(cond, ast.Compare):
                self._shape_condition(cond, negated=False, checked=True)
        self.generic_visit(node)

    def _shape_condition(self, node: ast.Compare, negated: bool, checked: bool = False):
        """``checked``: the condition is asserted, or raises when false (not any branch of forward)."""
        if len(node.ops) != 1:
            return
        op = node.ops[0]
        equal = isinstance(op, ast.Eq) if not negated else isinstance(op, ast.NotEq)
        if not equal:
            if negated and checked:  # if p.size(-1) > 1: raise / if p.shape[0] >= 2: raise  -> that size is 1
                self._unit_size(node)
            return
        left, right = node.left, node.comparators[0]
        for a, b in ((left, right), (right, left)):
            name = _ndim_of(a)
            if name in self.hints and isinstance(b, ast.Constant) and isinstance(b.value, int):
                self.hints[name].ndim = b.value
        la, lb = _size_of(left), _size_of(right)
        if checked and la and la[0] in self.hints and isinstance(right, ast.Constant) and right.value == 1 and la[1] not in \
                self.hints[la[0]].unit_dims:  # assert p.size(-1) == 1 / if p.shape[0] != 1: raise
            self.hints[la[0]].unit_dims += (la[1],)
        if la and lb and la[0] == lb[0] and la[0] in self.hints and abs(la[1] - lb[1]) == 1:  # M.shape[1] == M.shape[2]
            self.hints[la[0]].square = True


    def _unit_size(self, node: ast.Compare):
        size, op, bound = _size_of(node.left), node.ops[0], node.comparators[0]
        if not size or size[0] not in self.hints or not isinstance(bound, ast.Constant) or type(bound.value) is not int:
            return
        if (isinstance(op, ast.Gt) and bound.value == 1) or (isinstance(op, ast.GtE) and bound.value == 2):
            if size[1] not in self.hints[size[0]].unit_dims:
                self.hints[size[0]].unit_dims += (size[1],)
