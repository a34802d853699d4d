"""The SPEC grammar's Python values, integer/bool tensors and nograd: (gradcli/check/spec.py), and what
each becomes for a parameter (gradcli/check/inputs.py)."""
import textwrap

import numpy as np
import pytest

from gradcli.check import discovery
from gradcli.check.inputs import build_cases, parse_spec
from gradcli.check.spec import SpecError, format_tensor_spec, format_value_spec


@pytest.mark.parametrize("text, kind, value", [
    ("symmetric", "value", "symmetric"),
    ("'reflect'", "value", "reflect"),
    ('"zero pad"', "value", "zero pad"),
    ("'none'", "value", "none"),
    ("zero-pad", "value", "zero-pad"),
    ("true", "value", True),
    ("False", "value", False),
    ("(0,1)", "value", (0, 1)),
    ("(2,)", "value", (2,)),
    ("('a', 1.5, true, none)", "value", ("a", 1.5, True, None)),
    ("()", "value", ()),
    ("int(3)", "value", 3),
    ("float(3)", "value", 3.0),
    ("int(-2)", "value", -2),
    ("3", "literal", 3),
    ("3.0", "literal", 3.0),
])
def test_python_values(text, kind, value):
    spec = parse_spec(text)
    assert (spec.kind, spec.value) == (kind, value)
    assert type(spec.value) is type(value)


@pytest.mark.parametrize("text, shape, dtype, domain, requires_grad", [
    ("int64[6]@[0,5)", (6,), "int64", (0, 5), True),
    ("int64[6]@[0,5]", (6,), "int64", (0, 6), True),  # inclusive: 0..5
    ("int32[2,3]", (2, 3), "int32", (0, 5), True),  # default integer range [0,5)
    ("bool[3,4]", (3, 4), "bool", None, True),
    ("nograd:3x4", (3, 4), None, None, False),
    ("nograd:float32[2]@(1,2)", (2,), "float32", (1.0, 2.0), False),
    ("float64[3]@[1,2)", (3,), "float64", (1.0, 2.0), True),
])
def test_integer_bool_and_nograd_tensors(text, shape, dtype, domain, requires_grad):
    spec = parse_spec(text)
    assert (spec.kind, spec.shape, spec.dtype, spec.domain, spec.requires_grad) == (
        "tensor", shape, dtype, domain, requires_grad)


def test_tensor_literals_take_their_dtype_from_their_values():
    assert (parse_spec("tensor(3.0)").dtype, parse_spec("tensor(3.0)").shape) == (None, ())
    assert (parse_spec("tensor(3)").dtype, parse_spec("tensor([0,2,1])").dtype) == ("int64", "int64")
    assert parse_spec("tensor([true,false])").dtype == "bool"
    assert parse_spec("tensor([[1,2.5],[3,4]])").shape == (2, 2)
    nograd = parse_spec("nograd:[1,2]")
    assert nograd.kind == "literal" and not nograd.requires_grad and nograd.value == [1, 2]


@pytest.mark.parametrize("text, message", [
    ("int64[6]@(0,5)", "an integer range is whole numbers @[low,high)"),
    ("int64[6]@[0.5,5)", "an integer range is whole numbers"),
    ("int64[6]@[3,3)", "it holds no integer"),
    ("bool[3]@[0,2)", "a bool tensor takes no range"),
    ("int64[3]@positive", "bad range 'positive'"),
    ("nograd:3", "nograd: applies to tensors"),
    ("nograd:reflect", "nograd: applies to tensors"),
    ("int(2.5)", "int(...) needs a whole number"),
    ("tensor(x)", "tensor(...) takes a number or a list"),
    ("tensor([1, true])", "mixes true/false with numbers"),
    ("(1,2", "cannot read tuple"),
    ("(a b,)", "cannot read tuple"),
    ("eval('1')", "cannot read SPEC"),
    ("float8[3]", "unknown dtype 'float8'"),
    ("positive", "cannot read SPEC 'positive'"),  # a reserved word: quote it to get the string
])
def test_bad_specs_are_one_line(text, message):
    with pytest.raises(SpecError) as err:
        parse_spec(text)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("value", ["reflect", "two words", "none", "true", 3, 1.5, -2, True, False, (0, 1), (2,),
                                   ("a", 1)])
def test_value_specs_read_back_as_the_same_value(value):
    spec = parse_spec(format_value_spec(value))
    assert spec.kind == "value" and spec.value == value and type(spec.value) is type(value)


@pytest.mark.parametrize("args", [((6,), "int64", (0, 5), True), ((3, 4), "bool", None, True),
                                  ((2, 2), "float32", (-2.0, 2.0), False), ((), "float64", (0.1, 2.0), True)])
