"""Tensor: its attributes, the version counter every in-place op bumps, and in-place ops on
tensors and views while a graph is being recorded."""
import numpy as np
import pytest

import gradcli
from gradcli.autograd import Function, grad, no_grad


def t(values, requires_grad=False):
    return gradcli.tensor(values, requires_grad=requires_grad)


def values(tensor):
    return tensor.detach().numpy().tolist()


# ----- attributes ------------------------------------------------------------------------------
def test_leaf_attributes():
    x = t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    assert isinstance(x.data, np.ndarray) and x.data.dtype == np.float64  # float64 is the default
    assert (x.requires_grad, x.grad, x.grad_fn, x.is_leaf) == (True, None, None, True)
    assert (x.shape, x.ndim, x.dim(), x.size(), x.size(1), x.size(-2)) == ((2, 3), 2, 2, (2, 3), 3, 2)
    assert x.T.shape == (3, 2) and x.T.tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    assert x.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert t(2.5).item() == 2.5 and isinstance(t(2.5).item(), float)


@pytest.mark.parametrize("dtype, floating, complex_", [("float64", True, False), ("float32", True, False),
                                                      ("int64", False, False), ("bool", False, False),
                                                      ("complex128", False, True)])
def test_is_floating_point_and_is_complex_follow_the_dtype(dtype, floating, complex_):
    x = gradcli.zeros(3, dtype=getattr(gradcli, dtype))
    assert (x.is_floating_point(), x.is_complex()) == (floating, complex_)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool", "complex128"])
def test_is_floating_point_and_is_complex_agree_with_torch(dtype):
    torch = pytest.importorskip("torch")
    x, y = gradcli.zeros(3, dtype=getattr(gradcli, dtype)), torch.zeros(3, dtype=getattr(torch, dtype))
    assert (x.is_floating_point(), x.is_complex()) == (y.is_floating_point(), y.is_complex())


def test_item_of_a_tensor_with_several_elements_is_refused():
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        t([1.0, 2.0]).item()


