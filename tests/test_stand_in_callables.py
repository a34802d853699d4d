"""Issue 13 (reach, "no option"): callables forward is handed, built automatically as stand-ins that keep the
check about the Function — a distance-like callable of two row sets gets the pairwise (squared) Euclidean
distance, an fn/fn_inverse pair gets sinh/asinh — and a Function with no backward of its own is a skip before
any input is built. Small Functions of our own reproduce each pattern met in real packages; `gradcli check`
runs as a user runs it, and the printed reproduce line gives the same inputs again."""
import shlex
from types import SimpleNamespace  # make_callable reads the backend's name only

import numpy as np
import pytest

from check_run import LIBS, by_name, check, check_json, need, write

DISTANCES = """
    import {lib} as torch


    class SquaredExp(torch.autograd.Function):   # exp(-|x1_i - x2_j|^2 / (2 l^2)): backward needs a squared distance
        @staticmethod
        def forward(ctx, x1, x2, lengthscale, sq_dist_func):
            if any(ctx.needs_input_grad[:2]):
                raise RuntimeError("no gradients for x1 and x2")
            if lengthscale.size(-1) > 1:
                raise ValueError("one lengthscale only")
            d = sq_dist_func(x1 / lengthscale, x2 / lengthscale)
            out = torch.exp(d * -0.5)
            ctx.save_for_backward(d * out / lengthscale)
            return out

        @staticmethod
        def backward(ctx, g):
            (dl,) = ctx.saved_tensors
            return None, None, (g * dl).sum().reshape(1, 1), None


    class Laplace(torch.autograd.Function):      # exp(-|x1_i - x2_j| / l): a distance, not its square
        @staticmethod
        def forward(ctx, x1, x2, lengthscale, dist_func):
            if any(ctx.needs_input_grad[:2]):
                raise RuntimeError("no gradients for x1 and x2")
            if lengthscale.size(-1) > 1:
                raise ValueError("one lengthscale only")
            d = dist_func(x1 / lengthscale, x2 / lengthscale)
            out = torch.exp(-d)
            ctx.save_for_backward(d * out / lengthscale)
            return out

        @staticmethod
        def backward(ctx, g):
            (dl,) = ctx.saved_tensors
            return None, None, (g * dl).sum().reshape(1, 1), None


    class LaplaceWrong(torch.autograd.Function):  # the derivative of a squared distance: twice too large
        @staticmethod
        def forward(ctx, x1, x2, lengthscale, dist_func):
            if any(ctx.needs_input_grad[:2]):
                raise RuntimeError("no gradients for x1 and x2")
            if lengthscale.size(-1) > 1:
                raise ValueError("one lengthscale only")
            d = dist_func(x1 / lengthscale, x2 / lengthscale)
            out = torch.exp(-d)
            ctx.save_for_backward(2 * d * out / lengthscale)
            return out

        @staticmethod
        def backward(ctx, g):
            (dl,) = ctx.saved_tensors
            return None, None, (g * dl).sum().reshape(1, 1), None
"""


@pytest.mark.parametrize("lib", LIBS)
def test_a_callable_named_like_a_distance_gets_the_pairwise_distance_of_two_row_sets(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "kernels.py", DISTANCES, lib)
    result, doc = check_json(tmp_path, path)
    results = by_name(doc)
    assert {n: r["status"] for n, r in results.items()} == {"SquaredExp": "pass", "Laplace": "pass",
                                                           "LaplaceWrong": "fail"}
    for name, stand_in in (("SquaredExp", "fn:sqdist"), ("Laplace", "fn:cdist")):
        x1, x2, lengthscale, fn = results[name]["inputs"][0]
        assert (fn["spec"], fn["source"]) == (stand_in, "auto")
        assert "named like a" in fn["inferred"] and stand_in in fn["inferred"]
        # the lengthscale scales both row sets: one value along the rows and (size(-1) > 1 raises) the columns
        assert lengthscale["spec"] == "float64[1,1]@(-2,2)"
        assert x1["spec"] == x2["spec"] == "nograd:float64[3,4]@(-2,2)"
    assert "reproduce:" in result.output and "--input dist_func=fn:cdist" in result.output


