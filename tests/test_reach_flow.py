"""Issue 13 (reach): what forward's source says through views, helpers, scalars and subscripts
(gradcli/check/infer_flow.py), on both backends, through `gradcli check` as a user runs it."""
import numpy as np
import pytest

from check_run import LIBS, by_name, check_json, need, write

FLOW = """
    import {lib} as torch


    def _masked_log(valid, pred):                # a helper of the same package: where() takes valid as the mask
        return torch.where(valid, pred, 0.0).exp()


    class PickRows(torch.autograd.Function):     # the gather index is a view of `which`
        @staticmethod
        def forward(ctx, x, which):
            index = which.clone()
            ctx.save_for_backward(index)
            ctx.shape = x.shape
            return torch.gather(x, 1, index.detach())

        @staticmethod
        def backward(ctx, g):
            (index,) = ctx.saved_tensors
            return torch.zeros(ctx.shape, dtype=g.dtype).scatter_add(1, index, g), None


    class PickRowsLosesRepeats(torch.autograd.Function):   # scatter, not scatter_add: repeated indices lose gradient
        @staticmethod
        def forward(ctx, x, which):
            index = which.clone()
            ctx.save_for_backward(index)
            ctx.shape = x.shape
            return torch.gather(x, 1, index.detach())

        @staticmethod
        def backward(ctx, g):
            (index,) = ctx.saved_tensors
            return torch.zeros(ctx.shape, dtype=g.dtype).scatter(1, index, g), None


    class MaskedExp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, pred, valid):
            out = _masked_log(valid, pred)
            ctx.save_for_backward(out, valid)
            return out

        @staticmethod
        def backward(ctx, g):
            out, valid = ctx.saved_tensors
            return torch.where(valid, g * out, 0.0), None


    class SqueezeAt(torch.autograd.Function):    # state_dim.item() is a dim: a one-element int64 tensor
        @staticmethod
        def forward(ctx, x, state_dim):
            ctx.dim = state_dim.item()
            return (x * 2.0).unsqueeze(ctx.dim).squeeze(state_dim.item())

        @staticmethod
        def backward(ctx, g):
            return g * 2.0, None


    class MaybeDouble(torch.autograd.Function):  # `if not skip:`: a bool, both values checked
        @staticmethod
        def forward(ctx, x, skip):
            ctx.skip = skip
            if not skip:
                return x * 2.0
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return (g * 1.0 if ctx.skip else g * 2.0), None


    class FirstN(torch.autograd.Function):       # args[:n]: n is an int
        @staticmethod
        def forward(ctx, n, x, y):
            ctx.n = n
            return tuple(a * 3.0 for a in (x, y)[:n])

        @staticmethod
        def backward(ctx, *grads):
            return (None,) + tuple(g * 3.0 for g in grads) + (None,) * (2 - ctx.n)


    class AtCoordinates(torch.autograd.Function):  # x[idx[0], idx[1]]: idx holds coordinates into x
        @staticmethod
        def forward(ctx, x, idx):
            ctx.save_for_backward(idx)
            ctx.shape = x.shape
            return x[idx[0], idx[1]] * 2.0

        @staticmethod
        def backward(ctx, g):
            (idx,) = ctx.saved_tensors
            out = torch.zeros(ctx.shape, dtype=g.dtype)
            for k in range(idx.shape[1]):       # repeated coordinates accumulate
                out[idx[0, k], idx[1, k]] = out[idx[0, k], idx[1, k]] + 2.0 * g[k]
            return out, None
"""

GRAD_DIM = """
    import torch


    def _grad_along(g, w, dim):                  # a helper: its dim is used as dim= (a projection, as sparsemax's)
        return g - g.mean(dim=dim, keepdim=True) * w.shape[dim] / w.shape[dim]


    class SavedDim(torch.autograd.Function):     # backward reads dim.item() off a saved tensor
        @staticmethod
        def forward(ctx, w, dim):
            ctx.save_for_backward(w, dim)
            return w * 1.0

        @staticmethod
        def backward(ctx, g):
            w, dim = ctx.saved_tensors
            return _grad_along(g, w, dim.item()), None
"""


