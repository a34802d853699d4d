"""Why a Function cannot be traced: the exception, and a reason a user can act on.

The reason names the cause (a numpy call on ``.data``, a branch on a symbolic value, a conversion to
a number, a built-in op without a symbolic rule) and the user's own line that led there.
"""
import linecache
import os
import re

from gradcli.autograd.ops._base import NotSymbolic

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_OPS_DIR = os.path.join(_PACKAGE_DIR, "autograd", "ops")


class NotTraceable(Exception):
    """The Function cannot run on symbols; ``reason`` says why and where."""

    def __init__(self, reason, phase="", location=""):
        self.reason, self.phase, self.location = reason, phase, location
        super().__init__(reason)


class WrongGradientShape(NotTraceable):
    """The user's backward returned a gradient whose shape does not even broadcast to its input's
    shape, so the engine (like torch) refused it and the backward could not finish: a wrong backward
    at every point, which ``prove`` disproves (``index``: the argument, shapes as tuples)."""

    def __init__(self, reason, phase, location, index, returned_shape, input_shape):
        super().__init__(reason, phase, location)
        self.index, self.returned_shape, self.input_shape = index, returned_shape, input_shape


def not_traceable(error, phase):
    """The NotTraceable for ``error`` raised while running ``phase`` on symbols."""
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    user = next(((f, n) for f, n in reversed(frames) if not _inside_library(f.f_code.co_filename)), None)
    reason = _explain(error, _builtin_op(frames))
    location = ""
    if user is not None:
        filename, lineno = user[0].f_code.co_filename, user[1]
        code = (linecache.getline(filename, lineno) or "").strip()
        location = f"{os.path.basename(filename)}:{lineno}" + (f": {code}" if code else "")
        reason += f" (in {phase}, at {location})"
    else:
        reason += f" (in {phase})"
    return NotTraceable(reason, phase, location)


def _builtin_op(frames):
    """(op name, "forward"|"backward") of the innermost built-in op the error passed through, or None."""
    for frame, _ in reversed(frames):
        if not os.path.abspath(frame.f_code.co_filename).startswith(_OPS_DIR):
            continue
        ctx = frame.f_locals.get("ctx")
        if ctx is not None:
            name = type(ctx).__name__
            return (name[:-len("Backward")] if name.endswith("Backward") else name), frame.f_code.co_name
    return None


def _inside_library(filename):
    path = os.path.abspath(filename)
    return path.startswith(_PACKAGE_DIR) or f"{os.sep}numpy{os.sep}" in path or f"{os.sep}sympy{os.sep}" in path


def _explain(error, op):
    text = str(error)
    if isinstance(error, NotTraceable):
        return error.reason
    if isinstance(error, NotSymbolic):  # the op itself says why (sort, topk, argmax)
        return text
    if "arrays used as indices must be of integer" in text and error.__class__ is IndexError:
        return ("data-dependent indexing: the index is computed from symbolic values (a comparison mask such "
                "as x[x > 0], or an index from max(x, dim)), so which elements it selects depends on the data "
                f"({text})")
    comparing = "truth value of Relational" in text or "truth value of the symbolic" in text
    ufunc = re.search(r"no callable (\w+) method", text)
    if op is not None and (comparing or ufunc):
        name, where = op
        does = "compares values" if comparing else f"calls numpy's {ufunc.group(1)} on the data"
        return f"the built-in op {name} has no symbolic rule: its {where} {does} ({text})"
    if comparing:
        return (f"data-dependent: the code branches on a symbolic value ({text}); a comparison has no single "
                "answer for all inputs")
    if ufunc:
        return (f"numpy's {ufunc.group(1)} is called on an array of symbols: numpy calls on `.data` cannot be "
                f"traced (use the tensor op, e.g. x.{ufunc.group(1)}())")
    if re.search(r"[Cc]an(no|')t convert .*(float|int|complex)|convert expression to", text):
        return ("a symbolic value is converted to a number (float(), int(), .item() in arithmetic, "
                f"or an assignment into a float array): {text}")
    if op is not None:
        return f"the built-in op {op[0]} has no symbolic rule ({type(error).__name__}: {text})"
    return f"{type(error).__name__}: {text}"