def test_the_reproduce_line_of_a_pairwise_stand_in_gives_the_same_verdict(tmp_path):
    path = write(tmp_path, "kernels.py", DISTANCES, "gradcli")
    result = check(f"{path}::LaplaceWrong", "--format", "plain")
    line = next(ln.strip() for ln in result.output.splitlines() if ln.strip().startswith("reproduce:"))
    words = shlex.split(line[len("reproduce:"):])
    assert words[:2] == ["gradcli", "check"]
    assert "dist_func=fn:cdist" in words and "lengthscale=float64[1,1]@(-2,2)" in words
    again = check(*words[2:], "--format", "plain")
    assert again.exit_code == 1 and "FAIL" in again.output


def test_the_pairwise_stand_ins_are_the_euclidean_distances_between_rows():
    import gradcli
    from gradcli.check.special_values import make_callable

    x1 = np.array([[0.0, 0.0], [1.0, 2.0], [3.0, -1.0]])
    x2 = np.array([[0.0, 1.0], [4.0, 3.0]])
    be = SimpleNamespace(name="gradcli")
    dist = make_callable(be, "cdist")(gradcli.tensor(x1), gradcli.tensor(x2))
    sq = make_callable(be, "sqdist")(gradcli.tensor(x1), gradcli.tensor(x2))
    assert np.asarray(sq.data).tolist() == [[1.0, 25.0], [2.0, 10.0], [13.0, 17.0]]
    np.testing.assert_allclose(np.asarray(dist.data), np.sqrt([[1.0, 25.0], [2.0, 10.0], [13.0, 17.0]]),
                               rtol=0, atol=1e-15)


def test_the_pairwise_stand_ins_match_torch_cdist():
    torch = pytest.importorskip("torch")
    from gradcli.check.special_values import make_callable

    x1, x2 = torch.randn(2, 3, 4, dtype=torch.float64), torch.randn(2, 5, 4, dtype=torch.float64)
    module = make_callable(SimpleNamespace(name="torch"), "cdist")
    assert isinstance(module, torch.nn.Module)
    torch.testing.assert_close(module(x1, x2), torch.cdist(x1, x2), rtol=0, atol=1e-12)
    torch.testing.assert_close(make_callable(SimpleNamespace(name="torch"), "sqdist")(x1, x2), torch.cdist(x1, x2) ** 2,
                               rtol=0, atol=1e-12)


def test_a_callable_not_named_like_a_distance_still_gets_tanh_and_the_safety_skip(tmp_path):
    need("torch")
    source = DISTANCES.replace("sq_dist_func", "pair_func")
    path = write(tmp_path, "kernels.py", source, "torch")
    result, doc = check_json(tmp_path, f"{path}::SquaredExp")
    (r,) = doc["results"]
    assert r["status"] == "skip"
    assert "forward calls pair_func with several arguments, and lengthscale reaches its output through one " \
           "other than the last" in r["message"]


def test_the_stand_in_callables_parse_as_specs():
    from gradcli.check.spec import SpecError, parse_spec

    for name in ("cdist", "sqdist", "sinh", "asinh"):
        spec = parse_spec(f"fn:{name}")
        assert (spec.kind, spec.value) == ("callable", name)
    with pytest.raises(SpecError, match="unknown callable 'fn:cosh': use one of fn:tanh, fn:sigmoid, fn:identity, "
                                        "fn:sinh, fn:asinh, fn:cdist, fn:sqdist"):
        parse_spec("fn:cosh")


INVERTIBLE = """
    import torch


    class Reversible(torch.autograd.Function):   # frees nothing but recomputes the input from the output
        @staticmethod
        def forward(ctx, fn, fn_inverse, x):
            ctx.fn, ctx.fn_inverse = fn, fn_inverse
            with torch.no_grad():
                y = fn(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            with torch.no_grad():
                x = ctx.fn_inverse(y)       # only a true inverse gives x back
            with torch.enable_grad():
                x = x.detach().requires_grad_()
                (gx,) = torch.autograd.grad(ctx.fn(x), x, g)
            return None, None, gx


    class ReversibleWrong(torch.autograd.Function):   # differentiates at the output, not at the input
        @staticmethod
        def forward(ctx, fn, fn_inverse, x):
            ctx.fn = fn
            with torch.no_grad():
                y = fn(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            with torch.enable_grad():
                z = y.detach().requires_grad_()
                (gz,) = torch.autograd.grad(ctx.fn(z), z, g)
            return None, None, gz
"""


