"""What the ops table cannot express for the shape and linear-algebra ops of ops/shaping.py and
ops/linalg_more.py: the order-dependent ops (argsort, median's indices, unique, searchsorted,
bucketize) against torch, meshgrid's indexing modes, dtypes, views, and torch's error messages."""
import warnings

import numpy as np
import pytest

import gradcli

torch = pytest.importorskip("torch")

_TORCH_DTYPES = {"float64": torch.float64, "float32": torch.float32, "int64": torch.int64, "int32": torch.int32,
                 "bool": torch.bool}


def _same(ours, theirs):
    """Same values, shapes and dtypes (tuples element by element)."""
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _same(o, t)
        return
    assert isinstance(ours, gradcli.Tensor), type(ours)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert _TORCH_DTYPES[str(ours.data.dtype)] == theirs.dtype, (ours.data.dtype, theirs.dtype)
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


def _both(fn, *arrays):
    """fn(T, *tensors) with T = gradcli and T = torch on the same arrays."""
    ours = fn(gradcli, *[gradcli.tensor(a) for a in arrays])
    theirs = fn(torch, *[torch.tensor(a) for a in arrays])
    _same(ours, theirs)
    return ours


def _same_error(fn, *arrays, exc=RuntimeError):
    with pytest.raises(exc) as theirs:
        fn(torch, *[torch.tensor(a) for a in arrays])
    with pytest.raises(exc) as ours:
        fn(gradcli, *[gradcli.tensor(a) for a in arrays])
    assert str(ours.value) == str(theirs.value)


RNG = np.random.default_rng(0)
WITH_TIES = RNG.integers(0, 4, (4, 6)).astype(np.float64)
DISTINCT = RNG.permutation(24).reshape(4, 6).astype(np.float64) / 4


# ---- argsort --------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [{}, {"dim": 0}, {"descending": True}, {"dim": 0, "descending": True}])
def test_argsort_stable_matches_torch_with_ties_in_either_direction(kwargs):
    _both(lambda T, x: T.argsort(x, stable=True, **kwargs), WITH_TIES)
    _both(lambda T, x: x.argsort(stable=True, **kwargs), WITH_TIES.astype(np.int64))
    _both(lambda T, x: T.argsort(x, **kwargs), DISTINCT)


def test_argsort_orders_nan_as_the_largest_value_and_accepts_a_0d_tensor():
    x = np.array([3.0, np.nan, 1.0, 3.0, -np.inf, np.nan, 0.0])
    _both(lambda T, t: T.argsort(t, stable=True), x)
    _both(lambda T, t: T.argsort(t, descending=True, stable=True), x)
    _both(lambda T, t: T.argsort(t), np.array(2.5))


# ---- median ---------------------------------------------------------------------------------
def test_median_along_a_dim_gives_torchs_values_and_indices():
    _both(lambda T, x: tuple(T.median(x, 1)), DISTINCT)
    _both(lambda T, x: tuple(x.median(dim=0, keepdim=True)), DISTINCT)
    _both(lambda T, x: tuple(x.median(-1)), DISTINCT.astype(np.int64))
    _both(lambda T, x: tuple(T.median(x, 0)), np.array(1.5))
    out = gradcli.median(gradcli.tensor(DISTINCT), 1)
    assert type(out).__name__ == "median" and out.values is out[0] and out.indices is out[1]
    assert repr(out).startswith("torch.return_types.median(\nvalues=tensor(")


def test_median_is_the_lower_middle_value_and_a_slice_with_nan_has_median_nan_at_its_first_nan():
    x = np.array([[4.0, 1.0, 3.0, 2.0], [1.0, np.nan, 2.0, np.nan], [5.0, 5.0, 5.0, 5.0]])
    _both(lambda T, t: tuple(T.median(t, 1))[0], x)
    ours = gradcli.median(gradcli.tensor(x), 1)
    assert ours.indices.tolist()[:2] == [3, 1]  # 2.0 is the lower middle of 1, 2, 3, 4
    _both(lambda T, t: T.median(t), x[:1])
    _both(lambda T, t: T.median(t), x)  # a NaN anywhere: NaN
    _both(lambda T, t: T.median(t), np.array([3, 1, 2, 4]))  # integers keep their dtype
    _both(lambda T, t: T.median(t), np.zeros(0))  # empty: NaN, as torch


