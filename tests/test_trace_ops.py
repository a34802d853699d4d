"""Every built-in op of the ops table (tests/test_ops.py, one row each) runs on symbols: its forward
and backward trace, the traced forward and backward compute what the numeric ones compute, and the
traced backward is proved equal to the exact VJP (SymPy's Jᵀg of the traced forward).

Rows run at 2×2-sized inputs (every dim capped at 2) unless the row needs its own shapes (a reshape
to (4, 3), an index 2). The few ops whose result depends on an order or a position of the values
(sort, topk, a mask used as an index) are not traceable, with the reason.
"""
import warnings
import zlib

import numpy as np
import pytest
import sympy

import gradcli
from gradcli.symbolic.prove import prove
from gradcli.symbolic.ops import Indicator
from gradcli.symbolic.trace import NotTraceable, symbol_array, trace_function
from test_ops import CASES, _float_outputs
from test_ops import NOT_TRACEABLE as ROW_MODULES_NOT_TRACEABLE

PROOF_TIMEOUT = 60.0  # seconds per row; rows take 0.1-2 s at these shapes

# row id -> the start of the NotTraceable reason: these ops depend on an order or a position of the values
NOT_TRACEABLE = {
    "getitem_bool_mask": "data-dependent indexing: the index is computed from symbolic values",
    "sort_values": "the built-in op sort cannot run on symbols: it orders the elements by value",
    "sort_descending": "the built-in op sort cannot run on symbols: it orders the elements by value",
    "topk_values": "the built-in op topk cannot run on symbols: it orders the elements by value",
    **ROW_MODULES_NOT_TRACEABLE,
}


def _shapes(case):
    """The row's shapes with every dim capped at 2, or its own shapes when the row needs them."""
    small = tuple(tuple(min(d, 2) for d in s) for s in case.shapes)
    try:
        with gradcli.no_grad(), np.errstate(all="ignore"):
            case.fn(gradcli, *[gradcli.tensor(np.full(s, 0.5)) for s in small])
    except Exception:
        return tuple(case.shapes)
    return small


def _fn(case):
    def fn(*inputs):
        return case.fn(gradcli, *inputs)
    fn.__name__ = case.id
    return fn


def _example(shapes):
    return [gradcli.zeros(*s) if s else gradcli.tensor(0.0) for s in shapes]


def _point(case, shapes):
    """Float inputs from the row's own domain (off its kinks and ties) and cotangents."""
    rng = np.random.default_rng(zlib.crc32(case.id.encode()) + 5)
    arrays = [np.asarray(case.domain(rng, s), dtype=np.float64) for s in shapes]
    with gradcli.no_grad():
        outs = _float_outputs(case.fn(gradcli, *[gradcli.tensor(a) for a in arrays]))
    return arrays, [rng.uniform(0.5, 1.5, o.shape) for o in outs]


def _numeric(case, arrays, cotangents):
    leaves = [gradcli.tensor(a, requires_grad=True) for a in arrays]
    outs = _float_outputs(case.fn(gradcli, *leaves))
    grads = gradcli.autograd.grad(outs, leaves, [gradcli.tensor(c) for c in cotangents], allow_unused=True)
    return ([o.detach().numpy() for o in outs],
            [np.zeros(a.shape) if g is None else g.numpy() for a, g in zip(arrays, grads)])


def _at(expressions, values):
    return np.vectorize(lambda e: float(sympy.N(sympy.sympify(e).xreplace(values), 30)), otypes=[float])(expressions)


TRACEABLE = [c for c in CASES if c.id not in NOT_TRACEABLE]


