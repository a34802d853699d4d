"""The derivative table for bench/diff_table.py: (gradcli expression, mpmath function of x, point).

Written independently of gradcli: each reference is plain mpmath, differentiated by mpmath.diff.
Four groups: a calculus derivative table, SymPy spellings, ML functions, calculator notation.
"""
import mpmath as mp


def _sig(x):
    return 1 / (1 + mp.exp(-x))


def _softplus(x):
    return mp.log(1 + mp.exp(x))


def _gelu(x):
    return x * (1 + mp.erf(x / mp.sqrt(2))) / 2


def _cot(x):
    return 1 / mp.tan(x)


CALCULUS = [
    ("x", lambda x: x, 2), ("x^2", lambda x: x**2, 3), ("x^3", lambda x: x**3, 1.5), ("x^10", lambda x: x**10, 1.1),
    ("x^-1", lambda x: 1 / x, 2), ("1/x^2", lambda x: x**-2, 3), ("x^(1/2)", lambda x: mp.sqrt(x), 2),
    ("x^(3/2)", lambda x: x**1.5, 2), ("x^(-1/3)", lambda x: x**(-mp.mpf(1) / 3), 2), ("x^pi", lambda x: x**mp.pi, 2),
    ("sqrt(x)", lambda x: mp.sqrt(x), 3), ("1/sqrt(x)", lambda x: 1 / mp.sqrt(x), 3),
    ("sqrt(1 - x^2)", lambda x: mp.sqrt(1 - x**2), 0.5), ("sqrt(x^2 + 1)", lambda x: mp.sqrt(x**2 + 1), 2),
    ("exp(x)", lambda x: mp.exp(x), 1), ("exp(-x)", lambda x: mp.exp(-x), 1), ("exp(2*x)", lambda x: mp.exp(2 * x), 0.5),
    ("exp(x^2)", lambda x: mp.exp(x**2), 0.7), ("exp(-x^2/2)", lambda x: mp.exp(-x**2 / 2), 1.3),
    ("2^x", lambda x: 2**x, 3), ("10^x", lambda x: 10**x, 0.5), ("x^x", lambda x: x**x, 2),
    ("x^sin(x)", lambda x: x**mp.sin(x), 2), ("log(x)", lambda x: mp.log(x), 2), ("log(x^2 + 1)", lambda x: mp.log(x**2 + 1), 1),
    ("log(log(x))", lambda x: mp.log(mp.log(x)), 3), ("log(x, 2)", lambda x: mp.log(x) / mp.log(2), 5),
    ("log(sin(x))", lambda x: mp.log(mp.sin(x)), 1), ("x*log(x)", lambda x: x * mp.log(x), 2),
    ("x*log(x) - x", lambda x: x * mp.log(x) - x, 2), ("log(x)/x", lambda x: mp.log(x) / x, 2),
    ("sin(x)", lambda x: mp.sin(x), 1), ("cos(x)", lambda x: mp.cos(x), 1), ("tan(x)", lambda x: mp.tan(x), 1),
    ("cot(x)", _cot, 1), ("sec(x)", lambda x: mp.sec(x), 1), ("csc(x)", lambda x: mp.csc(x), 1),
    ("sin(2*x)", lambda x: mp.sin(2 * x), 1), ("sin(x^2)", lambda x: mp.sin(x**2), 1.2),
    ("sin(x)^2", lambda x: mp.sin(x)**2, 1), ("cos(x)^3", lambda x: mp.cos(x)**3, 0.4),
    ("sin(x)*cos(x)", lambda x: mp.sin(x) * mp.cos(x), 0.3), ("sin(x)/x", lambda x: mp.sin(x) / x, 2),
    ("x*sin(x)", lambda x: x * mp.sin(x), 2), ("x^2*cos(x)", lambda x: x**2 * mp.cos(x), 2),
    ("exp(x)*sin(x)", lambda x: mp.exp(x) * mp.sin(x), 1), ("exp(-x)*cos(3*x)", lambda x: mp.exp(-x) * mp.cos(3 * x), 0.5),
    ("tan(x)^2", lambda x: mp.tan(x)**2, 0.6), ("sec(x)^2", lambda x: mp.sec(x)**2, 0.6),
    ("sec(x)*tan(x)", lambda x: mp.sec(x) * mp.tan(x), 0.6), ("sin(cos(x))", lambda x: mp.sin(mp.cos(x)), 1),
    ("cos(sin(x))", lambda x: mp.cos(mp.sin(x)), 1), ("sin(sin(sin(x)))", lambda x: mp.sin(mp.sin(mp.sin(x))), 1),
    ("asin(x)", lambda x: mp.asin(x), 0.3), ("acos(x)", lambda x: mp.acos(x), 0.3), ("atan(x)", lambda x: mp.atan(x), 2),
    ("asin(2*x)", lambda x: mp.asin(2 * x), 0.2), ("atan(1/x)", lambda x: mp.atan(1 / x), 2),
    ("atan(x^2)", lambda x: mp.atan(x**2), 1), ("x*atan(x)", lambda x: x * mp.atan(x), 1),
    ("asin(x)/sqrt(1 - x^2)", lambda x: mp.asin(x) / mp.sqrt(1 - x**2), 0.4),
    ("sinh(x)", lambda x: mp.sinh(x), 1), ("cosh(x)", lambda x: mp.cosh(x), 1), ("tanh(x)", lambda x: mp.tanh(x), 1),
    ("asinh(x)", lambda x: mp.asinh(x), 1), ("acosh(x)", lambda x: mp.acosh(x), 2), ("atanh(x)", lambda x: mp.atanh(x), 0.5),
    ("tanh(x)^2", lambda x: mp.tanh(x)**2, 0.5), ("sinh(x)*cosh(x)", lambda x: mp.sinh(x) * mp.cosh(x), 0.5),
    ("log(cosh(x))", lambda x: mp.log(mp.cosh(x)), 0.8), ("(x + 1)/(x - 1)", lambda x: (x + 1) / (x - 1), 3),
    ("(x^2 + 1)/(x^2 - 1)", lambda x: (x**2 + 1) / (x**2 - 1), 2), ("1/(1 + x^2)", lambda x: 1 / (1 + x**2), 1),
    ("x/(1 + x^2)", lambda x: x / (1 + x**2), 0.5), ("(2*x + 3)^5", lambda x: (2 * x + 3)**5, 0.1),
    ("(x^2 - 3*x + 1)^4", lambda x: (x**2 - 3 * x + 1)**4, 0.7), ("(1 + x)^(1/3)", lambda x: mp.cbrt(1 + x), 2),
    ("x^3 - 2*x^2 + 5*x - 7", lambda x: x**3 - 2 * x**2 + 5 * x - 7, 1.5),
    ("(x - 1)*(x - 2)*(x - 3)", lambda x: (x - 1) * (x - 2) * (x - 3), 0.5),
    ("exp(sin(x))", lambda x: mp.exp(mp.sin(x)), 1), ("exp(exp(x))", lambda x: mp.exp(mp.exp(x)), 0.5),
    ("sqrt(x + sqrt(x))", lambda x: mp.sqrt(x + mp.sqrt(x)), 2), ("log(x + sqrt(x^2 + 1))", lambda x: mp.log(x + mp.sqrt(x**2 + 1)), 1),
    ("x^2*exp(-x)", lambda x: x**2 * mp.exp(-x), 1), ("exp(x)/(1 + exp(x))", lambda x: mp.exp(x) / (1 + mp.exp(x)), 0.3),
    ("cos(x)^2 - sin(x)^2", lambda x: mp.cos(x)**2 - mp.sin(x)**2, 0.7), ("atan2(x, 1)", lambda x: mp.atan2(x, 1), 0.5),
    ("atan2(1, x)", lambda x: mp.atan2(1, x), 0.5), ("hypot(x, 3)", lambda x: mp.hypot(x, 3), 4),
    ("erf(x)", lambda x: mp.erf(x), 0.5), ("erfc(x)", lambda x: mp.erfc(x), 0.5), ("erf(x^2)", lambda x: mp.erf(x**2), 0.8),
    ("sin(x) + cos(x) + tan(x)", lambda x: mp.sin(x) + mp.cos(x) + mp.tan(x), 0.2),
    ("x^4*log(x)^2", lambda x: x**4 * mp.log(x)**2, 2), ("cos(x)/(1 + sin(x))", lambda x: mp.cos(x) / (1 + mp.sin(x)), 0.5),
]