def test_numpy_needs_detach_when_the_tensor_requires_grad():
    x = t([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Use tensor.detach\(\).numpy\(\) instead"):
        x.numpy()
    assert x.detach().numpy().tolist() == [1.0]


def test_result_of_an_op_is_a_non_leaf_named_after_the_op():
    x = t([1.0], requires_grad=True)
    y = x + 2
    assert (y.is_leaf, type(y.grad_fn).__name__, y.grad_fn.name()) == (False, "AddBackward", "AddBackward")
    assert y.grad_fn.next_functions[0][0] is x._accumulator and x._accumulator.variable is x
    constant = t([1.0]) + 2
    assert constant.grad_fn is None and not constant.requires_grad  # nothing requires grad: no node


def test_repr_shows_grad_fn_or_requires_grad_like_torch():
    x = t([1.0, 2.5], requires_grad=True)
    assert repr(x) == "tensor([1.0000, 2.5000], requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 5.], grad_fn=<MulBackward>)"
    assert repr(t(10.065426)) == "tensor(10.0654)"
    assert repr(gradcli.tensor([1.0], dtype=gradcli.float32)) == "tensor([1.], dtype=float32)"
    assert f"{t(2.5)}" == "2.5" and f"{t(2.5):.2f}" == "2.50"  # 0-d formats as its number, as in torch


def test_detach_shares_storage_and_version_but_leaves_the_graph():
    x = t([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert d.grad_fn is None and not d.requires_grad
    d.add_(1)
    assert values(y) == [3.0, 5.0] and y._version == 1


def test_requires_grad_():
    x = t([1.0])
    assert x.requires_grad_() is x and x.requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        gradcli.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        (x * 2).requires_grad_(False)


# ----- version counter ---------------------------------------------------------------------------
@pytest.mark.parametrize("name, op", [
    ("add_", lambda x: x.add_(1)),
    ("sub_", lambda x: x.sub_(1)),
    ("mul_", lambda x: x.mul_(2)),
    ("div_", lambda x: x.div_(2)),
    ("zero_", lambda x: x.zero_()),
    ("fill_", lambda x: x.fill_(7)),
    ("copy_", lambda x: x.copy_(t([5.0, 6.0]))),
    ("setitem", lambda x: x.__setitem__(0, 9.0) or x),
    ("iadd", lambda x: x.__iadd__(1)),
    ("imul", lambda x: x.__imul__(3)),
])
def test_every_in_place_op_bumps_the_version_by_one(name, op):
    x = t([1.0, 2.0])
    assert x._version == 0
    assert op(x) is x
    assert x._version == 1


def test_in_place_ops_write_into_the_same_storage():
    x = t([1.0, 2.0])
    storage = x.data
    x += 1
    x *= t([2.0, 3.0])
    x[1] = -1.0
    x.copy_(x * 10)
    assert x.data is storage and storage.tolist() == [40.0, -10.0] and x._version == 4


def test_views_share_the_version_counter_with_their_base():
    x = t([[1.0, 2.0], [3.0, 4.0]])
    row, flat, transposed = x[0], x.reshape(4), x.t()
    row.mul_(10)
    assert (x._version, flat._version, transposed._version) == (1, 1, 1)
    assert x.tolist() == [[10.0, 20.0], [3.0, 4.0]]
    x.zero_()
    assert row._version == 2 and row.tolist() == [0.0, 0.0]


def test_in_place_result_must_fit_the_dtype():
    x = gradcli.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type float64 can't be cast to the desired output type int64"):
        x.add_(0.5)


# ----- in-place while recording ----------------------------------------------------------------
def test_in_place_on_a_leaf_that_requires_grad_is_refused_but_allowed_under_no_grad():
    w = t([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        w.add_(1)
    with no_grad():
        w -= 0.5  # the optimizer step of every tutorial
    assert values(w) == [0.5, 1.5] and w.is_leaf and w.requires_grad


def test_in_place_on_a_non_leaf_is_differentiated_through_the_old_value():
    x = t([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.mul_(y * 1)  # y = 9x²
    assert type(y.grad_fn).__name__ == "MulBackward" and y._version == 1
    y.sum().backward()
    assert values(x.grad) == [18.0, 36.0]


def test_multiplying_a_tensor_in_place_by_itself_fails_at_backward_as_in_torch():
    # mul_ saved its argument, the very tensor it then overwrote
    x = t([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.mul_(y)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
        y.sum().backward()


def test_in_place_makes_a_constant_tensor_part_of_the_graph():
    x = t([1.0, 2.0], requires_grad=True)
    buffer = gradcli.zeros(3)
    buffer[1:] = x * 2
    assert buffer.requires_grad and not buffer.is_leaf
    (buffer * t([5.0, 6.0, 7.0])).sum().backward()
    assert values(x.grad) == [12.0, 14.0]


def test_modifying_a_saved_tensor_raises_at_backward_with_versions():
    x = t([1.0, 2.0], requires_grad=True)
    y = x.exp()  # Exp saves its output y
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"one of the variables needed for gradient computation has been modified "
                                           r"by an inplace operation: \[float64 tensor of shape \[2\]\], which is "
                                           r"output 0 of AddBackward, is at version 1; expected version 0 instead"):
        y.sum().backward()


def test_in_place_on_a_view_of_a_leaf_is_refused():
    x = t([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation"):
        x[:2].mul_(2)


def test_in_place_on_a_view_updates_the_base_graph():
    x = t([1.0, 2.0, 3.0], requires_grad=True)
    b = x * 1
    b[0:2].mul_(t([3.0, 4.0]))  # b = [3x0, 4x1, x2]
    assert type(b.grad_fn).__name__ == "CopySlicesBackward"
    assert values(b) == [3.0, 8.0, 3.0]
    (gx,) = grad((b * b).sum(), x)  # d/dx of 9x0² + 16x1² + x2²
    assert values(gx) == [18.0, 64.0, 6.0]


def test_a_view_sees_the_graph_of_an_in_place_change_to_its_base():
    x = t([1.0, 2.0, 3.0], requires_grad=True)
    b = x * 1
    first_two = b[:2]
    b.mul_(t([10.0, 20.0, 30.0]))  # the view's values become [10x0, 20x1]
    assert values(first_two) == [10.0, 40.0]
    (gx,) = grad(first_two.sum(), x)
    assert values(gx) == [10.0, 20.0, 0.0]


def test_view_and_in_place_gradients_match_torch():
    torch = pytest.importorskip("torch")

    def run(lib, x):
        b = x * 2
        v = b.t()[1]  # column 1 of b, a strided view
        v.mul_(v * 1)  # squares b[:, 1] in place
        b[0].add_(x[1])
        return lib.autograd.grad((b * b).sum(), x)[0]

    data = [[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]]
    ours = run(gradcli, gradcli.tensor(data, requires_grad=True))
    theirs = run(torch, torch.tensor(data, dtype=torch.float64, requires_grad=True))
    np.testing.assert_allclose(values(ours), theirs.numpy(), rtol=1e-14)


def test_in_place_on_an_expanded_tensor_is_refused():
    x = t([1.0, 2.0])
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single memory"):
        x.expand(3, 2).add_(1)


def test_function_saving_a_view_sees_an_in_place_change_to_the_base():
    class SaveInput(Function):
        @staticmethod
        def forward(ctx, v):
            ctx.save_for_backward(v)
            return v * 2

        @staticmethod
        def backward(ctx, g):
            (v,) = ctx.saved_tensors
            return g * v

    x = t([1.0, 2.0], requires_grad=True)
    b = x * 1
    y = SaveInput.apply(b[0:1])
    b.zero_()
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
        y.sum().backward()


class ViewOfInput(Function):
    """Returns a view of its input, with a backward that deliberately differs from a view's."""

    @staticmethod
    def forward(ctx, x):
        return x.view(-1)

    @staticmethod
    def backward(ctx, g):
        return g * 2


CUSTOM_VIEW = "Output 0 of ViewOfInputBackward is a view and "


def test_in_place_on_a_view_made_by_a_custom_function_is_refused_as_in_torch():
    x = t([1.0, 2.0, 3.0], requires_grad=True)
    y = ViewOfInput.apply(x * 1)
    with pytest.raises(RuntimeError, match=CUSTOM_VIEW + r"is being modified inplace\. This view was created inside "
                                           r"a custom Function.*You can fix this by cloning the output"):
        y.mul_(2)
    with pytest.raises(RuntimeError, match=CUSTOM_VIEW + "is being modified inplace"):
        y[0:1].mul_(10)  # a view of that view too
    (g,) = grad((y * y).sum(), x)  # untouched, the custom backward is used: 2y · 2
    assert values(g) == [4.0, 8.0, 12.0]


def test_a_custom_view_cannot_be_used_after_its_base_changed_in_place():
    x = t([1.0, 2.0, 3.0], requires_grad=True)
    b = x * 1
    y = ViewOfInput.apply(b)
    b.mul_(2)  # allowed: b is no custom view
    with pytest.raises(RuntimeError, match=CUSTOM_VIEW + "its base or another view of its base has been modified"):
        (y * y).sum()


def test_integer_and_bool_casts_match_torch_and_carry_no_gradient():
    torch = pytest.importorskip("torch")
    values = [1.7, -2.2, 0.0, 3.5]
    for name, dtype in [("long", "int64"), ("int", "int32"), ("short", "int16"), ("char", "int8"), ("bool", "bool")]:
        ours = getattr(gradcli.tensor(values, requires_grad=True) * 2, name)()
        theirs = getattr(torch.tensor(values, dtype=torch.float64, requires_grad=True) * 2, name)()
        assert str(ours.dtype) == dtype and str(theirs.dtype) == f"torch.{dtype}"
        assert ours.tolist() == theirs.tolist() and ours.requires_grad is theirs.requires_grad is False
    assert gradcli.tensor([1.2, 255.0]).byte().tolist() == [1, 255]
    assert int(gradcli.tensor(3.7)) == 3 and bool(gradcli.tensor(1.0)) is True  # the builtins still work
