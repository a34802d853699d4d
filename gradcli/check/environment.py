"""What a forward needs besides its arguments, when the automatic inputs cannot be the problem.

* **torch.distributed's default process group** ("Default process group has not been initialized"):
  what a user does to run such a Function on one machine is start a single-process group. gradcli
  does the same in the checking process (``gloo``, rank 0, world size 1, an in-memory ``HashStore``)
  and tries forward again; the input set says so in ``not_checked`` (nothing crossed ranks).
* **another environment the package sets up itself** ("model parallel group is not initialized",
  "... has not been initialized"): gradcli cannot build it. The result is a skip naming it, with the
  way to supply it: an inputs file whose entry sets it up and returns the inputs.
* **an attribute a tensor lacks** (``'Tensor' object has no attribute 'model_slices'``): forward takes
  an object the package builds there, not a tensor; a skip naming the parameter.

specs/check.md §2 ("Environments and objects") is the contract.
"""
from __future__ import annotations

import re
from typing import Optional

_PROCESS_GROUP = re.compile(r"default process group has not been initialized|init_process_group", re.I)
_NOT_INITIALIZED = re.compile(r"\b(?:is not|isn't|has not been|was not|not yet|never been|not) initiali[sz]ed\b", re.I)
_NO_ATTRIBUTE = re.compile(r"'(\w+)' object has no attribute '(\w+)'")
# objects gradcli builds for a parameter: an attribute missing on one of them is a parameter of another kind
BUILT_TYPES = {"Tensor", "float", "int", "bool", "str", "tuple", "NoneType", "Tanh", "Sigmoid", "Identity", "Sinh",
               "Asinh", "Distance", "SquaredDistance"}

WORLD_SIZE_ONE = {"input": "torch.distributed",
                  "reason": "forward needs torch.distributed's default process group: checked in a single-process "
                            "gloo group (world size 1, rank 0), so nothing was exchanged between ranks"}


def needs_process_group(exc: BaseException) -> bool:
    return bool(_PROCESS_GROUP.search(str(exc)))


def start_single_process_group() -> bool:
    """Initialize torch.distributed with one process (gloo, world size 1). True when a group is now
    there (started here or before); False when torch.distributed cannot start one."""
    try:
        import torch.distributed as dist

        if not dist.is_available():
            return False
        if not dist.is_initialized():
            dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
        return dist.is_initialized()
    except Exception:  # noqa: BLE001 -- no gloo in this build, or a group that refuses: forward's error stands
        return False


def missing_environment(text: str) -> bool:
    """An exception's text saying something forward needs "is not initialized" (not a process group
    gradcli can start)."""
    return bool(_NOT_INITIALIZED.search(text)) and not _PROCESS_GROUP.search(text)


def environment_skip(text: str, where: str, name: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else text
    return (f"{where} needs an environment gradcli cannot set up ({first}): not checked. Set it up in an inputs "
            f"file whose entry for {name} initializes it and returns the inputs (--inputs-from FILE.py with "
            f"def {name}(): ...; specs/check.md §2a)")


def missing_attribute(exc: BaseException) -> Optional[tuple]:
    """(type name, attribute) of ``'Tensor' object has no attribute 'x'`` for an object of a kind gradcli
    builds, else None."""
    if not isinstance(exc, AttributeError):
        return None
    m = _NO_ATTRIBUTE.search(str(exc))
    return (m.group(1), m.group(2)) if m and m.group(1) in BUILT_TYPES else None


def object_skip(exc: BaseException, params: list, blockers: list, target) -> str:
    """The skip for forward reading an attribute that the value gradcli built lacks: name the
    parameter (the one the raising line uses, else one whose ``.ATTR`` forward reads) and its annotation."""
    kind, attr = missing_attribute(exc)
    names = [p.name for p in params]
    chosen = next((n for n in blockers if n in names), None) or _reads_attribute(target, names, attr)
    annotation = _annotation(target, chosen) if chosen else None
    who = (f"{chosen} (annotated {annotation})" if annotation else chosen) if chosen else "a parameter"
    return (f"forward uses .{attr} of {who}, which the {kind} gradcli built there does not have: it takes an object "
            f"the package builds, not a {kind} (or forward has a bug). Give it with an inputs file (--inputs-from "
            f"FILE.py, def {target.name}(): return the arguments; specs/check.md §2a) or example_inputs()")


def _reads_attribute(target, names, attr) -> Optional[str]:
    import ast

    from gradcli.check.infer import _function_node

    node = _function_node(getattr(target.cls, "forward", None))
    for n in ast.walk(node) if node is not None else ():
        if isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.value, ast.Name) and n.value.id in names:
            return n.value.id
    return None


def _annotation(target, name) -> Optional[str]:
    import inspect

    try:
        annotation = inspect.signature(target.forward).parameters[name].annotation
    except (KeyError, TypeError, ValueError):
        return None
    if annotation is inspect.Parameter.empty:
        return None
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", repr(annotation))
    return None if text in ("Any", "Tensor", "torch.Tensor") else text