def test_median_with_ties_gives_the_tied_value_and_an_index_holding_it():
    theirs = torch.median(torch.tensor(WITH_TIES), 1)
    ours = gradcli.median(gradcli.tensor(WITH_TIES), 1)
    np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
    picked = np.take_along_axis(WITH_TIES, ours.indices.numpy()[:, None], 1)[:, 0]
    np.testing.assert_array_equal(picked, theirs.values.numpy())


def test_median_gradient_goes_to_the_chosen_element_only():
    for lib in (gradcli, torch):
        x = lib.tensor([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]], requires_grad=True)
        (x.median() * 5).backward()
        assert x.grad.tolist() == [[0.0, 5.0, 0.0], [0.0, 0.0, 0.0]]  # median of six is the third smallest: 1.0
        y = lib.tensor([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]], requires_grad=True)
        y.median(1).values.sum().backward()
        assert y.grad.tolist() == [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]


# ---- unique, searchsorted, bucketize --------------------------------------------------------
@pytest.mark.parametrize("kwargs", [{}, {"return_inverse": True}, {"return_counts": True},
                                    {"return_inverse": True, "return_counts": True}, {"dim": 1, "return_inverse": True},
                                    {"dim": 0, "return_counts": True}])
def test_unique_matches_torch(kwargs):
    _both(lambda T, x: T.unique(x, **kwargs), WITH_TIES.astype(np.int64))
    _both(lambda T, x: x.unique(**kwargs), WITH_TIES[:, :3])
    _both(lambda T, x: x.unique(**kwargs), np.array([[1, 2], [1, 2], [0, 5]], dtype=np.int64))


def test_unique_keeps_every_nan_as_torch():
    _both(lambda T, x: T.unique(x, return_inverse=True, return_counts=True), np.array([3.0, np.nan, 1.0, np.nan, 3.0]))


SEQ = np.array([1.0, 3.0, 3.0, 5.0, 7.0])
VALUES = np.array([[0.0, 3.0, 4.0], [7.0, 8.0, 1.0]])


@pytest.mark.parametrize("kwargs", [{}, {"right": True}, {"side": "right"}, {"side": "left"}, {"out_int32": True}])
def test_searchsorted_matches_torch_on_1d_and_batched_sequences(kwargs):
    _both(lambda T, s, v: T.searchsorted(s, v, **kwargs), SEQ, VALUES)
    batched = np.sort(RNG.integers(0, 6, (2, 5)).astype(np.float64), axis=1)
    _both(lambda T, s, v: T.searchsorted(s, v, **kwargs), batched, VALUES)
    ours = gradcli.searchsorted(gradcli.tensor(SEQ), 3.0, **kwargs)
    theirs = torch.searchsorted(torch.tensor(SEQ), 3.0, **kwargs)
    _same(ours, theirs)


def test_searchsorted_with_a_sorter_and_its_errors():
    seq = np.array([5.0, 1.0, 3.0, 7.0])
    sorter = np.array([1, 2, 0, 3])
    _both(lambda T, s, v, o: T.searchsorted(s, v, sorter=o), seq, VALUES, sorter)
    _same_error(lambda T, s, v: T.searchsorted(s, v, right=True, side="left"), SEQ, VALUES)
    _same_error(lambda T, s, v: T.searchsorted(s, v), np.zeros((3, 4)), VALUES)


