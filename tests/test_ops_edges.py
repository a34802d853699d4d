"""Built-in ops at the points the finite-difference table avoids — ties, zeros, kinks,
saturation — and their non-gradient results (indices, bool tensors, shapes), with exact
expected numbers (each checked against torch 2.13 when written)."""
import warnings

import numpy as np
import pytest

import gradcli


def grad_of(fn, values, *more):
    """The gradient of fn(x, *more).sum() at x = values."""
    x = gradcli.tensor(values, requires_grad=True)
    fn(x, *more).sum().backward()
    return x.grad.tolist()


# ---- ties: amax/max() share the gradient evenly, max(dim) gives it to the reported index ----
def test_amax_and_full_max_split_the_gradient_among_ties():
    assert grad_of(lambda x: x.amax(), [1.0, 3.0, 3.0]) == [0.0, 0.5, 0.5]
    assert grad_of(lambda x: x.max(), [1.0, 3.0, 3.0]) == [0.0, 0.5, 0.5]
    assert grad_of(lambda x: x.min(), [1.0, 1.0, 1.0, 2.0]) == pytest.approx([1 / 3, 1 / 3, 1 / 3, 0.0])
    assert grad_of(lambda x: gradcli.amax(x, dim=1), [[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]) == \
        [[0.0, 0.5, 0.5], [0.5, 0.5, 0.0]]


def test_max_with_dim_gives_the_gradient_to_the_first_maximal_index_only():
    x = gradcli.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], requires_grad=True)
    values, indices = gradcli.max(x, dim=1)
    assert values.tolist() == [3.0, 2.0]
    assert indices.tolist() == [1, 0]
    assert indices.dtype == gradcli.int64 and not indices.requires_grad
    values.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]


def test_max_with_dim_returns_a_named_tuple_like_torch():
    result = gradcli.tensor([[1.0, 3.0], [2.0, 0.0]]).max(1, keepdim=True)
    assert result.values.tolist() == [[3.0], [2.0]]
    assert result.indices.tolist() == [[1], [0]]
    assert result[0] is result.values
    assert repr(gradcli.max(gradcli.tensor([[1.0, 3.0], [2.0, 0.0]]), 1)) == (
        "torch.return_types.max(\nvalues=tensor([3., 2.]),\nindices=tensor([1, 0]))")


def test_max_of_two_tensors_is_maximum_and_ties_split_evenly():
    a = gradcli.tensor([1.0, 2.0], requires_grad=True)
    b = gradcli.tensor([1.0, 3.0], requires_grad=True)
    out = gradcli.max(a, b)
    assert out.grad_fn.name() == "MaximumBackward"
    out.sum().backward()
    assert a.grad.tolist() == [0.5, 0.0]
    assert b.grad.tolist() == [0.5, 1.0]


def test_max_of_a_zero_dim_tensor_along_dim_0():
    x = gradcli.tensor(3.0, requires_grad=True)
    values, indices = x.max(0)
    assert values.shape == () and indices.tolist() == 0
    values.backward()
    assert x.grad.tolist() == 1.0


def test_argmax_and_argmin_match_torch_conventions():
    x = gradcli.tensor([[1.0, 5.0], [3.0, 4.0]])
    assert gradcli.argmax(x).tolist() == 1  # flattened index
    assert x.argmax(1, keepdim=True).tolist() == [[1], [1]]
    assert x.argmin(dim=0).tolist() == [0, 1]
    assert x.argmax().dtype == gradcli.int64


# ---- kinks: torch's conventions at the boundary ---------------------------------------------
def test_clamp_passes_the_gradient_at_the_bounds_themselves():
    assert grad_of(lambda x: x.clamp(0.0, 1.0), [-1.0, 0.0, 0.5, 1.0, 2.0]) == [0.0, 1.0, 1.0, 1.0, 0.0]
    assert grad_of(lambda x: x.clamp(min=0), [-1.0, 0.0, 2.0]) == [0.0, 1.0, 1.0]
    # min > max: every element is max, no gradient to x
    assert grad_of(lambda x: x.clamp(1.0, 0.0), [0.0, 0.5, 2.0]) == [0.0, 0.0, 0.0]


def test_clamp_with_tensor_bounds_sends_the_gradient_to_the_selected_bound():
    x = gradcli.tensor([0.0, 0.5, 1.0, 2.0], requires_grad=True)
    lo = gradcli.tensor([0.5, 0.5, 0.5, 0.5], requires_grad=True)
    hi = gradcli.tensor([1.0, 1.0, 0.2, 1.5], requires_grad=True)
    y = gradcli.clamp(x, lo, hi)
    assert y.tolist() == [0.5, 0.5, 0.2, 1.5]
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0, 0.0]
    assert lo.grad.tolist() == [1.0, 0.0, 0.0, 0.0]
    assert hi.grad.tolist() == [0.0, 0.0, 1.0, 1.0]


