"""Safe expression parser: lexer output -> ast.parse -> whitelist -> SymPy, built node by node.

Nothing the user typed is ever executed: the text never reaches ``eval``/``sympify``/``parse_expr``.
The lexer already guarantees the token set; the AST whitelist below is a second, independent wall, and
the builder constructs every SymPy object itself. Bounds keep hostile input cheap: length and nesting
(lexer), recursion depth and power sizes (here) - ``10**10**10`` is refused before SymPy computes it.
"""
import ast
import math
import sys
from dataclasses import dataclass

import sympy

from gradcli.expr.errors import ExpressionError
from gradcli.expr.functions import BUILDERS, CONSTANT_VALUES
from gradcli.expr.lexer import MAX_LENGTH, lex
from gradcli.expr.vocabulary import FUNCTIONS, function_prefix

MAX_DEPTH = 100              # builder recursion; sums and products are flattened so they don't count
MAX_EXPONENT = 10_000        # |n| in x**n for symbolic x (evaluating x**n exactly at a point must stay cheap)
MAX_NUMBER_BITS = 10_000     # any exact number (a power such as 2**1000, a product): ~3,000 digits
MAX_LITERAL_EXPONENT = 1_000  # 1e1000 is allowed, 1e100000 is not
MAX_ROOT_BITS = 2_000        # SymPy factors the base of an exact root: (2^9999+1)^(1/2) takes ~9 s
MAX_COMPARED_ARGS = 64       # max/min compare their arguments pairwise (2,000 of them: minutes)

ASSUMPTIONS = {
    "real": {"real": True},
    "positive": {"positive": True},
    "complex": {"complex": True},
}

_BINARY_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
_UNARY_OPS = (ast.UAdd, ast.USub)


@dataclass
class Parsed:
    expr: object          # sympy.Expr
    text: str             # what the user typed
    python: str           # the plain-Python form after conveniences, for messages and JSON
    notes: list = None    # how a name was read, where it may surprise (sinx, xy, e)


# Multi-letter variable names people use on purpose; any other short run of letters gets a note.
_WORDS = {"alpha", "beta", "gamma", "delta", "epsilon", "eps", "zeta", "eta", "theta", "iota", "kappa", "lam",
          "lambda_", "mu", "nu", "xi", "rho", "sigma", "tau", "phi", "chi", "psi", "omega", "dt", "dx", "dy"}


def _name_note(name):
    glued = function_prefix(name)
    if glued:
        head, rest = glued
        return f"'{name}' is read as one variable named {name}; for the function write {head}({rest})"
    if name.isalpha() and name.islower() and 2 <= len(name) <= 3 and name not in _WORDS:
        return (f"'{name}' is read as one variable named {name}; for a product write "
                f"{'*'.join(name)}")
    return None


def make_symbol(name, assumptions="real"):
    return sympy.Symbol(name, **ASSUMPTIONS[assumptions])


