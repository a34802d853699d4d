"""Numerical vector-Jacobian products of a multi-input function, per element and along directions.

Cotangents v (k of them) are applied as soon as outputs come back (``Projector``), so memory
stays O(n + m): the n×m Jacobian is never built.

Per-element derivatives (vᵀJ)_j of one input are computed by the first strategy that applies:

* ``broadcast`` — every output has the broadcast shape of the input (element-wise code, a bias
  added to a batch...). Under that hypothesis output i depends only on the input element it is
  broadcast from, so ONE line x + t·s gives every element's derivative at once. The hypothesis
  is verified against an independent directional derivative along a random direction u
  (J·u predicted element-wise vs. measured); any coupling between elements rejects it.
* ``batched`` — the perturbed copies x + t·s_j·e_j are stacked along a new leading axis and
  evaluated in chunks, if the forward broadcasts over it (verified on sample rows against
  unbatched evaluations, per chunk).
* ``loop`` — one evaluation per element and step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from gradcli.numeric.estimators import Estimate
from gradcli.numeric.function import (  # noqa: F401 -- re-exported: the numeric layer's vocabulary
    NumericFunction,
    Projector,
    shifted,
    shifted_dtype,
    step_exponents,
    step_scales,
)
from gradcli.numeric.line import Line, estimate_line
from gradcli.numeric.time_budget import within_budget

# The element-wise hypothesis test of the broadcast strategy needs both of its lines this accurate
# (relative to the line's largest derivative): a coupling above ~1e-8 of it is seen, far below the
# values check's rtol; a line less accurate than that is refined by Richardson.
BROADCAST_TEST_RELATIVE = 1e-8
BATCH_BUDGET_ELEMENTS = 2**21  # elements per batched evaluation (inputs + outputs), ~16 MB in float64
STRATEGIES = ("auto", "broadcast", "batched", "loop")


@dataclass
class ElementDerivatives:
    """Numerical (vᵀJ)_j for every element j of one input and every cotangent v."""

    value: np.ndarray  # (k, *input_shape)
    error: np.ndarray  # estimated absolute error, same shape
    low: np.ndarray  # at kinks: the range of one-sided derivatives (equal to value elsewhere)
    high: np.ndarray
    kink: np.ndarray  # bool, input_shape
    used_complex: np.ndarray  # bool, input_shape: the complex step was used for this element
    method: str  # complex_step | richardson | central | mixed
    strategy: str  # broadcast | batched | loop
    evaluations: int = 0


def directional(
    nf: NumericFunction,
    directions: Sequence[Optional[np.ndarray]],
    projector: Projector,
    method: str = "auto",
    good_enough: Optional[Callable[[Estimate], np.ndarray]] = None,
) -> Estimate:
    """vᵀJw for every cotangent v, along w = (w_0, w_1, ...) over all inputs (None: held fixed).

    The step is t·w, so w should already carry the inputs' scale (see ``step_scales``).
    ``good_enough``: see ``estimate_line``.
    """
    moved = [i for i, w in enumerate(directions) if w is not None]

    def evaluate(t, rows=None):
        arrays = [x if w is None else shifted(x, t, w) for x, w in zip(nf.inputs, directions)]
        values = projector(nf(arrays))
        return values if rows is None else values[rows]

    line = Line(
        evaluate,
        projector(nf.outputs),
        projector.magnitude(nf.outputs),
        complex_ok=method in ("auto", "complex_step") and nf.accepts_complex(moved),
        phase=nf.phase,
    )
    before = nf.evaluations
    estimate = estimate_line(line, method, nf.eps, good_enough, step=nf.step)
    estimate.evaluations = nf.evaluations - before
    return estimate


def element_derivatives(
    nf: NumericFunction,
    index: int,
    projector: Projector,
    method: str = "auto",
    strategy: str = "auto",
    seed: int = 0,
    settled: Optional[Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = None,
    budget: Optional[float] = None,
) -> ElementDerivatives:
    """(vᵀJ)_j for every element j of input ``index``, by the first strategy that applies.

    ``settled(elements, value, error)`` (optional): for a slice of the flat elements (m of them) and their estimates
    so far, (m, k) values and errors in x-space, which (m, k) estimates are good enough for the
    caller (a verdict a better reference could not change): only the others are refined by
    Richardson. Without it every smooth element without a verified complex step is refined.
    ``budget`` (seconds, optional): raise ``OverBudget`` instead of starting a per-element strategy
    estimated (from the forward's measured cost) to take longer.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {STRATEGIES}")
    before = nf.evaluations
    result = None
    if strategy in ("auto", "broadcast") and _broadcastable(nf, index, projector):
        result = _broadcast_strategy(nf, index, projector, method, seed, settled)
    if result is None and strategy == "broadcast":
        raise ValueError("the broadcast strategy does not apply to this function")
    if result is None:
        batched = strategy in ("auto", "batched") and _batchable(nf, index, projector)
        if strategy == "batched" and not batched:
            raise ValueError("the forward does not broadcast over a leading batch axis")
        if budget is not None:
            within_budget(nf, index, method, _batch_rows(nf, index) if batched else None, budget)
        result = _per_element_strategy(nf, index, projector, method, batched, settled)
    result.evaluations = nf.evaluations - before
    return result


# --- broadcast strategy -------------------------------------------------------------------------


def _broadcastable(nf: NumericFunction, index: int, projector: Projector) -> bool:
    shape = nf.inputs[index].shape
    used = projector.outputs_used
    if not used:
        return False
    for o in used:
        out_shape = nf.outputs[o].shape
        try:
            if np.broadcast_shapes(shape, out_shape) != out_shape:
                return False
        except ValueError:
            return False
    return True


def _flat_outputs(outputs, used) -> np.ndarray:
    return np.concatenate([outputs[o].reshape(-1) for o in used]) if used else np.zeros(0)


def _broadcast_strategy(nf, index, projector, method, seed, settled=None) -> Optional[ElementDerivatives]:
    x = nf.inputs[index]
    scale = step_scales(x)
    used = projector.outputs_used
    complex_ok = method in ("auto", "complex_step") and nf.accepts_complex([index])
    g0 = _flat_outputs(nf.outputs, used)
    scale_per_output = _flat_outputs([np.broadcast_to(scale, nf.outputs[o].shape) for o in range(len(nf.outputs))], used)

    def line_along(direction, good_enough, subset=None):
        """The line x + t·direction; ``subset``: only these of its rows (output elements)."""
        def evaluate(t, rows=None):
            flat = _flat_outputs(nf.replaced(index, shifted(x, t, direction)), used)
            flat = flat if subset is None else flat[subset]
            return flat if rows is None else flat[rows]

        line = Line(evaluate, g0 if subset is None else g0[subset], complex_ok=complex_ok, phase=nf.phase)
        return estimate_line(line, method, nf.eps, good_enough, step=nf.step)

    def accurate(estimate):  # what the element-wise hypothesis test below needs of both lines
        line_scale = np.nanmax(np.abs(np.r_[estimate.value, 1e-300]))
        with np.errstate(invalid="ignore"):
            return 10.0 * estimate.error <= BROADCAST_TEST_RELATIVE * line_scale

    # With ``settled``, both lines first stop where they are accurate enough for the hypothesis test
    # (a function that couples elements is rejected after ~10 evaluations, not ~70); once it holds,
    # the elements whose verdict is still open are refined (Richardson) along the scale line.
    cheap = None if settled is None else accurate
    along_scale = line_along(scale, cheap)  # t-space: d_i·s_j(i) for output i fed by element j(i)
    u = np.random.default_rng([seed, index, 0xB0]).standard_normal(x.shape)
    along_random = line_along(u * scale, cheap)
    u_per_output = _flat_outputs([np.broadcast_to(u, nf.outputs[o].shape) for o in range(len(nf.outputs))], used)
    predicted = along_scale.value * u_per_output
    tolerance = 10.0 * (along_scale.error * np.abs(u_per_output) + along_random.error)
    tolerance += 1e-9 * np.nanmax(np.abs(np.r_[along_random.value, 1e-300]))
    checkable = ~along_scale.kink & ~along_random.kink & np.isfinite(predicted) & np.isfinite(along_random.value)
    with np.errstate(invalid="ignore"):
        mismatch = np.abs(predicted - along_random.value) > tolerance
    if np.any(mismatch & checkable):
        return None  # outputs couple several elements: not element-wise after all
    if settled is not None:
        open_rows = ~_settled_rows(settled, projector, nf, used, x, along_scale, scale_per_output)
        open_rows &= ~along_scale.kink & ~along_scale.used_complex
        if open_rows.any():
            along_scale = _refined_rows(along_scale, np.flatnonzero(open_rows), line_along, scale, method, nf)

    # Back to x-space per output element, then reduce v ⊙ d over the broadcast axes.
    d = along_scale.value / scale_per_output
    d_error = along_scale.error / scale_per_output
    one_sided = np.stack([along_scale.left, along_scale.right]) / scale_per_output
    one_sided = np.where(along_scale.kink, one_sided, d)
    k = projector.k
    value = np.empty((k,) + x.shape)
    error = np.empty_like(value)
    low = np.empty_like(value)
    high = np.empty_like(value)
    offsets = np.cumsum([0] + [nf.outputs[o].size for o in used])
    for c in range(k):
        v = np.concatenate([projector.row(o, c) for o in used])
        contributions = [v * d, np.abs(v) * d_error, np.minimum(v * one_sided[0], v * one_sided[1]),
                         np.maximum(v * one_sided[0], v * one_sided[1])]
        for target, flat in zip((value, error, low, high), contributions):
            target[c] = sum(
                _reduce_to(flat[offsets[p]:offsets[p + 1]].reshape(nf.outputs[o].shape), x.shape)
                for p, o in enumerate(used)
            )
    kink = np.zeros(x.shape, dtype=bool)
    used_complex = np.ones(x.shape, dtype=bool)
    for p, o in enumerate(used):
        piece = slice(offsets[p], offsets[p + 1])
        shape = nf.outputs[o].shape
        kink |= _reduce_to(along_scale.kink[piece].reshape(shape), x.shape, np.logical_or)
        used_complex &= _reduce_to(along_scale.used_complex[piece].reshape(shape), x.shape, np.logical_and)
    return ElementDerivatives(value, error, low, high, kink, used_complex, along_scale.method, "broadcast")


def _settled_rows(settled, projector, nf, used, x, estimate, scale_per_output) -> np.ndarray:
    """Per output element (the line's rows): whether the input element it is broadcast from has a
    settled verdict (``settled``) under this estimate."""
    value, error = _reduced(projector, nf, used, x.shape, estimate.value / scale_per_output,
                            estimate.error / scale_per_output)
    flat = lambda a: np.moveaxis(a, 0, -1).reshape(x.size, projector.k)  # noqa: E731
    good = np.asarray(settled(slice(None), flat(value), flat(error)), dtype=bool).all(axis=1).reshape(x.shape)
    return _flat_outputs([np.broadcast_to(good, nf.outputs[o].shape) for o in range(len(nf.outputs))], used)


def _refined_rows(estimate: Estimate, rows: np.ndarray, line_along, scale, method, nf) -> Estimate:
    """``estimate`` with the line's ``rows`` estimated again by the whole pipeline (Richardson included)."""
    refined = line_along(scale, None, rows)
    names = ("value", "error", "left", "right", "left_error", "right_error", "kink", "used_complex")
    merged = {}
    for name in names:
        full = np.array(getattr(estimate, name), copy=True)
        full[rows] = getattr(refined, name)
        merged[name] = full
    label = refined.method if rows.size == np.size(estimate.value) or refined.method == estimate.method else "mixed"
    return Estimate(method=label, evaluations=estimate.evaluations + refined.evaluations, **merged)


def _reduced(projector, nf, used, shape, d, d_error) -> tuple:
    """(value, error), each (k, *shape): Σ v·d and Σ |v|·d_error over the outputs each element feeds."""
    k = projector.k
    value, error = np.empty((k,) + shape), np.empty((k,) + shape)
    offsets = np.cumsum([0] + [nf.outputs[o].size for o in used])
    for c in range(k):
        v = np.concatenate([projector.row(o, c) for o in used])
        for target, flat in ((value, v * d), (error, np.abs(v) * d_error)):
            target[c] = sum(_reduce_to(flat[offsets[p]:offsets[p + 1]].reshape(nf.outputs[o].shape), shape)
                            for p, o in enumerate(used))
    return value, error


def _reduce_to(array: np.ndarray, shape: tuple, ufunc=np.add) -> np.ndarray:
    """Reduce a broadcast result back to ``shape`` (numpy's broadcasting, in reverse)."""
    extra = array.ndim - len(shape)
    if extra:
        array = ufunc.reduce(array, axis=tuple(range(extra)))
    axes = tuple(a for a, n in enumerate(shape) if n == 1 and array.shape[a] != 1)
    if axes:
        array = ufunc.reduce(array, axis=axes, keepdims=True)
    return array.reshape(shape)


# --- batched / loop strategy --------------------------------------------------------------------


def _batch_rows(nf, index) -> int:
    width = nf.inputs[index].size + sum(out.size for out in nf.outputs)
    return int(max(1, min(nf.inputs[index].size, BATCH_BUDGET_ELEMENTS // max(width, 1))))


def _perturbed_stack(x, flat_indices, steps):
    stack = np.empty((len(flat_indices),) + x.shape, dtype=shifted_dtype(x, steps))
    stack[...] = x
    flat = stack.reshape(len(flat_indices), -1)
    flat[np.arange(len(flat_indices)), flat_indices] += steps
    return stack


def _rows_match(nf, index, projector, flat_indices, steps, batched_values) -> bool:
    """Compare sample rows of a batched evaluation with unbatched ones (the batching is verified)."""
    x = nf.inputs[index]
    for r in sorted({0, len(flat_indices) // 2, len(flat_indices) - 1}):
        single = x.copy()
        single.reshape(-1)[flat_indices[r]] += steps[r]
        reference = projector(nf.replaced(index, single))
        tolerance = 1e-12 * (projector.magnitude(nf.outputs) + np.abs(reference)) + 1e-300
        if not np.all(np.abs(batched_values[r] - reference) <= tolerance):
            return False
    return True


def _batchable(nf, index, projector) -> bool:
    if index in nf._batchable:
        return nf._batchable[index]
    x = nf.inputs[index]
    if x.size == 0:  # nothing to perturb
        nf._batchable[index] = False
        return False
    rows = np.unique(np.array([0, x.size // 2, x.size - 1]))
    steps = 2.0**-10 * step_scales(x).reshape(-1)[rows]
    ok = False
    try:
        outputs = nf.replaced(index, _perturbed_stack(x, rows, steps))
        if all(out.shape == (len(rows),) + ref.shape for out, ref in zip(outputs, nf.outputs)):
            ok = _rows_match(nf, index, projector, rows, steps, projector(outputs, batch=len(rows)))
    except Exception:
        ok = False
    nf._batchable[index] = ok
    return ok


def _per_element_strategy(nf, index, projector, method, batched, settled=None) -> ElementDerivatives:
    x = nf.inputs[index]
    n, k = x.size, projector.k
    scale = step_scales(x).reshape(-1)
    complex_ok = method in ("auto", "complex_step") and nf.accepts_complex([index])
    g0_row, magnitude_row = projector(nf.outputs), projector.magnitude(nf.outputs)
    value, error, low, high = (np.empty((n, k)) for _ in range(4))
    kink, used_complex = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    labels = set()
    chunk = _batch_rows(nf, index) if batched else n
    state = {"batched": batched}
    for start in range(0, n, chunk):
        block = np.arange(start, min(n, start + chunk))
        # The first chunk was verified by the probe; later chunks verify their first evaluation.
        state["checked"] = start == 0

        def evaluate(t, rows=None, block=block, state=state):
            selected = block if rows is None else block[rows]
            steps = t * scale[selected]
            if state["batched"]:
                values = projector(nf.replaced(index, _perturbed_stack(x, selected, steps)), batch=len(selected))
                if state["checked"] or _rows_match(nf, index, projector, selected, steps, values):
                    state["checked"] = True
                    return values
                state["batched"] = nf._batchable[index] = False  # this chunk broke it: loop from now on
            out = np.empty((len(selected), k), dtype=np.result_type(t, float))
            for r, (j, step) in enumerate(zip(selected, steps)):
                single = x.astype(shifted_dtype(x, t), order="C", copy=True)  # reshape(-1) below must be a view
                single.reshape(-1)[j] += step
                out[r] = projector(nf.replaced(index, single))
            return out

        rows = len(block)
        s = scale[block][:, None]
        line = Line(evaluate, np.tile(g0_row, (rows, 1)), np.tile(magnitude_row, (rows, 1)), complex_ok, nf.phase)
        good_enough = None if settled is None else (
            lambda so_far, elements=slice(block[0], block[-1] + 1), s=s:
            settled(elements, so_far.value / s, so_far.error / s))
        estimate = estimate_line(line, method, nf.eps, good_enough, step=nf.step)
        value[block], error[block] = estimate.value / s, estimate.error / s
        sided = np.stack([estimate.left, estimate.right]) / s
        low[block] = np.where(estimate.kink, sided.min(axis=0), value[block])
        high[block] = np.where(estimate.kink, sided.max(axis=0), value[block])
        kink[block] = estimate.kink.any(axis=1)
        used_complex[block] = estimate.used_complex.all(axis=1)
        labels.add(estimate.method)
    method_label = labels.pop() if len(labels) == 1 else "mixed"
    batched = state["batched"]

    def shaped(a):
        return np.moveaxis(a, 1, 0).reshape((k,) + x.shape)

    return ElementDerivatives(
        shaped(value), shaped(error), shaped(low), shaped(high), kink.reshape(x.shape),
        used_complex.reshape(x.shape), method_label, "batched" if batched else "loop",
    )
