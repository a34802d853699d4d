"""A callable's own parameters passed after its inputs (gradcli/check/callable_params.py, specs/check.md §2).

A reversible layer's Function takes the module's forward and inverse and, in ``*args``, the inputs and then the
module's Parameters (``Fn.apply(self._forward, self._inverse, len(args), *args, *self.parameters())``); its
backward differentiates ``fn`` over them. With a parameterless stand-in that tail is empty and a backward taking
``grads[-len(weights):]`` returns every gradient once more: a FAIL of the stand-in, not of the Function as its
package calls it. The call site in the Function's module is the evidence: the stand-ins then hold a Parameter
(``fn:sinh@args_1``) that is the last extra argument. The Functions here are this file's own."""
import shlex

import pytest

from check_run import by_name, check, check_json, need, write

REVERSIBLE = """
    import torch


    class Invertible(torch.autograd.Function):
        @staticmethod
        def forward(ctx, fn, fn_inverse, num_inputs, *args):
            ctx.fn, ctx.fn_inverse = fn, fn_inverse
            ctx.weights = args[num_inputs:]
            with torch.no_grad():
                y = fn(*args[:num_inputs])
            ctx.y = y.detach()
            return y

        @staticmethod
        def backward(ctx, g):
            with torch.no_grad():
                x = ctx.fn_inverse(ctx.y)            # the input, recomputed from the output
            with torch.enable_grad():
                x = x.detach().requires_grad_()
                grads = torch.autograd.grad(ctx.fn(x), (x,) + tuple(ctx.weights), g)
            return (None, None, None, grads[0]) + WEIGHT_SCALE * grads[-len(ctx.weights):]


    WEIGHT_SCALE = 1


    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.log_scale = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))

        def _forward(self, x):
            return torch.sinh(x) * self.log_scale.exp()

        def _inverse(self, y):
            return torch.asinh(y / self.log_scale.exp())

        def forward(self, *args):
            return Invertible.apply(self._forward, self._inverse, len(args), *args,
                                    *tuple(p for p in self.parameters() if p.requires_grad))
"""


def _records(result):
    return {r["name"]: r for r in result["inputs"][0]}


def test_the_callables_hold_the_parameter_the_package_passes_after_the_inputs(tmp_path):
    need("torch")
    path = write(tmp_path, "rev.py", REVERSIBLE)
    outcome, doc = check_json(tmp_path, path)
    result = by_name(doc)["Invertible"]
    assert result["status"] == "pass", result["message"]
    records = _records(result)
    assert [(n, r["spec"]) for n, r in records.items()] == [
        ("fn", "fn:sinh@args_1"), ("fn_inverse", "fn:asinh@args_1"), ("num_inputs", "1"),
        ("args_0", "float64[3,4]@(-2,2)"), ("args_1", "float64[1]@(-2,2)")]
    assert records["args_1"]["inferred"].startswith("a parameter of fn and fn_inverse: the package passes their "
                                                    "module's parameters after the inputs")
    assert records["fn"]["inferred"].endswith("holding args_1 as its parameter (fn:sinh@args_1: sinh(x)*exp(args_1))")
    assert outcome.exit_code == 0


def test_a_wrong_gradient_of_the_parameter_fails_on_it(tmp_path):
    need("torch")
    path = write(tmp_path, "rev.py", REVERSIBLE.replace("WEIGHT_SCALE = 1", "WEIGHT_SCALE = 2").replace(
        "WEIGHT_SCALE * grads", "tuple(WEIGHT_SCALE * w for w in grads)"))
    outcome, doc = check_json(tmp_path, path)
    result = by_name(doc)["Invertible"]
    assert result["status"] == "fail"
    values = {c["input"]: c["status"] for c in result["checks"][0]["checks"] if c["name"] == "values"}
    assert values == {3: "pass", 4: "fail"}  # args_0 right, args_1 (the Parameter) twice too large
    assert outcome.exit_code == 1


def test_without_the_call_site_the_stand_ins_have_no_parameter(tmp_path):
    """No evidence, no parameter: the count and the stand-ins are as before (and the empty tail fails)."""
    need("torch")
    source = REVERSIBLE[:REVERSIBLE.index("    class Layer")]
    path = write(tmp_path, "rev.py", source.replace("WEIGHT_SCALE * grads", "tuple(grads)"))
    _, doc = check_json(tmp_path, path)
    result = by_name(doc)["Invertible"]
    specs = [r["spec"] for r in result["inputs"][0]]
    assert specs[:2] == ["fn:sinh", "fn:asinh"] and len(specs) == 4
    assert result["status"] == "fail"
    assert "returned an incorrect number of gradients (expected 4, got 5)" in result["message"]


