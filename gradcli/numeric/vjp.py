"""Numerical vector-Jacobian products of a multi-input function, per element and along directions.

The function is a plain callable ``func(list of arrays) -> list of arrays`` (the backend layer
wraps engine or torch code into one). Cotangents v (k of them) are applied as soon as outputs
come back, so memory stays O(n + m): the n×m Jacobian is never built.

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

import warnings
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from gradcli.numeric.estimators import COMPLEX_STEP, EPS64, Estimate
from gradcli.numeric.line import Line, estimate_line

BATCH_BUDGET_ELEMENTS = 2**21  # elements per batched evaluation (inputs + outputs), ~16 MB in float64
COMPLEX_MAX_ELEMENTS = 2**18  # perturbed input elements up to which the complex step is tried
STRATEGIES = ("auto", "broadcast", "batched", "loop")


def step_exponents(x: np.ndarray) -> np.ndarray:
    """e with 2^e the smallest power of two >= max(1, |x|), per element (see ``step_scales``)."""
    magnitude = np.abs(np.real(np.asarray(x)))
    magnitude = np.where(np.isfinite(magnitude), np.maximum(magnitude, 1.0), 1.0)
    mantissa, exponent = np.frexp(magnitude)  # magnitude = mantissa·2^exponent, mantissa in [0.5, 1)
    return np.where(mantissa == 0.5, exponent - 1, exponent)


def step_scales(x: np.ndarray) -> np.ndarray:
    """Per-element step scale max(1, |x|), rounded up to a power of two so x ± t·s is exact."""
    return np.ldexp(1.0, step_exponents(x))


def shifted_dtype(x: np.ndarray, t) -> np.dtype:
    """x's own precision, made complex for a complex step: a float32-only forward stays float32."""
    if np.iscomplexobj(t):
        return np.result_type(x.dtype, np.complex64)
    return x.dtype


def shifted(x: np.ndarray, t, direction: np.ndarray) -> np.ndarray:
    """x + t·direction in x's precision (the direction may be float64 or float32)."""
    return np.add(x, t * direction, dtype=shifted_dtype(x, t), casting="unsafe")


class NumericFunction:
    """A multi-input function of arrays with its value at the base point and evaluation counting."""

    def __init__(self, func: Callable, inputs: Sequence[np.ndarray], eps: float = EPS64,
                 outputs: Optional[Sequence[np.ndarray]] = None):
        """``outputs``: f(inputs) when the caller already has it (saves an evaluation)."""
        self.func = func
        self.inputs = [np.asarray(x) for x in inputs]
        self.eps = eps
        self.evaluations = 0
        self.outputs = [np.asarray(o) for o in outputs] if outputs is not None else self(self.inputs)
        self.output_shapes = [o.shape for o in self.outputs]
        self._complex_ok: dict = {}
        self._batchable: dict = {}

    def input_elements(self, indices: Sequence[int]) -> int:
        return int(sum(self.inputs[i].size for i in indices))

    def __call__(self, arrays: Sequence[np.ndarray]) -> list:
        self.evaluations += 1
        # Perturbed, complex or batched inputs make forwards warn (casts dropping an imaginary part,
        # overflow at a large step): expected here, and not the user's business.
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if not hasattr(self, "output_shapes"):  # the base point: its errors are the caller's to see
                return [np.asarray(out) for out in self.func(list(arrays))]
            try:
                return [np.asarray(out) for out in self.func(list(arrays))]
            except Exception:  # noqa: BLE001 -- e.g. a domain check: that step is simply unusable
                return self._missing(arrays)

    def _missing(self, arrays) -> list:
        """NaN outputs shaped like a successful evaluation of ``arrays`` (batched or not)."""
        batch = next((a.shape[0] for a, x in zip(arrays, self.inputs) if np.ndim(a) == x.ndim + 1), None)
        complex_input = any(np.iscomplexobj(a) for a in arrays)
        missing = []
        for out_shape in self.output_shapes:
            shape = out_shape if batch is None else (batch,) + out_shape
            missing.append(np.full(shape, np.nan + 0j if complex_input else np.nan))
        return missing

    def replaced(self, index: int, array: np.ndarray) -> list:
        arrays = list(self.inputs)
        arrays[index] = array
        return self(arrays)

    def accepts_complex(self, indices: Sequence[int]) -> bool:
        """Whether the forward runs on complex copies of these inputs and keeps the real part.

        This only says the complex step *can* be tried; whether it is right is verified per element.
        Above COMPLEX_MAX_ELEMENTS the complex step is not tried at all: complex evaluation doubles
        every temporary, and Richardson (more evaluations, no extra memory) is used instead.
        """
        key = tuple(indices)
        if self.input_elements(key) > COMPLEX_MAX_ELEMENTS:
            return False
        if key not in self._complex_ok:
            self._complex_ok[key] = self._probe_complex(key)
        return self._complex_ok[key]

    def _probe_complex(self, indices) -> bool:
        rng = np.random.default_rng(12345)
        arrays = list(self.inputs)
        for i in indices:
            x = self.inputs[i]
            arrays[i] = x + 1j * COMPLEX_STEP * step_scales(x) * rng.standard_normal(x.shape)
        try:
            outputs = self(arrays)
        except Exception:
            return False
        if len(outputs) != len(self.outputs):
            return False
        for out, ref in zip(outputs, self.outputs):
            if out.shape != ref.shape:
                return False
            with np.errstate(invalid="ignore"):
                same = np.abs(np.real(out) - ref) <= 1e-12 * (np.abs(ref) + 1.0)
            if not np.all(same | ~np.isfinite(ref)):
                return False
        return True


