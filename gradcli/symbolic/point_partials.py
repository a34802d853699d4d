"""First partial derivatives of a traced expression at one point, without SymPy's ``diff``.

The exact reference needs ∂y/∂xᵢ of each traced output at one point, not the derivative as a
formula. SymPy's ``diff`` builds that formula (and queries the assumptions of every new node while
it does: ~50 ms per Function in a forked checker, most of the exact check's cost). Here the chain
rule runs on numbers instead: the tree is evaluated once in mpmath (at the caller's precision,
40 digits), then every node's adjoint is accumulated from the root down (reverse accumulation).
Each local derivative is the same closed form SymPy's derivative has (exp' = exp, Abs' = sign,
Max' = 1 on the largest argument, a Piecewise's derivative is its chosen branch's, an Indicator's
is 0), so the result is the exact derivative's value, rounded at 40 digits only.

An element is *at a kink* for xᵢ when a switch its derivative would contain is zero: the switches
(``evaluation.switch_arguments``) of every non-smooth node on the way to xᵢ and of everything the
product rule multiplies its derivative by (the other factors of a product, the arguments of a
function), but not of the other terms of a sum -- the switches SymPy's derivative formula would
hold. A Max/Min is at a kink where its largest (smallest) value is attained twice.

A node it has no rule for raises ``Unsupported``; the caller then differentiates that term with
SymPy as before (jacobian_values.py).
"""
import mpmath
import sympy

from gradcli.symbolic.evaluation import _heaviside, _is_zero, _MODULES, switch_arguments
from gradcli.symbolic.mp_compile import _FUNCTIONS, _NUMBERS, _RELATIONS, mp_function
from gradcli.symbolic.ops import Indicator, almost_everywhere, indicators_as_piecewise


class Unsupported(Exception):
    """A node this module has no value or derivative rule for."""


_FLAT = (sympy.sign, sympy.floor, sympy.ceiling, sympy.Heaviside, Indicator)   # derivative 0 (a.e.)
_SWITCHES = _FLAT + (sympy.Abs, sympy.Max, sympy.Min, sympy.Piecewise)
_VALUE_FUNCTIONS = dict(_FUNCTIONS, Heaviside=_heaviside, sign=mpmath.sign)
_ONE, _ZERO = mpmath.mpf(1), mpmath.mpf(0)
_NO_KINKS = (False, frozenset(), frozenset())

# f'(u) of one-argument functions, from u and f(u) (the closed forms SymPy's derivatives have)
_DERIVATIVES = {
    sympy.exp: lambda u, y: y,
    sympy.log: lambda u, y: 1 / u,
    sympy.sin: lambda u, y: mpmath.cos(u),
    sympy.cos: lambda u, y: -mpmath.sin(u),
    sympy.tan: lambda u, y: 1 + y * y,
    sympy.sinh: lambda u, y: mpmath.cosh(u),
    sympy.cosh: lambda u, y: mpmath.sinh(u),
    sympy.tanh: lambda u, y: 1 - y * y,
    sympy.atan: lambda u, y: 1 / (1 + u * u),
    sympy.asin: lambda u, y: 1 / mpmath.sqrt(1 - u * u),
    sympy.acos: lambda u, y: -1 / mpmath.sqrt(1 - u * u),
    sympy.asinh: lambda u, y: 1 / mpmath.sqrt(u * u + 1),
    sympy.acosh: lambda u, y: 1 / (mpmath.sqrt(u - 1) * mpmath.sqrt(u + 1)),
    sympy.atanh: lambda u, y: 1 / (1 - u * u),
    sympy.erf: lambda u, y: 2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-u * u),
    sympy.erfc: lambda u, y: -2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-u * u),
}
_GENERIC: dict = {}   # (function class, number of arguments) -> compiled partials, or None


