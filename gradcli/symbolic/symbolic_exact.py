"""The exact reference: a Function's backward against the true derivative at the check point.

The true Jᵀv comes either from tracing the forward on symbols (engine Functions) or from a formula
for the forward (``expr="sqrt(x)+1/x"`` or a ``formula`` class attribute; any backend, torch too),
read by the diff command's safe parser. It is evaluated at the exact binary value of every input in
mpmath at 40 digits, so unlike a finite difference it has no truncation or rounding error of its
own: what differs from it is the backward's error alone (the "exact err" column).

A formula is elementwise over the broadcast of the inputs it names; when the Function returns one
number for non-scalar inputs, the formula is summed over the elements (seed 002: ``sqrt(x^2-1)``
for ``sum(sqrt(x*x-1))``). Elements at a kink (relu at 0) have no derivative and are not compared.
"""
import warnings
from dataclasses import dataclass, field

import mpmath
import numpy as np
import sympy

from gradcli.check.report import Check
from gradcli.symbolic.jacobian_values import exact_vjp_values
from gradcli.symbolic.symbolic_eval import DPS, MpEvaluator, as_mp, exact_float
from gradcli.symbolic.symbolic_ops import almost_everywhere
from gradcli.symbolic.trace import (NotTraceable, callable_of, differentiable_positions, function_class,
                                    parameter_names, trace_function)

# Pass criterion per element: |analytic - exact| <= rtol * |exact| + atol * max|exact over the input|.
# The atol term is scale-aware: elements far below the input's scale may carry the rounding of the
# large ones (1 - tanh(x)^2 near saturation). A 1e-3 relative error always fails.
EXACT_TOLERANCES = {"float64": {"rtol": 1e-7, "atol": 1e-10},
                    "float32": {"rtol": 1e-4, "atol": 1e-6},
                    "float16": {"rtol": 1e-2, "atol": 1e-3}}
MAX_TRACED_ELEMENTS = 1024     # tracing costs grow with the element count; a formula scales further
MAX_FORMULA_ELEMENTS = 200_000


class ExactUnavailable(Exception):
    """No exact reference for this Function at these inputs (the message says why)."""


@dataclass
class ExactReference:
    source: str                       # "trace" | "formula"
    description: str                  # the formula(s), or "traced forward"
    values: dict                      # input index -> [float64 array of exact Jᵀv, one per cotangent]
    kinks: dict                       # input index -> bool array: elements at a kink (not compared)
    notes: list = field(default_factory=list)
    # input index -> [float array of Σₖ |vₖ ∂yₖ/∂xᵢ| per cotangent set]: where terms cancel, a float
    # backward cannot be closer to the exact sum than a few ulps of their size
    magnitudes: dict = field(default_factory=dict)


# ---- running the Function numerically -----------------------------------------------------------
def _is_torch(value):
    return type(value).__module__.split(".")[0] == "torch"


def _array(value):
    if _is_torch(value):
        return value.detach().cpu().numpy()
    return np.asarray(value.data if hasattr(value, "data") and hasattr(value, "grad_fn") else value)


def _positions(inputs):
    if any(_is_torch(a) for a in inputs):
        floats = [i for i, a in enumerate(inputs) if _is_torch(a) and a.is_floating_point()]
        flagged = [i for i in floats if _requires_grad(inputs[i])]
        return flagged or floats
    return differentiable_positions(inputs)


def _requires_grad(t):
    return bool(getattr(t, "requires_grad", False))


def _outputs(result):
    items = result if isinstance(result, (tuple, list)) else (result,)
    return [t for t in items if getattr(t, "requires_grad", False) and getattr(t, "grad_fn", None) is not None]


