"""Tokenize a calculator expression and rewrite its conveniences into plain Python syntax.

Conveniences: ``^`` is power, implicit multiplication (``2x``, ``3(x+1)``, ``(a)(b)``, ``x y``), ``sin x``
for a bare name or number argument when nothing after it could make the reading ambiguous, and a few
Unicode symbols (π, −, ×, ·, ÷, √). A small operand/operator state machine runs in the same pass, so
every syntax error is reported here with the exact column of the offending character; ``ast.parse`` is
then only a second line of defence. Nothing here imports SymPy.
"""
import keyword
import re
from dataclasses import dataclass, field

from gradcli.expr.errors import ExpressionError
from gradcli.expr.vocabulary import CONSTANTS, REFUSED, UNICODE_SUBSTITUTES, canonical_function, suggestion

MAX_LENGTH = 20_000        # characters; the 10x10x10 MLP benchmark expression is ~7,000
MAX_PAREN_DEPTH = 50
MAX_SIGN_RUN = 8           # "- - - - x" beyond this is noise, and deep unary chains stress the parser
MAX_NUMBER_DIGITS = 100
MAX_NAME_LENGTH = 40

_SUPERSCRIPTS = {"⁰": "0", "¹": "1", "²": "2", "³": "3", "⁴": "4", "⁵": "5", "⁶": "6", "⁷": "7", "⁸": "8", "⁹": "9"}
_NUMBER = re.compile(r"(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class Token:
    kind: str      # "num", "name", "func", "op", "(", ")", ","
    text: str
    column: int    # 1-based column in the user's text


@dataclass
class Lexed:
    """The Python source the expression became, and how to map its offsets back to the user's columns."""
    python: str
    columns: list = field(default_factory=list)      # python offset -> user column
    numbers: dict = field(default_factory=dict)      # python offset of a number -> its literal text


def _scan(text):
    """Raw tokens with columns; rejects characters that can never appear."""
    tokens = []
    i = 0
    while i < len(text):
        ch = text[i]
        column = i + 1
        if ch.isspace():
            i += 1
            continue
        if ch in _SUPERSCRIPTS or ch == "⁻":   # x² is x**2, x⁻¹ is x**-1
            j = i + (ch == "⁻")
            digits = ""
            while j < len(text) and text[j] in _SUPERSCRIPTS:
                digits += _SUPERSCRIPTS[text[j]]
                j += 1
            if not digits:
                raise ExpressionError("'⁻' must be followed by superscript digits", column, text)
            tokens.append(Token("op", "**", column))
            if ch == "⁻":
                tokens.append(Token("op", "-", column))
            tokens.append(Token("num", digits, column))
            i = j
            continue
        if ch == "|":
            tokens.append(Token("|", "|", column))
            i += 1
            continue
        substitute = UNICODE_SUBSTITUTES.get(ch)
        if substitute is not None:
            kind = "name" if substitute.isalpha() else "op"
            tokens.append(Token(kind, substitute, column))
            i += 1
            continue
        number = _NUMBER.match(text, i)
        if number:
            literal = number.group()
            if len(literal) > MAX_NUMBER_DIGITS:
                raise ExpressionError(f"number longer than {MAX_NUMBER_DIGITS} characters", column, text)
            tokens.append(Token("num", literal, column))
            i = number.end()
            continue
        name = _NAME.match(text, i)
        if name:
            word = name.group()
            if word.startswith("_"):
                raise ExpressionError(f"names may not start with '_' ({word!r})", column, text)
            if len(word) > MAX_NAME_LENGTH:
                raise ExpressionError(f"name longer than {MAX_NAME_LENGTH} characters", column, text)
            if keyword.iskeyword(word) or keyword.issoftkeyword(word):
                raise ExpressionError(f"{word!r} is a Python keyword, not a variable", column, text)
            tokens.append(Token("name", word, column))
            i = name.end()
            continue
        if text.startswith("**", i):
            tokens.append(Token("op", "**", column))
            i += 2
            continue
        if ch == "^":
            tokens.append(Token("op", "**", column))
            i += 1
            continue
        if ch in "+-*/":
            tokens.append(Token("op", ch, column))
            i += 1
            continue
        if ch in "(),":
            tokens.append(Token(ch, ch, column))
            i += 1
            continue
        shown = ch if ch.isprintable() else repr(ch)
        raise ExpressionError(f"unexpected {shown!r}" if ch.isprintable() else f"unexpected character {shown}",
                              column, text)
    for token in tokens:
        if token.kind == "name" and canonical_function(token.text):
            token.kind = "func"
            token.text = canonical_function(token.text)
    return tokens


def unknown_function(name):
    """The message for ``name(`` where ``name`` is no function: a refusal reason, or a guess."""
    if name in REFUSED:
        return REFUSED[name]
    guess = suggestion(name)
    if guess:
        return f"unknown function {name!r}: did you mean {guess}? (write {name}*(...) to multiply)"
    return f"unknown function {name!r} (write {name}*(...) to multiply)"


def _describe(token):
    if token is None:
        return "end of expression"
    if token.kind == "num":
        return f"number {token.text!r}"
    if token.kind in ("name", "func"):
        return f"name {token.text!r}"
    return repr(token.text if token.text != "**" else "^")


class _Rewriter:
    """Single pass: conveniences in, plain Python tokens out, syntax checked on the way."""

    def __init__(self, text, tokens):
        self.text = text
        self.tokens = tokens
        self.out = []
        self.parens = []           # stack of (is_call, column, closer ")" or "|", tokens emitted after closing)
        self.expect_operand = True
        self.sign_run = 0

    def fail(self, message, token):
        column = token.column if token is not None else len(self.text) + 1
        raise ExpressionError(message, column, self.text)

    def emit(self, kind, text, column):
        self.out.append(Token(kind, text, column))

    def run(self):
        i = 0
        while i < len(self.tokens):
            i = self.step(i)
        if self.expect_operand:
            last = self.tokens[-1] if self.tokens else None
            if last is None:
                raise ExpressionError("empty expression", None, self.text)
            self.fail(f"unexpected end of expression after {_describe(last)}", None)
        if self.parens:
            opener = "|" if self.parens[-1][2] == "|" else "("
            raise ExpressionError(f"unclosed '{opener}'", self.parens[-1][1], self.text)
        return self.out

    def step(self, i):
        token = self.tokens[i]
        following = self.tokens[i + 1] if i + 1 < len(self.tokens) else None
        if self.expect_operand:
            return self.operand(i, token, following)
        return self.operator(i, token, following)

    def operand(self, i, token, following):
        if token.kind == "op" and token.text in "+-":
            self.sign_run += 1
            if self.sign_run > MAX_SIGN_RUN:
                self.fail(f"more than {MAX_SIGN_RUN} signs in a row", token)
            self.emit("op", token.text, token.column)
            return i + 1
        self.sign_run = 0
        if token.kind in ("num", "name"):
            self.emit(token.kind, token.text, token.column)
            self.expect_operand = False
            return i + 1
        if token.kind == "func":
            return self.function(i, token, following)
        if token.kind == "|":   # |x| is abs(x)
            self.emit("func", "abs", token.column)
            self.open_paren(token, is_call=True, closer="|")
            return i + 1
        if token.kind == "(":
            self.open_paren(token, is_call=False)
            if following is not None and following.kind == ")":
                self.fail("empty parentheses", following)
            return i + 1
        self.fail(f"unexpected {_describe(token)}", token)

    def function(self, i, token, following):
        power = self._power_prefix(i, token, following)
        if power is not None:   # sin^2(x), sin^2 x, sin²x: (sin x)^2
            return power
        if following is not None and following.kind == "(":
            self.emit("func", token.text, token.column)
            self.open_paren(following, is_call=True)
            after = self.tokens[i + 2] if i + 2 < len(self.tokens) else None
            if after is not None and after.kind == ")":
                self.fail(f"{token.text}() needs an argument", after)
            return i + 2
        if following is None or following.kind not in ("num", "name"):
            self.fail(f"function {token.text!r} needs its argument in parentheses, e.g. {token.text}(x)", token)
        after = self.tokens[i + 2] if i + 2 < len(self.tokens) else None
        unambiguous = (after is None or after.kind in (")", ",", "func", "|")
                       or (after.kind == "op" and after.text in ("+", "-")))
        if not unambiguous:
            width = 1 if self.text[after.column - 1] == "^" else len(after.text)
            snippet = self.text[token.column - 1:after.column - 1 + width]
            self.fail(f"ambiguous '{snippet}...': put the argument of {token.text} in parentheses", token)
        self.emit("func", token.text, token.column)
        self.emit("(", "(", following.column)
        self.emit(following.kind, following.text, following.column)
        self.emit(")", ")", following.column)
        self.expect_operand = False
        return i + 2

    def _power_prefix(self, i, token, following):
        """``sin^2(x)`` / ``sin^2 x`` as ``sin(x)**2``: a positive integer power written on the name."""
        if following is None or following.kind != "op" or following.text != "**":
            return None
        exponent = self.tokens[i + 2] if i + 2 < len(self.tokens) else None
        if exponent is None or exponent.kind != "num" or not exponent.text.isdigit():
            if exponent is not None and exponent.kind == "op" and exponent.text == "-":
                self.fail(f"{token.text}^-1 is ambiguous: write a{token.text}(x) for the inverse function or "
                          f"1/{token.text}(x) for the reciprocal", token)
            self.fail(f"function {token.text!r} needs its argument in parentheses, e.g. {token.text}(x)", token)
        argument = self.tokens[i + 3] if i + 3 < len(self.tokens) else None
        suffix = [Token("op", "**", following.column), Token("num", exponent.text, exponent.column)]
        if argument is not None and argument.kind == "(":
            self.emit("func", token.text, token.column)
            self.open_paren(argument, is_call=True, suffix=suffix)
            return i + 4
        if argument is None or argument.kind not in ("num", "name"):
            self.fail(f"{token.text}^{exponent.text} needs an argument, e.g. {token.text}^{exponent.text}(x)", token)
        after = self.tokens[i + 4] if i + 4 < len(self.tokens) else None
        if not (after is None or after.kind in (")", ",", "func", "|") or (after.kind == "op" and after.text in "+-")):
            self.fail(f"ambiguous '{token.text}^{exponent.text} {argument.text}...': put the argument in parentheses",
                      token)
        self.emit("func", token.text, token.column)
        self.emit("(", "(", argument.column)
        self.emit(argument.kind, argument.text, argument.column)
        self.emit(")", ")", argument.column)
        self.out.extend(suffix)
        self.expect_operand = False
        return i + 4

    def operator(self, i, token, following):
        if token.kind == "|" and self.parens and self.parens[-1][2] == "|":
            self.close_paren(token)
            return i + 1
        if token.kind == "op":
            self.emit("op", token.text, token.column)
            self.expect_operand = True
            return i + 1
        if token.kind == ")":
            if not self.parens:
                self.fail("unmatched ')'", token)
            if self.parens[-1][2] == "|":
                self.fail("')' inside |...|: close the absolute value first", token)
            self.close_paren(token)
            return i + 1
        if token.kind == ",":
            if not self.parens or not self.parens[-1][0]:
                self.fail("unexpected ','", token)
            self.emit(",", ",", token.column)
            self.expect_operand = True
            return i + 1
        # An operand where an operator belongs: implicit multiplication, when the reading is unambiguous.
        previous = self.out[-1]
        if token.kind == "num":
            self.fail(f"unexpected {_describe(token)}", token)
        if token.kind == "(" and previous.kind == "name" and previous.text not in CONSTANTS \
                and len(previous.text) > 1:
            self.fail(unknown_function(previous.text), previous)
        self.emit("op", "*", token.column)
        self.expect_operand = True
        return i

    def open_paren(self, token, is_call, closer=")", suffix=()):
        if len(self.parens) >= MAX_PAREN_DEPTH:
            self.fail(f"parentheses nested more than {MAX_PAREN_DEPTH} deep", token)
        self.parens.append((is_call, token.column, closer, list(suffix)))
        self.emit("(", "(", token.column)
        self.expect_operand = True

    def close_paren(self, token):
        _, _, _, suffix = self.parens.pop()
        self.emit(")", ")", token.column)
        self.out.extend(suffix)
        self.expect_operand = False


def lex(text):
    """Turn a calculator expression into Python source plus a column map. Raises ExpressionError."""
    if not isinstance(text, str):
        raise ExpressionError("expression must be text")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters ({len(text)})")
    tokens = _Rewriter(text, _scan(text)).run()
    pieces, columns, numbers = [], [], {}
    offset = 0
    for token in tokens:
        if pieces:
            pieces.append(" ")
            columns.append(token.column)
            offset += 1
        if token.kind == "num":
            numbers[offset] = token.text
        pieces.append(token.text)
        columns.extend([token.column] * len(token.text))
        offset += len(token.text)
    return Lexed("".join(pieces), columns, numbers)
