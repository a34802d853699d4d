"""The safe expression parser: conveniences, every rejection (message and column), bounds, no execution."""
import pathlib
import re

import pytest
import sympy

from gradcli.expr.errors import ExpressionError
from gradcli.expr.functions import logsumexp, relu, sigmoid, softplus
from gradcli.expr.lexer import lex
from gradcli.expr.parser import parse, parse_value, split_assignments

x, y, z = sympy.symbols("x y z", real=True)
EXPR = pathlib.Path(__file__).resolve().parents[1] / "gradcli" / "expr"  # the calculator's parser


@pytest.mark.parametrize("text, expected", [
    ("sqrt(x)+1/x+2*y**2", sympy.sqrt(x) + 1 / x + 2 * y ** 2),
    ("2x^2", 2 * x ** 2),
    ("x^2^3", x ** 8),                       # ^ is right-associative: x^(2^3)
    ("3(x+1)", 3 * (x + 1)),
    ("(x+1)(x-1)", (x + 1) * (x - 1)),
    ("x(x+1)", x * (x + 1)),                 # one-letter name before '(' multiplies
    ("x y", x * y),
    ("2pi x", 2 * sympy.pi * x),
    ("2sin(x)", 2 * sympy.sin(x)),
    ("sin x", sympy.sin(x)),
    ("sin x + 1", sympy.sin(x) + 1),
    ("sin x cos y", sympy.sin(x) * sympy.cos(y)),
    ("ln x", sympy.log(x)),
    ("√x + π", sympy.sqrt(x) + sympy.pi),
    ("2×x − 3÷y", 2 * x - 3 / y),
    ("0.1x", x / 10),                        # decimals are exact rationals
    ("1e-3", sympy.Rational(1, 1000)),
    (".5x", x / 2),
    ("2e", 2 * sympy.E),
    ("e^x", sympy.exp(x)),
    ("log(x, 2)", sympy.log(x) / sympy.log(2)),
    ("log1p(x) + expm1(y)", sympy.log(1 + x) + sympy.exp(y) - 1),
    ("rsqrt(x)", 1 / sympy.sqrt(x)),
    ("arcsin(x) + sgn(y)", sympy.asin(x) + sympy.sign(y)),
    ("abs(x)", sympy.Abs(x)),
    ("max(x, y, 1)", sympy.Max(x, y, 1)),
    ("sigmoid(x) + softplus(y) + relu(z)", sigmoid(x) + softplus(y) + relu(z)),
    ("gelu(x)", x * (1 + sympy.erf(x / sympy.sqrt(2))) / 2),
    ("logsumexp(x, y, z)", logsumexp(x, y, z)),
    ("-x", -x),
    ("- - x", x),
    ("x - y - z", x - y - z),
    ("x / y / z", x / (y * z)),
])
def test_conveniences_build_the_expected_expression(text, expected):
    assert parse(text).expr == expected


@pytest.mark.parametrize("text, message, column", [
    ("x+*2", "unexpected '*'", 3),
    ("x**", "unexpected end of expression after '^'", 4),
    ("x+", "unexpected end of expression after '+'", 3),
    ("", "empty expression", None),
    ("   ", "empty expression", None),
    ("x 2", "unexpected number '2'", 3),
    ("2 3", "unexpected number '3'", 3),
    ("(x", "unclosed '('", 1),
    ("x)", "unmatched ')'", 2),
    ("()", "empty parentheses", 2),
    ("(x, y)", "unexpected ','", 3),
    ("x, y", "unexpected ','", 2),
    ("sin()", "sin() needs an argument", 5),
    ("sin", "function 'sin' needs its argument in parentheses", 1),
    ("sin^y x", "function 'sin' needs its argument in parentheses", 1),
    ("sin -x", "function 'sin' needs its argument in parentheses", 1),
    ("sin x^2", "ambiguous 'sin x^...'", 1),
    ("sin 2x", "ambiguous 'sin 2x...'", 1),
    ("ln x*y", "ambiguous 'ln x*...'", 1),
    ("foo(x)", "unknown function 'foo'", 1),
    ("max(x)", "max() takes at least 2 arguments, got 1", 1),
    ("sin(x, y)", "sin() takes 1 argument, got 2", 1),
    ("x.real", "unexpected '.'", 2),
    ("x[0]", "unexpected '['", 2),
    ("'x'", "unexpected \"'\"", 1),
    ('"x"', "unexpected '\"'", 1),
    ("x;y", "unexpected ';'", 2),
    ("x == y", "unexpected '='", 3),
    ("x % 2", "unexpected '%'", 3),
    ("x // 2", "unexpected '/'", 4),
    ("x @ y", "unexpected '@'", 3),
    ("{x}", "unexpected '{'", 1),
    ("x if y else z", "'if' is a Python keyword", 3),
    ("lambda: x", "'lambda' is a Python keyword", 1),
    ("not x", "'not' is a Python keyword", 1),
    ("__import__('os')", "names may not start with '_'", 1),
    ("_x + 1", "names may not start with '_'", 1),
    ("x\x00", "unexpected character '\\x00'", 2),
    ("- - - - - - - - - x", "more than 8 signs in a row", 17),
    ("10**10**10", "power too large", 1),
    ("2^(10^7)", "power too large", 1),
    ("x**100000", "exponent 100000 is too large", 1),
    ("(x**100)**1000", "exponent 100000 is too large", 1),
    ("x^9000 * x^9000", "exponent 18000 is too large", 1),
    ("2^9000 * 2^9000", "number too large (<5419-digit integer>)", 1),
    ("1e5000", "out of range", 1),
    ("9" * 101, "number longer than 100 characters", 1),
    ("a" * 41, "name longer than 40 characters", 1),
    ("(" * 51 + "x" + ")" * 51, "parentheses nested more than 50 deep", 51),
    ("x" + "+x" * 10_000, "expression longer than 20000 characters", None),
])
def test_every_rejection_says_what_and_where(text, message, column):
    with pytest.raises(ExpressionError) as info:
        parse(text)
    error = info.value
    assert message in str(error)
    assert error.column == column
    line = str(error)
    assert "\n" not in line
    if column is not None:
        assert f"at column {column}" in line


