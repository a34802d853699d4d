"""Inputs the package's own caller builds: when no automatic input set fits forward, gradcli calls the package
code that calls ``Cls.apply`` (apply_callers.py) with inputs it builds, stops that call at ``Cls.apply`` and takes
the arguments the package passed as forward's input set (specs/check.md §2, "Inputs the package's own caller
builds").

The caller's parameters: a method's ``self``, and a parameter annotated with a class of the package, is an object
of that class (package_objects.py: a concrete subclass built from one tensor, ``float64[4,4]@spd``, whose shape is
the object's; else one built with its defaults, a torch module made float64);
a parameter with a default keeps it, except that one the caller compares with strings is also tried at each
(``method == "lanczos"``); a parameter the caller calls, or annotated ``Callable``, gets ``tanh_of_sum``; one
annotated ``int`` / ``float`` / ``bool`` gets ``2`` / ``0.5`` / ``False``; any other a float64 tensor, every
such tensor with one shape of ``4x2``, ``()``, ``4``, ``4x4``, ``1x1x8x8`` (a sparse COO tensor, not requiring grad, where
the annotation says sparse). The first plan at which the package reaches ``Cls.apply`` and forward and backward
run on what it passed is taken.

Every record says what was built (``inferred``) and carries the recipe (``captured``: the caller, its arguments
with their SPECs and values, this argument's position in the call). The reproduce line needs no ``--input``: with
the same ``--seed`` the same recipe runs again (the torch generator is seeded as for ``example_inputs()`` before
the caller runs, so a caller's own random draws repeat).
"""
from __future__ import annotations

import inspect
from typing import Optional

from gradcli.check.trials import SLOW_SHARE

SELF_SPEC = "float64[4,4]@spd"
TENSOR_SHAPES = ((4, 2), (), (4,), (4, 4), (1, 1, 8, 8))  # the last: an image, N x C x H x W (small: 64 elements)
MAX_CALLERS = 6
MAX_STRINGS = 8  # strings tried for one mode parameter
MAX_VARIANTS = 32  # combinations of the keyword parameters varied
SEARCH_SECONDS = 20.0  # CPU seconds over all plans (the package's code runs in them): then the skip stands


def tanh_of_sum(*args):
    """The callable gradcli passes a caller's function parameter: tanh of the sum of its arguments (broadcast), so
    that every argument reaches its value (``fcn(x, *params)``: tanh(x + p))."""
    import torch

    total = args[0]
    for a in args[1:]:
        total = total + a
    return torch.tanh(total)


class _Captured(Exception):
    def __init__(self, args, kwargs):
        super().__init__("captured")
        self.call_args, self.call_kwargs = args, kwargs


def cases(target, specs, seed, dtype) -> Optional[list]:
    """One Case from the first caller plan that reaches ``target.cls.apply`` and runs, else None."""
    if specs or getattr(target, "backend", "") != "torch" or getattr(target.cls, "example_inputs", None) \
            or getattr(target, "given_examples", None):
        return None
    from gradcli.check.apply_callers import find_callers

    from gradcli.check.inputs import NoInputs, backend_for
    from gradcli.check.trials import cpu_seconds, too_slow

    slow = None  # why the first plan that ran is too slow to check in --timeout
    started = cpu_seconds()
    for caller in find_callers(target)[:MAX_CALLERS]:
        function, owner = _resolve(caller)
        if function is None:
            continue
        for plan in _plans(caller, function, owner, target, seed):
            if cpu_seconds() - started > SEARCH_SECONDS:
                break  # the package's code is slow to refuse plans: the skip stands (or the slow one below)
            case = _try(target, caller, function, plan, seed, dtype)
            if case is None:
                continue
            why = too_slow(backend_for("torch"), target, case)
            if why is None:
                return [case]
            slow = slow or why.replace(" at the inputs gradcli built ()", f" at {case.records[0]['inferred'].split('; ')[0]}")
            break  # another plan of the same caller is no faster: the next caller
    if slow is not None:
        target.star_names = None
        raise NoInputs(f"{slow}: more than {SLOW_SHARE:g} of --timeout {target.timeout:g} s, which leaves room for "
                       f"the rest of the check: not checked. Raise --timeout, or give smaller inputs with an inputs "
                       f"file (--inputs-from FILE.py; specs/check.md §2a)")
    return None


def _resolve(caller):
    import importlib

    try:
        module = importlib.import_module(caller.module)
    except Exception:  # noqa: BLE001 -- a module of the package that does not import here
        return None, None
    if "." not in caller.qualname:
        fn = getattr(module, caller.qualname, None)
        return (inspect.unwrap(fn), None) if inspect.isfunction(fn) else (None, None)
    owner_name, method = caller.qualname.split(".", 1)
    owner = getattr(module, owner_name, None)
    raw = vars(owner).get(method) if inspect.isclass(owner) else None
    if not inspect.isfunction(raw):  # a staticmethod/classmethod/property: not read here
        return None, None
    return raw, owner