def test_clamp_without_bounds_is_refused():
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        gradcli.tensor([1.0]).clamp()


def test_abs_relu_sign_at_zero():
    assert grad_of(lambda x: x.abs(), [-1.0, 0.0, 2.0]) == [-1.0, 0.0, 1.0]
    assert grad_of(lambda x: x.relu(), [-1.0, 0.0, 2.0]) == [0.0, 0.0, 1.0]
    assert grad_of(lambda x: x.sign(), [-1.0, 0.0, 2.0]) == [0.0, 0.0, 0.0]


def test_rounding_ops_have_zero_gradient_and_round_half_to_even():
    x = gradcli.tensor([0.5, 1.5, 2.5, -0.5, -1.7], requires_grad=True)
    y = x.round()
    assert y.tolist() == [0.0, 2.0, 2.0, -0.0, -2.0]
    assert x.floor().tolist() == [0.0, 1.0, 2.0, -1.0, -2.0]
    assert x.ceil().tolist() == [1.0, 2.0, 3.0, -0.0, -1.0]
    assert x.trunc().tolist() == [0.0, 1.0, 2.0, -0.0, -1.0]
    assert gradcli.round(gradcli.tensor([1.2345]), decimals=2).tolist() == [1.23]
    (y + x.floor() + x.ceil() + x.trunc()).sum().backward()
    assert x.grad.tolist() == [0.0] * 5


def test_div_rounding_modes():
    x = gradcli.tensor([-3.0, 3.0])
    assert gradcli.div(x, 2, rounding_mode="floor").tolist() == [-2.0, 1.0]
    assert gradcli.div(x, 2, rounding_mode="trunc").tolist() == [-1.0, 1.0]


# ---- zeros: prod, norm, std, pow --------------------------------------------------------------
def test_prod_gradient_with_one_zero_goes_to_the_zero_only():
    assert grad_of(lambda x: x.prod(), [2.0, 0.0, 3.0]) == [0.0, 6.0, 0.0]
    assert grad_of(lambda x: x.prod(1), [[2.0, 0.0, 3.0], [1.0, 2.0, 3.0]]) == [[0.0, 6.0, 0.0], [6.0, 3.0, 2.0]]


def test_prod_gradient_with_two_zeros_is_zero():
    assert grad_of(lambda x: x.prod(), [0.0, 0.0, 3.0]) == [0.0, 0.0, 0.0]


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_norm_and_std_at_zero_have_zero_gradient_without_numpy_warnings():
    assert grad_of(lambda x: x.norm(), [0.0, 0.0]) == [0.0, 0.0]
    assert grad_of(lambda x: x.std(), [2.0, 2.0, 2.0]) == [0.0, 0.0, 0.0]
    assert grad_of(lambda x: x.norm(p=1), [-3.0, 0.0, 1.0]) == [-1.0, 0.0, 1.0]
    assert grad_of(lambda x: x.norm(p=0.5), [-4.0, 0.0, 1.0]) == pytest.approx([-1.5, 0.0, 3.0])


def test_inf_norm_splits_the_gradient_among_tied_magnitudes_with_their_signs():
    assert grad_of(lambda x: x.norm(p=float("inf")), [-3.0, 3.0, 1.0]) == [-0.5, 0.5, 0.0]


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_pow_exponent_gradient_at_zero_base_is_zero_as_in_torch():
    x = gradcli.tensor([0.0, 2.0], requires_grad=True)
    p = gradcli.tensor([2.0, 0.0], requires_grad=True)
    (x ** p).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]
    assert p.grad.tolist() == [0.0, pytest.approx(np.log(2.0))]


def test_sqrt_at_zero_has_infinite_gradient_like_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert grad_of(lambda x: x.sqrt(), [0.0, 4.0]) == [float("inf"), 0.25]


def test_var_and_std_corrections():
    x = gradcli.tensor([[1.0, 2.0, 4.0], [0.0, 0.0, 3.0]])
    # mean 5/3, squared deviations sum to 40/3
    assert x.var().item() == pytest.approx(8 / 3)
    assert gradcli.var(x, dim=1).tolist() == pytest.approx([7 / 3, 3.0])
    assert gradcli.var(x, 1, False).tolist() == pytest.approx([14 / 9, 2.0])  # (dim, unbiased)
    assert gradcli.var(x, False).item() == pytest.approx(20 / 9)             # (unbiased) alone
    assert x.var(dim=1, correction=0).tolist() == pytest.approx([14 / 9, 2.0])
    assert x.std(dim=0, keepdim=True).shape == (1, 3)
    assert gradcli.std(x, unbiased=False).item() == pytest.approx(np.sqrt(20 / 9))


