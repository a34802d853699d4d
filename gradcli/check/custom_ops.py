"""``torch.library.custom_op`` ops: discovered in files like Functions, checked the same way.

PyTorch recommends ``@torch.library.custom_op("ns::name", mutates_args=())`` with
``op.register_autograd(backward, setup_context=...)`` (and ``op.register_fake``) for new custom
ops. The syntax pre-scan (scan.py) finds module-level functions with that decorator; after the
import, every ``CustomOpDef`` defined in the file (its function's ``__module__`` is the file's) is
a Target -- when it has a ``register_autograd`` backward -- whose forward is the op's Python
function (its signature gives the inputs) and whose ``apply`` is the op itself; an op whose
kernels are for other devices only (``device_types="cuda"``) is a skip that says so. Attributes set on the op -- ``op.reference = fn``,
``op.example_inputs = fn`` -- play the roles of the class attributes of a Function. After the
numeric check, ``torch.library.opcheck``'s registration tests are one more check, ``opcheck``.
"""
from __future__ import annotations

import functools
from typing import Callable, Optional

DECORATORS = ("torch.library.custom_op", "torch._library.custom_ops.custom_op")
ROLES = ("reference", "example_inputs", "formula", "surrogate")  # op attributes a Function has as class attributes


def custom_op_names(statements, bindings: dict, dotted: Callable) -> list:
    """Names of module-level functions decorated ``@torch.library.custom_op(...)``, and of names bound to
    ``torch.library.custom_op("ns::name", fn, ...)`` (read, never run)."""
    import ast

    found = []
    for node in statements:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call) and len(node.value.args) >= 2):
            # op = torch.library.custom_op("ns::name", fn, mutates_args=()): the function form
            text = dotted(node.value.func)
            if text and _qualified(text, bindings) in DECORATORS:
                found.append(node.targets[0].id)
            continue
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for deco in node.decorator_list:
            text = dotted(deco.func if isinstance(deco, ast.Call) else deco)
            if text and _qualified(text, bindings) in DECORATORS:
                found.append(node.name)
                break
    return found


def _qualified(text: str, bindings: dict) -> str:
    head, _, rest = text.partition(".")
    origin = bindings.get(head, head)
    origin = origin[1:] if origin.startswith("=") else origin
    return origin + ("." + rest if rest else "")


def collect_custom_ops(module, item) -> list:
    """Targets for the ``CustomOpDef`` objects defined in ``module`` (none when torch is not loaded)."""
    import sys

    torch = sys.modules.get("torch")
    kind = getattr(getattr(getattr(torch, "_library", None), "custom_ops", None), "CustomOpDef", None)
    if kind is None:
        return []
    from gradcli.check.discovery import Target, _line

    targets, seen = [], set()
    for name, op in list(vars(module).items()):  # named as the module names it: file.py::name selects it
        init = getattr(op, "_init_fn", None)
        if not isinstance(op, kind) or getattr(init, "__module__", None) != module.__name__ or id(op) in seen:
            continue
        seen.add(id(op))
        backward = getattr(op, "_backward_fn", None)
        if backward is None:
            continue  # no register_autograd: no backward of the user's to check (a packing op, a backward kernel)
        shim = _shim(op, name, module.__name__)
        target = Target(shim, name, item.path, _line(init), _line(backward), "setup_context", "torch",
                        module=getattr(item, "module", "") or module.__name__)
        target.custom_op = op  # runner: the opcheck check; reporting: a custom op, not a class
        devices = set(getattr(op, "_backend_fns", None) or {None: None})
        if None not in devices and "cpu" not in devices:  # device_types="cuda": no CPU kernel to run
            target.abstract = (f"a torch.library.custom_op for {', '.join(sorted(map(str, devices)))} only "
                               f"(device_types): its kernel does not run on the CPU, where gradcli builds inputs; "
                               f"not checked")
        targets.append(target)
    return targets


def _shim(op, name: str, module_name: str) -> type:
    """A class that looks like a Function to the input builder: forward = the op's function
    (no ctx), apply = the op, and the op's reference/example_inputs/... as class attributes."""
    @functools.wraps(op._init_fn)  # gradcheck names the inputs from this signature (x, not input0)
    def apply(*args, **kwargs):
        return op(*args, **kwargs)

    namespace = {"__module__": module_name, "__qualname__": name, "__doc__": getattr(op._init_fn, "__doc__", None),
                 "forward": staticmethod(op._init_fn), "apply": staticmethod(apply)}
    if getattr(op, "_backward_fn", None) is not None:
        namespace["backward"] = staticmethod(op._backward_fn)
    if getattr(op, "_setup_context_fn", None) is not None:
        namespace["setup_context"] = staticmethod(op._setup_context_fn)
    for role in ROLES:
        value = op.__dict__.get(role)
        if value is not None:
            namespace[role] = staticmethod(value) if callable(value) and role != "surrogate" else value
    return type(name, (), namespace)


def opcheck(op, args) -> Optional[object]:
    """``torch.library.opcheck``'s registration tests at ``args`` as one ``Check`` named ``opcheck``
    (None where torch has no opcheck). A test that raises fails it, with the test's message."""
    import torch

    from gradcli.check.report import Check

    run = getattr(torch.library, "opcheck", None)
    if run is None:
        return None
    try:
        results = run(op, tuple(args), raise_exception=False)
    except Exception as e:  # noqa: BLE001 -- opcheck itself refused the op or the inputs
        return Check("opcheck", "fail", f"torch.library.opcheck raised {type(e).__name__}: {e}")
    failed = {test: outcome for test, outcome in results.items() if outcome != "SUCCESS"}
    details = {"tests": {test: "SUCCESS" if outcome == "SUCCESS" else f"{type(outcome).__name__}: {outcome}"
                         for test, outcome in results.items()}}
    if not failed:
        return Check("opcheck", "pass", f"torch.library.opcheck: {', '.join(results)} passed", details=details)
    test, outcome = next(iter(failed.items()))
    first = str(outcome).strip().splitlines()[0] if str(outcome).strip() else type(outcome).__name__
    return Check("opcheck", "fail", f"torch.library.opcheck: {', '.join(failed)} failed; {test}: {first}",
                 details=details)
