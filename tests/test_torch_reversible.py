"""Reversible and checkpointing Functions checked the way torch's own training step runs them (issue 13,
help corpus: memcnn's InvertibleCheckpointFunction, torch_geometric's rev_gnn InvertibleFunction).

Such a Function takes a module's forward and inverse and the module's Parameters as arguments; backward
recomputes through the module and calls ``torch.autograd.grad`` over those Parameters. gradcli differentiated
copies of them ("differentiated Tensor ... not used in the graph", raised inside the user's backward): a
Parameter is now differentiated as itself and perturbed in place by the numeric side (restored after each
evaluation). A backward that swaps the input's storage back in with ``x.set_(...)`` gives that leaf a new
AccumulateGrad node: ``autograd.grad(inputs=[x])`` then misses it on every backward after the first. A
checkpointing backward that also writes the input's ``.grad`` itself ("mimic backwards") must not count twice.
The Functions here are this file's own, written for the pattern."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")

import gradcli  # noqa: E402
from gradcli.check import torch_vjp  # noqa: E402
from gradcli.check.backends import TorchBackend  # noqa: E402
from gradcli.cli import main  # noqa: E402

D = torch.float64


class Coupling(torch.nn.Module):
    """y = [x1 + tanh(x2 W^T + b), x2]: invertible, with two Parameters."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2).double()
        with torch.no_grad():
            self.lin.weight.copy_(torch.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=D))
            self.lin.bias.copy_(torch.tensor([0.1, -0.3], dtype=D))

    def forward(self, x):
        x1, x2 = x.chunk(2, dim=1)
        return torch.cat([x1 + torch.tanh(self.lin(x2)), x2], dim=1)

    def inverse(self, y):
        y1, y2 = y.chunk(2, dim=1)
        return torch.cat([y1 - torch.tanh(self.lin(y2)), y2], dim=1)


class Reversible(torch.autograd.Function):
    """forward under no_grad, frees the input's storage; backward rebuilds it from the output by the inverse
    (``x.set_``), recomputes with grad and differentiates the module's own Parameters (``ctx.weights``)."""

    @staticmethod
    def forward(ctx, fn, fn_inverse, free_input, x, *weights):
        ctx.fn, ctx.fn_inverse, ctx.weights, ctx.free_input = fn, fn_inverse, weights, free_input
        with torch.no_grad():
            y = fn(x.detach())
        if free_input:
            x.untyped_storage().resize_(0)
        ctx.x, ctx.y = x, y.detach()
        return y

    @staticmethod
    def backward(ctx, g):
        x = ctx.x
        if ctx.free_input:
            with torch.no_grad():
                rebuilt = ctx.fn_inverse(ctx.y)
                x.untyped_storage().resize_(rebuilt.numel() * rebuilt.element_size())
                x.set_(rebuilt)
        inner = x.detach().requires_grad_(True)
        with torch.enable_grad():
            out = ctx.fn(inner)
        grads = torch.autograd.grad(out, (inner,) + tuple(ctx.weights), g)
        return (None, None, None) + grads


class ReversibleWeightsTwiceTooLarge(Reversible):
    @staticmethod
    def backward(ctx, g):
        grads = Reversible.backward(ctx, g)
        return grads[:4] + tuple(2 * w for w in grads[4:])


class CheckpointMimic(torch.autograd.Function):
    """Refuses autograd.grad (checkpointing) and, as memcnn's backward, also writes the input's .grad itself."""

    @staticmethod
    def forward(ctx, fn, x, *weights):
        ctx.fn, ctx.weights, ctx.x = fn, weights, x
        with torch.no_grad():
            return fn(x.detach())

    @staticmethod
    def backward(ctx, g):
        if not torch.autograd._is_checkpoint_valid():
            raise RuntimeError("CheckpointMimic is not compatible with .grad(), please use .backward() if possible")
        inner = ctx.x.detach().requires_grad_(True)
        with torch.enable_grad():
            out = ctx.fn(inner)
        grads = torch.autograd.grad(out, (inner,) + tuple(ctx.weights), g)
        ctx.x.grad = grads[0]  # "mimic backwards"
        return (None,) + grads


def _x():
    return torch.tensor([[0.3, -0.7, 1.1, 0.4], [-1.2, 0.5, 0.2, -0.9], [0.8, 0.1, -0.6, 1.5]], dtype=D,
                        requires_grad=True)


def _plain_gradients(module, x, cotangent):
    leaf = x.detach().clone().requires_grad_(True)
    return torch.autograd.grad(module(leaf), (leaf, *module.parameters()), cotangent)


@pytest.mark.parametrize("free_input", [False, True])
def test_reversible_function_over_a_modules_parameters_passes(free_input):
    module = Coupling()
    weight_before = module.lin.weight.detach().clone()
    report = gradcli.gradcheck(Reversible, (module.forward, module.inverse, free_input, _x(), *module.parameters()))
    assert report.status == "pass", [(c.name, c.status, c.message) for c in report.checks if c.status == "fail"]
    assert {r.index for r in report.inputs} == {3, 4, 5}  # x, weight, bias all compared
    # the Parameters were perturbed in place and put back; nothing accumulated into them
    assert torch.equal(module.lin.weight.detach(), weight_before)
    assert module.lin.weight.grad is None and module.lin.bias.grad is None


