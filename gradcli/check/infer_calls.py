"""More of what forward's source says about its parameters (``infer.read_hints`` calls ``refine``):

* a parameter forward calls (``fn(x)``, ``Fm.forward(x)``, ``ctx.fn = fn`` then ``ctx.fn(x)``): a callable;
  one named like a distance (``dist``, ``sq_dist_func``) called with two tensors: the pairwise distance
  stand-in (``fn:cdist``; ``fn:sqdist`` when the name says squared), and a tensor that scales both of its
  arguments (``dist(x1 / l, x2 / l)``) is one value along the rows (size 1 at dim -2): rows of x1 and x2 pair
  up with each other, not with rows of l;
* a callable ``fn`` with a partner named its inverse (``fn_inverse``, ``fn_inv``, ``inverse_fn``): an
  invertible pair of stand-ins, ``fn:sinh`` and ``fn:asinh`` (a backward that recomputes the input from the
  output with the inverse needs a real one);
* a parameter used as a size (``torch.randn(shape)``, ``x.new_empty(shape)``, ``x.view(shape)``): a
  tuple of ints;
* ``b, c, h, w = x.shape``: x has four dimensions;
* ``torch.linalg.eigh(A)`` / ``symeig`` / ``eigvalsh``: A is a symmetric matrix; ``cholesky(A)``: a
  symmetric positive definite one;
* a parameter annotated with a dataclass or NamedTuple whose fields all have defaults (``p:
  LIFParameters``): that object, built from its defaults (SPEC ``default()``);
* a parameter handed to a helper function of the same package (``afb1d(x, h0, mode=mode)``): what
  that helper's own source says about its parameter (``mode == 'zero'``: one of those strings), one
  call deep.

Nothing is evaluated; the hints only order the guesses, and forward running is the oracle.
"""
from __future__ import annotations

import ast
import inspect
import re
import textwrap
from typing import Optional

from gradcli.check import source_code

_SIZE_FUNCTIONS = {"randn", "rand", "zeros", "ones", "empty", "full", "Size"}
_SIZE_METHODS = {"new_empty", "new_zeros", "new_ones", "new_full", "expand", "view", "reshape", "repeat"}
_SYMMETRIC = {"eigh": "sym", "eigvalsh": "sym", "symeig": "sym", "cholesky": "spd", "cholesky_ex": "spd"}
HELPER_DEPTH = 1  # helpers of helpers are not read


def refine(forward: ast.AST, fn, hints: dict, depth: int = 0):
    """Add to ``hints`` (infer.Hint per parameter name) what the uses above say; ``fn`` is the live
    forward (its globals resolve the helpers it calls)."""
    ctx_callables = _ctx_callables(forward, hints)
    for node in ast.walk(forward):
        if isinstance(node, ast.Call):
            _called(node, hints, ctx_callables)
            if depth == 0:
                _dropped(node, forward, hints, ctx_callables)
            _sizes(node, hints)
            _symmetric(node, hints)
            if depth < HELPER_DEPTH:
                _helper(node, fn, hints, depth)
        elif isinstance(node, ast.Assign):
            _unpacked_shape(node, hints)


def inverse_pairs(hints: dict):
    """``fn`` a callable and ``fn_inverse`` (``fn_inv``, ``inverse_fn``, ``inv_fn``) a parameter nothing else
    claimed (a callable or free): the pair sinh / asinh, smooth and inverse to each other everywhere."""
    for name, hint in hints.items():
        if hint.kind != "callable" or hint.stand_in is not None:
            continue
        for partner in (f"{name}_inverse", f"{name}_inv", f"inverse_{name}", f"inv_{name}"):
            other = hints.get(partner)
            if other is None or other.stand_in is not None or other.tensor_use \
                    or other.kind not in (None, "callable"):
                continue
            hint.stand_in, other.kind, other.stand_in = "sinh", "callable", "asinh"
            hint.why = f"called, and {partner} is its inverse: an invertible stand-in, sinh (fn:sinh)"
            other.why = f"the inverse of {name}: asinh, the inverse of {name}'s stand-in sinh (fn:asinh)"
            break


def _name(node) -> Optional[str]:
    return node.id if isinstance(node, ast.Name) else None


def _free(hints, name):
    """The hint of ``name`` when nothing has claimed its kind yet."""
    hint = hints.get(name)
    return hint if hint is not None and hint.kind is None else None