def test_the_reproduce_line_rebuilds_the_shared_parameter(tmp_path):
    need("torch")
    path = write(tmp_path, "rev.py", REVERSIBLE.replace("WEIGHT_SCALE = 1", "WEIGHT_SCALE = 2").replace(
        "WEIGHT_SCALE * grads", "tuple(WEIGHT_SCALE * w for w in grads)"))
    first = check(path)
    (line,) = [ln.strip() for ln in first.output.splitlines() if ln.strip().startswith("reproduce: ")]
    assert "--input fn=fn:sinh@args_1 --input fn_inverse=fn:asinh@args_1" in line
    again = check(*shlex.split(line[len("reproduce: gradcli check "):]))
    assert again.exit_code == 1
    assert "FAIL  Invertible" in again.output and "args_1" in again.output


def test_a_named_parameter_missing_is_a_skip_saying_what_to_give(tmp_path):
    need("torch")
    path = write(tmp_path, "rev.py", REVERSIBLE)
    outcome, doc = check_json(tmp_path, f"{path}::Invertible", "--input", "fn=fn:sinh@w", "--input",
                              "fn_inverse=fn:asinh@w", "--input", "num_inputs=1", "--input", "args_0=3x4")
    (result,) = doc["results"]
    assert result["status"] == "skip"
    assert ("fn:sinh@w holds the input w as its Parameter, but w is not a tensor input of forward here: give "
            "--input w=SPEC (a float tensor, like w=float64[1]) or name another input") in result["message"]
    assert outcome.exit_code == 0


def test_spec_grammar_and_the_stand_ins():
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    from gradcli.check import callable_params
    from gradcli.check.inputs import NoInputs, Param
    from gradcli.check.spec import SpecError, parse_spec

    assert parse_spec("fn:sinh@args_1").value == "sinh@args_1"
    assert parse_spec("fn:Tanh@W").value == "tanh@W"
    with pytest.raises(SpecError, match="unknown callable"):
        parse_spec("fn:cdist@w")  # a pairwise distance takes no parameter
    be = SimpleNamespace(name="torch", is_tensor=lambda v: isinstance(v, torch.Tensor))
    fn, inverse = callable_params.make(be, "sinh@w"), callable_params.make(be, "asinh@w")
    w = torch.tensor([0.5], dtype=torch.float64)
    args = [fn, inverse, w]
    callable_params.bind(be, [Param("fn"), Param("fn_inverse"), Param("w")], args)
    assert isinstance(args[2], torch.nn.Parameter) and fn.weight is args[2] and inverse.weight is args[2]
    assert list(fn.parameters()) == [args[2]]
    x = torch.tensor([1.0], dtype=torch.float64)
    assert fn(x).item() == pytest.approx(1.9375792053127157, abs=1e-14)  # sinh(1) * e^0.5
    torch.testing.assert_close(inverse(fn(x)), x, rtol=0, atol=1e-15)
    with pytest.raises(NoInputs, match="needs the torch backend"):
        callable_params.make(SimpleNamespace(name="gradcli"), "sinh@w")


def test_the_bench_torch_side_rebuilds_the_shared_parameter():
    torch = pytest.importorskip("torch")
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
    import real_packages_gradcheck as side  # noqa: E402  (bench/ is not a package)

    records = [{"name": "fn", "type": "callable", "spec": "fn:sinh@w", "value": "sinh@w"},
               {"name": "fn_inverse", "type": "callable", "spec": "fn:asinh@w", "value": "asinh@w"},
               {"name": "w", "type": "tensor", "dtype": "float64", "value": [0.5], "requires_grad": True}]
    (fn, inverse, w), why = side.rebuild(records, torch)
    assert why == "" and isinstance(w, torch.nn.Parameter) and fn.weight is w and inverse.weight is w
    x = torch.tensor([1.0], dtype=torch.float64)
    assert fn(x).item() == pytest.approx(1.9375792053127157, abs=1e-14)
    torch.testing.assert_close(inverse(fn(x)), x, rtol=0, atol=1e-15)


def test_one_starred_concatenation_of_inputs_and_parameters_counts_two(tmp_path):
    need("torch")
    source = REVERSIBLE.replace("len(args), *args,\n                                    *tuple(p for p in self.parameters() if p.requires_grad))",
                                "len(args), *(args + tuple(p for p in self.parameters())))")
    assert "*(args + tuple(" in source
    path = write(tmp_path, "rev.py", source)
    _, doc = check_json(tmp_path, path)
    result = by_name(doc)["Invertible"]
    assert result["status"] == "pass", result["message"]
    assert [r["spec"] for r in result["inputs"][0]] == ["fn:sinh@args_1", "fn:asinh@args_1", "1",
                                                         "float64[3,4]@(-2,2)", "float64[1]@(-2,2)"]
