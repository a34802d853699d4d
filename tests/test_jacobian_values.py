"""exact_vjp_values: the exact Jᵀv of a traced forward, per distinct formula, in mpmath.

Checked three ways: against mpmath's own numerical differentiation at 40 digits (independent of
SymPy), against the expression route that proofs use (``Trace.exact_vjp`` evaluated element by
element), and on the bookkeeping that makes it fast (one compiled formula per distinct element
formula, reductions split into their terms).
"""
import mpmath
import numpy as np
import pytest

import gradcli
from gradcli.autograd import Function
from gradcli.symbolic import jacobian_values
from gradcli.symbolic.jacobian_values import exact_vjp_values
from gradcli.symbolic.evaluation import MpEvaluator, as_mp, exact_float
from gradcli.symbolic.trace import trace_function


def _signs(arrays):
    return {i: {idx: "positive" if v > 0 else "negative" if v < 0 else "real" for idx, v in np.ndenumerate(a)}
            for i, a in enumerate(arrays)}


def traced(fn, *arrays):
    inputs = [gradcli.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    trace = trace_function(fn, inputs, signs=_signs(arrays), with_backward=False)
    point = {}
    for i, a in enumerate(arrays):
        point.update(zip(trace.inputs[i].flat, as_mp(np.asarray(a, dtype=np.float64)).flat))
    return trace, point


def through_expressions(trace, point, cotangents):
    """The expression route: Jᵀv built symbolically by Trace.exact_vjp, then evaluated per element."""
    exact = trace.exact_vjp()
    at = dict(point)
    for symbols, v in zip(trace.cotangents, cotangents):
        at.update(zip(symbols.flat, as_mp(np.broadcast_to(v, symbols.shape)).flat))
    evaluator = MpEvaluator()
    values, kinks = {}, {}
    for i, arr in exact.items():
        values[i] = np.empty(arr.shape)
        kinks[i] = np.zeros(arr.shape, dtype=bool)
        for idx, e in np.ndenumerate(arr):
            value, kink = evaluator.evaluate(e, at)
            values[i][idx], kinks[i][idx] = exact_float(value), kink
    return values, kinks


def floats(sums):
    return {i: [np.vectorize(exact_float, otypes=[float])(s) for s in per_set] for i, per_set in sums.items()}


class SumSqrt(Function):  # seed 002: one output, a sum of n copies of one formula
    @staticmethod
    def forward(ctx, x):
        return gradcli.sum(gradcli.sqrt(x * x - 1))


class Affine(Function):  # matmul + broadcast bias + tanh: every output element has 2K+1 symbols
    @staticmethod
    def forward(ctx, x, w, b):
        return gradcli.tanh(x @ w + b)


class Polar(Function):  # two outputs from the same inputs
    @staticmethod
    def forward(ctx, r, theta):
        return r * gradcli.cos(theta), r * gradcli.sin(theta)


class AbsTimesExp(Function):  # a kink at 0
    @staticmethod
    def forward(ctx, x):
        return gradcli.abs(x) * gradcli.exp(x)


def test_seed_002_sum_matches_mpmath_differentiation_to_the_last_bit():
    x = np.array([1.5, -2.0, 3.25])
    trace, point = traced(SumSqrt, x)
    sums, kinks, _ = exact_vjp_values(trace, point, [(np.array(0.75),)])
    got = floats(sums)[0][0]
    with mpmath.workdps(40):
        for k, v in enumerate(x):
            reference = 0.75 * mpmath.diff(lambda t: mpmath.sqrt(t * t - 1), mpmath.mpf(float(v)))
            assert got[k] == float(reference)  # rounded once from 40 digits: bit-exact
    assert not kinks[0].any()


def test_matmul_bias_tanh_agrees_with_mpmath_per_entry():
    rng = np.random.default_rng(3)
    x, w, b = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (4,))
    v = rng.standard_normal((2, 4))
    trace, point = traced(Affine, x, w, b)
    got = floats(exact_vjp_values(trace, point, [(v,)])[0])
    with mpmath.workdps(40):
        mx = mpmath.matrix(x.tolist())
        mw = mpmath.matrix(w.tolist())
        pre = mx * mw
        d = [[(1 - mpmath.tanh(pre[i, j] + b[j]) ** 2) * v[i, j] for j in range(4)] for i in range(2)]
        gx = [[sum(d[i][j] * w[k, j] for j in range(4)) for k in range(3)] for i in range(2)]
        gw = [[sum(d[i][j] * x[i, k] for i in range(2)) for j in range(4)] for k in range(3)]
        gb = [sum(d[i][j] for i in range(2)) for j in range(4)]
    np.testing.assert_allclose(got[0][0], np.array(gx, dtype=float), rtol=1e-15, atol=0)
    np.testing.assert_allclose(got[1][0], np.array(gw, dtype=float), rtol=1e-15, atol=0)
    np.testing.assert_allclose(got[2][0], np.array(gb, dtype=float), rtol=1e-15, atol=0)


