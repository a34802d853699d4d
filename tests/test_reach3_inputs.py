"""Issue 13 (reach, "no option"): more of what forward's source and errors say about the inputs it needs —
numbers a parameter is compared with, sizes that must be 1, tensors forward refuses to see requiring grad,
negative definite matrices, the position a forward writes at, tensors backward needs as one number, conv
weights' in-channels, and a slow forward tried again at small sizes (CPU time, not wall time). Small
Functions of our own reproduce each pattern met in real packages; `gradcli check` runs as a user runs it."""
import numpy as np
import pytest

from check_run import LIBS, by_name, check_json, need, write

NUMBERS = """
    import math
    import {lib} as torch


    class Matern(torch.autograd.Function):       # nu is one of the numbers forward compares it with
        @staticmethod
        def forward(ctx, x, nu):
            d = x * math.sqrt(2 * nu)
            if nu == 0.5:
                out = torch.exp(-d)
            elif nu == 1.5:
                out = (1 + d) * torch.exp(-d)
            else:
                raise ValueError("nu must be 0.5 or 1.5")
            ctx.save_for_backward(x)
            ctx.nu = nu
            return out

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            c = math.sqrt(2 * ctx.nu)
            if ctx.nu == 0.5:
                return -c * torch.exp(-x * c) * g, None
            return -c * c * x * torch.exp(-x * c) * g, None


    class MaternWrongSecond(torch.autograd.Function):   # the nu == 1.5 branch forgets the linear term's factor
        @staticmethod
        def forward(ctx, x, nu):
            d = x * math.sqrt(2 * nu)
            if nu == 0.5:
                out = torch.exp(-d)
            elif nu == 1.5:
                out = (1 + d) * torch.exp(-d)
            else:
                raise ValueError("nu must be 0.5 or 1.5")
            ctx.save_for_backward(x)
            ctx.nu = nu
            return out

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            c = math.sqrt(2 * ctx.nu)
            if ctx.nu == 0.5:
                return -c * torch.exp(-x * c) * g, None
            return -c * x * torch.exp(-x * c) * g, None
"""


@pytest.mark.parametrize("lib", LIBS)
def test_a_number_forward_compares_a_parameter_with_is_tried_and_each_other_one_is_an_input_set(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "numbers.py", NUMBERS, lib)
    result, doc = check_json(tmp_path, path)
    r = by_name(doc)
    assert r["Matern"]["status"] == "pass"
    sets = r["Matern"]["inputs"]
    assert [s[1]["value"] for s in sets] == [0.5, 1.5]
    assert {(s[1]["type"], s[1]["spec"], s[1]["inferred"]) for s in sets} == {
        ("float", "0.5", "compared with numbers in forward"), ("float", "1.5", "compared with numbers in forward")}
    wrong = r["MaternWrongSecond"]
    assert wrong["status"] == "fail"
    assert wrong["message"].startswith("input set 2 of 2: values: x: ")  # nu=0.5 passes, nu=1.5 is wrong
    assert "--input nu=1.5" in result.output  # the reproduce line of the failing set


COVARIANCE = """
    import torch


    class Cov(torch.autograd.Function):          # gpytorch's covariance pattern: grads for lengthscale only
        @staticmethod
        def forward(ctx, x1, x2, lengthscale):
            if any(ctx.needs_input_grad[:2]):
                raise RuntimeError("Cov cannot compute gradients with respect to x1 and x2")
            if lengthscale.size(-1) > 1:
                raise ValueError("Cov cannot handle multiple lengthscales")
            d = (x1 - x2).div(lengthscale)
            out = torch.exp(-d * d)
            ctx.save_for_backward(d, out, lengthscale)
            return out

        @staticmethod
        def backward(ctx, g):
            d, out, lengthscale = ctx.saved_tensors
            return None, None, (g * out * 2 * d * d / lengthscale).sum(-1, keepdim=True)
"""


