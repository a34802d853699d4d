"""Every built-in op, one row each: backward against central finite differences (no torch
needed), against torch autograd on the same inputs, double backward, float32 and the UNARY
table's derivative rules against SymPy.

A row's ``fn(T, *inputs)`` is written once against the torch API and run with ``T = gradcli``
and ``T = torch``, so each row also checks that gradcli accepts torch's spelling of the call.
"""
import math
import zlib

import numpy as np
import pytest

import gradcli
import op_rows_indexing
import op_rows_pointwise
import op_rows_shaping
from gradcli.autograd.ops.elementwise import SYMPY_EXPR, UNARY, sympy_expr
from op_case import Case, away_from_zero, between_integers, distinct, positive_matrix, uniform  # noqa: F401


UNARY_DOMAINS = {
    "exp": uniform(-2, 2), "log": uniform(0.2, 3), "log1p": uniform(-0.5, 2), "expm1": uniform(-2, 2),
    "sqrt": uniform(0.2, 3), "rsqrt": uniform(0.2, 3), "reciprocal": away_from_zero(), "neg": uniform(-2, 2),
    "abs": away_from_zero(), "sign": away_from_zero(), "floor": between_integers, "ceil": between_integers,
    "sin": uniform(-3, 3), "cos": uniform(-3, 3), "tan": uniform(-1.2, 1.2), "asin": uniform(-0.9, 0.9),
    "acos": uniform(-0.9, 0.9), "atan": uniform(-3, 3), "sinh": uniform(-2, 2), "cosh": uniform(-2, 2),
    "tanh": uniform(-2, 2), "asinh": uniform(-3, 3), "acosh": uniform(1.2, 3), "atanh": uniform(-0.9, 0.9),
    "sigmoid": uniform(-4, 4), "relu": away_from_zero(), "softplus": uniform(-4, 4), "erf": uniform(-2, 2),
}


def _namespace_function(T, name):
    # torch has no torch.softplus; it lives in torch.nn.functional (gradcli has both)
    return getattr(T, name) if hasattr(T, name) else getattr(T.nn.functional, name)


def _unary_case(name):
    return Case(name, lambda T, x: _namespace_function(T, name)(x), ((3, 4),), UNARY_DOMAINS[name])


def _method_case(name):
    return Case(name + "_method", lambda T, x: getattr(x, name)(), ((5,),), UNARY_DOMAINS[name])


POS = uniform(0.5, 2.0)