def _plans(caller, function, owner, target, seed):
    """Each plan: how to build every positional parameter of the caller (and the keyword ones it varies)."""
    from gradcli.check.package_objects import annotated_class, recipes

    try:
        params = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return
    from gradcli.check.apply_callers import dispatch_names

    # a mode the caller compares with strings may also take the names forward dispatches on (``"cg"``)
    names = dispatch_names(target)
    strings = {p: tuple(dict.fromkeys(s + names))[:MAX_STRINGS] for p, s in caller.strings}
    if owner is not None:
        params = params[1:]
    fixed, variants, objects = [], [[]], []
    for p in params:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            continue
        if p.default is not p.empty:
            options = [("default", p.default)] + [("str", s) for s in strings.get(p.name, ())
                                                  if s != p.default]
            if isinstance(p.default, bool):  # a flag: its other value too (logdet=True)
                options.append(("bool", not p.default))
            elif p.default is None and "Tensor" in _annotation_text(p.annotation):  # an optional tensor given
                options.append(("tensor", None))
            elif isinstance(p.default, (list, tuple)) and not p.default:  # params=[]: one passed on
                options.append(("list", None))
            variants = [v + [(p.name, *o)] for o in options for v in variants][:MAX_VARIANTS]
            continue
        text = _annotation_text(p.annotation)
        cls = annotated_class(function, p.annotation)
        if p.name in caller.called or "Callable" in text:
            fixed.append((p.name, "callable", None))
        elif p.name in strings:
            fixed.append((p.name, "str", strings[p.name][0]))
        elif text in ("int", "float", "bool"):
            fixed.append((p.name, text, {"int": 2, "float": 0.5, "bool": False}[text]))
        elif cls is not None:
            objects.append(p.name)
            fixed.append((p.name, "object", recipes(cls)))
            if not fixed[-1][2]:
                return
        else:
            fixed.append((p.name, "tensor", "sparse" in text.lower()))
    # the one object the plans vary: self, else the first parameter annotated with a package class
    choices = recipes(owner) if owner is not None else \
        next(detail for name, kind, detail in fixed if kind == "object") if objects else [None]
    tensors = any(k == "tensor" for _, k, _ in fixed) or any(k in ("tensor", "list") for v in variants for _, k, _ in v)
    for choice in choices:
        for shape in TENSOR_SHAPES if tensors else [None]:
            for variant in variants:
                yield {"self": choice if owner is not None else None, "object": choice if owner is None else None,
                       "shape": shape, "args": fixed, "defaults": variant, "order": [p.name for p in params]}


def _annotation_text(annotation) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    if isinstance(annotation, str):
        return annotation
    return annotation.__name__ if isinstance(annotation, type) else str(annotation)


def _object(be, recipe, key, seed, dtype, name):
    """An object of the package built from one ``SELF_SPEC`` tensor (package_objects.Recipe), its recipe record."""
    if not recipe.from_tensor:  # built with its defaults
        return recipe.build(None), {"name": name, "class": recipe.path, "from_tensor": False}, \
            f"{name}={recipe.describe(SELF_SPEC)}"
    tensor, argument = _tensor(be, SELF_SPEC, key, seed, dtype, name)
    value = recipe.build(tensor)
    argument.update({"class": recipe.path, "flags": list(recipe.flags)})
    return value, argument, f"{name}={recipe.describe(SELF_SPEC)}"


def _tensor(be, spec_text, key, seed, dtype, name, sparse=False):
    from gradcli.check.inputs import Param, _from_spec
    from gradcli.check.spec import parse_spec

    value, rec = _from_spec(be, parse_spec(spec_text), key, seed, dtype, Param(name), source="auto")
    argument = {"name": name, "spec": spec_text, "dtype": rec.get("dtype"), "requires_grad": rec.get("requires_grad"),
                "value": rec.get("value")}
    if sparse:
        value = value.detach().to_sparse()
        argument["sparse"] = True
    return value, argument