def test_var_of_one_element_is_nan_as_in_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(gradcli.tensor([2.0]).var().item())


# ---- saturation: the stable forms ---------------------------------------------------------
@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_softmax_family_is_stable_for_large_inputs():
    big = gradcli.tensor([1000.0, 1000.0], requires_grad=True)
    assert big.logsumexp(0).item() == pytest.approx(1000 + np.log(2))
    assert big.log_softmax(0).tolist() == pytest.approx([-np.log(2), -np.log(2)])
    assert gradcli.softmax(gradcli.tensor([1000.0, -1000.0]), 0).tolist() == [1.0, 0.0]
    assert gradcli.sigmoid(gradcli.tensor([1000.0, -1000.0])).tolist() == [1.0, 0.0]
    big.logsumexp(0).backward()
    assert big.grad.tolist() == pytest.approx([0.5, 0.5])


def test_logsumexp_of_all_minus_infinity_is_minus_infinity():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert gradcli.logsumexp(gradcli.tensor([-np.inf, -np.inf]), 0).item() == -np.inf


def test_softmax_rows_sum_to_one_and_match_the_definition():
    x = gradcli.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    e = np.exp([1.0, 2.0, 3.0])
    np.testing.assert_allclose(x.softmax(1).numpy()[0], e / e.sum(), rtol=1e-15)
    assert x.softmax(1).numpy()[1].tolist() == pytest.approx([1 / 3] * 3)


# ---- indexing, gather, joins --------------------------------------------------------------
def test_repeated_integer_indices_accumulate_their_gradients():
    assert grad_of(lambda x: x[[0, 0, 2]], [1.0, 2.0, 3.0]) == [2.0, 0.0, 1.0]
    assert grad_of(lambda x: x[gradcli.tensor([1, 1, 1])], [1.0, 2.0]) == [0.0, 3.0]
    assert grad_of(lambda x: x[[0, 0], [1, 1]], [[1.0, 2.0], [3.0, 4.0]]) == [[0.0, 2.0], [0.0, 0.0]]


def test_double_backward_through_repeated_indices():
    x = gradcli.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x[[0, 0, 2]] ** 2).sum()  # x0^2 twice + x2^2
    (g,) = gradcli.autograd.grad(y, x, create_graph=True)
    assert g.tolist() == [4.0, 0.0, 6.0]
    g.sum().backward()
    assert x.grad.tolist() == [4.0, 0.0, 2.0]


def test_boolean_mask_indexing():
    x = gradcli.tensor([[1.0, -2.0], [3.0, -4.0]], requires_grad=True)
    y = x[x > 0]
    assert y.tolist() == [1.0, 3.0]
    y.sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0], [1.0, 0.0]]


def test_gather_picks_along_dim_and_accumulates_repeats():
    x = gradcli.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = gradcli.gather(x, 1, gradcli.tensor([[0, 0], [1, 0]]))
    assert y.tolist() == [[1.0, 1.0], [4.0, 3.0]]
    assert y.grad_fn.name() == "GatherBackward"
    y.sum().backward()
    assert x.grad.tolist() == [[2.0, 0.0], [1.0, 1.0]]


def test_gather_refuses_an_index_of_another_rank():
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        gradcli.gather(gradcli.zeros(2, 2), 1, gradcli.tensor([0, 1]))


def test_split_and_chunk_sizes_follow_torch():
    assert [t.shape for t in gradcli.split(gradcli.zeros(5, 3), 2)] == [(2, 3), (2, 3), (1, 3)]
    assert [t.shape for t in gradcli.zeros(2, 5).split([1, 4], dim=1)] == [(2, 1), (2, 4)]
    assert [t.shape for t in gradcli.chunk(gradcli.zeros(6), 4)] == [(2,), (2,), (2,)]
    assert [t.shape for t in gradcli.arange(5).chunk(4)] == [(2,), (2,), (1,)]
    with pytest.raises(RuntimeError, match="sum exactly to 5"):
        gradcli.split(gradcli.zeros(5), [2, 2])


def test_split_pieces_share_one_node_and_unused_pieces_get_zero_gradient():
    x = gradcli.tensor([1.0, 2.0, 3.0, 4.0, 5.0], requires_grad=True)
    a, b, c = x.split(2)
    assert a.grad_fn is b.grad_fn is c.grad_fn and a.grad_fn.name() == "SplitBackward"
    (b * 3).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 3.0, 3.0, 0.0]


