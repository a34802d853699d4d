"""The exact reference's partial derivatives by the chain rule on numbers (point_partials.py), against
SymPy's own derivatives: the same values to 30+ digits, the same kinks, SymPy where it has no rule."""
import mpmath
import numpy as np
import pytest
import sympy

import gradcli as torch
from gradcli.autograd import Function
from gradcli.check.exact import exact_check
from gradcli.symbolic import jacobian_values
from gradcli.symbolic.jacobian_values import exact_vjp_values
from gradcli.symbolic.ops import Indicator, almost_everywhere
from gradcli.symbolic.point_partials import PointPartials, Unsupported
from gradcli.symbolic.trace import trace_function

x0, x1, x2 = sympy.symbols("x0 x1 x2", real=True)
AT = {x0: mpmath.mpf("0.625"), x1: mpmath.mpf("-1.375"), x2: mpmath.mpf("2.25")}

EXPRESSIONS = [
    sympy.exp(3 * x0) * sympy.sin(x1),
    sympy.log(1 + sympy.exp(x0 / 2)) * 2,                    # softplus
    1 / (1 + sympy.exp(-x1)),                                # sigmoid
    sympy.tanh(x0 * x1) + sympy.atan(x2) - sympy.cos(x0) ** 3,
    sympy.sqrt(x2) + 1 / x2 + x0 ** x2,                      # a power with a variable exponent
    sympy.Max(x0, x1, x2) - sympy.Min(x0, 0),
    sympy.Abs(x1) * x0 + sympy.erf(x2) - sympy.erfc(x0),
    sympy.Piecewise((x0 ** 2, x1 > 0), (x0 * x2, True)),
    Indicator(x0 > 0) * x0 * x1,                             # relu written as a mask
    sympy.asinh(x1) + sympy.acosh(x2) + sympy.atanh(x0 / 2) + sympy.asin(x0) + sympy.acos(x0 / 3),
    sympy.sinh(x1) * sympy.cosh(x2) / sympy.tan(x0),
    sympy.atan2(x1, x2),                                     # no rule here: SymPy's derivative, once
    sympy.floor(x2) * x0 + sympy.sign(x1) * x1,
]


def by_sympy(expr, symbol):
    """SymPy's derivative at AT (exact rationals substituted, then evaluated to 50 digits)."""
    at = {s: sympy.Rational(str(v)) for s, v in AT.items()}
    return mpmath.mpf(str(almost_everywhere(sympy.diff(expr, symbol)).xreplace(at).evalf(50)))


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=[str(e)[:40] for e in EXPRESSIONS])
def test_partials_equal_sympys_derivative_to_30_digits(expr):
    with mpmath.workdps(40):
        found = {s: (v, kink) for s, v, kink in PointPartials(AT).partials(expr)}
        assert set(found) == expr.free_symbols
        for s, (value, kink) in found.items():
            exact = by_sympy(expr, s)
            assert abs(value - exact) <= mpmath.mpf(10) ** -30 * max(abs(exact), 1), (s, value, exact)
            assert kink is False


def partial_kinks(expr, at):
    with mpmath.workdps(40):
        return {str(s): kink for s, _, kink in PointPartials(at).partials(expr)}


