"""The SPEC grammar and how `gradcli check` builds each Function's arguments (gradcli/check/inputs.py)."""
import textwrap

import numpy as np
import pytest

from gradcli.check import discovery
from gradcli.check.inputs import (AUTO_DOMAINS, ForwardBroken, NoInputs, Spec, SpecError, build_cases,
                                  parse_assignment, parse_at, parse_shape, parse_spec)


# ----- grammar ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text, kind, value, shape, dtype, domain", [
    ("3", "literal", 3, (), None, None),
    ("2.5", "literal", 2.5, (), None, None),
    ("-1e-3", "literal", -0.001, (), None, None),
    (".5", "literal", 0.5, (), None, None),
    ("[2,3,4]", "literal", [2, 3, 4], (3,), None, None),
    ("[[1, 2], [3, 4.5]]", "literal", [[1, 2], [3, 4.5]], (2, 2), None, None),
    ("3x4", "tensor", None, (3, 4), None, None),
    ("2x3x5", "tensor", None, (2, 3, 5), None, None),
    ("float32[3,4]", "tensor", None, (3, 4), "float32", None),
    ("float64[5]", "tensor", None, (5,), "float64", None),
    ("float64[]", "tensor", None, (), "float64", None),
    ("3x4@(1,5)", "tensor", None, (3, 4), None, (1.0, 5.0)),
    ("float32[2,2]@(-0.5, 1e1)", "tensor", None, (2, 2), "float32", (-0.5, 10.0)),
    ("3x4@positive", "tensor", None, (3, 4), None, (0.1, 2.0)),
    ("3x4@negative", "tensor", None, (3, 4), None, (-2.0, -0.1)),
    ("3x4@unit", "tensor", None, (3, 4), None, (-0.9, 0.9)),
    ("none", "none", None, (), None, None),
    ("None", "none", None, (), None, None),
])
def test_spec_forms(text, kind, value, shape, dtype, domain):
    spec = parse_spec(text)
    assert (spec.kind, spec.value, spec.shape, spec.dtype, spec.domain) == (kind, value, shape, dtype, domain)
    assert type(spec.value) is type(value)  # 3 stays an int, 2.5 a float


@pytest.mark.parametrize("text, message", [
    ("", "empty SPEC"),
    ("3y4", "cannot read SPEC '3y4'"),
    ("x y", "cannot read SPEC 'x y'"),  # a bare word is a string now (mode=reflect); two words are not
    ("float8[3]", "unknown dtype 'float8' in 'float8[3]': use one of float64, float32, float16, int64"),
    ("[1,2", "cannot read list '[1,2'"),
    ("[[1,2],[3]]", "ragged list '[[1,2],[3]]'"),
    ("[]", "empty list '[]'"),
    ('["a"]', "must contain only numbers"),
    ("[true]", "must contain only numbers"),
    ("3x4@(5,1)", "bad range '(5,1)' in '3x4@(5,1)': need finite low < high"),
    ("3x4@(1,)", "bad range '(1,)'"),
    ("3x4@wide", "bad range 'wide' in '3x4@wide': use @(low,high) or one of @positive, @negative, @unit"),
    ("0x4", "empty shape in '0x4'"),
    ("__import__('os')", "cannot read SPEC"),
])
def test_spec_errors_are_one_clear_line(text, message):
    with pytest.raises(SpecError) as err:
        parse_spec(text)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_assignment_and_at():
    assert parse_assignment("x=3x4") == ("x", parse_spec("3x4"))
    assert parse_assignment(" bias = none ") == ("bias", Spec("none", "none"))
    assert parse_at("x=3,y=2.5") == [("x", parse_spec("3")), ("y", parse_spec("2.5"))]
    for bad in ("x", "1x=3", "=3", "x-y=3"):
        with pytest.raises(SpecError, match="expected NAME=SPEC"):
            parse_assignment(bad)
    for bad in ("x=3x4", "x", "x=[1,2]"):
        with pytest.raises(SpecError, match="--at takes NAME=NUMBER pairs"):
            parse_at(bad)


def test_shape_option():
    assert parse_shape("3x4") == parse_shape("3,4") == parse_shape("[3,4]") == (3, 4)
    assert parse_shape("5") == (5,)
    with pytest.raises(SpecError, match="bad shape 'ax4'"):
        parse_shape("ax4")