@pytest.mark.parametrize("lib", LIBS)
def test_views_helpers_scalars_and_subscripts_give_the_inputs_forward_needs(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "flow.py", FLOW, lib)
    result, doc = check_json(tmp_path, path, "--no-exact")
    r = by_name(doc)
    specs = {name: [[rec["spec"] for rec in records] for records in r[name]["inputs"]] for name in r}
    assert r["PickRows"]["status"] == "pass", r["PickRows"]["message"]
    assert specs["PickRows"] == [["float64[3,4]@(-2,2)", "int64[3,4]@[0,3)"]]  # repeated indices in every row
    assert r["PickRows"]["inputs"][0][1]["inferred"] == "an index of gather()"
    # 4 indices per row drawn from 3 values repeat: the scatter bug cannot hide
    assert r["PickRowsLosesRepeats"]["status"] == "fail"
    assert r["MaskedExp"]["status"] == "pass", r["MaskedExp"]["message"]
    assert specs["MaskedExp"][0] == ["float64[3,4]@(-2,2)", "bool[3,4]"]
    assert r["MaskedExp"]["inputs"][0][1]["inferred"] == ("the mask of where() of _masked_log(), which forward "
                                                         "hands it to")
    assert r["SqueezeAt"]["status"] == "pass", r["SqueezeAt"]["message"]
    assert specs["SqueezeAt"] == [["float64[3,4]@(-2,2)", "int64[]@[0,1)"]]
    assert r["SqueezeAt"]["inputs"][0][1]["value"] == 0
    assert r["MaybeDouble"]["status"] == "pass"
    assert specs["MaybeDouble"] == [["float64[3,4]@(-2,2)", "false"], ["float64[3,4]@(-2,2)", "true"]]
    assert r["FirstN"]["status"] == "pass", r["FirstN"]["message"]
    assert specs["FirstN"][0][0] == "1" and r["FirstN"]["inputs"][0][0]["inferred"] == "used as a slice bound"
    assert r["AtCoordinates"]["status"] == "pass", r["AtCoordinates"]["message"]
    assert specs["AtCoordinates"] == [["float64[3,4]@(-2,2)", "int64[2,4]@[0,3)"]]
    idx = np.array(r["AtCoordinates"]["inputs"][0][1]["value"])
    assert idx.shape == (2, 4) and idx.min() >= 0 and idx.max() < 3
    assert result.exit_code == 1  # PickRowsLosesRepeats


def test_a_dim_read_off_a_saved_tensor_in_backward_is_an_int64_scalar(tmp_path):
    need("torch")
    path = write(tmp_path, "saved_dim.py", GRAD_DIM)
    result, doc = check_json(tmp_path, path)
    (r,) = doc["results"]
    assert [rec["spec"] for rec in r["inputs"][0]] == ["float64[3,4]@(-2,2)", "int64[]@[0,1)"]
    assert r["inputs"][0][1]["inferred"] == "its .item() is used as a dim"
    # forward is the identity, backward is not its derivative: a verdict, not an error at a float dim
    assert r["status"] == "fail" and result.exit_code == 1
    assert r["message"].startswith("values: w: ")


GATHER_ONE_PER_ROW = """
    import {lib} as torch


    class PickOne(torch.autograd.Function):      # backward assumes one index per row (a target per sample)
        @staticmethod
        def forward(ctx, x, target):
            ctx.save_for_backward(target)
            ctx.shape = x.shape
            return x.gather(1, target)

        @staticmethod
        def backward(ctx, g):
            (target,) = ctx.saved_tensors
            if target.shape[1] != 1:
                raise ValueError("one target per row")
            return torch.zeros(ctx.shape, dtype=g.dtype).scatter(1, target, g), None
"""


