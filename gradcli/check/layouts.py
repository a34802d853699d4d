"""The ``layouts`` check: the same values in another memory layout must give the same gradients.

OpInfo tests feed torch's ops non-contiguous inputs; a hand-written kernel often assumes C order
(``as_strided`` with contiguous strides, ``ravel(order="K")``, a raw pointer). Each differentiable
input is tried, all at once, as

* **non-contiguous**: the same values transposed back (reversed-axis strides, i.e. Fortran order)
  for 2 or more dimensions, every other element of a buffer twice as long (stride 2) for one;
* **expanded**: its first slice along the first dimension longer than 1, expanded over that
  dimension (stride 0), against a contiguous copy of those values;

on both backends (torch tensors; numpy views under the engine's tensors). Outputs and gradients
(for the session's last random cotangent) must equal those of contiguous inputs with the same
values. A forward that refuses a layout is a note, not a failure; on a difference each input is
tried alone to name it. See specs/gradcheck.md.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradcli.check import backends as _backends
from gradcli.check.backends import COPY_INPUTS_MAX_ELEMENTS
from gradcli.check.report import Check

VARIANTS = ("non-contiguous", "expanded")
# Above this many differentiable elements gradcheck shares the inputs instead of copying them (memory);
# each layout would be a copy: not tried there.
MAX_ELEMENTS = COPY_INPUTS_MAX_ELEMENTS


def _strided(b, array: np.ndarray, variant: str):
    """A leaf over ``array``'s values (non-contiguous) or its expanded first slice (expanded); None
    when the shape has no such layout (one element, no dimension longer than 1)."""
    if variant == "non-contiguous":
        if array.size < 2 or (array.ndim >= 2 and sum(s > 1 for s in array.shape) < 2):
            return None  # (1, n) transposed is still contiguous
        axis = None
    else:
        axis = next((d for d, s in enumerate(array.shape) if s > 1), None)
        if axis is None:
            return None
    if b.name == "torch":
        torch = b.torch
        t = torch.from_numpy(np.ascontiguousarray(array))
        if axis is not None:
            view = t.narrow(axis, 0, 1).expand(array.shape)
        elif array.ndim >= 2:
            reverse = tuple(range(array.ndim - 1, -1, -1))
            view = t.permute(reverse).contiguous().permute(reverse)
        else:
            buffer = torch.zeros(array.size * 2, dtype=t.dtype)
            buffer[::2] = t
            view = buffer[::2]
        return view.detach().requires_grad_(True)
    if axis is not None:
        data = np.broadcast_to(np.take(array, [0], axis=axis), array.shape)
    elif array.ndim >= 2:
        data = np.asfortranarray(array)
    else:
        data = np.zeros(array.size * 2, dtype=array.dtype)[::2]
        data[...] = array
    return b.leaf(data, requires_grad=True)


def _contiguous(b, tensor):
    """A contiguous leaf with ``tensor``'s values."""
    return b.fresh_leaf(b.leaf(np.ascontiguousarray(b.to_numpy(tensor)), requires_grad=False))


def _run(session, replaced: dict):
    """(outputs, gradients) as float64 arrays with ``replaced`` {arg index: leaf} as the inputs."""
    b = session.backend
    args = [replaced.get(i, b.fresh_leaf(a) if i in session.diff else a) for i, a in enumerate(session.args)]
    with b.enable_grad():
        outputs = _backends.flatten_outputs(session.call(*args))
    diff_outputs = [j for j in session.diff_outputs if j < len(outputs) and b.is_tensor(outputs[j])]
    cotangent = session.report.cotangents[-1]
    with np.errstate(all="ignore"):
        grads = b.grad([outputs[j] for j in diff_outputs], [args[i] for i in session.diff],
                       [cotangent[j] for j in diff_outputs], retain_graph=False)
    values = [b.to_numpy(o).astype(np.float64) if b.is_tensor(o) else None for o in outputs]
    return values, [None if g is None else b.to_numpy(g).astype(np.float64) for g in grads]


def _differs(got, want, tolerance) -> float:
    """Largest |got - want| beyond the tolerance (0.0 when within it; inf for a structural change)."""
    worst = 0.0
    for g, w in zip(got, want):
        if g is None and w is None:
            continue
        g = np.zeros_like(w) if g is None else g
        w = np.zeros_like(g) if w is None else w
        if g.shape != w.shape:
            return float("inf")
        with np.errstate(invalid="ignore"):
            diff = np.abs(g - w)
        scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=0.0))
        allowed = tolerance.atol + tolerance.rtol * np.abs(w) + tolerance.scale_atol * scale
        bad = ~(diff <= allowed) & ~(np.isnan(g) & np.isnan(w))
        if bad.any():
            worst = max(worst, float(np.nanmax(np.where(bad, diff, 0.0))) if diff.size else 0.0)
            worst = worst or float("inf")
    return worst


