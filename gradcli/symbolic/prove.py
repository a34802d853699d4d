"""Prove a backward right for every input, or find the exact point where it is wrong.

Per differentiated input, on a small symbolic shape (default 2×2):

1. trace forward and backward (``trace.py``): the backward as expressions b(x, g), and Jᵀg from
   SymPy's derivatives of the traced forward;
2. screen: a gradient returned in another shape than its input's (a broadcast shape the engine
   sums down, as torch does) is wrong at every point -> "disproved" with a structural ("shape")
   counterexample. Then evaluate both at random exact points of the forward's domain (multiples of
   1/8, 40 digits). A clear difference is a counterexample; it is run once more through the real
   Function in float64, and reported only if that run shows the mismatch too -> "disproved";
3. otherwise simplify b - Jᵀg, once per distinct element formula -> "proved" when it is 0 (away
   from kinks, under the domain's assumptions), else "undecided" (the numeric verdict stands).

Everything runs in a forked child under a real time budget (``budget.Budgeted``): SymPy cannot be
interrupted from a thread, the child can be killed. Results stream back as they are found, so a
proof that runs out of time still reports its screening.
"""
import random
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import sympy

from gradcli.expr.budget import Budgeted
from gradcli.symbolic.evaluation import MpEvaluator, canonical, exact_float, switch_arguments
from gradcli.symbolic.ops import almost_everywhere, exact_constants
from gradcli.symbolic.points import conditions_by_symbol, draw, valid, worst_difference
from gradcli.symbolic.proof import simplifies_to_zero
from gradcli.symbolic.reasons import WrongGradientShape
from gradcli.symbolic.trace import (NotTraceable, domain_bounds, function_name, parameter_names, trace_function,
                                    trace_template)

VERDICTS = ("proved", "disproved", "undecided", "not_traceable")
SCREEN_POINTS = 6          # points where backward and Jᵀg must agree before a proof is attempted
SCREEN_ATTEMPTS = 80       # candidate points drawn (some fall outside the domain or on a kink)
CONFIRM_RTOL = 1e-6        # the float64 run must miss the exact value by more than this
SHAPE_NOTE = ("the element structure is the same at every shape for elementwise/broadcast/matmul code; "
              "raise the shape to check shape-specific code")


@dataclass
class ProofResult:
    function: str
    input: str                       # forward's parameter name
    index: int                       # its position among forward's arguments
    verdict: str                     # proved | disproved | undecided | not_traceable
    message: str
    shape: tuple = ()                # the symbolic shape the proof ran at
    assumptions: dict = field(default_factory=dict)   # input name -> real | positive | negative | mixed
    counterexample: dict = None      # disproved: kind "value" (point, element, both values, the float64 run)
    #                                  or kind "shape" (the returned and the input's shape)
    points_checked: int = 0          # screening points where backward and Jᵀg agreed
    uniform: bool = None             # every gradient element has the same formula (up to renaming)
    notes: list = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self):
        data = asdict(self)
        data["shape"] = [int(s) for s in self.shape]
        return data


