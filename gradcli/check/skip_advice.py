"""Which automatic parameter stopped forward: the skip message names that one, not all of them.

``spec_kind`` and ``suggested_spec`` word the SPEC to give for a parameter (one that parses for its kind,
never the one tried).

From the exception forward raised at gradcli's first plan: the innermost frame of user code whose
raising line (or, for a ``raise`` line, the ``if`` above it) names a local variable that *is* one of
the arguments gradcli built (forward's own frame says which object is which parameter). Nothing is evaluated; the frame's locals are only
compared by identity.
"""
from __future__ import annotations

import linecache
import re
import traceback

_IDENT = re.compile(r"[A-Za-z_]\w*")


def blocking(exc: BaseException, names: list) -> list:
    """Those of ``names`` (forward's automatic parameters) that the line where forward raised uses,
    innermost user frame first; [] when it cannot tell. Forward's own frame says which objects are
    which parameter (forward is given copies), helpers' frames are matched by identity."""
    frames = list(traceback.walk_tb(exc.__traceback__))
    by_id = {}
    for frame, _ in frames:
        if frame.f_code.co_name == "forward" and any(n in frame.f_locals for n in names):
            by_id = {id(frame.f_locals[n]): n for n in names if n in frame.f_locals and
                     _trackable(frame.f_locals[n])}
            break
    if not by_id:
        return []
    for frame, lineno in reversed(frames):
        path = frame.f_code.co_filename
        if _library(path):
            continue
        used = set(_IDENT.findall(_condition_line(path, lineno)))
        found = []
        for local, value in frame.f_locals.items():
            name = by_id.get(id(value))
            if name is not None and local in used and name not in found:
                found.append(name)
        if found:
            return found
    return []


def _trackable(value) -> bool:
    # small ints and strings are shared objects: an identity match would mean nothing
    return not isinstance(value, (bool, int, float, str, type(None)))


def _library(path: str) -> bool:
    """torch's, numpy's and gradcli's own frames: the parameter is named in the user's code."""
    return path.startswith("<") or any(part in path for part in ("/site-packages/torch/", "/site-packages/numpy/",
                                                                   "/gradcli/autograd/", "/gradcli/check/"))


def _condition_line(path: str, lineno: int) -> str:
    """The raising line; for ``raise ...`` the ``if``/``elif`` it sits under."""
    line = linecache.getline(path, lineno)
    if not line.strip().startswith("raise"):
        return line
    indent = len(line) - len(line.lstrip())
    for above in range(lineno - 1, max(0, lineno - 20), -1):
        text = linecache.getline(path, above)
        if text.strip() and len(text) - len(text.lstrip()) < indent:
            return text if text.strip().startswith(("if ", "elif ", "assert ")) else line
    return line


def spec_kind(param, plan, refusal=None) -> str:
    """What kind of SPEC a parameter takes, with one that parses (the tried shape is not offered again)."""
    if plan.kind == "tensor" and refusal is not None and "not callable" in str(refusal):
        return f"{param.name} a callable: {param.name}=fn:tanh, or an inputs file (--inputs-from) for another one"
    if plan.kind == "callable":  # fn:tanh was tried: the callable forward needs is another one
        return (f"{param.name} a callable other than the fn:{plan.value} tried (tanh of a tensor), e.g. one the "
                f"package builds: give it with an inputs file (--inputs-from FILE.py)")
    if plan.kind == "tensor":
        tried = "x".join(str(d) for d in (plan.shape or ())) or "a 0-d tensor"
        return (f"{param.name} a float tensor: a shape other than the {tried} tried, like {param.name}=5x4, or "
                f"{param.name}=float64[2,3,3]@positive")
    return f"{param.name} e.g. {param.name}={suggested_spec(param, plan)}"


def suggested_spec(param, plan) -> str:
    """A SPEC that parses for the parameter's kind (the skip message's hint)."""
    from gradcli.check.auto_inputs import value_spec
    from gradcli.check.spec import format_value_spec

    hint = param.hint
    if plan.kind == "index":
        return "int64[3]@[0,4)"
    if plan.kind == "mask":
        return "bool[3,4]"
    if plan.kind in ("int", "float"):
        return value_spec(param, plan.value)
    if plan.kind == "bool":
        return "true"
    if plan.kind == "callable":
        return "fn:tanh"
    if plan.kind == "object":
        return "default()"
    if plan.kind == "shape":
        return format_value_spec(tuple(plan.value))
    if plan.kind == "str":
        return format_value_spec(hint.choices[0]) if hint and hint.choices else "'VALUE'"
    shape = plan.shape if plan.shape else (3, 4)
    if plan.structure is not None:
        return "x".join(str(d) for d in shape) + f"@{plan.structure}"
    return "x".join(str(d) for d in shape) if len(shape) > 1 else f"float64[{','.join(map(str, shape))}]"