@pytest.mark.parametrize("kwargs", [{}, {"right": True}, {"out_int32": True, "right": True}])
def test_bucketize_matches_torch(kwargs):
    _both(lambda T, x, b: T.bucketize(x, b, **kwargs), VALUES, SEQ)
    _both(lambda T, x, b: T.bucketize(x, b, **kwargs), np.array(3.0), SEQ)
    _same_error(lambda T, x, b: T.bucketize(x, b), VALUES, np.zeros((2, 2)))


def test_order_dependent_ops_refuse_symbols_with_the_reason():
    from gradcli.autograd.ops._base import NotSymbolic
    from gradcli.symbolic.trace import symbol_array
    x = gradcli.Tensor(symbol_array("x", (3,)))
    for fn, op in [(gradcli.argsort, "argsort"), (gradcli.median, "median"), (gradcli.unique, "unique"),
                   (lambda t: gradcli.searchsorted(t, t), "searchsorted")]:
        with pytest.raises(NotSymbolic) as caught:
            fn(x)
        assert str(caught.value).startswith(f"the built-in op {op} cannot run on symbols: it orders the elements")


# ---- meshgrid -------------------------------------------------------------------------------
@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_meshgrid_matches_torch_in_both_indexing_modes(indexing, n):
    arrays = [np.arange(k + 2, dtype=np.float64) * (k + 1) for k in range(n)]
    _both(lambda T, *ts: T.meshgrid(*ts, indexing=indexing), *arrays)
    _both(lambda T, *ts: T.meshgrid(list(ts), indexing=indexing), *arrays)
    _both(lambda T, a, b: T.meshgrid(a, b, indexing=indexing), np.array(2.0), np.arange(3.0))
    _both(lambda T, a, b: T.meshgrid(a, b, indexing=indexing), np.arange(2), np.arange(3))


def test_meshgrid_errors_and_default_indexing():
    assert [tuple(t.shape) for t in gradcli.meshgrid(gradcli.zeros(2), gradcli.zeros(3))] == [(2, 3), (2, 3)]
    _same_error(lambda T, a, b: T.meshgrid(a, b, indexing="foo"), np.zeros(2), np.zeros(3))
    _same_error(lambda T, a, b: T.meshgrid(a, b, indexing="ij"), np.zeros(2), np.zeros(3, np.int64))
    with pytest.raises(RuntimeError, match="Expected 0D or 1D tensor"):
        gradcli.meshgrid(gradcli.zeros(2, 2), gradcli.zeros(3), indexing="ij")


# ---- dtypes, views, values beyond the table -------------------------------------------------
INTS = np.arange(12, dtype=np.int64).reshape(3, 4) - 5


@pytest.mark.parametrize("name, fn", [
    ("roll", lambda T, x: T.roll(x, (1, 2), (0, 1))),
    ("tile", lambda T, x: T.tile(x, (2, 1, 2))),
    ("repeat_interleave", lambda T, x: T.repeat_interleave(x, 2, dim=0)),
    ("repeat_interleave_tensor", lambda T, x: x.repeat_interleave(T.tensor([2, 0, 1, 3]), dim=1)),
    ("diagonal", lambda T, x: T.diagonal(x, 1)),
    ("diag_embed", lambda T, x: T.diag_embed(x, -1)),
    ("unflatten", lambda T, x: T.unflatten(x, 1, (2, 2))),
    ("broadcast_to", lambda T, x: T.broadcast_to(x, (2, 3, 4))),
    ("kron", lambda T, x: T.kron(x, x[:2, :2])),
    ("einsum", lambda T, x: T.einsum("ij,kj->ik", x, x)),
    ("tensordot", lambda T, x: T.tensordot(x, x, ([1], [1]))),
    ("mv", lambda T, x: T.mv(x, x[0])),
    ("addmm", lambda T, x: T.addmm(x[:, :2], x, x.T[:, :2])),
    ("cross", lambda T, x: T.cross(x[:, :3], x[:, 1:], dim=1)),
])
def test_integer_inputs_keep_their_dtype(name, fn):
    _both(fn, INTS)
    _both(fn, INTS.astype(np.float32))


