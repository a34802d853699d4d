"""Symbolic tracing: run a Function's forward and backward on tensors of SymPy symbols.

The engine's tensors accept numpy object arrays, so a Function written on gradcli runs unchanged on
symbols: ``x`` of shape (2, 2) becomes the symbols ``x[0,0] .. x[1,1]``, the outputs come back as
expressions, and a backward pass with symbolic cotangents ``g[...]`` returns the user's
vector-Jacobian product as expressions. ``Trace.exact_vjp()`` is the same product from SymPy's own
derivatives of the traced forward; proofs and exact references compare the two.

Whatever cannot run on symbols stops the trace with ``NotTraceable(reason)``, never with a crash:
a numpy function called on ``.data`` (np.exp on symbols has no meaning), a symbolic value used as a
Python bool or float (data-dependent control flow), an op without a symbolic rule, a torch Function.
"""
import inspect
import re
import warnings
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import sympy

from gradcli.autograd import grad as _autograd_grad
from gradcli.autograd.grad_mode import enable_grad
from gradcli.autograd.tensor import Tensor
from gradcli.symbolic.ops import almost_everywhere, exact_constants
from gradcli.symbolic.ops import register as register_symbolic_rules
from gradcli.symbolic.reasons import NotTraceable, WrongGradientShape, not_traceable

_NAME = re.compile(r"^(.*?)(?:\[([0-9,]*)\])?$")


@dataclass
class Trace:
    """A Function run on symbols. Arrays are numpy object arrays of SymPy expressions."""

    function: str
    names: list                 # forward's parameter name per positional argument
    args: list                  # the arguments used: symbolic Tensors and the non-tensor values
    inputs: dict                # argument index -> array of input symbols (the differentiated inputs)
    outputs: list               # one array of expressions per differentiable output
    cotangents: list            # one array of cotangent symbols per differentiable output
    vjp: dict                   # argument index -> the user's backward as expressions (zeros for None)
    signs: dict = field(default_factory=dict)    # input name -> "positive" | "negative" | "real" | "mixed"
    # gradients the backward returned in a broadcast shape, summed down by the engine as torch does:
    # (node name, argument index, returned shape, input shape)
    fixups: list = field(default_factory=list)
    _domain: Optional[list] = field(default=None, repr=False)

    @property
    def domain(self):
        """Expressions the forward needs > 0 (sqrt/log arguments, ...), found when first asked: an exact
        reference traced with its signs given never asks (a walk over every output, ~7 % of its tracing)."""
        if self._domain is None:
            self._domain = domain_conditions(self.outputs)
        return self._domain

    @domain.setter
    def domain(self, conditions):
        self._domain = list(conditions)

    def symbols(self):
        """Every input symbol, in argument and element order."""
        return [s for i in sorted(self.inputs) for s in self.inputs[i].flat]

    def cotangent_symbols(self):
        return [s for arr in self.cotangents for s in arr.flat]

    def exact_vjp(self, notes=None):
        """Jᵀv from SymPy: per input element, sum over outputs of v_k * d(y_k)/d(x_i), taken away from kinks.

        With ``notes`` (a list), the forward's float constants are read as the exact numbers they
        stand for first (``exact_constants``, guesses appended to ``notes``): the derivative of
        ``x ** (1.0 / 3)`` then has the exponent -2/3, not the float 0.333... - 1."""
        owner = {s: (i, idx) for i, arr in self.inputs.items() for idx, s in np.ndenumerate(arr)}
        result = {i: np.full(arr.shape, sympy.S.Zero, dtype=object) for i, arr in self.inputs.items()}
        for out, cot in zip(self.outputs, self.cotangents):
            for idx, y in np.ndenumerate(out):
                y = sympy.sympify(y)
                if notes is not None:
                    y = exact_constants(y, notes)
                v = cot[idx]
                for s in y.free_symbols:
                    if s in owner:
                        i, at = owner[s]
                        result[i][at] += v * almost_everywhere(sympy.diff(y, s))
        return result