def layouts_check(session) -> Optional[Check]:
    """The check for one session (after the value check), None when no input has another layout."""
    report = session.report
    if not report.cotangents or not session.diff_outputs:
        return None
    reentrant = report.check("reentrant")
    if reentrant is not None and reentrant.status == "fail":
        return Check("layouts", "skip", "not tried: backward is nondeterministic (reentrant failed)")
    b, names = session.backend, session.names
    # a module's Parameter is read by the module, not through the argument: it keeps its own layout
    arrays = {i: b.to_numpy(session.args[i]) for i in session.diff if not b.held_by_module(session.args[i])}
    if sum(a.size for a in arrays.values()) > MAX_ELEMENTS:
        return Check("layouts", "skip", f"not tried: more than {MAX_ELEMENTS} input elements (each layout would "
                     f"be a copy; gradcheck shares inputs this large)")
    tried, notes, failures, details = [], [], [], {"tried": [], "notes": []}
    for variant in VARIANTS:
        views = {i: _strided(b, a, variant) for i, a in arrays.items()}
        views = {i: v for i, v in views.items() if v is not None}
        if not views:
            continue
        try:
            reference = _run(session, {i: _contiguous(b, v) for i, v in views.items()})
        except Exception:  # noqa: BLE001 -- the expanded values may leave forward's domain: not tried
            notes.append(f"{variant}: not tried (forward or backward fails at the values of the {variant} inputs)")
            continue
        if variant == "expanded" and not all(np.all(np.isfinite(o)) for o in reference[0] if o is not None):
            notes.append("expanded: not tried (forward is not finite at the expanded values)")
            continue
        problem = _compare(session, views, reference, variant)
        if problem is None:
            tried.append(variant)
            continue
        if problem[0] == "refused":
            notes.append(f"{variant}: forward does not accept it ({problem[1]}): not tried")
            continue
        if _compare(session, {i: _contiguous(b, v) for i, v in views.items()}, reference, variant) is not None:
            notes.append(f"{variant}: not tried (two runs at the same contiguous inputs already differ: a random "
                         f"forward or backward)")
            continue
        culprits = list(views) if len(views) == 1 else [i for i in views if _alone(session, i, views[i], variant)]
        culprits = culprits or list(views)
        who = ", ".join(names[i] for i in culprits)
        strides = ", ".join(f"{names[i]}: {_strides(b, views[i])}" for i in culprits)
        failures.append(f"{problem[1]} when {who} {'is' if len(culprits) == 1 else 'are'} {variant} "
                        f"(strides {strides})")
        details.setdefault("failed", []).append({"variant": variant, "inputs": [names[i] for i in culprits],
                                                 "what": problem[0], "max_difference": problem[2]})
        tried.append(variant)
    details["tried"], details["notes"] = tried, notes
    if failures:
        return Check("layouts", "fail", "layout-dependent backward: " + "; ".join(failures) +
                     " (the same values in C order give other results: does it assume contiguous memory?)",
                     None, details)
    if not tried:
        if not notes:
            return None
        return Check("layouts", "skip", "; ".join(notes), None, details)
    message = f"the same gradients for {' and '.join(tried)} inputs"
    return Check("layouts", "pass", message + ("; " + "; ".join(notes) if notes else ""), None, details)


def _alone(session, i, view, variant) -> bool:
    """Input ``i`` alone in this layout changes the result (the others contiguous)."""
    try:
        problem = _compare(session, {i: view}, None, variant)
    except Exception:  # noqa: BLE001 -- user code at contiguous inputs: not this input's layout
        return False
    return problem is not None and problem[0] != "refused"


def _compare(session, views, reference, variant):
    """None when the layout changes nothing; ("refused", why) when forward raised on it;
    ("forward" | "backward", message, max difference) otherwise."""
    b = session.backend
    if reference is None:
        reference = _run(session, {i: _contiguous(b, v) for i, v in views.items()})
    try:
        got = _run(session, views)
    except Exception as exc:  # noqa: BLE001 -- user code
        where = "backward" if _forward_runs(session, views) else None
        if where is None:
            return ("refused", f"{type(exc).__name__}: {_first_line(exc)}")
        return ("backward", f"backward raises {type(exc).__name__}: {_first_line(exc)}", float("inf"))
    outputs = _differs(got[0], reference[0], session.tolerance)
    if outputs:
        return ("forward", f"forward's outputs differ by up to {outputs:.3g}", outputs)
    grads = _differs(got[1], reference[1], session.tolerance)
    if grads:
        return ("backward", f"the gradients differ by up to {grads:.3g}", grads)
    return None


def _forward_runs(session, views) -> bool:
    b = session.backend
    args = [views.get(i, a) for i, a in enumerate(session.args)]
    try:
        with b.enable_grad():
            session.call(*args)
        return True
    except Exception:  # noqa: BLE001
        return False


def _strides(b, tensor):
    if b.name == "torch":
        return tuple(tensor.stride())
    data = b.to_numpy(tensor)
    return tuple(s // data.dtype.itemsize for s in data.strides)


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""