def test_an_fn_and_fn_inverse_pair_gets_sinh_and_asinh(tmp_path):
    need("torch")
    path = write(tmp_path, "rev.py", INVERTIBLE, "torch")
    result, doc = check_json(tmp_path, path)
    results = by_name(doc)
    assert results["Reversible"]["status"] == "pass", results["Reversible"]["message"]
    fn, inverse, x = results["Reversible"]["inputs"][0]
    assert (fn["spec"], inverse["spec"], x["spec"]) == ("fn:sinh", "fn:asinh", "float64[3,4]@(-2,2)")
    assert inverse["inferred"] == "the inverse of fn: asinh, the inverse of fn's stand-in sinh (fn:asinh)"
    # forward never calls fn_inverse here: its name alone pairs it with fn
    assert results["ReversibleWrong"]["status"] == "fail"
    assert [r["spec"] for r in results["ReversibleWrong"]["inputs"][0][:2]] == ["fn:sinh", "fn:asinh"]


def test_the_inverse_stand_ins_invert_each_other():
    torch = pytest.importorskip("torch")
    from gradcli.check.special_values import make_callable

    be = SimpleNamespace(name="torch")
    x = torch.linspace(-3, 3, 13, dtype=torch.float64)
    sinh, asinh = make_callable(be, "sinh"), make_callable(be, "asinh")
    torch.testing.assert_close(asinh(sinh(x)), x, rtol=0, atol=1e-14)
    assert sinh(x)[-1].item() == pytest.approx(10.017874927409903, abs=1e-14)  # sinh(3)


NO_BACKWARD = """
    import torch


    class ExportStub(torch.autograd.Function):   # an export helper: forward and symbolic, no backward
        @staticmethod
        def symbolic(g, x, weight, hidden_size, layout):
            return g.op("Stub", x, weight)

        @staticmethod
        def forward(ctx, x, weight, hidden_size, layout):
            return x.new_empty((layout.batch, hidden_size))   # inputs nobody could guess
"""


def test_a_function_with_no_backward_of_its_own_is_a_skip_before_inputs_are_built(tmp_path):
    need("torch")
    path = write(tmp_path, "stub.py", NO_BACKWARD, "torch")
    result, doc = check_json(tmp_path, path)
    (r,) = doc["results"]
    assert r["status"] == "skip"
    assert r["message"] == (
        "no backward of its own (nor vjp, nor jvp): torch's default backward raises NotImplementedError: You must "
        "implement either the backward or vjp method for your custom autograd.Function; nothing to check (a "
        "forward-only or export stub), not checked")
    assert result.exit_code == 0


def test_the_bench_torch_side_rebuilds_the_stand_ins_as_gradcli_builds_them():
    torch = pytest.importorskip("torch")
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
    import real_packages_gradcheck as side  # noqa: E402  (bench/ is not a package)

    from gradcli.check.special_values import make_callable

    records = [{"name": n, "type": "callable", "spec": f"fn:{n}", "value": n} for n in ("cdist", "sqdist", "sinh",
                                                                                        "asinh")]
    rebuilt, why = side.rebuild(records, torch)
    assert why == ""
    x1, x2 = torch.randn(3, 4, dtype=torch.float64), torch.randn(5, 4, dtype=torch.float64)
    ours = [make_callable(SimpleNamespace(name="torch"), r["value"]) for r in records]
    for theirs, mine in zip(rebuilt[:2], ours[:2]):
        torch.testing.assert_close(theirs(x1, x2), mine(x1, x2), rtol=0, atol=1e-13)
    for theirs, mine in zip(rebuilt[2:], ours[2:]):
        torch.testing.assert_close(theirs(x1), mine(x1), rtol=0, atol=0)


def test_a_callable_named_for_a_distribution_is_not_taken_for_a_distance(tmp_path):
    need("torch")
    path = write(tmp_path, "kernels.py", DISTANCES.replace("dist_func", "distribution_fn"), "torch")
    result, doc = check_json(tmp_path, f"{path}::Laplace")
    (r,) = doc["results"]
    assert r["status"] == "skip" and "forward calls distribution_fn with several arguments" in r["message"]