# ----- building arguments --------------------------------------------------------------------
def targets_of(tmp_path, source, name="ops.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    item = discovery.expand_paths([str(path)])[0]
    module = discovery.load_module(item)
    return {t.name: t for t in discovery.collect(module, item)}


OPS = """
    import gradcli as torch
    from gradcli.autograd import Function

    class Acosh(Function):          # needs x > 1: the third automatic domain
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.sqrt(x * x - 1)
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x / torch.sqrt(x * x - 1)

    class Scale(Function):
        @staticmethod
        def forward(ctx, x, k=3, bias=None):
            ctx.k = k
            return x * k if bias is None else x * k + bias
        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None, None

    class MatMul(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a @ b
        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g @ b.t(), a.t() @ g

    class Examples(Function):
        @staticmethod
        def forward(ctx, x, w):
            return x * w
        @staticmethod
        def backward(ctx, g):
            return g, g
        @staticmethod
        def example_inputs():
            return [(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])),
                    (torch.tensor([5.0]), torch.tensor([6.0], requires_grad=True))]

    class Storm(Function):
        @staticmethod
        def forward(ctx, x):
            return x * float("nan")
        @staticmethod
        def backward(ctx, g):
            return g
"""


def test_automatic_inputs_pick_the_first_finite_domain(tmp_path):
    t = targets_of(tmp_path, OPS)["Acosh"]
    (case,) = build_cases(t, {}, seed=0)
    (rec,) = case.records
    assert rec["spec"] == "float64[3,4]@(1.1,3)" and rec["source"] == "auto"
    x = case.args[0].data
    assert x.shape == (3, 4) and x.dtype == np.float64 and case.args[0].requires_grad
    assert 1.1 <= x.min() and x.max() < 3.0
    assert rec["value"] == x.tolist()  # recorded exactly, for reproduction
    assert AUTO_DOMAINS[:3] == ((-2.0, 2.0), (0.1, 2.0), (1.1, 3.0))


def test_automatic_draw_is_reproduced_by_its_spec(tmp_path):
    t = targets_of(tmp_path, OPS)["Acosh"]
    auto = build_cases(t, {}, seed=7)[0]
    again = build_cases(t, {"x": parse_spec(auto.records[0]["spec"])}, seed=7)[0]
    assert again.records[0]["source"] == "cli"
    np.testing.assert_array_equal(again.args[0].data, auto.args[0].data)
    other_seed = build_cases(t, {}, seed=8)[0]
    assert not np.array_equal(other_seed.args[0].data, auto.args[0].data)


def test_shape_dtype_and_defaults(tmp_path):
    t = targets_of(tmp_path, OPS)["Scale"]
    case, as_tensor = build_cases(t, {}, seed=0, dtype="float32", shape=(2, 5))
    x, k, bias = case.args
    assert x.data.shape == (2, 5) and x.data.dtype == np.float32
    assert (k, bias) == (3, None)
    assert [r["source"] for r in case.records] == ["auto", "default", "default"]
    # the None default is also checked as a tensor: backward returns None for it, so it does not
    # require grad, and the input set says so
    bias = as_tensor.args[2]
    assert bias.data.shape == (5,) and not bias.requires_grad
    assert as_tensor.records[2]["spec"] == "nograd:float32[5]@(-2,2)"
    assert as_tensor.not_checked == [{"input": "bias", "reason": "backward returns None for bias: checked as a "
                                      "tensor that does not require grad (nograd:float32[5]@(-2,2))"}]


def test_command_line_literals(tmp_path):
    t = targets_of(tmp_path, OPS)["Scale"]
    specs = {"x": parse_spec("[1,2,3]"), "k": parse_spec("2"), "bias": parse_spec("2.5")}
    (case,) = build_cases(t, specs, seed=0)
    x, k, bias = case.args
    assert x.data.tolist() == [1.0, 2.0, 3.0] and x.data.dtype == np.float64 and x.requires_grad
    assert k == 2 and type(k) is int  # the default is a Python int: the literal stays one
    assert bias == 2.5 and type(bias) is float  # backward returns None for it: a Python number
    assert case.records[1] == {"name": "k", "source": "cli", "spec": "2", "type": "int", "value": 2}


def test_matmul_gets_shapes_that_fit(tmp_path):
    t = targets_of(tmp_path, OPS)["MatMul"]
    (case,) = build_cases(t, {}, seed=0)  # a @ b between two parameters: (3,4) and (4,5)
    assert [a.data.shape for a in case.args] == [(3, 4), (4, 5)]
    assert [r["spec"] for r in case.records] == ["float64[3,4]@(-2,2)", "float64[4,5]@(-2,2)"]
    (case,) = build_cases(t, {"a": parse_spec("3x4"), "b": parse_spec("4x2")}, seed=0)
    assert [a.data.shape for a in case.args] == [(3, 4), (4, 2)]


def test_nan_everywhere_is_a_broken_forward(tmp_path):
    t = targets_of(tmp_path, OPS)["Storm"]
    with pytest.raises(ForwardBroken, match="NaN/Inf for every element of its output"):
        build_cases(t, {}, seed=0)


def test_example_inputs_each_set_and_requires_grad(tmp_path):
    t = targets_of(tmp_path, OPS)["Examples"]
    first, second = build_cases(t, {}, seed=0)
    assert [a.requires_grad for a in first.args] == [True, True]  # nobody asked: every float tensor
    assert [a.requires_grad for a in second.args] == [False, True]  # the user's flags are kept
    assert [r["case"] for r in first.records + second.records] == [0, 0, 1, 1]
    assert first.records[0]["source"] == "example" and first.records[0]["value"] == [1.0, 2.0]
    overridden = build_cases(t, {"w": parse_spec("[9,9]")}, seed=0)[0]  # the command line wins
    assert overridden.args[1].data.tolist() == [9.0, 9.0] and overridden.records[1]["source"] == "cli"


NUMBER_PARAMETERS = """
    import gradcli as torch
    from gradcli.autograd import Function

    class SumDim(Function):           # dim must be an int: a tensor there makes forward raise
        @staticmethod
        def forward(ctx, x, dim):
            ctx.dim, ctx.shape = dim, x.shape
            return x.sum(dim)
        @staticmethod
        def backward(ctx, g):
            return g.unsqueeze(ctx.dim).expand(ctx.shape), None

    class ScaleLog(Function):         # k read as an int; log needs x > 0: the second domain
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.k = int(k)
            return ctx.k * x.log()
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.k / x, None

    class MatMul(Function):           # shapes that do not fit: numbers do not help either
        @staticmethod
        def forward(ctx, a, b):
            return a @ b
        @staticmethod
        def backward(ctx, g):
            return g, g
"""


def test_a_parameter_that_must_be_a_number_gets_the_int_1(tmp_path):
    targets = targets_of(tmp_path, NUMBER_PARAMETERS)
    (case,) = build_cases(targets["SumDim"], {}, seed=0)
    x, dim = case.args
    assert x.data.shape == (3, 4) and dim == 1 and type(dim) is int
    # forward's source says dim is a dim (x.sum(dim)): an int, not a guess
    assert case.records[1] == {"name": "dim", "source": "auto", "spec": "1", "type": "int", "value": 1,
                               "inferred": "used as .sum(dim)"}
    assert case.not_checked == []
    (case,) = build_cases(targets["ScaleLog"], {}, seed=0)
    x, k = case.args
    assert k == 1 and float(x.data.min()) >= 0.1  # the tensor still comes from a domain where forward is finite
    assert case.records[0]["spec"] == "float64[3,4]@(0.1,2)"
    (case,) = build_cases(targets["MatMul"], {}, seed=0)  # shapes that fit a matmul
    assert [a.data.shape for a in case.args] == [(3, 4), (4, 5)]


def test_gradcli_check_passes_a_function_with_a_number_parameter_and_says_so(tmp_path):
    from click.testing import CliRunner

    from gradcli.cli import main
    path = tmp_path / "ops.py"
    path.write_text(textwrap.dedent(NUMBER_PARAMETERS))
    result = CliRunner().invoke(main, ["check", f"{path}::SumDim", "--format", "plain", "-v"])
    assert result.exit_code == 0, result.output
    assert "dim = 1 (auto)" in result.output
