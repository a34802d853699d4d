"""``import gradcli as torch``: creation functions, dtypes, and the spellings tutorials use."""
import numpy as np
import pytest

import gradcli
import gradcli as torch  # the way tutorials will use it


@pytest.fixture
def default_dtype_restored():
    before = gradcli.get_default_dtype()
    yield
    gradcli.set_default_dtype(before)


# ---- dtypes ----------------------------------------------------------------------------------
def test_default_dtype_is_float64_and_python_values_follow_torch_kinds():
    assert torch.tensor([1.0, 2.0]).dtype == torch.float64
    assert torch.tensor(3.0).dtype == torch.float64
    assert torch.tensor([1, 2]).dtype == torch.int64
    assert torch.tensor([True, False]).dtype == torch.bool
    assert torch.tensor([]).dtype == torch.float64
    assert torch.get_default_dtype() == torch.float64


def test_numpy_sources_keep_their_dtype():
    assert torch.tensor(np.zeros(2, dtype=np.float32)).dtype == torch.float32
    assert torch.tensor(np.float32(1.5)).dtype == torch.float32
    assert torch.tensor(np.array([1, 2], dtype=np.int32)).dtype == torch.int32


def test_dtype_argument_and_comparisons_with_dtype_objects():
    x = torch.tensor([1.0, 2.0], dtype=torch.float32)
    assert x.dtype == torch.float32 and x.dtype == torch.float and x.dtype != torch.float64
    assert x.double().dtype == torch.float64
    assert x.to(torch.float64).dtype == torch.double
    assert torch.zeros(2, dtype=torch.float32).dtype == torch.float32
    assert torch.ones(2, dtype=torch.long).dtype == torch.int64


def test_set_default_dtype_changes_what_python_floats_become(default_dtype_restored):
    torch.set_default_dtype(torch.float32)
    assert torch.tensor([1.0]).dtype == torch.float32
    assert torch.zeros(2).dtype == torch.float32
    assert torch.randn(2).dtype == torch.float32
    assert torch.arange(0.0, 1.0, 0.5).dtype == torch.float32
    torch.set_default_dtype(torch.float64)
    assert torch.tensor([1.0]).dtype == torch.float64
    with pytest.raises(TypeError):
        torch.set_default_dtype(torch.int64)


# ---- creation ----------------------------------------------------------------------------------
def test_tensor_copies_its_input_and_as_tensor_from_numpy_share_it():
    arr = np.array([1.0, 2.0])
    copied, shared, from_np = torch.tensor(arr), torch.as_tensor(arr), torch.from_numpy(arr)
    arr[0] = 9.0
    assert copied.tolist() == [1.0, 2.0]
    assert shared.tolist() == [9.0, 2.0]
    assert from_np.tolist() == [9.0, 2.0]
    t = torch.tensor([1.0])
    assert torch.as_tensor(t) is t
    with pytest.raises(TypeError):
        torch.from_numpy([1.0, 2.0])


def test_tensor_of_zero_dim_tensors_and_requires_grad():
    x = torch.tensor([torch.tensor(1.0), torch.tensor(2.0)])
    assert x.tolist() == [1.0, 2.0]
    y = torch.tensor(3.0, requires_grad=True)
    assert y.requires_grad and y.is_leaf
    with pytest.raises(RuntimeError, match="floating point"):
        torch.tensor([1, 2], requires_grad=True)


@pytest.mark.parametrize("make", [
    lambda: torch.zeros(2, 3), lambda: torch.zeros((2, 3)), lambda: torch.zeros([2, 3]),
    lambda: torch.zeros(size=(2, 3)), lambda: torch.zeros(torch.Size([2, 3])),
])
def test_shape_spellings_of_zeros(make):
    x = make()
    assert x.shape == (2, 3) and x.dtype == torch.float64 and x.tolist() == [[0.0] * 3] * 2


