"""A backward that is right on symmetric matrices (forward reads one triangle, backward returns the
symmetric gradient) still FAILs element by element, as torch's gradcheck does, and says so instead
of sending the user after a mask (gradcli/check/symmetric_parts.py)."""
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest

from gradcli.check.symmetric_parts import NOTE, backward_is_symmetric, symmetric_parts_agree
from gradcli.check.tolerances import DEFAULT_TOLERANCES
from tests.check_run import check_json

TOL = DEFAULT_TOLERANCES["float64"]
X = np.array([[2.0, 0.5, 0.1], [0.5, 3.0, 0.2], [0.1, 0.2, 4.0]])
SYMMETRIC = np.array([[1.0, 0.3, -0.2], [0.3, 2.0, 0.7], [-0.2, 0.7, 0.5]])
TRIANGLE = np.tril(2 * SYMMETRIC) - np.diag(np.diag(SYMMETRIC))  # what a lower-triangle forward's numeric gradient is


def failed(analytic, numeric, x=X):
    result = SimpleNamespace(status="fail", analytic=analytic[None], numeric=numeric[None],
                             numeric_error=np.full((1,) + numeric.shape, 1e-12), kink_mask=np.zeros(numeric.shape, bool))
    return x, result


def test_the_symmetric_gradient_of_a_triangle_reading_forward_agrees_on_symmetric_directions():
    assert np.allclose((TRIANGLE + TRIANGLE.T) / 2, SYMMETRIC)
    x, result = failed(SYMMETRIC, TRIANGLE)
    assert symmetric_parts_agree(x, result, TOL) and backward_is_symmetric(result, TOL)


def test_a_wrong_symmetric_part_a_non_symmetric_input_or_a_kink_does_not():
    wrong = SYMMETRIC + np.array([[0, 1e-3, 0], [1e-3, 0, 0], [0, 0, 0]])
    assert not symmetric_parts_agree(*failed(wrong, TRIANGLE), TOL)
    assert not symmetric_parts_agree(*failed(SYMMETRIC, TRIANGLE, x=X + np.triu(np.ones((3, 3)), 1) * 1e-9), TOL)
    x, result = failed(SYMMETRIC, TRIANGLE)
    result.kink_mask[0, 1] = True
    assert not symmetric_parts_agree(x, result, TOL)
    x, result = failed(SYMMETRIC, TRIANGLE)
    result.status = "pass"
    assert not symmetric_parts_agree(x, result, TOL)


def test_a_transposed_gradient_agrees_on_symmetric_matrices_but_is_not_symmetric():
    general = np.array([[1.0, 2.0, 0.0], [-1.0, 0.5, 3.0], [0.25, 0.0, 1.0]])
    x, result = failed(general.T, general)
    assert symmetric_parts_agree(x, result, TOL) and not backward_is_symmetric(result, TOL)


CHOLESKY_LOGDET = """
    import torch


    class CholLogdet(torch.autograd.Function):
        # log det A through cholesky (reads the lower triangle); backward: the symmetric gradient inv(A)
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return 2 * torch.log(torch.diagonal(torch.linalg.cholesky(a))).sum()

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * torch.linalg.inv(a){bug}
"""


def test_cli_fails_it_as_torch_does_names_the_convention_and_asks_no_diagnosis(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "chol.py"
    path.write_text(textwrap.dedent(CHOLESKY_LOGDET.format(bug="")))
    result, doc = check_json(tmp_path, str(path), "--input", "a=float64[4,4]@spd")
    (r,) = doc["results"]
    assert r["status"] == "fail", result.output
    values = next(c for c in r["checks"][0]["checks"] if c["name"] == "values")
    assert values["message"].endswith(NOTE) and values["details"]["symmetric_parts_agree"] is True
    assert r["checks"][0]["diagnosis"] == []
    assert "check the branch or mask" not in result.output

    # torch agrees: plain gradcheck fails it, gradcheck through sym(A) (torch's hermitian wrapper) passes
    import importlib.util
    spec = importlib.util.spec_from_file_location("chol", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    b = torch.randn(4, 4, dtype=torch.float64)
    a = (b @ b.T / 4 + 0.5 * torch.eye(4, dtype=torch.float64)).requires_grad_()
    assert not torch.autograd.gradcheck(module.CholLogdet.apply, (a,), raise_exception=False)
    assert torch.autograd.gradcheck(lambda m: module.CholLogdet.apply((m + m.T) / 2), (a,))


def test_a_real_bug_on_a_symmetric_input_gets_no_such_note(tmp_path):
    pytest.importorskip("torch")
    path = tmp_path / "chol_bug.py"
    path.write_text(textwrap.dedent(CHOLESKY_LOGDET.format(bug=" * 1.5")))
    result, doc = check_json(tmp_path, str(path), "--input", "a=float64[4,4]@spd")
    (r,) = doc["results"]
    values = next(c for c in r["checks"][0]["checks"] if c["name"] == "values")
    assert r["status"] == "fail" and "on symmetric matrices it is right" not in values["message"]
    assert "symmetric_parts_agree" not in values["details"]