CASES = [_unary_case(name) for name in UNARY] + [_method_case(n) for n in ("exp", "tanh", "sigmoid")] + [
    # arithmetic, with broadcasting in both directions and Python scalars on either side
    Case("add", lambda T, a, b: a + b, ((3, 4), (3, 4))),
    Case("add_broadcast", lambda T, a, b: a + b, ((2, 3, 4), (4,))),
    Case("add_broadcast_both", lambda T, a, b: a + b, ((3, 1), (1, 4))),
    Case("add_alpha", lambda T, a, b: T.add(a, b, alpha=2.5), ((3,), (2, 3))),
    Case("radd_scalar", lambda T, a: 2.5 + a, ((3,),)),
    Case("sub_broadcast", lambda T, a, b: a - b, ((4,), (2, 4))),
    Case("rsub_scalar", lambda T, a: 1.5 - a, ((2, 3),)),
    Case("mul_broadcast", lambda T, a, b: a * b, ((2, 1, 4), (3, 1))),
    Case("mul_scalar", lambda T, a: a * 3.0, ((3,),)),
    Case("mul_function", lambda T, a, b: T.mul(a, b), ((3,), (3,))),
    Case("div_broadcast", lambda T, a, b: a / b, ((2, 3), (3,)), POS),
    Case("div_function", lambda T, a, b: T.div(a, b), ((3,), (1,)), POS),
    Case("rdiv_scalar", lambda T, a: 2.0 / a, ((3,),), POS),
    Case("pow_scalar", lambda T, a: a ** 3, ((3,),)),
    Case("pow_fractional", lambda T, a: a.pow(1.5), ((3,),), POS),
    Case("pow_square", lambda T, a: a.pow(2), ((2, 2),)),
    Case("pow_tensor_exponent", lambda T, a, p: a ** p, ((2, 3), (3,)), POS),
    Case("rpow", lambda T, a: T.pow(2, a), ((3,),)),
    Case("rpow_operator", lambda T, a: 1.5 ** a, ((3,),)),
    Case("neg_operator", lambda T, a: -a, ((3,),)),
    Case("square", lambda T, a: T.square(a), ((4,),)),
    Case("maximum", lambda T, a, b: T.maximum(a, b), ((3, 4), (3, 4)), distinct()),
    Case("minimum_broadcast", lambda T, a, b: T.minimum(a, b), ((3, 4), (4,)), distinct()),
    Case("max_binary", lambda T, a, b: T.max(a, b), ((5,), (5,)), distinct()),
    Case("clamp_both", lambda T, a: T.clamp(a, -0.5, 0.5), ((10,),), distinct(-1, 1)),
    Case("clamp_min_method", lambda T, a: a.clamp(min=0), ((10,),), distinct(-1, 1)),
    Case("clamp_max_method", lambda T, a: a.clamp(max=0.25), ((10,),), distinct(-1, 1)),
    Case("clamp_tensor_bounds", lambda T, a, lo, hi: T.clamp(a, lo, hi * 0.2 + 1.5), ((12,), (12,), (12,)),
         distinct(-1.4, 1.4)),
    Case("where", lambda T, a, b: T.where(a > 0, a, b), ((3, 4), (4,)), away_from_zero()),
    Case("where_scalar", lambda T, a: T.where(a > 0, a, 0.0), ((6,),), away_from_zero()),
    Case("matmul_2d", lambda T, a, b: a @ b, ((3, 4), (4, 2))),
    Case("matmul_1d_2d", lambda T, a, b: T.matmul(a, b), ((4,), (4, 2))),
    Case("matmul_2d_1d", lambda T, a, b: a @ b, ((3, 4), (4,))),
    Case("matmul_1d_1d", lambda T, a, b: a @ b, ((4,), (4,))),
    Case("matmul_batched_broadcast", lambda T, a, b: a @ b, ((2, 3, 4), (4, 5))),
    Case("mm", lambda T, a, b: T.mm(a, b), ((3, 4), (4, 2))),
    Case("bmm", lambda T, a, b: T.bmm(a, b), ((2, 3, 4), (2, 4, 2))),
    Case("dot", lambda T, a, b: T.dot(a, b), ((5,), (5,))),
    Case("outer", lambda T, a, b: T.outer(a, b), ((3,), (4,))),
    Case("diag_of_vector", lambda T, a: T.diag(a), ((3,),)),
    Case("diag_of_vector_offset", lambda T, a: T.diag(a, 1), ((3,),)),
    Case("diag_of_matrix", lambda T, a: T.diag(a), ((3, 4),)),
    Case("diag_of_matrix_offset", lambda T, a: a.diag(-1), ((4, 3),)),
    Case("trace", lambda T, a: T.trace(a), ((3, 3),)),
    # reductions
    Case("sum_all", lambda T, a: a.sum(), ((3, 4),)),
    Case("sum_dim", lambda T, a: T.sum(a, dim=0), ((3, 4),)),
    Case("sum_dim_keepdim", lambda T, a: a.sum(dim=1, keepdim=True), ((3, 4),)),
    Case("sum_dims_tuple", lambda T, a: a.sum(dim=(0, 2)), ((2, 3, 4),)),
    Case("mean_all", lambda T, a: a.mean(), ((3, 4),)),
    Case("mean_dim_negative", lambda T, a: T.mean(a, -1, keepdim=True), ((3, 4),)),
    Case("prod_all", lambda T, a: a.prod(), ((2, 3),), away_from_zero(0.5, 1.5)),
    Case("prod_dim", lambda T, a: T.prod(a, 1), ((3, 4),), away_from_zero(0.5, 1.5)),
    Case("prod_dim_keepdim", lambda T, a: a.prod(0, keepdim=True), ((3, 2),), away_from_zero(0.5, 1.5)),
    Case("amax_all", lambda T, a: T.amax(a), ((3, 4),), distinct()),
    Case("amax_dim", lambda T, a: a.amax(dim=1), ((3, 4),), distinct()),
    Case("amin_dims_keepdim", lambda T, a: T.amin(a, dim=(0, 2), keepdim=True), ((2, 3, 4),), distinct()),
    Case("max_all", lambda T, a: a.max(), ((3, 4),), distinct()),
    Case("min_all", lambda T, a: T.min(a), ((3, 4),), distinct()),
    Case("max_dim", lambda T, a: T.max(a, 1), ((3, 4),), distinct()),
    Case("max_dim_keepdim_values", lambda T, a: a.max(dim=0, keepdim=True).values, ((3, 4),), distinct()),
    Case("min_dim", lambda T, a: a.min(-1)[0], ((2, 3, 4),), distinct()),
    Case("logsumexp", lambda T, a: T.logsumexp(a, dim=1), ((3, 4),)),
    Case("logsumexp_keepdim", lambda T, a: a.logsumexp(0, keepdim=True), ((3, 4),)),
    Case("logsumexp_dims", lambda T, a: T.logsumexp(a, dim=(0, 1)), ((3, 4),)),
    Case("softmax", lambda T, a: T.softmax(a, dim=1), ((3, 4),)),
    Case("softmax_dim0_method", lambda T, a: a.softmax(0), ((3, 4),)),
    Case("log_softmax", lambda T, a: T.log_softmax(a, dim=-1), ((3, 4),)),
    Case("log_softmax_method", lambda T, a: a.log_softmax(dim=0), ((2, 3, 2),)),
    Case("norm_default", lambda T, a: T.norm(a), ((3, 4),)),
    Case("norm_vector", lambda T, a: a.norm(), ((5,),)),
    Case("norm_p1", lambda T, a: T.norm(a, p=1), ((5,),), away_from_zero()),
    Case("norm_inf_dim", lambda T, a: T.norm(a, p=float("inf"), dim=1), ((3, 4),), distinct()),
    Case("norm_p3_dim_keepdim", lambda T, a: a.norm(3, dim=0, keepdim=True), ((3, 4),), away_from_zero()),
    Case("norm_fro_dims", lambda T, a: T.norm(a, "fro", dim=(0, 1)), ((3, 4),)),
    Case("var_all", lambda T, a: a.var(), ((3, 4),)),
    Case("var_dim", lambda T, a: T.var(a, dim=1), ((3, 4),)),
    Case("var_biased_keepdim", lambda T, a: T.var(a, 0, False, True), ((3, 4),)),
    Case("var_correction", lambda T, a: a.var(dim=1, correction=0), ((3, 4),)),
    Case("std_all", lambda T, a: a.std(), ((3, 4),)),
    Case("std_dim_unbiased_false", lambda T, a: T.std(a, dim=0, unbiased=False), ((3, 4),)),
    Case("std_keepdim", lambda T, a: a.std(1, keepdim=True), ((3, 4),)),
    Case("cumsum", lambda T, a: T.cumsum(a, dim=1), ((3, 4),)),
    # shapes, views and indexing
    Case("reshape", lambda T, a: a.reshape(4, 3), ((3, 4),)),
    Case("view_minus_one", lambda T, a: a.view(-1), ((3, 4),)),
    Case("flatten", lambda T, a: T.flatten(a), ((2, 3, 4),)),
    Case("flatten_range", lambda T, a: a.flatten(1), ((2, 3, 4),)),
    Case("squeeze", lambda T, a: a.squeeze(), ((3, 1, 4, 1),)),
    Case("squeeze_dim", lambda T, a: T.squeeze(a, 1), ((3, 1, 4),)),
    Case("unsqueeze", lambda T, a: a.unsqueeze(-1), ((3, 4),)),
    Case("transpose", lambda T, a: T.transpose(a, 0, 2), ((2, 3, 4),)),
    Case("permute", lambda T, a: a.permute(2, 0, 1), ((2, 3, 4),)),
    Case("t", lambda T, a: a.t(), ((3, 4),)),
    Case("T_property", lambda T, a: a.T, ((3, 4),)),
    Case("expand", lambda T, a: a.expand(2, 3, 4), ((3, 1),)),
    Case("expand_as", lambda T, a, b: a.expand_as(b) * b, ((4,), (3, 4))),
    Case("getitem_basic", lambda T, a: a[1:, ::2], ((3, 4),)),
    Case("getitem_int_and_none", lambda T, a: a[1, None, :], ((3, 4),)),
    Case("getitem_ellipsis", lambda T, a: a[..., 0], ((2, 3, 4),)),
    Case("getitem_int_array_repeated", lambda T, a: a[[0, 2, 0, 0]], ((3, 4),)),
    Case("getitem_int_tensor_2d", lambda T, a: a[T.tensor([[0, 1], [1, 1]])], ((3,),)),
    Case("getitem_two_arrays_repeated", lambda T, a: a[[0, 0, 2], [1, 1, 3]], ((3, 4),)),
    Case("getitem_bool_mask", lambda T, a: a[a > 0], ((3, 4),), away_from_zero()),
    Case("cat", lambda T, a, b: T.cat([a, b]), ((2, 3), (4, 3))),
    Case("cat_dim1", lambda T, a, b, c: T.cat((a, b, c), dim=1), ((2, 3), (2, 1), (2, 2))),
    Case("cat_same_tensor_twice", lambda T, a: T.cat([a, a * 2], dim=-1), ((2, 3),)),
    Case("stack", lambda T, a, b: T.stack([a, b]), ((2, 3), (2, 3))),
    Case("stack_last_dim", lambda T, a, b: T.stack((a, b), dim=-1), ((2, 3), (2, 3))),
    Case("split_int", lambda T, a: T.split(a, 2), ((5, 3),)),
    Case("split_sizes_dim1", lambda T, a: a.split([1, 3], dim=1), ((2, 4),)),
    Case("split_one_piece_used", lambda T, a: T.split(a, 2, dim=1)[1], ((2, 5),)),
    Case("chunk", lambda T, a: T.chunk(a, 3), ((7, 2),)),
    Case("chunk_method_dim1", lambda T, a: a.chunk(2, dim=1), ((2, 5),)),
    Case("unbind", lambda T, a: T.unbind(a, 1), ((2, 3),)),
    Case("gather_dim1_repeated", lambda T, a: T.gather(a, 1, T.tensor([[0, 0], [1, 0], [2, 2]])), ((3, 3),)),
    Case("gather_dim0_smaller_index", lambda T, a: a.gather(0, T.tensor([[2, 0, 1]])), ((3, 4),)),
    Case("index_select", lambda T, a: T.index_select(a, 1, T.tensor([3, 0, 3])), ((2, 4),)),
    Case("narrow", lambda T, a: T.narrow(a, 1, 1, 2), ((2, 4),)),
    Case("select", lambda T, a: a.select(0, -1), ((3, 4),)),
    Case("flip", lambda T, a: T.flip(a, [0, 1]), ((2, 3),)),
    Case("repeat", lambda T, a: a.repeat(2, 1, 3), ((2, 3),)),
    Case("masked_fill", lambda T, a: a.masked_fill(a > 0, 0.5), ((3, 4),), away_from_zero()),
    Case("tril", lambda T, a: T.tril(a), ((3, 3),)),
    Case("triu_offset", lambda T, a: T.triu(a, 1), ((3, 4),)),
    Case("sort_values", lambda T, a: T.sort(a, dim=1).values, ((3, 4),), distinct()),
    Case("sort_descending", lambda T, a: a.sort(0, descending=True)[0], ((3, 4),), distinct()),
    Case("topk_values", lambda T, a: T.topk(a, 2).values, ((3, 5),), distinct()),
    Case("round_decimals", lambda T, a: T.round(a * 10.0, decimals=0) + a, ((4,),), between_integers),
    Case("trunc", lambda T, a: T.trunc(a) * a, ((4,),), between_integers),
    Case("div_floor_mode", lambda T, a: T.div(a, 0.7, rounding_mode="floor") + a, ((4,),), uniform(0.1, 0.6)),
    # compositions that exercise several backward rules at once
    Case("mlp_layer", lambda T, x, w, b: T.tanh(x @ w + b).logsumexp(dim=1).mean(), ((5, 4), (4, 3), (3,))),
    Case("seed_002_vector", lambda T, x: T.sum(T.sqrt(T.pow(x, 2) - 1)), ((3,),), uniform(1.5, 4)),
    Case("seed_002_scalar", lambda T, x, y: T.sqrt(x) + T.reciprocal(x) + 2 * T.pow(y, 2), ((), ()), POS),
]