def test_constant_creators():
    assert torch.ones(3).tolist() == [1.0, 1.0, 1.0]
    assert torch.eye(2).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert torch.eye(2, 3).shape == (2, 3)
    assert torch.arange(4).tolist() == [0, 1, 2, 3] and torch.arange(4).dtype == torch.int64
    assert torch.arange(1, 7, 2).tolist() == [1, 3, 5]
    assert torch.arange(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert torch.arange(0, 1, 0.25).dtype == torch.float64
    assert torch.linspace(0, 1, 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert torch.linspace(-1, 1, steps=3).tolist() == [-1.0, 0.0, 1.0]
    assert torch.zeros(2, 2, requires_grad=True).requires_grad


def test_full_infers_its_dtype_from_the_fill_value_like_torch():
    assert torch.full((2,), 3).dtype == torch.int64
    assert torch.full((2,), 3.0).dtype == torch.float64
    assert torch.full((2,), True).dtype == torch.bool
    assert torch.full((2, 2), 7.5).tolist() == [[7.5, 7.5], [7.5, 7.5]]
    assert torch.full((2,), 3, dtype=torch.float32).dtype == torch.float32


def test_like_creators_keep_shape_and_dtype():
    x = torch.tensor([[1.0, 2.0]], dtype=torch.float32)
    for made, value in [(torch.zeros_like(x), 0.0), (torch.ones_like(x), 1.0), (torch.full_like(x, 2.5), 2.5)]:
        assert made.shape == (1, 2) and made.dtype == torch.float32
        assert made.tolist() == [[value, value]]
    assert torch.ones_like(x, dtype=torch.float64).dtype == torch.float64
    assert torch.rand_like(x).dtype == torch.float32 and torch.randn_like(x).shape == (1, 2)
    assert torch.ones_like(x, requires_grad=True).requires_grad


def test_manual_seed_makes_random_tensors_reproducible():
    torch.manual_seed(0)
    first = (torch.randn(4).tolist(), torch.rand(2, 2).tolist(), torch.randint(0, 10, (5,)).tolist())
    torch.manual_seed(0)
    again = (torch.randn(4).tolist(), torch.rand(2, 2).tolist(), torch.randint(0, 10, (5,)).tolist())
    torch.manual_seed(1)
    other = torch.randn(4).tolist()
    assert first == again
    assert other != first[0]


def test_random_creators_shapes_ranges_and_dtypes():
    torch.manual_seed(3)
    u = torch.rand(1000)
    assert u.dtype == torch.float64 and 0.0 <= u.min().item() and u.max().item() < 1.0
    n = torch.randn(2, 3, requires_grad=True)
    assert n.shape == (2, 3) and n.requires_grad and n.is_leaf
    assert torch.randn(3, dtype=torch.float32).dtype == torch.float32
    assert torch.randn(()).shape == ()
    high_only = torch.randint(10, (50,))
    assert high_only.dtype == torch.int64 and 0 <= high_only.min().item() and high_only.max().item() < 10
    low_high = torch.randint(2, 5, (50,))
    assert 2 <= low_high.min().item() and low_high.max().item() < 5
    assert sorted(torch.randperm(5).tolist()) == [0, 1, 2, 3, 4]


def test_a_generator_object_gives_its_own_reproducible_stream():
    a = torch.randn(3, generator=torch.Generator().manual_seed(5)).tolist()
    b = torch.randn(3, generator=torch.Generator().manual_seed(5)).tolist()
    assert a == b


# ---- the tutorial spellings (seed programs and their neighbours) ------------------------------
def test_tutorial_spellings_compute_torch_values():
    x = torch.tensor([[1.0, 4.0], [9.0, 16.0]])
    assert torch.sqrt(x).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert torch.sum(x, dim=0).tolist() == [10.0, 20.0]
    assert torch.sum(x, 1).tolist() == [5.0, 25.0]
    assert x.sum(dim=1, keepdim=True).tolist() == [[5.0], [25.0]]
    assert torch.div(x, 2).tolist() == [[0.5, 2.0], [4.5, 8.0]]
    assert torch.div(8, torch.tensor([2.0, 4.0])).tolist() == [4.0, 2.0]
    assert torch.mul(x, x).tolist() == [[1.0, 16.0], [81.0, 256.0]]
    assert torch.pow(2, torch.tensor([1.0, 3.0])).tolist() == [2.0, 8.0]
    assert x.pow(2).tolist() == [[1.0, 16.0], [81.0, 256.0]]
    assert torch.tensor([-1.0, 2.0]).clamp(min=0).tolist() == [0.0, 2.0]
    assert torch.add(torch.tensor([1.0]), torch.tensor([2.0]), alpha=10).tolist() == [21.0]
    assert torch.sub(5.0, torch.tensor([1.0])).tolist() == [4.0]


def test_seed_002_scalar_example_through_functions():
    x = torch.tensor(3.0, requires_grad=True)
    y = torch.tensor(2.0, requires_grad=True)
    z = torch.sqrt(x) + torch.reciprocal(x) + 2 * torch.pow(y, 2)
    assert z.item() == pytest.approx(10.0654, abs=5e-5)
    z.backward()
    assert x.grad.item() == pytest.approx(0.1776, abs=5e-5)
    assert y.grad.item() == 8.0
    assert repr(z.grad_fn.name()) == "'AddBackward'"


def test_seed_002_vector_example_through_functions():
    x = torch.tensor([2.0, 3.0, 4.0], requires_grad=True)
    torch.sum(torch.sqrt(torch.pow(x, 2) - 1)).backward()
    assert x.grad.tolist() == pytest.approx([1.1547005, 1.0606602, 1.0327956])


# every op of the issue, as a function and (when torch has it) as a method
FUNCTIONS = """
exp log log1p expm1 sqrt rsqrt reciprocal pow abs sign sin cos tan asin acos atan sinh cosh tanh asinh acosh
atanh sigmoid relu erf clamp maximum minimum where sum mean prod amax amin max min logsumexp softmax
log_softmax norm var std reshape flatten squeeze unsqueeze transpose permute t cat stack split chunk gather
matmul add sub mul div neg argmax argmin floor ceil round trunc diag trace outer dot mm bmm cumsum square
eq ne lt le gt ge isclose allclose equal all any unbind index_select narrow flip tril triu sort topk
""".split()
NOT_METHODS = {"cat", "stack"}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_op_is_a_namespace_function_and_a_tensor_method(name):
    assert callable(getattr(gradcli, name))
    if name not in NOT_METHODS:
        assert callable(getattr(gradcli.Tensor, name))


def test_namespace_attributes_tutorials_touch():
    assert torch.Tensor is gradcli.autograd.Tensor
    assert torch.is_tensor(torch.zeros(1)) and not torch.is_tensor([0.0])
    assert torch.numel(torch.zeros(2, 3)) == 6
    assert torch.pi == pytest.approx(3.141592653589793) and torch.inf == float("inf")
    assert torch.cuda.is_available() is False
    assert torch.device("cpu") == "cpu"
    assert torch.finfo(torch.float32).eps == pytest.approx(1.1920929e-07)
    assert torch.no_grad is gradcli.autograd.no_grad
    assert "softmax" in dir(gradcli)
    with pytest.raises(AttributeError, match="no attribute 'not_an_op'"):
        torch.not_an_op  # noqa: B018


def test_methods_registered_later_become_namespace_functions_too():
    from gradcli.autograd.ops import register

    def double_it(x):
        return x * 2

    register("double_it_for_test", double_it)
    try:
        assert gradcli.autograd.namespace.double_it_for_test(torch.tensor(2.0)).item() == 4.0
        assert torch.tensor(3.0).double_it_for_test().item() == 6.0
    finally:
        from gradcli.autograd import ops
        del ops.FUNCTIONS["double_it_for_test"], ops.METHODS["double_it_for_test"]
        delattr(gradcli.Tensor, "double_it_for_test")