# ---- the work, in the child ------------------------------------------------------------------------
class _Session:
    """State shared by the budgeted jobs (they run one after another in the same child)."""

    def __init__(self, fn, example_inputs, shape, seed):
        self.fn, self.example_inputs, self.shape, self.seed = fn, example_inputs, shape, seed
        self.name = function_name(fn)
        self.results = {}
        self.trace = None

    def screen(self):
        started = time.monotonic()
        try:
            self.trace = trace = trace_function(self.fn, self.example_inputs, self.shape)
        except WrongGradientShape as error:  # the engine refused it: the backward could not finish
            return {"wrong_shape": (error.index, error.returned_shape, error.input_shape, error.reason)}
        except NotTraceable as error:
            return {"not_traceable": error.reason}
        self.notes = []
        exact = trace.exact_vjp(self.notes)
        self.backward = {i: _prepared(trace.vjp[i], self.notes) for i in trace.inputs}
        self.exact = {i: _prepared(exact[i], self.notes) for i in trace.inputs}
        self._sample(random.Random(self.seed))
        out = {}
        for i in trace.inputs:
            result = self._result(i, "undecided", "")
            result.points_checked = len(self.agreeing)
            result.uniform = len({canonical_key(e) for e in trace.vjp[i].flat}) == 1
            wrong_shape = self._returned_shape(i)
            if wrong_shape is not None:
                _shape_disproof(self, result, *wrong_shape)
            elif i in self.mismatch:
                _finish_disproof(self, result, *self.mismatch[i])
            elif not self.agreeing:
                result.message = ("no point of the forward's domain found among the sampled ones; "
                                  "the numeric verdict stands")
            result.seconds = time.monotonic() - started
            out[i] = self.results[i] = result
        return out

    def prove(self, i):
        result = self.results.get(i)
        if result is None or result.verdict != "undecided" or not self.agreeing:
            return result
        started = time.monotonic()
        bounds = domain_bounds(self.trace.domain)
        cache, open_elements = {}, 0
        for b, e in zip(self.backward[i].flat, self.exact[i].flat):
            key, symbols = canonical(b - e)
            renamed = dict(zip(symbols, sorted(key.free_symbols, key=lambda s: int(s.name[2:]))))
            limits = {renamed[s]: bounds[s] for s in symbols if s in bounds}
            entry = (key, tuple(sorted((str(s), v) for s, v in limits.items())))
            if entry not in cache:
                cache[entry] = simplifies_to_zero(key, limits)
            open_elements += not cache[entry]
        result.seconds += time.monotonic() - started
        if open_elements:
            result.message = (f"backward − Jᵀg did not simplify to 0 for {open_elements} element(s), but agreed "
                              f"at {result.points_checked} exact points; the numeric verdict stands")
            return result
        used = {_bound_text(self.trace.names[i], lo, hi) for (_, limits) in cache for _, (lo, hi) in limits}
        if used:
            result.notes.append("within the forward's domain: " + ", ".join(sorted(used)))
        result.verdict = "proved"
        result.message = (f"backward − Jᵀg simplifies to 0 for every element at shape {_shape_text(result.shape)} "
                          f"({len(cache)} distinct element formula(s)), under {_assumption_text(result.assumptions)}")
        if result.uniform:
            result.notes.append(SHAPE_NOTE)
        return result

    def _result(self, i, verdict, message):
        trace = self.trace
        return ProofResult(self.name, trace.names[i], i, verdict, message, tuple(trace.inputs[i].shape),
                           {trace.names[i]: trace.signs.get(trace.names[i], "real")}, notes=list(self.notes))

    def _returned_shape(self, i):
        """(returned shape, input shape) when the user's backward returned input i's gradient in a
        broadcast shape that the engine summed down; None otherwise."""
        top = self.name + "Backward"
        for node, index, got, expected in self.trace.fixups:
            if node == top and index == i:  # the user's backward, not a built-in op inside it
                return tuple(got), tuple(expected)
        return None

    # -- screening --
    def _sample(self, rng):
        trace = self.trace
        evaluator = MpEvaluator()
        symbols = trace.symbols()
        cotangents = trace.cotangent_symbols()
        switches = [s for arr in trace.outputs for e in arr.flat for s in switch_arguments(e)]
        switches += [s for arrs in (self.backward, self.exact) for arr in arrs.values() for e in arr.flat
                     for s in switch_arguments(e)]
        switches = list(dict.fromkeys(switches))
        filed = conditions_by_symbol(trace.domain, symbols)
        self.agreeing, self.mismatch = [], {}
        for _ in range(SCREEN_ATTEMPTS):
            if len(self.agreeing) >= SCREEN_POINTS or len(self.mismatch) == len(trace.inputs):
                break
            point = draw(rng, symbols, cotangents, filed, evaluator)
            if point is None or not valid(point, trace.outputs, evaluator, switches):
                continue
            agreed = True
            for i in trace.inputs:
                if i in self.mismatch:
                    continue
                found = worst_difference(self.backward[i], self.exact[i], point, evaluator)
                if found is not None:
                    self.mismatch[i] = (point, *found)
                    agreed = False
            if agreed:
                self.agreeing.append(point)


def canonical_key(expr):
    return canonical(sympy.sympify(expr))[0]


def _prepared(array, notes):
    out = np.empty(array.shape, dtype=object)
    for idx, e in np.ndenumerate(array):
        out[idx] = almost_everywhere(exact_constants(sympy.sympify(e), notes))
    return out