def test_repeat_interleave_of_repeats_alone_and_flattened_input():
    _both(lambda T, r: T.repeat_interleave(r), np.array([2, 0, 3]))
    _both(lambda T, x: T.repeat_interleave(x, 2), INTS)
    _same_error(lambda T, x: T.repeat_interleave(x, -1), INTS)


def test_diagonal_is_a_view_in_place_writes_reach_the_base_and_its_gradient():
    results = []
    for lib in (gradcli, torch):
        x = lib.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
        y = x * 1
        y.diagonal(1).mul_(3)
        (y * y).sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    base = gradcli.zeros(2, 3)
    base.diagonal().fill_(7.0)
    assert base.tolist() == [[7.0, 0.0, 0.0], [0.0, 7.0, 0.0]]


def test_einsum_implicit_output_ellipsis_and_upper_case_labels_match_torch():
    a, b = RNG.uniform(-1, 1, (2, 3)), RNG.uniform(-1, 1, (3, 4))
    for eq in ["Ba,aC", "ab,bA", "ij,jk", "ba", "ii", "i,i", "...i,i", "...i->", "ij->j"]:
        ops = [a, b] if "," in eq and eq[0] != "." else [a]
        if eq in ("i,i",):
            ops = [a[0], a[1]]
        if eq == "...i,i":
            ops = [a, a[0]]
        if eq == "ii":
            ops = [b[:, :3]]
        ours = gradcli.einsum(eq, *[gradcli.tensor(o) for o in ops])
        theirs = torch.einsum(eq, *[torch.tensor(o) for o in ops])
        assert tuple(ours.shape) == tuple(theirs.shape), eq
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-13, atol=1e-14)


def test_einsum_result_is_a_new_tensor_even_where_numpy_gives_a_view():
    x = gradcli.tensor(np.arange(9.0).reshape(3, 3))
    for eq in ["ii->i", "ij->ji"]:
        out = gradcli.einsum(eq, x)
        out.add_(100.0)
        assert x.tolist() == np.arange(9.0).reshape(3, 3).tolist()


def test_einsum_float32_stays_float32_and_mixed_dtypes_fail_as_in_torch():
    x = gradcli.tensor(np.ones((2, 3), np.float32), requires_grad=True)
    out = gradcli.einsum("ij,ij->i", x, x)
    out.sum().backward()
    assert out.dtype == gradcli.float32 and x.grad.dtype == gradcli.float32
    _same_error(lambda T, a, b: T.einsum("ij,jk->ik", a, b), np.zeros((2, 3)), np.zeros((3, 5), np.float32))


