"""Fuzzing the parser: random text, random token soups, random valid trees, random hostile Python ASTs.

The contract: the parser either returns a SymPy expression or raises ExpressionError (one line) - never
another exception, never a hang, and a well-formed expression means what it says.
"""
import ast

import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradcli.expr.errors import ExpressionError
from gradcli.expr.parser import parse

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
x, y, z = sympy.symbols("x y z", real=True)


def _outcome(text):
    try:
        result = parse(text).expr
    except ExpressionError as error:
        assert "\n" not in str(error)
        result = None
    return result


@FUZZ
@given(st.text(max_size=200))
def test_random_text_parses_or_is_rejected_cleanly(text):
    result = _outcome(text)
    assert result is None or isinstance(result, sympy.Basic)


TOKENS = ["x", "y", "z", "2", "3.5", "0", "10", "1e3", "+", "-", "*", "/", "^", "**", "(", ")", ",", " ",
          "sin", "sqrt", "log", "exp", "max", "abs", "sigmoid", "logsumexp", "e", "pi", "π", "√", "x1", ".",
          "_", "[", "'", "lambda", "if"]


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=40).map("".join))
def test_token_soup_parses_or_is_rejected_cleanly(text):
    result = _outcome(text)
    assert result is None or isinstance(result, sympy.Basic)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=40).map(" ".join))
def test_spaced_token_soup_parses_or_is_rejected_cleanly(text):
    result = _outcome(text)
    assert result is None or isinstance(result, sympy.Basic)


# ---- random valid trees: text and the SymPy expression it must mean ----
LEAVES = st.sampled_from([("x", x), ("y", y), ("z", z), ("2", sympy.Integer(2)), ("3", sympy.Integer(3)),
                          ("0.5", sympy.Rational(1, 2)), ("pi", sympy.pi), ("e", sympy.E)])
UNARY = {"sin": sympy.sin, "exp": sympy.exp, "sqrt": sympy.sqrt, "abs": sympy.Abs, "tanh": sympy.tanh,
         "log": sympy.log}


def _extend(children):
    binary = st.tuples(children, st.sampled_from(["+", "-", "*", "/", "^"]), children).map(_binary)
    unary = st.tuples(st.sampled_from(sorted(UNARY)), children).map(
        lambda t: (f"{t[0]}({t[1][0]})", UNARY[t[0]](t[1][1])))
    negate = children.map(lambda c: (f"(-{c[0]})", -c[1]))
    return binary | unary | negate


def _binary(parts):
    (left_text, left), op, (right_text, right) = parts
    if op == "^":
        # keep exponents small so the size bounds never trigger on legitimate trees
        right_text, right = "2", sympy.Integer(2)
    value = {"+": lambda: left + right, "-": lambda: left - right, "*": lambda: left * right,
             "/": lambda: left / right, "^": lambda: left ** right}[op]()
    return f"({left_text}{op}{right_text})", value


VALID = st.recursive(LEAVES, _extend, max_leaves=12)


@FUZZ
@given(VALID)
def test_valid_trees_mean_what_they_say(case):
    text, expected = case
    if expected.has(sympy.zoo, sympy.nan):
        return
    got = parse(text).expr
    # the same expression, up to SymPy's order-dependent distribution of numbers over sums:
    # -(x*(2*(x+y))) is built as -x*(2*x + 2*y) or as -2*x*(x + y) depending on the order of construction
    assert got == expected or sympy.expand(got - expected) == 0, (text, got, expected)


# ---- random hostile Python: a valid tree with one forbidden construct spliced in ----
FORBIDDEN = ["x.real", "x[0]", "(lambda: 1)", "'s'", "sin(x=1)", "[x]", "{x}", "(x if y else z)", "(x < y)",
             "(x and y)", "(not x)", "(x := 1)", "(*x,)", "(x @ y)", "(x % y)", "(x // y)", "x.__class__",
             "__import__('os')", "b'x'", "True", "None", "...", "[i for i in x]", "f'{x}'", "(x, y)",
             "globals()", "getattr(x, 'y')", "sin(*x)", "max(**x)", "x.y.z", "(yield x)", "await x"]


@FUZZ
@given(VALID, st.sampled_from(FORBIDDEN), st.integers(min_value=0, max_value=10_000))
def test_forbidden_constructs_anywhere_are_rejected(case, snippet, where):
    text, _ = case
    names = [i for i, ch in enumerate(text) if ch in "xyz"]
    if names:
        i = names[where % len(names)]
        text = text[:i] + snippet + text[i + 1:]
    else:
        text = snippet
    assert _outcome(text) is None, text


@FUZZ
@given(st.from_regex(r"[0-9xy+*/^()\- ]{0,60}", fullmatch=True))
def test_ascii_arithmetic_never_escapes(text):
    result = _outcome(text)
    assert result is None or isinstance(result, sympy.Basic)


def test_python_ast_round_trip_of_whitelisted_trees():
    """A tree made of whitelisted nodes only, unparsed by Python, parses to the same value."""
    tree = ast.parse("sin(x) ** 2 + cos(y) / (1 + exp(-z)) - abs(x * y)", mode="eval")
    text = ast.unparse(tree)
    expected = sympy.sin(x) ** 2 + sympy.cos(y) / (1 + sympy.exp(-z)) - sympy.Abs(x * y)
    got = parse(text).expr
    # the same expression, up to SymPy's order-dependent distribution of numbers over sums:
    # -(x*(2*(x+y))) is built as -x*(2*x + 2*y) or as -2*x*(x + y) depending on the order of construction
    assert got == expected or sympy.expand(got - expected) == 0, (text, got, expected)