SPELLINGS = [
    ("Abs(x)", lambda x: abs(x), -2), ("abs(x^3)", lambda x: abs(x**3), -1.5), ("Max(x, 1 - x)", lambda x: max(x, 1 - x), 2),
    ("Min(x, x^2)", lambda x: min(x, x**2), 2), ("max(x, 0)", lambda x: max(x, 0), 3), ("min(sin(x), cos(x))", lambda x: min(mp.sin(x), mp.cos(x)), 0.3),
    ("Heaviside(x)*x^2", lambda x: x**2 if x > 0 else 0, 1.5), ("heaviside(x - 1)*x", lambda x: x if x > 1 else 0, 2),
    ("sign(x)*x^2", lambda x: mp.sign(x) * x**2, -1), ("sgn(x)*sin(x)", lambda x: mp.sign(x) * mp.sin(x), 1),
    ("cbrt(x)", lambda x: mp.cbrt(x), 8), ("cbrt(x^2 + 1)", lambda x: mp.cbrt(x**2 + 1), 1), ("root(x, 3)", lambda x: mp.cbrt(x), 2),
    ("root(x, 5)", lambda x: mp.root(x, 5), 3), ("pow(x, 3)", lambda x: x**3, 2), ("pow(2, x)", lambda x: 2**x, 1),
    ("exp2(x)", lambda x: 2**x, 1.5), ("acot(x)", lambda x: mp.acot(x), 2), ("arccot(x)", lambda x: mp.acot(x), 0.5),
    ("asec(x)", lambda x: mp.asec(x), 2), ("arcsec(x)", lambda x: mp.asec(x), 3), ("acsc(x)", lambda x: mp.acsc(x), 2),
    ("arccsc(x)", lambda x: mp.acsc(x), 1.5), ("coth(x)", lambda x: mp.coth(x), 1), ("sech(x)", lambda x: mp.sech(x), 1),
    ("csch(x)", lambda x: mp.csch(x), 1), ("acoth(x)", lambda x: mp.acoth(x), 2), ("asech(x)", lambda x: mp.asech(x), 0.5),
    ("acsch(x)", lambda x: mp.acsch(x), 1), ("arccoth(x)", lambda x: mp.acoth(x), 3), ("arcsech(x)", lambda x: mp.asech(x), 0.3),
    ("arccsch(x)", lambda x: mp.acsch(x), 2), ("sech(x)^2", lambda x: mp.sech(x)**2, 0.5), ("coth(x)*csch(x)", lambda x: mp.coth(x) * mp.csch(x), 1),
    ("floor(x)*x", lambda x: mp.floor(x) * x, 2.5), ("ceiling(x) + x^2", lambda x: mp.ceil(x) + x**2, 1.5),
    ("ceil(x)*sin(x)", lambda x: mp.ceil(x) * mp.sin(x), 0.5), ("gamma(x)", lambda x: mp.gamma(x), 2.5),
    ("gamma(x + 1)", lambda x: mp.gamma(x + 1), 1.5), ("loggamma(x)", lambda x: mp.loggamma(x), 3),
    ("lgamma(x)", lambda x: mp.loggamma(x), 4), ("digamma(x)", lambda x: mp.digamma(x), 2),
    ("polygamma(1, x)", lambda x: mp.polygamma(1, x), 2), ("besselj(0, x)", lambda x: mp.besselj(0, x), 1),
    ("besselj(1, x)", lambda x: mp.besselj(1, x), 2), ("besselj(2, x^2)", lambda x: mp.besselj(2, x**2), 1),
    ("LambertW(x)", lambda x: mp.lambertw(x).real, 1), ("lambertw(x^2)", lambda x: mp.lambertw(x**2).real, 2),
    ("E**x", lambda x: mp.exp(x), 1), ("E^(2*x)", lambda x: mp.exp(2 * x), 0.5), ("e^x", lambda x: mp.exp(x), 2),
    ("e^(-x)*x", lambda x: mp.exp(-x) * x, 1), ("x*E", lambda x: x * mp.e, 3), ("pi*x^2", lambda x: mp.pi * x**2, 1),
    ("log2(x)", lambda x: mp.log(x, 2), 3), ("log10(x)", lambda x: mp.log10(x), 3), ("log1p(x)", lambda x: mp.log1p(x), 0.5),
    ("expm1(x)", lambda x: mp.expm1(x), 0.5), ("rsqrt(x)", lambda x: 1 / mp.sqrt(x), 2), ("ln(x)", lambda x: mp.log(x), 5),
    ("arcsin(x)", lambda x: mp.asin(x), 0.5), ("arccos(x)", lambda x: mp.acos(x), 0.5), ("arctan(x)", lambda x: mp.atan(x), 0.5),
    ("arcsinh(x)", lambda x: mp.asinh(x), 0.5), ("arccosh(x)", lambda x: mp.acosh(x), 1.5), ("arctanh(x)", lambda x: mp.atanh(x), 0.5),
    ("arsinh(x)", lambda x: mp.asinh(x), 2), ("arctan2(x, 2)", lambda x: mp.atan2(x, 2), 1), ("Sqrt(x)", lambda x: mp.sqrt(x), 2),
    ("Exp(x)", lambda x: mp.exp(x), 1), ("Log(x)", lambda x: mp.log(x), 2), ("maximum(x, 2)", lambda x: max(x, 2), 3),
    ("minimum(x, 2)", lambda x: min(x, 2), 1),
]

