"""The op <-> SymPy mapping, and running a SymPy expression forward/backward through an autograd engine.

One row per op. Unary ops are not listed here a second time: the engine's own table
(``gradcli.autograd.ops.elementwise.UNARY``: op name, numpy forward, SymPy name, derivative rule) is the
single source, and this module reads its SymPy-name column in both directions:

* ``sympy_callable(op)``: engine -> SymPy, for symbolic tracing (e.g. "rsqrt" -> 1/sqrt(x));
* ``engine_op_for_head(head)``: SymPy -> engine, for the diff command (e.g. ``Abs`` -> "abs").

Non-unary structure (Add, Mul, Pow, Max, Min, logsumexp) and SymPy heads without an engine op of their own
(cot, sec, csc, erfc, Heaviside) are the rows of ``STRUCTURAL_ROWS`` and ``COMPOSITE_ROWS`` below.
``EngineFunction`` works with any torch-like namespace (gradcli or torch).
"""
import math
import operator
from dataclasses import dataclass
from functools import reduce

# SymPy-name column entries of the engine table that are patterns, not heads, in SymPy
# (sqrt(x) is Pow(x, 1/2), log1p(x) is log(1 + x), ...): reachable from SymPy through Pow/Add instead.
PATTERN_NAMES = {"sqrt": "Pow(x, 1/2)", "rsqrt": "Pow(x, -1/2)", "reciprocal": "Pow(x, -1)",
                 "neg": "Mul(-1, x)", "log1p": "log(1 + x)", "expm1": "exp(x) - 1"}

# SymPy head -> (engine op or ops, how): the rows that are not single unary ops.
STRUCTURAL_ROWS = {
    "Add": ("add", "folded left to right with +"),
    "Mul": ("mul", "folded left to right with *"),
    "Pow": ("pow", "exponent 1/2 -> sqrt, -1/2 -> rsqrt, -1 -> reciprocal, number -> x ** n, c ** x, x ** y"),
    "Max": ("maximum", "folded pairwise"),
    "Min": ("minimum", "folded pairwise"),
    "logsumexp": ("logsumexp", "arguments stacked on a new dim 0, then logsumexp(dim=0)"),
    "atan2": ("atan2", "atan2(y, x), the angle of the point (x, y)"),
}
COMPOSITE_ROWS = {   # SymPy head -> (code template, engine evaluation); H(0) = 1/2 as in SymPy
    "cot": ("{ns}.reciprocal({ns}.tan({x}))", lambda ns, x: ns.reciprocal(ns.tan(x))),
    "sec": ("{ns}.reciprocal({ns}.cos({x}))", lambda ns, x: ns.reciprocal(ns.cos(x))),
    "csc": ("{ns}.reciprocal({ns}.sin({x}))", lambda ns, x: ns.reciprocal(ns.sin(x))),
    "erfc": ("1 - {ns}.erf({x})", lambda ns, x: 1 - ns.erf(x)),
    "Heaviside": ("({ns}.sign({x}) + 1) * 0.5", lambda ns, x: (ns.sign(x) + 1) * 0.5),
}


# SymPy heads the engine computes through other heads (the reciprocal and inverse trig/hyperbolic
# functions): the expression is rewritten before it is compiled, and code generation prints the same form.
ENGINE_REWRITES = {
    "acot": "atan(1/u)", "asec": "acos(1/u)", "acsc": "asin(1/u)", "acoth": "atanh(1/u)",
    "asech": "acosh(1/u)", "acsch": "asinh(1/u)", "coth": "1/tanh(u)", "sech": "1/cosh(u)", "csch": "1/sinh(u)",
}
# SymPy heads with no engine op at all: computed symbolically only (specs/diff.md).
SYMBOLIC_ONLY_HEADS = ("gamma", "loggamma", "polygamma", "besselj", "LambertW", "DiracDelta")


def _rewrite_rules():
    import sympy
    inverse = {"acot": sympy.atan, "asec": sympy.acos, "acsc": sympy.asin, "acoth": sympy.atanh,
               "asech": sympy.acosh, "acsch": sympy.asinh}
    reciprocal = {"coth": sympy.tanh, "sech": sympy.cosh, "csch": sympy.sinh}
    rules = {getattr(sympy, head): (lambda f: lambda u: f(1 / u))(f) for head, f in inverse.items()}
    rules.update({getattr(sympy, head): (lambda f: lambda u: 1 / f(u))(f) for head, f in reciprocal.items()})
    return rules


def rewrite_for_engine(expr):
    """``expr`` with the ENGINE_REWRITES heads written in heads the engine has (SymPy side only)."""
    rules = _rewrite_rules()
    if not any(expr.has(head) for head in rules):
        return expr
    return expr.replace(lambda node: type(node) in rules, lambda node: rules[type(node)](node.args[0]))


