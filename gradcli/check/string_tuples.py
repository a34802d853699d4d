"""A parameter annotated ``Tuple[str, ...]`` is a tuple of names: the empty one, ``()``.

Functions that flatten keyword arguments into positional ones take the keys as ``Tuple[str, ...]``
(``kwarg_keys``) and the values in ``*args``; with no keyword arguments the keys are ``()``. A float tensor
there is iterated, compared with strings or counted wrongly. The annotation is the evidence (nothing is
evaluated): ``Tuple[str, ...]``, ``tuple[str, ...]`` (or their text form) gives the SPEC ``()``, stated as
``annotated Tuple[str, ...]: no names``.
"""
from __future__ import annotations

import re
import typing

KIND = "strings"  # Hint.kind; shape_search.first_plan makes it the tuple ()
_TEXT = re.compile(r"^(typing\.)?[Tt]uple\[\s*str\s*,\s*\.\.\.\s*\]$")


def refine(fn, hints: dict):
    """Hints of parameters annotated as a tuple of strings of any length (infer.read_hints)."""
    fn = getattr(fn, "__func__", fn)
    try:
        annotations = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 -- unresolvable annotations: read them as text instead
        annotations = dict(getattr(fn, "__annotations__", {}) or {})
    for name, hint in hints.items():
        # a truth test (``if not keys``) reads as a bool flag; the annotation says more
        if hint is None or hint.kind not in (None, "bool") or name not in annotations:
            continue
        if is_string_tuple(annotations[name]):
            hint.kind, hint.why = KIND, "annotated Tuple[str, ...]: no names"


def is_string_tuple(annotation) -> bool:
    if isinstance(annotation, str):
        return bool(_TEXT.match(annotation.strip()))
    return typing.get_origin(annotation) is tuple and typing.get_args(annotation) == (str, Ellipsis)