@pytest.mark.parametrize("fn, arrays", [
    (lambda T, a, b: T.einsum("ij,jk->ik", a, b), [(2, 3), (4, 5)]),
    (lambda T, a: T.einsum("ij->ik", a), [(2, 3)]),
    (lambda T, a: T.einsum("ij", a), [(2, 3, 4)]),
    (lambda T, a: T.einsum("ij,jk", a), [(2, 3)]),
    (lambda T, a, b: T.einsum("i", a, b), [(2,), (2,)]),
    (lambda T, a: T.einsum("ij->ii", a), [(2, 3)]),
    (lambda T, a: T.broadcast_to(a, (2, 4)), [(3,)]),
    (lambda T, a, b: T.broadcast_tensors(a, b), [(3,), (4,)]),
    (lambda T, a, b: T.tensordot(a, b, 1), [(2, 3), (4, 5)]),
    (lambda T, a, b: T.mv(a, b), [(2, 3), (4,)]),
    (lambda T, a, b: T.mv(a, b), [(3,), (3,)]),
    (lambda T, x, a, b: T.addmm(x, a, b), [(2, 5), (2, 3), (4, 5)]),
    (lambda T, a, b: T.cross(a, b), [(2, 4), (2, 4)]),
    (lambda T, a, b: T.cross(a, b, dim=1), [(2, 4), (2, 4)]),
    (lambda T, a, b: T.cross(a, b, dim=-1), [(4, 1, 3), (2, 3)]),
    (lambda T, a: T.diagonal(a, 0, 0, 0), [(2, 3)]),
    (lambda T, a: T.diag_embed(a, 0, 2, -1), [(2, 3)]),
    (lambda T, a: T.unflatten(a, 1, (4, -1)), [(2, 6)]),
    (lambda T, a, b: T.cdist(a, b), [(2, 3), (2, 4)]),
    (lambda T, a, b: T.cdist(a, b), [(3,), (2, 3)]),
    (lambda T, a: T.roll(a, (1, 2), 0), [(2, 3)]),
    (lambda T, a: T.einsum("ii->i", a), [(2, 3)]),
    (lambda T, x, a, b: T.baddbmm(x, a, b), [(2, 3, 2), (2, 3, 4), (3, 4, 2)]),
    (lambda T, x, a, b: T.baddbmm(x, a, b), [(4, 2), (2, 3, 4), (2, 4, 2)]),
    (lambda T, x, a, b: T.addmm(x, a, b), [(3, 1), (2, 3), (3, 2)]),
    (lambda T, x, a, b: T.addmv(x, a, b), [(2,), (2, 3), (4,)]),
    (lambda T, a: T.repeat_interleave(a, T.tensor([1, 2])), [(3,)]),
    (lambda T, a: T.repeat_interleave(a, T.tensor([1, -1, 2])), [(3,)]),
    (lambda T, a, b: T.tensordot(a, b, ([0, 1], [0])), [(2, 3), (3, 2)]),
    (lambda T, a, b: T.tensordot(a, b, 3), [(2, 3), (3, 2)]),
    (lambda T, a, b: T.cdist(a, b, p=-1), [(2, 3), (4, 3)]),
])
def test_bad_shapes_and_equations_raise_torchs_runtime_error(fn, arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same_error(fn, *[np.zeros(s) for s in arrays])


def test_cross_without_dim_warns_and_takes_the_first_dim_of_size_3_as_torch():
    a, b = RNG.uniform(-1, 1, (3, 2, 3)), RNG.uniform(-1, 1, (3, 2, 3))
    with pytest.warns(UserWarning, match="Using torch.cross without specifying the dim arg is deprecated"):
        ours = gradcli.cross(gradcli.tensor(a), gradcli.tensor(b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.cross(torch.tensor(a), torch.tensor(b))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14)
    np.testing.assert_allclose(ours.numpy(), np.cross(a, b, axis=0), rtol=1e-14)


@pytest.mark.parametrize("p", [0, 1, 2, 3, 0.5, float("inf")])
def test_cdist_values_and_gradients_match_torch_for_every_p(p):
    a, b = RNG.uniform(-1, 1, (2, 3, 4)), RNG.uniform(-1, 1, (2, 5, 4))
    w = RNG.uniform(0.5, 1.5, (2, 3, 5))
    grads = []
    for lib in (gradcli, torch):
        x, y = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        out = lib.cdist(x, y, p=p)
        if p == 0:
            grads.append((out.detach().numpy(),))
            continue
        (out * lib.tensor(w)).sum().backward()
        grads.append((out.detach().numpy(), x.grad.numpy(), y.grad.numpy()))
    for o, t in zip(*grads):
        np.testing.assert_allclose(o, t, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("p", [2, 3, 1.5])
def test_cdist_of_a_set_with_itself_has_zero_gradient_at_its_zero_distances_as_torch(p):
    a = RNG.uniform(-1, 1, (4, 3))
    a[3] = a[1]  # two equal points: a zero off the diagonal too
    w = RNG.uniform(0.5, 1.5, (4, 4))
    results = []
    for lib in (gradcli, torch):
        x = lib.tensor(a, requires_grad=True)
        out = lib.cdist(x, x, p=p)
        (out * lib.tensor(w)).sum().backward()
        results.append((out.detach().numpy(), x.grad.numpy()))
    assert np.isfinite(results[0][1]).all()
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-10, atol=1e-12)


def test_einsum_broadcasts_size_1_labelled_dims_like_torch():
    a, b = RNG.uniform(-1, 1, (1, 3)), RNG.uniform(-1, 1, (2, 3))
    results = []
    for lib in (gradcli, torch):
        x, y = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        out = lib.einsum("ij,ij->ij", x, y)
        (out * lib.tensor(b)).sum().backward()
        results.append((out.detach().numpy(), x.grad.numpy(), y.grad.numpy()))
    for o, t in zip(*results):
        np.testing.assert_allclose(o, t, rtol=1e-13)


def test_addmm_with_beta_zero_ignores_nan_in_input_and_gives_it_zero_gradient():
    for lib in (gradcli, torch):
        x = lib.tensor([[float("nan"), 1.0]], requires_grad=True)
        a, b = lib.tensor([[1.0, 2.0]]), lib.tensor([[3.0, 0.0], [1.0, 1.0]])
        out = lib.addmm(x, a, b, beta=0, alpha=2)
        out.sum().backward()
        assert out.tolist() == [[10.0, 4.0]] and x.grad.tolist() == [[0.0, 0.0]]


def test_broadcast_shapes_and_tensors_match_torch():
    shapes = [(3, 1), (1, 4), (2, 1, 1)]
    assert gradcli.broadcast_shapes(*shapes) == tuple(torch.broadcast_shapes(*shapes)) == (2, 3, 4)
    _both(lambda T, a, b: T.broadcast_tensors(a, b), np.arange(3.0).reshape(3, 1), np.arange(2.0))
    _both(lambda T, a, b: T.broadcast_tensors([a, b]) if T is gradcli else T.broadcast_tensors(a, b),
          np.arange(3.0), np.array(1.0))


@pytest.mark.parametrize("p", [3, 1.5])
def test_cdist_with_other_p_has_a_double_backward_and_keeps_float32(p):
    from op_case import Case
    from test_ops import _cotangents, _gradients, _hvp, _inputs
    case = Case(f"cdist_p{p}", lambda T, a, b: T.cdist(a, b, p=p), ((3, 2), (2, 2)))
    arrays = _inputs(case)
    weights = _cotangents(case, arrays)
    directions = [np.random.default_rng(3).uniform(-1, 1, a.shape) for a in arrays]
    analytic = _hvp(case, arrays, weights, directions)
    h = 1e-5
    plus = _gradients(case, [a + h * v for a, v in zip(arrays, directions)], weights)
    minus = _gradients(case, [a - h * v for a, v in zip(arrays, directions)], weights)
    for a, pl, mi in zip(analytic, plus, minus):
        np.testing.assert_allclose(a, (pl - mi) / (2 * h), rtol=1e-5, atol=1e-6)
    x, y = (gradcli.tensor(a.astype(np.float32), requires_grad=True) for a in arrays)
    out = gradcli.cdist(x, y, p=p)
    out.sum().backward()
    assert out.dtype == x.grad.dtype == y.grad.dtype == gradcli.float32


@pytest.mark.parametrize("fn", [
    lambda T, x: x.repeat_interleave(1), lambda T, x: x.repeat_interleave(2, dim=1), lambda T, x: x.roll(1),
    lambda T, x: x.tile(1), lambda T, x: T.kron(x, T.ones(1, dtype=x.dtype)), lambda T, x: x.median(0).values,
    lambda T, x: x.median(), lambda T, x: T.cross(x, x, dim=1), lambda T, x: T.diag_embed(x),
    lambda T, x: T.tensordot(x, x, ([0], [0])),
])
def test_copying_ops_give_a_new_tensor_that_in_place_ops_do_not_write_through(fn):
    for lib in (gradcli, torch):
        x = lib.tensor([[3.0, 1.0, 2.0]])
        fn(lib, x).add_(10.0)
        assert x.tolist() == [[3.0, 1.0, 2.0]]