def test_a_wrong_parameter_gradient_fails_and_is_named():
    module = Coupling()
    report = gradcli.gradcheck(ReversibleWeightsTwiceTooLarge,
                               (module.forward, module.inverse, True, _x(), *module.parameters()))
    assert report.status == "fail"
    by_index = {r.index: r.status for r in report.inputs}
    assert by_index == {3: "pass", 4: "fail", 5: "fail"}


def test_checkpointing_backward_that_also_writes_grad_is_not_counted_twice():
    module = Coupling()
    x = _x()
    report = gradcli.gradcheck(CheckpointMimic, (module.forward, x, *module.parameters()))
    assert report.status == "pass", [(c.name, c.message) for c in report.checks if c.status == "fail"]
    assert x.grad is None  # the caller's tensor: the check worked on a copy of it


def test_backward_vjp_equals_plain_autograd_of_the_module():
    """The product read from the graph's AccumulateGrad nodes: exactly what autograd of the plain module gives,
    though backward wrote x.grad itself and ran autograd.grad over the same Parameters."""
    module = Coupling()
    v = torch.tensor([[1.0, -2.0, 0.5, 3.0], [0.25, 1.0, -1.0, 2.0], [-0.5, 0.75, 1.5, -1.25]], dtype=D)
    x = _x().detach().clone().requires_grad_(True)
    leaves = [x, *module.parameters()]
    out = CheckpointMimic.apply(module.forward, *leaves)
    got = torch_vjp.vjp(torch, [out], leaves, [v])
    want = _plain_gradients(module, x, v)
    for g, w in zip(got, want):
        assert torch.allclose(g, w, rtol=0, atol=1e-15)
    assert x.grad is None and module.lin.weight.grad is None  # .grad put back as it was


def test_leaf_whose_storage_backward_swapped_in_keeps_its_gradient_on_later_backwards():
    module = Coupling()
    x = _x().detach().clone().requires_grad_(True)
    leaves = [x, *module.parameters()]
    out = Reversible.apply(module.forward, module.inverse, True, *leaves)
    v = torch.ones(3, 4, dtype=D)
    first = torch_vjp.vjp(torch, [out], leaves, [v])
    # torch itself misses x from the second backward on: its AccumulateGrad node was replaced by x.set_()
    assert torch.autograd.grad(out, leaves, v, retain_graph=True, allow_unused=True)[0] is None
    second = torch_vjp.vjp(torch, [out], leaves, [v])
    for a, b in zip(first, second):
        assert a is not None and torch.equal(a, b)
    # d(sum y)/dx1 = 1; d/dx2 = 1 + sum_i (1 - tanh^2(z_i)) W_ij
    x2 = x.detach()[:, 2:]
    z = x2 @ module.lin.weight.detach().T + module.lin.bias.detach()
    dx2 = 1 + (1 - torch.tanh(z) ** 2) @ module.lin.weight.detach()
    assert torch.allclose(first[0], torch.cat([torch.ones(3, 2, dtype=D), dx2], dim=1), rtol=0, atol=1e-15)


def test_parameter_written_in_place_refuses_other_shapes_dtypes_and_complex():
    backend = TorchBackend()
    p = torch.nn.Parameter(torch.tensor([1.0, 2.0], dtype=D))
    assert backend.held_by_module(p) and not backend.held_by_module(torch.ones(2, dtype=D, requires_grad=True))
    assert backend.fresh_leaf(p) is p
    for bad in (np.ones((3, 2)), np.ones(2, dtype=np.float32), np.ones(2, dtype=np.complex128)):
        with pytest.raises(ValueError, match="perturbed in place"):
            backend.write_into(p, bad)
    restore = backend.write_into(p, np.array([5.0, 6.0]))
    assert p.tolist() == [5.0, 6.0] and p._version == 0  # no version bump: saved tensors stay valid
    restore()
    assert p.tolist() == [1.0, 2.0]


REVERSIBLE_FILE = '''import torch
from torch import nn


class Reversible(torch.autograd.Function):
    @staticmethod
    def forward(ctx, fn, x, *weights):
        ctx.fn, ctx.weights, ctx.x = fn, weights, x
        with torch.no_grad():
            return fn(x.detach())

    @staticmethod
    def backward(ctx, g):
        inner = ctx.x.detach().requires_grad_(True)
        with torch.enable_grad():
            out = ctx.fn(inner)
        return (None,) + torch.autograd.grad(out, (inner,) + tuple(ctx.weights), g)
'''

INPUTS_FILE = '''import torch

def Reversible():
    lin = torch.nn.Linear(3, 3).double()
    return lin.forward, torch.randn(2, 3, dtype=torch.float64, requires_grad=True), lin.weight, lin.bias
'''


def test_cli_checks_a_reversible_function_from_an_inputs_file(tmp_path):
    (tmp_path / "rev.py").write_text(REVERSIBLE_FILE)
    (tmp_path / "rev_inputs.py").write_text(INPUTS_FILE)
    report = tmp_path / "report.json"
    outcome = CliRunner().invoke(main, ["check", str(tmp_path / "rev.py"), "--inputs-from",
                                        str(tmp_path / "rev_inputs.py"), "--format", "plain", "--json", str(report)])
    assert outcome.exit_code == 0, outcome.output
    (result,) = json.loads(report.read_text())["results"]
    assert result["status"] == "pass"
    assert "not used in the graph" not in outcome.output
