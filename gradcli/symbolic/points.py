"""Exact points for screening a backward: drawn inside the forward's domain, off its kinks.

Values are signed multiples of 1/8 in [1/8, 3] (exact in binary, so the same point runs through
the float64 Function unchanged), distinct across inputs where possible (ties between inputs sit on
the kinks of max and abs(x - y)).
"""
import mpmath
import numpy as np
import sympy

MISMATCH_RTOL = 1e-9       # far above 40-digit noise, far below any real bug


_MAGNITUDES = sorted({sympy.Rational(k, 8) for k in range(1, 8, 2)} | {sympy.Rational(k, 4) for k in range(1, 13)})
_COTANGENT_MAGNITUDES = [m for m in _MAGNITUDES if m != 1]  # g = 1 everywhere would hide "ignores grad_output"


def conditions_by_symbol(conditions, symbols):
    """Each condition, filed under the last of its symbols in drawing order (checked once that is drawn)."""
    order = {s: k for k, s in enumerate(symbols)}
    filed = {}
    for cond in conditions:
        mine = [s for s in cond.free_symbols if s in order]
        if mine:
            filed.setdefault(max(mine, key=order.get), []).append(cond)
    return filed


def draw(rng, symbols, cotangents, filed, evaluator):
    """A random exact point in the forward's domain (or None): each input symbol gets a signed
    multiple of 1/8 allowed by its assumptions and by the domain conditions drawn so far, values
    differing where they can (ties between inputs sit on kinks of max/abs(x - y))."""
    point, used = {}, set()
    for s in symbols:
        options = list(_MAGNITUDES)
        rng.shuffle(options)
        options.sort(key=lambda m: m in used)
        for magnitude in options:
            sign = 1 if s.is_positive else -1 if s.is_negative else rng.choice((1, -1))
            point[s] = sign * magnitude
            if all(_positive_at(cond, point, evaluator) for cond in filed.get(s, ())):
                used.add(magnitude)
                break
        else:
            return None
    for s in cotangents:
        point[s] = rng.choice(_COTANGENT_MAGNITUDES) * rng.choice((1, -1))
    return point


def _positive_at(cond, point, evaluator):
    try:
        value, _ = evaluator.evaluate(cond, point)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        return False
    return real(value) and value > 0


def valid(point, outputs, evaluator, switches):
    """Outputs real and finite at ``point``, and no switch argument zero (off every kink)."""
    try:
        for arr in outputs:
            for e in arr.flat:
                value, _ = evaluator.evaluate(e, point)
                if not real(value) or not mpmath.isfinite(value):
                    return False
        for s in switches:
            value, _ = evaluator.evaluate(s, point)
            if not real(value) or value == 0:
                return False
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        return False
    return True


def real(value):
    return isinstance(value, mpmath.mpf) and not mpmath.isnan(value)


def worst_difference(backward, exact, point, evaluator):
    """(element index, backward value, exact value) of the worst clear mismatch at ``point``, or None."""
    worst = None
    for idx in np.ndindex(*backward.shape):
        try:
            b, _ = evaluator.evaluate(backward[idx], point)
            e, _ = evaluator.evaluate(exact[idx], point)
        except (ValueError, TypeError, ZeroDivisionError):
            continue
        if not (real(b) and real(e) and mpmath.isfinite(b) and mpmath.isfinite(e)):
            continue
        gap = abs(b - e)
        if gap > MISMATCH_RTOL * max(abs(b), abs(e)) and gap > mpmath.mpf(10) ** -25:
            score = gap / max(abs(b), abs(e))
            if worst is None or score > worst[0]:
                worst = (score, idx, b, e)
    return None if worst is None else worst[1:]
