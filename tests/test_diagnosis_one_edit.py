"""Issue 17: the kind-agnostic search (``diagnosis/rewrites.py``) — one edit of backward's own
code (or of a helper in its file, or of what forward saves) that makes the gradient exact, found
by re-running it; each case a small Function of its own, on both backends.

The Functions' backwards use only tensor methods and module-level helpers (no closure), as a
user's file has them: a closure cannot be recompiled on its own and is left to the other rules.
"""
from __future__ import annotations

import inspect
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_diagnosis_cases import backend  # noqa: E402

from gradcli.check.diagnosis import diagnose, rewrites  # noqa: E402
from gradcli.check.gradcheck import gradcheck  # noqa: E402

BACKENDS = ["gradcli", "torch"]


def _findings(cls, args):
    report = gradcheck(cls.apply, args)
    assert not report.ok
    return diagnose(report, cls.apply, args)


def _line(obj, text):
    lines, first = inspect.getsourcelines(obj)
    return next(first + k for k, line in enumerate(lines) if text in line)


# ----- a sign inside a helper of the same file --------------------------------------------------
def _layer_norm_input_grad(g, xhat, rstd, gamma):
    n = xhat.shape[-1]
    dxhat = g * gamma
    inner = dxhat.sum(-1, keepdim=True)
    return rstd / n * (n * dxhat - inner + xhat * (dxhat * xhat).sum(-1, keepdim=True))


def layer_norm(B):
    class LayerNormByHelper(B.Function):
        @staticmethod
        def forward(ctx, x, gamma):
            mu = x.mean(-1, keepdim=True)
            var = ((x - mu) ** 2).mean(-1, keepdim=True)
            rstd = 1 / (var + 1e-5).sqrt()
            xhat = (x - mu) * rstd
            ctx.save_for_backward(xhat, rstd, gamma)
            return xhat * gamma

        @staticmethod
        def backward(ctx, g):
            xhat, rstd, gamma = ctx.saved_tensors
            return _layer_norm_input_grad(g, xhat, rstd, gamma), (g * xhat).sum(0)

    return LayerNormByHelper


@pytest.mark.parametrize("name", BACKENDS)
def test_the_sign_of_one_term_in_a_helper_is_found_and_quoted_there(name):
    B = backend(name)
    rng = np.random.default_rng(3)
    cls = layer_norm(B)
    findings = _findings(cls, (B.tensor(rng.standard_normal((3, 5))), B.tensor(rng.uniform(0.5, 1.5, 5))))
    assert [(f.input, f.kind) for f in findings] == [(0, "term_sign")], findings
    finding = findings[0]
    line = _line(_layer_norm_input_grad, "return rstd / n")
    assert finding.params["source"]["line"] == line
    assert finding.params["source"]["file"] == os.path.abspath(__file__)
    assert finding.params["term"] == "xhat * (dxhat * xhat).sum(-1, keepdim=True)"
    assert "flip the sign of `xhat * (dxhat * xhat).sum(-1, keepdim=True)`" in finding.hint
    assert f"test_diagnosis_one_edit.py:{line}" in finding.hint
    assert globals()["_layer_norm_input_grad"].__code__.co_filename == os.path.abspath(__file__)  # put back
    assert inspect.getsource(globals()["_layer_norm_input_grad"]).count("+ xhat") == 1


