"""A 0-d ``torch.nn.Parameter`` held by a module the Function calls (gradcli/check/backends.py, write_into).

The numeric side perturbs such a Parameter in place, since the module reads it as ``self.w`` and not through
the argument. The values went in through ``np.ascontiguousarray``, which makes a 0-d array shape ``(1,)``: the
copy into the 0-d Parameter raised, every evaluation counted as non-finite, and the check was a SKIP ("the
numerical derivative could not be computed") where a 1-element Parameter passed. The Functions here are this
file's own; torch.autograd.gradcheck at the same inputs is the reference."""
import numpy as np
import pytest

from check_run import by_name, check_json, write

HELD = """
    import torch


    class Scale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.tensor(0.3, dtype=torch.float64))

        def forward(self, x):
            return torch.sinh(x) * torch.exp(self.w)


    MODULE = Scale()
    WEIGHT_SCALE = 1.0


    class RunWithParams(torch.autograd.Function):
        @staticmethod
        def forward(ctx, fn, x, *params):
            ctx.fn = fn
            ctx.save_for_backward(x)
            with torch.no_grad():
                return fn(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with torch.enable_grad():
                x = x.detach().requires_grad_()
                gx, gw = torch.autograd.grad(ctx.fn(x), (x,) + tuple(ctx.fn.parameters()), g)
            return None, gx, WEIGHT_SCALE * gw

        @staticmethod
        def example_inputs():
            x = torch.tensor([0.2, -0.5, 1.1], dtype=torch.float64, requires_grad=True)
            return (MODULE, x, MODULE.w)
"""


def _values(result):
    return {c["input"]: c for c in result["checks"][0]["checks"] if c["name"] == "values"}


def _torch_gradcheck(path):
    """torch's own verdict on the file's Function at its example inputs."""
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location(f"held_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = module.RunWithParams.example_inputs()
    return torch.autograd.gradcheck(module.RunWithParams.apply, args, raise_exception=False)


def test_a_module_s_0d_parameter_is_checked_and_passes(tmp_path):
    pytest.importorskip("torch")
    path = write(tmp_path, "held.py", HELD)
    outcome, doc = check_json(tmp_path, path)
    result = by_name(doc)["RunWithParams"]
    assert result["status"] == "pass", result["message"]
    values = _values(result)
    assert sorted(values) == [1, 2]
    assert values[2]["status"] == "pass" and values[2]["details"]["max_abs_error"] < 1e-8
    record = {r["index"]: r for r in result["checks"][0]["inputs"]}[2]
    assert record["shape"] == [] and record["status"] == "pass"
    assert _torch_gradcheck(path) is True
    assert outcome.exit_code == 0


def test_a_wrong_gradient_of_the_0d_parameter_fails_on_it(tmp_path):
    pytest.importorskip("torch")
    path = write(tmp_path, "held.py", HELD.replace("WEIGHT_SCALE = 1.0", "WEIGHT_SCALE = 2.0"))
    outcome, doc = check_json(tmp_path, path)
    result = by_name(doc)["RunWithParams"]
    assert result["status"] == "fail"
    assert {i: c["status"] for i, c in _values(result).items()} == {1: "pass", 2: "fail"}
    assert _torch_gradcheck(path) is False  # torch agrees: the Parameter's gradient is twice too large
    assert outcome.exit_code == 1


def test_write_into_a_0d_parameter_and_restore():
    torch = pytest.importorskip("torch")
    from gradcli.check.backends import TorchBackend

    be = TorchBackend()
    w = torch.nn.Parameter(torch.tensor(0.3, dtype=torch.float64))
    version = w._version
    restore = be.write_into(w, np.asarray(np.float64(0.7)))
    assert w.shape == () and w.item() == 0.7
    restore()
    assert w.item() == 0.3 and w._version == version  # through .data: tensors saved for backward stay valid
    with pytest.raises(ValueError, match=r"Parameter \[\] float64 is perturbed in place: cannot hold \[1\]"):
        be.write_into(w, np.array([0.7]))


def test_the_stand_in_s_parameter_may_be_0d(tmp_path):
    """fn:NAME@w with a 0-d w given on the command line: the stand-in holds it, and the check runs on it."""
    pytest.importorskip("torch")
    source = """
        import torch


        class Apply(torch.autograd.Function):
            @staticmethod
            def forward(ctx, fn, x, w):
                ctx.fn = fn
                ctx.save_for_backward(x)
                with torch.no_grad():
                    return fn(x)

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                with torch.enable_grad():
                    x = x.detach().requires_grad_()
                    gx, gw = torch.autograd.grad(ctx.fn(x), (x,) + tuple(ctx.fn.parameters()), g)
                return None, gx, gw
    """
    path = write(tmp_path, "apply.py", source)
    outcome, doc = check_json(tmp_path, path, "--input", "fn=fn:sinh@w", "--input", "x=float64[3]",
                              "--input", "w=float64[]")
    result = by_name(doc)["Apply"]
    assert result["status"] == "pass", result["message"]
    values = _values(result)
    assert sorted(values) == [1, 2] and values[2]["status"] == "pass"
    assert outcome.exit_code == 0
