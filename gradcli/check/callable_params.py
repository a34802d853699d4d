"""A callable's own parameters passed after its inputs: ``Fn.apply(fn, fn_inverse, n, *inputs, *params)``.

Reversible layers, checkpointing and adjoint solvers take a module (or its bound method) and, in their ``*args``,
that module's parameters, which backward differentiates with ``torch.autograd.grad(fn(...), inputs + params)``.
A parameterless stand-in (``fn:sinh``) leaves that tail empty, and such a backward then returns gradients for
arguments that were never passed (``gradients[-len(weights):]`` is all of them when ``len(weights) == 0``): a
failure of the stand-in, not of the Function as its package calls it.

The evidence (nothing is evaluated): a ``Cls.apply(...)`` call in the Function's own module whose last argument
is starred and built from ``.parameters()`` (``*tuple(p for p in self.parameters())``, ``*adjoint_params`` with
``adjoint_params = tuple(find_parameters(func))``). Each starred argument stands for one extra argument, or one
per operand of a ``+`` chain (``*(inputs + tuple(params))``: two); that count ``varargs.candidates`` tries first,
and the last is a parameter of the callables forward takes: a float
tensor ``w`` of one element, made a ``torch.nn.Parameter`` that the callables' stand-ins hold and use, ``fn:sinh@w`` (sinh of
the last argument times ``exp(w)``) and, for its inverse, ``fn:asinh@w`` (``asinh(y · exp(-w))``). The Parameter
itself is the argument (``TorchBackend.held_by_module``): the numeric check perturbs it in place, as
``torch.autograd.gradcheck`` would, so the module sees every perturbation. Torch backend only.
"""
from __future__ import annotations

import ast
import inspect
import re
from typing import Optional

SCALED = ("tanh", "sigmoid", "identity", "sinh", "asinh")  # stand-ins that take a parameter: fn:NAME@PARAM
_PARAMETERS = re.compile(r"\bparameters\b|_parameters\b")  # self.parameters(), find_parameters(func)
_SPEC = re.compile(r"^([A-Za-z]+)@([A-Za-z_]\w*)$")
RESOLVE_DEPTH = 3  # names followed through assignments (extras = state + params; params = tuple(...))


def parse(text: str) -> Optional[str]:
    """``sinh@w`` -> ``sinh@w`` when it names a stand-in that takes a parameter; None otherwise."""
    m = _SPEC.match(text.strip())
    if m is None or m.group(1).lower() not in SCALED:
        return None
    return f"{m.group(1).lower()}@{m.group(2)}"


def parameter_of(value: str) -> Optional[str]:
    """The input a ``fn:NAME@PARAM`` stand-in reads its parameter from (None for a plain one)."""
    return value.partition("@")[2] or None if "@" in value else None


# ----- the evidence: the package's own call sites ------------------------------------------------

def extra_counts(target, named: int) -> list:
    """The number of extra arguments the call sites give (``varargs.candidates``): [] without the evidence."""
    try:
        layout = apply_layout(target, named)
    except Exception:  # noqa: BLE001 -- evidence only: without it the other counts are tried as before
        return []
    return [layout[0]] if layout is not None else []


def apply_layout(target, named: int) -> Optional[tuple]:
    """(number of extra arguments, positions among them that are parameters of the callables) read from the
    ``Cls.apply(...)`` calls of the Function's own module; None without a call ending in starred parameters."""
    tree = _module_tree(target)
    if tree is None:
        return None
    assigned = _assignments(tree)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "apply"
                and tail_name(node.func.value) == target.cls.__name__ and node.args
                and isinstance(node.args[-1], ast.Starred)):
            continue
        plain = [a for a in node.args if not isinstance(a, ast.Starred)]
        if len(plain) != named:
            continue
        # one extra argument per part of each starred argument: *args, *params; *(inputs + tuple(params))
        parts = [part for a in node.args if isinstance(a, ast.Starred)
                 for part in _parts(a.value, assigned, RESOLVE_DEPTH)]
        flags = [_is_parameters(part, assigned, RESOLVE_DEPTH) for part in parts]
        if not flags or not flags[-1]:
            continue
        return len(parts), tuple(i for i, flag in enumerate(flags) if flag)
    return None


def _parts(node, assigned: dict, depth: int) -> list:
    """The operands of a ``+`` chain (tuples concatenated), through a name assigned once from one."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _parts(node.left, assigned, depth) + _parts(node.right, assigned, depth)
    if isinstance(node, ast.Name) and depth > 0 and len(assigned.get(node.id, ())) == 1 \
            and isinstance(assigned[node.id][0], ast.BinOp) and isinstance(assigned[node.id][0].op, ast.Add):
        return _parts(assigned[node.id][0], assigned, depth - 1)
    return [node]


def _module_tree(target):
    module = inspect.getmodule(target.cls)
    try:
        return ast.parse(inspect.getsource(module)) if module is not None else None
    except (OSError, TypeError, SyntaxError):
        return None


def _assignments(tree) -> dict:
    """{name: [value nodes]} of every plain assignment in the module (any function)."""
    out: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out.setdefault(t.id, []).append(node.value)
    return out


def _is_parameters(node, assigned: dict, depth: int) -> bool:
    """The expression is a module's parameters: ``self.parameters()`` in it, or a name assigned from one."""
    if isinstance(node, ast.Name):
        return depth > 0 and any(_is_parameters(v, assigned, depth - 1) for v in assigned.get(node.id, ()))
    return any(isinstance(n, ast.Call) and _PARAMETERS.search(tail_name(n.func) or "") for n in ast.walk(node))


