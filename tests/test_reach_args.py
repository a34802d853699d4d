"""Inputs for forwards real packages write (gradcli/check/varargs.py, infer_calls.py, skip_advice.py):
``forward(ctx, x, *args)``, callables and modules as arguments, sizes, ``b, c, h, w = x.shape``,
symmetric / positive definite matrices (``@sym``/``@spd``), parameters handed to a helper function,
and skip advice that names the one parameter forward refused. Small Functions written for these tests."""
import json
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner

from gradcli.check import discovery
from gradcli.check.inputs import NoInputs, build_cases, parse_spec
from gradcli.check.spec import SpecError
from gradcli.cli import main

ENGINE = """
    import gradcli as torch
    from gradcli.autograd import Function
"""

FUNCTIONS = """

    class Unpacked(Function):            # a, b = weights: two extra arguments, named by position
        @staticmethod
        def forward(ctx, x, *weights):
            a, b = weights
            ctx.save_for_backward(x, a, b)
            return x * a + x * b
        @staticmethod
        def backward(ctx, g):
            x, a, b = ctx.saved_tensors
            return g * (a + b), g * x, g * x


    class Indexed(Function):             # args[1]: at least two
        @staticmethod
        def forward(ctx, *args):
            ctx.save_for_backward(args[0], args[1])
            return args[0] * args[1]
        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y, g * x


    class ByBackward(Function):          # backward returns three gradients: x and two extra
        @staticmethod
        def forward(ctx, x, *rest):
            total = x
            for r in rest:
                total = total * r
            ctx.save_for_backward(x, *rest)
            return total
        @staticmethod
        def backward(ctx, g):
            x, p, q = ctx.saved_tensors
            return g * p * q, g * x * q, g * x * p


    class Called(Function):              # the module's own call site: three arguments
        @staticmethod
        def forward(ctx, x, *rest):
            (y,) = [r * 1.0 for r in rest][:1] or [x]
            ctx.save_for_backward(x, y)
            return x * y
        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return (g * y,) + tuple(g * x for _ in ctx.saved_tensors[1:])


    def use_called(x, y):
        return Called.apply(x, y)


    class Shape4(Function):              # b, c, h, w = x.shape: four dimensions
        @staticmethod
        def forward(ctx, x):
            b, c, h, w = x.shape
            ctx.hw = (h, w)
            return x.reshape(b, c, h * w).sum(-1)
        @staticmethod
        def backward(ctx, g):
            return g.reshape(*g.shape, 1, 1) * torch.ones(ctx.hw)


    def pad(x, mode):
        if mode == "zero":
            return x * 1.0
        if mode == "flip":
            return x.flip(-1)
        raise ValueError("unknown pad type: " + str(mode))


    class Padded(Function):              # mode's strings are in the helper forward hands it to
        @staticmethod
        def forward(ctx, x, mode):
            ctx.mode = mode
            return pad(x, mode) * 2.0
        @staticmethod
        def backward(ctx, g):
            return pad(g, ctx.mode) * 2.0, None


    class Applies(Function):             # fn is called in forward: a callable
        @staticmethod
        def forward(ctx, x, fn):
            ctx.save_for_backward(x)
            return fn(x) * 3.0
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3.0 * (1 - torch.tanh(x) ** 2), None


    class Refuses(Function):             # only x blocks: 7 rows
        @staticmethod
        def forward(ctx, x, w, b):
            if x.shape[0] != 7:
                raise ValueError("7 rows")
            return x * w + b
        @staticmethod
        def backward(ctx, g):
            return g, g, g

"""


@pytest.fixture
def targets(tmp_path):
    path = tmp_path / "fns.py"
    path.write_text(textwrap.dedent(ENGINE) + textwrap.dedent(FUNCTIONS))
    item = discovery.expand_paths([str(path)])[0]
    return {t.name: t for t in discovery.collect(discovery.load_module(item), item)}


def names(case):
    return [r["name"] for r in case.records]


def test_star_args_counts_from_unpacking_indexing_backward_and_call_sites(targets):
    (case,) = build_cases(targets["Unpacked"], {}, seed=0)
    assert names(case) == ["x", "weights_0", "weights_1"]
    (case,) = build_cases(targets["Indexed"], {}, seed=0)
    assert names(case) == ["args_0", "args_1"]
    (case,) = build_cases(targets["ByBackward"], {}, seed=0)
    assert names(case) == ["x", "rest_0", "rest_1"]
    (case,) = build_cases(targets["Called"], {}, seed=0)
    assert names(case) == ["x", "rest_0"]  # from Called.apply(x, y), not the fallback of none