@pytest.mark.parametrize("fn, arrays, cotangents", [
    (SumSqrt, [np.array([1.5, -2.0, 3.25, 1.125])], [(np.array(1.0),), (np.array(-0.5),)]),
    (Affine, [np.arange(6.0).reshape(2, 3) / 7 - 0.3, np.linspace(-1, 1, 12).reshape(3, 4), np.array([.1, -.2, .3, 0])],
     [(np.linspace(-2, 2, 8).reshape(2, 4),)]),
    (Polar, [np.array([2.0, 0.5]), np.array([0.3, -2.5])],
     [(np.array([1.0, -1.0]), np.array([0.25, 2.0])), (np.array([0.0, 3.0]), np.array([1.0, 1.0]))]),
    (AbsTimesExp, [np.array([-1.5, 0.0, 2.0])], [(np.array([1.0, 2.0, -3.0]),)]),
])
def test_same_values_and_kinks_as_the_expression_route(fn, arrays, cotangents):
    trace, point = traced(fn, *arrays)
    sums, kinks, _ = exact_vjp_values(trace, point, cotangents)
    values = floats(sums)
    for k, cot in enumerate(cotangents):
        expected, expected_kinks = through_expressions(trace, point, cot)
        for i in expected:
            np.testing.assert_allclose(values[i][k], expected[i], rtol=1e-15, atol=1e-300)
            np.testing.assert_array_equal(kinks[i], expected_kinks[i])


def test_a_kink_is_flagged_exactly_where_the_switch_is_zero():
    trace, point = traced(AbsTimesExp, np.array([-1.5, 0.0, 2.0]))
    _, kinks, _ = exact_vjp_values(trace, point, [(np.ones(3),)])
    assert kinks[0].tolist() == [False, True, False]


def test_each_distinct_formula_is_differentiated_and_compiled_once_on_sympys_route(monkeypatch):
    built = []
    original = jacobian_values._Partials.__init__

    def counting(self, key):
        built.append(key)
        original(self, key)

    monkeypatch.setattr(jacobian_values._Partials, "__init__", counting)
    # 12 elements, all positive: one formula for the whole sum
    trace, point = traced(SumSqrt, np.linspace(1.5, 4.0, 12))
    exact_vjp_values(trace, point, [(np.array(1.0),)], by_sympy=True)
    assert len(built) == 1
    # mixed signs give the symbols different assumptions, but the formula is the same: one
    built.clear()
    trace, point = traced(SumSqrt, np.array([1.5, -2.0, 3.0, -4.0]))
    exact_vjp_values(trace, point, [(np.array(1.0),)], by_sympy=True)
    assert len(built) == 1
    # where SymPy wrote the forward differently by sign (|x| is x or -x), one formula per sign
    built.clear()
    trace, point = traced(AbsTimesExp, np.array([-1.5, 2.0, -0.5, 3.0]))
    exact_vjp_values(trace, point, [(np.ones(4),)], by_sympy=True)
    assert len(built) == 2
    # by default the chain rule runs on numbers (point_partials.py): no SymPy derivative at all
    built.clear()
    exact_vjp_values(trace, point, [(np.ones(4),)])
    assert built == []


def test_one_formula_for_both_signs_gives_the_derivative_at_each_point():
    # sum(sqrt(x*x - 1)): d/dx = x / sqrt(x*x - 1), negative where x is
    x = np.array([1.5, -2.0, 3.0, -4.0])
    trace, point = traced(SumSqrt, x)
    sums, kinks, _ = exact_vjp_values(trace, point, [(np.array(1.0),)])
    with mpmath.workdps(40):
        expected = [exact_float(mpmath.mpf(v) / mpmath.sqrt(mpmath.mpf(v) ** 2 - 1)) for v in x]
    assert floats(sums)[0][0].tolist() == expected
    assert not kinks[0].any()


def test_no_closed_form_derivative_raises_value_error():
    import sympy

    class Opaque(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    trace, point = traced(Opaque, np.array([1.0]))
    f = sympy.Function("f")
    s = trace.inputs[0].flat[0]
    trace.outputs = [np.array([f(s)], dtype=object)]
    with pytest.raises(ValueError, match="no closed-form derivative"):
        exact_vjp_values(trace, point, [(np.ones(1),)])


class Softmax(Function):
    @staticmethod
    def forward(ctx, x):
        return gradcli.softmax(x, dim=-1)


def test_magnitudes_are_the_size_of_the_terms_that_cancel():
    """Jᵀ1 of softmax is 0; the terms it sums, |∂y_k/∂x_i|, are not: y_i(1 - y_i) + Σ_{k≠i} y_k y_i = 2 y_i (1 - y_i)."""
    x = np.array([0.5, -1.0, 2.0])
    trace, point = traced(Softmax, x)
    sums, _, magnitudes = exact_vjp_values(trace, point, [(np.ones(3),)])
    assert max(abs(float(v)) for v in sums[0][0]) < 1e-35
    y = np.exp(x) / np.exp(x).sum()
    np.testing.assert_allclose(magnitudes[0][0], 2 * y * (1 - y), rtol=1e-14)
