"""The engine's symbolic side: what its ops compute when a tensor holds SymPy expressions.

Importing this module registers, for every row of the engine's unary table
(``gradcli.autograd.ops.elementwise.UNARY``), a rule on numpy object arrays built from that table's own
SymPy column (``elementwise.sympy_expr``): the table stays the one place per op. Binary arithmetic,
matmul, sums, reshapes and indexing need nothing: numpy runs them on object arrays as they are.

Comparisons are the other hook: when the engine offers ``SYMBOLIC_COMPARE`` (``Tensor._compare`` routes
object arrays to it), ``x > 0`` on symbols becomes ``Indicator(x > 0)``, an expression worth 1 where
the condition holds and 0 elsewhere, so masks such as relu's backward ``g * (x > 0)`` trace. An
Indicator refuses to be a Python bool, so code that branches on it fails loudly (not traceable) instead
of silently taking one branch.

The rest are the rewrites every consumer (exact references, proofs) applies before doing mathematics:
``almost_everywhere`` (derivatives of kinks: DiracDelta -> 0, Heaviside -> Indicator), and
``exact_constants`` (float constants -> the exact numbers they stand for, with a note for each guess).
"""
import functools

import numpy as np
import sympy
from sympy import S

from gradcli.autograd.ops import elementwise
from gradcli.symbolic import signed_symbols, unevaluated


class Indicator(sympy.Function):
    """1 where the condition holds, else 0: the value of a comparison mask on symbols."""

    nargs = 1
    is_real = True
    is_finite = True
    is_nonnegative = True

    @classmethod
    def eval(cls, condition):
        if condition is S.true or condition is True:
            return S.One
        if condition is S.false or condition is False:
            return S.Zero
        return None

    def __bool__(self):
        # numpy's bool conversions (np.where(mask), ~mask, if mask:) land here: refuse, so the
        # trace stops as "data-dependent" instead of quietly treating every mask as true
        raise TypeError(f"cannot determine truth value of the symbolic mask {self.args[0]}")

    def _eval_derivative(self, symbol):
        return S.Zero  # constant almost everywhere

    def _eval_rewrite_as_Piecewise(self, condition, **kwargs):
        return sympy.Piecewise((S.One, condition), (S.Zero, True))

    def _sympystr(self, printer):
        return "[%s]" % printer._print(self.args[0])


_RELATIONS = {np.less: sympy.Lt, np.less_equal: sympy.Le, np.greater: sympy.Gt,
              np.greater_equal: sympy.Ge, np.equal: sympy.Eq, np.not_equal: sympy.Ne}


def _condition(value):
    """The condition an element stands for: an Indicator's condition, or ``value != 0``."""
    if isinstance(value, Indicator):
        return value.args[0]
    if isinstance(value, (bool, np.bool_)):
        return sympy.true if value else sympy.false
    return sympy.Ne(sympy.sympify(value), 0)


def _compare_elements(np_op, a, b):
    if np_op in _RELATIONS:
        relation = _RELATIONS[np_op]
        decided = signed_symbols.relation(relation, a, b)  # two input symbols: by their signs
        return Indicator(relation(a, b) if decided is None else decided)
    if np_op is np.logical_and:
        return Indicator(sympy.And(_condition(a), _condition(b)))
    if np_op is np.logical_or:
        return Indicator(sympy.Or(_condition(a), _condition(b)))
    raise TypeError(f"no symbolic rule for {getattr(np_op, '__name__', np_op)}")


_compare_vectorized = np.frompyfunc(_compare_elements, 3, 1)


def symbolic_compare(np_op, a, b=None):
    """``np_op(a, b)`` (a comparison or a logical op) on object arrays, as an array of Indicators."""
    if np_op is np.logical_not:
        out = np.frompyfunc(lambda e: Indicator(sympy.Not(_condition(e))), 1, 1)(a)
    else:
        out = _compare_vectorized(np_op, a, b)
    return np.asarray(out, dtype=object)


def _where_element(c, a, b):
    condition = _condition(c)
    return Indicator(condition) * sympy.sympify(a) + Indicator(sympy.Not(condition)) * sympy.sympify(b)