def _ctx_callables(forward, hints) -> dict:
    """``ctx.fn = fn``: {"fn" attribute: parameter}."""
    out = {}
    for node in ast.walk(forward):
        if isinstance(node, ast.Assign) and _name(node.value) in hints:
            for t in node.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                    out[t.attr] = _name(node.value)
    return out


def _called(node: ast.Call, hints, ctx_callables):
    func, name = node.func, None
    if _name(func) in hints:
        name = _name(func)
    elif isinstance(func, ast.Attribute) and func.attr in ("forward", "__call__") and _name(func.value) in hints:
        name = _name(func.value)
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr in ctx_callables:
        name = ctx_callables[func.attr]
    hint = _free(hints, name)
    if hint is not None:
        starred = any(isinstance(a, ast.Starred) for a in node.args)
        hint.kind, hint.why = "callable", "called in forward"
        hint.call_args = None if starred else len(node.args) + len(node.keywords)
        if not starred and len(node.args) == 2 and not node.keywords and _DISTANCE.search(name):
            hint.stand_in = "sqdist" if _SQUARED.search(name) else "cdist"
            hint.why = (f"called in forward with two arguments and named like a{' squared' if hint.stand_in == 'sqdist' else ''} "
                        f"distance: the pairwise {'squared ' if hint.stand_in == 'sqdist' else ''}Euclidean distance "
                        f"between the rows of [n,d] and [m,d] tensors (fn:{hint.stand_in})")


_DISTANCE = re.compile(r"dist(?!rib)", re.IGNORECASE)  # dist, cdist, sq_dist_func, distance_fn; not distribution
_SQUARED = re.compile(r"(^|_)sq(_|dist|$)|squared", re.IGNORECASE)  # sq_dist, sqdist, squared_distance


def _dropped(node: ast.Call, forward, hints, ctx_callables):
    """``dist(x1_, x2_)`` with ``dist`` a parameter: gradcli's stand-in (tanh of the last argument) ignores the
    others. Where one of them carries a tensor parameter whose gradient backward returns (``x1_ =
    x1.div(lengthscale)``), the check would be of the stand-in's function, not the Function's: that parameter
    is recorded in ``Hint.dropped`` of the callable."""
    func = node.func
    name = _name(func) if _name(func) in hints else (ctx_callables.get(func.attr) if isinstance(func, ast.Attribute)
                                                     and isinstance(func.value, ast.Name) else None)
    hint = hints.get(name)
    if hint is None or hint.kind != "callable" or len(node.args) < 2 or \
            any(isinstance(a, ast.Starred) for a in node.args):
        return
    carried = _carried(forward, hints)
    if hint.stand_in is not None:  # a pairwise stand-in uses both arguments: nothing dropped
        first, second = (_mentions(a, hints, carried) for a in node.args)
        for q in sorted((first & second) - {name}):
            if not hints[q].backward_none and not hints[q].no_grad and -2 not in hints[q].unit_dims:
                hints[q].unit_dims = tuple(hints[q].unit_dims) + (-2,)
        return
    for arg in node.args[:-1]:
        for q in sorted(_mentions(arg, hints, carried)):
            if q != name and not hints[q].backward_none and not hints[q].no_grad and q not in hint.dropped:
                hint.dropped.append(q)


_METADATA = {"shape", "dtype", "device", "ndim", "size", "dim", "numel", "requires_grad"}  # not the values


def _mentions(node, hints, carried) -> set:
    """The parameters whose values ``node`` computes with (``x.shape[0]`` is metadata, not x's values)."""
    if isinstance(node, ast.Attribute) and node.attr in _METADATA:
        return set()
    if isinstance(node, ast.Name):
        return {node.id} if node.id in hints else set(carried.get(node.id, set()))
    out = set()
    for child in ast.iter_child_nodes(node):
        out |= _mentions(child, hints, carried)
    return out


def _carried(forward, hints) -> dict:
    """{local: the parameters its value is computed from} (``x1_ = x1.div(lengthscale)``), two passes deep."""
    carried: dict = {}
    for _ in range(2):
        for n in ast.walk(forward):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and _name(n.targets[0]) \
                    and _name(n.targets[0]) not in hints:
                carried[_name(n.targets[0])] = _mentions(n.value, hints, carried)
    return carried


