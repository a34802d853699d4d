"""A multi-input function of numpy arrays, as the numeric side sees it, and cotangent projection.

``NumericFunction`` wraps ``func(list of arrays) -> list of arrays`` (the backend layer turns
engine or torch code into one): it counts evaluations, keeps f at the base point, turns an
exception at a perturbed point into NaN outputs (that step is unusable, nothing more), and tells
whether the complex step may be tried. ``Projector`` applies k cotangents to outputs as soon as
they come back, so nothing of size n×m is ever built.
"""
from __future__ import annotations

import time
import warnings
from typing import Callable, Optional, Sequence

import numpy as np

from gradcli.numeric.estimators import COMPLEX_STEP, EPS64

# a call's cost for time budgets: its CPU seconds, but at least this share of its wall seconds (the inverse of
# gradcli.check.check_clock.WALL_FACTOR: --timeout counts a check's CPU time, capped at 4x in wall time)
WALL_SHARE = 0.25
COMPLEX_MAX_ELEMENTS = 2**18  # perturbed input elements up to which the complex step is tried


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
    """x + t·direction in x's precision (the direction may be float64 or float32).

    Always an ndarray: for a 0-d x numpy's ufuncs return a scalar, which some consumers (torch's
    ``from_numpy`` via ``ascontiguousarray``) would turn into shape (1,)."""
    return np.asarray(np.add(x, t * direction, dtype=shifted_dtype(x, t), casting="unsafe"))


class NumericFunction:
    """A multi-input function of arrays with its value at the base point and evaluation counting."""

    def __init__(self, func: Callable, inputs: Sequence[np.ndarray], eps: float = EPS64,
                 outputs: Optional[Sequence[np.ndarray]] = None, step: Optional[float] = None):
        """``outputs``: f(inputs) when the caller already has it (saves an evaluation).
        ``step``: a second central-difference step (units of each element's scale) tried besides
        the default eps^(1/3), the better per element kept; see ``estimators.user_step``."""
        self.func = func
        # C order: per-element steps write through ``reshape(-1)``, which on a Fortran-ordered or
        # strided array (a torch tensor that is a transposed view, e.g. an LU factor) is a copy.
        self.inputs = [np.asarray(x, order="C") for x in inputs]
        self.eps = eps
        self.step = step
        self.evaluations = 0  # calls of func (a batched call counts once)
        self.points = 0  # points evaluated: a batched call of r perturbed copies counts r
        self.seconds = 0.0  # spent in func: its cost per point, for time budgets
        self.by_phase: dict = {}  # calls per estimator (``phase``): central, complex_step, richardson, ...
        self.current_phase = "base"  # f at the base point, when the caller did not bring it
        self.outputs = [np.asarray(o) for o in outputs] if outputs is not None else self(self.inputs)
        self.output_shapes = [o.shape for o in self.outputs]
        self.current_phase = "other"  # probes (complex, batching) until an estimator says otherwise
        self._complex_ok: dict = {}
        self._batchable: dict = {}

    def input_elements(self, indices: Sequence[int]) -> int:
        return int(sum(self.inputs[i].size for i in indices))

    def phase(self, name: str):
        """Attribute the next calls to estimator ``name`` (``numeric.line.Line``'s phase hook)."""
        self.current_phase = name

    def counts(self) -> dict:
        """Calls by estimator and in all, and points evaluated (for a report's timing)."""
        return {"calls": self.evaluations, "points": self.points, **dict(sorted(self.by_phase.items()))}

    def __call__(self, arrays: Sequence[np.ndarray]) -> list:
        self.evaluations += 1
        self.by_phase[self.current_phase] = self.by_phase.get(self.current_phase, 0) + 1
        inputs = getattr(self, "inputs", None)
        batch = None if inputs is None else next(
            (a.shape[0] for a, x in zip(arrays, inputs) if np.ndim(a) == x.ndim + 1), None)
        self.points += 1 if batch is None else int(batch)
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            return self._call(arrays)
        finally:  # CPU time, at least WALL_SHARE of wall time: a cost that does not grow with the machine's load
            self.seconds += max(time.process_time() - cpu, WALL_SHARE * (time.perf_counter() - wall))

    def _call(self, arrays: Sequence[np.ndarray]) -> list:
        # Perturbed, complex or batched inputs make forwards warn (casts dropping an imaginary part,
        # overflow at a large step): expected here, and not the user's business.
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if not hasattr(self, "output_shapes"):  # the base point: its errors are the caller's to see
                return [np.asarray(out) for out in self.func(list(arrays))]
            try:
                outputs = [np.asarray(out) for out in self.func(list(arrays))]
            except Exception:  # noqa: BLE001 -- e.g. a domain check: that step is simply unusable
                return self._missing(arrays)
            # A nudge that changes how many outputs there are, or their shapes (a branch on the values),
            # is a step off the function being differentiated: unusable, like one that raises.
            return outputs if self._shaped_like_base(arrays, outputs) else self._missing(arrays)

    def _shaped_like_base(self, arrays, outputs) -> bool:
        if len(outputs) != len(self.output_shapes):
            return False
        batch = next((a.shape[0] for a, x in zip(arrays, self.inputs) if np.ndim(a) == x.ndim + 1), None)
        return all(out.shape == (shape if batch is None else (batch,) + shape)
                   for out, shape in zip(outputs, self.output_shapes))

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
