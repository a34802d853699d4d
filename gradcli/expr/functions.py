"""SymPy side of the whitelisted functions, including the ML ones SymPy lacks.

sigmoid, softplus, relu and logsumexp are real SymPy Functions (not macros) so that derivatives read the
way ML people write them (``sigmoid(x)*(1 - sigmoid(x))``) and so that each maps one-to-one onto an engine
op. ``to_elementary`` rewrites them into exp/log/Max for simplification and proofs. gelu is the exact
erf form, x·Φ(x), built from erf directly.
"""
import sympy
from sympy import S, Function

from gradcli.expr.vocabulary import FUNCTIONS


def _powered(exp, text):
    """LaTeX of f(x) raised to ``exp`` (SymPy's printer passes the power of sigmoid(x)**2 here)."""
    return text if exp is None else r"%s^{%s}" % (text, exp)


class _ElementaryBacked(Function):
    """A function whose numeric value comes from its elementary rewrite (used by evalf)."""

    def _elementary(self):
        raise NotImplementedError

    def _eval_evalf(self, prec):
        return self._elementary()._eval_evalf(prec)

    def _eval_is_real(self):
        if all(arg.is_extended_real for arg in self.args):
            return True
        return None

    def _eval_is_finite(self):
        if all(arg.is_real for arg in self.args):
            return True
        return None


class sigmoid(_ElementaryBacked):  # noqa: N801 - printed name must match the ML spelling
    """1 / (1 + exp(-x))."""
    nargs = 1

    @classmethod
    def eval(cls, x):
        if x.is_zero:
            return S.Half
        if x is S.Infinity:
            return S.One
        if x is S.NegativeInfinity:
            return S.Zero
        return None

    def fdiff(self, argindex=1):
        return self * (1 - self)

    def _elementary(self):
        return 1 / (1 + sympy.exp(-self.args[0]))

    def _eval_rewrite_as_exp(self, x, **kwargs):
        return 1 / (1 + sympy.exp(-x))

    def _eval_is_positive(self):
        return True if self.args[0].is_extended_real else None

    def _latex(self, printer, exp=None):
        return _powered(exp, r"\sigma\left(%s\right)" % printer._print(self.args[0]))


class softplus(_ElementaryBacked):  # noqa: N801
    """log(1 + exp(x))."""
    nargs = 1

    @classmethod
    def eval(cls, x):
        if x.is_zero:
            return sympy.log(2)
        return None

    def fdiff(self, argindex=1):
        return sigmoid(self.args[0])

    def _elementary(self):
        return sympy.log(1 + sympy.exp(self.args[0]))

    def _eval_rewrite_as_exp(self, x, **kwargs):
        return sympy.log(1 + sympy.exp(x))

    def _eval_is_positive(self):
        return True if self.args[0].is_extended_real else None

    def _latex(self, printer, exp=None):
        return _powered(exp, r"\operatorname{softplus}\left(%s\right)" % printer._print(self.args[0]))


class relu(_ElementaryBacked):  # noqa: N801
    """max(0, x); its derivative is Heaviside(x), with SymPy's convention Heaviside(0) = 1/2."""
    nargs = 1

    @classmethod
    def eval(cls, x):
        if x.is_nonnegative:
            return x
        if x.is_nonpositive:
            return S.Zero
        return None

    def fdiff(self, argindex=1):
        return sympy.Heaviside(self.args[0])

    def _elementary(self):
        return sympy.Max(0, self.args[0])

    def _eval_rewrite_as_Max(self, x, **kwargs):
        return sympy.Max(0, x)

    def _eval_is_nonnegative(self):
        return True if self.args[0].is_extended_real else None

    def _latex(self, printer, exp=None):
        return _powered(exp, r"\operatorname{relu}\left(%s\right)" % printer._print(self.args[0]))


