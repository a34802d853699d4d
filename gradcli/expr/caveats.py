"""Warnings about what a derivative contains: steps, kinks, distributions, branches, infinities, leftovers."""
import sympy

from gradcli.expr.model import Note

_CAVEATS = (
    ("heaviside", sympy.Heaviside,
     "{labels} {contain} Heaviside: a step; exactly at the step SymPy uses Heaviside(0) = 1/2, autograd "
     "engines usually 0"),
    ("sign", sympy.sign,
     "{labels} {contain} sign: the function has a kink where its argument is 0 (sign(0) = 0 is a convention)"),
    ("diracdelta", sympy.DiracDelta,
     "{labels} {contain} DiracDelta: a distribution, not a pointwise value, where its argument is 0"),
    ("piecewise", sympy.Piecewise,
     "{labels} {be} piecewise: which branch applies depends on the point"),
    ("derivative", sympy.Derivative,
     "{labels} {contain} an unevaluated Derivative: SymPy could not differentiate part of it"),
)


def _phrase(template, labels):
    plural = len(labels) > 1
    return template.format(labels=", ".join(labels), contain="contain" if plural else "contains",
                           be="are" if plural else "is")


def scan(entries):
    """Notes for the entries (f and its derivatives) that hold the constructs users must know about."""
    notes = []
    for kind, head, template in _CAVEATS:
        hit = [entry for entry in entries if entry.wrt and entry.expr.has(head)]
        if hit:
            notes.append(Note(kind, {"unicode": _phrase(template, [e.label("unicode") for e in hit]),
                                     "ascii": _phrase(template, [e.label("ascii") for e in hit])}))
    infinite = [entry for entry in entries if entry.expr.has(sympy.zoo) or entry.expr.has(sympy.nan)]
    if infinite:
        template = "{labels} {contain} zoo (complex infinity) or nan: undefined, e.g. a division by zero"
        notes.append(Note("zoo", {"unicode": _phrase(template, [e.label("unicode") for e in infinite]),
                                  "ascii": _phrase(template, [e.label("ascii") for e in infinite])}))
    return notes