ML = [
    ("sigmoid(x)", _sig, 0.5), ("sigmoid(2*x - 1)", lambda x: _sig(2 * x - 1), 0.3), ("softplus(x)", _softplus, 1),
    ("softplus(-x)", lambda x: _softplus(-x), 1), ("relu(x)", lambda x: max(x, 0), 2), ("relu(x)^2", lambda x: max(x, 0)**2, 1.5),
    ("relu(1 - x)", lambda x: max(1 - x, 0), 0.5), ("gelu(x)", _gelu, 0.5), ("gelu(x)", _gelu, -1.2),
    ("silu(x)", lambda x: x * _sig(x), 1), ("silu(x)", lambda x: x * _sig(x), -2), ("swish(x)", lambda x: x * _sig(x), 0.7),
    ("mish(x)", lambda x: x * mp.tanh(_softplus(x)), 1), ("mish(x)", lambda x: x * mp.tanh(_softplus(x)), -0.5),
    ("elu(x)", lambda x: x if x > 0 else mp.expm1(x), -1), ("elu(x)", lambda x: x if x > 0 else mp.expm1(x), 2),
    ("elu(x, 0.5)", lambda x: x if x > 0 else mp.expm1(x) / 2, -0.7), ("leaky_relu(x)", lambda x: x if x > 0 else x / 100, -3),
    ("leaky_relu(x)", lambda x: x if x > 0 else x / 100, 3), ("leaky_relu(x, 0.2)", lambda x: x if x > 0 else x / 5, -1),
    ("xlogy(x, 2)", lambda x: x * mp.log(2), 1), ("xlogy(2, x)", lambda x: 2 * mp.log(x), 3), ("xlogy(x, x)", lambda x: x * mp.log(x), 2),
    ("logsumexp(x, 0)", lambda x: mp.log(mp.exp(x) + 1), 1), ("logsumexp(x, 2*x, 1)", lambda x: mp.log(mp.exp(x) + mp.exp(2 * x) + mp.e), 0.5),
    ("tanh(x)", lambda x: mp.tanh(x), 2), ("x/(1 + abs(x))", lambda x: x / (1 + abs(x)), 0.5),
    ("log(sigmoid(x))", lambda x: mp.log(_sig(x)), 1), ("sigmoid(x)*(1 - sigmoid(x))", lambda x: _sig(x) * (1 - _sig(x)), 0.5),
    ("x*sigmoid(1.702*x)", lambda x: x * _sig(mp.mpf(1702) / 1000 * x), 1),
    ("0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3)))",
     lambda x: x * (1 + mp.tanh(mp.sqrt(2 / mp.pi) * (x + mp.mpf(44715) / 10**6 * x**3))) / 2, 0.8),
    ("log(1 + exp(-abs(x))) + max(x, 0)", lambda x: mp.log(1 + mp.exp(-abs(x))) + max(x, 0), 1.5),
    ("-log(sigmoid(x))", lambda x: -mp.log(_sig(x)), -1), ("(x - 3)^2/2", lambda x: (x - 3)**2 / 2, 1),
    ("sqrt(x^2 + 1e-8)", lambda x: mp.sqrt(x**2 + mp.mpf(10)**-8), 0.1), ("log(cosh(x - 1))", lambda x: mp.log(mp.cosh(x - 1)), 2),
    ("huber", None, None),
    ("exp(x)/(exp(x) + exp(2))", lambda x: mp.exp(x) / (mp.exp(x) + mp.exp(2)), 1),
    ("x*erf(x)", lambda x: x * mp.erf(x), 0.5), ("softplus(x) - log(2)", lambda x: _softplus(x) - mp.log(2), 0.2),
]
ML = [row for row in ML if row[1] is not None]