class Projector:
    """Applies k cotangents to a function's outputs: outputs -> (..., k) values vᵀf.

    Keeps references to the cotangent arrays (no copies): they may be as large as the outputs.
    """

    def __init__(self, cotangents: Sequence[Sequence[Optional[np.ndarray]]], output_shapes: Sequence[tuple]):
        self.k = len(cotangents)
        self.output_shapes = [tuple(s) for s in output_shapes]
        # Per output: None when no cotangent touches it, else k flat vectors (None = zero).
        self.vectors = []
        for o, shape in enumerate(self.output_shapes):
            rows = [c[o] for c in cotangents]
            if all(r is None for r in rows):
                self.vectors.append(None)
            else:
                self.vectors.append([None if r is None else np.asarray(r).reshape(-1) for r in rows])

    @property
    def outputs_used(self) -> list:
        return [o for o, vectors in enumerate(self.vectors) if vectors is not None]

    def row(self, o: int, c: int) -> np.ndarray:
        """Cotangent c for output o, flat float64 (zeros when that cotangent skips the output)."""
        vector = self.vectors[o][c]
        size = int(np.prod(self.output_shapes[o], dtype=np.int64))
        return np.zeros(size) if vector is None else vector.astype(np.float64, copy=False)

    def __call__(self, outputs: Sequence[np.ndarray], batch: Optional[int] = None) -> np.ndarray:
        shape = (self.k,) if batch is None else (batch, self.k)
        total = None
        for out, vectors in zip(outputs, self.vectors):
            if vectors is None:
                continue
            flat = out.reshape(-1) if batch is None else out.reshape(batch, -1)
            for c, v in enumerate(vectors):
                if v is None:
                    continue
                if total is None:
                    total = np.zeros(shape, dtype=np.result_type(flat, np.float64))
                # einsum casts a float32 cotangent in buffered chunks; `@` would copy it whole.
                total[..., c] += flat @ v if v.dtype == flat.dtype else np.einsum("...i,i->...", flat, v)
        return np.zeros(shape) if total is None else total

    def magnitude(self, outputs: Sequence[np.ndarray]) -> np.ndarray:
        """sqrt(Σ (v_i f_i)²): the typical scale of rounding in vᵀf, which cancellation in the sum
        would hide. Rounding errors of different outputs are independent, so they add in quadrature."""
        total = np.zeros(self.k)
        for out, vectors in zip(outputs, self.vectors):
            if vectors is None:
                continue
            square = np.square(np.real(out)).reshape(-1)
            for c, v in enumerate(vectors):
                if v is not None:
                    total[c] += np.einsum("i,i,i->", square, v, v)
        return np.sqrt(total)


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
    )
    before = nf.evaluations
    estimate = estimate_line(line, method, nf.eps, good_enough)
    estimate.evaluations = nf.evaluations - before
    return estimate


