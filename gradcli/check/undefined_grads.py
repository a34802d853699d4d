"""The ``undefined_grads`` check: backward when an output's gradient is undefined (``None``).

Autograd does not always hand backward a tensor for every output: an output that nothing
downstream uses gets no gradient. With several outputs (and ``ctx.set_materialize_grads(True)``,
the default) the engine passes zeros in its place; after ``ctx.set_materialize_grads(False)`` it
passes ``None``, and backward must treat it as zero. torch's gradcheck tests this
(``check_undefined_grad``); so does this check, on both backends:

* for each differentiable output j (when there are several): backward with output j left out of
  the ``grad`` call (its gradient undefined) against backward with a zero cotangent for j, the
  others given the same random cotangent; the two must agree;
* after ``set_materialize_grads(False)``: backward with every output's gradient undefined must
  give no gradient or zeros (torch: ``UndefinedGrad``; the engine: backward called with ``None``s).

The check exists only when it can tell something: several differentiable outputs, or
materialisation turned off. See specs/gradcheck.md.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradcli.check.report import Check


def materializes_grads(backend, outputs, cls=None) -> bool:
    """False when the Function behind ``outputs`` called ``ctx.set_materialize_grads(False)``: the
    engine's node says so; torch's flag cannot be read back, so there its forward's (or
    setup_context's) source is read for the call, and torch itself then decides what backward gets."""
    if backend.name == "torch":
        return not _calls_set_materialize(cls)
    for o in outputs:
        node = getattr(o, "grad_fn", None)
        if node is None:
            continue
        flag = getattr(node, "_materialize_grads" if backend.name == "gradcli" else "materialize_grads", True)
        if flag is False:
            return False
    return True


def _calls_set_materialize(cls) -> bool:
    from gradcli.check import source_code

    for name in ("forward", "setup_context"):
        method = getattr(cls, name, None) if cls is not None else None
        try:
            if method is not None and "set_materialize_grads" in source_code.source(method):
                return True
        except (OSError, TypeError):
            continue
    return False


def undefined_grads_check(analytic, cotangent, tolerance, cls=None) -> Optional[Check]:
    """The check for one session (``analytic``: its Analytic after the probes), or None when it does
    not apply. ``cotangent``: one random probe cotangent (a tuple, one array per output); ``cls``:
    the Function class, when gradcheck was given one."""
    b = analytic.backend
    outputs = analytic.outputs
    diff_outputs = list(analytic.diff_outputs)
    if not diff_outputs:
        return None
    materialize = materializes_grads(b, [outputs[j] for j in diff_outputs], cls)
    if len(diff_outputs) < 2 and materialize:
        return None
    leaves = [analytic.leaves[i] for i in analytic.diff]
    names = [analytic.names[i] for i in analytic.diff]
    how = ("after ctx.set_materialize_grads(False) backward gets None for an output nobody used"
           if not materialize else "autograd passes zeros for an output nobody used")
    details = {"materialize_grads": materialize, "outputs": diff_outputs, "max_difference": 0.0}
    problems = []
    if len(diff_outputs) > 1:
        for j in diff_outputs:
            kept = [k for k in diff_outputs if k != j]
            try:
                undefined = _grads(b, [outputs[k] for k in kept], leaves, [cotangent[k] for k in kept])
            except Exception as exc:  # noqa: BLE001 -- user code: the failure is the finding
                problems.append(f"backward raised {type(exc).__name__}: {_first_line(exc)} when output {j}'s "
                                f"gradient is undefined (None)")
                continue
            zeroed = [np.zeros_like(np.asarray(cotangent[k])) if k == j else cotangent[k] for k in diff_outputs]
            try:
                reference = _grads(b, [outputs[k] for k in diff_outputs], leaves, zeroed)
            except Exception:  # noqa: BLE001 -- the zero cotangent is judged by the cotangents check
                continue
            worst, where = _difference(undefined, reference, tolerance)
            details["max_difference"] = max(details["max_difference"], worst)
            if where is not None:
                problems.append(f"with output {j}'s gradient undefined (None), backward gives {names[where]} a "
                                f"gradient that differs from the one for a zero gradient by up to {worst:.3g}")
    if not materialize:
        problem = _all_undefined(b, outputs, diff_outputs, leaves, names)
        if problem:
            problems.append(problem)
    if problems:
        return Check("undefined_grads", "fail", "; ".join(problems) + f" ({how}; treat None as zero)", None,
                     dict(details, problems=problems))
    return Check("undefined_grads", "pass", f"backward treats an undefined (None) output gradient as zero ({how})",
                 None, details)


def _grads(b, outputs, leaves, cotangents) -> list:
    with np.errstate(all="ignore"):
        grads = b.grad(outputs, leaves, cotangents, retain_graph=True)
    return [None if g is None else b.to_numpy(g).astype(np.float64, copy=False) for g in grads]


def _difference(got, want, tolerance) -> tuple:
    """(largest |got - want|, index of the first input beyond tolerance or None); None is zero."""
    worst, where = 0.0, None
    for p, (g, w) in enumerate(zip(got, want)):
        if g is None and w is None:
            continue
        g = np.zeros_like(w) if g is None else g
        w = np.zeros_like(g) if w is None else w
        if g.shape != w.shape:
            worst, where = float("inf"), p if where is None else where
            continue
        with np.errstate(invalid="ignore"):
            diff = np.abs(g - w)
        scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=0.0))
        allowed = tolerance.atol + tolerance.rtol * np.abs(w) + tolerance.scale_atol * scale
        bad = ~(diff <= allowed) & ~(np.isnan(g) & np.isnan(w))
        worst = max(worst, float(np.nanmax(diff)) if diff.size else 0.0)
        if bad.any() and where is None:
            where = p
    return worst, where


def _all_undefined(b, outputs, diff_outputs, leaves, names) -> Optional[str]:
    """Every output's gradient undefined: backward must give None or zeros (torch's check_undefined_grad)."""
    try:
        grads = _undefined_everywhere(b, outputs, diff_outputs, leaves)
    except Exception as exc:  # noqa: BLE001 -- user code
        return f"backward raised {type(exc).__name__}: {_first_line(exc)} when every output's gradient is undefined"
    if grads is None:
        return None
    for p, g in enumerate(grads):
        if g is not None and np.any(g != 0):
            who = names[p] if b.name == "torch" and p < len(names) else "an input"
            return f"with every output's gradient undefined (None), backward gives {who} a non-zero gradient"
    return None


def _undefined_everywhere(b, outputs, diff_outputs, leaves):
    if b.name == "torch":
        undefined = getattr(getattr(b.torch._C, "_functions", None), "UndefinedGrad", None)
        if undefined is None:
            return None
        with b.enable_grad():
            wrapped = [undefined()(outputs[j]) for j in diff_outputs]
        zeros = [np.zeros(tuple(w.shape)) for w in wrapped]
        return _grads(b, wrapped, leaves, zeros)
    # the engine: call the Function's backward as the engine would, with None for every output
    node = outputs[diff_outputs[0]].grad_fn
    cls = getattr(node, "_forward_cls", None)
    if cls is None:
        return None
    raw = cls.backward(node, *[None] * node._n_outputs)
    raw = raw if isinstance(raw, tuple) else (raw,)
    return [b.to_numpy(g).astype(np.float64) for g in raw if b.is_tensor(g)]


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""
