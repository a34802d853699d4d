"""SymPy's per-object work that tracing repeats for every element, done once per value.

Tracing builds each element's expression with SymPy's evaluating constructors, and two costs repeat
for every element though their answers cannot differ (measured on the 75-file engine folder of
bench/folder_workload.py, exact column, in one process):

* a Python float constant (``0.5 * x``) becomes a new ``Float`` for every element, and so does every
  coefficient SymPy derives from it (``-0.5`` when ``0.5 * (x - m)`` is distributed); the first
  assumption query on each new Float (``Mul`` asks ``coeff.is_zero``) deduces its facts afresh:
  1,841 of the column's 3,279 assumption queries, ~0.1 ms each;
* the first assumption query on any new object copies its class's default facts by deducing them
  all again (``StdFactKB.copy``), though they are already closed under the rules.

While ``shared_numbers()`` is on, ``Float._new`` (through which every Float is made) hands out one
object per (value, precision) -- Floats are immutable values, and SymPy shares its small Integers
the same way -- so each value's facts are deduced once; and ``StdFactKB.copy`` copies the dict of
facts it holds. The expressions built, and every answer SymPy gives about them, are the same.
Both are put back when the outermost ``shared_numbers()`` ends (also on an exception or a signal),
and the Floats it shared are let go.
"""
import contextlib
import threading

_LOCK = threading.Lock()  # the patches are process-wide: on at the first entry, off at the last exit
_DEPTH = [0]
_SHARED: dict = {}   # (class, _mpf_, _prec, zero) -> the one Float made for it while on
_ORIGINAL: dict = {}  # what the patches replaced, while they are on
_MAKE_FLOAT: list = []  # Float._new's own function, kept (a thread may still be inside a patched call)


def _shared_new(cls, _mpf_, _prec, zero=True):
    key = (cls, _mpf_, _prec, zero)
    found = _SHARED.get(key)
    if found is None:
        found = _SHARED[key] = _MAKE_FLOAT[0](cls, _mpf_, _prec, zero)
    return found


def _copied_facts(self):
    """``StdFactKB.copy`` without deducing again what the facts already imply (the same dict)."""
    new = dict.__new__(type(self))
    dict.update(new, self)
    new.rules = self.rules
    new._generator = self._generator.copy() if self else {}
    return new


@contextlib.contextmanager
def shared_numbers():
    """Share equal Floats and copy known facts without deducing them again, while on (above)."""
    from sympy.core.assumptions import StdFactKB
    from sympy.core.numbers import Float

    with _LOCK:
        if _DEPTH[0] == 0:
            original = Float.__dict__.get("_new")
            # another SymPy than the one this was written for: nothing is changed, the context does nothing
            if isinstance(original, classmethod) and "copy" in StdFactKB.__dict__ \
                    and hasattr(StdFactKB(), "_generator"):
                _MAKE_FLOAT[:] = [original.__func__]
                _ORIGINAL.update(float_new=original, copy=StdFactKB.__dict__["copy"])
                Float._new = classmethod(_shared_new)
                StdFactKB.copy = _copied_facts
        on = _DEPTH[0] > 0 or bool(_ORIGINAL)
        if on:
            _DEPTH[0] += 1
    try:
        yield
    finally:
        if on:
            with _LOCK:
                _DEPTH[0] -= 1
                if _DEPTH[0] == 0:
                    Float._new = _ORIGINAL.pop("float_new")
                    StdFactKB.copy = _ORIGINAL.pop("copy")
                    _SHARED.clear()