def engine_unary_table():
    """The engine's unary rows as {op name: SymPy name}."""
    from gradcli.autograd.ops.elementwise import UNARY
    return {op: row[1] for op, row in UNARY.items()}


def engine_op_for_head(head):
    """The engine op computing SymPy head ``head`` (a class name such as "Abs"), or None."""
    for op, sympy_name in engine_unary_table().items():
        if sympy_name == head and sympy_name not in PATTERN_NAMES:
            return op
    return None


def sympy_callable(op):
    """SymPy callable computing engine op ``op`` (engine -> SymPy direction, e.g. for symbolic tracing).

    The engine's own ``elementwise.sympy_expr`` is the source; only the ML ops come back as gradcli's
    named SymPy functions (``sigmoid(x)``, not ``1/(1 + exp(-x))``) so derivatives read naturally.
    """
    import functools

    from gradcli.autograd.ops.elementwise import sympy_expr
    from gradcli.expr import functions
    named = {"sigmoid": functions.sigmoid, "softplus": functions.softplus, "relu": functions.relu}
    return named.get(op) or functools.partial(sympy_expr, op)


class EngineUnavailable(Exception):
    """The expression cannot be run through the engine (missing op, engine not importable, ...)."""


class NotReal(Exception):
    """A constant in the expression is not real (the engine works on reals)."""


def _evalf(expr):
    """complex(expr) to 20 digits; mpmath divides by a rounded 0 at that precision for 1/log1p(1e-30)
    (ZeroDivisionError): then once more with more digits, else not a number."""
    for digits in (20, 80):
        try:
            return complex(expr.evalf(digits))
        except ZeroDivisionError:
            continue
    return complex(math.nan)


def _constant(expr):
    from gradcli.expr.precise import OUT_OF_RANGE, precise
    ((status, _),), _ = precise([expr], [], {})   # node by node: exp(10^1000) is out of range, not evaluated
    if status == OUT_OF_RANGE:
        return math.inf if expr.is_extended_positive is not False else math.nan
    try:
        value = _evalf(expr)
    except (OverflowError, TypeError, ValueError):   # beyond float64 (exp(10^1000)) or not a number
        return math.inf if expr.is_extended_positive else -math.inf if expr.is_extended_negative else math.nan
    if value.imag != 0:
        raise NotReal(str(expr))
    return value.real


@dataclass
class Program:
    """A SymPy DAG as plain data, so the engine side never needs SymPy (it may run in another process).

    Slots: the inputs (one per variable), then ``constants`` (floats), then one per step. A step is
    ``(head, argument slots, exponent)``: ``head`` is the SymPy class name; ``exponent`` describes a
    constant Pow exponent as (p, q), else None.
    """
    variables: list
    constants: list
    steps: list
    outputs: list

    @property
    def index(self):
        return {name: i for i, name in enumerate(self.variables)}


def compile_program(exprs, variables):
    """Program for ``exprs`` (SymPy, run on the SymPy side). Raises NotReal for complex constants."""
    from gradcli.expr.reverse import dag_nodes
    exprs = [rewrite_for_engine(expr) for expr in exprs]
    slot = {v: i for i, v in enumerate(variables)}
    constants = []

    def ref(node):
        if node not in slot:
            slot[node] = ("const", len(constants))
            constants.append(_constant(node))
        return slot[node]

    raw_steps = []
    for node in dag_nodes(exprs):
        args = [ref(arg) if not arg.free_symbols else slot[arg] for arg in node.args]
        exponent = None
        if node.is_Pow and node.exp.is_Rational:
            exponent = (int(node.exp.p), int(node.exp.q))
        slot[node] = ("step", len(raw_steps))
        raw_steps.append((type(node).__name__, args, exponent))
    outputs = [ref(expr) if not expr.free_symbols else slot[expr] for expr in exprs]
    n, c = len(variables), len(constants)

    def flat(r):
        if isinstance(r, int):
            return r
        return n + r[1] if r[0] == "const" else n + c + r[1]

    steps = [(head, [flat(a) for a in args], exponent) for head, args, exponent in raw_steps]
    return Program([str(v) for v in variables], constants, steps, [flat(o) for o in outputs])


