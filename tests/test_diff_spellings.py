"""Every spelling gradcli diff accepts beyond plain function calls, with exact values checked against mpmath:
SymPy's capitalised names, reciprocal/inverse trig and hyperbolic functions, roots, steps, special and ML
functions, |x|, superscripts, sin^2 x, Unicode, e/E, and the messages for names it does not know."""
import mpmath
import pytest
import sympy
from click.testing import CliRunner

from gradcli.cli import main
from gradcli.expr.api import DiffRequest, run
from gradcli.expr.errors import ExpressionError
from gradcli.expr.parser import make_symbol, parse

x = make_symbol("x")


def _sig(t):
    return 1 / (1 + mpmath.exp(-t))


# (expression, mpmath reference, point): df/dx at the point must match mpmath.diff at 30 digits
CASES = [
    ("cbrt(x)", mpmath.cbrt, "8"), ("root(x, 3)", mpmath.cbrt, "2"), ("root(x, 5)", lambda t: mpmath.root(t, 5), "3"),
    ("pow(x, 3)", lambda t: t**3, "2"), ("exp2(x)", lambda t: 2**t, "1.5"),
    ("acot(x)", mpmath.acot, "2"), ("arccot(x)", mpmath.acot, "0.5"), ("asec(x)", mpmath.asec, "2"),
    ("arcsec(x)", mpmath.asec, "3"), ("acsc(x)", mpmath.acsc, "2"), ("arccsc(x)", mpmath.acsc, "1.5"),
    ("coth(x)", mpmath.coth, "1"), ("sech(x)", mpmath.sech, "1"), ("csch(x)", mpmath.csch, "1"),
    ("acoth(x)", mpmath.acoth, "2"), ("asech(x)", mpmath.asech, "0.5"), ("acsch(x)", mpmath.acsch, "1"),
    ("Abs(x)", abs, "-2"), ("Max(x, 1 - x)", lambda t: max(t, 1 - t), "2"), ("Min(x, x^2)", lambda t: min(t, t**2), "2"),
    ("Heaviside(x)*x^2", lambda t: t**2 if t > 0 else 0, "1.5"), ("floor(x)*x", lambda t: mpmath.floor(t) * t, "2.5"),
    ("ceiling(x) + x^2", lambda t: mpmath.ceil(t) + t**2, "1.5"), ("ceil(x)*x", lambda t: mpmath.ceil(t) * t, "0.5"),
    ("gamma(x)", mpmath.gamma, "2.5"), ("loggamma(x)", mpmath.loggamma, "3"), ("lgamma(x)", mpmath.loggamma, "4"),
    ("digamma(x)", mpmath.digamma, "2"), ("besselj(0, x)", lambda t: mpmath.besselj(0, t), "1"),
    ("LambertW(x)", mpmath.lambertw, "1"), ("silu(x)", lambda t: t * _sig(t), "1"),
    ("mish(x)", lambda t: t * mpmath.tanh(mpmath.log(1 + mpmath.exp(t))), "-0.5"),
    ("elu(x)", lambda t: t if t > 0 else mpmath.expm1(t), "-1"), ("elu(x, 0.5)", lambda t: mpmath.expm1(t) / 2, "-0.7"),
    ("leaky_relu(x)", lambda t: t if t > 0 else t / 100, "-3"), ("leaky_relu(x, 0.2)", lambda t: t / 5, "-1"),
    ("xlogy(2, x)", lambda t: 2 * mpmath.log(t), "3"), ("|x - 2|", lambda t: abs(t - 2), "1"), ("x|x|", lambda t: t * abs(t), "-2"),
    ("x²", lambda t: t**2, "3"), ("x⁻¹", lambda t: 1 / t, "2"), ("3x² + x³", lambda t: 3 * t**2 + t**3, "1"),
    ("sin^2(x)", lambda t: mpmath.sin(t)**2, "1"), ("sin^2 x", lambda t: mpmath.sin(t)**2, "0.5"),
    ("sin²x + cos x", lambda t: mpmath.sin(t)**2 + mpmath.cos(t), "1"), ("√(x + 1)", lambda t: mpmath.sqrt(t + 1), "3"),
    ("π·x×x", lambda t: mpmath.pi * t * t, "1"), ("E**x", mpmath.exp, "1"), ("e^(2x)", lambda t: mpmath.exp(2 * t), "1"),
]


@pytest.mark.parametrize("expression, reference, point", CASES, ids=[c[0] for c in CASES])
def test_spelling_derivative_matches_mpmath(expression, reference, point):
    result = run(DiffRequest([expression], at=[point], simplify=False))
    cell = next(c for c in result.points[0].cells if c.key == (0, ("x",)))
    with mpmath.workdps(30):
        truth = mpmath.diff(reference, mpmath.mpf(point))
        assert abs(mpmath.mpf(cell.value_text) - truth) <= 1e-9 * abs(truth)
    assert result.exit_code == 0


def test_symbolic_only_functions_say_so_and_refuse_numpy_code():
    result = run(DiffRequest(["gamma(x)"], at=["2.5"], simplify=False))
    assert [w.text["ascii"] for w in result.warnings] == [
        "autograd column not available: gamma is computed symbolically only (the engine has no gamma op)"]
    outcome = CliRunner().invoke(main, ["diff", "LambertW(x)", "--format", "python"])
    assert outcome.exit_code == 2
    assert outcome.output == ("error: --format python: LambertW is computed symbolically only: gradcli cannot "
                              "write it as numpy code\n")


