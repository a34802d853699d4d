"""The ``vmap`` check (torch): a Function under ``torch.func.vmap`` equals a loop over the samples.

torch.func can run a custom Function only when it has ``setup_context`` (forward without ctx);
under ``vmap`` it also needs ``generate_vmap_rule = True`` or a ``vmap`` staticmethod. A wrong
``vmap`` rule (a reduction over the batch dimension, wrong ``out_dims``) silently gives other
values or drops gradients (pytorch#102720). For a Function that declares vmap support, a batch of
B samples (the input set and B − 1 nearby points; non-differentiable arguments unbatched) checks

* ``vmap(Function.apply)`` against a per-sample loop of ``Function.apply``;
* ``vmap(grad(vᵀf))`` (torch.func.grad, a fixed random cotangent v) against per-sample
  ``torch.autograd.grad`` — the backward under vmap;
* ``jacrev`` of the first sample against the Jacobian rows from ``torch.autograd.grad`` (outputs
  up to JACREV_MAX_ELEMENTS elements: one backward pass per row).

A Function without ``setup_context`` is reported as not usable with torch.func (a ``skip`` note,
not a failure), and so is one with setup_context but no vmap rule. See specs/gradcheck.md.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradcli.check import backends as _backends
from gradcli.check.forward_ad import defines
from gradcli.check.report import Check

BATCH = 3
JACREV_MAX_ELEMENTS = 16
NEARBY = 1e-3  # relative distance of the other samples from the input set (stays in forward's domain)


def vmap_check(session) -> Optional[Check]:
    cls, b = session.cls, session.backend
    if b.name != "torch" or cls is None or not session.positional or not session.report.cotangents:
        return None
    name = cls.__name__
    generated = getattr(cls, "generate_vmap_rule", False) is True
    rule = defines(cls, "vmap")
    if not defines(cls, "setup_context"):
        return Check("vmap", "skip", f"not usable with torch.func (vmap, grad, jacrev, jvp): {name} has no "
                     f"setup_context (torch.func needs forward(*args) plus setup_context(ctx, inputs, output))",
                     None, {"torch_func": False, "vmap_rule": None})
    if not (generated or rule):
        return Check("vmap", "skip", f"torch.func.vmap is not supported: {name} neither sets generate_vmap_rule = "
                     f"True nor defines a vmap staticmethod (vmap over it raises)", None,
                     {"torch_func": True, "vmap_rule": None})
    how = "generate_vmap_rule" if generated else "vmap staticmethod"
    details = {"torch_func": True, "vmap_rule": how, "batch": BATCH, "compared": []}
    torch = b.torch
    rng = np.random.default_rng(session.seed + 23)
    batched = {}
    for i in session.diff:
        x = session.args[i].detach()
        scale = float(x.abs().max()) if x.numel() else 1.0
        samples = [x] + [x + torch.from_numpy(rng.standard_normal(tuple(x.shape))).to(x.dtype) * (NEARBY * (scale or 1))
                         for _ in range(BATCH - 1)]
        batched[i] = torch.stack(samples)

    def call_diff(*diff_values):
        call_args = list(session.args)
        for i, v in zip(session.diff, diff_values):
            call_args[i] = v
        return tuple(o for o in _backends.flatten_outputs(session.call(*call_args)))

    diff_batched = tuple(batched[i] for i in session.diff)
    # 1. the batched forward against a loop over the samples
    try:
        with torch.no_grad():
            got = torch.func.vmap(call_diff)(*diff_batched)
            want = [call_diff(*[batched[i][k] for i in session.diff]) for k in range(BATCH)]
    except Exception as exc:  # noqa: BLE001 -- a declared vmap rule that raises is the finding
        return Check("vmap", "fail", f"torch.func.vmap({name}.apply) raised ({how}): {type(exc).__name__}: "
                     f"{_first_line(exc)}", None, details)
    for j, out in enumerate(got):
        if not b.is_tensor(out) or not out.is_floating_point():
            continue
        expected = torch.stack([w[j] for w in want])
        worst = _beyond(session, out, expected)
        details["compared"].append(f"output {j}")
        if worst:
            return Check("vmap", "fail", f"wrong vmap rule ({how}): vmap({name}.apply) differs from a loop over the "
                         f"{BATCH} samples by up to {worst:.3g} in output {j} (a reduction over the batch "
                         f"dimension, or wrong out_dims?)", None, dict(details, output=j, max_difference=worst))
    # 2. vmap(grad) against per-sample autograd.grad
    cotangent = session.report.cotangents[-1]
    weights = [None if c is None else torch.from_numpy(np.asarray(c, dtype=np.float64)) for c in cotangent]

    def loss(*diff_values):
        total = 0
        for j, o in enumerate(call_diff(*diff_values)):
            if j in session.diff_outputs and weights[j] is not None:
                total = total + (o * weights[j].to(o.dtype)).sum()
        return total

    argnums = tuple(range(len(session.diff)))
    try:
        got = torch.func.vmap(torch.func.grad(loss, argnums=argnums))(*diff_batched)
    except Exception as exc:  # noqa: BLE001
        return Check("vmap", "fail", f"vmap(grad) over {name} raised ({how}): {type(exc).__name__}: "
                     f"{_first_line(exc)}", None, details)
    for p, i in enumerate(session.diff):
        expected = []
        for k in range(BATCH):
            leaves = [batched[q][k].detach().clone().requires_grad_(True) for q in session.diff]
            with torch.enable_grad():
                g, = torch.autograd.grad(loss(*leaves), [leaves[p]], allow_unused=True)
            expected.append(torch.zeros_like(leaves[p]) if g is None else g)
        worst = _beyond(session, got[p], torch.stack(expected))
        details["compared"].append(f"vmap(grad) {session.names[i]}")
        if worst:
            return Check("vmap", "fail", f"wrong vmap rule ({how}): vmap(grad) gives {session.names[i]} gradients "
                         f"that differ from per-sample autograd.grad by up to {worst:.3g} (the rule drops or mixes "
                         f"gradients across the batch: pytorch#102720)", None,
                         dict(details, input=session.names[i], max_difference=worst))
    # 3. jacrev at the first sample against Jacobian rows from backward (small outputs only)
    problem = _jacrev(session, call_diff, batched, details, torch)
    if problem:
        return Check("vmap", "fail", f"wrong vmap rule ({how}): {problem}", None, details)
    return Check("vmap", "pass", f"torch.func.vmap ({how}) agrees with a loop over {BATCH} samples: "
                 f"{', '.join(details['compared'])}", None, details)


def _jacrev(session, call_diff, batched, details, torch) -> Optional[str]:
    outputs = list(session.diff_outputs)
    first = [batched[i][0].detach() for i in session.diff]
    with torch.no_grad():
        values = call_diff(*first)
    if not outputs or sum(values[j].numel() for j in outputs) > JACREV_MAX_ELEMENTS:
        return None
    try:
        jac = torch.func.jacrev(lambda *d: tuple(call_diff(*d)[j] for j in outputs),
                                argnums=tuple(range(len(first))))(*first)
    except Exception as exc:  # noqa: BLE001
        return f"jacrev raised: {type(exc).__name__}: {_first_line(exc)}"
    leaves = [x.clone().requires_grad_(True) for x in first]
    with torch.enable_grad():
        outs = call_diff(*leaves)
    for r, j in enumerate(outputs):
        flat = outs[j].reshape(-1)
        for e in range(flat.numel()):
            rows = torch.autograd.grad(flat[e], leaves, retain_graph=True, allow_unused=True)
            for p, row in enumerate(rows):
                want = torch.zeros_like(leaves[p]) if row is None else row
                got = jac[r][p].reshape((flat.numel(),) + tuple(leaves[p].shape))[e]
                worst = _beyond(session, got, want)
                if worst:
                    return (f"jacrev's row {e} of output {j} for {session.names[session.diff[p]]} differs from "
                            f"autograd.grad by up to {worst:.3g}")
    details["compared"].append("jacrev")
    return None


def _beyond(session, got, want) -> float:
    """Largest |got − want| beyond the value check's tolerance, 0.0 when within it."""
    g = got.detach().double().numpy()
    w = want.detach().double().numpy()
    if g.shape != w.shape:
        return float("inf")
    tol = session.tolerance
    scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=0.0))
    with np.errstate(invalid="ignore"):
        diff = np.abs(g - w)
    bad = ~(diff <= tol.atol + tol.rtol * np.abs(w) + tol.scale_atol * scale) & ~(np.isnan(g) & np.isnan(w))
    return float(np.nanmax(np.where(bad, diff, 0.0))) or float("inf") if bad.any() else 0.0


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""