class EngineProgram:
    """Runs a Program forward and backward on an autograd engine (gradcli's, or torch for tests).

    ``partials(X, keys)``: X has one row per evaluation point and one column per variable; a key is
    ``(output index, tuple of variable names)`` (``()`` = the value). Higher orders use nested
    ``autograd.grad(..., create_graph=True)`` - i.e. the engine's double backward is exercised too.
    """

    def __init__(self, program, namespace=None):
        if namespace is None:
            try:
                import gradcli as namespace
                import gradcli.autograd  # noqa: F401  (fail here, not at the first op)
            except ImportError as error:  # pragma: no cover - the engine ships with the package
                raise EngineUnavailable(f"engine not importable: {error}") from None
        self.ns = namespace
        self.program = program
        self.index = program.index

    def _forward_all(self, leaves):
        program = self.program
        values = list(leaves) + list(program.constants)
        for head, args, exponent in program.steps:
            values.append(self._apply(head, [values[a] for a in args], exponent))
        return [values[o] for o in program.outputs]

    def _tensor(self, value):
        return value if hasattr(value, "backward") else self.ns.tensor(float(value))

    def _op(self, name):
        op = getattr(self.ns, name, None)
        if op is None:
            raise EngineUnavailable(f"the engine has no op {name!r}")
        return op

    def _apply(self, head, args, exponent):
        ns = self.ns
        if head == "Add":
            return reduce(operator.add, args)
        if head == "Mul":
            return reduce(operator.mul, args)
        if head == "Pow":
            return self._power(args, exponent)
        if head in ("Max", "Min"):
            op = self._op("maximum" if head == "Max" else "minimum")
            return reduce(lambda a, b: op(self._tensor(a), self._tensor(b)), args)
        if head == "logsumexp":
            like = next(a for a in args if hasattr(a, "backward"))
            stacked = self._op("stack")([a if hasattr(a, "backward") else self._op("full_like")(like, float(a))
                                         for a in args])
            return self._op("logsumexp")(stacked, dim=0)
        if head == "atan2":
            y, x = args
            like = y if hasattr(y, "backward") else x  # atan2 takes tensors: a constant side becomes one
            full = self._op("full_like")
            return self._op("atan2")(y if hasattr(y, "backward") else full(like, float(y)),
                                     x if hasattr(x, "backward") else full(like, float(x)))
        if head in COMPOSITE_ROWS:
            return COMPOSITE_ROWS[head][1](ns, self._tensor(args[0]))
        if head == "exp":
            return self._op("exp")(self._tensor(args[0]))
        op_name = engine_op_for_head(head)
        if op_name is None or len(args) != 1:
            if head in SYMBOLIC_ONLY_HEADS:
                raise EngineUnavailable(f"{head} is computed symbolically only (the engine has no {head} op)")
            raise EngineUnavailable(f"no engine op for SymPy {head}")
        return self._op(op_name)(self._tensor(args[0]))

    def _power(self, args, exponent):
        base, power = args
        if exponent is not None:
            special = {(1, 2): "sqrt", (-1, 2): "rsqrt", (-1, 1): "reciprocal"}.get(exponent)
            if special:
                return self._op(special)(self._tensor(base))
            p, q = exponent
            return base ** (p if q == 1 else p / q)
        if not hasattr(base, "backward"):          # c ** x
            if base > 0:
                return self._op("exp")(power * math.log(base))
            return self._tensor(base) ** power
        return base ** power

    # ---- derivatives ----
    def partials(self, X, keys):
        """Array (rows of X, len(keys)) of the requested partial derivatives."""
        import numpy as np

        ns = self.ns
        X = np.asarray(X, dtype=np.float64)
        rows = X.shape[0]
        deepest = max((len(wrt) for _, wrt in keys), default=0)
        leaves = [ns.tensor(X[:, j].copy(), requires_grad=True) for j in range(len(self.program.variables))]
        cache = {}
        outputs = []

        def get(output, wrt):
            if (output, wrt) in cache:
                return cache[(output, wrt)]
            if not wrt:
                if not outputs:
                    outputs.extend(self._forward_all(leaves))
                value = outputs[output]
            else:
                parent = get(output, wrt[:-1])
                if parent is None or not getattr(parent, "requires_grad", False):
                    value = None                         # parent is constant: this derivative is 0
                else:
                    leaf = leaves[self.index[wrt[-1]]]
                    (value,) = ns.autograd.grad(parent.sum(), [leaf], retain_graph=True,
                                                create_graph=len(wrt) < deepest, allow_unused=True)
            cache[(output, wrt)] = value
            return value

        out = np.empty((rows, len(keys)))
        with np.errstate(all="ignore"):
            for k, (output, wrt) in enumerate(keys):
                value = get(output, tuple(wrt))
                if value is None:
                    out[:, k] = 0.0
                elif hasattr(value, "detach"):
                    out[:, k] = np.broadcast_to(np.asarray(value.detach().numpy(), dtype=np.float64), (rows,))
                else:
                    out[:, k] = float(value)
        return out


def EngineFunction(exprs, variables, namespace=None):  # noqa: N802 - reads like the class it builds
    """SymPy expressions compiled and ready to run on the engine, in this process."""
    return EngineProgram(compile_program(list(exprs), list(variables)), namespace)