_where_vectorized = np.frompyfunc(_where_element, 3, 1)


def symbolic_where(c, a, b):
    """``where(mask, a, b)`` for a mask of symbolic conditions: [c]·a + [not c]·b per element (the
    engine's backward multiplies by the same two masks, so the two sides cancel term by term)."""
    return np.asarray(_where_vectorized(c, a, b), dtype=object)


def _extreme_rule(head):
    def pick(a, b):
        a, b = sympy.sympify(a), sympy.sympify(b)
        decided = signed_symbols.extreme(head, a, b)  # input symbols: by their signs
        return head(a, b) if decided is None else decided

    element = np.frompyfunc(pick, 2, 1)

    def rule(a, b):
        return np.asarray(element(a, b), dtype=object)

    rule.__name__ = f"symbolic_{head.__name__.lower()}"
    return rule


def _round_element(e, decimals=0):
    # floor(x + 1/2) is round-half-to-even except at the half-integers, where round jumps (a kink)
    scale = sympy.Integer(10) ** int(decimals)
    return sympy.floor(sympy.sympify(e) * scale + S.Half) / scale


def _trunc_element(e):
    e = sympy.sympify(e)
    return sympy.sign(e) * sympy.floor(sympy.Abs(e))


def symbolic_round(a, decimals=0):
    return np.asarray(np.frompyfunc(lambda e: _round_element(e, decimals), 1, 1)(a), dtype=object)


def symbolic_trunc(a, decimals=0):
    if decimals:  # as the numeric forward: decimals round (torch.trunc itself has none)
        return symbolic_round(a, decimals)
    return np.asarray(np.frompyfunc(_trunc_element, 1, 1)(a), dtype=object)


def _unary_element(name, e):
    e = sympy.sympify(e)
    if unevaluated.ON[-1]:
        return unevaluated.unary_expr(name, e)
    return elementwise.sympy_expr(name, e)


def _unary_rule(name):
    element = np.frompyfunc(lambda e: _unary_element(name, e), 1, 1)

    def rule(a):
        return np.asarray(element(a), dtype=object)  # frompyfunc returns a bare object for 0-d input

    rule.__name__ = f"symbolic_{name}"
    return rule


def register():
    """Fill the engine's symbolic hooks (idempotent; runs at import)."""
    for name in elementwise.UNARY:
        elementwise.SYMBOLIC_UNARY.setdefault(name, _unary_rule(name))
    ops = getattr(elementwise, "SYMBOLIC_OPS", None)
    if isinstance(ops, dict):
        ops.setdefault("where", symbolic_where)
        ops.setdefault("maximum", _extreme_rule(sympy.Max))  # maximum, minimum and clamp's forward
        ops.setdefault("minimum", _extreme_rule(sympy.Min))
        ops.setdefault("round", symbolic_round)
        ops.setdefault("trunc", symbolic_trunc)
    from gradcli.autograd import tensor
    hooks = getattr(tensor, "SYMBOLIC_COMPARE", None)
    if isinstance(hooks, dict):
        hooks.setdefault("compare", symbolic_compare)


def comparisons_trace():
    """Whether the engine routes comparisons of symbolic tensors here (relu masks then trace)."""
    from gradcli.autograd import tensor
    return isinstance(getattr(tensor, "SYMBOLIC_COMPARE", None), dict)


register()


