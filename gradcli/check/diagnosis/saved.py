"""Saved tensors changed in place after ``save_for_backward``, seen directly on either backend.

Neither engine raises for ``e = x.exp(); ctx.save_for_backward(e); return e.sub_(1)``: the version
a saved tensor is checked against is recorded when forward *returns*, after the change, so
backward silently reads the modified values. The diagnosis compares each saved tensor's version
counter at ``save_for_backward`` time with its version once forward has returned:

- gradcli's engine records both (``FunctionCtx._versions_at_save``, ``_saved_versions``);
- on torch, ``save_for_backward`` and ``mark_dirty`` are wrapped for one forward call (torch keeps
  no version at save time).

Both engines bump a tensor marked dirty once more when forward returns; that bump is not a change.
"""
from __future__ import annotations

import contextlib


def _is_dirty(tensor, dirty) -> bool:
    return any(d is tensor for d in dirty or ())


@contextlib.contextmanager
def _torch_recording(records):
    """Wrap torch's FunctionCtx.save_for_backward / mark_dirty for the duration of one call."""
    from torch.autograd.function import FunctionCtx

    save, mark = FunctionCtx.save_for_backward, FunctionCtx.mark_dirty
    dirty = {}  # id(ctx) -> the tensors it marked dirty (mark_dirty may come before or after the save)

    def recording_save(ctx, *tensors):
        records.append({"ctx": ctx, "saved": [(t, None if t is None else t._version) for t in tensors],
                        "dirty": dirty.get(id(ctx), ())})
        return save(ctx, *tensors)

    def recording_mark(ctx, *tensors):
        dirty[id(ctx)] = tensors
        for record in records:
            if record["ctx"] is ctx:
                record["dirty"] = tensors
        return mark(ctx, *tensors)

    FunctionCtx.save_for_backward, FunctionCtx.mark_dirty = recording_save, recording_mark
    try:
        yield
    finally:
        FunctionCtx.save_for_backward, FunctionCtx.mark_dirty = save, mark


def _function_name(ctx) -> str:
    cls = getattr(ctx, "_forward_cls", None) or type(ctx)
    return getattr(cls, "__name__", "Function")


def saved_changed_after_saving(probe) -> list:
    """``[{"function", "saved", "at_save", "at_return"}]``: saved tensors a forward call changed in
    place after saving them (one forward call of ``probe.fn`` with gradients enabled)."""
    changed = []
    if probe.backend == "torch":
        records = []
        with _torch_recording(records), probe._grad_enabled(True):
            probe.fn(*probe._build())
        for record in records:
            for i, (t, at_save) in enumerate(record["saved"]):
                if t is None:
                    continue
                allowed = 1 if _is_dirty(t, record["dirty"]) else 0
                if t._version - at_save > allowed:
                    changed.append({"function": _function_name(record["ctx"]), "saved": i, "at_save": at_save,
                                    "at_return": t._version})
        return changed
    from gradcli.check.diagnosis.probe import _flatten_outputs, _next_nodes

    with probe._grad_enabled(True):
        outs = _flatten_outputs(probe.fn(*probe._build()))
    stack = [getattr(o, "grad_fn", None) for o in outs]
    seen = set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(_next_nodes(node))
        at_save, at_return = getattr(node, "_versions_at_save", ()), getattr(node, "_saved_versions", ())
        saved = getattr(node, "_to_save", ())
        for i, (before, after) in enumerate(zip(at_save, at_return)):
            if before is None or after is None:
                continue
            allowed = 1 if _is_dirty(saved[i], getattr(node, "_dirty", ())) else 0
            if after - before > allowed:
                changed.append({"function": _function_name(node), "saved": i, "at_save": before, "at_return": after})
    return changed


def ctx_attributes_changed(probe, cls) -> list:
    """``[{"function", "attribute", "at_save", "at_return"}]``: tensors forward keeps as ``ctx``
    attributes (``ctx.s = s``, or entries of a list, ``ctx.trans.append(trans)``) and then changes
    in place before it returns (``return s.mul_(x)``), that backward reads (``ctx.s``). Neither engine versions a ctx attribute, so forward's frame is
    traced: each attribute's version when it is first seen on ctx, and when forward returns."""
    import inspect
    import sys

    forward = None if cls is None else (cls.__dict__.get("forward") or getattr(cls, "forward", None))
    backward = None if cls is None else (cls.__dict__.get("backward") or getattr(cls, "backward", None))
    forward = inspect.unwrap(getattr(forward, "__func__", forward)) if forward is not None else None
    code = getattr(forward, "__code__", None)
    if code is None or backward is None or not code.co_varnames:
        return []
    try:
        backward_text = inspect.getsource(backward)
    except (OSError, TypeError):
        return []
    first, last = {}, {}  # attribute -> (tensor, version)
    previous = sys.gettrace()

    def versions(frame, into, only_new):
        ctx = frame.f_locals.get(code.co_varnames[0])
        for name, value in (vars(ctx).items() if hasattr(ctx, "__dict__") else ()):
            # a list kept on ctx (`ctx.trans.append(trans)` in a loop) holds each step's tensor:
            # each entry is versioned when first seen, like an attribute
            entries = [(f"{name}[{k}]", v) for k, v in enumerate(value[:64])] if isinstance(value, (list, tuple)) \
                else [(name, value)]
            for key, item in entries:
                version = getattr(item, "_version", None)
                if isinstance(version, int) and not name.startswith("_") and (not only_new or key not in into):
                    into[key] = (item, version)

    def tracer(frame, event, arg):
        if frame.f_code is not code:
            return previous(frame, event, arg) if previous is not None else None

        def local(frame, event, arg):
            if event == "line":
                versions(frame, first, only_new=True)
            elif event == "return":
                versions(frame, first, only_new=True)
                versions(frame, last, only_new=False)
            return local

        return local

    sys.settrace(tracer)
    try:
        with probe._grad_enabled(True):
            probe.fn(*probe._build())
    finally:
        sys.settrace(previous)
    changed = []
    for name, (tensor, at_save) in first.items():
        now = last.get(name)
        if now is not None and now[0] is tensor and now[1] > at_save and f".{name.split('[')[0]}" in backward_text:
            changed.append({"function": getattr(cls, "__name__", "Function"), "attribute": name,
                            "at_save": at_save, "at_return": now[1]})
    return changed
