"""Every warning ``gradcli diff`` gives, with its exact wording, and what it does to the exit code."""
import sympy

from gradcli.expr.api import DiffRequest, run
from gradcli.expr.calculus import Derivatives, Entry
from gradcli.expr.caveats import scan
from gradcli.expr.evaluate import PointEvaluator
from gradcli.expr.numeric_side import NumericJob, run_numeric
from gradcli.expr.opmap import compile_program

x = sympy.Symbol("x", real=True)


def warnings_of(*expressions, **options):
    result = run(DiffRequest(list(expressions), **options))
    return result, {w.kind: w.text["ascii"] for w in result.warnings}


def test_heaviside():
    result, notes = warnings_of("relu(x)")
    assert notes["heaviside"] == ("df/dx contains Heaviside: a step; exactly at the step SymPy uses "
                                  "Heaviside(0) = 1/2, autograd engines usually 0")
    assert result.exit_code == 0


def test_sign():
    _, notes = warnings_of("abs(x)")
    assert notes["sign"] == ("df/dx contains sign: the function has a kink where its argument is 0 "
                             "(sign(0) = 0 is a convention)")


def test_diracdelta_names_every_entry():
    _, notes = warnings_of("x*abs(x)", order=2)
    assert notes["diracdelta"] == ("d2f/dx2 contains DiracDelta: a distribution, not a pointwise value, "
                                   "where its argument is 0")
    assert notes["sign"].startswith("df/dx, d2f/dx2 contain sign: ")


def test_piecewise():
    entry = Entry(0, ("x",), sympy.Piecewise((x, x > 0), (0, True)), "f")
    (note,) = scan([entry])
    assert note.kind == "piecewise"
    assert note.text["ascii"] == "df/dx is piecewise: which branch applies depends on the point"
    assert note.text["unicode"] == "∂f/∂x is piecewise: which branch applies depends on the point"


def test_unevaluated_derivative_in_complex_mode():
    _, notes = warnings_of("abs(x)", assumptions="complex")
    assert notes["derivative"] == ("df/dx contains an unevaluated Derivative: SymPy could not "
                                   "differentiate part of it")


def test_zoo():
    (note,) = scan([Entry(0, ("x",), sympy.zoo * x, "f")])
    assert note.kind == "zoo"
    assert note.text["ascii"] == "df/dx contains zoo (complex infinity) or nan: undefined, e.g. a division by zero"


def test_zero_to_a_variable_power_has_derivative_zero_not_nan():
    # d/dx 0^(x-1) = 0 wherever 0^(x-1) is differentiable (x > 1); SymPy alone says nan
    result, notes = warnings_of("0^(x-1)", at=["x=3"])
    assert [f.text["ascii"] for f in result.formulas] == ["0"]
    assert "zoo" not in notes
    assert [c.value for c in result.points[0].cells] == [0.0, 0.0] and result.exit_code == 0


def test_not_real_outside_the_domain():
    result, notes = warnings_of("sqrt(x)", at=["x=-1"])
    assert notes["domain"] == "f is not real at x=-1"
    (point,) = result.points
    assert [c.status for c in point.cells] == ["not real", "not real"]
    assert result.exit_code == 0          # a warning, not a disagreement


def test_undefined_value_and_derivative():
    _, notes = warnings_of("1/x", at=["x=0"])
    assert notes["domain"] == "f is undefined at x=0"
    _, notes = warnings_of("sqrt(x)", at=["x=0"])
    assert notes["domain"] == "df/dx is undefined at x=0"


def test_kink_with_one_sided_derivatives():
    result, notes = warnings_of("abs(x)", at=["x=0"])
    assert notes["kink"] == "f is not differentiable at x=0; one-sided derivatives -1 and 1"
    unicode = [w.text["unicode"] for w in result.warnings if w.kind == "kink"]
    assert unicode == ["f is not differentiable at x=0; one-sided derivatives −1 and 1"]
    assert result.exit_code == 0          # exact, autograd and the central difference all say 0


def test_kink_in_one_of_several_variables():
    _, notes = warnings_of("abs(x) + y^2", at=["x=0,y=1"])
    assert notes["kink"] == "f is not differentiable in x at x=0, y=1; one-sided derivatives -1 and 1"


def test_simplification_past_its_budget():
    result, notes = warnings_of("sin(x)^2*cos(x)", simplify_timeout=0)
    assert notes["simplify"] == ("simplification did not finish within 0 s for df/dx: showing the "
                                 "unsimplified form")
    assert result.formulas[0].text["ascii"] == "2*sin(x)*cos(x)**2 - sin(x)**3"


def test_exact_values_past_their_budget():
    result, notes = warnings_of("x^2", at=["x=3"], simplify_timeout=0)
    assert notes["budget"] == "exact values not computed within 0 s (the floats are exact to the digits shown)"
    (point,) = result.points
    assert point.cells[1].value_text == "6" and point.cells[1].exact is None


def test_engine_without_the_op():
    gamma = sympy.gamma(x)
    derivs = Derivatives([gamma], ["f"], [x], [Entry(0, (), gamma, "f"), Entry(0, ("x",), gamma.diff(x), "f")])
    job = NumericJob(compile_program([gamma], [x]), [e.key for e in derivs.entries], [[2.0]])
    (numbers,) = run_numeric(job)
    point, notes = PointEvaluator(derivs).evaluate({x: sympy.Integer(2)}, "x=2", numbers)
    assert [n.text["ascii"] for n in notes] == [
        "autograd column not available: gamma is computed symbolically only (the engine has no gamma op)"]
    assert point.cells[1].autograd is None and point.ok


def test_no_warnings_for_a_smooth_function():
    result, notes = warnings_of("sqrt(x)+1/x+2*y**2", at=["x=3,y=2"])
    assert notes == {}


def test_values_beyond_float64_are_shown_but_not_compared():
    result, notes = warnings_of("exp(x)", at=["x=1000"])
    assert notes["domain"] == "f = 1.970071114e434 at x=1000 is beyond the float64 range: not compared"
    (point,) = result.points
    assert point.cells[0].value_text == "1.970071114e434" and point.cells[0].value is None
    assert result.exit_code == 0


def test_check_with_a_parameter_held_fixed():
    result = run(DiffRequest(["x*y^2"], wrt=["x"], check="y^2"))
    assert [c.verdict for c in result.checks] == ["proved"]
    result = run(DiffRequest(["x*y^2"], wrt=["x"], check="y"))
    (check,) = result.checks
    assert check.verdict == "refuted" and check.point == {"x": "1", "y": "3"}