def _build(be, target, caller, plan, seed, dtype):
    """(positional arguments, keyword arguments, their recipe records, a one-line description) of the caller
    call; the recipe lists ``self`` and the positional ones in order, the keyword ones with ``"keyword": true``."""
    from gradcli.check.spec import format_tensor_spec

    values, recipe, shown = [], [], []
    key = f"{target.name}.{caller.qualname}"
    if plan["self"] is not None:
        value, argument, text = _object(be, plan["self"], f"{key}.self", seed, dtype, "self")
        values.append(value)
        recipe.append(argument)
        shown.append(text)
    given = {name: (kind, detail) for name, kind, detail in plan["args"]}
    keywords = {}
    for name in plan["order"]:
        if name not in given:
            continue
        kind, detail = given[name]
        if kind == "tensor":
            spec = format_tensor_spec(plan["shape"], "float64", (-2.0, 2.0), not detail, None)
            value, argument = _tensor(be, spec, f"{key}.{name}", seed, dtype, name, sparse=detail)
            shown.append(f"{name}={spec}{' as a sparse COO tensor' if detail else ''}")
        elif kind == "object":  # the plan's choice for the first such parameter, the first recipe for others
            chosen = plan["object"] if plan["object"] in detail else detail[0]
            value, argument, text = _object(be, chosen, f"{key}.{name}", seed, dtype, name)
            shown.append(text)
        elif kind == "callable":
            value, argument = tanh_of_sum, {"name": name, "callable": "tanh_of_sum"}
            shown.append(f"{name}=tanh of the sum of its arguments")
        else:
            value, argument = detail, {"name": name, "value": detail}
            shown.append(f"{name}={detail!r}")
        values.append(value)
        recipe.append(argument)
    for name, kind, value in plan["defaults"]:
        if kind in ("tensor", "list"):  # an optional tensor given, or a list of one, shaped as the required ones
            shape = (4, 2) if plan["shape"] is None else plan["shape"]
            spec = format_tensor_spec(shape, "float64", (-2.0, 2.0), True, None)
            value, argument = _tensor(be, spec, f"{key}.{name}", seed, dtype, name)
            keywords[name] = [value] if kind == "list" else value
            recipe.append(dict(argument, keyword=True, **({"list": True} if kind == "list" else {})))
            shown.append(f"{name}={'[' + spec + ']' if kind == 'list' else spec}")
        elif kind != "default":  # a string the caller compares it with, a flag's other value
            keywords[name] = value
            recipe.append({"name": name, "value": value, "keyword": True})
            shown.append(f"{name}={value!r}")
    return values, keywords, recipe, f"{caller.qualname}({', '.join(shown)})"


def capture(cls, function, values, keywords=None):
    """The (args, kwargs) ``function(*values, **keywords)`` passes to ``cls.apply``, or None where it does not get there."""
    had = "apply" in vars(cls)
    original = vars(cls).get("apply")

    def grab(*args, **kwargs):
        raise _Captured(args, kwargs)

    cls.apply = grab
    try:
        function(*values, **(keywords or {}))
    except _Captured as got:
        return got.call_args, got.call_kwargs
    except Exception:  # noqa: BLE001 -- the package's code refusing this plan
        return None
    finally:
        if had:
            cls.apply = original
        else:
            del cls.apply
    return None


def _try(target, caller, function, plan, seed, dtype):
    import warnings

    from gradcli.check.inputs import (_case_from_example, backend_for, forward_params, forward_problem,
                                      seed_global_generators)
    from gradcli.check.backends import fresh_container
    from gradcli.check.trials import backward_runs

    be = backend_for("torch")
    try:
        values, keywords, recipe, shown = _build(be, target, caller, plan, seed, dtype)
    except Exception:  # noqa: BLE001 -- a class that cannot be built from one tensor, ...
        return None
    seed_global_generators(seed, target.name)  # the caller's own random draws repeat with --seed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = capture(target.cls, function, values, keywords)
    if got is None or got[1]:
        return None
    captured = list(got[0])
    target.star_names = None
    named, star = forward_params(target)
    if len(captured) < len(named) or (len(captured) > len(named) and not star):
        return None
    if star:
        from gradcli.check.varargs import star_name

        target.star_names = [f"{star_name(target)}_{i}" for i in range(len(captured) - len(named))]
    params = forward_params(target)[0]
    try:
        case = _case_from_example(target, be, params, tuple(captured), 0, {}, seed, dtype)
        problem = forward_problem(be, target.fn, case.args)[0]
        copies = [a if be.is_tensor(a) else fresh_container(a) for a in case.args]  # forward may pop from a dict
        ran, why = backward_runs(be, target.fn, copies) if problem is None else (False, problem)
        if not ran:
            raise ValueError(f"forward or backward refuses it: {why}")
    except Exception:  # noqa: BLE001 -- what the package passed does not run here: not this plan
        target.star_names = None
        return None
    for position, rec in enumerate(case.records):
        rec.pop("case", None)
        rec.update(source="captured", inferred=f"what the package's {shown} passes {target.name}.apply "
                   f"({caller.file}:{caller.line}); the same --seed builds them again",
                   captured={"module": caller.module, "qualname": caller.qualname, "arguments": recipe,
                             "position": position})
    return case
