"""The ``jvp`` check: a Function's forward-mode derivative against the numerical directional derivative.

torch's gradcheck has ``check_forward_ad``; here, for a Function that defines ``jvp`` (a missing
one is not a failure: forward mode is optional), random tangents u (one per differentiable input,
scaled like the numeric side's steps) go through

* the engine: forward on fresh leaves fills ``ctx``, then ``Function.jvp(ctx, *tangents)`` is
  called as torch calls it (``None`` for non-tensor arguments; in jvp ``ctx.saved_tensors`` are
  the tensors of ``ctx.save_for_forward``);
* torch: ``torch.autograd.forward_ad`` (dual tensors), and ``torch.func.jvp`` when the Function
  has ``setup_context`` (torch.func needs it),

and vᵀ(J·u) of each result, for the session's probe cotangents v, is compared with the numerical
vᵀ(J·u) along the same line (``numeric.directional``: the reference fast mode uses). See
specs/gradcheck.md.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradcli.check import backends as _backends
from gradcli.check.compare import compare_probes
from gradcli.check.report import Check
from gradcli.numeric import Projector, directional
from gradcli.numeric.vjp import step_exponents

TANGENTS = 2  # random tangent directions per input set
BASE_MODULES = ("gradcli.autograd", "torch.")


def defines(cls, name: str) -> bool:
    """``cls`` (or a user base class) overrides ``name`` (jvp, vmap, setup_context); the base
    Function's own placeholders do not count."""
    for klass in getattr(cls, "__mro__", ()):
        if name in vars(klass):
            return not getattr(klass, "__module__", "").startswith(BASE_MODULES)
    return False


def jvp_check(session) -> Optional[Check]:
    """The check for one gradcheck session, or None when the Function defines no jvp."""
    cls = session.cls
    if cls is None or not session.positional or not defines(cls, "jvp") or not session.report.cotangents:
        return None
    nf, report = session.nf, session.report
    rng = np.random.default_rng(session.seed + 11)
    projector = Projector(report.cotangents, [o.shape for o in nf.outputs])
    ways = ["Function.jvp"] if session.backend.name == "gradcli" else ["torch.autograd.forward_ad"]
    if session.backend.name == "torch":
        ways.append("torch.func.jvp" if defines(cls, "setup_context") else None)
    notes = [] if ways[-1] is not None else [
        f"torch.func.jvp not tried: {cls.__name__} has no setup_context (torch.func needs forward(*args) + "
        f"setup_context(ctx, inputs, output))"]
    ways = [w for w in ways if w is not None]
    details = {"tangents": 0, "ways": ways, "notes": notes, "probes": []}
    worst = None
    for _ in range(TANGENTS):
        directions = [np.ldexp(rng.standard_normal(x.shape, dtype=np.float32), step_exponents(x)) for x in nf.inputs]
        estimate = directional(nf, directions, projector, session.method)
        if estimate.kink is not None and np.any(estimate.kink):
            notes.append("a random tangent crossed a kink (one-sided derivatives differ): that tangent was not compared")
            continue
        details["tangents"] += 1
        for way in ways:
            try:
                tangents = _tangents(session, way, directions)
            except Exception as exc:  # noqa: BLE001 -- user code: the failure is the finding
                return Check("jvp", "fail", f"jvp raised through {way}: {type(exc).__name__}: {_first_line(exc)}",
                             None, dict(details, exception=type(exc).__name__))
            if isinstance(tangents, str):
                return Check("jvp", "fail", f"wrong jvp ({way}): {tangents}", None, details)
            dots, magnitudes = _project(projector, tangents, len(report.cotangents))
            probe = compare_probes(dots, magnitudes, estimate, session.tolerance)
            details["probes"].append({"way": way, **probe.details})
            if probe.status == "fail" and worst is None:
                c = probe.details["worst_probe"]
                worst = (f"wrong jvp: {way} gives vᵀ(J·u) = {probe.details['analytic'][c]:.10g} for a random tangent "
                         f"u, the numerical directional derivative {probe.details['numeric'][c]:.10g} (error "
                         f"{abs(probe.details['analytic'][c] - probe.details['numeric'][c]):.3g}, allowed "
                         f"{probe.details['allowed'][c]:.3g})")
    if worst is not None:
        return Check("jvp", "fail", worst, None, details)
    if not details["tangents"]:
        return Check("jvp", "skip", "jvp not compared: " + notes[-1], None, details)
    message = (f"jvp agrees with the numerical directional derivative ({details['tangents']} random tangent(s); "
               f"{', '.join(ways)})")
    return Check("jvp", "pass", message + ("; " + "; ".join(notes) if notes else ""), None, details)


