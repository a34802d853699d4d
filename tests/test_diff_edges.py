"""gradcli diff at the edges: huge arguments reduced exactly, poles, exact zeros, ill-conditioning (not a kink),
values out of every range, --check on constant differences and unknown names, and readable output."""
import mpmath
import pytest
from click.testing import CliRunner

from gradcli.cli import main
from gradcli.expr.api import DiffRequest, run


def _cells(result, point=0):
    return {c.label["ascii"]: c for c in result.points[point].cells}


def _warnings(result):
    return {w.kind: w.text["ascii"] for w in result.warnings}


def test_huge_arguments_are_reduced_exactly():
    with mpmath.workdps(1100):
        point = mpmath.mpf(10) ** 1000
        truth = mpmath.sin(point), mpmath.cos(point)
    result = run(DiffRequest(["sin(x)"], at=["x=1e1000"], simplify=False))
    cells = _cells(result)
    assert cells["f"].value_text == mpmath.nstr(truth[0], 10) == "0.6533597982"
    assert cells["df/dx"].value_text == mpmath.nstr(truth[1], 10) == "-0.7570475375"
    assert result.points[0].at_text == "x=10**1000"          # not a 1,001-digit integer
    assert _warnings(result)["engine"] == ("autograd column not available: the point is not a float64 real number "
                                          "(beyond the range, or complex)")
    assert result.exit_code == 0                            # nothing blamed on the engine


def test_a_pole_is_a_pole_not_a_huge_number():
    for expression in ("tan(x)", "sec(x)", "1/cos(x)"):
        result = run(DiffRequest([expression], at=["x=pi/2"], simplify=False))
        assert [c.status for c in result.points[0].cells] == ["pole", "pole"]
        assert _warnings(result)["domain"] == "f has a pole at x=pi/2 (it grows without bound there): not compared"
        assert result.exit_code == 0


def test_zero_to_the_x_has_derivative_exactly_zero():
    result = run(DiffRequest(["0^x"], at=["2"]))
    assert [f.text["ascii"] for f in result.formulas] == ["0"]
    assert [c.value_text for c in result.points[0].cells] == ["0", "0"] and result.exit_code == 0


def test_ill_conditioning_is_reported_as_such_not_as_a_kink():
    result = run(DiffRequest(["sin(10^100*x)"], at=["1"], simplify=False))
    point = result.points[0]
    assert point.ok and point.problem is None and result.exit_code == 0
    with mpmath.workdps(200):
        truth = mpmath.sin(mpmath.mpf(10) ** 100)
    assert _cells(result)["f"].value_text == mpmath.nstr(truth, 10)
    notes = _warnings(result)
    assert "kink" not in notes
    assert notes["ill-conditioned"].startswith("f is ill-conditioned at x=1: rounding the point and constants to "
                                               "float64 alone moves it from ")


def test_a_real_kink_is_still_a_kink():
    result = run(DiffRequest(["relu(x - 1)"], at=["1"], simplify=False))
    assert not result.points[0].ok and "non-differentiable point x=1" in result.points[0].problem
    assert _warnings(result)["kink"] == "f is not differentiable at x=1; one-sided derivatives 0 and 1"


def test_values_beyond_any_range_are_said_to_be_out_of_range():
    for expression, point in (("exp(exp(exp(exp(x))))", "10"), ("x^x^x^x", "10"), ("3^(2^(2^x))", "32")):
        result = run(DiffRequest([expression], at=[point], simplify=False))
        assert [c.status for c in result.points[0].cells] == ["out of range", "out of range"], expression
        assert _warnings(result)["domain"] == (f"f is out of range at x={point}: a value on the way is beyond 1e30000 "
                                              "(not compared)")


def test_no_comparison_where_the_finite_difference_cannot_exist():
    result = run(DiffRequest(["log(x)"], at=["-1"], simplify=False))
    assert result.points[0].max_error == 0.0                 # not "largest disagreement inf ok"
    assert _cells(result)["df/dx"].ok


def test_check_refutes_an_exact_constant_difference():
    result = run(DiffRequest(["x^2"], check="2x+10^-20"))
    (check,) = result.checks
    assert check.verdict == "refuted" and result.exit_code == 1
    assert check.detail.startswith("your answer minus df/dx is the constant 1e-20, not 0")


def test_check_with_an_unknown_variable_is_a_usage_error():
    outcome = CliRunner().invoke(main, ["diff", "x^2", "--check", "2*t"])
    assert outcome.exit_code == 2
    assert outcome.output == ("error: --check: t is not a variable of the expression (variables: x) at column 1 "
                              "in --check '2*t'\n")


def test_max_of_non_real_values_is_a_usage_error():
    outcome = CliRunner().invoke(main, ["diff", "min(rsqrt(z), 4*z, asin(5), y/y)"])
    assert outcome.exit_code == 2
    assert outcome.output == ("error: min() compares its arguments, and asin(5) is not real at column 1 in "
                              "expression 'min(rsqrt(z), 4*z, asin(5), y/y)'\n")


def test_sympy_failing_on_an_undefined_argument_is_a_usage_error():
    # found by bench/diff_fuzz.py (seed 11): SymPy raises AttributeError inside mish(zoo); was exit 3
    outcome = CliRunner().invoke(main, ["diff", "sin((mish(log(coth(0))))/(y))"])
    assert outcome.exit_code == 2
    assert outcome.output == ("error: mish(zoo) cannot be built (SymPy: AttributeError) at column 6 in expression "
                              "'sin((mish(log(coth(0))))/(y))'\n")