def test_error_line_reads_like_a_sentence():
    with pytest.raises(ExpressionError) as info:
        parse("x+*2")
    assert str(info.value) == "unexpected '*' at column 3 in expression 'x+*2'"


def test_hostile_sizes_are_refused_before_they_are_computed():
    # refused from the size of the number (its bit count), not after computing it
    for text in ("10**10**10", "10^10^10^10", "2**(2**(2**(2**(2**2))))", "(10**5)**(10**5)", "x**(10**10)"):
        with pytest.raises(ExpressionError, match=r"power too large: .* bits|exponent 10000000000 is too large"):
            parse(text)


def test_long_flat_sums_and_products_parse():
    assert parse("+".join(["x"] * 6000)).expr == 6000 * x
    assert parse("*".join(["x"] * 3000)).expr == x ** 3000
    assert parse("-".join(["y"] * 5000)).expr == -4998 * y


def test_deep_power_towers_are_refused_not_crashing():
    with pytest.raises(ExpressionError, match="nested|deeply"):
        parse("^".join(["x"] * 5000))


def test_assumptions():
    assert parse("x").expr.is_real
    assert parse("x", "positive").expr.is_positive
    assert parse("x", "complex").expr.is_real is None
    assert sympy.diff(parse("abs(x)").expr, x) == sympy.sign(x)


def test_nothing_is_executed(tmp_path):
    canary = tmp_path / "pwned"
    payloads = [f"__import__('os').system('touch {canary}')", "open('/etc/passwd').read()",
                "().__class__.__bases__[0].__subclasses__()", "exec('1')", "eval('1')", "globals()",
                "getattr(x, 'real')", "x.__class__", "[x for x in y]", "lambda: 1", "f'{x}'"]
    for text in payloads:
        with pytest.raises(ExpressionError):
            parse(text)
    assert not canary.exists()


def test_source_never_calls_eval_exec_sympify_or_parse_expr():
    forbidden = re.compile(r"(?<!def )\b(eval|exec|sympify|parse_expr|S)\s*\(")  # SymPy classmethod eval is fine
    for path in ["lexer.py", "parser.py", "functions.py", "vocabulary.py"]:
        source = (EXPR / path).read_text()
        code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("#"))
        code = re.sub(r'""".*?"""', "", code, flags=re.S)
        assert not forbidden.search(code), path


def test_lexer_maps_columns_back_to_the_user_text():
    lexed = lex("2x^2")
    assert lexed.python == "2 * x ** 2"
    assert lexed.columns == [1, 2, 2, 2, 2, 3, 3, 3, 4, 4]   # a space maps to the token after it


def test_split_assignments_respects_parentheses():
    assert split_assignments("x=3, y=max(1,2)") == [("x", "3", 3, 1), ("y", "max(1,2)", 8, 6)]
    assert split_assignments("3") == [(None, "3", 1, 1)]


def test_option_values_report_columns_in_the_whole_option():
    with pytest.raises(ExpressionError) as info:
        parse_value("1+", 3, "x=1+", "--at")
    assert str(info.value) == "unexpected end of expression after '+' at column 5 in --at 'x=1+'"
