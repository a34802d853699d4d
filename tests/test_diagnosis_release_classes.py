"""Issue 17, tenth pass: evidence guards and mistake classes, each reproduced with a small Function
of its own, on both backends.

- A gradient returned flat whose values are right in forward's own (C) order — a per-row op
  applied to every row of a (2, 3, 4) input by flattening it to (6, 4), whose backward forgets to
  reshape the result back — is a ``missing_reshape`` (only the reshape is missing) quoted at the
  statement that computes it, never a ``transposed`` (no axis is out of order).
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_diagnosis_cases import backend  # noqa: E402

from gradcli.check.diagnosis import diagnose  # noqa: E402
from gradcli.check.gradcheck import gradcheck  # noqa: E402

BACKENDS = ["gradcli", "torch"]


def _findings(cls, args):
    report = gradcheck(cls.apply, args)
    assert not report.ok
    return diagnose(report, cls.apply, args)


def _line_of(cls, text):
    import inspect
    lines, start = inspect.getsourcelines(cls.backward)
    return next(start + k for k, line in enumerate(lines) if text in line)


# ----- a gradient left flat ------------------------------------------------------------------------------
def rows_scaled(B, reshaped):
    class RowsScaled(B.Function):
        """Every row of x (2, 3, 4) times the column scales s (4,), by flattening to (6, 4)."""

        @staticmethod
        def forward(ctx, x, s):
            flat = x.reshape(-1, x.shape[-1])
            ctx.save_for_backward(flat, s)
            ctx.in_shape = x.shape
            return (flat * s).reshape(x.shape)

        @staticmethod
        def backward(ctx, grad):
            flat, s = ctx.saved_tensors
            g = grad.reshape(-1, grad.shape[-1])
            dx = g * s  # the gradient, flat
            if reshaped:
                dx = dx.reshape(ctx.in_shape)
            return dx, (g * flat).sum(0)

    return RowsScaled


@pytest.mark.parametrize("name", BACKENDS)
def test_a_gradient_returned_flat_is_a_missing_reshape_at_its_statement(name):
    B = backend(name)
    rng = np.random.default_rng(91)
    args = (B.tensor(rng.standard_normal((2, 3, 4))), B.tensor(rng.uniform(0.5, 2.0, size=4)))
    assert gradcheck(rows_scaled(B, True).apply, args).ok
    cls = rows_scaled(B, False)
    findings = _findings(cls, args)
    assert [(f.kind, f.input) for f in findings] == [("missing_reshape", 0)]
    f = findings[0]
    assert f.params["reshape"] == "C" and f.params["returned_shape"] == [6, 4] and f.params["side"] == "result"
    assert "shape (6, 4): reshape it to (2, 3, 4)" in f.message
    assert f.params["source"]["line"] == _line_of(cls, "dx = g * s")
