"""Issue 13 (reach): forwards that need more than their arguments (gradcli/check/environment.py) —
torch.distributed's default group (checked in a single-process group, and said so), an environment the
package sets up itself, an object where gradcli built a tensor, a forward too slow to check in --timeout.
Each is a verdict or a skip naming what to supply, never an error of gradcli's making."""
import pytest

from check_run import LIBS, by_name, check_json, need, write

DISTRIBUTED = """
    import torch
    import torch.distributed as dist


    class AllGather(torch.autograd.Function):    # lightly's GatherLayer pattern
        @staticmethod
        def forward(ctx, x):
            out = [torch.empty_like(x) for _ in range(dist.get_world_size())]
            dist.all_gather(out, x)
            return tuple(out)

        @staticmethod
        def backward(ctx, *grads):
            total = torch.stack(grads)
            dist.all_reduce(total)
            return total[dist.get_rank()]


    class AllGatherTwice(torch.autograd.Function):   # a wrong backward is still found at world size 1
        @staticmethod
        def forward(ctx, x):
            out = [torch.empty_like(x) for _ in range(dist.get_world_size())]
            dist.all_gather(out, x)
            return tuple(out)

        @staticmethod
        def backward(ctx, *grads):
            total = torch.stack(grads)
            dist.all_reduce(total)
            return 2 * total[dist.get_rank()]
"""


def test_a_forward_needing_the_default_process_group_runs_in_a_single_process_group(tmp_path):
    need("torch")
    path = write(tmp_path, "dist_ops.py", DISTRIBUTED)
    result, doc = check_json(tmp_path, path)
    r = by_name(doc)
    assert r["AllGather"]["status"] == "pass" and r["AllGather"]["partial"] is True
    assert r["AllGather"]["not_checked"] == [{
        "input": "torch.distributed", "input_set": None, "partial": True,
        "reason": "forward needs torch.distributed's default process group: checked in a single-process gloo "
                  "group (world size 1, rank 0), so nothing was exchanged between ranks"}]
    assert "PASS (partial: torch.distributed not checked) AllGather:" in result.output
    assert r["AllGatherTwice"]["status"] == "fail"
    assert r["AllGatherTwice"]["message"].startswith("values: x: 12 of 12 elements wrong")
    assert result.exit_code == 1


ENVIRONMENT = """
    import {lib} as torch

    _GROUP = None


    def get_group():
        assert _GROUP is not None, "model parallel group is not initialized"
        return _GROUP


    class ReduceOverGroup(torch.autograd.Function):     # forward needs the package's own group
        @staticmethod
        def forward(ctx, logits, target):
            get_group()
            return logits * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 2.0, None


    class CopyToGroup(torch.autograd.Function):         # only backward needs it
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            get_group()
            return g


    class RunsAModel(torch.autograd.Function):          # an object the package builds, not a tensor
        @staticmethod
        def forward(ctx, inputs, model_instance: "OffloadModel"):
            out = inputs
            for layer in model_instance.model_slices:
                out = layer(out)
            return out * 1.0

        @staticmethod
        def backward(ctx, g):
            return g, None
"""


@pytest.mark.parametrize("lib", LIBS)
def test_an_environment_or_object_gradcli_cannot_build_is_a_skip_naming_it(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "env_ops.py", ENVIRONMENT, lib)
    result, doc = check_json(tmp_path, path)
    r = by_name(doc)
    assert {name: x["status"] for name, x in r.items()} == {"ReduceOverGroup": "skip", "CopyToGroup": "skip",
                                                             "RunsAModel": "skip"}
    assert r["ReduceOverGroup"]["message"] == (
        "forward needs an environment gradcli cannot set up (AssertionError: model parallel group is not "
        "initialized): not checked. Set it up in an inputs file whose entry for ReduceOverGroup initializes it "
        "and returns the inputs (--inputs-from FILE.py with def ReduceOverGroup(): ...; specs/check.md §2a)")
    assert r["CopyToGroup"]["message"].startswith(
        "backward needs an environment gradcli cannot set up (AssertionError: model parallel group is not "
        "initialized): not checked.")
    assert r["RunsAModel"]["message"].startswith(
        "forward uses .model_slices of model_instance (annotated OffloadModel), which the Tensor gradcli built "
        "there does not have: it takes an object the package builds, not a Tensor (or forward has a bug). Give "
        "it with an inputs file (--inputs-from FILE.py, def RunsAModel(): return the arguments;")
    assert result.exit_code == 0  # skips only: nothing of gradcli's making is an error