def _finish_disproof(session, result, point, idx, b_value, e_value):
    """Fill the counterexample; keep "disproved" only if the float64 run of the Function shows it."""
    from gradcli.symbolic.exact import run_backward
    trace, i = session.trace, result.index
    backward_expr, exact_expr = session.backward[i][idx], session.exact[i][idx]
    relevant = sorted(backward_expr.free_symbols | exact_expr.free_symbols, key=lambda s: s.name)
    numeric = _float64_backward(session, point, i, idx, run_backward)
    counterexample = {
        "kind": "value",
        "element": [int(j) for j in idx],
        "at": {s.name: str(point[s]) for s in relevant},
        "point": {s.name: str(v) for s, v in point.items()},
        "backward": _exact_text(backward_expr, point), "backward_value": exact_float(b_value),
        "expected": _exact_text(exact_expr, point), "expected_value": exact_float(e_value),
        "numeric_backward": numeric,
    }
    result.counterexample = counterexample
    element = f"{trace.names[i]}{list(idx) if idx else ''}"
    where = ", ".join(f"{k}={v}" for k, v in counterexample["at"].items())
    shown = (f"at {where}: the backward gives {counterexample['backward']} = {counterexample['backward_value']:.10g}, "
             f"the exact Jᵀg is {counterexample['expected']} = {counterexample['expected_value']:.10g}")
    expected = counterexample["expected_value"]
    confirmed = numeric is not None and abs(numeric - expected) > CONFIRM_RTOL * max(abs(expected), 1e-300)
    if confirmed:
        result.verdict = "disproved"
        result.message = f"gradient of {element} is wrong {shown} (float64 run of the backward: {numeric:.10g})"
    else:
        result.message = (f"symbolic mismatch for {element} {shown}, but the float64 run of the backward gave "
                          f"{numeric!r}, so it is not confirmed; the numeric verdict stands")


def _shape_disproof(session, result, got, expected):
    """A gradient of another shape than its input's is wrong at every point: a structural counterexample.
    The values after the engine's sum are still screened, and said in the notes."""
    name = session.trace.names[result.index]
    result.verdict = "disproved"
    result.counterexample = _shape_counterexample(got, expected)
    result.message = _shape_message(name, got, expected)
    result.notes.append(f"the engine (like torch) silently sums a gradient of a broadcast shape down to the input's "
                        f"shape; that hides the bug only as long as {name} is broadcast the same way (another "
                        "shape, or a caller that does not sum, gets the wrong gradient)")
    if result.index in session.mismatch:
        probe = ProofResult(result.function, result.input, result.index, "undecided", "", result.shape)
        _finish_disproof(session, probe, *session.mismatch[result.index])
        result.notes.append("after that sum the values are wrong too: " + probe.message)
    elif session.agreeing:
        result.notes.append(f"after that sum the values agree with Jᵀg at {len(session.agreeing)} exact points")


def _shape_counterexample(got, expected):
    return {"kind": "shape", "returned_shape": [int(s) for s in got], "input_shape": [int(s) for s in expected]}


def _shape_message(name, got, expected):
    return (f"the backward returns the gradient of {name} with shape {list(got)}, but {name} has shape "
            f"{list(expected)}: wrong at every point")


def _float64_backward(session, point, i, idx, run_backward):
    """The real Function's backward at ``point`` (float64), element ``idx`` of input ``i``, or None."""
    from gradcli.autograd.tensor import Tensor
    trace = session.trace
    args = []
    for j, a in enumerate(trace.args):
        if j in trace.inputs:
            values = np.vectorize(lambda s: float(point[s]), otypes=[float])(trace.inputs[j])
            args.append(Tensor(values, requires_grad=True))
        elif type(a) is Tensor:
            args.append(Tensor(a.data.copy()))
        else:
            args.append(a)
    cot = tuple(np.vectorize(lambda s: float(point[s]), otypes=[float])(c) for c in trace.cotangents)
    try:
        with np.errstate(all="ignore"):
            grads, _, _ = run_backward(session.fn, args, [cot])
        return float(grads[i][0][idx])
    except Exception:  # the Function itself fails at this point: nothing to confirm with
        return None


