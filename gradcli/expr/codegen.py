"""Python code from derivatives: numpy functions (--format python) and autograd Functions (--emit-function).

One small printer serves three dialects (numpy, gradcli, torch). Engine dialects take their op names from
the expression -> engine mapping (opmap.py), so emitted code uses exactly the ops the autograd column ran.
"""
import sympy

from gradcli.expr.formatting import ascii as ascii_form
from gradcli.expr.opmap import COMPOSITE_ROWS, ENGINE_REWRITES, SYMBOLIC_ONLY_HEADS, engine_op_for_head, \
    rewrite_for_engine

PREC_ADD, PREC_MUL, PREC_NEG, PREC_POW, PREC_ATOM = 10, 20, 25, 30, 100
RESERVED = {"np", "numpy", "math", "gradcli", "torch", "F", "Function", "ctx", "grad_output", "x_", "_erf"}

NUMPY_FUNCTIONS = {
    "exp": "np.exp", "log": "np.log", "sin": "np.sin", "cos": "np.cos", "tan": "np.tan",
    "asin": "np.arcsin", "acos": "np.arccos", "atan": "np.arctan", "sinh": "np.sinh", "cosh": "np.cosh",
    "tanh": "np.tanh", "asinh": "np.arcsinh", "acosh": "np.arccosh", "atanh": "np.arctanh",
    "Abs": "np.abs", "sign": "np.sign", "erf": "_erf", "sigmoid": "_sigmoid", "softplus": "_softplus",
    "relu": "_relu", "floor": "np.floor", "ceiling": "np.ceil", "gamma": "_gamma", "loggamma": "_lgamma",
}
NUMPY_HELPERS = {
    "_erf": "_erf = np.vectorize(math.erf, otypes=[float])\n",
    "_sigmoid": "def _sigmoid(x):\n    return np.exp(-np.logaddexp(0, -x))\n",
    "_softplus": "def _softplus(x):\n    return np.logaddexp(0, x)\n",
    "_relu": "def _relu(x):\n    return np.maximum(x, 0)\n",
    "_gamma": "_gamma = np.vectorize(math.gamma, otypes=[float])\n",
    "_lgamma": "_lgamma = np.vectorize(math.lgamma, otypes=[float])\n",
}


class CodegenError(ValueError):
    pass


