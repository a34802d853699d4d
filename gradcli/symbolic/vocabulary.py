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
}

# calculator spellings -> canonical name
ALIASES = {
    "ln": "log", "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arsinh": "asinh", "arcosh": "acosh",
    "artanh": "atanh", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "sgn": "sign",
    "arctan2": "atan2",
    "maximum": "max", "minimum": "min", "reciprocal_sqrt": "rsqrt",
}

CONSTANTS = ("pi", "e")

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
