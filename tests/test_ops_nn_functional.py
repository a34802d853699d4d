"""gradcli.nn.functional: values and gradients against central differences and torch."""
import zlib

import numpy as np
import pytest

import gradcli
import gradcli.nn.functional as F

TARGET = [0, 2, 1, 2]              # class indices for the (4, 3) inputs
PROBS = [[0.2, 0.3, 0.5], [1.0, 0.0, 0.0], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]]

# name -> (fn(F, T, x), draw(rng) -> x)
CASES = {
    "relu": (lambda F, T, x: F.relu(x), lambda r: r.uniform(0.2, 2, (3, 4)) * r.choice([-1, 1], (3, 4))),
    "leaky_relu": (lambda F, T, x: F.leaky_relu(x, 0.1), lambda r: r.uniform(0.2, 2, 6) * r.choice([-1, 1], 6)),
    "elu": (lambda F, T, x: F.elu(x, alpha=0.7), lambda r: r.uniform(0.2, 2, 6) * r.choice([-1, 1], 6)),
    "gelu": (lambda F, T, x: F.gelu(x), lambda r: r.uniform(-3, 3, 6)),
    "gelu_tanh": (lambda F, T, x: F.gelu(x, approximate="tanh"), lambda r: r.uniform(-3, 3, 6)),
    "silu": (lambda F, T, x: F.silu(x), lambda r: r.uniform(-3, 3, 6)),
    "sigmoid": (lambda F, T, x: F.sigmoid(x), lambda r: r.uniform(-3, 3, 6)),
    "tanh": (lambda F, T, x: F.tanh(x), lambda r: r.uniform(-3, 3, 6)),
    "logsigmoid": (lambda F, T, x: F.logsigmoid(x), lambda r: r.uniform(-3, 3, 6)),
    "softplus": (lambda F, T, x: F.softplus(x), lambda r: r.uniform(-3, 3, 6)),
    "softplus_beta": (lambda F, T, x: F.softplus(x, beta=2.0, threshold=3.0), lambda r: r.uniform(-3, 3, 8)),
    "softmax": (lambda F, T, x: F.softmax(x, dim=1), lambda r: r.normal(size=(3, 4))),
    "log_softmax": (lambda F, T, x: F.log_softmax(x, dim=0), lambda r: r.normal(size=(3, 4))),
    "linear": (lambda F, T, x: F.linear(x, T.tensor([[1.0, -2.0, 0.5], [0.3, 0.2, 0.1]]), T.tensor([0.5, -1.0])),
               lambda r: r.normal(size=(4, 3))),
    "mse_loss": (lambda F, T, x: F.mse_loss(x, T.ones(4, 3)), lambda r: r.normal(size=(4, 3))),
    "mse_loss_sum": (lambda F, T, x: F.mse_loss(x, T.zeros(4, 3), reduction="sum"), lambda r: r.normal(size=(4, 3))),
    "l1_loss": (lambda F, T, x: F.l1_loss(x, T.zeros(4, 3)), lambda r: r.uniform(0.2, 2, (4, 3)) * r.choice([-1, 1], (4, 3))),
    "nll_loss": (lambda F, T, x: F.nll_loss(F.log_softmax(x, 1), T.tensor(TARGET)), lambda r: r.normal(size=(4, 3))),
    "cross_entropy": (lambda F, T, x: F.cross_entropy(x, T.tensor(TARGET)), lambda r: r.normal(size=(4, 3))),
    "cross_entropy_probs": (lambda F, T, x: F.cross_entropy(x, T.tensor(PROBS)), lambda r: r.normal(size=(4, 3))),
    "cross_entropy_none": (lambda F, T, x: F.cross_entropy(x, T.tensor(TARGET), reduction="none"),
                           lambda r: r.normal(size=(4, 3))),
    "binary_cross_entropy": (lambda F, T, x: F.binary_cross_entropy(x, T.tensor([0.0, 1.0, 1.0, 0.3])),
                             lambda r: r.uniform(0.1, 0.9, 4)),
    "bce_with_logits": (lambda F, T, x: F.binary_cross_entropy_with_logits(x, T.tensor([0.0, 1.0, 1.0, 0.3])),
                        lambda r: r.normal(size=4) * 3),
    "normalize": (lambda F, T, x: F.normalize(x, dim=1), lambda r: r.normal(size=(3, 4))),
}


def _draw(name):
    return np.asarray(CASES[name][1](np.random.default_rng(zlib.crc32(name.encode()))), dtype=np.float64)


def _weighted(out, w, T):
    return (out * T.tensor(w)).sum()


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_central_differences(name):
    fn = CASES[name][0]
    x0 = _draw(name)
    with gradcli.no_grad():
        w = np.random.default_rng(1).uniform(0.5, 1.5, fn(F, gradcli, gradcli.tensor(x0)).shape)

    def value(arr):
        with gradcli.no_grad():
            return float(_weighted(fn(F, gradcli, gradcli.tensor(arr)), w, gradcli))

    x = gradcli.tensor(x0, requires_grad=True)
    _weighted(fn(F, gradcli, x), w, gradcli).backward()
    h = 1e-6
    numeric = np.zeros_like(x0)
    for idx in np.ndindex(x0.shape):
        plus, minus = x0.copy(), x0.copy()
        plus[idx] += h
        minus[idx] -= h
        numeric[idx] = (value(plus) - value(minus)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_and_gradient_match_torch(name):
    torch = pytest.importorskip("torch")
    import torch.nn.functional as torch_F

    fn = CASES[name][0]
    x0 = _draw(name)
    ours = gradcli.tensor(x0, requires_grad=True)
    theirs = torch.tensor(x0, requires_grad=True)
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # constants made inside fn in float64, as gradcli's
    try:
        out_theirs = fn(torch_F, torch, theirs)
        w = np.random.default_rng(1).uniform(0.5, 1.5, tuple(out_theirs.shape))
        _weighted(out_theirs, w, torch).backward()
    finally:
        torch.set_default_dtype(before)
    out_ours = fn(F, gradcli, ours)
    _weighted(out_ours, w, gradcli).backward()
    np.testing.assert_allclose(out_ours.detach().numpy(), out_theirs.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-13)


def test_one_hot_and_dropout():
    assert F.one_hot(gradcli.tensor([0, 2])).tolist() == [[1, 0, 0], [0, 0, 1]]
    assert F.one_hot(gradcli.tensor([1]), num_classes=4).tolist() == [[0, 1, 0, 0]]
    x = gradcli.ones(1000)
    assert F.dropout(x, 0.5, training=False) is x
    gradcli.manual_seed(0)
    kept = F.dropout(x, 0.25)
    values = set(kept.tolist())
    assert values == {0.0, 1 / 0.75}
    assert 0.2 < kept.tolist().count(0.0) / 1000 < 0.3


def test_functional_is_reachable_as_torch_nn_functional():
    import gradcli as torch

    assert torch.nn.functional.relu(torch.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
