"""Issue 13 (reach): inputs the package's own caller builds (gradcli/check/captured_calls.py, apply_callers.py,
package_objects.py). A Function whose forward takes a package-built object (an operator's rebuild function and the
tensors it is made of, a wrapped function with its parameters, an option dict) gets no automatic input set; the
package code that calls ``Cls.apply`` is called instead, with inputs gradcli builds, and what it passes is checked.
Small packages of our own reproduce the patterns (an operator class whose method calls the Function, a function
taking a callable and a parameter list, a mode the Function dispatches on)."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from check_run import by_name, check_json

OPS = """
    import torch


    class Operator:
        '''A matrix-like object: subclasses say what they are made of.'''
        def parts(self):
            raise NotImplementedError

        def rebuilder(self):
            return type(self)

        def matmul(self, rhs):
            return Matmul.apply(self.rebuilder(), rhs, *self.parts())

        def quad(self, rhs, reduce=False):
            func = InvQuadTwice.apply          # through a local alias, as linear_operator does
            out = func(self.rebuilder(), rhs, *self.parts())
            return out.sum() if reduce else out


    class DenseOp(Operator):
        def __init__(self, tensor):
            self.tensor = tensor
            self.shape = tensor.shape

        def parts(self):
            return (self.tensor,)


    class BatchOp(Operator):                 # built from a tensor, but not shaped like it: not a wrapper
        def __init__(self, tensor):
            self.tensor = tensor
            self.shape = (2, *tensor.shape)

        def parts(self):
            return (self.tensor,)


    class Matmul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, rebuild, rhs, *parts):
            op = rebuild(*parts)
            ctx.save_for_backward(rhs, *parts)
            return op.tensor @ rhs

        @staticmethod
        def backward(ctx, grad):
            rhs, matrix = ctx.saved_tensors
            return None, matrix.t() @ grad, grad @ rhs.t()


    class InvQuadTwice(torch.autograd.Function):   # rhs' A^-1 rhs, its matrix gradient off by a factor 2
        @staticmethod
        def forward(ctx, rebuild, rhs, *parts):
            op = rebuild(*parts)
            solves = torch.linalg.solve(op.tensor, rhs)
            ctx.save_for_backward(solves, rhs)
            return (solves * rhs).sum(-2)

        @staticmethod
        def backward(ctx, grad):
            solves, rhs = ctx.saved_tensors
            g = grad.unsqueeze(-2)
            return None, 2 * solves * g, -2 * (solves * g) @ solves.t()
"""

INTEGRATE = """
    import torch

    NODES = (-0.5773502691896257, 0.5773502691896257)   # two-point Gauss-Legendre on [-1, 1]


    class Wrapped:
        def __init__(self, fcn):
            self.fcn = fcn

        def __call__(self, *args):
            return self.fcn(*args)


    def integrate(fcn, lo, hi, params=[], method=None):
        '''The package's entry point: wraps the callable, picks a rule, calls the Function.'''
        if torch.numel(lo) != 1:
            raise ValueError("lo must have one element")
        if not isinstance(fcn(lo, *params), torch.Tensor):
            raise TypeError("fcn must return a tensor")
        if method == "analytic":
            raise NotImplementedError
        return Integral.apply(Wrapped(fcn), lo, hi, {"method": method or "gauss"}, len(params), *params)


    def _rule(fcn, lo, hi, params):
        mid, half = (lo + hi) / 2, (hi - lo) / 2
        return half * sum(fcn(mid + half * t, *params) for t in NODES)


    class Integral(torch.autograd.Function):
        @staticmethod
        def forward(ctx, fcn, lo, hi, options, nparams, *params):
            rules = {"gauss": _rule}
            rule = rules[options.pop("method")]
            ctx.fcn, ctx.rule, ctx.nparams = fcn, rule, nparams
            ctx.save_for_backward(lo, hi, *params)
            return rule(fcn, lo, hi, params)

        @staticmethod
        def backward(ctx, grad):
            params = ctx.saved_tensors[-ctx.nparams:]      # as xitorch's quad: wrong with no parameters
            lo, hi = ctx.saved_tensors[:-ctx.nparams]
            with torch.enable_grad():
                lo_, hi_ = lo.detach().requires_grad_(), hi.detach().requires_grad_()
                ps = [p.detach().requires_grad_() for p in params]
                out = ctx.rule(ctx.fcn, lo_, hi_, ps)
                grads = torch.autograd.grad(out, [lo_, hi_, *ps], grad)
            return (None, grads[0], grads[1], None, None, *grads[2:])
"""

LONELY = """
    import torch


    class Opaque(torch.autograd.Function):    # nobody in the package calls it
        @staticmethod
        def forward(ctx, rebuild, rhs, *parts):
            return rebuild(*parts).tensor @ rhs

        @staticmethod
        def backward(ctx, grad):
            return None, grad, grad