def test_a_kink_is_where_the_derivative_formula_holds_a_zero_switch():
    zero = {x0: mpmath.mpf(0), x1: mpmath.mpf(3), x2: mpmath.mpf(3)}
    assert partial_kinks(sympy.Abs(x0) + x1, zero) == {"x0": True, "x1": False}       # sums keep apart
    assert partial_kinks(sympy.Abs(x0) * x1, zero) == {"x0": True, "x1": True}        # d/dx1 = Abs(x0)
    assert partial_kinks(sympy.exp(sympy.Abs(x0)) + x1, zero) == {"x0": True, "x1": False}
    assert partial_kinks(sympy.Max(x1, x2) * 2, zero) == {"x1": True, "x2": True}     # a tie on the max
    assert partial_kinks(sympy.Max(x0, x1, x2 - 5), zero) == {"x0": False, "x1": False, "x2": False}
    assert partial_kinks(sympy.Max(x1, x2, x0 + 7), zero) == {"x0": False, "x1": False, "x2": False}
    assert partial_kinks(Indicator(x0 > 0) * x1, zero) == {"x0": False, "x1": True}   # d/dx1 = [x0 > 0]
    assert partial_kinks(Indicator(x0 > 0) + x1, zero) == {"x0": False, "x1": False}  # a step: 0 a.e.
    assert partial_kinks(sympy.floor(x1) * x2, zero) == {"x1": False, "x2": True}     # jumps at integers


def test_a_node_without_a_rule_is_unsupported():
    with mpmath.workdps(40), pytest.raises(Unsupported):
        PointPartials(AT).partials(sympy.besselj(0, x0) * x1)


class _FakeTrace:
    def __init__(self, symbols, outputs):
        self.inputs = {0: np.array(symbols, dtype=object)}
        self.outputs = [np.array(outputs, dtype=object)]


def test_a_term_the_chain_rule_cannot_take_is_differentiated_by_sympy():
    trace = _FakeTrace([x0, x1], [sympy.besselj(0, x0) * x1, sympy.exp(x1) + x0 ** 2])
    point = {x0: mpmath.mpf("0.5"), x1: mpmath.mpf("1.5")}
    sums, kinks, _ = exact_vjp_values(trace, point, [(np.array([1.0, 2.0]),)])
    with mpmath.workdps(40):
        d0 = -mpmath.besselj(1, mpmath.mpf("0.5")) * mpmath.mpf("1.5") + 2 * 2 * mpmath.mpf("0.5")
        d1 = mpmath.besselj(0, mpmath.mpf("0.5")) + 2 * mpmath.exp(mpmath.mpf("1.5"))
        assert abs(sums[0][0][0] - d0) < mpmath.mpf(10) ** -35
        assert abs(sums[0][0][1] - d1) < mpmath.mpf(10) ** -35
    assert not kinks[0].any()


class ShiftedSoftmaxRelu(Function):
    """A max-shifted softmax times a relu mask: Max, exp, a quotient and an Indicator in one trace."""

    @staticmethod
    def forward(ctx, x, w):
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        s = e / e.sum(dim=1, keepdim=True)
        ctx.save_for_backward(x, w, s)
        return s * torch.relu(w)

    @staticmethod
    def backward(ctx, g):
        x, w, s = ctx.saved_tensors
        r = torch.relu(w)
        gs = g * r
        return s * (gs - (gs * s).sum(dim=1, keepdim=True)), g * s * (w > 0)


def test_a_traced_function_gives_the_same_reference_either_way(monkeypatch):
    rng = np.random.default_rng(3)
    x = torch.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    w = torch.tensor(np.array([[0.5, -1.0, 0.0], [2.0, 0.25, -0.5]]), requires_grad=True)  # a relu kink at 0
    trace = trace_function(ShiftedSoftmaxRelu, [x, w], with_backward=False, signs={})
    point = {s: mpmath.mpf(float(v)) for i, a in ((0, x), (1, w)) for s, v in zip(trace.inputs[i].flat, a.data.flat)}
    cotangents = [(rng.standard_normal((2, 3)),), (np.ones((2, 3)),)]
    slow = exact_vjp_values(trace, point, cotangents, by_sympy=True)
    with monkeypatch.context() as patched:  # no term may fall back to SymPy's derivatives
        patched.setattr(jacobian_values, "_Partials", None)
        fast = exact_vjp_values(trace, point, cotangents)
    for i in (0, 1):
        assert np.array_equal(fast[1][i], slow[1][i])
        for k in range(2):
            for a, b in zip(fast[0][i][k].flat, slow[0][i][k].flat):
                assert abs(a - b) <= mpmath.mpf(10) ** -30 * max(abs(b), 1)
    assert fast[1][1].tolist() == [[False, False, True], [False, False, False]]


