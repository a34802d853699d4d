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

from gradcli.symbolic.jacobian_values import exact_vjp_values
from gradcli.symbolic.evaluation import DPS, MpEvaluator, as_mp, exact_float
from gradcli.symbolic.ops import almost_everywhere
from gradcli.symbolic.shared_numbers import shared_numbers
from gradcli.symbolic.unevaluated import unevaluated_unary
from gradcli.symbolic.trace import (NotTraceable, callable_of, differentiable_positions, function_class,
                                    parameter_names, trace_function)

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


def as_array(value):
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
            cot = tuple(rng.standard_normal(as_array(o).shape) for o in outs)
        else:
            cot = tuple(np.asarray(v, dtype=np.float64) for v in sets[k])
            if len(cot) != len(outs) or any(np.size(v) != np.size(as_array(o)) for v, o in zip(cot, outs)):
                raise ValueError(f"{len(cot)} cotangent(s) of sizes {[np.size(v) for v in cot]} for "
                                 f"{len(outs)} output(s) of shapes {[as_array(o).shape for o in outs]}")
            cot = tuple(np.reshape(v, as_array(o).shape) for v, o in zip(cot, outs))
        grads = grad(outs, [leaves[i] for i in positions], [make(v, o) for v, o in zip(cot, outs)],
                     allow_unused=True)
        for i, g in zip(positions, grads):
            result[i].append(np.zeros(as_array(inputs[i]).shape) if g is None else
                             np.asarray(as_array(g), dtype=np.float64))
        used.append(cot)
    return result, used, [tuple(as_array(o).shape) for o in outs]


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
    with shared_numbers():  # equal Floats shared, known facts not deduced again (shared_numbers.py)
        try:
            with unevaluated_unary():  # values are all it needs of the trace (unevaluated.py)
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
    from gradcli.expr.parser import parse  # the diff command's safe parser: nothing is executed
    from gradcli.expr.functions import to_elementary
    return to_elementary(parse(text).expr)


def _from_formula(fn, inputs, formulas, cotangent_sets, out_shapes):
    from gradcli.expr.errors import ExpressionError
    names, _ = parameter_names(fn, len(inputs))
    positions = _positions(inputs)
    if len(formulas) != len(out_shapes):
        raise ExactUnavailable(f"{len(formulas)} formula(s) for {len(out_shapes)} differentiable output(s)")
    arrays = {n: as_array(a).astype(np.float64) for n, a in zip(names, inputs)
              if a is not None and not isinstance(a, (str, bool)) and np.asarray(as_array(a)).dtype.kind in "fiu"}
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