"""


def package(tmp_path, name, files):
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text("")
    for file, source in files.items():
        (root / file).write_text(textwrap.dedent(source))
    (root / "tests").mkdir()   # a test's call is not the package's: never read
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "use.py").write_text(f"from {name}.ops import Matmul\nMatmul.apply(None, None)\n")
    return root


def test_an_operator_method_that_calls_the_function_builds_its_inputs(tmp_path):
    pytest.importorskip("torch")
    root = package(tmp_path, "capops_a", {"ops.py": OPS})
    result, doc = check_json(tmp_path, f"{root / 'ops.py'}::Matmul", f"{root / 'ops.py'}::InvQuadTwice")
    r = by_name(doc)
    assert r["Matmul"]["status"] == "pass"
    records = r["Matmul"]["inputs"][0]
    assert [(x["name"], x["source"]) for x in records] == [
        ("rebuild", "captured"), ("rhs", "captured"), ("parts_0", "captured")]
    assert [x.get("shape") for x in records] == [None, [4, 2], [4, 4]]
    assert records[1]["requires_grad"] and records[2]["requires_grad"]
    assert records[0]["inferred"].startswith(
        "what the package's Operator.matmul(self=DenseOp(float64[4,4]@spd), rhs=float64[4,2]@(-2,2)) passes "
        "Matmul.apply (")
    recipe = records[2]["captured"]
    assert (recipe["module"], recipe["qualname"], recipe["position"]) == ("capops_a.ops", "Operator.matmul", 2)
    assert recipe["arguments"][0]["class"] == "capops_a.ops.DenseOp"   # not BatchOp: not shaped like its tensor
    assert recipe["arguments"][0]["value"] == records[2]["value"]       # the operator is made of the checked tensor
    # the wrong factor is found, at what the package's alias call passes
    assert r["InvQuadTwice"]["status"] == "fail"
    assert r["InvQuadTwice"]["message"].startswith("values: parts_0: 16 of 16 elements wrong")
    assert "captured: what the package's Operator.quad(self=DenseOp(float64[4,4]@spd), rhs=float64[4,2]@(-2,2))" \
        in result.output
    line = next(l for l in result.output.splitlines() if "reproduce:" in l)
    assert "--input" not in line   # the same --seed builds them again
    assert "parts_0 = float64[4,4] (captured)" in result.output and "rebuild = a type (captured)" in result.output


def test_the_reproduce_line_builds_the_same_captured_inputs(tmp_path):
    pytest.importorskip("torch")
    root = package(tmp_path, "capops_b", {"ops.py": OPS})
    docs = []
    for _ in range(2):   # two processes, as the printed line runs again
        out = tmp_path / f"r{len(docs)}.json"
        subprocess.run([sys.executable, "-m", "gradcli", "check", f"{root / 'ops.py'}::InvQuadTwice", "--seed", "7",
                        "--format", "plain", "--json", str(out)], capture_output=True, text=True, cwd=tmp_path)
        docs.append(json.loads(out.read_text()))
    first, again = (d["results"][0] for d in docs)
    assert first["status"] == again["status"] == "fail"
    assert [x.get("value") for x in first["inputs"][0][1:]] == [x.get("value") for x in again["inputs"][0][1:]]
    other = tmp_path / "seed8.json"
    subprocess.run([sys.executable, "-m", "gradcli", "check", f"{root / 'ops.py'}::InvQuadTwice", "--seed", "8",
                    "--format", "plain", "--json", str(other)], capture_output=True, text=True, cwd=tmp_path)
    assert json.loads(other.read_text())["results"][0]["inputs"][0][1]["value"] != first["inputs"][0][1]["value"]


def test_a_function_taking_a_callable_and_a_parameter_list_is_reached_through_it(tmp_path):
    pytest.importorskip("torch")
    root = package(tmp_path, "capint", {"quad.py": INTEGRATE})
    result, doc = check_json(tmp_path, f"{root / 'quad.py'}::Integral")
    r = by_name(doc)["Integral"]
    assert r["status"] == "pass", r["message"]
    records = r["inputs"][0]
    assert [x["name"] for x in records] == ["fcn", "lo", "hi", "options", "nparams", "params_0"]
    assert [x.get("shape") for x in records[1:3]] == [[], []]   # lo must have one element: 4x2 was refused
    assert records[3]["value"] == "{'method': 'gauss'}" and records[4]["value"] == 1
    assert records[0]["inferred"].startswith(
        "what the package's integrate(fcn=tanh of the sum of its arguments, lo=float64[]@(-2,2), hi=float64[]@(-2,2), "
        "params=[float64[]@(-2,2)]) passes Integral.apply")


def test_a_mode_the_caller_compares_also_takes_the_names_forward_dispatches_on(tmp_path):
    pytest.importorskip("torch")
    source = INTEGRATE.replace('{"method": method or "gauss"}', '{"method": method}').replace(
        'if method == "analytic":', 'if method is None or method == "analytic":')
    root = package(tmp_path, "capmode", {"quad.py": source})
    _, doc = check_json(tmp_path, f"{root / 'quad.py'}::Integral")
    r = by_name(doc)["Integral"]
    assert r["status"] == "pass", r["message"]
    assert "method='gauss'" in r["inputs"][0][0]["inferred"]   # "analytic" raises; "gauss" is forward's rule name


def test_a_function_nobody_in_its_package_calls_is_still_a_skip(tmp_path):
    pytest.importorskip("torch")
    root = package(tmp_path, "caplone", {"ops.py": LONELY})
    _, doc = check_json(tmp_path, f"{root / 'ops.py'}::Opaque")
    r = by_name(doc)["Opaque"]
    assert r["status"] == "skip"
    assert "forward takes *parts" in r["message"]


def test_a_script_outside_a_package_is_not_reached_through_callers(tmp_path):
    pytest.importorskip("torch")
    path = tmp_path / "loose_ops.py"
    path.write_text(textwrap.dedent(OPS))
    _, doc = check_json(tmp_path, f"{path}::Matmul")
    assert by_name(doc)["Matmul"]["status"] == "skip"


def test_given_inputs_are_never_replaced_by_captured_ones(tmp_path):
    pytest.importorskip("torch")
    root = package(tmp_path, "capops_c", {"ops.py": OPS})
    _, doc = check_json(tmp_path, f"{root / 'ops.py'}::Matmul", "--input", "rhs=4x2")
    r = by_name(doc)["Matmul"]
    assert r["status"] == "skip" and "captured" not in json.dumps(r)


OUTER = """
    from typing import Callable

    import torch


    def _impl(fcn, x, options):
        '''Private: its options must be a dict, which only the public function below passes.'''
        return Scaled.apply(fcn, x, dict(options))


    def run(fcn: Callable, x):
        return _impl(fcn, x, {"scale": 2.0})


    class Scaled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, fcn, x, options):
            scale = options.get("scale", 1.0)
            ctx.save_for_backward(x)
            ctx.fcn, ctx.scale = fcn, scale
            return scale * fcn(x)

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            with torch.enable_grad():
                x_ = x.detach().requires_grad_()
                g, = torch.autograd.grad(ctx.fcn(x_), x_, grad)
            return None, ctx.scale * g, None