def test_star_args_given_by_name_and_checked_to_a_verdict(tmp_path, targets):
    (case,) = build_cases(targets["Unpacked"], {"weights_1": parse_spec("[2.0,3.0,4.0,5.0]")}, seed=0)
    assert case.args[2].data.tolist() == [2.0, 3.0, 4.0, 5.0] and case.records[2]["source"] == "cli"
    path = tmp_path / "fns.py"
    out = tmp_path / "out.json"
    result = CliRunner().invoke(main, ["check", f"{path}::Unpacked", f"{path}::ByBackward", "--format", "plain", "-v",
                                       "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "weights_1" in result.output  # the report names the extra arguments as --input does
    report = json.loads(out.read_text())["results"]
    assert [r["status"] for r in report] == ["pass", "pass"]
    records = report[0]["inputs"][0]
    assert [(r["name"], r["spec"]) for r in records] == [("x", "float64[3,4]@(-2,2)"),
                                                         ("weights_0", "float64[3,4]@(-2,2)"),
                                                         ("weights_1", "float64[3,4]@(-2,2)")]
    given = {r["name"]: parse_spec(r["spec"]) for r in records}  # what reproduce: prints, as --input
    (again,) = build_cases(targets["Unpacked"], given, seed=0)
    assert [a.data.tolist() for a in again.args] == [r["value"] for r in records]


def test_shape_unpacking_gives_the_number_of_dimensions(targets):
    (case,) = build_cases(targets["Shape4"], {}, seed=0)
    assert case.args[0].data.ndim == 4 and case.records[0]["spec"] == "float64[2,3,4,4]@(-2,2)"


def test_strings_of_a_helper_function_forward_hands_the_parameter_to(targets):
    cases = build_cases(targets["Padded"], {}, seed=0)
    assert [c.args[1] for c in cases] == ["zero", "flip"]  # the first, then the other mode as a second set
    assert "pad()" in cases[0].records[1]["inferred"]


def test_a_called_parameter_gets_a_callable(targets):
    (case,) = build_cases(targets["Applies"], {}, seed=0)
    assert case.records[1] == {"name": "fn", "source": "auto", "spec": "fn:tanh", "type": "callable",
                               "value": "tanh", "inferred": "called in forward"}
    x = case.args[0].data
    np.testing.assert_allclose(case.args[1](case.args[0]).data, np.tanh(x), rtol=0, atol=0)


def test_skip_advice_names_only_the_parameter_forward_refused(targets):
    with pytest.raises(NoInputs) as err:
        build_cases(targets["Refuses"], {}, seed=0)
    message = str(err.value)
    assert "forward refuses the x gradcli built: give --input x=SPEC" in message
    assert "--input w" not in message and "--input b" not in message and "w, b will still be built" in message
    (case,) = build_cases(targets["Refuses"], {"x": parse_spec("7x4")}, seed=0)  # the one hint is enough
    assert case.args[0].data.shape == (7, 4) and case.records[1]["source"] == "auto"


def test_sym_and_spd_specs():
    sym = parse_spec("4x4@sym")
    assert (sym.shape, sym.structure, sym.domain) == ((4, 4), "sym", (-2.0, 2.0))
    assert parse_spec("nograd:float64[2,3,3]@spd").structure == "spd"
    for bad, says in (("3x4@sym", "square"), ("int64[3,3]@spd", "floating"), ("fn:relu", "fn:tanh")):
        with pytest.raises(SpecError, match=says):
            parse_spec(bad)
    assert parse_spec("fn:Identity").value == "identity"


def test_sym_and_spd_tensors_are_what_they_say(targets):
    from gradcli.check.inputs import Param, _from_spec, backend_for

    be = backend_for("gradcli")
    a, rec = _from_spec(be, parse_spec("float64[2,3,3]@sym"), "k", 0, "float64", Param("a"), "cli")
    np.testing.assert_array_equal(a.data, np.swapaxes(a.data, -1, -2))
    assert rec["spec"] == "float64[2,3,3]@sym"
    again, _ = _from_spec(be, parse_spec(rec["spec"]), "k", 0, "float64", Param("a"), "cli")
    np.testing.assert_array_equal(again.data, a.data)  # the record's SPEC draws it again
    s, _ = _from_spec(be, parse_spec("4x4@spd"), "k", 0, "float64", Param("s"), "cli")
    eig = np.linalg.eigvalsh(s.data)
    assert np.allclose(s.data, s.data.T) and eig.min() >= 0.5 - 1e-12


TORCH_FUNCTIONS = """
    import torch


    class Coupling(torch.autograd.Function):     # a module argument (.forward) and no extra weights
        @staticmethod
        def forward(ctx, x, fm, *weights):
            ctx.fm = fm
            x1, x2 = torch.chunk(x.detach(), 2, dim=1)
            ctx.save_for_backward(x)
            return torch.cat([x1 + fm.forward(x2), x2], dim=1)
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with torch.enable_grad():
                x = x.detach().requires_grad_()
                x1, x2 = torch.chunk(x, 2, dim=1)
                y = torch.cat([x1 + ctx.fm(x2), x2], dim=1)
                (gx,) = torch.autograd.grad(y, (x,), g)
            params = tuple(ctx.fm.parameters())
            return (gx, None) + tuple(torch.zeros_like(p) for p in params)


    class Noisy(torch.autograd.Function):        # shape is a size: a tuple of ints
        @staticmethod
        def forward(ctx, loc, shape):
            white = torch.randn(shape, dtype=loc.dtype)
            return loc + 0.0 * white
        @staticmethod
        def backward(ctx, g):
            return g, None


    class SquareSym(torch.autograd.Function):    # eigh: a symmetric matrix; backward right only there
        @staticmethod
        def forward(ctx, m):
            torch.linalg.eigh(m)
            ctx.save_for_backward(m)
            return (m * m).sum()
        @staticmethod
        def backward(ctx, g):
            (m,) = ctx.saved_tensors
            return 2 * g * m.t()
"""


def test_torch_module_argument_size_tuple_and_symmetric_matrix(tmp_path):
    pytest.importorskip("torch")
    path = tmp_path / "tfns.py"
    path.write_text(textwrap.dedent(TORCH_FUNCTIONS))
    out = tmp_path / "out.json"
    result = CliRunner().invoke(main, ["check", str(path), "--format", "plain", "--json", str(out)])
    assert result.exit_code == 0, result.output
    report = {r["function"]: r for r in json.loads(out.read_text())["results"]}
    assert {n: r["status"] for n, r in report.items()} == {"Coupling": "pass", "Noisy": "pass", "SquareSym": "pass"}
    records = {n: {rec["name"]: rec for rec in r["inputs"][0]} for n, r in report.items()}
    assert records["Coupling"]["fm"]["spec"] == "fn:tanh" and list(records["Coupling"]) == ["x", "fm"]
    assert records["Noisy"]["shape"]["value"] == [3, 4] and records["Noisy"]["shape"]["type"] == "tuple"
    m = np.array(records["SquareSym"]["m"]["value"])
    assert records["SquareSym"]["m"]["spec"] == "float64[4,4]@sym" and np.array_equal(m, m.T)
    # the same backward at a matrix that is not symmetric: not the gradient there
    again = CliRunner().invoke(main, ["check", f"{path}::SquareSym", "--format", "plain", "--input", "m=4x4"])
    assert again.exit_code == 1, again.output


DATACLASS_FUNCTIONS = """
    from dataclasses import dataclass
    from typing import NamedTuple, Optional
    import gradcli as torch
    from gradcli.autograd import Function


    @dataclass
    class Params:
        tau: float = 2.0
        shift: float = 0.5


    class Knobs(NamedTuple):
        gain: float = 3.0


    class Leaky(Function):               # p: Params, k: Optional[Knobs] -- both from their defaults
        @staticmethod
        def forward(ctx, x, p: Params, k: Optional[Knobs]):
            ctx.scale = k.gain / p.tau
            return x * ctx.scale + p.shift
        @staticmethod
        def backward(ctx, g):
            return g * ctx.scale, None, None


    class NeedsAll(Function):            # a field without a default: not built
        @staticmethod
        def forward(ctx, x, p: "Strict"):
            return x * p.a
        @staticmethod
        def backward(ctx, g):
            return g, None


    @dataclass
    class Strict:
        a: float
"""


def test_dataclass_and_namedtuple_parameters_from_their_defaults(tmp_path):
    path = tmp_path / "dfns.py"
    path.write_text(textwrap.dedent(DATACLASS_FUNCTIONS))
    item = discovery.expand_paths([str(path)])[0]
    found = {t.name: t for t in discovery.collect(discovery.load_module(item), item)}
    (case,) = build_cases(found["Leaky"], {}, seed=0)
    p, k = case.args[1], case.args[2]
    assert (type(p).__name__, p.tau, p.shift, type(k).__name__, k.gain) == ("Params", 2.0, 0.5, "Knobs", 3.0)
    assert [(r["spec"], r["type"], r["class"].rsplit(".", 1)[1]) for r in case.records[1:]] == [
        ("default()", "object", "Params"), ("default()", "object", "Knobs")]
    result = CliRunner().invoke(main, ["check", f"{path}::Leaky", "--format", "plain"])
    assert result.exit_code == 0 and "1 passed" in result.output, result.output
    with pytest.raises(NoInputs, match="p=default\\(\\) needs p annotated"):
        build_cases(found["NeedsAll"], {"p": parse_spec("default()")}, seed=0)


OBJECT_STAR = """
    import gradcli as torch
    from gradcli.autograd import Function


    class Integrates(Function):          # an options object among *params: gradcli cannot build it
        @staticmethod
        def forward(ctx, y, config, *params):
            config.update({"steps": 3})
            return y * 2.0
        @staticmethod
        def backward(ctx, g):
            return g * 2.0, None
"""


def test_star_args_forward_refusing_built_arguments_is_a_skip_not_an_error(tmp_path):
    path = tmp_path / "ofns.py"
    path.write_text(textwrap.dedent(OBJECT_STAR))
    out = tmp_path / "out.json"
    result = CliRunner().invoke(main, ["check", str(path), "--format", "plain", "--json", str(out)])
    (r,) = json.loads(out.read_text())["results"]
    assert result.exit_code == 0 and r["status"] == "skip", result.output
    assert r["message"].startswith("forward takes *params; with 0, 1, 2 extra argument(s)")
    # the parameter whose attribute forward reads is named: an object the package builds, not a tensor
    assert "forward uses .update of config, which the Tensor gradcli built there does not have" in r["message"]