def _exact_text(expr, point, limit=160):
    value = expr.xreplace(point)
    text = sympy.sstr(sympy.nsimplify(value) if value.is_Rational else value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _bound_text(name, lower, upper):
    if lower is not None and upper is not None:
        return f"{lower} < {name} < {upper}"
    return f"{name} > {lower}" if lower is not None else f"{name} < {upper}"


def _shape_text(shape):
    return "×".join(str(s) for s in shape) if shape else "()"


def _assumption_text(assumptions):
    parts = [f"{name} {kind}" for name, kind in assumptions.items()]
    return "the assumptions " + ", ".join(parts) if parts else "no assumptions"


# ---- the entry point, in the parent ----------------------------------------------------------------
def prove(fn, shape=(2, 2), timeout=10.0, example_inputs=None, seed=0):
    """Prove or disprove ``fn``'s backward, per differentiated input -> list[ProofResult].

    ``shape``: the symbolic shape of every input when ``example_inputs`` are not given (their shapes
    are used when they are). ``timeout``: wall-clock seconds for the whole Function; the work runs in
    a forked child that is killed at the deadline."""
    started = time.monotonic()
    name = function_name(fn)
    try:
        names, args, positions = trace_template(fn, example_inputs, shape)
    except NotTraceable as error:
        return _untraceable_inputs(fn, name, example_inputs, error.reason, time.monotonic() - started)
    session = _Session(fn, example_inputs, shape, seed)
    jobs = [("screen", session.screen, ())] + [(("prove", i), session.prove, (i,)) for i in positions]
    if timeout is None:  # in-process, no budget (debugging)
        results = {key: _call(job, job_args) for key, job, job_args in jobs}
    else:
        results = Budgeted(jobs, timeout).collect()
    elapsed = time.monotonic() - started
    return [_final(name, names, args, i, results, elapsed, timeout) for i in positions]


def _untraceable_inputs(fn, name, example_inputs, reason, elapsed):
    """One not_traceable result per tensor argument (torch tensors too), or one for the Function."""
    if example_inputs is None:
        names, required = parameter_names(fn)
        found = [(names.index(n), n, ()) for n in required]
    else:
        args = list(example_inputs) if isinstance(example_inputs, (tuple, list)) else [example_inputs]
        names, _ = parameter_names(fn, len(args))
        found = [(i, names[i], tuple(a.shape)) for i, a in enumerate(args) if hasattr(a, "shape")]
    return [ProofResult(name, n, i, "not_traceable", reason, shape, seconds=elapsed) for i, n, shape in found] \
        or [ProofResult(name, "", -1, "not_traceable", reason, seconds=elapsed)]


def _call(job, args):
    try:
        return ("ok", job(*args))
    except Exception as error:
        return ("error", f"{type(error).__name__}: {error}")


def _final(name, names, args, i, results, elapsed, timeout):
    shape = tuple(np.shape(getattr(args[i], "data", ())))
    screened = results.get("screen")
    if screened is None:
        return ProofResult(name, names[i], i, "undecided",
                           f"the {timeout:g} s budget ran out while tracing and screening; the numeric verdict "
                           "stands", shape, seconds=elapsed)
    if screened[0] == "error":
        return ProofResult(name, names[i], i, "undecided", f"the prover failed: {screened[1]}; the numeric "
                           "verdict stands", shape, seconds=elapsed)
    data = screened[1]
    if "not_traceable" in data:
        return ProofResult(name, names[i], i, "not_traceable", data["not_traceable"], shape, seconds=elapsed)
    if "wrong_shape" in data:
        index, got, expected, reason = data["wrong_shape"]
        if i == index:
            return ProofResult(name, names[i], i, "disproved", _shape_message(names[i], got, expected), shape,
                               counterexample=_shape_counterexample(got, expected),
                               notes=[f"the engine (like torch) refuses a gradient of this shape, so the backward "
                                      f"fails: {reason}"], seconds=elapsed)
        return ProofResult(name, names[i], i, "not_traceable", f"the backward did not finish: {reason}", shape,
                           seconds=elapsed)
    proved = results.get(("prove", i))
    result = proved[1] if proved is not None and proved[0] == "ok" and proved[1] is not None else data[i]
    if proved is None and result.verdict == "undecided" and result.points_checked:
        result.message = (f"backward and Jᵀg agree at {result.points_checked} exact points, but the {timeout:g} s "
                          "budget ran out before the difference simplified to 0; the numeric verdict stands")
    result.seconds = elapsed
    return result