INPUTS_FILE = """
    import {lib} as torch
    import env_ops


    class Model:
        model_slices = [lambda t: t * 3.0]


    def RunsAModel():
        return torch.ones(2, 3, requires_grad=True), Model()
"""


@pytest.mark.parametrize("lib", LIBS)
def test_the_skip_for_an_object_parameter_says_what_works_an_inputs_file(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "env_ops.py", ENVIRONMENT, lib)
    inputs = write(tmp_path, "my_inputs.py", INPUTS_FILE, lib)
    result, doc = check_json(tmp_path, f"{path}::RunsAModel", "--inputs-from", inputs)
    (r,) = doc["results"]
    assert r["status"] == "fail"  # backward returns g for a forward that triples: the advice led to a verdict
    assert r["message"].startswith("values: inputs: 6 of 6 elements wrong")


SLOW = """
    import time
    import {lib} as torch


    class Solver(torch.autograd.Function):      # an iterative solver running to its iteration limit
        @staticmethod
        def forward(ctx, x):
            started = time.process_time()
            while time.process_time() - started < 0.3:  # 0.3 s of CPU a call, however busy the machine
                pass
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 2.0
"""


@pytest.mark.parametrize("lib", LIBS)
def test_a_forward_too_slow_to_check_within_the_timeout_is_a_skip_saying_so(tmp_path, lib):
    need(lib)
    path = write(tmp_path, "slow.py", SLOW, lib)
    # 12 elements x 5 evaluations x at least 0.3 s of CPU each is more than 40 s / 16, on any machine; so is 2x2
    # (the search's few calls stay well inside --timeout, which the runner counts in wall time, on a busy machine)
    result, doc = check_json(tmp_path, path, "--timeout", "40")
    (r,) = doc["results"]
    assert r["status"] == "skip"
    assert r["message"].startswith("forward takes ")
    assert ("s of CPU a call at the inputs gradcli built (--input 'x=float64[3,4]@(-2,2)'): a numeric check there "
            "needs about 60 calls") in r["message"]
    assert ("s of CPU a call at the inputs gradcli built (--input 'x=float64[2,2]@(-2,2)'): a numeric check there "
            "needs about 20 calls") in r["message"]  # the smaller inputs tried next
    assert r["message"].endswith("more than 0.0625 of --timeout 40 s, which leaves room for the rest of the check: "
                                 "not checked. Raise --timeout, or give smaller inputs with --input NAME=SPEC")


FACTORY = """
    import torch


    class FromFactory(torch.autograd.Function):  # make builds an operator: tanh, tried, is not one
        @staticmethod
        def forward(ctx, make, x):
            op = make(x.shape[0], x.shape[1])
            return op.matmul(x)

        @staticmethod
        def backward(ctx, g):
            return None, g
"""


def test_the_skip_for_a_callable_does_not_suggest_the_one_tried(tmp_path):
    need("torch")
    path = write(tmp_path, "factory.py", FACTORY)
    result, doc = check_json(tmp_path, path)
    (r,) = doc["results"]
    assert r["status"] == "skip"
    # the line that raised uses make and x: both are named, make with what can work for it
    assert r["message"].endswith(
        "Give --input x=3x4 and make (a callable other than the fn:tanh tried) with an inputs file (--inputs-from "
        "FILE.py) (SPEC grammar: specs/check.md), or add a staticmethod example_inputs() to FromFactory returning "
        "(make, x)")
    assert "make=fn:tanh" not in r["message"]