NOTATION = [
    ("|x|", lambda x: abs(x), 3), ("|x - 2|", lambda x: abs(x - 2), 1), ("|sin(x)|", lambda x: abs(mp.sin(x)), 4),
    ("x|x|", lambda x: x * abs(x), -2), ("|x|^3", lambda x: abs(x)**3, -1), ("x²", lambda x: x**2, 3),
    ("x³ + x²", lambda x: x**3 + x**2, 2), ("x⁻¹", lambda x: 1 / x, 2), ("3x²", lambda x: 3 * x**2, 1),
    ("sin^2(x)", lambda x: mp.sin(x)**2, 1), ("sin^2 x", lambda x: mp.sin(x)**2, 0.5), ("cos^2(x)", lambda x: mp.cos(x)**2, 1),
    ("sin²x + cos x", lambda x: mp.sin(x)**2 + mp.cos(x), 1), ("tan^3(x)", lambda x: mp.tan(x)**3, 0.5),
    ("√x", lambda x: mp.sqrt(x), 4), ("√(x + 1)", lambda x: mp.sqrt(x + 1), 3), ("2√x", lambda x: 2 * mp.sqrt(x), 2),
    ("π·x", lambda x: mp.pi * x, 1), ("2×x", lambda x: 2 * x, 1), ("x·sin(x)", lambda x: x * mp.sin(x), 1),
    ("πx²", lambda x: mp.pi * x**2, 2), ("x − 1/x", lambda x: x - 1 / x, 2), ("x÷(x + 1)", lambda x: x / (x + 1), 1),
    ("2x", lambda x: 2 * x, 5), ("3(x + 1)^2", lambda x: 3 * (x + 1)**2, 1), ("(x + 1)(x - 1)", lambda x: (x + 1) * (x - 1), 2),
    ("x(x + 1)", lambda x: x * (x + 1), 3), ("2sin(x)", lambda x: 2 * mp.sin(x), 1), ("sin x", lambda x: mp.sin(x), 1),
    ("sin x cos x", lambda x: mp.sin(x) * mp.cos(x), 1), ("ln x", lambda x: mp.log(x), 2), ("e^(2x)", lambda x: mp.exp(2 * x), 1),
    ("x**2", lambda x: x**2, 3), ("x ^ 2 ^ 2", lambda x: x**4, 1.2), ("-x^2", lambda x: -x**2, 3), ("--x", lambda x: x, 2),
    ("1e-3*x^2", lambda x: x**2 / 1000, 10), (".5x", lambda x: x / 2, 3), ("2.5*x^1.5", lambda x: 2.5 * x**1.5, 2),
    ("sqrt x", lambda x: mp.sqrt(x), 2),
]

TABLE = [(expr, f, mp.mpf(point) if not isinstance(point, str) else point, group)
         for group, rows in (("calculus", CALCULUS), ("sympy spellings", SPELLINGS), ("ml", ML), ("notation", NOTATION))
         for expr, f, point in rows]