"""


def test_a_public_function_calling_the_private_caller_is_tried_one_level_up(tmp_path):
    pytest.importorskip("torch")
    root = package(tmp_path, "capouter", {"scaled.py": OUTER})
    _, doc = check_json(tmp_path, f"{root / 'scaled.py'}::Scaled")
    r = by_name(doc)["Scaled"]
    assert r["status"] == "pass", r["message"]
    records = r["inputs"][0]
    assert records[0]["captured"]["qualname"] == "run" and records[2]["value"] == "{'scale': 2.0}"
    assert records[0]["inferred"].startswith(
        "what the package's run(fcn=tanh of the sum of its arguments, x=float64[4,2]@(-2,2)) passes Scaled.apply (")


MODULE = """
    import torch


    class Smoother(torch.nn.Module):
        # its filter is a float32 buffer, as a module's are made: gradcli makes the module float64
        def __init__(self, width=8):
            super().__init__()
            self.register_buffer("h", torch.linspace(0.5, 1.5, width))

        def forward(self, x):
            return Smooth.apply(x, self)


    class Smooth(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, smoother):
            if x.dim() != 4:
                raise ValueError("expected N x C x H x W")
            ctx.h = smoother.h
            return x @ smoother.h            # the same dtype on both sides, or matmul raises

        @staticmethod
        def backward(ctx, grad):
            return grad.unsqueeze(-1) * ctx.h, None
"""


def test_a_module_built_with_its_defaults_is_made_float64_and_its_forward_reached(tmp_path):
    pytest.importorskip("torch")
    root = package(tmp_path, "capmod", {"smooth.py": MODULE})
    result, doc = check_json(tmp_path, f"{root / 'smooth.py'}::Smooth")
    r = by_name(doc)["Smooth"]
    assert r["status"] == "pass", r["message"]
    x, smoother = r["inputs"][0]
    assert x["shape"] == [1, 1, 8, 8] and x["requires_grad"] and smoother["type"] == "Smoother"
    assert x["inferred"].startswith(
        "what the package's Smoother.forward(self=Smoother().double(), x=float64[1,1,8,8]@(-2,2)) passes Smooth.apply")
    assert x["captured"]["arguments"][0] == {"name": "self", "class": "capmod.smooth.Smoother", "from_tensor": False}
