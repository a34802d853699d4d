"""The op <-> SymPy mapping, and running a SymPy expression forward/backward through an autograd engine.

One row per op. Unary ops are not listed here a second time: the engine's own table
(``gradcli.autograd.ops.elementwise.UNARY``: op name, numpy forward, SymPy name, derivative rule) is the
single source, and this module reads its SymPy-name column in both directions:

* ``sympy_callable(table_name)``: engine -> SymPy, for symbolic tracing (e.g. "rsqrt" -> 1/sqrt(x));
* ``engine_op_for_head(head)``: SymPy -> engine, for the diff command (e.g. ``Abs`` -> "abs").

Non-unary structure (Add, Mul, Pow, Max, Min, logsumexp) and SymPy heads without an engine op of their own
(cot, sec, csc, erfc, Heaviside) are the rows of ``STRUCTURAL_ROWS`` and ``COMPOSITE_ROWS`` below.
``EngineFunction`` works with any torch-like namespace (gradcli or torch).
"""
import math
import operator
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
}
COMPOSITE_ROWS = {   # SymPy head -> (code template, engine evaluation); H(0) = 1/2 as in SymPy
    "cot": ("{ns}.reciprocal({ns}.tan({x}))", lambda ns, x: ns.reciprocal(ns.tan(x))),
    "sec": ("{ns}.reciprocal({ns}.cos({x}))", lambda ns, x: ns.reciprocal(ns.cos(x))),
    "csc": ("{ns}.reciprocal({ns}.sin({x}))", lambda ns, x: ns.reciprocal(ns.sin(x))),
    "erfc": ("1 - {ns}.erf({x})", lambda ns, x: 1 - ns.erf(x)),
    "Heaviside": ("({ns}.sign({x}) + 1) * 0.5", lambda ns, x: (ns.sign(x) + 1) * 0.5),
}


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


def sympy_callable(table_name):
    """SymPy callable for a name in the engine table's SymPy column (engine -> SymPy direction)."""
    import sympy

    from gradcli.symbolic import functions
    patterns = {"sqrt": sympy.sqrt, "rsqrt": lambda x: 1 / sympy.sqrt(x), "reciprocal": lambda x: 1 / x,
                "neg": operator.neg, "log1p": lambda x: sympy.log(1 + x), "expm1": lambda x: sympy.exp(x) - 1}
    if table_name in patterns:
        return patterns[table_name]
    for module in (functions, sympy):
        if hasattr(module, table_name):
            return getattr(module, table_name)
    raise KeyError(f"no SymPy function for engine table name {table_name!r}")


class EngineUnavailable(Exception):
    """The expression cannot be run through the engine (missing op, engine not importable, ...)."""


class NotReal(Exception):
    """A constant in the expression is not real (the engine works on reals)."""


def _constant(expr):
    value = complex(expr.evalf(20))
    if value.imag != 0:
        raise NotReal(str(expr))
    return value.real


class EngineFunction:
    """Expressions of the variables, evaluated (and differentiated) by an autograd engine on batches.

    ``partials(X, keys)``: X has one row per evaluation point and one column per variable; a key is
    ``(output index, tuple of variable names)`` (``()`` = the value). Higher orders use nested
    ``autograd.grad(..., create_graph=True)`` - i.e. the engine's double backward is exercised too.
    """

    def __init__(self, exprs, variables, namespace=None):
        if namespace is None:
            try:
                import gradcli as namespace
                import gradcli.autograd  # noqa: F401  (fail here, not at the first op)
            except ImportError as error:  # pragma: no cover - the engine ships with the package
                raise EngineUnavailable(f"engine not importable: {error}") from None
        self.ns = namespace
        self.exprs = list(exprs)
        self.variables = list(variables)
        self.index = {str(v): i for i, v in enumerate(self.variables)}
        self._program = None

    # ---- forward: SymPy DAG -> engine ops, compiled once so repeated evaluations skip SymPy ----
    def _compile(self):
        """Steps (node, its args) in topological order; constants converted to floats once."""
        from gradcli.symbolic.reverse import dag_nodes
        steps, constants = [], {}
        for node in dag_nodes(self.exprs):
            for arg in node.args:
                if not arg.free_symbols and arg not in constants:
                    constants[arg] = _constant(arg)
            steps.append(node)
        for expr in self.exprs:
            if not expr.free_symbols and expr not in constants:
                constants[expr] = _constant(expr)
        return steps, constants

    def _forward_all(self, leaves):
        if self._program is None:
            self._program = self._compile()
        steps, constants = self._program
        values = dict(constants)
        values.update(leaves)
        for node in steps:
            values[node] = self._apply(node, [values[arg] for arg in node.args])
        return [values[expr] for expr in self.exprs]

    def _tensor(self, value):
        return value if hasattr(value, "backward") else self.ns.tensor(float(value))

    def _op(self, name):
        op = getattr(self.ns, name, None)
        if op is None:
            raise EngineUnavailable(f"the engine has no op {name!r}")
        return op

    def _apply(self, expr, args):
        head = type(expr).__name__
        ns = self.ns
        if expr.is_Add:
            return reduce(operator.add, args)
        if expr.is_Mul:
            return reduce(operator.mul, args)
        if expr.is_Pow:
            return self._power(expr, args)
        if head in ("Max", "Min"):
            op = self._op("maximum" if head == "Max" else "minimum")
            return reduce(lambda a, b: op(self._tensor(a), self._tensor(b)), args)
        if head == "logsumexp":
            like = next(a for a in args if hasattr(a, "backward"))
            stacked = self._op("stack")([a if hasattr(a, "backward") else self._op("full_like")(like, float(a))
                                         for a in args])
            return self._op("logsumexp")(stacked, dim=0)
        if head in COMPOSITE_ROWS:
            return COMPOSITE_ROWS[head][1](ns, self._tensor(args[0]))
        if head == "exp":
            return self._op("exp")(self._tensor(args[0]))
        op_name = engine_op_for_head(head)
        if op_name is None or len(args) != 1:
            raise EngineUnavailable(f"no engine op for SymPy {head}")
        return self._op(op_name)(self._tensor(args[0]))

    def _power(self, expr, args):
        base, exponent = args
        e = expr.exp
        if e.is_Rational and not e.free_symbols:
            special = {(1, 2): "sqrt", (-1, 2): "rsqrt", (-1, 1): "reciprocal"}.get((int(e.p), int(e.q)))
            if special:
                return self._op(special)(self._tensor(base))
            return base ** (int(e) if e.is_Integer else float(e))
        if not hasattr(base, "backward"):          # c ** x
            if base > 0:
                return self._op("exp")(exponent * math.log(base))
            return self._tensor(base) ** exponent
        return base ** exponent

    # ---- derivatives ----
    def partials(self, X, keys):
        """Array (rows of X, len(keys)) of the requested partial derivatives."""
        import numpy as np

        ns = self.ns
        X = np.asarray(X, dtype=np.float64)
        rows = X.shape[0]
        deepest = max((len(wrt) for _, wrt in keys), default=0)
        leaves_list = [ns.tensor(X[:, j].copy(), requires_grad=True) for j in range(len(self.variables))]
        leaves = dict(zip(self.variables, leaves_list))
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
                    leaf = leaves_list[self.index[wrt[-1]]]
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
