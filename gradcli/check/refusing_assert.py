"""forward's own ``assert`` refusing the inputs gradcli built: a skip that quotes it, never an error (issue 13:
no ERROR of gradcli's doing at inputs it built).

The assertion is read from the traceback's innermost frame (its file, line and source line, never run again).
``assert isinstance(NAME, CLASS)`` on a parameter gradcli built names what that parameter must be: an object the
package builds (revtorch's ``assert isinstance(reversible_blocks, nn.ModuleList)``); any other assertion is a
condition on values or shapes that no plan tried met."""
from __future__ import annotations

import ast
import os
import traceback
from typing import Optional


def assertion_skip(exc: AssertionError, built: list, target) -> str:
    """The skip message for ``exc`` raised by forward at inputs gradcli built (``built``: those parameters)."""
    where, source = failing_assert(exc)
    quoted = f"`{source}`" if source else "assertion"
    at = f" ({where})" if where else ""
    said = f" ({str(exc).strip()})" if str(exc).strip() else ""
    required = isinstance_requirements(source, built)
    if required:
        need = "; ".join(f"{name} must be an instance of {kind}" for name, kind in required)
        return (f"cannot build inputs automatically: forward's {quoted}{at} fails at the inputs gradcli built"
                f"{said}: {need}, an object the package builds, not a Tensor. Give it with an inputs file "
                f"(--inputs-from FILE.py, def {target.name}(): return the arguments; specs/check.md §2a) or "
                f"example_inputs()")
    return (f"cannot build inputs automatically: forward's {quoted}{at} fails at the inputs gradcli built, at "
            f"every plan tried{said}. Give the inputs with --input NAME=SPEC (SPEC grammar: specs/check.md) or an "
            f"inputs file (--inputs-from FILE.py), or add a staticmethod example_inputs() to {target.name}")


def failing_assert(exc: BaseException) -> tuple:
    """("file.py:LINE", the assert statement's first source line) of the frame that raised, or (None, None)."""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ is not None else []
    if not frames:
        return None, None
    last = frames[-1]
    where = f"{os.path.basename(last.filename)}:{last.lineno}"
    line = (last.line or "").strip()
    return where, line if line.startswith("assert") else None


def requires_object(exc: BaseException, params: list) -> bool:
    """forward asserted that one of ``params`` is an instance of a class (not a Tensor): an object the package
    builds, which no automatic input set can be (broken_forward.py: not a bug, the skip says which)."""
    if not isinstance(exc, AssertionError):
        return False
    return any(kind.rsplit(".", 1)[-1] != "Tensor" for _, kind in isinstance_requirements(failing_assert(exc)[1], params))


def isinstance_requirements(source: Optional[str], built: list) -> list:
    """[(parameter, class as written)] for each ``isinstance(PARAM, CLASS)`` in the assert, PARAM among ``built``."""
    if not source:
        return []
    try:
        tree = ast.parse(source)
    except SyntaxError:  # an assert continued on the next line: its first line alone does not parse
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
                and len(node.args) == 2 and isinstance(node.args[0], ast.Name) and node.args[0].id in built:
            found.append((node.args[0].id, ast.unparse(node.args[1])))
    return found

