"""``gradcli.linalg`` (``torch.linalg`` in a torch-style file): values and gradients against torch."""
import numpy as np
import pytest

import gradcli

torch = pytest.importorskip("torch")

X = np.random.default_rng(5).uniform(-2, 2, (3, 4))
A = np.random.default_rng(6).uniform(-2, 2, (4, 3))
B = np.random.default_rng(7).uniform(-2, 2, (4, 3))


def both(fn, *arrays):
    """fn(lib, *tensors) on gradcli and torch: (values, gradients of sum(out * w)) for each."""
    results = []
    for lib in (gradcli, torch):
        tensors = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *tensors)
        w = lib.tensor(np.linspace(0.5, 1.5, int(np.prod(tuple(out.shape)))).reshape(tuple(out.shape)))
        (out * w).sum().backward()
        results.append((out.detach().numpy(), [t.grad.numpy() for t in tensors]))
    return results


@pytest.mark.parametrize("fn", [
    lambda T, x: T.linalg.vector_norm(x),
    lambda T, x: T.linalg.vector_norm(x, ord=1, dim=1),
    lambda T, x: T.linalg.vector_norm(x, ord=3, dim=0, keepdim=True),
    lambda T, x: T.linalg.vector_norm(x, ord=float("inf"), dim=-1),
    lambda T, x: T.linalg.matrix_norm(x),
    lambda T, x: T.linalg.norm(x),
    lambda T, x: T.linalg.norm(x, dim=1),
    lambda T, x: T.linalg.norm(x, ord=1, dim=0),
    lambda T, x: T.linalg.norm(x, "fro", dim=(0, 1)),
], ids=["vector_norm", "vector_norm_1_dim", "vector_norm_3_keepdim", "vector_norm_inf", "matrix_norm_fro",
        "norm_default", "norm_dim", "norm_ord1_dim", "norm_fro_dims"])
def test_norms_match_torch(fn):
    (ours, our_grads), (theirs, their_grads) = both(fn, X)
    np.testing.assert_allclose(ours, theirs, rtol=1e-13)
    np.testing.assert_allclose(our_grads[0], their_grads[0], rtol=1e-12, atol=1e-14)


def test_cross_matches_torch_with_its_default_last_dim():
    (ours, our_grads), (theirs, their_grads) = both(lambda T, a, b: T.linalg.cross(a, b), A, B)
    np.testing.assert_allclose(ours, theirs, rtol=1e-14)
    for g, t in zip(our_grads, their_grads):
        np.testing.assert_allclose(g, t, rtol=1e-13)


def test_cross_needs_a_dim_of_length_3():
    with pytest.raises(RuntimeError, match="linalg.cross: inputs dimension -1 must have length 3. Got 4 and 4"):
        gradcli.linalg.cross(gradcli.tensor(X), gradcli.tensor(X))


@pytest.mark.parametrize("call, message", [
    (lambda x: gradcli.linalg.matrix_norm(x, ord="nuc"), "matrix_norm\\(ord='nuc'\\) is not provided"),
    (lambda x: gradcli.linalg.norm(x, ord=2, dim=(0, 1)), "over two dims \\(a matrix norm\\) is not provided"),
    (lambda x: gradcli.linalg.det(x), "has no attribute 'det'"),
])
def test_what_is_not_provided_says_so(call, message):
    with pytest.raises((NotImplementedError, AttributeError), match=message):
        call(gradcli.tensor(X))


def test_import_gradcli_as_torch_reaches_linalg_lazily():
    import subprocess
    import sys

    code = ("import sys\nimport gradcli as torch\nassert 'gradcli.linalg' not in sys.modules\n"
            "x = torch.tensor([3.0, 4.0])\nprint(float(torch.linalg.vector_norm(x)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "5.0"