# ---- which callable, which parameters --------------------------------------------------------------
def is_torch_function(fn):
    cls = function_class(fn)
    candidates = [fn, getattr(fn, "__self__", None)] + ([cls] if cls is not None else [])
    for obj in candidates:
        klass = obj if isinstance(obj, type) else type(obj)
        if any(getattr(k, "__module__", "").split(".")[0] == "torch" for k in getattr(klass, "__mro__", ())):
            return True
    return False


def function_class(fn):
    """The autograd Function class behind ``fn`` (the class, its ``apply``, or a legacy instance)."""
    for obj in (fn, getattr(fn, "__self__", None)):
        if obj is None:
            continue
        cls = obj if isinstance(obj, type) else type(obj)
        if any(k.__name__ == "Function" and "autograd" in getattr(k, "__module__", "") for k in cls.__mro__[1:]):
            return cls
    return None


def function_name(fn):
    cls = function_class(fn)
    return cls.__name__ if cls is not None else getattr(fn, "__name__", type(fn).__name__)


def callable_of(fn):
    cls = function_class(fn)
    if cls is not None and isinstance(fn, type):
        return cls.apply
    return fn


def parameter_names(fn, count=None):
    """forward's positional parameter names after ctx (or the callable's own), ``input{i}`` where unknown."""
    cls = function_class(fn)
    names, required = [], []
    try:
        if cls is not None:
            params = list(inspect.signature(cls.forward).parameters.values())
            ctx_first = not getattr(cls, "_uses_setup_context", False) and not _is_torch_setup_context(cls)
            params = params[1:] if ctx_first and params else params
        else:
            params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
            if p.default is p.empty:
                required.append(p.name)
    if count is not None:
        names = (names + [f"input{i}" for i in range(len(names), count)])[:count]
    return names, required


def _is_torch_setup_context(cls):
    setup = getattr(cls, "setup_context", None)
    return setup is not None and "setup_context" in cls.__dict__


# ---- symbols ---------------------------------------------------------------------------------------
def element_name(base, idx):
    return base if not idx else f"{base}[{','.join(str(int(i)) for i in idx)}]"


def symbol_order(symbol):
    """Sort key (base name, element index) of a symbol made here: a stable order for canonical forms."""
    match = _NAME.match(symbol.name)
    base, idx = match.group(1), match.group(2)
    return base, tuple(int(i) for i in idx.split(",") if i) if idx else ()


def symbol_array(base, shape, signs=None):
    """Symbols ``base[i,j]`` with assumptions: ``signs`` maps an element index to "positive"/"negative"."""
    arr = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        sign = (signs or {}).get(idx, "real")
        arr[idx] = sympy.Symbol(element_name(base, idx), real=True,
                                **({"positive": True} if sign == "positive" else
                                   {"negative": True} if sign == "negative" else {}))
    return arr


def _is_float_tensor(a):
    return type(a) is Tensor and a.data.dtype.kind in "fO"


def differentiable_positions(args):
    """Float tensors that require grad; if none does, every float tensor (an example given without flags)."""
    floats = [i for i, a in enumerate(args) if _is_float_tensor(a)]
    flagged = [i for i in floats if args[i].requires_grad]
    return flagged or floats


# ---- the trace -------------------------------------------------------------------------------------
def trace_function(fn, example_inputs=None, shape=None, signs=None, with_backward=True):
    """Run ``fn`` forward and backward on symbols.

    ``example_inputs``: the arguments (tensors are replaced by symbols of their shape, other values
    pass through); without them every required positional parameter is a tensor of ``shape``
    (default (2, 2)). ``signs``: {argument index: {element index: "positive"|"negative"}}; by default
    inputs are real, and positive (negative) where the forward takes sqrt/log of a plain input
    element (of its negative). ``with_backward=False`` traces the forward only (``vjp`` stays empty).
    Raises ``NotTraceable``.
    """
    register_symbolic_rules()  # idempotent; restores a rule something else removed from the hooks
    name = function_name(fn)
    template = trace_template(fn, example_inputs, shape)
    if signs is not None:
        return _run(fn, name, template, signs, with_backward)
    first = _run(fn, name, template, {}, with_backward)
    inferred = _signs_from_domain(first)
    return _run(fn, name, template, inferred, with_backward) if inferred else first