def test_sympy_refusing_a_non_real_argument_is_a_usage_error():
    # found by bench/diff_fuzz.py (seed 3): Heaviside raises ValueError on log(-3) = log(3) + i*pi; was a traceback
    outcome = CliRunner().invoke(main, ["diff", "heaviside(log(-3))*x", "--at", "x=1"])
    assert outcome.exit_code == 2
    assert outcome.output == ("error: heaviside() compares its argument with 0, and log(3) + I*pi is not real at "
                              "column 1 in expression 'heaviside(log(-3))*x'\n")


@pytest.mark.parametrize("text, message", [
    # found by bench/diff_fuzz.py (seed 20261201, cases 5689 and 4761): SymPy raised "not comparable" while
    # differentiating or compiling the values; was "internal error: ValueError", exit 3
    ("relu(atanh(1e300))*x", "relu() compares its argument with 0, and atanh(1000000000000000000000000000000... "
                             "is not real at column 1"),
    ("leaky_relu(asin(2^999))+x", "leaky_relu() compares its argument with 0, and "
                                  "asin(53575430359313366047421252453000... is not real at column 1"),
    ("max(x, (-3)^e)", "max() compares its arguments, and (-3)**E is not real at column 1"),
])
def test_a_comparison_of_a_value_that_is_not_real_is_a_usage_error(text, message):
    outcome = CliRunner().invoke(main, ["diff", text, "--at", "x=1", "--budget", "60"])
    assert outcome.exit_code == 2
    assert outcome.output == f"error: {message} in expression {text!r}\n"


def test_a_comparison_that_meets_a_non_real_value_later_is_a_one_line_refusal():
    # seed 20261201, case 5527: Max of a term whose realness no assumption tells at parse time
    text = "Max(x^2, (e/pi)/((-3)^e)/mish(0.5+z))^2"
    outcome = CliRunner().invoke(main, ["diff", text, "--at", "x=1/3,z=-1", "--order", "2", "--budget", "60"])
    assert outcome.exit_code == 2, outcome.output
    assert outcome.output.endswith("a comparison (max/min/relu-like) met a value that is not real; only real "
                                   "arguments can be compared\n")
    assert outcome.output.startswith("error: refused: while ") and outcome.output.count("\n") == 1


def test_oversized_inputs_are_refused_up_front_in_one_short_line():
    for args, start in ((["x^(1e1000)"], "error: exponent <1001-digit integer> is too large"),
                        (["(2^9999+1)^(1/2)*x"], "error: refused: an exact root of <3011-digit integer>"),
                        (["max(" + ",".join(f"x^{i}" for i in range(200)) + ")"],
                         "error: refused: max() of 200 arguments (at most 64")):
        outcome = CliRunner().invoke(main, ["diff", *args])
        assert outcome.exit_code == 2 and outcome.output.startswith(start), outcome.output
        assert outcome.output.count("\n") == 1 and len(outcome.output) < 200


def test_leading_minus_after_double_dash_is_an_expression():
    outcome = CliRunner().invoke(main, ["diff", "--", "-x^2"])
    assert outcome.exit_code == 0 and outcome.output == "f(x) = -x**2\ndf/dx = -2*x\n"


def test_complex_points():
    result = run(DiffRequest(["x^2"], at=["x=1+2*I"], assumptions="complex", simplify=False))
    assert result.points[0].at_text == "x=1 + 2*I"
    assert [c.exact["ascii"] if c.exact else None for c in result.points[0].cells] == ["(1 + 2*I)**2", "2 + 4*I"]


def test_long_output_lines_stay_short():
    outcome = CliRunner().invoke(main, ["diff", "exp(exp(x))", "--at", "x=1000", "--format", "plain"])
    assert max(len(line) for line in outcome.output.splitlines()) < 200


def test_a_steady_imaginary_part_next_to_a_huge_real_one_is_not_real():
    # (-1)^e = cos(pi e) + i sin(pi e): small next to 2^999, but there at every precision
    result = run(DiffRequest(["z^e - 2^999"], at=["z=-1"], simplify=False))
    assert [c.status for c in result.points[0].cells] == ["not real", "not real"]
    assert result.exit_code == 0   # not blamed on the engine


def test_values_below_the_float64_range_are_not_compared():
    result = run(DiffRequest(["sech(y^exp(e))"], at=["y=2"], simplify=False))
    assert _cells(result)["f"].value_text == "2.195105249e-15837"
    assert _warnings(result)["domain"] == "f = 2.195105249e-15837 at y=2 is beyond the float64 range: not compared"
    assert result.exit_code == 0


def test_a_constant_mpmath_rounds_to_a_zero_divisor_is_evaluated_with_more_digits():
    # found by bench/diff_fuzz.py (seed 20261201, case 834): 1/log1p(1e-30) at 20 digits divides by 0 in
    # mpmath (ZeroDivisionError) and was "internal error", exit 3; log1p(1e-30) = 1e-30 - 5e-61 + ...
    outcome = CliRunner().invoke(main, ["diff", "x/log1p(1e-30)", "--at", "x=1", "--format", "json"])
    assert outcome.exit_code == 0, outcome.output
    import json
    point = json.loads(outcome.output)["points"][0]
    assert point["gradient"]["x"] == pytest.approx(1e30, rel=1e-15)
    assert point["autograd"]["gradient"]["x"] == pytest.approx(1e30, rel=1e-15)
