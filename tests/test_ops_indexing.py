"""torch's indexing/scatter family beyond what the ops table (op_rows_indexing.py) expresses: the
in-place variants (result identity, version counter, the leaf error, views), scalar ``value=`` forms
on integer tensors, result dtypes, torch's errors for bad indices, and double backward against
torch. Every expectation is computed by torch 2.13 on the same call."""
import warnings

import numpy as np
import pytest

import gradcli

torch = pytest.importorskip("torch")


def _idx(T, rows):
    return T.tensor(rows)


def _mask(T, rows):
    return T.tensor(rows, dtype=T.bool)


def _values(t):
    return t.detach().numpy()


@pytest.fixture(autouse=True)
def torch_default_float64():
    """gradcli's default dtype is float64: torch.ones/tensor(1.0) must make the same tensors."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


# ---- in-place variants: (name, fn(T, x) applying it to x), on a float64 (3, 4) tensor --------
IN_PLACE = [
    ("scatter_", lambda T, x: x.scatter_(0, _idx(T, [[2, 0, 1, 0]]), T.ones(1, 4, dtype=x.dtype) * 7)),
    ("scatter_value", lambda T, x: x.scatter_(1, _idx(T, [[3], [0], [1]]), -1.5)),
    ("scatter_reduce_add", lambda T, x: x.scatter_(1, _idx(T, [[3, 3], [0, 1], [1, 1]]), 2.0, reduce="add")),
    ("scatter_reduce_multiply", lambda T, x: x.scatter_(
        0, _idx(T, [[0, 0], [0, 1]]), T.full((2, 2), 3.0, dtype=x.dtype), reduce="multiply")),
    ("scatter_add_", lambda T, x: x.scatter_add_(1, _idx(T, [[0, 0], [3, 3], [1, 0]]), T.ones(3, 2, dtype=x.dtype))),
    ("index_add_", lambda T, x: x.index_add_(0, _idx(T, [2, 2]), T.ones(2, 4, dtype=x.dtype), alpha=3)),
    ("index_fill_", lambda T, x: x.index_fill_(1, _idx(T, [0, -1]), 9.0)),
    ("masked_fill_", lambda T, x: x.masked_fill_(_mask(T, [True, False, False, True]), 0.0)),
    ("masked_scatter_", lambda T, x: x.masked_scatter_(_mask(T, [[True], [False], [True]]),
                                                       T.arange(10, dtype=x.dtype))),
    ("index_put_", lambda T, x: x.index_put_((_idx(T, [0, 2]), _idx(T, [1, 1])), T.tensor(4.0, dtype=x.dtype))),
    ("index_put_accumulate", lambda T, x: x.index_put_((_idx(T, [1, 1]),), T.ones(4, dtype=x.dtype),
                                                       accumulate=True)),
    ("put_", lambda T, x: x.put_(_idx(T, [11, 0]), T.tensor([5.0, 6.0], dtype=x.dtype))),
    ("put_accumulate", lambda T, x: x.put_(_idx(T, [1, 1]), T.tensor([5.0, 6.0], dtype=x.dtype), accumulate=True)),
    ("fill_diagonal_", lambda T, x: x.fill_diagonal_(-3.0)),
    ("clamp_min_", lambda T, x: x.clamp_min_(5.0)),
    ("clamp_max_", lambda T, x: x.clamp_max_(5.0)),
]
START = np.arange(12.0).reshape(3, 4)


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize("name,fn", IN_PLACE, ids=[n for n, _ in IN_PLACE])
def test_in_place_variant_returns_self_bumps_the_version_and_writes_torchs_values(name, fn):
    ours, theirs = gradcli.tensor(START.copy()), torch.tensor(START.copy())
    out = fn(gradcli, ours)
    expected = fn(torch, theirs)
    assert out is ours
    assert ours._version == theirs._version == 1
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert not np.array_equal(ours.numpy(), START)  # each call really changes the tensor
    assert expected is theirs


@pytest.mark.parametrize("name,fn", [c for c in IN_PLACE if "reduce" not in c[0]],
                         ids=[n for n, _ in IN_PLACE if "reduce" not in n])
def test_in_place_variant_on_a_leaf_that_requires_grad_raises_torchs_error(name, fn):
    with pytest.raises(RuntimeError) as theirs:
        fn(torch, torch.tensor(START.copy(), requires_grad=True))
    with pytest.raises(RuntimeError) as ours:
        fn(gradcli, gradcli.tensor(START.copy(), requires_grad=True))
    assert str(ours.value) == str(theirs.value).splitlines()[0]


@pytest.mark.parametrize("name,fn", [c for c in IN_PLACE if "reduce" not in c[0]],
                         ids=[n for n, _ in IN_PLACE if "reduce" not in n])
def test_in_place_variant_on_a_view_of_a_non_leaf_gives_torchs_gradient(name, fn):
    weights = np.linspace(0.5, 2.0, 30).reshape(5, 6)
    grads = []
    for T in (gradcli, torch):
        leaf = T.tensor(np.linspace(-1.0, 1.0, 30).reshape(5, 6), requires_grad=True)
        base = leaf * 2.0
        view = base[1:4, 1:5]  # a (3, 4) view: the write must reach base through CopySlices
        fn(T, view)
        assert view._version == base._version
        (base * T.tensor(weights)).sum().backward()
        grads.append(_values(leaf.grad))
    np.testing.assert_allclose(grads[0], grads[1], rtol=0, atol=1e-15)


def test_in_place_gradient_reaches_the_written_source():
    grads = []
    for T in (gradcli, torch):
        x = T.tensor(START.copy(), requires_grad=True)
        src = T.tensor([[1.0, 2.0, 3.0, 4.0]], requires_grad=True)
        y = (x * x).scatter_add_(0, _idx(T, [[2, 0, 2, 1]]), src * src)
        y.index_fill_(1, _idx(T, [3]), 0.0)
        (y * T.tensor(np.arange(12.0).reshape(3, 4))).sum().backward()
        grads.append((_values(x.grad), _values(src.grad)))
    for ours, theirs in zip(*grads):
        np.testing.assert_array_equal(ours, theirs)


# ---- scalar value forms and result dtypes ---------------------------------------------------
DTYPE_CASES = [
    ("scatter_int_float_value", lambda T: T.scatter(T.zeros(3, dtype=T.int64), 0, _idx(T, [0, 2]), 2.7)),
    ("scatter_value_keyword_float32", lambda T: T.zeros(2, 2, dtype=T.float32).scatter(1, _idx(T, [[1], [0]]),
                                                                                      value=0.1)),
    ("scatter_add_int64", lambda T: T.scatter_add(T.ones(3, dtype=T.int64), 0, _idx(T, [1, 1, 0]),
                                                  T.tensor([4, 5, 6]))),
    ("index_add_int_alpha", lambda T: T.index_add(T.ones(3, dtype=T.int64), 0, _idx(T, [2, 2]), T.tensor([1, 2]),
                                                  alpha=3)),
    ("index_add_float32", lambda T: T.index_add(T.ones(2, dtype=T.float32), 0, _idx(T, [0]),
                                                T.tensor([0.1], dtype=T.float32), alpha=0.5)),
    ("index_fill_int_float_value", lambda T: T.index_fill(T.zeros(2, 2, dtype=T.int64), 0, _idx(T, [1]), -2.9)),
    ("index_fill_float32_tensor_value", lambda T: T.zeros(2, dtype=T.float32).index_fill(
        0, _idx(T, [0]), T.tensor(0.1, dtype=T.float32))),
    ("masked_fill_int_", lambda T: T.arange(4).masked_fill_(_mask(T, [True, False, True, False]), 7.9)),
    ("masked_select_int", lambda T: T.masked_select(T.arange(6).reshape(2, 3), _mask(T, [False, True, True]))),
    ("masked_select_bool", lambda T: T.masked_select(_mask(T, [True, False]), _mask(T, [True, True]))),
    ("masked_scatter_float32", lambda T: T.zeros(3, dtype=T.float32).masked_scatter(
        _mask(T, [True, False, True]), T.tensor([0.1, 0.2, 0.3], dtype=T.float32))),
    ("take_int32", lambda T: T.take(T.arange(6, dtype=T.int32).reshape(2, 3), _idx(T, [[5], [0]]))),
    ("index_put_int_accumulate", lambda T: T.index_put(T.zeros(3, dtype=T.int64), (_idx(T, [0, 0, 2]),),
                                                       T.tensor(5), accumulate=True)),
    ("put_float32", lambda T: T.ones(2, 2, dtype=T.float32).put(_idx(T, [3]), T.tensor([0.1], dtype=T.float32))),
    ("fill_diagonal_int_wrap", lambda T: T.zeros(7, 3, dtype=T.int64).fill_diagonal_(4, wrap=True)),
    ("fill_diagonal_wide", lambda T: T.zeros(2, 5).fill_diagonal_(1.0, wrap=True)),
    ("clamp_min_int_", lambda T: T.arange(5).clamp_min_(2)),
    ("scatter_0d", lambda T: T.scatter(T.tensor(1.0), 0, T.tensor(0), 2.5)),
    ("scatter_add_0d", lambda T: T.scatter_add(T.tensor(1.0), 0, T.tensor(0), T.tensor(2.0))),
    ("scatter_empty_index", lambda T: T.scatter(T.ones(2, 2), 0, T.zeros(0, 2, dtype=T.int64), T.ones(0, 2))),
    ("scatter_int32_index", lambda T: T.scatter(T.zeros(3), 0, T.tensor([2], dtype=T.int32), 1.0)),
    ("index_add_1d_repeated", lambda T: T.index_add(T.zeros(4), 0, _idx(T, [1, 1, 3]), T.tensor([1.0, 2.0, 3.0]))),
    ("index_add_0d_index", lambda T: T.index_add(T.zeros(3, 2), 0, T.tensor(1), T.ones(1, 2))),
    ("index_fill_0d_index", lambda T: T.index_fill(T.zeros(3, 2), 1, T.tensor(1), 3.0)),
    ("index_put_bool_accumulate", lambda T: T.index_put(T.zeros(3, 2), (_mask(T, [True, False, True]),),
                                                        T.tensor(2.0), accumulate=True)),
    ("index_put_2d_bool", lambda T: T.index_put(T.zeros(2, 2), (_mask(T, [[True, False], [False, True]]),),
                                                T.tensor([5.0, 6.0]))),
    ("take_0d_index", lambda T: T.take(T.arange(6.0).reshape(2, 3), T.tensor(4))),
    ("masked_select_nothing", lambda T: T.masked_select(T.ones(2, 2), T.zeros(2, 2, dtype=T.bool))),
    ("masked_scatter__broadcast_mask", lambda T: T.zeros(2, 2).masked_scatter_(_mask(T, [[True], [False]]),
                                                                              T.arange(4.0))),
    ("clamp_min__function", lambda T: T.clamp_min_(T.zeros(3) - 1, 0.5)),
    ("scatter_reduce_multiply_value", lambda T: T.ones(2, 3).scatter(1, _idx(T, [[0, 0], [2, 1]]), 1.5,
                                                                       reduce="multiply")),
]


@pytest.mark.parametrize("name,fn", DTYPE_CASES, ids=[n for n, _ in DTYPE_CASES])
def test_values_and_dtype_match_torch(name, fn):
    ours, theirs = fn(gradcli), fn(torch)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_scatter_with_src_larger_than_index_reads_its_leading_block_and_pads_its_gradient():
    # torch computes this forward but its backward refuses src larger than index (an invalid
    # gradient shape); gradcli gives src the gradient of the block it read, zeros elsewhere
    x = gradcli.zeros(2, 3, requires_grad=True)
    src = gradcli.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    y = gradcli.scatter(x, 1, gradcli.tensor([[2, 0]]), src)
    np.testing.assert_array_equal(y.detach().numpy(), torch.scatter(torch.zeros(2, 3), 1, torch.tensor([[2, 0]]),
                                                           torch.tensor(src.detach().numpy())).numpy())
    (y * gradcli.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    assert src.grad.tolist() == [[3.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    assert x.grad.tolist() == [[0.0, 2.0, 0.0], [4.0, 5.0, 6.0]]
    z = gradcli.zeros(3, requires_grad=True)
    s = gradcli.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    gradcli.scatter_add(z, 0, gradcli.tensor([2, 2]), s).sum().backward()
    assert s.grad.tolist() == [1.0, 1.0, 0.0, 0.0] and z.grad.tolist() == [1.0, 1.0, 1.0]


def test_scatter_reduce_has_no_derivative_and_is_deprecated_with_a_tensor_src_as_in_torch():
    # torch warns once per process (TORCH_WARN_ONCE): only gradcli's warning is checked here
    for T in (gradcli, torch):
        x = T.zeros(3, requires_grad=True)
        with pytest.warns(UserWarning) as caught:
            with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
                T.scatter(x, 0, T.tensor([1]), T.ones(1), reduce="add").sum().backward()
            warnings.warn("marker", UserWarning)
        messages = [str(w.message) for w in caught]
        assert T is torch or any(m.startswith("The reduce argument of torch.scatter with Tensor src is deprecated")
                                 for m in messages)


# ---- errors: the same exception type and message as torch -----------------------------------
X = np.zeros((3, 4))
ERRORS = [
    ("scatter_out_of_range", lambda T, x: T.scatter(x, 0, _idx(T, [[5]]), T.ones(1, 1))),
    ("scatter_negative_index", lambda T, x: x.scatter(0, _idx(T, [[-1]]), 1.0)),
    ("scatter_index_ndim", lambda T, x: T.scatter(x, 0, _idx(T, [0]), T.ones(1, 1))),
    ("scatter_float_index", lambda T, x: T.scatter(x, 0, T.tensor([[0.0]]), 1.0)),
    ("scatter_index_too_big", lambda T, x: T.scatter(x, 0, _idx(T, [[0, 1, 2, 0, 1]]), T.ones(4, 5))),
    ("scatter_index_too_big_value", lambda T, x: T.scatter(x, 0, _idx(T, [[0, 1, 2, 0, 1]]), 2.0)),
    ("scatter_dtype", lambda T, x: T.scatter(x, 0, _idx(T, [[0]]), T.ones(1, 1, dtype=T.float32))),
    ("scatter_bad_reduce", lambda T, x: T.scatter(x, 0, _idx(T, [[0]]), 1.0, reduce="max")),
    ("scatter_dim", lambda T, x: T.scatter(x, 2, _idx(T, [[0]]), 1.0)),
    ("scatter_add_out_of_range", lambda T, x: T.scatter_add(x, 1, _idx(T, [[4]]), T.ones(1, 1))),
    ("scatter_add_dtype", lambda T, x: x.scatter_add(0, _idx(T, [[0]]), T.ones(2, 2, dtype=T.float32))),
    ("index_add_out_of_range", lambda T, x: T.index_add(x, 0, _idx(T, [0, 5]), T.ones(2, 4))),
    ("index_add_negative", lambda T, x: T.index_add(x, 0, _idx(T, [0, -1]), T.ones(2, 4))),
    ("index_add_count", lambda T, x: T.index_add(x, 0, _idx(T, [0, 1]), T.ones(3, 4))),
    ("index_add_2d_index", lambda T, x: T.index_add(x, 0, _idx(T, [[0, 1]]), T.ones(2, 4))),
    ("index_add_float_index", lambda T, x: T.index_add(x, 0, T.tensor([0.0]), T.ones(1, 4))),
    ("index_add_shape", lambda T, x: T.index_add(x, 0, _idx(T, [0, 1]), T.ones(2, 5))),
    ("index_add_dtype", lambda T, x: x.index_add(0, _idx(T, [0]), T.ones(1, 4, dtype=T.float32))),
    ("index_fill_out_of_range", lambda T, x: T.index_fill(x, 1, _idx(T, [0, 4]), 1.0)),
    ("index_fill_2d_index", lambda T, x: T.index_fill(x, 1, _idx(T, [[0, 1]]), 1.0)),
    ("index_fill_float_index", lambda T, x: T.index_fill(x, 1, T.tensor([0.0]), 1.0)),
    ("index_fill_vector_value", lambda T, x: T.index_fill(x, 1, _idx(T, [0]), T.tensor([1.0, 2.0]))),
    ("masked_select_int_mask", lambda T, x: T.masked_select(x, T.tensor([1, 0, 1, 1]))),
    ("masked_scatter_too_few", lambda T, x: T.masked_scatter(x, _mask(T, [True, False, True, True]), T.ones(2))),
    ("masked_scatter_int_mask", lambda T, x: x.masked_scatter(T.tensor([0, 1, 1, 1]), T.ones(12))),
    ("masked_scatter_dtype", lambda T, x: T.masked_scatter(x, _mask(T, [True, True, True, True]),
                                                           T.ones(12, dtype=T.float32))),
    ("masked_fill__int_mask", lambda T, x: x.masked_fill_(T.tensor([0, 1, 1, 1]), 1.0)),
    ("masked_fill__broadcast_self", lambda T, x: x.masked_fill_(T.ones(2, 3, 4, dtype=T.bool), 1.0)),
    ("masked_fill__vector_value", lambda T, x: x.masked_fill_(_mask(T, [True, False, True, True]), T.ones(4))),
    ("take_out_of_range", lambda T, x: T.take(x, _idx(T, [12]))),
    ("take_negative_out_of_range", lambda T, x: x.take(_idx(T, [0, -13]))),
    ("take_float_index", lambda T, x: T.take(x, T.tensor([0.0]))),
    ("index_put_out_of_range", lambda T, x: T.index_put(x, (_idx(T, [0, 5]),), T.tensor(1.0))),
    ("index_put_shape", lambda T, x: T.index_put(x, (_idx(T, [0, 1]),), T.tensor([1.0, 2.0]))),
    ("index_put_dtype", lambda T, x: T.index_put(x, (_idx(T, [0, 1]),), T.tensor(1))),
    ("index_put_too_many", lambda T, x: T.index_put(x, (_idx(T, [0]),) * 3, T.tensor(1.0))),
    ("index_put_bool_shape", lambda T, x: T.index_put(x, (_mask(T, [True, False]),), T.tensor(2.0))),
    ("put_out_of_range", lambda T, x: T.put(x, _idx(T, [0, 12]), T.tensor([1.0, 2.0]))),
    ("put_count", lambda T, x: x.put(_idx(T, [0, 1]), T.tensor([1.0, 2.0, 3.0]))),
    ("fill_diagonal_unequal", lambda T, x: T.zeros(3, 4, 3).fill_diagonal_(1)),
    ("fill_diagonal_1d", lambda T, x: T.zeros(3).fill_diagonal_(1)),
]


@pytest.mark.parametrize("name,fn", ERRORS, ids=[n for n, _ in ERRORS])
def test_bad_arguments_raise_torchs_error(name, fn):
    with pytest.raises(Exception) as theirs:
        fn(torch, torch.tensor(X.copy()))
    with pytest.raises(Exception) as ours:
        fn(gradcli, gradcli.tensor(X.copy()))
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value).splitlines()[0]