def trace_template(fn, example_inputs=None, shape=None):
    """(names, args, positions): positional arguments with the differentiated tensors marked."""
    if is_torch_function(fn):
        raise NotTraceable("a torch Function: tracing runs gradcli's engine; give the forward as a formula "
                           "(expr=... / a `formula` attribute) for an exact reference", "setup")
    if example_inputs is None:
        names, required = parameter_names(fn)
        if not required:
            raise NotTraceable("forward has no required positional parameters to make symbols for; "
                               "give example_inputs", "setup")
        shape = tuple(shape) if shape is not None else (2, 2)
        args = [Tensor(np.zeros(shape)) for _ in required]
        return list(required), args, list(range(len(args)))
    args = list(example_inputs) if isinstance(example_inputs, (tuple, list)) else [example_inputs]
    if any(type(a).__module__.split(".")[0] == "torch" for a in args):
        raise NotTraceable("torch tensors as inputs: tracing runs gradcli's engine", "setup")
    names, _ = parameter_names(fn, len(args))
    return names, args, differentiable_positions(args)


def _run(fn, name, template, signs, with_backward=True):
    names, args, positions = template
    call = callable_of(fn)
    used = set(names)
    inputs, call_args, leaves = {}, list(args), []
    for i in positions:
        inputs[i] = symbol_array(names[i], args[i].data.shape, signs.get(i))
        leaves.append(Tensor(inputs[i].copy(), requires_grad=True))
    with warnings.catch_warnings(), np.errstate(all="ignore"), enable_grad():
        warnings.simplefilter("ignore")
        for i, leaf in zip(positions, leaves):  # copies in the graph: forward may modify them (ctx.mark_dirty)
            call_args[i] = leaf.clone()
        try:
            result = call(*call_args)
        except Exception as error:
            raise not_traceable(error, "forward") from None
        outs = [t for t in (result if isinstance(result, (tuple, list)) else (result,))
                if type(t) is Tensor and t.requires_grad and t.data.dtype.kind in "fO"]
        if not outs:
            raise NotTraceable("forward returned no differentiable tensor that depends on the inputs", "forward")
        base = "g" if "g" not in used else "grad_out"
        cotangents = [symbol_array(base if len(outs) == 1 else f"{base}{k}", t.data.shape)
                      for k, t in enumerate(outs)]
        grads = ()
        if with_backward:
            try:
                grads = _autograd_grad(outs, leaves, [Tensor(c.copy()) for c in cotangents], allow_unused=True)
            except Exception as error:
                raise _backward_failure(error, name) from None
    products = {}
    for i, g in zip(positions, grads):
        products[i] = _expressions(g.data, args[i].data.shape) if g is not None else \
            np.full(args[i].data.shape, sympy.S.Zero, dtype=object)
    outputs = [_expressions(t.data, t.data.shape) for t in outs]
    trace = Trace(name, list(names), call_args, inputs, outputs, cotangents, products)
    trace.fixups = _fixups(outs) if with_backward else []
    trace.signs = {names[i]: _sign_summary(signs.get(i), inputs[i].shape) for i in positions}
    return trace


# the engine's (and torch's) refusal of a gradient that does not broadcast to its input
_INVALID_GRADIENT = re.compile(r"Function (\w+) returned an invalid gradient at index (\d+) - got \[([0-9, ]*)\] "
                               r"but expected shape compatible with \[([0-9, ]*)\]")


def _backward_failure(error, name):
    """The NotTraceable for an error of the backward; a WrongGradientShape when the engine refused a
    gradient of the user's own backward for its shape."""
    reason = not_traceable(error, "backward")
    match = _INVALID_GRADIENT.search(str(error)) if isinstance(error, RuntimeError) else None
    if match is None or match.group(1) != name + "Backward":
        return reason

    def shape(text):
        return tuple(int(s) for s in text.split(",") if s.strip())

    return WrongGradientShape(reason.reason, reason.phase, reason.location, int(match.group(2)),
                              shape(match.group(3)), shape(match.group(4)))