def run_backward(fn, inputs, cotangent_sets, seed=0):
    """The backward's Jᵀv for each cotangent set: ({input index: [array per set]}, cotangent sets used).

    ``cotangent_sets``: a list of tuples (one array per differentiable output), or None for one
    seeded standard-normal set."""
    inputs = list(inputs)
    positions = _positions(inputs)
    if any(_is_torch(a) for a in inputs):
        import torch
        leaves = [a.detach().clone().requires_grad_(True) if i in positions else a for i, a in enumerate(inputs)]
        grad, make = torch.autograd.grad, (lambda v, like: torch.as_tensor(v, dtype=like.dtype))
    else:
        from gradcli.autograd import grad
        from gradcli.autograd.tensor import Tensor
        leaves = [Tensor(a.data.copy(), requires_grad=True) if i in positions else a for i, a in enumerate(inputs)]
        make = lambda v, like: Tensor(np.asarray(v, dtype=like.data.dtype))  # noqa: E731
    call = callable_of(fn)
    result = {i: [] for i in positions}
    used = []
    sets = cotangent_sets
    for k in range(len(sets) if sets is not None else 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # the legacy style's hint: gradcheck reports it
            # copies in the graph, so that a forward modifying an input in place (ctx.mark_dirty) may
            outs = _outputs(call(*[a.clone() if i in positions else a for i, a in enumerate(leaves)]))
        if sets is None:
            rng = np.random.default_rng(seed)
            cot = tuple(rng.standard_normal(_array(o).shape) for o in outs)
        else:
            cot = tuple(np.asarray(v, dtype=np.float64) for v in sets[k])
            if len(cot) != len(outs) or any(np.size(v) != np.size(_array(o)) for v, o in zip(cot, outs)):
                raise ValueError(f"{len(cot)} cotangent(s) of sizes {[np.size(v) for v in cot]} for "
                                 f"{len(outs)} output(s) of shapes {[_array(o).shape for o in outs]}")
            cot = tuple(np.reshape(v, _array(o).shape) for v, o in zip(cot, outs))
        grads = grad(outs, [leaves[i] for i in positions], [make(v, o) for v, o in zip(cot, outs)],
                     allow_unused=True)
        for i, g in zip(positions, grads):
            result[i].append(np.zeros(_array(inputs[i]).shape) if g is None else
                             np.asarray(_array(g), dtype=np.float64))
        used.append(cot)
    return result, used, [tuple(_array(o).shape) for o in outs]


# ---- the reference --------------------------------------------------------------------------------
def formula_of(fn, expr=None):
    """The forward's formula(s): ``expr``, else the Function's ``formula`` attribute, else None."""
    if expr is None:
        owner = function_class(fn)
        expr = getattr(owner, "formula", None) if owner is not None else getattr(fn, "formula", None)
    if expr is None:
        return None
    return [expr] if isinstance(expr, str) else list(expr)


def exact_reference(fn, inputs, cotangent_sets, out_shapes, expr=None):
    """Exact Jᵀv per input and cotangent set. Raises ExactUnavailable."""
    formulas = formula_of(fn, expr)
    if formulas is not None:
        return _from_formula(fn, list(inputs), formulas, cotangent_sets, out_shapes)
    if any(_is_torch(a) for a in inputs):
        return _from_engine_twin(fn, list(inputs), cotangent_sets)
    return _from_trace(fn, list(inputs), cotangent_sets)


def _from_engine_twin(fn, inputs, cotangent_sets):
    """A torch Function's reference from its engine twin (torch_twin.py): its file run with gradcli as
    torch, the twin's forward traced at the same input values."""
    from gradcli.symbolic.torch_twin import NoTwin, engine_twin, to_engine

    owner = function_class(fn)
    try:
        if owner is None:
            raise NoTwin("not an autograd Function class")
        twin = engine_twin(owner)
    except NoTwin as error:
        raise ExactUnavailable(f"a torch Function whose forward does not run on gradcli's engine: {error}; give "
                               "its forward as a formula (expr=... or a `formula` attribute)") from None
    engine_inputs = [to_engine(a) for a in inputs]
    if differentiable_positions(engine_inputs) != _positions(inputs):
        raise ExactUnavailable("a torch Function whose differentiable inputs its engine twin does not see alike")
    try:
        reference = _from_trace(twin, engine_inputs, cotangent_sets)
    except ExactUnavailable as error:
        raise ExactUnavailable(f"{error} (the forward run on gradcli's engine, as torch); or give the forward "
                               "as a formula (expr=... or a `formula` attribute)") from None
    reference.description = "forward traced on gradcli's engine"
    return reference


def _from_trace(fn, inputs, cotangent_sets):
    positions = differentiable_positions(inputs)
    count = sum(inputs[i].data.size for i in positions)
    if count > MAX_TRACED_ELEMENTS:
        raise ExactUnavailable(f"{count} input elements: too many to trace (limit {MAX_TRACED_ELEMENTS}); "
                               "give the forward as a formula (expr=...)")
    # each symbol carries the sign of its value at the check point, so SymPy simplifies as it may there
    signs = {i: {idx: ("positive" if v > 0 else "negative" if v < 0 else "real")
                 for idx, v in np.ndenumerate(inputs[i].data.astype(np.float64))} for i in positions}
    try:
        trace = trace_function(fn, inputs, signs=signs, with_backward=False)
    except NotTraceable as error:
        raise ExactUnavailable(f"not traceable: {error.reason}") from None
    point = {}
    for i in positions:
        point.update(zip(trace.inputs[i].flat, as_mp(inputs[i].data).flat))
    try:
        sums, kinks, magnitudes = exact_vjp_values(trace, point, cotangent_sets)
    except ValueError as error:
        raise ExactUnavailable(str(error)) from None
    to_float = np.vectorize(exact_float, otypes=[float])
    values = {i: [to_float(s) if s.size else np.zeros(s.shape) for s in sums[i]] for i in positions}
    return ExactReference("trace", "traced forward", values, kinks, magnitudes=magnitudes)


def _parse(text):
    from gradcli.symbolic.parser import parse  # the diff command's safe parser: nothing is executed
    from gradcli.symbolic.functions import to_elementary
    return to_elementary(parse(text).expr)


def _from_formula(fn, inputs, formulas, cotangent_sets, out_shapes):
    from gradcli.symbolic.errors import ExpressionError
    names, _ = parameter_names(fn, len(inputs))
    positions = _positions(inputs)
    if len(formulas) != len(out_shapes):
        raise ExactUnavailable(f"{len(formulas)} formula(s) for {len(out_shapes)} differentiable output(s)")
    arrays = {n: _array(a).astype(np.float64) for n, a in zip(names, inputs)
              if a is not None and not isinstance(a, (str, bool)) and np.asarray(_array(a)).dtype.kind in "fiu"}
    values = {i: [np.zeros(arrays[names[i]].shape) for _ in cotangent_sets] for i in positions}
    magnitudes = {i: [np.zeros(arrays[names[i]].shape) for _ in cotangent_sets] for i in positions}
    kinks = {i: np.zeros(arrays[names[i]].shape, dtype=bool) for i in positions}
    notes = []
    evaluator = MpEvaluator()
    for k_out, (text, out_shape) in enumerate(zip(formulas, out_shapes)):
        try:
            f = _parse(text)
        except ExpressionError as error:
            raise ExactUnavailable(f"formula: {error}") from None
        symbols = sorted(f.free_symbols, key=lambda s: s.name)
        unknown = [s.name for s in symbols if s.name not in arrays]
        if unknown:
            raise ExactUnavailable(f"formula {text!r} uses {', '.join(unknown)}, not among the inputs "
                                   f"({', '.join(names)})")
        shape = np.broadcast_shapes(*(arrays[s.name].shape for s in symbols)) if symbols else ()
        summed = tuple(out_shape) != tuple(shape)
        if summed and int(np.prod(out_shape)) != 1:
            raise ExactUnavailable(f"formula {text!r} is elementwise over shape {shape}, but output {k_out} "
                                   f"has shape {tuple(out_shape)}")
        if summed:
            notes.append(f"output {k_out} is one number: formula {text!r} summed over its {int(np.prod(shape))} "
                         "elements")
        wrt = [(i, sympy.Symbol(names[i], real=True)) for i in positions]
        partials = [(i, almost_everywhere(sympy.diff(f, s))) for i, s in wrt if s in f.free_symbols]
        point_arrays = {s: np.broadcast_to(as_mp(arrays[s.name]), shape) for s in symbols}
        for k, cot in enumerate(cotangent_sets):
            v = np.asarray(cot[k_out], dtype=np.float64).reshape(out_shape)
            sums = {i: np.full(arrays[names[i]].shape, mpmath.mpf(0), dtype=object) for i, _ in partials}
            for p in np.ndindex(*shape):
                at = {s: point_arrays[s][p] for s in symbols}
                weight = mpmath.mpf(float(v.reshape(()) if summed else v[p]))
                for i, d in partials:
                    value, kink = evaluator.evaluate(d, at)
                    target = _unbroadcast_index(p, arrays[names[i]].shape)
                    term = value * weight
                    sums[i][target] += term
                    magnitudes[i][k][target] += abs(complex(term))
                    kinks[i][target] |= kink
            for i in sums:  # accumulate in mpmath, round once
                values[i][k] += np.vectorize(exact_float, otypes=[float])(sums[i])
    return ExactReference("formula", "; ".join(formulas), values, kinks, notes, magnitudes)


def _unbroadcast_index(p, shape):
    lead = len(p) - len(shape)
    return tuple(0 if s == 1 else p[lead + j] for j, s in enumerate(shape))


# ---- the check ------------------------------------------------------------------------------------
ROUNDING_ULPS = 64  # a backward's own rounding: this many ulps of the size of the terms it adds up


def _eps(dtype):
    try:
        return float(np.finfo(np.dtype(str(dtype))).eps)
    except (TypeError, ValueError):
        return float(np.finfo(np.float64).eps)


def _tolerances(dtype, rtol, atol):
    row = EXACT_TOLERANCES.get(str(dtype), EXACT_TOLERANCES["float64"])
    return (row["rtol"] if rtol is None else rtol), (row["atol"] if atol is None else atol)


def compare(reference, analytic, names, dtypes, rtol=None, atol=None):
    """The "exact" Check from an ExactReference and the backward's values ({index: [array per set]})."""
    rows, failed = [], 0
    for i in sorted(reference.values):
        r_tol, a_tol = _tolerances(dtypes.get(i, "float64"), rtol, atol)
        defined = np.all([np.isfinite(e) for e in reference.values[i]], axis=0)  # nan: no real derivative there
        compared = ~reference.kinks[i] & defined
        failing = np.zeros(compared.shape, dtype=bool)
        worst, worst_ratio, error, rel = None, -1.0, 0.0, 0.0
        # the input's scale, over every cotangent set: Jᵀv can be exactly 0 for one of them (softmax with
        # a cotangent of ones) while the backward's terms, and so its rounding, are of the size of the others
        scale = max((float(np.max(np.abs(np.where(np.isfinite(e), e, 0.0)), initial=0.0, where=compared))
                     for e in reference.values[i]), default=0.0)
        for k, (exact, got) in enumerate(zip(reference.values[i], analytic[i])):
            got = np.asarray(got, dtype=np.float64).reshape(exact.shape)
            with np.errstate(invalid="ignore"):
                diff = np.where(compared, np.abs(got - exact), 0.0)
            diff = np.where(np.isnan(diff), np.inf, diff)  # a nan backward where the derivative exists
            magnitude = reference.magnitudes[i][k] if i in reference.magnitudes else 0.0
            rounding = ROUNDING_ULPS * _eps(dtypes.get(i, "float64")) * np.where(compared, magnitude, 0.0)
            allowed = r_tol * np.abs(np.where(compared, exact, 0.0)) + a_tol * scale + rounding + 1e-300
            failing |= diff > allowed
            error = max(error, float(diff.max(initial=0.0)))
            rel = max(rel, float(np.max(diff / np.maximum(np.abs(exact), 1e-300), initial=0.0, where=compared)))
            ratio = diff / allowed
            if ratio.size == 0:  # an empty input: nothing to compare
                continue
            at = np.unravel_index(int(np.argmax(ratio)), ratio.shape) if ratio.ndim else ()
            if compared[at] and float(ratio[at]) > worst_ratio:
                worst_ratio = float(ratio[at])
                worst = {"index": [int(j) for j in at], "analytic": float(got[at]), "exact": float(exact[at]),
                         "cotangent": k}
        failed += bool(failing.any())
        rows.append({"index": i, "name": names[i] if i < len(names) else f"input{i}", "exact_error": error,
                     "max_rel_error": rel, "failed_elements": int(failing.sum()),
                     "kinks": int(reference.kinks[i].sum()), "undefined": int((~defined).sum()),
                     "worst": worst, "rtol": r_tol, "atol": a_tol})
    described = f"formula {reference.description!r}" if reference.source == "formula" else \
        f"the {reference.description}"
    if failed:
        row = max(rows, key=lambda r: r["max_rel_error"])
        worst = row["worst"]
        message = (f"backward differs from the exact derivative of {described} for {failed} input(s); "
                   f"worst {row['name']}{worst['index']}: backward {worst['analytic']:.17g}, "
                   f"exact {worst['exact']:.17g} (rel. error {row['max_rel_error']:.3g})")
    else:
        largest = max((r["exact_error"] for r in rows), default=0.0)
        message = f"backward matches the exact derivative of {described} (max error {largest:.3g})"
    details = {"source": reference.source, "reference": reference.description, "dps": DPS, "inputs": rows,
               "notes": list(reference.notes)}
    return Check("exact", "fail" if failed else "pass", message, None, details)


def skipped(reason):
    return Check("exact", "skip", f"no exact reference: {reason}", None, {"source": None})


def exact_check(fn, inputs, cotangents=None, expr=None, seed=0, rtol=None, atol=None):
    """Check ``fn``'s backward at ``inputs`` against the exact derivative (see the module docstring).

    ``cotangents``: one array per differentiable output, or a list of such tuples; default: one
    seeded standard-normal set. Returns a ``Check`` named "exact" (pass/fail/skip); per input
    ``details["inputs"][j]["exact_error"]`` is max |backward - exact| (what ``InputResult.exact_error``
    holds). Cotangents that do not fit the outputs raise ValueError."""
    inputs = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    sets = None
    if cotangents is not None:
        sets = list(cotangents) if isinstance(cotangents, list) else [cotangents]
        sets = [tuple(s) if isinstance(s, (tuple, list)) else (s,) for s in sets]
    analytic, used, out_shapes = run_backward(fn, inputs, sets, seed)
    return _judged(fn, inputs, analytic, used, out_shapes, expr, rtol, atol)


def _judged(fn, inputs, analytic, used, out_shapes, expr, rtol, atol):
    try:
        reference = exact_reference(fn, inputs, used, out_shapes, expr)
    except ExactUnavailable as error:
        return skipped(str(error))
    except Exception as error:  # SymPy/mpmath refusing an expression: no reference, not a verdict
        return skipped(f"the reference could not be evaluated ({type(error).__name__}: {error})")
    names, _ = parameter_names(fn, len(inputs))
    dtypes = {i: str(_array(inputs[i]).dtype) for i in analytic}
    return compare(reference, analytic, names, dtypes, rtol, atol)


def attach_exact(report, fn, inputs, expr=None, rtol=None, atol=None):
    """Add the "exact" check to a CheckReport and fill each ``InputResult.exact_error``.

    The report's own probe cotangents and backward values are reused when it kept them (full mode);
    otherwise the backward is run here with the report's cotangents (or seeded ones). Never raises
    for the Function's sake: a backward that fails here gives a skipped check with the reason."""
    inputs = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    sets = [tuple(c) for c in report.cotangents] if getattr(report, "cotangents", None) else None
    seed = getattr(report, "seed", 0)
    try:
        try:
            analytic, used, out_shapes = run_backward(fn, inputs, sets, seed)
            ours = False
        except ValueError:  # the report's cotangents do not fit the outputs seen here: use our own
            analytic, used, out_shapes = run_backward(fn, inputs, None, seed)
            ours = True
        for r in report.inputs:  # the values gradcheck judged, for the same cotangents
            arrays = None if ours or getattr(r, "analytic", None) is None else np.asarray(r.analytic)
            if arrays is not None and r.index in analytic and arrays.shape[0] == len(used) \
                    and arrays.shape[1:] == analytic[r.index][0].shape:
                analytic[r.index] = list(arrays)
        check = _judged(fn, inputs, analytic, used, out_shapes, expr, rtol, atol)
    except Exception as error:  # the Function's own failure: gradcheck has reported it already
        check = skipped(f"the backward failed while computing it ({type(error).__name__}: {error})")
    report.checks.append(check)
    errors = {row["index"]: row["exact_error"] for row in check.details.get("inputs", [])}
    for result in report.inputs:
        if result.index in errors:
            result.exact_error = errors[result.index]
    return check
