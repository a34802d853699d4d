"""bench/real_packages_gradcheck.py's adapted runs of torch.autograd.gradcheck: a Function that refuses
autograd.grad (checkpointing) is judged through torch.autograd.backward, one whose forward frees its input's
storage gets clones; each only after torch's own run raised that error, and marked "adapted". The Functions
are this file's own."""
import os
import sys

import pytest

torch = pytest.importorskip("torch")

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)
import real_packages_gradcheck as side  # noqa: E402

D = torch.float64


class Checkpointed(torch.autograd.Function):
    """Refuses autograd.grad; backward recomputes and, as memcnn's does, also sets x.grad itself."""

    factor = 1.0

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        with torch.no_grad():
            return torch.tanh(x @ w)

    @classmethod
    def backward(cls, ctx, g):
        if not torch.autograd._is_checkpoint_valid():
            raise RuntimeError("Checkpointing is not compatible with .grad(), please use .backward() if possible")
        x, w = ctx.saved_tensors
        xi, wi = x.detach().requires_grad_(True), w.detach().requires_grad_(True)
        with torch.enable_grad():
            gx, gw = torch.autograd.grad(torch.tanh(xi @ wi), (xi, wi), g)
        x.grad = gx  # "mimic backwards": must not be counted again
        return gx, cls.factor * gw


class CheckpointedWrongW(Checkpointed):
    factor = 1.5


class FreesInput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.sin(x)
        ctx.save_for_backward(y.detach().clone(), x.detach().clone())
        x.untyped_storage().resize_(0)
        return y

    @staticmethod
    def backward(ctx, g):
        _, x = ctx.saved_tensors
        return g * torch.cos(x)


def _args():
    torch.manual_seed(3)
    return [torch.randn(3, 4, dtype=D, requires_grad=True), torch.randn(4, 2, dtype=D, requires_grad=True)]


def test_a_function_refusing_autograd_grad_passes_through_backward():
    assert side._gradcheck(torch, Checkpointed.apply, _args(), False, 60)["status"] == "error"  # torch as it is
    result = side.one_gradcheck(torch, Checkpointed.apply, _args, False, 60)
    assert result["status"] == "pass" and result["adapted"].startswith("backward:")


def test_a_wrong_gradient_still_fails_through_backward():
    result = side.one_gradcheck(torch, CheckpointedWrongW.apply, _args, False, 60)
    assert result["status"] == "fail" and "adapted" in result
    assert "with respect to input 1" in result["message"]


def test_torch_autograd_grad_is_restored_after_the_adapted_run():
    real = torch.autograd.grad
    side.one_gradcheck(torch, Checkpointed.apply, _args, True, 60)
    assert torch.autograd.grad is real


def test_a_forward_that_frees_its_input_gets_clones():
    def make():
        return [torch.tensor([0.3, -1.2, 2.0], dtype=D, requires_grad=True)]
    assert "storage of size 0" in side._gradcheck(torch, FreesInput.apply, make(), False, 60)["message"]
    result = side.one_gradcheck(torch, FreesInput.apply, make, False, 60)
    assert result["status"] == "pass" and result["adapted"].startswith("cloned:")


def test_a_plain_function_is_not_adapted():
    def make():
        return [torch.tensor([0.3, -1.2], dtype=D, requires_grad=True)]
    result = side.one_gradcheck(torch, torch.sin, make, True, 60)
    assert result == {"status": "pass", "message": ""}