def tail_name(node) -> Optional[str]:
    """The last name of ``f`` or ``a.b.f`` (None for anything else)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


# ----- hints: the parameter and the callables that hold it ---------------------------------------

def refine(target, hints: dict):
    """With the extra arguments at the count the call sites give, the last one is a parameter of every callable
    forward takes: a 1-element tensor, and each callable's stand-in ``NAME@PARAM`` (infer.read_hints calls this)."""
    names = getattr(target, "star_names", None) or ()
    if getattr(target, "backend", "torch") != "torch" or not names:
        return
    callables = [n for n, h in hints.items() if h is not None and h.kind == "callable"
                 and (h.stand_in or "tanh") in SCALED]
    if not callables:
        return
    try:
        layout = apply_layout(target, len(hints) - len(names))
    except Exception:  # noqa: BLE001 -- evidence only: the other hints stand without it
        return
    if layout is None or layout[0] != len(names):
        return
    for position in layout[1]:
        param = names[position]
        hint = hints.get(param)
        if hint is None or hint.kind is not None:
            continue
        hint.shape = (1,)  # one element, as a module's scale weights most often are (a 0-d one is checked too)
        hint.why = (f"a parameter of {' and '.join(callables)}: the package passes their module's parameters "
                    f"after the inputs (.apply(..., *parameters)); a torch.nn.Parameter the stand-in"
                    f"{'s' if len(callables) > 1 else ''} hold{'' if len(callables) > 1 else 's'}")
        for name in callables:
            base = hints[name].stand_in or "tanh"
            hints[name].stand_in = f"{base}@{param}"
            hints[name].why = (f"{hints[name].why}; holding {param} as its parameter (fn:{base}@{param}: "
                               f"{_formula(base, param)})")
        return


def _formula(base: str, param: str) -> str:
    return f"asinh(y*exp(-{param}))" if base == "asinh" else f"{base}(x)*exp({param})"


# ----- values: the stand-in modules and their shared Parameter -----------------------------------

def make(be, value: str):
    """The ``fn:NAME@PARAM`` stand-in: a module whose Parameter ``bind`` sets from the input PARAM."""
    from gradcli.check.inputs import NoInputs

    base, _, param = value.partition("@")
    if be.name != "torch":
        raise NoInputs(f"fn:{value} needs the torch backend (a torch.nn.Module holding {param} as a Parameter)")
    import torch

    fn = torch.asinh if base == "asinh" else {"tanh": torch.tanh, "sigmoid": torch.sigmoid, "sinh": torch.sinh,
                                               "identity": lambda x: x}[base]

    class ScaledStandIn(torch.nn.Module):
        parameter_input = param

        def __init__(self):
            super().__init__()
            self.register_parameter("weight", None)

        def forward(self, *args):
            if self.weight is None:
                raise RuntimeError(f"fn:{value}: no input {param} to take the parameter from")
            if base == "asinh":  # the inverse of sinh(x)*exp(w)
                return fn(args[-1] * torch.exp(-self.weight))
            return fn(args[-1]) * torch.exp(self.weight)

    ScaledStandIn.__name__ = f"{base.capitalize()}Scaled"
    return ScaledStandIn()


def bind(be, params, args: list) -> list:
    """``args`` with each input a ``fn:NAME@PARAM`` stand-in names turned into one torch.nn.Parameter (same
    values) that every such stand-in holds; the list is changed in place and returned."""
    if be.name != "torch":
        return args
    from gradcli.check.inputs import NoInputs

    position = {p.name: i for i, p in enumerate(params)}
    made: dict = {}
    for value in list(args):
        param = getattr(value, "parameter_input", None)
        if param is None:
            continue
        if param not in position or not be.is_tensor(args[position[param]]):
            raise NoInputs(f"fn:{type(value).__name__.removesuffix('Scaled').lower()}@{param} holds the input "
                           f"{param} as its Parameter, but {param} is not a tensor input of forward here: give "
                           f"--input {param}=SPEC (a float tensor, like {param}=float64[1]) or name another input")
        if param not in made:
            import torch

            tensor = args[position[param]]
            made[param] = torch.nn.Parameter(tensor.detach().clone(), requires_grad=bool(
                tensor.requires_grad or tensor.is_floating_point()))
            args[position[param]] = made[param]
        value.weight = made[param]
    return args