def test_tensor_specs_read_back(args):
    shape, dtype, domain, requires_grad = args
    spec = parse_spec(format_tensor_spec(shape, dtype, domain, requires_grad))
    assert (spec.shape, spec.dtype, spec.domain, spec.requires_grad) == (shape, dtype, domain,
                                                                         requires_grad or dtype == "bool")


# ----- what a SPEC becomes for a parameter ----------------------------------------------------------
SOURCE = """
    import gradcli as torch
    from gradcli.autograd import Function

    class MulConstant(Function):     # the PyTorch docs' example: constant is a Python number
        @staticmethod
        def forward(ctx, tensor, constant):
            ctx.constant = constant
            return tensor * constant
        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ctx.constant, None

    class Mul(Function):             # y is a tensor: its gradient is returned
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y
        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y, g * x

    class Options(Function):
        @staticmethod
        def forward(ctx, x, n: int, scale: float, mode: str, dims, flag):
            ctx.n, ctx.scale = n, scale
            return x * scale * n if mode == "plain" else x
        @staticmethod
        def backward(ctx, g):
            return g * ctx.scale * ctx.n, None, None, None, None, None

    class Masked(Function):
        @staticmethod
        def forward(ctx, x, mask, filt):
            ctx.save_for_backward(mask, filt)
            return x.masked_fill(mask, 0.0) * filt
        @staticmethod
        def backward(ctx, g):
            mask, filt = ctx.saved_tensors
            return (g * filt).masked_fill(mask, 0.0), None, None
"""


def targets_of(tmp_path, source=SOURCE):
    path = tmp_path / "ops.py"
    path.write_text(textwrap.dedent(source))
    item = discovery.expand_paths([str(path)])[0]
    return {t.name: t for t in discovery.collect(discovery.load_module(item), item)}


def test_a_number_is_a_python_float_where_backward_returns_none_for_it(tmp_path):
    t = targets_of(tmp_path)
    (case,) = build_cases(t["MulConstant"], {"constant": parse_spec("3")}, seed=0)
    assert case.args[1] == 3.0 and type(case.args[1]) is float
    assert case.records[1] == {"name": "constant", "source": "cli", "spec": "3", "type": "float", "value": 3.0}
    (case,) = build_cases(t["Mul"], {"x": parse_spec("3"), "y": parse_spec("2")}, seed=0)  # --at x=3,y=2
    assert [a.data.shape for a in case.args] == [(), ()] and all(a.requires_grad for a in case.args)
    (case,) = build_cases(t["MulConstant"], {"constant": parse_spec("int(3)")}, seed=0)  # the cast form decides
    assert case.args[1] == 3 and type(case.args[1]) is int
    (case,) = build_cases(t["MulConstant"], {"constant": parse_spec("tensor(3.0)")}, seed=0)
    assert case.args[1].data.shape == () and case.args[1].requires_grad


def test_values_annotations_strings_tuples_and_bools(tmp_path):
    t = targets_of(tmp_path)["Options"]
    specs = {name: parse_spec(text) for name, text in
             [("n", "2"), ("scale", "3"), ("mode", "plain"), ("dims", "(0,1)"), ("flag", "true")]}
    (case,) = build_cases(t, specs, seed=0)
    x, n, scale, mode, dims, flag = case.args
    assert (n, scale, mode, dims, flag) == (2, 3.0, "plain", (0, 1), True)
    assert [type(v) for v in (n, scale, mode, dims, flag)] == [int, float, str, tuple, bool]
    assert case.records[4] == {"name": "dims", "source": "cli", "spec": "(0,1)", "type": "tuple", "value": [0, 1]}


def test_int_bool_and_nograd_tensors_are_built_as_asked(tmp_path):
    t = targets_of(tmp_path)["Masked"]
    specs = {"mask": parse_spec("bool[3,4]"), "filt": parse_spec("nograd:3x4@(1,2)"),
             "x": parse_spec("3x4")}
    (case,) = build_cases(t, specs, seed=3)
    x, mask, filt = case.args
    assert mask.data.dtype == np.bool_ and not mask.requires_grad and mask.data.shape == (3, 4)
    assert filt.data.dtype == np.float64 and not filt.requires_grad and 1 <= filt.data.min() < filt.data.max() < 2
    assert x.requires_grad
    assert case.records[2]["spec"] == "nograd:float64[3,4]@(1,2)" and case.records[2]["requires_grad"] is False
    index = build_cases(targets_of(tmp_path)["Mul"], {"x": parse_spec("int64[50]@[2,4]")}, seed=0)[0].args[0]
    assert index.data.dtype == np.int64 and set(index.data.tolist()) == {2, 3, 4}