STAND_IN = """
    import torch


    class RBF(torch.autograd.Function):          # backward relies on pair_func being homogeneous of degree 2
        @staticmethod
        def forward(ctx, x1, x2, lengthscale, pair_func):
            if any(ctx.needs_input_grad[:2]):
                raise RuntimeError("RBF cannot compute gradients with respect to x1 and x2")
            d = pair_func(x1.div(lengthscale), x2.div(lengthscale))
            out = d.div(-2.0).exp()
            ctx.save_for_backward(d * out / lengthscale)
            return out

        @staticmethod
        def backward(ctx, g):
            (dl,) = ctx.saved_tensors
            return None, None, g * dl, None
"""


def test_no_verdict_rests_on_a_stand_in_callable_that_ignores_a_differentiable_input(tmp_path):
    need("torch")
    path = write(tmp_path, "rbf.py", STAND_IN)
    result, doc = check_json(tmp_path, path)
    (r,) = doc["results"]
    # a callable named like a distance gets the pairwise stand-in (test_stand_in_callables.py); another one
    # tanh of the last argument would drop x1 / lengthscale: the check would judge backward against tanh, a
    # function the package never passes (a false alarm); a skip saying what to give instead
    assert r["status"] == "skip"
    assert r["message"] == (
        "cannot build inputs automatically: forward calls pair_func with several arguments, and lengthscale "
        "reaches its output through one other than the last, which gradcli's stand-in (fn:tanh of the last "
        "argument) ignores: a verdict would be about the stand-in, not RBF. Give pair_func (a callable like "
        "the one the package passes) with an inputs file (--inputs-from FILE.py; specs/check.md §2a) or "
        "example_inputs()")


def test_tensors_forward_refuses_to_see_requiring_grad_are_nograd_and_a_size_it_caps_at_one_is_one(tmp_path):
    need("torch")
    path = write(tmp_path, "cov.py", COVARIANCE)
    result, doc = check_json(tmp_path, path)
    (r,) = doc["results"]
    assert r["status"] == "pass"
    x1, x2, scale = r["inputs"][0]
    assert (x1["spec"], x1["requires_grad"]) == ("nograd:float64[3,4]@(-2,2)", False)
    assert x1["inferred"] == "forward refuses it requiring grad (ctx.needs_input_grad)"
    assert x2["spec"] == "nograd:float64[3,4]@(-2,2)"
    assert (scale["spec"], scale["inferred"]) == ("float64[3,1]@(-2,2)", "shape satisfies forward's shape checks")


NEGATIVE = """
    import torch


    def safe_cholesky(A):                        # a package's wrapper: its name says cholesky
        return torch.linalg.cholesky(A)


    class FromNatural(torch.autograd.Function):  # a natural parameter: forward takes cholesky of -2 P
        @staticmethod
        def forward(ctx, P):
            L = safe_cholesky(-2.0 * P)
            return (L * L).sum()

        @staticmethod
        def backward(ctx, g):
            # sum(L*L) = trace(-2 P) as cholesky reads the lower triangle: d/dP = -2 I
            return -2.0 * g * torch.eye(4, dtype=g.dtype)
"""


def test_a_parameter_forward_takes_the_cholesky_of_minus_is_negative_definite(tmp_path):
    need("torch")
    path = write(tmp_path, "natural.py", NEGATIVE)
    result, doc = check_json(tmp_path, path)
    (r,) = doc["results"]
    assert r["status"] == "pass"
    (p,) = r["inputs"][0]
    assert (p["spec"], p["inferred"]) == ("float64[4,4]@nsd", "forward takes safe_cholesky() of minus it")
    value = np.array(p["value"])
    assert np.allclose(value, value.T) and np.linalg.eigvalsh(value).max() <= -0.5 + 1e-12


