"""Tensor printing (gradcli.autograd.printing) against torch's layout."""
import re

import numpy as np
import pytest

import gradcli
from gradcli.autograd.printing import format_data, printoptions, tensor_repr


@pytest.mark.parametrize("values, expected", [
    (8.0, "8."),
    (10.065384140085946, "10.0654"),
    ([1.1547005383792515, 1.0606601717798212, 1.0327955589886444], "[1.1547, 1.0607, 1.0328]"),
    ([1e-08, 1e05], "[1.0000e-08, 1.0000e+05]"),
    ([0.0, 0.5, 1.0], "[0.0000, 0.5000, 1.0000]"),
    ([1.0, 20.0, -300.0], "[   1.,   20., -300.]"),
    ([0.0, 0.0], "[0., 0.]"),
    ([float("nan"), 1.0, float("inf")], "[nan, 1., inf]"),
    ([1e10, 1.0], "[1.0000e+10, 1.0000e+00]"),
    ([1, 20, 300], "[  1,  20, 300]"),
    ([True, False], "[ True, False]"),
    ([[1.0, 2.0], [3.0, 4.0]], "[[1., 2.],\n        [3., 4.]]"),
    ([], "[]"),
])
def test_format_data_exact(values, expected):
    assert format_data(np.array(values)) == expected


def test_long_tensors_are_summarized_like_torch():
    assert format_data(np.arange(1000.0, 3000.0)) == "[1000., 1001., 1002.,  ..., 2997., 2998., 2999.]"
    # 1 to 1999 spans more than 1000x: scientific notation, as torch does
    assert format_data(np.arange(2000.0)).startswith("[0.0000e+00, 1.0000e+00, 2.0000e+00,  ...,")


def test_long_rows_wrap_at_80_columns():
    text = format_data(np.arange(30.0))
    lines = text.split("\n")
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines)
    assert lines[1].startswith("        ")  # aligned under the first element


def test_tensor_repr_suffixes():
    x = gradcli.tensor(3.0, requires_grad=True)
    y = gradcli.tensor(2.0, requires_grad=True)
    z = gradcli.sqrt(x) + gradcli.reciprocal(x) + 2 * gradcli.pow(y, 2)
    assert tensor_repr(z) == "tensor(10.0654, grad_fn=<AddBackward>)"
    assert tensor_repr(x) == "tensor(3., requires_grad=True)"
    assert tensor_repr(gradcli.tensor([1.0, 2.0], dtype=gradcli.float32)) == "tensor([1., 2.], dtype=float32)"
    assert tensor_repr(gradcli.tensor([1, 2])) == "tensor([1, 2])"
    assert tensor_repr(gradcli.zeros(2, 0)) == "tensor([], size=(2, 0))"


def test_printoptions_precision():
    with printoptions(precision=2):
        assert format_data(np.array([1.12345])) == "[1.12]"
    assert format_data(np.array([1.12345])) == "[1.1235]"


ARRAYS = [
    np.array(8.0), np.array([1e-8, 1e5]), np.arange(12.0).reshape(3, 4) / 7, np.arange(2000.0) * 1.5,
    np.random.default_rng(0).standard_normal((3, 4, 5)) * 1000, np.random.default_rng(1).standard_normal((40, 40)),
    np.array([[1.5, np.nan], [-np.inf, 2.0]]), np.arange(30.0).reshape(5, 6) * 1e-5, np.array([123456789.0, 1.0]),
    np.array([-0.0, 2.5]), np.random.default_rng(2).standard_normal(100), np.array([3, -40, 500]),
    np.array([[True, False], [False, True]]), np.zeros((2, 0)),
]


@pytest.fixture
def torch_with_float64_default():
    """torch with gradcli's default dtype, so that both omit the same ``dtype=`` suffixes."""
    torch = pytest.importorskip("torch")
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield torch
    torch.set_default_dtype(before)


@pytest.mark.parametrize("arr", ARRAYS, ids=range(len(ARRAYS)))
@pytest.mark.parametrize("requires_grad", [False, True])
def test_repr_matches_torch(arr, requires_grad, torch_with_float64_default):
    torch = torch_with_float64_default
    for dtype in ([None, np.float32] if arr.dtype == np.float64 else [None]):
        data = arr if dtype is None else arr.astype(dtype)
        grad = requires_grad and data.dtype.kind == "f"
        theirs = repr(torch.tensor(data, requires_grad=grad))
        ours = tensor_repr(gradcli.tensor(data, requires_grad=grad))
        if dtype is None:
            assert ours == theirs
        else:
            # gradcli writes dtype=float32 where torch writes dtype=torch.float32: six characters
            # fewer, which can move a suffix's line break; compare with suffixes unwrapped
            def unwrap(text):
                return re.sub(r",\n {7}(?=[a-z])", ", ", text)
            assert unwrap(ours) == unwrap(theirs.replace("torch.", ""))