class _Builder:
    def __init__(self, text, lexed, assumptions, variables=(), imaginary=False):
        self.text = text
        self.lexed = lexed
        self.assumptions = assumptions
        self.variables = set(variables)   # names that are variables even if they name a constant (e)
        self.imaginary = imaginary         # I is the imaginary unit (--at values under --complex)
        self.memo = {}
        self.notes = []

    def column(self, node):
        offset = getattr(node, "col_offset", None)
        if offset is None or not self.lexed.columns:
            return None
        return self.lexed.columns[min(offset, len(self.lexed.columns) - 1)]

    def fail(self, message, node):
        raise ExpressionError(message, self.column(node), self.text)

    def build(self, node, depth=0):
        if depth > MAX_DEPTH:
            self.fail(f"expression nested more than {MAX_DEPTH} levels deep", node)
        # Identical text means an identical subexpression: a network written as one formula repeats
        # every hidden unit in each unit of the next layer, and each copy is built only once.
        key = self.lexed.python[node.col_offset:node.end_col_offset] if hasattr(node, "col_offset") else None
        if key is not None and key in self.memo:
            return self.memo[key]
        result = self._build(node, depth)
        if key is not None:
            self.memo[key] = result
        return result

    def _build(self, node, depth):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            return self._sum(node, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
            return self._product(node, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            return self._power(node, depth)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, _UNARY_OPS):
            operand = self.build(node.operand, depth + 1)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        if isinstance(node, ast.Name):
            return self._name(node)
        if isinstance(node, ast.Constant):
            return self._number(node)
        self.fail(f"unsupported syntax ({type(node).__name__})", node)

    def _chain(self, node, ops):
        """Left-associative chain a op b op c ... as [(op, operand)] without recursing down the spine."""
        items = []
        while isinstance(node, ast.BinOp) and isinstance(node.op, ops):
            items.append((node.op, node.right))
            node = node.left
        items.append((None, node))
        items.reverse()
        return items

    def _sum(self, node, depth):
        terms = []
        for op, operand in self._chain(node, (ast.Add, ast.Sub)):
            value = self.build(operand, depth + 1)
            terms.append(-value if isinstance(op, ast.Sub) else value)
        return self._checked(sympy.Add(*terms), node)

    def _product(self, node, depth):
        factors = []
        for op, operand in self._chain(node, (ast.Mult, ast.Div)):
            value = self.build(operand, depth + 1)
            if isinstance(op, ast.Div):
                value = sympy.Pow(value, -1)
            factors.append(value)
        return self._checked(sympy.Mul(*factors), node)

    def _power(self, node, depth):
        base = self.build(node.left, depth + 1)
        exponent = self.build(node.right, depth + 1)
        self._guard_power(base, exponent, node)
        return self._checked(sympy.Pow(base, exponent), node)

    def _guard_power(self, base, exponent, node):
        if not exponent.is_Rational:
            return
        size = abs(exponent)
        if base.is_Rational:
            if abs(base) in (0, 1):
                return
            if not exponent.is_Integer and max(abs(base.p), base.q).bit_length() > MAX_ROOT_BITS:
                self.fail(f"refused: an exact root of {_short(base)} (over {MAX_ROOT_BITS} bits) is too costly", node)
            bits = float(size) * max(1.0, math.log2(max(abs(base.p), base.q)))
            if bits > MAX_NUMBER_BITS:
                self.fail(f"power too large: {_short(base)}**{_short(exponent)} has about {bits:.3g} bits", node)
        elif size > MAX_EXPONENT:
            self.fail(f"exponent {_short(exponent)} is too large (at most {MAX_EXPONENT})", node)

    def _checked(self, result, node):
        """SymPy merges powers (x**100 * x**100, (x**100)**100) and multiplies numbers: re-check."""
        for part in (result, *result.args):
            if part.is_Rational and max(abs(part.p), part.q).bit_length() > MAX_NUMBER_BITS:
                self.fail(f"number too large ({_short(part)})", node)
            if part.is_Pow and part.exp.is_Rational and not part.base.is_Rational \
                    and abs(part.exp) > MAX_EXPONENT:
                self.fail(f"exponent {_short(part.exp)} is too large (at most {MAX_EXPONENT})", node)
        return result

    def _call(self, node, depth):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            self.fail("only calls to known functions are allowed", node)
        if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
            self.fail(f"{node.func.id}() takes plain arguments only", node)
        name = node.func.id
        low, high = FUNCTIONS[name]
        count = len(node.args)
        if count < low or (high is not None and count > high):
            wanted = f"{low}" if low == high else (f"at least {low}" if high is None else f"{low} or {high}")
            self.fail(f"{name}() takes {wanted} argument{'s' if wanted != '1' else ''}, got {count}", node)
        if name in COMPARING and self.assumptions == "complex":
            self.fail(f"{name}() compares its arguments, and with --complex they are not real", node)
        if name in COMPARING and count > MAX_COMPARED_ARGS:
            self.fail(f"refused: {name}() of {count} arguments (at most {MAX_COMPARED_ARGS}: they are compared "
                      "pairwise)", node)
        args = [self.build(arg, depth + 1) for arg in node.args]
        if name in REAL_ARGUMENTS and self.assumptions != "complex":
            # relu(atanh(1e300)), max(x, (-3)^e): SymPy would build them and raise "not comparable" later,
            # inside differentiation or evaluation; say so here, naming the argument
            bad = next((a for a in args if _known_not_real(a)), None)
            if bad is not None:
                self.fail(f"{name}() compares {'its arguments' if name in COMPARING else 'its argument with 0'}, "
                          f"and {_short_text(bad)} is not real", node)
        if name == "pow":
            self._guard_power(args[0], args[1], node)
        elif name == "exp2":
            self._guard_power(sympy.Integer(2), args[0], node)
        elif name == "root":
            self._guard_power(args[0], 1 / args[1], node)
        if name in ("gamma", "loggamma", "digamma", "polygamma") and any(
                a.is_Integer and abs(a) > MAX_EXACT_GAMMA for a in args[-1:]):
            # gamma(10^100) would be evaluated as the factorial of 10^100 - 1: keep it symbolic
            return _held(name, args)
        try:
            built = BUILDERS[name](*args)
        except (ValueError, TypeError) as error:
            if name not in COMPARING:
                # SymPy refusing the argument itself (heaviside(log(-3)): "defined only for real values")
                self.fail(f"{name}({', '.join(_short_text(a) for a in args)}) cannot be built "
                          f"(SymPy: {_first_line(error)})", node)
            bad = next((a for a in args if a.is_extended_real is False or (not a.free_symbols and a.is_comparable
                                                                            is False)), None)
            what = f"{_short_text(bad)} is not real" if bad is not None else f"({error})"
            self.fail(f"{name}() compares its arguments, and {what}", node)
        except (AttributeError, ArithmeticError, NotImplementedError) as error:
            # SymPy failing inside its own simplification of an undefined argument (mish(log(coth(0))): zoo)
            self.fail(f"{name}({', '.join(_short_text(a) for a in args)}) cannot be built "
                      f"(SymPy: {type(error).__name__})", node)
        return self._checked(built, node)

    def _name(self, node):
        if not isinstance(node.ctx, ast.Load) or node.id.startswith("_"):
            self.fail(f"name {node.id!r} is not allowed", node)
        if node.id in FUNCTIONS:
            self.fail(f"function {node.id!r} needs its argument in parentheses", node)
        if node.id == "I" and self.imaginary:
            return sympy.I
        if node.id in CONSTANT_VALUES and node.id not in self.variables:
            if node.id in ("e", "E"):
                self._note(f"{node.id} is Euler's number 2.718...; for a variable named {node.id} "
                           f"pass --wrt {node.id}")
            return CONSTANT_VALUES[node.id]
        note = _name_note(node.id)
        if note:
            self._note(note)
        return make_symbol(node.id, self.assumptions)

    def _note(self, text):
        if text not in self.notes:
            self.notes.append(text)

    def _number(self, node):
        literal = self.lexed.numbers.get(node.col_offset)
        if literal is None or isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            self.fail("unsupported constant", node)
        mantissa, _, exponent = literal.lower().partition("e")
        if exponent and abs(int(exponent)) > MAX_LITERAL_EXPONENT:
            self.fail(f"number {literal} out of range (exponent at most {MAX_LITERAL_EXPONENT})", node)
        if "." not in mantissa and not exponent:
            return sympy.Integer(int(mantissa))
        # Decimal literals are exact rationals (0.1 is 1/10), so "exact" results stay exact.
        return sympy.Rational(literal)


COMPARING = ("max", "min")
REAL_ARGUMENTS = COMPARING + ("relu", "leaky_relu", "elu", "heaviside")   # defined for real arguments only
MAX_EXACT_GAMMA = 1000   # gamma(n) of a larger integer stays unevaluated (n! has millions of digits)


def _known_not_real(value) -> bool:
    """SymPy's assumptions say ``value`` is not real. Asking can itself evaluate (an evalf of huge
    constants that overflows): then it is not known, and the call is built as before."""
    try:
        return value.is_extended_real is False
    except Exception:  # noqa: BLE001 -- BudgetExceeded is a BaseException: the deadline still strikes
        return False


def _held(name, args):
    """gamma-family call of a huge integer, built without evaluating it."""
    if name == "digamma":
        return sympy.polygamma(0, args[0], evaluate=False)
    function = {"gamma": sympy.gamma, "loggamma": sympy.loggamma, "polygamma": sympy.polygamma}[name]
    return function(*args, evaluate=False)


def _first_line(error, limit=120):
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _short_text(expr):
    text = str(expr)
    return text if len(text) <= 40 else text[:37] + "..."


def _short(number):
    """A number for a message: itself if short, else its size (str() of huge ints is refused by Python)."""
    if number.is_Integer and abs(number.p).bit_length() > 64:
        return f"<{int(abs(number.p).bit_length() * 0.30103) + 1}-digit integer>"
    if number.is_Rational and max(abs(number.p), number.q).bit_length() > 64:
        return "<a huge rational>"
    return str(number)


def _syntax_error(error, text, lexed):
    offset = (error.offset or 1) - 1
    if offset >= len(lexed.python):
        return ExpressionError("unexpected end of expression", len(text) + 1, text)
    column = lexed.columns[offset] if offset < len(lexed.columns) else None
    return ExpressionError(f"unexpected {lexed.python[offset]!r}", column, text)


def _validate(tree, text, lexed):
    """Whitelist every node type before building anything (defence in depth behind the lexer)."""
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Call, ast.Name, ast.Constant, ast.Load,
               *_BINARY_OPS, *_UNARY_OPS)
    for node in ast.walk(tree):
        if not isinstance(node, allowed):
            offset = getattr(node, "col_offset", None)
            column = lexed.columns[offset] if offset is not None and offset < len(lexed.columns) else None
            raise ExpressionError(f"unsupported syntax ({type(node).__name__})", column, text)