def test_new_functions_run_through_the_engine():
    # acot..acsch are rewritten to atan(1/u), 1/cosh(u), ...: the autograd column has their numbers
    result = run(DiffRequest(["acot(x) + sech(x) + acsch(x) + floor(x)*x + silu(x)"], at=["0.7"], simplify=False))
    point = result.points[0]
    assert point.ok and all(c.autograd is not None and c.ok for c in point.cells)


@pytest.mark.parametrize("text, expected", [
    ("|x|", sympy.Abs(x)), ("2|x|", 2 * sympy.Abs(x)), ("||x| - 1|", sympy.Abs(sympy.Abs(x) - 1)),
    ("|x|·|x - 1|", sympy.Abs(x) * sympy.Abs(x - 1)), ("x²", x**2), ("x⁻²", x**-2), ("sin^2(x)", sympy.sin(x)**2),
    ("sin^2 x", sympy.sin(x)**2), ("cos³x", sympy.cos(x)**3), ("√x", sympy.sqrt(x)), ("π", sympy.pi),
    ("2×x·x", 2 * x**2), ("E", sympy.E), ("e^x", sympy.exp(x)), ("Abs(x)", sympy.Abs(x)),
    ("cbrt(x)", x**sympy.Rational(1, 3)), ("digamma(x)", sympy.polygamma(0, x)),
])
def test_spelling_builds_the_expected_expression(text, expected):
    assert parse(text).expr == expected


def test_a_variable_named_e_needs_wrt():
    assert parse("e*x").expr == sympy.E * x
    assert parse("e*x").notes == ["e is Euler's number 2.718...; for a variable named e pass --wrt e"]
    result = run(DiffRequest(["e*x"], wrt=["e", "x"]))
    assert [f.text["ascii"] for f in result.formulas] == ["x", "e"]   # here e is the variable e
    assert result.variables == ["e", "x"]


@pytest.mark.parametrize("text, message", [
    ("sinn(x)", "unknown function 'sinn': did you mean sin? (write sinn*(...) to multiply) at column 1 in "
                "expression 'sinn(x)'"),
    ("tahn(x)", "unknown function 'tahn': did you mean tanh? (write tahn*(...) to multiply) at column 1 in "
                "expression 'tahn(x)'"),
    ("Sin(x)", "unknown function 'Sin': did you mean sin? (write Sin*(...) to multiply) at column 1 in "
               "expression 'Sin(x)'"),
    ("foo(x)", "unknown function 'foo' (write foo*(...) to multiply) at column 1 in expression 'foo(x)'"),
    ("Piecewise(x)", "Piecewise needs conditions, which the grammar has no syntax for; write it with heaviside(), "
                     "max/min, abs or sign at column 1 in expression 'Piecewise(x)'"),
    ("sin^-1(x)", "sin^-1 is ambiguous: write asin(x) for the inverse function or 1/sin(x) for the reciprocal at "
                  "column 1 in expression 'sin^-1(x)'"),
    ("|x", "unclosed '|' at column 1 in expression '|x'"),
    ("(|x)|", "')' inside |...|: close the absolute value first at column 4 in expression '(|x)|'"),
])
def test_unknown_and_refused_names(text, message):
    with pytest.raises(ExpressionError) as error:
        parse(text)
    assert str(error.value) == message


def test_glued_names_are_echoed_with_a_note():
    assert parse("sinx").notes == ["'sinx' is read as one variable named sinx; for the function write sin(x)"]
    assert parse("xy + 1").notes == ["'xy' is read as one variable named xy; for a product write x*y"]
    assert parse("theta + alpha").notes == []
    result = CliRunner().invoke(main, ["diff", "xy"])
    assert "note: 'xy' is read as one variable named xy; for a product write x*y" in result.output


def test_printed_derivatives_read_back():
    result = run(DiffRequest(["acoth(x) + floor(x) + silu(x) + |x|^3 + LambertW(x)"]))
    (formula,) = result.formulas
    again = parse(formula.text["ascii"]).expr
    with mpmath.workdps(30):
        assert abs(again.subs(x, sympy.Rational(7, 2)).evalf(30)
                   - run(DiffRequest([formula.text["ascii"]], at=["3.5"], simplify=False)).points[0].cells[0].value) < 1e-9


def test_numpy_code_for_the_new_functions_computes_the_right_numbers():
    expression = "acot(x) + sech(x) + acsch(x) + silu(x) + floor(x)*x + mish(x) + elu(x - 2)"
    outcome = CliRunner().invoke(main, ["diff", expression, "--format", "python"])
    assert outcome.exit_code == 0, outcome.output
    namespace = {}
    exec(compile(outcome.output, "<generated>", "exec"), namespace)  # gradcli's own generated code
    reference = [lambda t: mpmath.acot(t), mpmath.sech, mpmath.acsch, lambda t: t * _sig(t),
                 lambda t: mpmath.floor(t) * t, lambda t: t * mpmath.tanh(mpmath.log(1 + mpmath.exp(t))),
                 lambda t: mpmath.expm1(t - 2)]
    with mpmath.workdps(30):
        point = mpmath.mpf("1.7")
        value = sum(f(point) for f in reference)
        slope = sum(mpmath.diff(f, point) for f in reference)
    assert namespace["f"](1.7) == pytest.approx(float(value), rel=1e-13)
    assert namespace["grad_f"](1.7) == pytest.approx(float(slope), rel=1e-11)