class logsumexp(_ElementaryBacked):  # noqa: N801
    """log(exp(a) + exp(b) + ...) of its arguments; ∂/∂a = exp(a - logsumexp(...)) (a softmax entry)."""

    @classmethod
    def eval(cls, *args):
        if len(args) == 1:
            return args[0]
        return None

    def fdiff(self, argindex=1):
        return sympy.exp(self.args[argindex - 1] - self)

    def _elementary(self):
        return sympy.log(sympy.Add(*[sympy.exp(a) for a in self.args]))

    def _eval_rewrite_as_exp(self, *args, **kwargs):
        return sympy.log(sympy.Add(*[sympy.exp(a) for a in args]))

    def _latex(self, printer, exp=None):
        return _powered(exp, r"\operatorname{logsumexp}\left(%s\right)" % ", ".join(printer._print(a) for a in self.args))


ML_FUNCTIONS = (sigmoid, softplus, relu, logsumexp)


def to_elementary(expr):
    """Rewrite the ML functions into exp/log/Max so that simplify and proofs can see through them."""
    replacements = {}
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, ML_FUNCTIONS) and node not in replacements:
            replacements[node] = to_elementary(node._elementary())
    return expr.xreplace(replacements) if replacements else expr


def _log(x, base=None):
    return sympy.log(x) if base is None else sympy.log(x) / sympy.log(base)


def _gelu(x):
    return x * (1 + sympy.erf(x / sympy.sqrt(2))) / 2


def _cbrt(x):
    return sympy.Pow(x, sympy.Rational(1, 3))   # SymPy's principal cube root (not real for x < 0)


def _root(x, n):
    return sympy.Pow(x, 1 / n)


def _elu(x, alpha=sympy.Integer(1)):
    return relu(x) + alpha * sympy.Min(0, sympy.exp(x) - 1)


def _leaky_relu(x, slope=sympy.Rational(1, 100)):
    return relu(x) - slope * relu(-x)


# canonical name -> callable building the SymPy expression from already-built arguments
BUILDERS = {
    "sqrt": sympy.sqrt, "exp": sympy.exp, "log": _log,
    "log2": lambda x: sympy.log(x) / sympy.log(2), "log10": lambda x: sympy.log(x) / sympy.log(10),
    "log1p": lambda x: sympy.log(1 + x), "expm1": lambda x: sympy.exp(x) - 1, "rsqrt": lambda x: 1 / sympy.sqrt(x),
    "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan, "cot": sympy.cot, "sec": sympy.sec, "csc": sympy.csc,
    "asin": sympy.asin, "acos": sympy.acos, "atan": sympy.atan,
    "atan2": sympy.atan2, "hypot": lambda y, x: sympy.sqrt(y ** 2 + x ** 2),
    "sinh": sympy.sinh, "cosh": sympy.cosh, "tanh": sympy.tanh,
    "asinh": sympy.asinh, "acosh": sympy.acosh, "atanh": sympy.atanh,
    "abs": sympy.Abs, "sign": sympy.sign, "heaviside": sympy.Heaviside,
    "erf": sympy.erf, "erfc": sympy.erfc,
    "max": sympy.Max, "min": sympy.Min,
    "sigmoid": sigmoid, "softplus": softplus, "relu": relu, "gelu": _gelu, "logsumexp": logsumexp,
    "acot": sympy.acot, "asec": sympy.asec, "acsc": sympy.acsc, "coth": sympy.coth, "sech": sympy.sech,
    "csch": sympy.csch, "acoth": sympy.acoth, "asech": sympy.asech, "acsch": sympy.acsch,
    "cbrt": _cbrt, "root": _root, "pow": sympy.Pow, "exp2": lambda x: sympy.Pow(2, x),
    "floor": sympy.floor, "ceiling": sympy.ceiling, "gamma": sympy.gamma, "loggamma": sympy.loggamma,
    "digamma": lambda x: sympy.polygamma(0, x), "polygamma": sympy.polygamma, "besselj": sympy.besselj,
    "LambertW": sympy.LambertW, "DiracDelta": sympy.DiracDelta,
    "silu": lambda x: x * sigmoid(x), "mish": lambda x: x * sympy.tanh(softplus(x)), "elu": _elu,
    "leaky_relu": _leaky_relu, "xlogy": lambda x, y: x * sympy.log(y),
}

assert set(BUILDERS) == set(FUNCTIONS), set(BUILDERS) ^ set(FUNCTIONS)

CONSTANT_VALUES = {"pi": sympy.pi, "e": sympy.E, "E": sympy.E}