def _sizes(node: ast.Call, hints):
    func = node.func
    if not node.args:
        return
    if isinstance(func, ast.Attribute) and func.attr in _SIZE_METHODS and len(node.args) == 1:
        target = node.args[0]
    elif (isinstance(func, ast.Attribute) and func.attr in _SIZE_FUNCTIONS and _is_module(func.value)) \
            or _name(func) in _SIZE_FUNCTIONS:
        target = node.args[0]
    else:
        return
    hint = _free(hints, _name(target))
    if hint is not None and not hint.tensor_use:
        hint.kind, hint.why = "shape", f"used as the size of {func.attr if isinstance(func, ast.Attribute) else _name(func)}()"


def _is_module(node) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in ("torch", "np", "numpy", "gradcli")


def _symmetric(node: ast.Call, hints):
    func = node.func
    fname = func.attr if isinstance(func, ast.Attribute) else _name(func)
    # torch's names, and a package's wrappers of them (psd_safe_cholesky, robust_cholesky, safe_eigh)
    kind = _SYMMETRIC.get(fname) or next((k for n, k in _SYMMETRIC.items() if fname and n in fname.lower()), None)
    if kind is None:
        return
    sign = 1
    if isinstance(func, ast.Attribute) and not _is_module(func.value) and _name(func.value) in hints:
        subject = _name(func.value)  # A.cholesky()
    else:
        subject, sign = _scaled(node.args[0]) if node.args else (None, 1)
    hint = hints.get(subject)
    if hint is not None and hint.kind is None:
        if kind == "spd" and sign < 0:  # cholesky(-2.0 * p): p is negative definite
            kind = "nsd"
        if hint.structure not in ("spd", "nsd"):  # cholesky anywhere: definite wins over symmetric
            hint.structure = kind
        hint.square = True
        hint.why = hint.why or f"forward takes {fname}() of {'minus ' if sign < 0 else ''}it"


def _scaled(node) -> tuple:
    """(parameter, sign) for ``p``, ``-p``, ``c * p`` / ``p * c`` / ``p / c`` with ``c`` a number constant."""
    def number(n):
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            value = number(n.operand)
            return -value if value is not None else None
        return n.value if isinstance(n, ast.Constant) and type(n.value) in (int, float) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        name, sign = _scaled(node.operand)
        return name, -sign
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        for p, c in ((node.right, node.left), (node.left, node.right)):
            if number(c) is not None and number(c) != 0 and (isinstance(node.op, ast.Mult) or p is node.left):
                name, sign = _scaled(p)
                return name, sign * (1 if number(c) > 0 else -1)
    return _name(node), 1


def _unpacked_shape(node: ast.Assign, hints):
    value = node.value
    subject = None
    if isinstance(value, ast.Attribute) and value.attr == "shape":
        subject = _name(value.value)
    elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "size" \
            and not value.args:
        subject = _name(value.func.value)
    hint = hints.get(subject)
    if hint is None or hint.ndim is not None:
        return
    for t in node.targets:
        if isinstance(t, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in t.elts):
            hint.ndim = len(t.elts)
            hint.tensor_use = True


def _helper(node: ast.Call, fn, hints, depth):
    """``helper(x, h0, mode=mode)`` with ``helper`` a Python function of the same top-level package."""
    from gradcli.check import infer_values
    from gradcli.check.infer import Hint, _Uses

    helper = _resolve(node.func, fn)
    if helper is None:
        return
    tree = _source_node(helper)
    if tree is None:
        return
    try:
        sig = inspect.signature(helper)
        bound = sig.bind_partial(*[a for a in node.args if not isinstance(a, ast.Starred)],
                                 **{k.arg: k.value for k in node.keywords if k.arg})
    except (TypeError, ValueError):
        return
    mapping = {}  # helper's parameter -> our parameter
    for pname, arg in bound.arguments.items():
        if _name(arg) in hints and sig.parameters[pname].kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                                   inspect.Parameter.POSITIONAL_ONLY,
                                                                   inspect.Parameter.KEYWORD_ONLY):
            mapping[pname] = _name(arg)
    if not mapping:
        return
    theirs = {p: Hint() for p in mapping}
    try:
        _Uses(theirs).visit(tree)
        refine(tree, helper, theirs, depth + 1)
        infer_values.reshapes(tree, theirs)
    except Exception:  # noqa: BLE001 -- a helper we cannot read tells us nothing
        return
    for pname, ours in mapping.items():
        got, have = theirs[pname], hints[ours]
        if have.kind is None and got.kind in ("str", "int", "bool", "float", "callable", "shape") \
                and not have.tensor_use:
            have.kind, have.why = got.kind, f"{got.why} of {helper.__name__}(), which forward hands it to"
            have.choices = list(got.choices)
            have.call_args = got.call_args
        if have.kind is None and got.kind in ("index", "mask"):  # an index or mask is a tensor: tensor uses agree
            have.kind, have.why = got.kind, f"{got.why} of {helper.__name__}(), which forward hands it to"
            have.index_kind, have.index_dim = got.index_kind, got.index_dim
            have.index_of = mapping.get(got.index_of) if got.index_of else None
            have.mask_of = mapping.get(got.mask_of) if got.mask_of else None
        if have.reshaped_to is None and mapping.get(got.reshaped_to):
            have.reshaped_to = mapping[got.reshaped_to]
        if have.kind is None and have.ndim is None and got.ndim is not None:
            have.ndim = got.ndim
        if have.structure is None and got.structure is not None:
            have.structure, have.square = got.structure, True


