"""An extra argument whose parameters forward reads is a module: ``the_module = args[0]; the_module.parameters()``.

Checkpointing Functions take a run function and, in their ``*args``, the module it runs followed by its inputs
(``Fn.apply(dummy, run_function, ..., module, *inputs)``); forward asks the module for its parameters to know
whether the output needs a graph. A float tensor there raises ``'Tensor' object has no attribute 'parameters'``
at every shape tried. The evidence (nothing is evaluated): forward calls ``.parameters()`` (or
``named_parameters``, ``buffers``, ``modules``, ``children``) on ``S[k]`` with a constant ``k``, where ``S`` is the
starred parameter itself, or a name assigned from it, or one of the names unpacked from a call it is passed to
whole (``unpacked_args, kwargs = unpack_kwargs(keys, args)``: such helpers keep the positional order). The extra
argument ``k`` is then the module ``fn:identity`` (a parameterless ``torch.nn.Identity``; called, it passes its
last argument through), stated as ``a module: forward calls S[k].parameters()``. Torch backend only.
"""
from __future__ import annotations

import ast
from typing import Optional

MODULE_METHODS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers", "modules", "children"})
STAND_IN = "identity"


def refine(target, forward, hints: dict):
    """Mark the extra argument(s) forward reads module parameters from as ``fn:identity`` (infer.read_hints)."""
    names = getattr(target, "star_names", None) or ()
    if getattr(target, "backend", "torch") != "torch" or not names or forward.args.vararg is None:
        return
    star = forward.args.vararg.arg
    holders = _holders(forward, star)
    subscripts = _subscripts(forward, holders)
    for call in ast.walk(forward):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr in MODULE_METHODS and not call.args):
            continue
        found = _position(call.func.value, holders, subscripts)
        if found is None or not 0 <= found[0] < len(names):
            continue
        position, text = found
        hint = hints.get(names[position])
        if hint is None or hint.kind is not None:
            continue
        hint.kind, hint.stand_in = "callable", STAND_IN
        hint.why = (f"a module: forward calls {text}.{call.func.attr}() (fn:identity, a torch.nn.Identity "
                    f"without parameters)")


def _holders(forward, star: str) -> set:
    """Names that hold the starred arguments in their order: the parameter, a plain copy of it, and the names
    unpacked from a call it is passed to whole (``a, kw = helper(keys, args)``)."""
    holders = {star}
    for _ in range(2):  # an assignment may come before the one it reads from in the walk's order
        for node in ast.walk(forward):
            if not isinstance(node, ast.Assign) or len(node.targets) != 1:
                continue
            target, value = node.targets[0], node.value
            if isinstance(value, ast.Name) and value.id in holders and isinstance(target, ast.Name):
                holders.add(target.id)
            elif isinstance(value, ast.Call) and any(isinstance(a, ast.Name) and a.id in holders for a in value.args) \
                    and isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name):
                holders.add(target.elts[0].id)  # the positional part comes first: (args, kwargs)
    return holders


def _subscripts(forward, holders: set) -> dict:
    """{name: (position, text)} for ``name = S[k]`` with S a holder."""
    out: dict = {}
    for node in ast.walk(forward):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found = _indexed(node.value, holders)
            if found is not None:
                out[node.targets[0].id] = found
    return out


def _position(node, holders: set, subscripts: dict) -> Optional[tuple]:
    if isinstance(node, ast.Name):
        return subscripts.get(node.id)
    return _indexed(node, holders)


def _indexed(node, holders: set) -> Optional[tuple]:
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in holders \
            and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int:
        return node.slice.value, f"{node.value.id}[{node.slice.value}]"
    return None