def parse(text, assumptions="real", variables=(), imaginary=False):
    """Parse a calculator expression into SymPy without executing any of it. Raises ExpressionError.

    ``variables``: names that are variables even where they name a constant (``--wrt e``)."""
    if assumptions not in ASSUMPTIONS:
        raise ValueError(f"unknown assumptions {assumptions!r}")
    lexed = lex(text)
    # CPython converts long flat chains (x+x+...+x, legal within MAX_LENGTH) recursively; the lexer has
    # already bounded real nesting, so a higher limit here only admits long sums, not deep trees.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * MAX_LENGTH))
    try:
        tree = ast.parse(lexed.python, mode="eval")
    except SyntaxError as error:
        raise _syntax_error(error, text, lexed) from None
    except (RecursionError, MemoryError, ValueError):
        raise ExpressionError("expression too deeply nested to parse", None, text) from None
    finally:
        sys.setrecursionlimit(limit)
    _validate(tree, text, lexed)
    builder = _Builder(text, lexed, assumptions, variables, imaginary)
    try:
        expr = builder.build(tree.body)
    except RecursionError:
        raise ExpressionError("expression too deeply nested", None, text) from None
    except ExpressionError:
        raise
    except (AttributeError, ArithmeticError, NotImplementedError, ValueError) as error:  # SymPy on zoo/nan
        raise ExpressionError(f"SymPy cannot build this expression ({type(error).__name__}: {_first_line(error)})",
                              None, text) from None
    return Parsed(expr, text, lexed.python, builder.notes)


def split_assignments(text):
    """``"x=3, y=max(1,2)"`` -> [(name, value_text, value_column, name_column)], split at top-level commas.

    Columns are 1-based in ``text``; a piece without ``=`` has name None.
    """
    pieces, depth, start = [], 0, 0
    for i, ch in enumerate(text + ","):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            pieces.append((text[start:i], start))
            start = i + 1
    result = []
    for piece, offset in pieces:
        name, equals, value = piece.partition("=")
        name_column = offset + len(name) - len(name.lstrip()) + 1
        if not equals:
            result.append((None, piece, offset + 1, name_column))
            continue
        result.append((name.strip(), value, offset + len(name) + 2, name_column))
    return result


def parse_value(text, column, whole, source, assumptions="real", variables=(), imaginary=False):
    """A value inside an option (``--at x=pi/4``): a parsed expression; errors point into the whole option.
    ``imaginary``: ``I`` is the imaginary unit (``--at x=1+2*I`` under --complex)."""
    try:
        return parse(text, assumptions, variables, imaginary).expr
    except ExpressionError as error:
        shifted = None if error.column is None else error.column + column - 1
        raise ExpressionError(error.message, shifted, whole, source) from None
