"""Which automatic parameter stopped forward: the skip message names that one, not all of them.

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