@pytest.mark.parametrize("lib", LIBS)
def test_a_gather_index_with_one_entry_per_row_is_tried_when_backward_refuses_repeats(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "one.py", GATHER_ONE_PER_ROW, lib)
    result, doc = check_json(tmp_path, path, "--no-exact")
    (r,) = doc["results"]
    assert r["status"] == "pass", r["message"]
    assert [rec["spec"] for rec in r["inputs"][0]] == ["float64[3,4]@(-2,2)", "int64[3,1]@[0,4)"]
    assert result.exit_code == 0
    # the specs as printed rebuild the same values
    _, again = check_json(tmp_path, path, "--no-exact", "--input", "x=float64[3,4]@(-2,2)",
                          "--input", "target=int64[3,1]@[0,4)")
    assert [rec["value"] for rec in again["results"][0]["inputs"][0]] == [rec["value"] for rec in r["inputs"][0]]


GUIDED = """
    import {lib} as torch


    def _inner(x, w):                            # two calls deep: gradcli's source reading does not get here
        b, c, h, width = x.shape
        taps = w.shape[3]
        return x * (w.sum() / taps)


    def _outer(x, w):
        return _inner(x, w)


    class Filter(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return _outer(x, w)

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            taps = w.shape[3]
            return g * (w.sum() / taps), w * 0.0 + (g * x).sum() / taps
"""


@pytest.mark.parametrize("lib", LIBS)
def test_forwards_errors_guide_the_shapes_round_by_round(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "guided.py", GUIDED, lib)
    result, doc = check_json(tmp_path, path, "--no-exact")
    (r,) = doc["results"]
    assert r["status"] == "pass", r["message"]
    # x from "not enough values to unpack (expected 4, got 2)"; w from "tuple index out of range", twice
    assert [rec["spec"] for rec in r["inputs"][0]] == ["float64[2,3,4,4]@(-2,2)", "float64[2,3,4,4]@(-2,2)"]
    assert r["inputs"][0][1]["inferred"] == "a shape forward's error asked for (tuple index out of range)"
    assert result.exit_code == 0


ODE_STEP = """
    import {lib} as torch


    class EulerStep(torch.autograd.Function):    # func(t, y) kept on ctx, called in forward and backward
        @staticmethod
        def forward(ctx, func, t, y):
            ctx.func = func
            ctx.save_for_backward(t, y)
            return y + 0.1 * func(t, y)

        @staticmethod
        def backward(ctx, g):
            t, y = ctx.saved_tensors
            f = ctx.func
            slope = 1.0 - f(t, y) * f(t, y)      # d tanh(y)/dy: right for gradcli's fn:tanh only
            return None, None, g * (1.0 + 0.1 * slope)


    class KeepsAFunction(torch.autograd.Function):  # only backward calls it
        @staticmethod
        def forward(ctx, rhs, y):
            ctx.rhs = rhs
            return y * 2.0

        @staticmethod
        def backward(ctx, g):
            rhs = ctx.rhs
            return None, g * 2.0 + 0.0 * rhs(g, g)
"""


@pytest.mark.parametrize("lib", LIBS)
def test_a_callable_of_two_arguments_gets_tanh_of_its_last(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "ode.py", ODE_STEP, lib)
    result, doc = check_json(tmp_path, path, "--no-exact")
    r = by_name(doc)
    assert r["EulerStep"]["status"] == "pass", r["EulerStep"]["message"]
    assert [rec["spec"] for rec in r["EulerStep"]["inputs"][0]][0] == "fn:tanh"
    assert r["KeepsAFunction"]["status"] == "pass", r["KeepsAFunction"]["message"]
    func = r["KeepsAFunction"]["inputs"][0][0]
    assert (func["spec"], func["inferred"]) == ("fn:tanh", "called in backward")
    assert result.exit_code == 0
