"""The ``ctx_attributes`` lint: tensors kept on ``ctx`` as attributes instead of ``save_for_backward``.

A Function that writes ``ctx.y = y`` in forward passes a first-order gradcheck, but (pytorch#58509,
#76185, #104040):

* an **intermediate** (a tensor computed in forward from the inputs: ``ctx.e = x.exp()``) was
  computed without a graph (forward runs with grad mode off), so a double backward that uses it
  treats it as a constant: second derivatives through it are silently lost;
* an **input** or **output** kept as an attribute escapes autograd's saved-tensor bookkeeping: no
  in-place (version) check, and an output on its own ``ctx`` is a reference cycle that keeps the
  graph alive.

Found in two steps: forward's (or ``setup_context``'s) source is read for ``ctx.NAME = EXPR`` with
EXPR depending on the parameters (a small data-flow over assignments, in source order), and the
ctx the forward filled is asked whether ``NAME`` holds a tensor. Both backends; see
specs/gradcheck.md.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
import weakref
from typing import Optional

from gradcli.check.report import Check
from gradcli.check import source_code

_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # class -> assignments (read once)
KIND_WORDS = {"input": "an input", "output": "an output", "intermediate": "an intermediate computed from the inputs"}


def assignments(cls) -> list:
    """``[{"attribute", "line", "kind", "file"}]`` for ``ctx.NAME = EXPR`` in forward/setup_context
    where EXPR is an input, an output or depends on them (kind: input | output | intermediate)."""
    cached = _CACHE.get(cls)
    if cached is not None:
        return cached
    found = []
    for method_name in ("forward", "setup_context"):
        method = _own(cls, method_name)
        if method is not None:
            found += _scan(method, method_name, _own(cls, "setup_context") is not None)
    try:
        _CACHE[cls] = found
    except TypeError:  # not weak-referenceable: read again next time
        pass
    return found


def _own(cls, name):
    for klass in getattr(cls, "__mro__", ()):
        if name in vars(klass):
            if getattr(klass, "__module__", "").startswith(("gradcli.autograd", "torch.")):
                return None
            attr = vars(klass)[name]
            return getattr(attr, "__func__", attr)
    return None


def _scan(func, method_name, setup_style) -> list:
    try:
        lines, start = source_code.source_lines(func)
        tree = ast.parse(textwrap.dedent("".join(lines)))
        filename = inspect.getsourcefile(func) or ""
    except (OSError, TypeError, SyntaxError, IndentationError):
        return []
    node = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if node is None:
        return []
    params = [a.arg for a in node.args.posonlyargs + node.args.args]
    if node.args.vararg is not None:
        params.append(node.args.vararg.arg)
    if not params:
        return []
    ctx_name, rest = params[0], params[1:]
    if method_name == "forward" and setup_style:
        return []  # forward(*args): there is no ctx in forward
    inputs = set(rest)
    outputs = set()
    statements = sorted((n for n in ast.walk(node) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))),
                        key=lambda n: (n.lineno, n.col_offset))
    if method_name == "setup_context" and len(rest) >= 2:
        inputs, outputs = _unpacked(statements, rest[0]), _unpacked(statements, rest[1])
    returned = _returned_names(node)
    tainted = set(inputs) | set(outputs)
    for _ in range(2):  # twice: a loop's later assignment can feed an earlier line
        for st in statements:
            value = getattr(st, "value", None)
            if value is not None and _names(value) & tainted:
                for target in _targets(st):
                    tainted |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    found = []
    for st in statements:
        value = getattr(st, "value", None)
        if value is None or not (_names(value) & tainted):
            continue
        for target in _targets(st):
            for attr in _ctx_attributes(target, ctx_name):
                bare = value.id if isinstance(value, ast.Name) else None
                if bare is not None and (bare in outputs or (bare in returned and bare not in inputs)):
                    kind = "output"
                elif bare is not None and bare in inputs:
                    kind = "input"
                else:
                    kind = "intermediate"
                found.append({"attribute": attr, "line": start + st.lineno - 1, "kind": kind, "file": filename})
    return found


def _unpacked(statements, name) -> set:
    """setup_context(ctx, inputs, output): ``name`` and what is unpacked from it (``x, y = inputs``,
    ``x = inputs[0]``) are the forward's inputs (or its output) themselves."""
    found = {name}
    for st in statements:
        value = getattr(st, "value", None)
        base = value.value if isinstance(value, ast.Subscript) else value
        if isinstance(base, ast.Name) and base.id == name:
            for target in _targets(st):
                found |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return found


