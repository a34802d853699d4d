"""Validate ``gradcli diff`` options into a DiffRequest; every problem is one line (exit 2 in the CLI).

Options arrive as strings (not click types) so that a bad ``--order`` or ``--format`` gets the same
one-line error as a bad expression, instead of click's multi-line usage block.
"""
FORMATS = ("table", "plain", "json", "latex", "python")
STYLES = ("gradcli", "torch")
# text forms each output format prints (ASCII is always needed: warnings, JSON, messages)
STYLES_FOR_FORMAT = {"table": ("ascii", "unicode"), "plain": ("ascii",), "json": ("ascii",),
                     "latex": ("ascii", "latex"), "python": ("ascii",)}
MAX_TIMEOUT = 600.0


class DiffOptionError(ValueError):
    pass


def _number(text, option, kind, low, high):
    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise DiffOptionError(f"{option}: {text!r} is not {'an integer' if kind is int else 'a number'}") from None
    if not (low <= value <= high):
        raise DiffOptionError(f"{option}: must be between {low} and {high:g}, got {text}")
    return value


def build_request(expressions, *, wrt, order, hessian, at, check, positive, complex_, fmt, simplify,
                  simplify_timeout, emit_function, style, tty):
    """(DiffRequest, output format) from raw CLI values."""
    from gradcli.expr.api import DiffRequest
    from gradcli.expr.calculus import MAX_ORDER

    if not expressions:
        raise DiffOptionError("give an expression, e.g. gradcli diff \"sqrt(x) + 1/x\"")
    for text in expressions:
        if text.startswith("--"):
            raise DiffOptionError(f"no such option: {text.split('=')[0]}")
    if positive and complex_:
        raise DiffOptionError("--positive and --complex exclude each other")
    if fmt is None:
        fmt = "table" if tty else "plain"
    if fmt not in FORMATS:
        raise DiffOptionError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    if style not in STYLES:
        raise DiffOptionError(f"--style: {style!r} is not one of {', '.join(STYLES)}")
    if style != "gradcli" and not emit_function:
        raise DiffOptionError("--style only applies to --emit-function")
    if emit_function and fmt not in ("table", "plain", "python"):
        raise DiffOptionError("--emit-function prints Python; it cannot be combined with --format " + fmt)
    wrt_names = None
    if wrt is not None:
        wrt_names = [name.strip() for name in wrt.split(",")]
        if not all(wrt_names):
            raise DiffOptionError(f"--wrt: expected names separated by commas, got {wrt!r}")
    request = DiffRequest(
        expressions=list(expressions), wrt=wrt_names, order=_number(order, "--order", int, 1, MAX_ORDER),
        hessian=hessian, at=list(at), check=check,
        assumptions="positive" if positive else "complex" if complex_ else "real",
        simplify=simplify, simplify_timeout=_number(simplify_timeout, "--simplify-timeout", float, 0.0, MAX_TIMEOUT),
        python_code=fmt == "python" and not emit_function, emit_function=emit_function, style=style,
        styles=STYLES_FOR_FORMAT[fmt])
    return request, fmt


DEFAULT_BUDGET = 5.0


def total_budget(budget, simplify_timeout):
    """Seconds for the whole command: ``--budget``, else 5 s (``GRADCLI_DIFF_BUDGET`` if set) or
    ``--simplify-timeout`` + 2 if larger."""
    import os
    if budget is not None:
        return _number(budget, "--budget", float, 0.5, MAX_TIMEOUT + 60)
    default = DEFAULT_BUDGET
    if os.environ.get("GRADCLI_DIFF_BUDGET"):
        default = _number(os.environ["GRADCLI_DIFF_BUDGET"], "GRADCLI_DIFF_BUDGET", float, 0.5, MAX_TIMEOUT + 60)
    try:
        simplify = float(simplify_timeout)
    except (TypeError, ValueError):
        simplify = 0.0    # build_request reports the bad value
    return max(default, min(simplify, MAX_TIMEOUT) + 2.0)