def test_nsd_parses_and_is_minus_a_positive_definite_draw():
    from gradcli.check.special_values import structured
    from gradcli.check.spec import SpecError, parse_spec

    spec = parse_spec("float64[2,3,3]@nsd")
    assert (spec.shape, spec.structure, spec.domain) == ((2, 3, 3), "nsd", (-2.0, 2.0))
    a = np.random.default_rng(0).uniform(-2, 2, size=(2, 3, 3))
    assert np.array_equal(structured(a, "nsd"), -structured(a, "spd"))
    assert np.linalg.eigvalsh(structured(a, "nsd")).max() <= -0.5 + 1e-12
    with pytest.raises(SpecError, match="square"):
        parse_spec("3x4@nsd")


WRITES = """
    import {lib} as torch


    class Assign(torch.autograd.Function):       # torchdiffeq's scratch-buffer pattern: out[index] = value
        @staticmethod
        def forward(ctx, scratch, value, index):
            ctx.index = index
            out = scratch.clone()
            out.data[index] = value
            return out

        @staticmethod
        def backward(ctx, g):
            grad_scratch = g.clone()
            grad_scratch[ctx.index] = 0.0
            return grad_scratch, g[ctx.index], None
"""


@pytest.mark.parametrize("lib", LIBS)
def test_the_position_forward_writes_at_is_an_int_and_the_value_a_tensor_that_fits_there(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "writes.py", WRITES, lib)
    result, doc = check_json(tmp_path, path)
    (r,) = doc["results"]
    assert r["status"] == "pass", r["message"]
    scratch, value, index = r["inputs"][0]
    assert scratch["spec"] == "float64[3,4]@(-2,2)"
    assert value["spec"] == "float64[4]@(-2,2)"  # one row of scratch
    assert (index["type"], index["value"], index["inferred"]) == ("int", 1, "the position written in scratch[...]")


SINGLE = """
    import torch
    from torch.autograd.functional import vjp


    class Reroute(torch.autograd.Function):      # backward takes vjp of a callable with no cotangent: one number
        @staticmethod
        def forward(ctx, event_fn, t):
            ctx.event_fn = event_fn
            ctx.save_for_backward(t)
            return 3.0 * t

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            with torch.enable_grad():
                _, (dt,) = vjp(ctx.event_fn, (t.detach(),))
            return None, 3.0 * g + 0.0 * dt
"""


def test_a_tensor_backward_needs_as_one_number_is_made_0d(tmp_path):
    need("torch")
    path = write(tmp_path, "single.py", SINGLE)
    result, doc = check_json(tmp_path, path)
    (r,) = doc["results"]
    assert r["status"] == "pass", r["message"]
    fn, t = r["inputs"][0]
    assert fn["spec"] == "fn:tanh"
    assert t["spec"] == "float64[]@(-2,2)"
    assert t["inferred"].startswith("a shape backward's error asked for (RuntimeError: The vector v can only be None if")


CONV = """
    import torch
    import torch.nn.functional as F


    class DepthwiseFilter(torch.autograd.Function):   # one filter per channel: h.repeat(c, 1, 1, 1), groups=c
        @staticmethod
        def forward(ctx, x, h):
            assert h.dim() == 4
            b, c, rows, cols = x.shape
            ctx.save_for_backward(x, h)
            return F.conv2d(x, h.repeat(c, 1, 1, 1), groups=c, padding=1)

        @staticmethod
        def backward(ctx, g):
            x, h = ctx.saved_tensors
            with torch.enable_grad():
                x, h = x.detach().requires_grad_(), h.detach().requires_grad_()
                out = F.conv2d(x, h.repeat(x.shape[1], 1, 1, 1), groups=x.shape[1], padding=1)
                return torch.autograd.grad(out, (x, h), g)
"""


def test_a_conv_weight_gets_the_in_channels_per_group_the_error_asks_for(tmp_path):
    need("torch")
    path = write(tmp_path, "conv.py", CONV)
    result, doc = check_json(tmp_path, path)
    (r,) = doc["results"]
    assert r["status"] == "pass", r["message"]
    x, h = r["inputs"][0]
    assert x["spec"] == "float64[2,3,4,4]@(-2,2)"  # b, c, rows, cols = x.shape: 4 dims
    assert h["spec"] == "float64[2,1,4,4]@(-2,2)"
    assert h["inferred"] == "a shape forward's error asked for (a conv weight with 1 in-channel(s) per group)"