class TensorPrinter:
    """Precedence-aware printer for ``dialect`` in ("numpy", "gradcli", "torch")."""

    def __init__(self, dialect, rename=None):
        self.dialect = dialect
        self.ns = {"numpy": "np", "gradcli": "gradcli", "torch": "torch"}[dialect]
        self.rename = rename or {}

    def doprint(self, expr):
        return self._print(expr)[0]

    def _wrap(self, printed, minimum):
        text, precedence = printed
        return text if precedence >= minimum else f"({text})"

    def _print(self, expr):
        if expr.is_Symbol:
            return self.rename.get(expr.name, expr.name), PREC_ATOM
        if not expr.free_symbols:
            return self._constant(expr)
        if expr.is_Add:
            return self._add(expr)
        if expr.is_Mul:
            return self._mul(expr)
        if expr.is_Pow:
            return self._pow(expr)
        return self._function(expr)

    def _constant(self, expr):
        if expr.is_Integer:
            return (str(expr), PREC_ATOM) if expr >= 0 else (str(expr), PREC_NEG)
        if expr.is_Rational:
            return f"{expr.p}/{expr.q}", PREC_MUL
        if expr is sympy.pi:
            return "math.pi", PREC_ATOM
        if expr is sympy.E:
            return "math.e", PREC_ATOM
        if expr.is_Pow and expr.exp == sympy.S.Half and expr.base.is_Integer:
            return f"math.sqrt({expr.base})", PREC_ATOM
        if isinstance(expr, sympy.log) and expr.args[0].is_Integer:
            return f"math.log({expr.args[0]})", PREC_ATOM
        value = complex(expr.evalf(20))
        if value.imag:
            raise CodegenError(f"the constant {expr} is not real")
        return (repr(value.real), PREC_ATOM) if value.real >= 0 else (repr(value.real), PREC_NEG)

    def _add(self, expr):
        terms = sorted(expr.as_ordered_terms(), key=lambda t: 1 if t.could_extract_minus_sign() else 0)
        out = ""
        for k, term in enumerate(terms):
            if term.could_extract_minus_sign():
                body = self._wrap(self._print(-term), PREC_MUL)
                out += ("-" if k == 0 else " - ") + body
            else:
                body = self._wrap(self._print(term), PREC_ADD)
                out += body if k == 0 else " + " + body
        return out, PREC_ADD

    def _mul(self, expr):
        if expr.could_extract_minus_sign():
            return "-" + self._wrap(self._print(-expr), PREC_POW), PREC_NEG
        numerator, denominator = [], []
        for factor in expr.as_ordered_factors():
            if factor.is_Pow and factor.exp.is_Rational and factor.exp < 0:
                denominator.append(sympy.Pow(factor.base, -factor.exp))
            elif factor.is_Rational and factor.q != 1:
                if factor.p != 1:
                    numerator.append(sympy.Integer(factor.p))
                denominator.append(sympy.Integer(factor.q))
            else:
                numerator.append(factor)
        top = " * ".join(self._wrap(self._print(f), PREC_MUL) for f in numerator) or "1"
        if not denominator:
            return top, PREC_MUL
        bottom = " * ".join(self._wrap(self._print(f), PREC_MUL) for f in denominator)
        if len(denominator) > 1:
            bottom = f"({bottom})"
        else:
            bottom = self._wrap(self._print(denominator[0]), PREC_POW)
        return f"{top} / {bottom}", PREC_MUL

    def _pow(self, expr):
        base, exponent = expr.base, expr.exp
        inner = self._print(base)
        if exponent == sympy.S.Half:
            return self._call("sqrt", [inner[0]]), PREC_ATOM
        if exponent == -sympy.S.Half:
            if self.dialect == "numpy":
                return f"1 / np.sqrt({inner[0]})", PREC_MUL
            return self._call("rsqrt", [inner[0]]), PREC_ATOM
        if exponent.is_Rational and exponent < 0:
            return f"1 / {self._wrap(self._print(sympy.Pow(base, -exponent)), PREC_POW)}", PREC_MUL
        power = self._wrap(self._print(exponent), PREC_ATOM) if not exponent.is_Integer else str(exponent)
        if exponent.is_Rational and not exponent.is_Integer:
            power = f"({exponent.p}/{exponent.q})"
        return f"{self._wrap(inner, PREC_POW + 1)}**{power}", PREC_POW

    def _call(self, op, args):
        return f"{self.ns}.{op}({', '.join(args)})"

    def _function(self, expr):
        head = type(expr).__name__
        if head in ENGINE_REWRITES:
            return self._print(rewrite_for_engine(expr))
        args = [self._print(arg)[0] for arg in expr.args]
        if head in ("Max", "Min"):
            op = {"numpy": "np.", "gradcli": "gradcli.", "torch": "torch."}[self.dialect] + \
                ("maximum" if head == "Max" else "minimum")
            text = args[0]
            for arg in args[1:]:
                text = f"{op}({text}, {arg})"
            return text, PREC_ATOM
        if head == "logsumexp":
            if self.dialect == "numpy":
                text = args[0]
                for arg in args[1:]:
                    text = f"np.logaddexp({text}, {arg})"
                return text, PREC_ATOM
            stacked = f"{self.ns}.stack([{', '.join(args)}])"
            return f"{self.ns}.logsumexp({stacked}, dim=0)", PREC_ATOM
        if head == "atan2":
            return f"{'np.arctan2' if self.dialect == 'numpy' else self.ns + '.atan2'}({args[0]}, {args[1]})", PREC_ATOM
        if head == "Heaviside":
            if self.dialect == "numpy":
                return f"np.heaviside({args[0]}, 0.5)", PREC_ATOM
            return f"({self.ns}.sign({args[0]}) + 1) * 0.5", PREC_MUL
        if self.dialect == "numpy":
            if head in NUMPY_FUNCTIONS:
                return f"{NUMPY_FUNCTIONS[head]}({args[0]})", PREC_ATOM
            if head in ("cot", "sec", "csc"):
                inverse = {"cot": "tan", "sec": "cos", "csc": "sin"}[head]
                return f"1 / np.{inverse}({args[0]})", PREC_MUL
            if head == "erfc":
                return f"1 - _erf({args[0]})", PREC_ADD
        else:
            if head == "softplus" and self.dialect == "torch":
                return f"torch.nn.functional.softplus({args[0]})", PREC_ATOM
            op = engine_op_for_head(head)
            if op is not None:
                return self._call(op, args[:1]), PREC_ATOM
            if head in COMPOSITE_ROWS:
                return COMPOSITE_ROWS[head][0].format(ns=self.ns, x=args[0]), PREC_ADD
        if head in SYMBOLIC_ONLY_HEADS:
            raise CodegenError(f"{head} is computed symbolically only: gradcli cannot write it as "
                               f"{self.dialect} code")
        raise CodegenError(f"cannot write {head} as {self.dialect} code")


def safe_names(variables):
    """Variable name -> Python-safe name in generated code (a variable called 'np' must not shadow numpy)."""
    return {str(v): (f"{v}_" if str(v) in RESERVED else str(v)) for v in variables}


def cse_lines(exprs, printer, indent="    "):
    """(assignment lines, printed reduced expressions) after common-subexpression elimination."""
    replacements, reduced = sympy.cse(exprs, symbols=sympy.numbered_symbols("_c"), optimizations="basic")
    lines = [f"{indent}{symbol} = {printer.doprint(value)}" for symbol, value in replacements]
    return lines, [printer.doprint(e) for e in reduced]


def numpy_module(derivs, formulas_exprs):
    """``--format python``: numpy code for f and its derivatives, CSE'd. ``formulas_exprs``: [(entry, expr)]."""
    rename = safe_names(derivs.variables)
    printer = TensorPrinter("numpy", rename)
    params = ", ".join(rename[str(v)] for v in derivs.variables)
    definitions = [f"    {symbol} = {printer.doprint(value)}" for symbol, value in derivs.definitions]
    groups = {}
    for entry, expr in formulas_exprs:
        groups.setdefault((entry.output, len(entry.wrt)), []).append((entry, expr))
    body = []
    for (output, order), items in groups.items():
        name = derivs.names[output]
        function = name if order == 0 else (f"grad_{name}" if order == 1 else f"d{order}_{name}")
        lines, printed = cse_lines([expr for _, expr in items], printer)
        doc = (f"{name}({params}) = {ascii_form(derivs.exprs[output])}" if order == 0
               else "(" + ", ".join(entry.label("ascii") for entry, _ in items) + ")")
        body += ["", "", f"def {function}({params}):", f'    """{doc}"""']
        body += (definitions if order else []) + lines
        body.append(f"    return {printed[0]}" if len(printed) == 1 else f"    return ({', '.join(printed)})")
    text = "\n".join(body)
    helpers = [code for name, code in NUMPY_HELPERS.items() if name + "(" in text]
    head = ['"""Generated by gradcli diff."""', "import math", "", "import numpy as np"]
    if helpers:
        head += ["", ""] + ["\n\n".join(helpers).rstrip()]
    return "\n".join(head) + "\n" + text + "\n"
