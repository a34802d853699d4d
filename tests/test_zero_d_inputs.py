"""A 0-d tensor input in the checks that rebuild inputs from numpy arrays (gradcli/check/forward_ad.py, the
tangent of a jvp; gradcli/check/dtype_grid.py, the inputs at each low-precision dtype of reference mode).

Both went through ``np.ascontiguousarray``, which makes a 0-d array shape ``(1,)``: a correct ``jvp`` FAILed
("a forward gradient ... of size [1]" for a tensor of size []) and ``--dtype float64,float32`` was an ERROR blamed
on the user's backward ("got [] but expected shape compatible with [1]"). torch.autograd.gradcheck(check_forward_ad=
True) at the same inputs is the reference. The Function here is this file's own."""
import pytest

from check_run import by_name, check_json, write

SCALE = """
    import torch


    def reference(x, w):
        return x * w


    class Scale(torch.autograd.Function):
        reference = staticmethod(reference)

        @staticmethod
        def forward(x, w):
            return x * w

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)
            ctx.save_for_forward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * w, (g * x).sum()

        @staticmethod
        def jvp(ctx, dx, dw):
            x, w = ctx.saved_tensors
            return dx * w + JVP_SCALE * x * dw

        @staticmethod
        def example_inputs():
            return (torch.tensor([0.5, -1.2, 2.0], dtype=torch.float64, requires_grad=True),
                    torch.tensor(0.7, dtype=torch.float64, requires_grad=True))


    JVP_SCALE = 1.0
"""


def _torch_forward_ad(path):
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location(f"scale_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return torch.autograd.gradcheck(module.Scale.apply, module.Scale.example_inputs(), check_forward_ad=True,
                                    raise_exception=False)


def _check(result, name):
    return next(c for c in result["checks"][0]["checks"] if c["name"] == name)


def test_a_0d_input_s_jvp_is_checked_and_passes(tmp_path):
    pytest.importorskip("torch")
    path = write(tmp_path, "scale.py", SCALE)
    outcome, doc = check_json(tmp_path, path)
    result = by_name(doc)["Scale"]
    assert result["status"] == "pass", result["message"]
    assert _check(result, "jvp")["status"] == "pass"
    assert _torch_forward_ad(path) is True
    assert outcome.exit_code == 0


def test_a_wrong_jvp_of_the_0d_input_fails(tmp_path):
    pytest.importorskip("torch")
    path = write(tmp_path, "scale.py", SCALE.replace("JVP_SCALE = 1.0", "JVP_SCALE = 3.0"))
    outcome, doc = check_json(tmp_path, path)
    result = by_name(doc)["Scale"]
    assert result["status"] == "fail"
    jvp = _check(result, "jvp")
    assert jvp["status"] == "fail" and "raised" not in jvp["message"]  # a wrong value, not an exception
    assert _torch_forward_ad(path) is False
    assert outcome.exit_code == 1


def test_a_0d_input_at_a_low_precision_dtype(tmp_path):
    pytest.importorskip("torch")
    path = write(tmp_path, "scale.py", SCALE)
    outcome, doc = check_json(tmp_path, path, "--dtype", "float64,float32")
    result = by_name(doc)["Scale"]
    assert result["status"] == "pass", result["message"]
    reference = [c for c in result["checks"][0]["checks"] if c["name"] == "reference"]
    assert reference and all(c["status"] == "pass" for c in reference)
    assert outcome.exit_code == 0