SLOW_PER_ELEMENT = """
    import time
    import {lib} as torch


    class Solver(torch.autograd.Function):       # CPU time grows with the input's size (an iterative solver)
        @staticmethod
        def forward(ctx, x):
            started = time.process_time()
            while time.process_time() - started < 0.006 * x.numel():
                pass
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 2.0
"""


@pytest.mark.parametrize("lib", LIBS)
def test_a_forward_too_slow_at_3x4_is_checked_at_2x2(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "solver.py", SLOW_PER_ELEMENT, lib)
    # CPU seconds, whatever the load: at 3x4, 0.072 s a call x 60 calls > 30 s / 16; at 2x2, 0.024 x 20 is not
    result, doc = check_json(tmp_path, path, "--timeout", "30")
    (r,) = doc["results"]
    assert r["status"] == "pass", r["message"]
    (x,) = r["inputs"][0]
    assert x["spec"] == "float64[2,2]@(-2,2)"
    assert x["inferred"] == "a shape forward accepts; small, as forward is slow at 3x4"


def test_the_slow_bound_reads_the_process_cpu_clock(monkeypatch):
    """The bound compares CPU seconds (trials.cpu_seconds), so a clock that advances 1 s per forward call
    stands for a slow forward on any machine, and one that does not for a fast one."""
    pytest.importorskip("numpy")
    import gradcli
    from gradcli.check import trials
    from gradcli.check.backends import GradcliBackend
    from gradcli.check.inputs import Case

    class Double(gradcli.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 2.0

    class Target:
        name, timeout = "Double", 60
        fn = staticmethod(Double.apply)

    be = GradcliBackend()
    x = gradcli.tensor(np.ones((3, 4)), requires_grad=True)
    case = Case([x], [{"name": "x", "source": "auto", "spec": "float64[3,4]@(-2,2)"}], [])
    ticks = iter(range(1000))
    monkeypatch.setattr(trials, "cpu_seconds", lambda: float(next(ticks)))  # each reading 1 s later
    assert trials.check_cost(be, Target, case) == (1.0, 60)
    assert trials.too_slow(be, Target, case) == ("forward takes 1 s of CPU a call at the inputs gradcli built "
                                                 "(--input 'x=float64[3,4]@(-2,2)'): a numeric check there "
                                                 "needs about 60 calls (~60 s)")
    monkeypatch.setattr(trials, "cpu_seconds", lambda: 0.0)
    assert trials.too_slow(be, Target, case) is None
    ticks = iter(x * 0.009 for x in range(1000))  # 9 ms a call: never the slow part, whatever the timeout
    monkeypatch.setattr(trials, "cpu_seconds", lambda: next(ticks))
    Target.timeout = 0.1
    assert trials.too_slow(be, Target, case) is None


UNPACKED = """
    import {lib} as torch


    class ControlVariate(torch.autograd.Function):   # pyro's pattern: B, C = control_var in backward
        @staticmethod
        def forward(ctx, loc, control_var):
            ctx.save_for_backward(control_var)
            return loc * 2.0

        @staticmethod
        def backward(ctx, g):
            (control_var,) = ctx.saved_tensors
            B, C = control_var
            return 2.0 * g + 0.0 * (B * C).sum(), None
"""


@pytest.mark.parametrize("lib", LIBS)
def test_a_tensor_backward_unpacks_into_two_stacks_two_along_its_first_dim(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "unpacked.py", UNPACKED, lib)
    result, doc = check_json(tmp_path, path)
    (r,) = doc["results"]
    assert r["status"] == "pass", r["message"]
    loc, control = r["inputs"][0]
    assert loc["spec"] == "float64[3,4]@(-2,2)"
    assert (control["spec"], control["inferred"]) == ("float64[2,3,4]@(-2,2)", "unpacked into 2 along its first dim")
