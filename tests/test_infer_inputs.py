"""Automatic inputs from forward's source (gradcli/check/infer.py, shape_search.py, auto_inputs.py):
int64 indices and targets, string modes, shape asserts, matmuls, None defaults as tensors, and the
reproduce line and skip advice they print."""
import json
import re
import shlex
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner

from gradcli.check import discovery
from gradcli.check.inputs import NoInputs, build_cases, parse_spec
from gradcli.cli import main

ENGINE = """
    from typing import Optional
    import gradcli as torch
    from gradcli.autograd import Function
    import gradcli.nn.functional as F
"""
TORCH = """
    from typing import Optional
    import torch
    from torch.autograd import Function
    import torch.nn.functional as F
"""

FUNCTIONS = """

    class MulConstant(Function):
        @staticmethod
        def forward(ctx, tensor, constant):
            ctx.constant = constant
            return tensor * constant
        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ctx.constant, None

    class Gather(Function):
        @staticmethod
        def forward(ctx, x, index):
            ctx.save_for_backward(index)
            ctx.shape = x.shape
            return x.gather(1, index)
        @staticmethod
        def backward(ctx, g):
            (index,) = ctx.saved_tensors
            return torch.zeros(ctx.shape, dtype=g.dtype).scatter_add(1, index, g), None

    class BuggyGather(Function):       # scatter instead of scatter_add: repeated indices lose gradient
        @staticmethod
        def forward(ctx, x, index):
            ctx.save_for_backward(index)
            ctx.shape = x.shape
            return x.gather(1, index)
        @staticmethod
        def backward(ctx, g):
            (index,) = ctx.saved_tensors
            return torch.zeros(ctx.shape, dtype=g.dtype).scatter(1, index, g), None

    class CrossEntropy(Function):
        @staticmethod
        def forward(ctx, logits, target):
            ctx.save_for_backward(logits, target)
            return F.cross_entropy(logits, target)
        @staticmethod
        def backward(ctx, g):
            logits, target = ctx.saved_tensors
            onehot = F.one_hot(target, logits.shape[1]).to(logits.dtype)
            return g * (logits.softmax(1) - onehot) / logits.shape[0], None

    class BuggyCrossEntropy(Function):  # forgets the mean's 1/N
        @staticmethod
        def forward(ctx, logits, target):
            ctx.save_for_backward(logits, target)
            return F.cross_entropy(logits, target)
        @staticmethod
        def backward(ctx, g):
            logits, target = ctx.saved_tensors
            onehot = F.one_hot(target, logits.shape[1]).to(logits.dtype)
            return g * (logits.softmax(1) - onehot), None

    class Embedding(Function):
        @staticmethod
        def forward(ctx, weight, idx):
            ctx.save_for_backward(idx)
            ctx.rows = weight.shape[0]
            return weight[idx]
        @staticmethod
        def backward(ctx, g):
            (idx,) = ctx.saved_tensors
            return torch.zeros(ctx.rows, g.shape[-1], dtype=g.dtype).index_add(0, idx, g), None

    class Pad(Function):               # the 'reflect' branch's factor is wrong
        @staticmethod
        def forward(ctx, x, mode):
            ctx.mode = mode
            if mode == "symmetric":
                return x * 2
            elif mode == "reflect":
                return x * 3
            raise ValueError(mode)
        @staticmethod
        def backward(ctx, g):
            return g * (2 if ctx.mode == "symmetric" else 4), None

    class BatchTrace(Function):
        @staticmethod
        def forward(ctx, M):
            assert M.dim() == 3 and M.shape[-1] == M.shape[-2]
            ctx.shape = M.shape
            return M.diagonal(dim1=-2, dim2=-1).sum(-1)
        @staticmethod
        def backward(ctx, g):
            eye = torch.eye(ctx.shape[-1], dtype=g.dtype)
            return g[:, None, None] * eye

    class MatMul(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return torch.matmul(a, b)
        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g @ b.t(), a.t() @ g

    class Linear(Function):
        @staticmethod
        def forward(ctx, x, weight, bias=None):
            ctx.save_for_backward(x, weight)
            ctx.has_bias = bias is not None
            out = x @ weight.t()
            if bias is not None:
                out = out + bias
            return out
        @staticmethod
        def backward(ctx, g):
            x, weight = ctx.saved_tensors
            return g @ weight, g.t() @ x, g.sum(0) if ctx.has_bias else None

    class BuggyBiasLinear(Function):   # grad_bias summed over the wrong dim: only seen with a bias
        @staticmethod
        def forward(ctx, x, weight, bias=None):
            ctx.save_for_backward(x, weight)
            ctx.has_bias = bias is not None
            out = x @ weight.t()
            if bias is not None:
                out = out + bias
            return out
        @staticmethod
        def backward(ctx, g):
            x, weight = ctx.saved_tensors
            return g @ weight, g.t() @ x, g.sum(1) if ctx.has_bias else None

    class Dense(Function):
        @staticmethod
        def forward(ctx, x, weight, bias):
            ctx.save_for_backward(x, weight)
            return x.mm(weight.t()) + bias
        @staticmethod
        def backward(ctx, g):
            x, weight = ctx.saved_tensors
            return g.mm(weight), g.t().mm(x), g.sum(0)

    class MeanBiasDense(Function):     # the mean instead of the sum over the batch
        @staticmethod
        def forward(ctx, x, weight, bias):
            ctx.save_for_backward(x, weight)
            return x.mm(weight.t()) + bias
        @staticmethod
        def backward(ctx, g):
            x, weight = ctx.saved_tensors
            return g.mm(weight), g.t().mm(x), g.mean(0)

    class Tile(Function):              # k must be an int, and nothing in the source says which
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return torch.cat(list((x,)) * k, 0)   # ([x] * k would say: an int repeating a list, infer_values.py)
        @staticmethod
        def backward(ctx, g):
            return g.reshape(ctx.k, -1, g.shape[-1]).sum(0), None

    class AddMaybe(Function):          # no default, but forward checks for None: both are checked
        @staticmethod
        def forward(ctx, x, y: Optional[torch.Tensor]):
            ctx.has_y = y is not None
            return x * 2 if y is None else x * 2 + y
        @staticmethod
        def backward(ctx, g):
            return g * 2, g if ctx.has_y else None

    class SumFirst(Function):          # only dim 0 is supported, as its assert says
        @staticmethod
        def forward(ctx, x, split_dim):
            assert split_dim == 0
            ctx.shape = x.shape
            return x.sum(split_dim)
        @staticmethod
        def backward(ctx, g):
            return g.unsqueeze(0).expand(ctx.shape), None

    class Clamp(Function):             # annotated Python floats: ascending values, a real range
        @staticmethod
        def forward(ctx, x, min_val: float, max_val: float):
            ctx.save_for_backward(x)
            ctx.low, ctx.high = min_val, max_val
            return torch.clamp(x, min_val, max_val)
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ((x > ctx.low) & (x < ctx.high)).to(g.dtype), None, None

    class SquareBackward(Function):    # forward takes any shape; backward only square ones
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 + (x @ x - x @ x).sum() * 0

    class Refuses(Function):           # no automatic shape has 7 rows
        @staticmethod
        def forward(ctx, x, target, mode, dim, mask):
            if x.shape[0] != 7:
                raise ValueError("7 rows")
            out = x.masked_fill(mask, 0.0).sum(dim)
            return out + F.cross_entropy(x, target) if mode == "a" else out
        @staticmethod
        def backward(ctx, g):
            return g, None, None, None, None
"""