# ---- rewrites before mathematics ------------------------------------------------------------------
def almost_everywhere(expr):
    """Derivatives as they hold away from kinks: DiracDelta -> 0, Heaviside(a) -> Indicator(a > 0).

    The value at a kink itself is a convention (SymPy's Heaviside(0) = 1/2, torch's relu'(0) = 0);
    gradients are compared where the function is differentiable."""
    if not isinstance(expr, sympy.Basic):
        return sympy.sympify(expr)
    if expr.has(sympy.DiracDelta):
        expr = expr.replace(lambda e: isinstance(e, sympy.DiracDelta), lambda e: S.Zero)
    if expr.has(sympy.Derivative):  # floor/ceiling/sign are flat away from their jumps
        expr = expr.replace(lambda e: isinstance(e, (sympy.Derivative, sympy.Subs)) and _piecewise_constant(e),
                            lambda e: S.Zero)
        expr = expr.replace(lambda e: isinstance(e, sympy.Subs) and e.expr == 0, lambda e: S.Zero)
    if expr.has(sympy.Heaviside):
        expr = expr.replace(lambda e: isinstance(e, sympy.Heaviside), lambda e: step(e.args[0]))
    if expr.has(Indicator):
        expr = expr.replace(lambda e: isinstance(e, Indicator), lambda e: indicator_normal_form(e.args[0]))
        expr = expr.replace(lambda e: isinstance(e, sympy.Pow) and isinstance(e.base, Indicator)
                            and e.exp.is_positive, lambda e: e.base)  # [c]^n = [c]
    return expr


def step(u):
    """[u > 0] with one orientation per pair u, -u ([-u > 0] = 1 - [u > 0] away from u = 0), so that
    masks written as x > y, y < x, x - y >= 0 or Heaviside(x - y) all become the same expression.
    A comparison with a Max/Min is split into comparisons of its arguments first (``positive``)."""
    return positive(u, strict=True)


def _oriented_step(u):
    if u.could_extract_minus_sign():
        return 1 - Indicator(sympy.Gt(-u, 0))
    return Indicator(sympy.Gt(u, 0))


def _extreme_term(d):
    """(rest, sign, m) with d = rest + sign·m for a Max/Min m of d (sign ±1), or None."""
    for m in sorted(d.atoms(sympy.Max, sympy.Min), key=sympy.default_sort_key):
        rest, coeff = d.as_independent(m, as_Add=True)
        coeff = coeff / m if coeff.has(m) else None
        if coeff in (S.One, S.NegativeOne) and not rest.has(m):
            return rest, int(coeff), m
    return None


def positive(d, strict=True):
    """[d > 0] (``strict``) or [d >= 0] as sums and products of ``_oriented_step``s.

    The exact logic of Max/Min comes first: ``u - Max(a, b) > 0`` is ``[u - a > 0]·[u - b > 0]``,
    ``u - Min(a, b) > 0`` is "either", and so on; a comparison of two equal expressions is decided
    by ``strict`` (``x >= Max(x, y)`` is ``[x - y >= 0]``, not 0). What is left compares two different
    expressions, and there ``>=`` is taken as ``>`` (they are equal on a set of measure zero).
    SymPy's derivative of Max (``Heaviside(x - Max(y, z))``) and an engine mask ``x >= amax(x)``
    therefore both become ``[x - y > 0]·[x - z > 0]``."""
    d = sympy.sympify(d)
    if d.is_number:
        return S.One if (d > 0 if strict else d >= 0) else S.Zero
    split = _extreme_term(d)
    if split is None:
        return _oriented_step(d)
    rest, sign, m = split
    parts = [positive(rest + sign * a, strict) for a in m.args]
    every = (sign > 0) == isinstance(m, sympy.Min)  # rest + Min > 0, rest - Max > 0: all of them
    if every:
        return sympy.Mul(*parts)
    return 1 - sympy.Mul(*[1 - p for p in parts])


def _equal(lhs, rhs):
    """[lhs = rhs]: an element equal to a Max/Min of a set it belongs to holds on a set of positive
    measure (``x == amax(x)`` is "x is the largest"); any other equality of two different
    expressions holds on a set of measure zero and counts as false."""
    for a, b in ((lhs, rhs), (rhs, lhs)):
        if isinstance(b, (sympy.Max, sympy.Min)) and a in b.args:
            largest = isinstance(b, sympy.Max)
            return sympy.Mul(*[positive(a - c if largest else c - a, strict=False) for c in b.args if c != a])
    return S.Zero


def comparison_differences(d):
    """The differences whose zero is a kink of the comparison ``d > 0`` (Max/Min split into their
    arguments, as ``positive`` does); numbers are left out."""
    d = sympy.sympify(d)
    split = _extreme_term(d) if not d.is_number else None
    if split is None:
        return [] if d.is_number else [d]
    rest, sign, m = split
    return [e for a in m.args for e in comparison_differences(rest + sign * a)]