@pytest.mark.parametrize("case", TRACEABLE, ids=lambda c: c.id)
def test_op_traces_forward_and_backward_like_its_numeric_code_and_its_backward_is_proved(case):
    shapes = _shapes(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = trace_function(_fn(case), _example(shapes))
    # forward and backward ran on symbols: expressions of the input symbols, of the inputs' shapes
    assert trace.outputs and sorted(trace.vjp) == sorted(trace.inputs) == list(range(len(shapes)))
    for i, shape in enumerate(shapes):
        assert trace.vjp[i].shape == shape
        assert all(isinstance(e, sympy.Basic) for e in trace.vjp[i].flat)

    # the symbolic side computes what the numeric side computes, at a point of the row's domain
    arrays, cotangents = _point(case, shapes)
    values = {s: sympy.Float(float(v), 30) for i, a in enumerate(arrays) for s, v in zip(trace.inputs[i].flat, a.flat)}
    values.update({s: sympy.Float(float(v), 30) for c, arr in zip(cotangents, trace.cotangents)
                   for s, v in zip(arr.flat, c.flat)})
    outs, grads = _numeric(case, arrays, cotangents)
    assert len(trace.outputs) == len(outs)
    for traced, numeric in zip(trace.outputs, outs):
        np.testing.assert_allclose(_at(traced, values), numeric, rtol=1e-12, atol=1e-12)
    for i, numeric in enumerate(grads):
        np.testing.assert_allclose(_at(trace.vjp[i], values), numeric, rtol=1e-12, atol=1e-12)

    # and the traced backward equals the exact VJP for every input
    results = prove(_fn(case), example_inputs=_example(shapes), timeout=PROOF_TIMEOUT)
    assert len(results) == len(shapes)
    for r in results:
        assert r.verdict == "proved", f"{r.input}: {r.message}"


@pytest.mark.parametrize("case_id", sorted(NOT_TRACEABLE))
def test_ops_whose_result_depends_on_the_order_of_the_values_are_not_traceable_with_the_reason(case_id):
    case = next(c for c in CASES if c.id == case_id)
    shapes = _shapes(case)
    with pytest.raises(NotTraceable) as caught:
        trace_function(_fn(case), _example(shapes))
    assert caught.value.reason.startswith(NOT_TRACEABLE[case_id]), caught.value.reason
    assert caught.value.phase == "forward"
    assert {r.verdict for r in prove(_fn(case), example_inputs=_example(shapes))} == {"not_traceable"}


def test_every_row_of_the_ops_table_is_covered():
    assert set(NOT_TRACEABLE) <= {c.id for c in CASES}
    assert len(TRACEABLE) + len(NOT_TRACEABLE) == len(CASES)


# ---- what the symbolic rules of the extremes compute ---------------------------------------------
def _symbols(trace, i=0):
    return list(trace.inputs[i].flat)


def test_amax_on_symbols_is_sympys_max_and_its_backward_splits_ties_evenly_like_the_numeric_one():
    trace = trace_function(lambda x: x.amax(), [gradcli.zeros(3)])
    x0, x1, x2 = _symbols(trace)
    g = trace.cotangents[0][()]
    assert trace.outputs[0][()] == sympy.Max(x0, x1, x2)
    # at a tie of two maxima each gets half of g, as the numeric backward gives
    at_tie = {x0: 2, x1: 2, x2: -1, g: 3}
    assert [sympy.sympify(e).xreplace(at_tie) for e in trace.vjp[0]] == [sympy.Rational(3, 2)] * 2 + [0]
    x = gradcli.tensor([2.0, 2.0, -1.0], requires_grad=True)
    x.amax().backward(gradcli.tensor(3.0))
    assert x.grad.tolist() == [1.5, 1.5, 0.0]
    # away from ties all of g goes to the largest
    assert [sympy.sympify(e).xreplace({x0: 1, x1: 2, x2: -1, g: 3}) for e in trace.vjp[0]] == [0, 3, 0]


def test_max_along_a_dim_gives_the_gradient_to_the_first_maximum_and_its_index_as_an_expression():
    trace = trace_function(lambda x: x.max(dim=0), [gradcli.zeros(3)])
    x0, x1, x2 = _symbols(trace)
    g = trace.cotangents[0][()]
    assert trace.outputs[0][()] == sympy.Max(x0, x1, x2)  # the values; the indices are not differentiable
    at_tie = {x0: 1, x1: 2, x2: 2, g: 5}
    assert [sympy.sympify(e).xreplace(at_tie) for e in trace.vjp[0]] == [0, 5, 0]  # argmax picks the first
    x = gradcli.tensor([1.0, 2.0, 2.0], requires_grad=True)
    x.max(dim=0).values.backward(gradcli.tensor(5.0))
    assert x.grad.tolist() == [0.0, 5.0, 0.0]
    # the indices, on symbols, are the position argmax picks, as an expression
    index = gradcli.Tensor(symbol_array("x", (3,))).max(dim=0).indices.data[()]
    a, b, c = sorted(index.free_symbols, key=lambda s: s.name)
    assert index.xreplace({a: 1, b: 3, c: 3}) == 1 and index.xreplace({a: 4, b: 3, c: -1}) == 0


def test_softmax_and_logsumexp_on_symbols_have_no_max_shift():
    trace = trace_function(lambda x: gradcli.logsumexp(x, dim=0), [gradcli.zeros(2)])
    x0, x1 = _symbols(trace)
    assert trace.outputs[0][()] == sympy.log(sympy.exp(x0) + sympy.exp(x1))
    trace = trace_function(lambda x: x.softmax(0), [gradcli.zeros(2)])
    x0, x1 = _symbols(trace)
    assert trace.outputs[0][0] == sympy.exp(x0) / (sympy.exp(x0) + sympy.exp(x1))


def test_pow_with_a_tensor_exponent_masks_its_backward_with_symbolic_comparisons():
    trace = trace_function(lambda a, p: a ** p, [gradcli.zeros(()), gradcli.zeros(())])
    (a,), (p,) = _symbols(trace, 0), _symbols(trace, 1)
    assert trace.signs == {"a": "positive", "p": "real"}  # a fractional power needs a > 0
    assert trace.outputs[0][()] == a ** p
    g = trace.cotangents[0][()]
    assert trace.vjp[1][()] == g * a ** p * sympy.log(a)  # the mask a == 0 is false for a positive a
    # without the sign, d/dp keeps torch's convention (0 where a == 0 and p >= 0) as a mask, not a branch
    real = trace_function(lambda a, p: a ** p, [gradcli.zeros(()), gradcli.zeros(())], signs={})
    (a,), (p,) = _symbols(real, 0), _symbols(real, 1)
    masks = real.vjp[1][()].atoms(Indicator)
    assert sympy.And(sympy.Eq(a, 0), p >= 0) in {m.args[0] for m in masks}


def test_the_numeric_paths_of_the_traceable_ops_are_unchanged_by_tracing():
    x = gradcli.tensor([[1.0, 3.0], [2.0, -1.0]], requires_grad=True)
    trace_function(lambda t: t.amax(dim=1) + t.softmax(1).sum(1) + t.norm(dim=1) + t.std(dim=1), [gradcli.zeros(2, 2)])
    y = x.amax(dim=1) + x.softmax(1).sum(1) + x.norm(dim=1) + x.std(dim=1)
    y.sum().backward()
    assert x.data.dtype == np.float64 and y.data.dtype == np.float64 and x.grad.data.dtype == np.float64
    expected = [3 + 1 + np.sqrt(10) + np.sqrt(2), 2 + 1 + np.sqrt(5) + 3 / np.sqrt(2)]
    np.testing.assert_allclose(y.detach().numpy(), expected)
    r2, r5, r10 = np.sqrt(2), np.sqrt(5), np.sqrt(10)  # amax, softmax (sums to 1), norm, std
    grad = [[0 + 0 + 1 / r10 - 1 / r2, 1 + 0 + 3 / r10 + 1 / r2], [1 + 0 + 2 / r5 + 1 / r2, 0 + 0 - 1 / r5 - 1 / r2]]
    np.testing.assert_allclose(x.grad.numpy(), grad, atol=1e-12)
