"""An extra argument whose parameters forward reads is a module (gradcli/check/module_arguments.py, specs/check.md §2).

A checkpointing Function takes a run function and, in ``*args``, the module it runs and that module's inputs;
forward asks the module for its parameters (``the_module = positional[0]; the_module.parameters()``, with
``positional`` unpacked from a helper called with ``args``). A float tensor there raised "'Tensor' object has no
attribute 'parameters'" at every shape tried (a SKIP); the module ``fn:identity`` reaches a verdict, the same as
torch.autograd.gradcheck's at the same inputs. The Functions here are this file's own."""
import shlex

import pytest

from check_run import by_name, check, check_json, write

CHECKPOINT = """
    from typing import Any, Tuple

    import torch


    def unpack(keys, flat):
        if not keys:
            return flat, {}
        return flat[:-len(keys)], dict(zip(keys, flat[-len(keys):]))


    SCALE = 1.0


    class Checkpoint(torch.autograd.Function):
        @staticmethod
        def forward(ctx, dummy: torch.Tensor, run_function: Any, kwarg_keys: Tuple[str, ...], *args: Any):
            ctx.run_function, ctx.kwarg_keys = run_function, kwarg_keys
            ctx.save_for_backward(*args[1:])
            ctx.module = args[0]
            with torch.no_grad():
                positional, kwargs = unpack(kwarg_keys, args)
                out = run_function(*positional, **kwargs)
                the_module = positional[0]
            ctx.needs = any(p.requires_grad for p in the_module.parameters())
            return out

        @staticmethod
        def backward(ctx, g):
            inputs = [t.detach().requires_grad_() for t in ctx.saved_tensors]
            with torch.enable_grad():
                positional, kwargs = unpack(ctx.kwarg_keys, (ctx.module,) + tuple(inputs))
                out = ctx.run_function(*positional, **kwargs)
            torch.autograd.backward(out, g)
            return (None, None, None, None) + tuple(SCALE * t.grad for t in inputs)
"""


def _records(result):
    return {r["name"]: r for r in result["inputs"][0]}


def _torch_verdict(path, x):
    """torch.autograd.gradcheck at gradcli's inputs: fn:tanh and fn:identity are torch.nn.Tanh / Identity
    applied to their last argument."""
    import importlib.util

    import torch

    from gradcli.check.backends import TorchBackend
    from gradcli.check.special_values import make_callable

    spec = importlib.util.spec_from_file_location(f"ckpt_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    be = TorchBackend()
    tanh, identity = make_callable(be, "tanh"), make_callable(be, "identity")
    assert isinstance(identity, torch.nn.Identity)
    dummy = torch.zeros(3, 4, dtype=torch.float64, requires_grad=True)
    x = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    return torch.autograd.gradcheck(lambda d, v: module.Checkpoint.apply(d, tanh, (), identity, v), (dummy, x),
                                    raise_exception=False)


def test_the_module_argument_is_a_module_and_the_check_passes(tmp_path):
    pytest.importorskip("torch")
    path = write(tmp_path, "ckpt.py", CHECKPOINT)
    outcome, doc = check_json(tmp_path, path)
    result = by_name(doc)["Checkpoint"]
    assert result["status"] == "pass", result["message"]
    records = _records(result)
    assert [(n, r["spec"]) for n, r in records.items()] == [
        ("dummy", "float64[3,4]@(-2,2)"), ("run_function", "fn:tanh"), ("kwarg_keys", "()"),
        ("args_0", "fn:identity"), ("args_1", "float64[3,4]@(-2,2)")]
    assert records["args_0"]["inferred"] == ("a module: forward calls positional[0].parameters() (fn:identity, "
                                             "a torch.nn.Identity without parameters)")
    assert records["kwarg_keys"]["inferred"] == "annotated Tuple[str, ...]: no names"
    values = {c["input"]: c["status"] for c in result["checks"][0]["checks"] if c["name"] == "values"}
    assert values == {0: "pass", 4: "pass"}
    assert _torch_verdict(path, [[0.1, -0.2, 0.3, 0.4]] * 3) is True
    assert outcome.exit_code == 0


def test_a_wrong_gradient_fails_as_torch_says(tmp_path):
    pytest.importorskip("torch")
    path = write(tmp_path, "ckpt.py", CHECKPOINT.replace("SCALE = 1.0", "SCALE = 1.5"))
    first = check(path)
    assert first.exit_code == 1 and "FAIL  Checkpoint" in first.output
    (line,) = [ln.strip() for ln in first.output.splitlines() if ln.strip().startswith("reproduce: ")]
    assert "--input 'kwarg_keys=()'" in line
    assert "--input args_0=fn:identity" in line
    again = check(*shlex.split(line[len("reproduce: gradcli check "):]))
    assert again.exit_code == 1 and "FAIL  Checkpoint" in again.output
    assert _torch_verdict(path, [[0.1, -0.2, 0.3, 0.4]] * 3) is False


def test_without_a_parameters_call_the_argument_stays_a_tensor(tmp_path):
    pytest.importorskip("torch")
    source = CHECKPOINT.replace("            ctx.needs = any(p.requires_grad for p in the_module.parameters())\n", "")
    path = write(tmp_path, "ckpt.py", source)
    _, doc = check_json(tmp_path, path)
    specs = [r["spec"] for r in by_name(doc)["Checkpoint"]["inputs"][0]] if by_name(doc)["Checkpoint"]["inputs"] \
        else []
    assert "fn:identity" not in specs


def test_the_evidence_read_from_the_source():
    import ast
    import textwrap
    from types import SimpleNamespace

    from gradcli.check import module_arguments
    from gradcli.check.infer import Hint

    def marked(source, names=("args_0", "args_1")):
        forward = ast.parse(textwrap.dedent(source)).body[0]
        hints = {n: Hint() for n in names}
        module_arguments.refine(SimpleNamespace(star_names=list(names), backend="torch"), forward, hints)
        return [n for n, h in hints.items() if h.kind == "callable" and h.stand_in == "identity"]

    assert marked("def forward(ctx, *args):\n    list(args[1].named_parameters())\n") == ["args_1"]
    assert marked("def forward(ctx, *a):\n    m = a\n    b = m[0]\n    b.buffers()\n") == ["args_0"]
    assert marked("def forward(ctx, *a):\n    p, k = f(a)\n    p[1].parameters()\n") == ["args_1"]
    assert marked("def forward(ctx, *a):\n    a[0].parameters(recurse=False)\n    a[1].sum()\n") == ["args_0"]
    assert marked("def forward(ctx, *a):\n    k, p = f(a)\n    p[0].parameters()\n") == []  # not the first
    assert marked("def forward(ctx, *a):\n    a[5].parameters()\n") == []  # no such extra argument
    assert marked("def forward(ctx, x, w):\n    x.parameters()\n") == []  # no *args
    engine = {n: Hint() for n in ("args_0",)}
    module_arguments.refine(SimpleNamespace(star_names=["args_0"], backend="gradcli"),
                            ast.parse("def forward(ctx, *a):\n    a[0].parameters()\n").body[0], engine)
    assert engine["args_0"].kind is None  # torch modules: the torch backend only