# rows of ops kept in their own files (same Case type, same tests below)
CASES += op_rows_indexing.CASES + op_rows_pointwise.CASES + op_rows_shaping.CASES
NOT_TRACEABLE = {**op_rows_indexing.NOT_TRACEABLE, **op_rows_pointwise.NOT_TRACEABLE,
                 **op_rows_shaping.NOT_TRACEABLE}  # read by test_trace_ops.py

BY_ID = {c.id: c for c in CASES}
assert len(BY_ID) == len(CASES), "duplicate case ids"


# ---- running a row --------------------------------------------------------------------------
def _inputs(case, dtype=np.float64):
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    return [np.asarray(case.domain(rng, s), dtype=dtype) for s in case.shapes]


def _float_outputs(out):
    outs = out if isinstance(out, tuple) else (out,)
    return [o for o in outs if o.dtype in (gradcli.float64, gradcli.float32) or str(o.dtype).startswith("torch.float")]


def _cotangents(case, arrays):
    """Fixed random weights w: the scalar checked is sum_k <out_k, w_k>."""
    with gradcli.no_grad():
        outs = _float_outputs(case.fn(gradcli, *[gradcli.tensor(a) for a in arrays]))
    rng = np.random.default_rng(zlib.crc32(case.id.encode()) + 1)
    return [rng.uniform(0.5, 1.5, o.shape) for o in outs]