def _fixups(outputs):
    found, seen, stack = [], set(), [o.grad_fn for o in outputs]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        for index, got, expected in getattr(node, "_grad_fixups", None) or ():
            found.append((node.name(), index, tuple(got), tuple(expected)))
        stack.extend(edge[0] for edge in (getattr(node, "_next", None) or ()) if edge)
    return found


def _expressions(data, shape):
    arr = np.asarray(data)
    if arr.dtype.kind != "O":
        arr = arr.astype(object)
    out = np.empty(arr.shape, dtype=object)
    for idx, e in np.ndenumerate(arr):
        out[idx] = e if isinstance(e, sympy.Basic) else sympy.sympify(_number(e))
    return np.broadcast_to(out, shape).copy() if out.shape != tuple(shape) else out


def _number(e):
    if isinstance(e, (bool, np.bool_)):
        return int(e)
    if isinstance(e, (int, float, np.integer, np.floating)):
        return e.item() if isinstance(e, np.generic) else e
    raise NotTraceable(f"backward produced a {type(e).__name__}, not a number or an expression", "backward")


def _sign_summary(signs, shape):
    values = {(signs or {}).get(idx, "real") for idx in np.ndindex(*shape)}
    return values.pop() if len(values) == 1 else "mixed"


# ---- the forward's domain --------------------------------------------------------------------------
def domain_conditions(exprs):
    """Expressions that must be > 0 for the forward to be real and differentiable there."""
    conditions = []
    seen = set()
    for arr in exprs:
        for e in arr.flat:
            if not isinstance(e, sympy.Basic) or e.is_number:
                continue
            for node in e.atoms(sympy.Pow, sympy.log, sympy.asin, sympy.acos, sympy.atanh, sympy.acosh):
                for cond in _needs_positive(node):
                    if cond not in seen and not cond.is_number:
                        seen.add(cond)
                        conditions.append(cond)
    return conditions


def _needs_positive(node):
    if isinstance(node, sympy.Pow):
        return [node.base] if node.exp.is_integer is not True else []
    if isinstance(node, sympy.log):
        return [node.args[0]]
    if isinstance(node, (sympy.asin, sympy.acos, sympy.atanh)):
        return [1 - node.args[0] ** 2]
    if isinstance(node, sympy.acosh):
        return [node.args[0] - 1]
    return []


def domain_bounds(conditions):
    """{symbol: (lower, upper)} from the conditions linear in one symbol (c·x + d > 0): x - 1 > 0
    (acosh) gives x > 1, sqrt(2 - x) gives x < 2. None where a side is unbounded."""
    bounds = {}
    for cond in conditions:
        if len(cond.free_symbols) != 1:
            continue
        (s,) = cond.free_symbols
        poly = cond.as_poly(s)
        if poly is None or poly.degree() != 1:
            continue
        c, d = poly.all_coeffs()
        if not (c.is_number and d.is_number) or c == 0:
            continue
        edge = -d / c
        lower, upper = bounds.get(s, (None, None))
        if c > 0:
            lower = edge if lower is None else sympy.Max(lower, edge)
        else:
            upper = edge if upper is None else sympy.Min(upper, edge)
        bounds[s] = (lower, upper)
    return bounds


def _signs_from_domain(trace):
    """Input elements the forward needs positive (sqrt(x), log(x), acosh(x)) or negative (sqrt(-x))."""
    owner = {s: (i, idx) for i, arr in trace.inputs.items() for idx, s in np.ndenumerate(arr)}
    signs = {}
    for s, (lower, upper) in domain_bounds(trace.domain).items():
        if s in owner:
            i, idx = owner[s]
            if lower is not None and lower >= 0:
                signs.setdefault(i, {})[idx] = "positive"
            elif upper is not None and upper <= 0:
                signs.setdefault(i, {})[idx] = "negative"
    return signs
