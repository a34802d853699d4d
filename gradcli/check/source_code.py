"""A Function's source text, read once per function or class object.

Building inputs and the feature checks read forward's, backward's and the class's source in about
ten places (input hints, abstract methods, variadic parameters, surrogates, undefined gradients,
ctx attributes, discovery's line numbers): ``inspect.getsourcelines`` finds the block by tokenizing
the file from its first line each time (~1 ms a call: 1.1 s CPU of the 87-file torch folder checked
in one process). Here its answer is kept per object (weakly: a shared worker checks many files, and
a file's classes go with it); an object inspect cannot read raises as inspect does, every time.
"""
from __future__ import annotations

import inspect
import weakref

_LINES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # object -> (lines, first line)


def source_lines(obj) -> tuple:
    """``inspect.getsourcelines(obj)``, once per object: (list of lines, number of the first)."""
    try:
        lines, start = _LINES[obj]
        return list(lines), start  # a copy: a caller may edit its list
    except (KeyError, TypeError):  # TypeError: not weakly referable (or unhashable): read each time
        pass
    lines, start = inspect.getsourcelines(obj)
    try:
        _LINES[obj] = (list(lines), start)
    except TypeError:
        pass
    return list(lines), start


def source(obj) -> str:
    """``inspect.getsource(obj)``, once per object."""
    return "".join(source_lines(obj)[0])