def _returned_names(node) -> set:
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Return) and n.value is not None:
            values = n.value.elts if isinstance(n.value, (ast.Tuple, ast.List)) else [n.value]
            names |= {v.id for v in values if isinstance(v, ast.Name)}
    return names


def _names(expr) -> set:
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}


def _targets(st) -> list:
    return list(st.targets) if isinstance(st, ast.Assign) else [st.target]


def _ctx_attributes(target, ctx_name) -> list:
    """``ctx.a`` (also inside ``ctx.a, ctx.b = ...``)."""
    elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
    return [t.attr for t in elements if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
            and t.value.id == ctx_name]


def find_ctx(backend, outputs, cls):
    """The ctx (graph node) that ``cls``'s forward filled, from the outputs' grad_fn."""
    for o in outputs:
        node = getattr(o, "grad_fn", None)
        if node is None:
            continue
        if backend.name == "gradcli":
            if isinstance(node, getattr(cls, "_backward_cls", ())) or isinstance(node, cls):
                return node
        elif getattr(type(node), "_forward_cls", None) is cls:
            return node
    return None


def _holds_tensor(backend, value) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_holds_tensor(backend, v) for v in value)
    return backend.is_tensor(value) and backend.is_floating(value)


def ctx_attributes_check(session) -> Optional[Check]:
    """A ``warn`` naming each tensor attribute (with its line), None when there is none."""
    cls = session.cls
    if cls is None:
        return None
    found = assignments(cls)
    if not found:
        return None
    ctx = find_ctx(session.backend, session.analytic.outputs, cls)
    state = getattr(ctx, "__dict__", None) if ctx is not None else None
    if state is None:  # the source alone cannot tell ctx.shape = x.shape from a tensor
        return None
    found = [f for f in found if _holds_tensor(session.backend, state.get(f["attribute"]))]
    if not found:
        return None
    seen, unique = set(), []
    for f in found:
        if f["attribute"] not in seen:
            seen.add(f["attribute"])
            unique.append(f)
    parts = [f"ctx.{f['attribute']} (line {f['line']}: {KIND_WORDS[f['kind']]})" for f in unique]
    intermediates = [f for f in unique if f["kind"] == "intermediate"]
    why = []
    if intermediates:
        why.append("an intermediate was computed without a graph (forward runs with grad mode off): a double "
                   "backward that uses it treats it as a constant and silently loses its second derivatives — "
                   "recompute it in backward from saved inputs (or return it as an output)")
    if len(intermediates) < len(unique):
        why.append("inputs and outputs kept as attributes escape autograd's bookkeeping (no in-place check; an "
                   "output on its own ctx is a reference cycle) — pass them to ctx.save_for_backward")
    message = (f"forward keeps tensor(s) on ctx as attributes instead of ctx.save_for_backward: {', '.join(parts)}; "
               + "; ".join(why) + " (pytorch#58509, #104040)")
    return Check("ctx_attributes", "warn", message, None, {"attributes": unique})


def explain_second_order(check: Check, lint: Optional[Check]) -> None:
    """A failed double backward of a Function that keeps intermediates on ctx: say so in its message."""
    if lint is None or check.status != "fail":
        return
    intermediates = [f for f in lint.details.get("attributes", ()) if f["kind"] == "intermediate"]
    if not intermediates:
        return
    names = ", ".join(f"ctx.{f['attribute']} (line {f['line']})" for f in intermediates)
    check.message = (f"double backward is wrong because forward keeps {names} as a ctx attribute: computed "
                     f"without a graph, it is a constant to the double backward (save inputs with "
                     f"save_for_backward and recompute it in backward) — " + check.message)
    check.details["ctx_attributes"] = intermediates
