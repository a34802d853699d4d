"""What a check learns about the user's backward itself: which Functions declare ``@once_differentiable``, and
what each call of backward returned (before the engine validates, casts or sums it), by wrapping
``cls.backward`` for the duration of a check."""
from __future__ import annotations

import contextlib
from typing import Any, Optional, Sequence


def _once_differentiable_codes() -> list:
    """The code objects of the wrappers made by ``once_differentiable`` (gradcli's, and torch's
    when torch is already imported): every decorated backward shares its wrapper's code."""
    import sys

    codes = []
    for module_name in ("gradcli.autograd.function", "torch.autograd.function"):
        module = sys.modules.get(module_name)
        decorate = getattr(module, "once_differentiable", None)
        if decorate is not None:
            try:
                codes.append(decorate(lambda ctx, *grads: None).__code__)
            except Exception:  # noqa: BLE001 -- a changed torch API: no detection, not a crash
                pass
    return codes


def once_differentiable_functions(classes: Sequence[type]) -> list:
    """The classes among ``classes`` whose backward is decorated with ``@once_differentiable``."""
    codes = _once_differentiable_codes()
    found = []
    for cls in classes:
        defining = next((k for k in getattr(cls, "__mro__", ()) if "backward" in k.__dict__), None)
        if defining is None:
            continue
        attr = defining.__dict__["backward"]
        func = getattr(attr, "__func__", attr)
        if getattr(func, "__code__", None) in codes:
            found.append(cls)
    return found


class BackwardRecords:
    """What the wrapped backward saw: how often it was called and what each call returned."""

    def __init__(self):
        self.calls = 0
        self.results: list = []  # per completed call: one describe() per returned object


def describe(obj) -> Optional[tuple]:
    """(shape, dtype name) of a returned tensor/array; None for None; ((), type name) for anything else."""
    if obj is None:
        return None
    if hasattr(obj, "shape") and hasattr(obj, "dtype"):
        return tuple(obj.shape), str(obj.dtype).replace("torch.", "")
    return None, type(obj).__name__


@contextlib.contextmanager
def recording_backward(cls: Optional[type]):
    """Temporarily wrap ``cls.backward`` to record each call's raw return value (before the engine
    validates, casts or sums it), so gradcheck can tell that the user's backward ran and what it
    returned. Yields a BackwardRecords.

    The class attribute is swapped for the duration of the check and restored afterwards.
    """
    records = BackwardRecords()
    defining = next((k for k in getattr(cls, "__mro__", ()) if "backward" in k.__dict__), None)
    if cls is None or defining is None:
        yield records
        return
    attr = defining.__dict__["backward"]

    def record(run, *args):
        records.calls += 1  # counted on entry: a backward that raises was still invoked
        result = run(*args)
        returned = result if isinstance(result, tuple) else (result,)
        records.results.append(tuple(describe(g) for g in returned))  # not the arrays: they may be huge
        return result

    if isinstance(attr, staticmethod):
        func = attr.__func__
        replacement: Any = staticmethod(lambda *args: record(func, *args))
    elif isinstance(attr, classmethod):
        func = attr.__func__
        replacement = classmethod(lambda klass, *args: record(func, klass, *args))
    elif callable(attr):  # legacy style: an instance method backward(self, *grads)
        replacement = lambda self, *args: record(attr, self, *args)  # noqa: E731
    else:
        yield records
        return
    owned = defining is cls
    setattr(cls, "backward", replacement)
    try:
        yield records
    finally:
        if owned:
            setattr(cls, "backward", attr)
        else:
            delattr(cls, "backward")