def _objective(T, case, tensors, weights):
    outs = _float_outputs(case.fn(T, *tensors))
    assert len(outs) == len(weights)
    total = 0
    for o, w in zip(outs, weights):
        total = total + (o * T.tensor(w, dtype=o.dtype)).sum()
    return total


def _value(case, arrays, weights):
    with gradcli.no_grad():
        return float(_objective(gradcli, case, [gradcli.tensor(a) for a in arrays], weights))


def _gradients(case, arrays, weights):
    tensors = [gradcli.tensor(a, requires_grad=True) for a in arrays]
    _objective(gradcli, case, tensors, weights).backward()
    return [np.zeros_like(a) if t.grad is None else t.grad.numpy() for a, t in zip(arrays, tensors)]


def _central_differences(f, arrays, h):
    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [b.copy() for b in arrays]
            minus = [b.copy() for b in arrays]
            plus[i][idx] += h
            minus[i][idx] -= h
            g[idx] = (f(plus) - f(minus)) / (2 * h)
        grads.append(g)
    return grads


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_backward_matches_finite_differences(case):
    arrays = _inputs(case)
    weights = _cotangents(case, arrays)
    analytic = _gradients(case, arrays, weights)
    numeric = _central_differences(lambda xs: _value(case, xs, weights), arrays, 1e-6)
    for a, n in zip(analytic, numeric):
        np.testing.assert_allclose(a, n, rtol=1e-6, atol=1e-7)


