"""The exact Jacobian of a traced forward at a point, and Jᵀv for any cotangents, in mpmath.

``Trace.exact_vjp`` builds Jᵀv as expressions (a sum over outputs per input element) and the
proofs need that. A reference value needs less: the Jacobian entries ∂y_k/∂x_i at one point, then
Σ_k v_k ∂y_k/∂x_i in arithmetic, for each cotangent set. Elementwise, broadcast and matmul code
gives every output element the same formula up to the names of its symbols. The partials of each
term come from the chain rule run on numbers (``point_partials.PointPartials``: the tree evaluated
once in mpmath, adjoints accumulated from the root), without SymPy's ``diff``: 5-10x cheaper in a
forked checker, where SymPy's derivatives and their assumption queries were most of the exact check.
A term with a node it has no rule for (or that it cannot evaluate) is differentiated by SymPy as
before: each distinct formula (``canonical_real``) once, compiled for mpmath (mp_compile.py:
closures over the tree, not lambdify's printed source), all its partial derivatives in one
function, and every element with that formula costs one call. Derivatives
are taken "almost everywhere" (``almost_everywhere``), and an element is flagged as a kink where
a switch argument (Abs, sign, a mask's comparison, ...) of one of its derivatives is exactly 0.
"""
import mpmath
import numpy as np
import sympy

from gradcli.symbolic.evaluation import _MODULES, DPS, _is_zero, switch_arguments
from gradcli.symbolic.mp_compile import mp_function
from gradcli.symbolic.ops import almost_everywhere, indicators_as_piecewise
from gradcli.symbolic.point_partials import PointPartials
from gradcli.symbolic.trace import symbol_order

_REAL: list = []  # _c0, _c1, ... as real symbols


def canonical_real(expr):
    """(expr with its symbols renamed to the real symbols _c0, _c1, ... in (base name, element
    index) order, original symbols). Unlike ``evaluation.canonical`` the names drop the signs the
    traced symbols carry (assumptions that let SymPy simplify the forward when it was traced):
    ``sin(2*x[0,0])`` with x[0,0] > 0 and ``sin(2*x[0,1])`` with x[0,1] < 0 are one formula,
    differentiated once. The derivative of a fixed expression does not depend on what is assumed
    of its symbols, only how SymPy writes it: at a point where the signs hold it has the same value,
    and a sign switch it may keep (``sign(_c0)``) is not zero there."""
    symbols = sorted(expr.free_symbols, key=symbol_order)
    while len(_REAL) < len(symbols):
        _REAL.append(sympy.Symbol(f"_c{len(_REAL)}", real=True))
    return expr.xreplace(dict(zip(symbols, _REAL))), symbols


class _Partials:
    """Every first partial derivative of one canonical formula, compiled into two mpmath functions."""

    def __init__(self, key):
        self.names = sorted(key.free_symbols, key=lambda s: int(s.name[2:]))   # _c0, _c1, ...
        derivatives = [almost_everywhere(sympy.diff(key, name)) for name in self.names]
        for d in derivatives:
            if d.has(sympy.Derivative):
                raise ValueError(f"no closed-form derivative: {d}")
        self.values = mp_function(self.names, [indicators_as_piecewise(d) for d in derivatives], _MODULES)
        switches, self.owners = [], []   # owners[p]: the derivative whose kink switch p marks
        for j, d in enumerate(derivatives):
            for s in switch_arguments(d):
                switches.append(indicators_as_piecewise(s))
                self.owners.append(j)
        self.switches = mp_function(self.names, switches, _MODULES) if switches else None

    def at(self, args):
        """[(∂/∂_cj as mpf/mpc, at_kink)] for every j, at ``args`` (mpf values of _c0, _c1, ...)."""
        values = [mpmath.mpmathify(v) for v in self.values(*args)]
        values = [v.real if isinstance(v, mpmath.mpc) and v.imag == 0 else v for v in values]
        kinks = [False] * len(values)
        if self.switches is not None:
            for owner, s in zip(self.owners, self.switches(*args)):
                kinks[owner] = kinks[owner] or _is_zero(s)
        return list(zip(values, kinks))


def _real(value):
    value = mpmath.mpmathify(value)
    return value.real if isinstance(value, mpmath.mpc) and value.imag == 0 else value


def _by_chain_rule(numbers, term):
    """[(symbol, ∂term/∂symbol, at_kink)] from PointPartials, or None where it cannot (SymPy then)."""
    try:
        return [(s, _real(v), kink) for s, v, kink in numbers.partials(term)]
    except Exception:  # noqa: BLE001 -- Unsupported, or a value it cannot compute (1/0): SymPy decides
        return None


def exact_vjp_values(trace, point, cotangent_sets, dps=DPS, by_sympy=False):
    """({input index: [mpmath object array of Jᵀv, one per cotangent set]}, {input index: kink mask},
    {input index: [float array of Σₖ |vₖ ∂yₖ/∂xᵢ|, one per set]}: the size of the terms a backward
    adds up, so the rounding it may make where they cancel).

    ``point``: {input symbol: mpf}; ``cotangent_sets``: one tuple per set, one float array per
    differentiable output (shapes of ``trace.outputs``). Raises ValueError where SymPy has no
    closed-form derivative. ``by_sympy``: every term differentiated by SymPy (the reference the
    chain rule on numbers is tested against)."""
    owner = {s: (i, idx) for i, arr in trace.inputs.items() for idx, s in np.ndenumerate(arr)}
    zero = mpmath.mpf(0)
    sums = {i: [np.full(arr.shape, zero, dtype=object) for _ in cotangent_sets] for i, arr in trace.inputs.items()}
    kinks = {i: np.zeros(arr.shape, dtype=bool) for i, arr in trace.inputs.items()}
    magnitudes = {i: [np.zeros(arr.shape) for _ in cotangent_sets] for i, arr in trace.inputs.items()}
    compiled = {}
    with mpmath.workdps(dps):
        numbers = PointPartials(point)
        weights = [[np.vectorize(lambda v: mpmath.mpf(float(v)), otypes=[object])(
                    np.broadcast_to(np.asarray(cot[k], dtype=np.float64), np.shape(out)))
                    for k, out in enumerate(trace.outputs)] for cot in cotangent_sets]
        for k_out, out in enumerate(trace.outputs):
            for idx, y in np.ndenumerate(np.asarray(out, dtype=object)):
                y = sympy.sympify(y)
                # a reduction's terms are differentiated one by one: sum(sqrt(x*x - 1)) is n copies of
                # one formula, not one formula in n symbols that SymPy differentiates n times
                for term in y.args if isinstance(y, sympy.Add) else (y,):
                    if term.is_number:
                        continue
                    found = None if by_sympy else _by_chain_rule(numbers, term)
                    if found is None:
                        key, symbols = canonical_real(term)
                        partials = compiled.get(key)
                        if partials is None:
                            partials = compiled[key] = _Partials(key)
                        found = [(s, v, kink) for s, (v, kink) in zip(symbols, partials.at([point[s] for s in symbols]))]
                    for s, value, kink in found:
                        if s not in owner:
                            continue
                        i, at = owner[s]
                        kinks[i][at] |= kink
                        for k in range(len(cotangent_sets)):
                            term = weights[k][k_out][idx] * value
                            sums[i][k][at] += term
                            magnitudes[i][k][at] += abs(complex(term))
    return sums, kinks, magnitudes
