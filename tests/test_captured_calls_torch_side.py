"""bench/real_packages_gradcheck.py rebuilds an input set gradcli captured from the package's own caller
(gradcli/check/captured_calls.py) from its recipe: the same caller, called again with the recorded arguments, stopped
at Cls.apply; torch's gradcheck then runs at exactly those inputs. The package is this test's own."""
import copy
import importlib
import os
import sys

import pytest

torch = pytest.importorskip("torch")

from check_run import by_name, check_json  # noqa: E402
from test_captured_calls import OPS, package  # noqa: E402

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)
import real_packages_gradcheck as side  # noqa: E402


def test_a_captured_input_set_is_rebuilt_with_the_recorded_values(tmp_path, monkeypatch):
    root = package(tmp_path, "capside", {"ops.py": OPS})
    _, doc = check_json(tmp_path, f"{root / 'ops.py'}::Matmul", "--seed", "3")
    result = by_name(doc)["Matmul"]
    records = result["inputs"][0]
    monkeypatch.syspath_prepend(str(tmp_path))
    cls = importlib.import_module("capside.ops").Matmul
    job = {"module": "capside.ops", "class": "Matmul", "seed": doc["seed"]}
    args, why = side.rebuild(records, torch, job, cls)
    assert why == ""
    assert args[0] is importlib.import_module("capside.ops").DenseOp
    assert torch.equal(args[1].detach(), torch.tensor(records[1]["value"], dtype=torch.float64))
    assert torch.equal(args[2].detach(), torch.tensor(records[2]["value"], dtype=torch.float64))
    assert args[1].is_leaf and args[1].requires_grad and args[2].is_leaf and args[2].requires_grad
    assert "apply" not in vars(cls)   # put back after the capture
    assert torch.autograd.gradcheck(cls.apply, tuple(args))

    tampered = copy.deepcopy(records)
    for rec in tampered:   # the recipe's operator tensor no longer matches the recorded argument
        rec["captured"]["arguments"][0]["value"][0][0] += 1.0
    args, why = side.rebuild(tampered, torch, job, cls)
    assert args is None and why == "parts_0: the caller passed other values than gradcli recorded"