# ----- forward saves the wrong tensor ----------------------------------------------------------
def sigmoid_saving_input(B):
    class SigmoidSavesInput(B.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.sigmoid()
            ctx.save_for_backward(x)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y * (1 - y)

    return SigmoidSavesInput


@pytest.mark.parametrize("name", BACKENDS)
def test_forward_saving_its_input_where_backward_needs_its_output_is_quoted_where_backward_reads_it(name):
    B = backend(name)
    cls = sigmoid_saving_input(B)
    backward, forward = cls.__dict__["backward"], cls.__dict__["forward"]
    args = (B.tensor(np.random.default_rng(4).standard_normal((3, 4))),)
    # the formula rules name it first ("x where the output is needed"); the saved-tensor search,
    # tried after every other rule, says where the wrong tensor comes from
    assert [f.kind for f in _findings(cls, args)] == ["wrong_variable"]
    diag, ev = _diagnosis_and_evidence(cls, args)
    finding = rewrites.search(diag.probe, diag.cls, ev, diag.executed, 0, saves=True)
    assert finding.kind == "wrong_variable"
    assert (finding.params["used"], finding.params["needed"], finding.params["read_as"]) == ("x", "y", "y")
    assert finding.params["at_line"] == _line(cls, "return g * y * (1 - y)")
    assert finding.params["advice"] == "save y instead of x in forward (read as y here)"
    assert "which forward saves from `x` where `y` is needed" in finding.message
    assert cls.__dict__["backward"] is backward and cls.__dict__["forward"] is forward  # put back


def _diagnosis_and_evidence(cls, args):
    from gradcli.check.diagnosis import _Diagnosis

    diag = _Diagnosis(gradcheck(cls.apply, args), cls.apply, args)
    return diag, diag._evidence()[0]


# ----- a loop over time: one term's sign inside it ---------------------------------------------
def decayed_sum(B):
    class DecayedRunningSum(B.Function):
        """out[:, t] = sum_{s <= t} 0.5^(t - s) x[:, s] - 0.25 x[:, t]."""

        @staticmethod
        def forward(ctx, x):
            outs, running = [], x[:, 0] * 0
            for t in range(x.shape[1]):
                running = 0.5 * running + x[:, t]
                outs.append(running - 0.25 * x[:, t])
            ctx.steps = x.shape[1]
            return B.ns.stack(outs, 1)

        @staticmethod
        def backward(ctx, g):
            grads, carry = [], g[:, 0] * 0
            for t in reversed(range(ctx.steps)):
                carry = 0.5 * carry + g[:, t]
                grads.append(carry + 0.25 * g[:, t])
            return _stack_columns(grads[::-1])

    return DecayedRunningSum


def _stack_columns(rows):
    import gradcli

    ns = sys.modules["torch"] if type(rows[0]).__module__.startswith("torch") else gradcli
    return ns.stack(rows, 1)


@pytest.mark.parametrize("name", BACKENDS)
def test_a_sign_inside_a_loop_over_time_is_found_and_the_list_it_builds_is_never_given_to_itself(name):
    B = backend(name)
    cls = decayed_sum(B)
    findings = _findings(cls, (B.tensor(np.random.default_rng(5).standard_normal((2, 4))),))
    assert [(f.input, f.kind) for f in findings] == [(0, "term_sign")], findings
    assert findings[0].params["source"]["line"] == _line(cls, "grads.append(carry + 0.25 * g[:, t])")
    assert findings[0].params["term"] == "0.25 * g[:, t]"


# ----- the guards -------------------------------------------------------------------------------
def test_a_whole_gradient_off_by_a_factor_is_left_to_the_scale_rule():
    B = backend("gradcli")

    class Doubled(B.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x  # d(x²) = 2x: the factor is the whole gradient's, no term's

    findings = _findings(Doubled, (B.tensor(np.random.default_rng(6).standard_normal(5)),))
    assert [(f.kind, f.params.get("factor")) for f in findings] == [("scale", 0.5)]
    args = (B.tensor(np.random.default_rng(6).standard_normal(5)),)
    assert rewrites._proportional(_diagnosis_and_evidence(Doubled, args)[1])


def test_a_closure_backward_is_not_recompiled():
    B = backend("gradcli")
    factor = 3.0

    class Closure(B.Function):
        @staticmethod
        def forward(ctx, x):
            return x * factor

        @staticmethod
        def backward(ctx, g):
            return g * factor - g

    assert rewrites._method(Closure, "backward") is None
    assert rewrites._targets(Closure, None, 0) == []