class PointPartials:
    """Values and partial derivatives of expressions at one point; node values are shared between
    the expressions asked about (a matmul's or a reduction's terms share their subexpressions)."""

    def __init__(self, point):
        self.point = point       # {symbol: mpf}
        self.values = {}         # node -> mpmath value (or bool, for conditions); numbers are not kept
        self.branch = {}         # Piecewise node -> the expression of the branch chosen at the point
        self.kink_memo = {}      # node -> _kinks(node): the same for every expression asked about

    def partials(self, expr):
        """[(symbol, ∂expr/∂symbol, at_kink)] for every free symbol of ``expr``."""
        self.value(expr)
        adjoint = {expr: _ONE}
        for node in reversed(self._order(expr)):
            weight = adjoint.get(node)
            if weight is None:
                continue
            for child, local in self._local(node):
                adjoint[child] = adjoint.get(child, _ZERO) + weight * local
        flagged = self._kinks(expr, self.kink_memo)[2]
        return [(s, adjoint.get(s, _ZERO), s in flagged) for s in expr.free_symbols]

    def _children(self, e):
        """The subexpressions the derivative of ``e`` flows into (a Piecewise: its chosen branch);
        numbers are left out (no symbol under them; hashing a Float costs more than its value)."""
        if isinstance(e, sympy.Piecewise):
            return [self.branch[e]]
        if isinstance(e, _FLAT) or isinstance(e, sympy.logic.boolalg.Boolean) or type(e) in _RELATIONS:
            return []
        return [a for a in e.args if not a.is_Number]

    def _order(self, expr):
        """The nodes under ``expr``, each after every node it contains (a depth-first post-order
        without repeats: a shared subexpression is listed once, after all of its own subexpressions,
        so that its adjoint is complete before it is passed on)."""
        order, done, stack = [], set(), [(expr, iter(self._children(expr)))]
        on_stack = {expr}
        while stack:
            node, children = stack[-1]
            for child in children:
                if child not in done and child not in on_stack:
                    on_stack.add(child)
                    stack.append((child, iter(self._children(child))))
                    break
            else:
                stack.pop()
                done.add(node)
                order.append(node)
        return order

    # ---- values ------------------------------------------------------------------------------------
    def value(self, e):
        if e.is_Number:
            return _number(e)
        known = self.values.get(e)
        if known is None:
            known = self.values[e] = self._compute(e)
        return known

    def _compute(self, e):
        if e.is_Symbol:
            if e not in self.point:
                raise Unsupported(f"free symbol {e}")
            return self.point[e]
        if e.is_Number or e.is_NumberSymbol or e in _NUMBERS or e is sympy.S.ComplexInfinity:
            return _number(e)
        if e is sympy.true or e is sympy.false:
            return bool(e)
        if isinstance(e, sympy.Piecewise):
            for branch, cond in e.args:
                if self.value(cond):
                    self.branch[e] = branch
                    return self.value(branch)
            raise Unsupported("a Piecewise with no branch for this point")
        if isinstance(e, Indicator):
            return _ONE if self.value(e.args[0]) else _ZERO
        if type(e) in _RELATIONS:
            lhs, rhs = (self.value(a) for a in e.args)
            return _RELATIONS[type(e)](lhs, rhs)
        if isinstance(e, (sympy.And, sympy.Or, sympy.Not)):
            parts = [self.value(a) for a in e.args]
            return all(parts) if isinstance(e, sympy.And) else any(parts) if isinstance(e, sympy.Or) else not parts[0]
        args = [self.value(a) for a in e.args]
        if e.is_Add:
            return mpmath.fsum(args)
        if e.is_Mul:
            return mpmath.fprod(args)
        if e.is_Pow:
            base, exp = args
            return mpmath.sqrt(base) if e.exp == sympy.S.Half else base ** exp
        function = _VALUE_FUNCTIONS.get(type(e).__name__)
        if function is None or not (isinstance(e, sympy.Function) or e.is_Function):
            raise Unsupported(f"no mpmath rule for {type(e).__name__}")
        return function(*args)

    # ---- local derivatives -------------------------------------------------------------------------
    def _local(self, e):
        """[(child, ∂e/∂child)] at the point (only children whose derivative is not 0 a.e.)."""
        if not e.args or isinstance(e, _FLAT) or isinstance(e, sympy.logic.boolalg.Boolean) \
                or type(e) in _RELATIONS:
            return []
        if isinstance(e, sympy.Piecewise):
            return [(self.branch[e], _ONE)]
        values = self.values
        if e.is_Add:
            return [(a, _ONE) for a in e.args if not a.is_Number]
        if e.is_Mul:
            args = [self.value(a) for a in e.args]
            return [(a, mpmath.fprod(args[:k] + args[k + 1:])) for k, a in enumerate(e.args) if not a.is_Number]
        if e.is_Pow:
            base, exp = e.args
            b, x = self.value(base), self.value(exp)
            out = [(base, x * b ** (x - 1))]
            if exp.free_symbols:
                out.append((exp, values[e] * mpmath.log(b)))
            return out
        if isinstance(e, (sympy.Max, sympy.Min)):
            target = values[e]
            chosen = next(a for a in e.args if self.value(a) == target)
            return [] if chosen.is_Number else [(chosen, _ONE)]
        if isinstance(e, sympy.Abs):
            (u,) = e.args
            if isinstance(self.value(u), mpmath.mpc):
                raise Unsupported("Abs of a complex value")
            return [] if u.is_Number else [(u, mpmath.sign(values[u]))]
        rule = _DERIVATIVES.get(type(e)) if len(e.args) == 1 else None
        if rule is not None:
            (u,) = e.args
            return [] if u.is_Number else [(u, rule(values[u], values[e]))]
        partials = _generic(type(e), len(e.args))
        return [(a, d) for a, d in zip(e.args, partials(*[self.value(a) for a in e.args])) if not a.is_Number]

    # ---- kinks -------------------------------------------------------------------------------------
    def _kinks(self, e, memo):
        """(any switch in e is zero, symbols whose derivative is not 0 a.e., symbols whose derivative
        formula holds a switch that is zero)."""
        if not e.args and not e.is_Symbol:
            return _NO_KINKS
        found = memo.get(e)
        if found is not None:
            return found
        if e.is_Symbol:
            found = (False, frozenset((e,)), frozenset())
        elif e not in self.values:
            found = _NO_KINKS
        else:
            children = [self.branch[e]] if isinstance(e, sympy.Piecewise) else \
                [a for a in e.args if a.args and a in self.values or a.is_Symbol]
            parts = [self._kinks(a, memo) for a in children]
            own = isinstance(e, _SWITCHES) and self._switch_is_zero(e)
            zero = own or any(p[0] for p in parts)
            varying = frozenset().union(*(p[1] for p in parts)) if not isinstance(e, _FLAT) else frozenset()
            flagged = frozenset().union(*(p[2] for p in parts)) if not isinstance(e, _FLAT) else frozenset()
            if isinstance(e, _FLAT) or (isinstance(e, sympy.Piecewise) and not own):
                pass
            elif e.is_Add:
                pass
            elif e.is_Mul:   # d(a·b) = a'·b + a·b': each factor's derivative carries the other factors
                for k, p in enumerate(parts):
                    if any(q[0] for j, q in enumerate(parts) if j != k):
                        flagged |= p[1]
            elif zero:      # f(u, v)' = ∂f(u, v)·u' + ...: the arguments themselves are in the formula
                flagged |= varying
            found = (zero, varying, flagged)
        memo[e] = found
        return found

    def _switch_is_zero(self, e):
        values = self.values
        if isinstance(e, (sympy.Abs, sympy.sign)):
            return _is_zero(self.value(e.args[0]))
        if isinstance(e, (sympy.Max, sympy.Min)):
            return sum(1 for a in e.args if self.value(a) == values[e]) > 1
        if isinstance(e, (sympy.floor, sympy.ceiling)):
            u = self.value(e.args[0])
            return not isinstance(u, mpmath.mpc) and u == mpmath.floor(u)
        return any(_is_zero(self.value(s)) for s in switch_arguments(e))


