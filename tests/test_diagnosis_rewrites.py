"""Issue 17, sixth pass: mistake classes found by re-running or re-reading the user's backward with
one edit, each reproduced with a small Function of its own, on both backends:

- index writes that overwrite where they must add (``index_writes.py``): a table lookup whose
  backward assigns ``gw[idx] = …`` (or ``gw[idx] += …``) with a repeated index, and a product of
  neighbours whose backward assigns its second half over the first (``g[1:] = …`` after
  ``g[:-1] = …``) — both ``not_accumulated``, quoting the write to fix;
- a mask with the wrong threshold: replacing the tensor a comparison reads can move the mask's
  edge onto the right one (``x > 0`` → ``output > 0`` for relu(x − 1)), but the threshold is the
  mistake, so it is a ``region``, never "x where the output is needed".
"""
from __future__ import annotations

import inspect
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
    lines, first = inspect.getsourcelines(cls)
    return next(first + k for k, line in enumerate(lines) if text in line)


# ----- index writes: a repeated index overwritten ---------------------------------------------------
def table_lookup(B, augmented):
    class ScaledTableLookup(B.Function):
        """out[k] = w[idx[k]] * s[k], idx repeating some entries of the table w."""

        @staticmethod
        def forward(ctx, w, s, idx):
            ctx.save_for_backward(w, s, idx)
            return w[idx] * s

        @staticmethod
        def backward(ctx, g):
            w, s, idx = ctx.saved_tensors
            gw = B.ns.zeros_like(w)
            if augmented:
                gw[idx] += g * s  # a repeated index keeps one of its writes
            else:
                gw[idx] = g * s  # a repeated index keeps one of its writes
            return gw, g * w[idx], None

    return ScaledTableLookup


@pytest.mark.parametrize("augmented", [False, True], ids=["assigned", "augmented"])
@pytest.mark.parametrize("name", BACKENDS)
def test_an_index_write_with_a_repeated_index_is_not_accumulated(name, augmented):
    B = backend(name)
    rng = np.random.default_rng(61)
    w = B.tensor(rng.uniform(0.5, 1.5, size=5))
    s = B.tensor(rng.uniform(-1.0, 1.0, size=7))
    idx = B.ns.tensor([0, 3, 3, 1, 4, 0, 3])
    cls = table_lookup(B, augmented)
    findings = _findings(cls, (w, s, idx))
    assert [(f.input, f.kind) for f in findings] == [(0, "not_accumulated")], findings
    finding = findings[0]
    line = _line_of(cls, "gw[idx] += g * s" if augmented else "gw[idx] = g * s")
    assert finding.params["at_line"] == line and finding.params["lines"] == [line]
    assert finding.params["source"]["line"] == line
    assert "index_add_" in finding.hint


def test_the_index_write_rerun_restores_setitem_and_leaves_other_code_alone():
    B = backend("gradcli")
    from gradcli.autograd.tensor import Tensor

    before = Tensor.__dict__["__setitem__"]
    rng = np.random.default_rng(62)
    args = (B.tensor(rng.uniform(0.5, 1.5, size=5)), B.tensor(rng.uniform(-1, 1, size=7)),
            B.ns.tensor([0, 3, 3, 1, 4, 0, 3]))
    _findings(table_lookup(B, False), args)
    assert Tensor.__dict__["__setitem__"] is before
    t = B.ns.zeros(4)
    t[B.ns.tensor([1, 1])] = B.tensor(np.array([2.0, 5.0]))  # outside backward: plain numpy semantics
    assert t.data.tolist() == [0.0, 5.0, 0.0, 0.0]


# ----- index writes: a second write replaces the first -------------------------------------------
def neighbour_product(B):
    class NeighbourProduct(B.Function):
        """out[i] = x[i] * x[i + 1] along dim 0."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x[:-1] * x[1:]

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            grad = B.ns.zeros_like(x)
            grad[:-1] = g * x[1:]
            grad[1:] = g * x[:-1]  # assigned: the first write's contributions to x[1:-1] are lost
            return grad

    return NeighbourProduct


@pytest.mark.parametrize("name", BACKENDS)
def test_a_second_write_over_the_first_is_not_accumulated_at_the_second(name):
    B = backend(name)
    x = B.tensor(np.random.default_rng(63).uniform(0.5, 2.0, size=(5, 3)))
    cls = neighbour_product(B)
    findings = _findings(cls, (x,))
    assert [(f.input, f.kind) for f in findings] == [(0, "not_accumulated")], findings
    line = _line_of(cls, "grad[1:] = g * x[:-1]")
    assert findings[0].params["at_line"] == line
    assert findings[0].params["source"]["line"] == line


# ----- a mask's threshold, not its tensor ----------------------------------------------------------
def shifted_relu(B):
    class ShiftedReluThresholdAtZero(B.Function):
        """relu(x − 1), whose backward tests x > 0 instead of x > 1."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x - 1).clamp(min=0)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (x > 0).to(g.dtype)  # the threshold is 1

    return ShiftedReluThresholdAtZero


@pytest.mark.parametrize("name", BACKENDS)
def test_a_wrong_threshold_is_a_region_not_the_output_for_x(name):
    B = backend(name)
    x = np.array([[-0.8, 0.3, 1.6, 2.2], [0.6, -1.4, 1.2, 0.1], [2.5, 0.8, -0.3, 1.9]])
    # the premise: with the output in x's place the mask would be exactly right
    y = np.maximum(x - 1, 0)
    assert np.array_equal(y > 0, x > 1)
    cls = shifted_relu(B)
    findings = _findings(cls, (B.tensor(x),))
    assert [(f.input, f.kind) for f in findings] == [(0, "region")], findings
    assert findings[0].params["source"]["line"] == _line_of(cls, "(x > 0)")