def test_split_pieces_are_views_sharing_the_version_counter():
    x = gradcli.tensor([1.0, 2.0, 3.0, 4.0])
    first, _second = x.split(2)
    x.add_(1.0)
    assert first._version == x._version == 1
    assert first.tolist() == [2.0, 3.0]


def test_cat_and_stack_route_the_gradient_back_to_each_input():
    a = gradcli.tensor([1.0, 2.0], requires_grad=True)
    b = gradcli.tensor([3.0], requires_grad=True)
    y = gradcli.cat([a, b * 2])
    assert y.tolist() == [1.0, 2.0, 6.0]
    (y * gradcli.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert a.grad.tolist() == [1.0, 10.0] and b.grad.tolist() == [200.0]
    s = gradcli.stack([a, a], dim=1)
    assert s.shape == (2, 2) and s.grad_fn.name() == "StackBackward"


def test_cat_refuses_zero_dim_tensors_and_stack_refuses_unequal_shapes():
    with pytest.raises(RuntimeError, match="zero-dimensional"):
        gradcli.cat([gradcli.tensor(1.0), gradcli.tensor(2.0)])
    with pytest.raises(RuntimeError, match="equal size"):
        gradcli.stack([gradcli.zeros(2), gradcli.zeros(3)])


def test_where_sends_the_gradient_to_the_chosen_side():
    a = gradcli.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = gradcli.tensor([10.0, 20.0, 30.0], requires_grad=True)
    cond = gradcli.tensor([True, False, True])
    gradcli.where(cond, a, b).sum().backward()
    assert a.grad.tolist() == [1.0, 0.0, 1.0]
    assert b.grad.tolist() == [0.0, 1.0, 0.0]
    assert [t.tolist() for t in gradcli.where(cond)] == [[0, 2]]


# ---- comparisons: bool tensors outside the graph ------------------------------------------
@pytest.mark.parametrize("compare", [
    lambda x: x > 1, lambda x: x >= 1, lambda x: x < 1, lambda x: x <= 1, lambda x: x == 1, lambda x: x != 1,
    lambda x: gradcli.gt(x, 1), lambda x: x.eq(1), lambda x: gradcli.isclose(x, x), lambda x: x.isnan(),
])
def test_comparisons_return_bool_tensors_without_grad(compare):
    x = gradcli.tensor([0.0, 1.0, 2.0], requires_grad=True)
    out = compare(x)
    assert out.dtype == gradcli.bool
    assert not out.requires_grad and out.grad_fn is None


def test_comparison_values():
    x = gradcli.tensor([0.0, 1.0, 2.0])
    assert (x > 1).tolist() == [False, False, True]
    assert gradcli.le(x, 1).tolist() == [True, True, False]
    assert x.ne(gradcli.tensor([0.0, 0.0, 2.0])).tolist() == [False, True, False]
    assert gradcli.equal(x, gradcli.tensor([0.0, 1.0, 2.0])) is True
    assert gradcli.allclose(x, x + 1e-9) is True
    assert (x > 0).any().item() is True and (x > 0).all().item() is False


# ---- shapes --------------------------------------------------------------------------------
def test_shape_ops_give_torch_shapes():
    x = gradcli.zeros(2, 1, 3, 1)
    assert x.squeeze().shape == (2, 3)
    assert x.squeeze(1).shape == (2, 3, 1)
    assert x.squeeze(0).shape == (2, 1, 3, 1)  # a dim that is not 1 stays
    assert x.unsqueeze(-1).shape == (2, 1, 3, 1, 1)
    assert x.flatten().shape == (6,)
    assert x.flatten(1, 2).shape == (2, 3, 1)
    assert gradcli.tensor(5.0).flatten().shape == (1,)
    assert x.transpose(0, -1).shape == (1, 1, 3, 2)
    assert x.permute(3, 2, 1, 0).shape == (1, 3, 1, 2)
    assert gradcli.zeros(2, 3).t().shape == (3, 2)
    assert gradcli.zeros(2, 3, 4).T.shape == (4, 3, 2)
    assert gradcli.zeros(3, 1).expand(2, 3, 4).shape == (2, 3, 4)
    assert gradcli.zeros(3, 1).expand(-1, 5).shape == (3, 5)
    assert gradcli.zeros(2, 3).repeat(2, 1, 2).shape == (2, 2, 6)


def test_shape_ops_check_dims_like_torch():
    with pytest.raises(IndexError, match="Dimension out of range"):
        gradcli.zeros(2, 3).unsqueeze(3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        gradcli.zeros(2, 3).sum(dim=2)
    with pytest.raises(RuntimeError, match="t\\(\\) expects"):
        gradcli.zeros(2, 3, 4).t()


def test_expand_gradient_sums_over_the_expanded_dims():
    assert grad_of(lambda x: x.expand(2, 3, 4), [[1.0], [2.0], [3.0]]) == [[8.0], [8.0], [8.0]]


def test_sum_over_empty_dims_reduces_everything_like_torch():
    x = gradcli.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.sum(()).item() == 10.0
    assert x.amax(()).item() == 4.0


def test_reductions_accept_numpy_style_axis():
    x = gradcli.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.sum(axis=0).tolist() == [4.0, 6.0]
    assert gradcli.mean(x, axis=1).tolist() == [1.5, 3.5]


# ---- linear algebra ----------------------------------------------------------------------------
def test_linear_algebra_values():
    a = gradcli.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert gradcli.mm(a, a).tolist() == [[7.0, 10.0], [15.0, 22.0]]
    assert gradcli.dot(gradcli.tensor([1.0, 2.0]), gradcli.tensor([3.0, 4.0])).item() == 11.0
    assert gradcli.outer(gradcli.tensor([1.0, 2.0]), gradcli.tensor([3.0, 4.0, 5.0])).tolist() == \
        [[3.0, 4.0, 5.0], [6.0, 8.0, 10.0]]
    assert gradcli.diag(a).tolist() == [1.0, 4.0]
    assert gradcli.diag(gradcli.tensor([1.0, 2.0]), 1).tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]
    assert gradcli.trace(a).item() == 5.0
    assert gradcli.bmm(gradcli.ones(2, 1, 3), gradcli.ones(2, 3, 1)).tolist() == [[[3.0]], [[3.0]]]


def test_linear_algebra_refuses_wrong_ranks():
    with pytest.raises(RuntimeError, match="mm"):
        gradcli.mm(gradcli.zeros(3), gradcli.zeros(3, 2))
    with pytest.raises(RuntimeError, match="3D"):
        gradcli.bmm(gradcli.zeros(2, 3), gradcli.zeros(3, 2))
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        gradcli.dot(gradcli.zeros(2, 2), gradcli.zeros(2))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        gradcli.zeros(2, 3) @ gradcli.zeros(2, 3)


# ---- dtypes ----------------------------------------------------------------------------------
def test_float32_survives_mixing_with_float64_scalars_and_integer_tensors():
    # torch's promotion: a 0-d tensor or an integer tensor does not widen a float32 tensor
    x = gradcli.tensor([1.0, 2.0], dtype=gradcli.float32, requires_grad=True)
    assert (x * gradcli.tensor(2.0)).dtype == gradcli.float32
    assert (x + gradcli.tensor([1, 2])).dtype == gradcli.float32
    assert (x * np.float64(2.0)).dtype == gradcli.float32
    assert gradcli.maximum(x, gradcli.tensor(1.5)).dtype == gradcli.float32
    assert (x * gradcli.tensor([2.0, 3.0])).dtype == gradcli.float64  # same category, both 1-D: widen
    y = x * gradcli.tensor(2.0, requires_grad=True)
    y.sum().backward()
    assert x.grad.dtype == gradcli.float32


def test_integer_inputs_to_unary_ops_follow_torch_dtypes():
    i = gradcli.tensor([-4, 9])
    assert gradcli.abs(i).dtype == gradcli.int64 and gradcli.abs(i).tolist() == [4, 9]
    assert gradcli.neg(i).dtype == gradcli.int64
    assert gradcli.sqrt(gradcli.tensor([4, 9])).dtype == gradcli.float64
    assert gradcli.exp(gradcli.tensor([0])).tolist() == [1.0]


# ---- hooks for symbolic tracing ---------------------------------------------------------------
def test_maximum_and_clamp_hand_object_arrays_to_the_symbolic_hook(monkeypatch):
    from gradcli.autograd.ops import elementwise

    calls = []

    def fake_maximum(a, b):
        calls.append((a.dtype, np.shape(b)))
        return np.array(["max"], dtype=object)

    # setitem restores the rule gradcli.symbolic registered (if any) after the test
    monkeypatch.setitem(elementwise.SYMBOLIC_OPS, "maximum", fake_maximum)
    x = gradcli.Tensor(np.array(["x"], dtype=object))
    assert gradcli.maximum(x, gradcli.Tensor(np.array(["y"], dtype=object))).tolist() == ["max"]
    assert x.clamp(min=0).tolist() == ["max"]
    assert calls == [(np.dtype(object), (1,)), (np.dtype(object), ())]