def indicator_normal_form(condition):
    """An Indicator of any condition as sums and products of ``step``s, valid away from the set
    where a compared pair is equal (measure zero): x >= y is x > y, Eq is false, Ne is true
    (except an element compared with a Max/Min it belongs to: see ``positive`` and ``_equal``)."""
    if condition is S.true or condition is True:
        return S.One
    if condition is S.false or condition is False:
        return S.Zero
    if isinstance(condition, sympy.Eq):
        return _equal(condition.lhs, condition.rhs)
    if isinstance(condition, sympy.Ne):
        return 1 - _equal(condition.lhs, condition.rhs)
    if isinstance(condition, (sympy.Gt, sympy.Ge)):
        return positive(condition.lhs - condition.rhs, strict=isinstance(condition, sympy.Gt))
    if isinstance(condition, (sympy.Lt, sympy.Le)):
        return positive(condition.rhs - condition.lhs, strict=isinstance(condition, sympy.Lt))
    if isinstance(condition, sympy.Not):
        return 1 - indicator_normal_form(condition.args[0])
    if isinstance(condition, sympy.And):
        return sympy.Mul(*[indicator_normal_form(c) for c in condition.args])
    if isinstance(condition, sympy.Or):
        return 1 - sympy.Mul(*[1 - indicator_normal_form(c) for c in condition.args])
    return Indicator(condition)


_FLAT = (sympy.floor, sympy.ceiling, sympy.sign, sympy.Heaviside)


def _piecewise_constant(derivative):
    inner = derivative.expr
    while isinstance(inner, (sympy.Derivative, sympy.Subs)):
        inner = inner.expr
    return isinstance(inner, _FLAT + (Indicator,))


def indicators_as_piecewise(expr):
    if expr.has(Indicator):
        expr = expr.replace(lambda e: isinstance(e, Indicator),
                            lambda e: sympy.Piecewise((S.One, e.args[0]), (S.Zero, True)))
    return expr


_KNOWN_CONSTANTS = [sympy.pi, sympy.E]


def exact_constant(value):
    """The exact number a float constant in the code stands for, and a note if that is a guess
    (see ``_exact_constant``; cached: identifying a constant costs a PSLQ search)."""
    return _exact_constant(float(value))


@functools.lru_cache(maxsize=4096)
def _exact_constant(value):
    """The exact number a float constant in the code stands for, and a note if that is a guess.

    A short decimal (0.5, 1.001, 1e-3) is read as written. A float with all 16-17 digits is usually
    a computed constant (2/math.sqrt(math.pi) in erf's rule): it is identified with a closed form
    in pi, e, logs and roots when one rounds to exactly that float, and read as its shortest
    round-tripping decimal otherwise."""
    f = float(value)
    if not np.isfinite(f):
        return sympy.Float(f), None
    text = repr(f)
    digits = len(text.split("e")[0].replace("-", "").replace(".", "").lstrip("0"))
    as_written = sympy.Rational(text)
    if digits < 15:
        return as_written, None
    try:
        guess = sympy.nsimplify(f, _KNOWN_CONSTANTS, tolerance=4 * np.spacing(abs(f)))
    except Exception:  # nsimplify gives up in odd ways on odd floats; the binary value is always right
        return as_written, None
    if guess.has(sympy.Float) or guess == as_written or float(guess) != f:
        return as_written, None
    return guess, f"the constant {text} was read as {guess}"


def exact_constants(expr, notes=None):
    """``expr`` with every Float replaced by ``exact_constant``; guesses appended to ``notes``."""
    floats = expr.atoms(sympy.Float) if isinstance(expr, sympy.Basic) else ()
    if not floats:
        return expr
    mapping = {}
    for f in floats:
        mapping[f], note = exact_constant(f)
        if note and notes is not None and note not in notes:
            notes.append(note)
    return expr.xreplace(mapping)
