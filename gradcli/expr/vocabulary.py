"""The names an expression may use: whitelisted functions (with their arity) and constants.

Pure data, no SymPy import, so the lexer can classify names cheaply. ``functions.py`` maps each
canonical name to its SymPy constructor; ``opmap.py`` maps SymPy heads to engine ops.
"""

# canonical name -> (min args, max args or None for "any number")
FUNCTIONS = {
    "sqrt": (1, 1), "exp": (1, 1), "log": (1, 2), "log2": (1, 1), "log10": (1, 1),
    "log1p": (1, 1), "expm1": (1, 1), "rsqrt": (1, 1),
    "sin": (1, 1), "cos": (1, 1), "tan": (1, 1), "cot": (1, 1), "sec": (1, 1), "csc": (1, 1),
    "asin": (1, 1), "acos": (1, 1), "atan": (1, 1), "atan2": (2, 2), "hypot": (2, 2),
    "sinh": (1, 1), "cosh": (1, 1), "tanh": (1, 1), "asinh": (1, 1), "acosh": (1, 1), "atanh": (1, 1),
    "abs": (1, 1), "sign": (1, 1), "heaviside": (1, 1),
    "erf": (1, 1), "erfc": (1, 1),
    "max": (2, None), "min": (2, None),
    "sigmoid": (1, 1), "softplus": (1, 1), "relu": (1, 1), "gelu": (1, 1), "logsumexp": (1, None),
    # reciprocal and inverse trigonometric/hyperbolic functions
    "acot": (1, 1), "asec": (1, 1), "acsc": (1, 1), "coth": (1, 1), "sech": (1, 1), "csch": (1, 1),
    "acoth": (1, 1), "asech": (1, 1), "acsch": (1, 1),
    # roots and powers
    "cbrt": (1, 1), "root": (2, 2), "pow": (2, 2), "exp2": (1, 1),
    # steps and special functions
    "floor": (1, 1), "ceiling": (1, 1), "gamma": (1, 1), "loggamma": (1, 1), "digamma": (1, 1),
    "polygamma": (2, 2), "besselj": (2, 2), "LambertW": (1, 1), "DiracDelta": (1, 1),
    # more ML functions
    "silu": (1, 1), "mish": (1, 1), "elu": (1, 2), "leaky_relu": (1, 2), "xlogy": (2, 2),
}

# Computed symbolically only: no engine op, so the autograd and finite-difference columns stay empty
# (the output says so) and --format python / --emit-function refuse what numpy/the engine cannot compute.
SYMBOLIC_ONLY = ("gamma", "loggamma", "digamma", "polygamma", "besselj", "LambertW", "DiracDelta")

# Known to users, deliberately not in the grammar: the reason replaces "unknown function".
REFUSED = {
    "Piecewise": "Piecewise needs conditions, which the grammar has no syntax for; write it with heaviside(), "
                 "max/min, abs or sign",
}

# calculator spellings -> canonical name
ALIASES = {
    "ln": "log", "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arsinh": "asinh", "arcosh": "acosh",
    "artanh": "atanh", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "sgn": "sign",
    "arctan2": "atan2",
    "maximum": "max", "minimum": "min", "reciprocal_sqrt": "rsqrt",
    "arccot": "acot", "arcsec": "asec", "arccsc": "acsc", "arcoth": "acoth", "arccoth": "acoth",
    "arsech": "asech", "arcsech": "asech", "arcsch": "acsch", "arccsch": "acsch",
    "ceil": "ceiling", "lgamma": "loggamma", "lambertw": "LambertW", "swish": "silu", "leakyrelu": "leaky_relu",
    "power": "pow",
    # SymPy's capitalised spellings
    "Abs": "abs", "Max": "max", "Min": "min", "Heaviside": "heaviside", "Sign": "sign", "Exp": "exp",
    "Log": "log", "Sqrt": "sqrt",
}

CONSTANTS = ("pi", "e", "E")    # e and E are Euler's number unless named in --wrt

# Single characters accepted for convenience and the ASCII they stand for.
UNICODE_SUBSTITUTES = {
    "\u03c0": "pi",   # π
    "\u2212": "-",    # − (minus sign)
    "\u00d7": "*",    # ×
    "\u00b7": "*",    # ·
    "\u22c5": "*",    # ⋅
    "\u00f7": "/",    # ÷
    "\u221a": "sqrt",  # √
}


def canonical_function(name):
    """The canonical function name for ``name``, or None if it is not a function."""
    name = ALIASES.get(name, name)
    return name if name in FUNCTIONS else None


def suggestion(name):
    """The known function ``name`` was probably meant to be ("sinn" -> "sin", "Tanh" -> "tanh"), or None."""
    import difflib
    known = sorted(set(FUNCTIONS) | set(ALIASES))
    lowered = {k.lower(): k for k in known}
    if name.lower() in lowered:
        return lowered[name.lower()]
    swapped = [k for k in lowered if len(k) == len(name) and sorted(k) == sorted(name.lower())
               and sum(a != b for a, b in zip(k, name.lower())) == 2]   # tahn -> tanh
    if swapped:
        return lowered[swapped[0]]
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.8)
    return lowered[close[0]] if close else None


def function_prefix(name):
    """(function, rest) when a variable name reads as a function glued to its argument (sinx, expy)."""
    for length in range(min(len(name) - 1, 6), 1, -1):
        head, rest = name[:length], name[length:]
        if canonical_function(head) and rest.isalpha() and len(rest) <= 2:
            return head, rest
    return None