def helper_int_items(node: ast.Call, fn, names) -> list:
    """Parameters ``p`` of ``names`` passed as ``p.item()`` to a helper of the same package whose own
    source uses that parameter as an int (a dim): ``sparsemax_grad(g, w, dim.item())``."""
    from gradcli.check.infer import Hint, _Uses
    from gradcli.check.infer_flow import item_of

    items = [(i, item_of(a, names)) for i, a in enumerate(node.args) if item_of(a, names)]
    helper = _resolve(node.func, fn) if items else None
    tree = _source_node(helper) if helper is not None else None
    if tree is None:
        return []
    try:
        params = list(inspect.signature(helper).parameters)
    except (TypeError, ValueError):
        return []
    theirs = {params[i]: Hint() for i, _ in items if i < len(params)}
    try:
        _Uses(theirs).visit(tree)
    except Exception:  # noqa: BLE001 -- a helper we cannot read tells us nothing
        return []
    return [p for i, p in items if i < len(params) and theirs[params[i]].kind == "int"]


def _resolve(func, fn):
    """The Python function ``func`` names in forward's module globals, when it belongs to the same
    top-level package as forward (torch's own functions are not read)."""
    glob = getattr(getattr(fn, "__func__", fn), "__globals__", None) or {}
    if isinstance(func, ast.Name):
        obj = glob.get(func.id)
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        obj = getattr(glob.get(func.value.id), func.attr, None)
    else:
        return None
    obj = getattr(obj, "_torchdynamo_inline", obj)  # torch.jit.script(f): read f's Python source
    if not inspect.isfunction(obj):
        return None
    ours = (glob.get("__name__") or "").split(".")[0]
    theirs = (getattr(obj, "__module__", "") or "").split(".")[0]
    return obj if ours and ours == theirs and ours not in ("torch", "gradcli", "numpy") else None


def _source_node(fn) -> Optional[ast.AST]:
    try:
        tree = ast.parse(textwrap.dedent(source_code.source(fn)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def annotated_objects(fn, hints: dict):
    """``p: Params`` (or ``Optional[Params]``) with Params a dataclass / NamedTuple constructible with
    no arguments: an object hint (built as ``Params()``)."""
    import typing

    try:
        annotations = typing.get_type_hints(getattr(fn, "__func__", fn))
    except Exception:  # noqa: BLE001 -- unresolvable annotations say nothing here
        return
    for name, hint in hints.items():
        cls = constructible(annotations.get(name))
        if cls is not None and hint.kind is None:
            hint.kind, hint.why, hint.object_class = "object", f"annotated {cls.__name__}: built from its defaults", cls


def constructible(annotation) -> Optional[type]:
    """The dataclass / NamedTuple class of an annotation (through Optional[...]) when every field has a default."""
    import dataclasses
    import typing

    if typing.get_origin(annotation) is typing.Union:
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = options[0] if len(options) == 1 else None
    if not isinstance(annotation, type):
        return None
    if dataclasses.is_dataclass(annotation):
        fields = [f for f in dataclasses.fields(annotation) if f.init]
        if all(f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING for f in fields):
            return annotation
        return None
    if issubclass(annotation, tuple) and hasattr(annotation, "_fields"):
        defaults = getattr(annotation, "_field_defaults", {})
        return annotation if all(f in defaults for f in annotation._fields) else None
    return None
