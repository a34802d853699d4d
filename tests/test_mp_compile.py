"""compile_mp: SymPy expressions evaluated in mpmath by closures over the tree, as lambdify does.

Every expression is evaluated both ways at 40 digits, at the same exact binary points, and the
values must agree to the last of those digits (the two may add terms in another order: 1e-38
relative at most); the node kinds are those the exact check meets after ``almost_everywhere`` and
``indicators_as_piecewise`` (Piecewise, comparisons, Max/Min, sign, Heaviside, rational powers).
"""
import mpmath
import pytest
import sympy

from gradcli.symbolic.evaluation import _MODULES
from gradcli.symbolic.mp_compile import NotCompiled, compile_mp, mp_function

x, y = sympy.symbols("_c0 _c1", real=True)
HALF = sympy.Rational(1, 2)

EXPRESSIONS = [
    x * y + 3 * x ** 2 - sympy.Rational(2, 7) * y,
    sympy.sqrt(x * x + 1) - 1 / sympy.sqrt(y * y + 2) + 1 / x,
    sympy.exp(-sympy.Float(1.5) * x) / (1 + sympy.exp(-sympy.Float(1.5) * x)),
    sympy.log(1 + sympy.exp(sympy.Float(0.1) * x)) * sympy.tanh(y) + sympy.atan(x) * sympy.erf(y),
    x ** sympy.Rational(1, 3) + y ** sympy.Float(2.5),  # negative x: a complex value, as lambdify's
    sympy.Max(x, y, 0) - sympy.Min(x, 2 * y) + sympy.Abs(x - y),
    sympy.sign(x) * sympy.Heaviside(y) + sympy.DiracDelta(x),
    sympy.Piecewise((x ** 2, x > y), (y, sympy.And(x <= y, y > 0)), (sympy.pi * x + sympy.E, True)),
    sympy.Piecewise((1, sympy.Or(sympy.Eq(x, 0), sympy.Ne(y, 1))), (0, True)) * sympy.cosh(x) + sympy.asinh(y),
    sympy.floor(x) + sympy.ceiling(y) + sympy.gamma(HALF + x * x) + sympy.loggamma(2 + y * y),
    sympy.EulerGamma * x + sympy.I * y,
]
POINTS = [(1.5, -0.25), (-2.0, 3.0), (0.0, 1.0), (2.0 ** -30, -7.5)]


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=range(len(EXPRESSIONS)))
def test_the_same_values_as_lambdify_at_40_digits(expr):
    compiled = compile_mp([x, y], expr, _MODULES[0])
    reference = sympy.lambdify([x, y], expr, modules=_MODULES)
    with mpmath.workdps(40):
        for a, b in POINTS:
            args = (mpmath.mpf(a), mpmath.mpf(b))
            try:
                want = mpmath.mpmathify(reference(*args))
            except ZeroDivisionError:  # 1/x at 0: raised alike
                with pytest.raises(ZeroDivisionError):
                    compiled(*args)
                continue
            got = mpmath.mpmathify(compiled(*args))
            if mpmath.isnan(want):
                assert mpmath.isnan(got)
            else:
                assert mpmath.almosteq(got, want, rel_eps=mpmath.mpf(10) ** -38, abs_eps=mpmath.mpf(10) ** -60), \
                    (a, b, got, want)


def test_a_float_is_its_exact_binary_value_and_a_rational_is_taken_at_the_callers_precision():
    third = compile_mp([x], sympy.Rational(1, 3) + 0 * x)
    tenth = compile_mp([x], sympy.Float(0.1) * x)
    with mpmath.workdps(40):
        assert third(mpmath.mpf(1)) == mpmath.mpf(1) / 3
        assert tenth(mpmath.mpf(1)) == mpmath.mpf(0.1)  # the binary 0.1, not the decimal one
        assert tenth(mpmath.mpf(1)) != mpmath.mpf("0.1")


def test_a_list_gives_a_list_in_order():
    both = compile_mp([x, y], [x + y, x - y, sympy.Integer(4)])
    assert both(mpmath.mpf(3), mpmath.mpf(1)) == [4, 2, 4]


def test_unknown_nodes_fall_back_to_lambdify():
    expr = sympy.besselj(0, x) + sympy.polygamma(1, x)
    with pytest.raises(NotCompiled):
        compile_mp([x], expr)
    fn = mp_function([x], expr, _MODULES)
    with mpmath.workdps(40):
        assert mpmath.almosteq(fn(mpmath.mpf(2)), mpmath.besselj(0, 2) + mpmath.polygamma(1, 2),
                               rel_eps=mpmath.mpf(10) ** -38)


def test_a_symbol_not_among_the_names_is_not_compiled():
    with pytest.raises(NotCompiled):
        compile_mp([x], x + y)