def _project(projector, tangents, k):
    """vᵀt and Σ|v·t| for each cotangent v: what the numeric side's line gives."""
    dots, magnitudes = np.zeros(k), np.zeros(k)
    for o, t in enumerate(tangents):
        if o >= len(projector.vectors) or projector.vectors[o] is None or t is None:
            continue
        flat = np.asarray(t, dtype=np.float64).reshape(-1)
        for c in range(k):
            v = projector.row(o, c)
            if v.size != flat.size:
                continue
            dots[c] += float(flat @ v)
            magnitudes[c] += float(np.abs(flat * v).sum())
    return dots, magnitudes


def _tangents(session, way, directions):
    """The output tangents (float64 arrays, None for no tangent) for ``directions``; a string when
    the jvp returned something of the wrong structure."""
    if way == "Function.jvp":
        return _engine(session, directions)
    if way == "torch.autograd.forward_ad":
        return _torch_forward_ad(session, directions)
    return _torch_func(session, directions)


def _engine(session, directions):
    b, cls, args = session.backend, session.cls, session.args
    leaves = [b.fresh_leaf(a) if i in session.diff else a for i, a in enumerate(args)]
    with b.enable_grad():
        outputs = _backends.flatten_outputs(session.call(*leaves))
    ctx = next((o.grad_fn for o in outputs if isinstance(getattr(o, "grad_fn", None), cls._backward_cls)), None)
    if ctx is None:
        return "forward made no graph node to call jvp on"
    tangents = [None] * len(args)
    for p, i in enumerate(session.diff):
        tangents[i] = b.leaf(directions[p].astype(b.to_numpy(args[i]).dtype), requires_grad=False)
    for i, a in enumerate(args):
        if tangents[i] is None and b.is_tensor(a):
            tangents[i] = b.zeros_like(a)  # torch passes zeros for a tensor that carries no tangent
    forward_saved = getattr(ctx, "_saved_for_forward", None)
    kept = ctx._to_save, ctx._saved_versions
    if forward_saved is not None:  # in jvp, saved_tensors are save_for_forward's (torch)
        ctx._to_save, ctx._saved_versions = forward_saved, ()
    try:
        with b.no_grad():
            result = cls.jvp(ctx, *tangents)
    finally:
        ctx._to_save, ctx._saved_versions = kept
    return _as_arrays(b, result, outputs)


def _as_arrays(b, result, outputs):
    returned = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(returned) != len(outputs):
        return f"jvp returned {len(returned)} tangent(s) for {len(outputs)} output(s)"
    arrays = []
    for j, (t, o) in enumerate(zip(returned, outputs)):
        if t is None or not b.is_tensor(o):
            arrays.append(None)
            continue
        if not b.is_tensor(t):
            return f"jvp returned a {type(t).__name__} for output {j}, not a tensor"
        a = b.to_numpy(t).astype(np.float64)
        if a.shape != b.to_numpy(o).shape:
            return f"jvp's tangent for output {j} has shape {list(a.shape)}, the output {list(b.to_numpy(o).shape)}"
        arrays.append(a)
    return arrays


def _torch_tangent(b, session, p, i, directions):
    # np.array, not np.ascontiguousarray: that makes a 0-d direction shape (1,), which a 0-d input's tangent cannot be
    return b.torch.from_numpy(np.array(directions[p], order="C")).to(session.args[i].dtype)


def _torch_forward_ad(session, directions):
    b = session.backend
    fwad = b.torch.autograd.forward_ad
    with fwad.dual_level():
        call_args = list(session.args)
        for p, i in enumerate(session.diff):
            call_args[i] = fwad.make_dual(session.args[i].detach().clone(), _torch_tangent(b, session, p, i, directions))
        outputs = _backends.flatten_outputs(session.call(*call_args))
        tangents = []
        for o in outputs:
            t = fwad.unpack_dual(o).tangent if b.is_tensor(o) else None
            tangents.append(None if t is None else b.to_numpy(t).astype(np.float64))
    return tangents


def _torch_func(session, directions):
    b = session.backend
    positions = []

    def f(*primals):
        call_args = list(session.args)
        for p, i in enumerate(session.diff):
            call_args[i] = primals[p]
        outputs = _backends.flatten_outputs(session.call(*call_args))
        positions[:] = [j for j, o in enumerate(outputs) if b.is_tensor(o) and o.is_floating_point()]
        positions.append(len(outputs))
        return tuple(outputs[j] for j in positions[:-1])

    primals = tuple(session.args[i].detach() for i in session.diff)
    tangents_in = tuple(_torch_tangent(b, session, p, i, directions) for p, i in enumerate(session.diff))
    _, tangents_out = b.torch.func.jvp(f, primals, tangents_in)
    count = positions.pop()
    arrays = [None] * count
    for j, t in zip(positions, tangents_out):
        arrays[j] = b.to_numpy(t).astype(np.float64)
    return arrays


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""