def write(tmp_path, header=ENGINE, name="fns.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(header) + textwrap.dedent(FUNCTIONS))
    return path


@pytest.fixture
def targets(tmp_path):
    path = write(tmp_path)
    item = discovery.expand_paths([str(path)])[0]
    return {t.name: t for t in discovery.collect(discovery.load_module(item), item)}


def run(*args):
    result = CliRunner().invoke(main, ["check", *map(str, args), "--format", "plain", "-v"])
    return result


def check_json(tmp_path, target, *args):
    out = tmp_path / "out.json"
    result = CliRunner().invoke(main, ["check", str(target), "--format", "plain", "-v", "--json", str(out), *args])
    return result, json.loads(out.read_text())["results"][0]


def test_index_and_target_parameters_get_valid_int64_tensors(targets):
    (case,) = build_cases(targets["Gather"], {}, seed=0)
    x, index = case.args
    assert index.data.dtype == np.int64 and index.data.shape == (3, 4) and not index.requires_grad
    assert 0 <= index.data.min() and index.data.max() < 3  # valid along either dim of a 3x4 x
    assert case.records[1]["spec"] == "int64[3,4]@[0,3)" and case.records[1]["inferred"] == "an index of gather()"
    (case,) = build_cases(targets["CrossEntropy"], {}, seed=0)
    target = case.args[1].data
    assert target.dtype == np.int64 and target.shape == (3,) and set(target.tolist()) <= {0, 1, 2, 3}
    assert case.records[1]["spec"] == "int64[3]@[0,4)"
    (case,) = build_cases(targets["Embedding"], {}, seed=0)
    assert case.records[1]["spec"] == "int64[4]@[0,3)"  # rows of the 3x4 weight


@pytest.mark.parametrize("name, status", [("Gather", "pass"), ("BuggyGather", "fail"), ("CrossEntropy", "pass"),
                                          ("BuggyCrossEntropy", "fail"), ("Embedding", "pass")])
def test_index_functions_get_their_verdict_automatically(tmp_path, name, status):
    result, doc = check_json(tmp_path, f"{write(tmp_path)}::{name}")
    assert doc["status"] == status, result.output
    assert result.exit_code == (0 if status == "pass" else 1)


def test_the_docs_mul_constant_passes_with_a_float(tmp_path):
    result, doc = check_json(tmp_path, f"{write(tmp_path)}::MulConstant", "--input", "constant=3")
    assert result.exit_code == 0 and doc["status"] == "pass", result.output
    assert doc["inputs"][0][1] == {"name": "constant", "source": "cli", "spec": "3", "type": "float", "value": 3.0}
    assert doc["checks"][0] is not None


def test_string_modes_each_get_an_input_set(targets, tmp_path):
    first, second = build_cases(targets["Pad"], {}, seed=0)
    assert (first.args[1], second.args[1]) == ("symmetric", "reflect")
    assert second.records[1]["spec"] == "reflect"
    result, doc = check_json(tmp_path, f"{write(tmp_path)}::Pad")
    assert result.exit_code == 1 and [c[1]["value"] for c in doc["inputs"]] == ["symmetric", "reflect"]
    assert doc["message"].startswith("input set 2 of 2: values: x:")


def test_shape_asserts_and_matmuls_get_shapes_that_fit(targets):
    (case,) = build_cases(targets["BatchTrace"], {}, seed=0)
    assert case.args[0].data.shape == (2, 3, 3)
    assert case.records[0]["inferred"] == "shape satisfies forward's shape checks"
    (case,) = build_cases(targets["MatMul"], {}, seed=0)
    assert [a.data.shape for a in case.args] == [(3, 4), (4, 5)]


@pytest.mark.parametrize("name, status", [("BatchTrace", "pass"), ("MatMul", "pass")])
def test_shape_checked_functions_pass(tmp_path, name, status):
    result, doc = check_json(tmp_path, f"{write(tmp_path)}::{name}")
    assert doc["status"] == status, result.output


def test_a_none_bias_is_also_checked_as_a_tensor(targets, tmp_path):
    without, with_bias = build_cases(targets["Linear"], {}, seed=0)
    assert without.args[2] is None and with_bias.args[2].data.shape == (5,)  # the output's trailing size
    assert with_bias.args[2].requires_grad and with_bias.not_checked == []
    assert with_bias.records[2]["spec"] == "float64[5]@(-2,2)"
    good, _ = check_json(tmp_path, f"{write(tmp_path)}::Linear")
    assert good.exit_code == 0, good.output
    result, doc = check_json(tmp_path, f"{write(tmp_path)}::BuggyBiasLinear")
    assert result.exit_code == 1 and doc["status"] == "fail"
    assert doc["message"] == "input set 2 of 2: structure: gradient for bias has shape [3] but bias has shape [5]"


def test_a_dense_layer_bias_is_a_tensor_not_a_guessed_number(targets, tmp_path):
    (case,) = build_cases(targets["Dense"], {}, seed=0)
    assert [a.data.shape for a in case.args] == [(3, 4), (5, 4), (5,)] and case.not_checked == []
    good, _ = check_json(tmp_path, f"{write(tmp_path)}::Dense")
    assert good.exit_code == 0, good.output
    result, doc = check_json(tmp_path, f"{write(tmp_path)}::MeanBiasDense")
    assert result.exit_code == 1 and doc["message"].startswith("values: bias: 5 of 5 elements wrong")


def test_a_guessed_number_is_recorded_as_not_checked(targets):
    (case,) = build_cases(targets["Tile"], {}, seed=0)
    assert case.args[1] == 1 and case.records[1] == {"name": "k", "source": "auto", "spec": "int(1)",
                                                     "type": "int", "value": 1, "number": True}
    assert case.not_checked == [{"input": "k", "reason": "guessed the number 1 for k: forward refused tensors "
                                 "there; give --input k=SPEC for another value"}]
    (again,) = build_cases(targets["Tile"], {"k": parse_spec("int(1)")}, seed=0)  # the spec reproduces it
    assert again.args[1] == 1 and type(again.args[1]) is int


@pytest.mark.parametrize("name", ["BuggyCrossEntropy", "BuggyGather", "Pad", "MeanBiasDense", "BuggyBiasLinear"])
def test_the_printed_reproduce_line_gives_the_same_verdict(tmp_path, name):
    path = write(tmp_path)
    first = run(f"{path}::{name}")
    lines = [line.strip() for line in first.output.splitlines() if line.strip().startswith("reproduce: ")]
    assert first.exit_code == 1 and lines, first.output
    argv = shlex.split(lines[0][len("reproduce: "):])
    assert argv[:2] == ["gradcli", "check"]
    again = run(*argv[2:])
    assert again.exit_code == 1, again.output
    failure = re.compile(r"^\s+(values|structure|exact): ")
    assert [m for m in again.output.splitlines() if failure.match(m)][0].strip().split("(")[0] in first.output


def test_skip_advice_names_the_parameter_that_blocks(targets):
    with pytest.raises(NoInputs) as err:
        build_cases(targets["Refuses"], {}, seed=0)
    message = str(err.value)
    # `if x.shape[0] != 7: raise`: only x is named; the others are built once x is given
    assert re.findall(r"--input '?(\w+)=", message) == ["x"]
    assert "forward refuses the x gradcli built" in message
    assert "target, mode, dim, mask will still be built automatically" in message
    (case,) = build_cases(targets["Refuses"], {"x": parse_spec("7x4")}, seed=0)
    assert [r["spec"] for r in case.records] == ["float64[7,4]@(-2,2)", "int64[7]@[0,4)", "a", "1", "bool[7,4]"]
    assert case.args[3] == 1 and type(case.args[3]) is int  # dim: the NUMBER is an int there


def test_torch_backend_index_none_bias_and_constant(tmp_path):
    pytest.importorskip("torch")
    path = write(tmp_path, TORCH, "torch_fns.py")
    expected = {"CrossEntropy": "pass", "BuggyCrossEntropy": "fail", "Gather": "pass", "Linear": "pass",
                "BuggyBiasLinear": "fail", "MeanBiasDense": "fail", "Pad": "fail", "BatchTrace": "pass"}
    for name, status in expected.items():
        result, doc = check_json(tmp_path, f"{path}::{name}")
        assert doc["status"] == status, (name, result.output)
    result, doc = check_json(tmp_path, f"{path}::MulConstant", "--input", "constant=3")
    assert doc["status"] == "pass" and doc["inputs"][0][1]["value"] == 3.0


def test_optional_parameters_and_asserted_ints(targets):
    with_y, without_y = build_cases(targets["AddMaybe"], {}, seed=0)
    assert with_y.args[1].data.shape == (3, 4) and without_y.args[1] is None
    assert without_y.records[1]["spec"] == "none"
    (case,) = build_cases(targets["SumFirst"], {}, seed=0)
    assert case.args[1] == 0 and case.records[1]["inferred"] == "compared with ints in forward"


def test_the_shape_search_handles_many_parameters():
    from gradcli.check.infer import Hint
    from gradcli.check.shape_search import alternatives, chains, first_plan

    assert chains(10)[0][:3] == [(3, 4), (4, 5), (5, 2)] and len(chains(10)[0]) == 10
    names = [f"p{i}" for i in range(13)]
    plans = {n: first_plan(Hint(), (3, 4)) for n in names}
    tried = list(alternatives(plans, {n: Hint() for n in names}, (3, 4)))
    assert 100 <= len(tried) <= 160 and all(set(t) == set(names) for t in tried)


def test_annotated_floats_get_ascending_values(targets, tmp_path):
    (case,) = build_cases(targets["Clamp"], {}, seed=0)
    assert case.args[1:] == [0.5, 1.5] and [r["spec"] for r in case.records[1:]] == ["0.5", "1.5"]
    assert case.records[1]["inferred"] == "annotated float"
    result, doc = check_json(tmp_path, f"{write(tmp_path)}::Clamp")
    assert doc["status"] == "pass", result.output


HINTED = """
    import gradcli as torch
    from gradcli.autograd import Function
    import gradcli.nn.functional as F

    class Hinted(Function):
        @staticmethod
        def forward(ctx, a, b, c, x, w, bias, m, flag, n, scale, mask, k):
            if x.dim() != 4:
                raise ValueError("NCHW")
            assert len(m.shape) == 2 and m.size(0) == m.size(1)
            ctx.n, ctx.scale = n, scale
            y = torch.einsum("ij,jk->ik", a, b) + c.sum()
            z = F.linear(w, bias, k) if flag else x.masked_fill(mask, 0.0)
            return y, z, m.softmax(n)
        @staticmethod
        def backward(ctx, *g):
            return None, None, None, None, None, None, None, None, None, None, None, None
"""


def test_what_the_source_says_about_each_parameter(tmp_path):
    from gradcli.check.infer import read_hints

    path = tmp_path / "hinted.py"
    path.write_text(textwrap.dedent(HINTED))
    item = discovery.expand_paths([str(path)])[0]
    (target,) = discovery.collect(discovery.load_module(item), item)
    hints = read_hints(target, ["a", "b", "c", "x", "w", "bias", "m", "flag", "n", "scale", "mask", "k"])
    assert (hints["a"].shape, hints["b"].shape, hints["c"].shape) == ((3, 4), (4, 5), None)
    assert hints["x"].ndim == 4 and (hints["m"].ndim, hints["m"].square) == (2, True)
    assert (hints["w"].shape, hints["bias"].shape, hints["k"].shape) == ((3, 4), (5, 4), (5,))
    assert (hints["flag"].kind, hints["n"].kind, hints["mask"].kind, hints["mask"].mask_of) == (
        "bool", "int", "mask", "x")
    assert hints["n"].ctx_attribute and hints["scale"].ctx_attribute and hints["scale"].backward_none
    assert hints["c"].kind is None and hints["c"].tensor_use


def test_a_plan_whose_backward_raises_is_a_last_resort(targets, tmp_path):
    (case,) = build_cases(targets["SquareBackward"], {}, seed=0)
    assert case.args[0].data.shape != (3, 4)  # 3x4 @ 3x4 raises in backward: a shape where it runs
    result, doc = check_json(tmp_path, f"{write(tmp_path)}::SquareBackward")
    assert doc["status"] == "pass", result.output


SETUP_CONTEXT = """
    import gradcli as torch
    from gradcli.autograd import Function

    class Procrustes(Function):        # setup_context style: eps is kept on ctx there
        @staticmethod
        def forward(M, eps):
            assert M.dim() == 3 and M.shape[1] == M.shape[2], "BxDxD"
            return M * 2
        @staticmethod
        def setup_context(ctx, inputs, output):
            M, eps = inputs
            ctx.eps = eps
        @staticmethod
        def backward(ctx, g):
            return g * 2, None
"""


def test_setup_context_style_number_and_square_batch(tmp_path):
    path = tmp_path / "sc.py"
    path.write_text(textwrap.dedent(SETUP_CONTEXT))
    item = discovery.expand_paths([str(path)])[0]
    (target,) = discovery.collect(discovery.load_module(item), item)
    (case,) = build_cases(target, {}, seed=0)
    assert case.args[0].data.shape == (2, 3, 3) and case.args[1] == 1e-6  # a tolerance's name: a small number
    assert case.records[1]["spec"] == "1e-06"