def _hvp(case, arrays, weights, directions):
    """d/dx <grad(x), v> through gradcli's double backward (create_graph=True)."""
    tensors = [gradcli.tensor(a, requires_grad=True) for a in arrays]
    grads = gradcli.autograd.grad(_objective(gradcli, case, tensors, weights), tensors, create_graph=True)
    inner = [(g * gradcli.tensor(v)).sum() for g, v in zip(grads, directions) if g.requires_grad]
    if not inner:  # the first derivative is constant: the second is 0
        return [np.zeros_like(a) for a in arrays]
    second = gradcli.autograd.grad(sum(inner[1:], inner[0]), tensors, allow_unused=True)
    return [np.zeros_like(a) if s is None else s.numpy() for a, s in zip(arrays, second)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_double_backward_matches_finite_differences_of_the_gradient(case):
    arrays = _inputs(case)
    weights = _cotangents(case, arrays)
    rng = np.random.default_rng(7)
    directions = [rng.uniform(-1, 1, a.shape) for a in arrays]
    analytic = _hvp(case, arrays, weights, directions)
    h = 1e-5
    plus = _gradients(case, [a + h * v for a, v in zip(arrays, directions)], weights)
    minus = _gradients(case, [a - h * v for a, v in zip(arrays, directions)], weights)
    for a, p, m in zip(analytic, plus, minus):
        np.testing.assert_allclose(a, (p - m) / (2 * h), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_forward_and_backward_match_torch(case):
    torch = pytest.importorskip("torch")
    arrays = _inputs(case)
    weights = _cotangents(case, arrays)
    ours = [gradcli.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out_ours = _float_outputs(case.fn(gradcli, *ours))
    out_theirs = _float_outputs(case.fn(torch, *theirs))
    assert [tuple(o.shape) for o in out_ours] == [tuple(o.shape) for o in out_theirs]
    for o, t in zip(out_ours, out_theirs):
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-12)
    _objective(gradcli, case, ours, weights).backward()
    _objective(torch, case, theirs, weights).backward()
    for o, t in zip(ours, theirs):
        expected = np.zeros(t.shape) if t.grad is None else t.grad.numpy()
        got = np.zeros(o.shape) if o.grad is None else o.grad.numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


DOUBLE_BACKWARD_VS_TORCH = [
    "exp", "log", "sqrt", "rsqrt", "tan", "asin", "tanh", "sigmoid", "softplus", "erf", "atanh",
    "mul_broadcast", "div_broadcast", "pow_fractional", "pow_tensor_exponent", "rpow", "matmul_batched_broadcast",
    "prod_dim", "logsumexp", "softmax", "log_softmax", "norm_default", "norm_p3_dim_keepdim", "var_dim",
    "std_keepdim", "cumsum", "getitem_two_arrays_repeated", "gather_dim1_repeated", "cat_dim1", "split_int",
    "max_dim", "outer", "mlp_layer", "seed_002_scalar",
]


DOUBLE_BACKWARD_VS_TORCH += (op_rows_indexing.DOUBLE_BACKWARD_VS_TORCH + op_rows_pointwise.DOUBLE_BACKWARD_VS_TORCH
                             + op_rows_shaping.DOUBLE_BACKWARD_VS_TORCH)


@pytest.mark.parametrize("case_id", DOUBLE_BACKWARD_VS_TORCH)
def test_double_backward_matches_torch(case_id):
    torch = pytest.importorskip("torch")
    case = BY_ID[case_id]
    arrays = _inputs(case)
    weights = _cotangents(case, arrays)
    rng = np.random.default_rng(11)
    directions = [rng.uniform(-1, 1, a.shape) for a in arrays]
    ours = _hvp(case, arrays, weights, directions)
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    grads = torch.autograd.grad(_objective(torch, case, xs, weights), xs, create_graph=True, allow_unused=True)
    inner = [(g * torch.tensor(v)).sum() for g, v in zip(grads, directions) if g is not None and g.requires_grad]
    if not inner:  # torch's first derivative is constant: ours must give 0 as second derivative
        theirs = [None] * len(xs)
    else:
        theirs = torch.autograd.grad(sum(inner[1:], inner[0]), xs, allow_unused=True)
    for o, t in zip(ours, theirs):  # force: torch may answer with a ZeroTensor
        np.testing.assert_allclose(o, np.zeros(o.shape) if t is None else t.numpy(force=True), rtol=1e-10,
                                   atol=1e-12)


FLOAT32_CASES = [c for c in CASES if c.float32]


@pytest.mark.parametrize("case", FLOAT32_CASES, ids=lambda c: c.id)
def test_float32_inputs_give_float32_outputs_and_gradients(case):
    tensors = [gradcli.tensor(a, requires_grad=True) for a in _inputs(case, np.float32)]
    outs = _float_outputs(case.fn(gradcli, *tensors))
    assert outs and all(o.dtype == gradcli.float32 for o in outs)
    sum(o.sum() for o in outs).backward()
    for t in tensors:
        assert t.grad is None or t.grad.dtype == gradcli.float32


def test_every_unary_row_has_a_case_and_a_domain():
    assert set(UNARY) <= set(BY_ID)
    assert set(UNARY) == set(UNARY_DOMAINS)


# ---- the UNARY table against SymPy ----------------------------------------------------------
def _sympy_derivative(name):
    import sympy

    x = sympy.Symbol("x", real=True)
    derivative = sympy.diff(sympy_expr(name, x), x)
    # SymPy leaves floor'/ceiling' unevaluated; they are 0 between the integers we sample
    derivative = derivative.replace(
        lambda e: isinstance(e, (sympy.Derivative, sympy.Subs)) and e.has(sympy.floor, sympy.ceiling),
        lambda e: sympy.Integer(0))
    return x, sympy_expr(name, x), derivative


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_rule_and_forward_agree_with_sympy(name):
    sympy = pytest.importorskip("sympy")
    forward, _sympy_name, rule = UNARY[name]
    x, expr, derivative = _sympy_derivative(name)
    points = UNARY_DOMAINS[name](np.random.default_rng(zlib.crc32(name.encode())), (6,))
    for p in points:
        at = {x: sympy.Float(float(p), 30)}
        y = forward(np.asarray(p))
        assert float(y) == pytest.approx(float(expr.subs(at).evalf(30)), rel=1e-12, abs=1e-14)
        grad = rule(gradcli.tensor(1.0), gradcli.tensor(float(p)), gradcli.tensor(y))
        assert float(grad) == pytest.approx(float(derivative.subs(at).evalf(30)), rel=1e-12, abs=1e-14)


def test_sympy_expr_spells_the_ml_functions_elementarily():
    sympy = pytest.importorskip("sympy")
    x = sympy.Symbol("x")
    assert sympy_expr("sigmoid", x) == 1 / (1 + sympy.exp(-x))
    assert sympy_expr("softplus", x) == sympy.log(1 + sympy.exp(x))
    assert sympy_expr("rsqrt", x) == 1 / sympy.sqrt(x)
    assert sympy_expr("abs", x) == sympy.Abs(x)
    assert sympy_expr("ceil", x) == sympy.ceiling(x)
    assert SYMPY_EXPR["erf"](x) == sympy.erf(x) and set(SYMPY_EXPR) == set(UNARY)


def test_unary_row_saves_only_what_its_rule_reads():
    # exp's rule reads its output only: modifying the input in place must not break backward
    # (torch's ExpBackward saves only the result), while log reads x and must complain
    x = gradcli.tensor([0.5, 1.0], requires_grad=True)
    a = x * 1.0
    y = a.exp()
    a.mul_(3.0)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.5, 1.0]))

    b = x * 1.0
    z = b.log()
    b.mul_(3.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_constant_factor_modified_in_place_does_not_break_mul_backward():
    # y = x * w with a constant w saves w (for x's gradient), not x: changing x later is fine
    x = gradcli.tensor([1.0, 2.0], requires_grad=True)
    w = gradcli.tensor([3.0, 4.0])
    h = x * 1.0
    y = h * w
    h.add_(1.0)
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 4.0]
    assert math.isfinite(float(x.grad.sum()))