def element_derivatives(
    nf: NumericFunction,
    index: int,
    projector: Projector,
    method: str = "auto",
    strategy: str = "auto",
    seed: int = 0,
) -> ElementDerivatives:
    """(vᵀJ)_j for every element j of input ``index``, by the first strategy that applies."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {STRATEGIES}")
    before = nf.evaluations
    result = None
    if strategy in ("auto", "broadcast") and _broadcastable(nf, index, projector):
        result = _broadcast_strategy(nf, index, projector, method, seed)
    if result is None and strategy == "broadcast":
        raise ValueError("the broadcast strategy does not apply to this function")
    if result is None:
        batched = strategy in ("auto", "batched") and _batchable(nf, index, projector)
        if strategy == "batched" and not batched:
            raise ValueError("the forward does not broadcast over a leading batch axis")
        result = _per_element_strategy(nf, index, projector, method, batched)
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


def _broadcast_strategy(nf, index, projector, method, seed) -> Optional[ElementDerivatives]:
    x = nf.inputs[index]
    scale = step_scales(x)
    used = projector.outputs_used
    complex_ok = method in ("auto", "complex_step") and nf.accepts_complex([index])
    g0 = _flat_outputs(nf.outputs, used)

    def line_along(direction):
        def evaluate(t, rows=None):
            flat = _flat_outputs(nf.replaced(index, shifted(x, t, direction)), used)
            return flat if rows is None else flat[rows]

        return estimate_line(Line(evaluate, g0, complex_ok=complex_ok), method, nf.eps)

    along_scale = line_along(scale)  # t-space: d_i·s_j(i) for output i fed by element j(i)
    u = np.random.default_rng([seed, index, 0xB0]).standard_normal(x.shape)
    along_random = line_along(u * scale)
    u_per_output = _flat_outputs([np.broadcast_to(u, nf.outputs[o].shape) for o in range(len(nf.outputs))], used)
    predicted = along_scale.value * u_per_output
    tolerance = 10.0 * (along_scale.error * np.abs(u_per_output) + along_random.error)
    tolerance += 1e-9 * np.nanmax(np.abs(np.r_[along_random.value, 1e-300]))
    checkable = ~along_scale.kink & ~along_random.kink & np.isfinite(predicted) & np.isfinite(along_random.value)
    with np.errstate(invalid="ignore"):
        mismatch = np.abs(predicted - along_random.value) > tolerance
    if np.any(mismatch & checkable):
        return None  # outputs couple several elements: not element-wise after all

    # Back to x-space per output element, then reduce v ⊙ d over the broadcast axes.
    scale_per_output = _flat_outputs([np.broadcast_to(scale, nf.outputs[o].shape) for o in range(len(nf.outputs))], used)
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


def _per_element_strategy(nf, index, projector, method, batched) -> ElementDerivatives:
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
                single = x.astype(shifted_dtype(x, t), copy=True)
                single.reshape(-1)[j] += step
                out[r] = projector(nf.replaced(index, single))
            return out

        rows = len(block)
        line = Line(evaluate, np.tile(g0_row, (rows, 1)), np.tile(magnitude_row, (rows, 1)), complex_ok)
        estimate = estimate_line(line, method, nf.eps)
        s = scale[block][:, None]
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