def _number(e):
    if e.is_Float:   # first: a Float's hash (for the lookup below) costs more than this
        return mpmath.mpf(e._mpf_)
    if e.is_Integer:
        return mpmath.mpf(int(e))
    if e.is_Rational:
        return mpmath.mpf(int(e.p)) / mpmath.mpf(int(e.q))
    if e in _NUMBERS:
        return _NUMBERS[e]()
    if e is sympy.S.ComplexInfinity or e is sympy.S.NaN:
        return mpmath.nan
    raise Unsupported(f"the number {e}")


def _generic(cls, nargs):
    """∂f/∂argument of a function without a rule above, from SymPy's derivative of f(d1, ..., dn)
    (real dummies), compiled once per function and argument count."""
    key = (cls, nargs)
    if key not in _GENERIC:
        _GENERIC[key] = None
        dummies = [sympy.Dummy(f"d{k}", real=True) for k in range(nargs)]
        try:
            f = cls(*dummies)
        except Exception:  # noqa: BLE001 -- a head that does not take plain arguments
            f = None
        if isinstance(f, cls):
            partials = [almost_everywhere(f.diff(d)) for d in dummies]
            if not any(p.has(sympy.Derivative, sympy.Subs) for p in partials):
                _GENERIC[key] = mp_function(dummies, [indicators_as_piecewise(p) for p in partials], _MODULES)
    if _GENERIC[key] is None:
        raise Unsupported(f"no derivative rule for {cls.__name__}")
    return _GENERIC[key]