def test_the_exact_check_still_fails_a_wrong_backward():
    class ScaledWrong(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.log(1 + torch.exp(0.5 * x)) / 0.5

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g / (1 + torch.exp(-0.5 * x)) * 1.001  # 0.1 % off

    x = torch.tensor(np.array([0.3, -1.2, 2.0]), requires_grad=True)
    check = exact_check(ScaledWrong, [x], cotangents=(np.ones(3),))
    assert check.status == "fail"
    row = check.details["inputs"][0]
    assert row["failed_elements"] == 3
    assert row["max_rel_error"] == pytest.approx(1e-3, rel=1e-9)


_U = x0 * x1 + x2
SHARED = [  # a subexpression reached along several paths: its adjoint must be complete before it is passed on
    sympy.Mul(_U, sympy.exp(_U), evaluate=False),
    sympy.Mul(sympy.exp(_U), _U, evaluate=False),
    sympy.Add(_U, sympy.sin(_U), sympy.sin(_U) ** 2, evaluate=False),
    sympy.Add(sympy.sin(_U) ** 2, sympy.sin(_U), _U, evaluate=False),
    sympy.Max(x2, sympy.Max(x1, sympy.Max(x0, -x0 - 3, evaluate=False), evaluate=False), evaluate=False) * 2 - x2,
]


@pytest.mark.parametrize("expr", SHARED, ids=[str(e)[:40] for e in SHARED])
def test_shared_subexpressions_whatever_the_order_of_the_arguments(expr):
    with mpmath.workdps(40):
        for s, value, _ in PointPartials(AT).partials(expr):
            exact = by_sympy(expr, s)
            assert abs(value - exact) <= mpmath.mpf(10) ** -30 * max(abs(exact), 1), (s, value, exact)


@pytest.mark.parametrize("name", sorted(__import__("gradcli.autograd.ops.elementwise", fromlist=["UNARY"]).UNARY))
def test_every_unary_row_unevaluated_is_the_same_function(name):
    from gradcli.autograd.ops.elementwise import sympy_expr
    from gradcli.symbolic.unevaluated import unary_expr as unevaluated_unary_expr

    p, n = sympy.Symbol("p", positive=True), sympy.Symbol("n", negative=True)
    for x, value in ((p, sympy.Rational(3, 8)), (n, sympy.Rational(-5, 8)), (p, sympy.Rational(17, 8))):
        if name in ("asin", "acos", "atanh") and abs(value) >= 1 or name == "acosh" and value <= 1 \
                or name in ("log", "sqrt", "rsqrt") and value <= 0:
            continue
        evaluated, unevaluated = sympy_expr(name, x), unevaluated_unary_expr(name, x)
        a = sympy.N(evaluated.xreplace({x: value}), 40)
        b = sympy.N(unevaluated.xreplace({x: value}), 40)
        assert abs(a - b) <= sympy.Float(10) ** -35 * max(abs(a), 1), (name, value, a, b)


def test_the_exact_reference_traces_without_clearing_sympys_cache(monkeypatch):
    import sympy.core.parameters

    cleared = []
    monkeypatch.setattr(sympy.core.parameters, "clear_cache", lambda: cleared.append(1))
    x = torch.tensor(np.array([0.3, -1.2, 2.0]), requires_grad=True)

    class Smooth(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.sigmoid(x) * torch.exp(x) + torch.relu(x) + torch.log1p(x * x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            s = torch.sigmoid(x)
            return g * (s * (1 - s) * torch.exp(x) + s * torch.exp(x) + (x > 0) + 2 * x / (1 + x * x))

    check = exact_check(Smooth, [x], cotangents=(np.ones(3),))
    assert check.status == "pass" and check.details["source"] == "trace"
    assert cleared == []
