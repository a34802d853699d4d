"""Two kinds of torch Functions the runner met in real packages and could not check (help corpus): a
checkpointing Function that refuses ``torch.autograd.grad`` ("Checkpointing is not compatible with .grad(),
please use .backward()": fairscale's CheckpointFunction, memcnn's InvertibleCheckpointFunction) is checked
through ``.backward()``; a forward that frees its input's storage (torch_geometric's reversible layers) runs
on leaves with torch's own, resizable storage."""
import json

import pytest
from click.testing import CliRunner

from gradcli.cli import main

pytest.importorskip("torch")

SOURCE = """import torch
from torch.utils.checkpoint import checkpoint


class Checkpointed(torch.autograd.Function):
    '''forward under no_grad, backward re-runs it with grad and calls torch.autograd.backward (reentrant checkpointing).'''
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        with torch.no_grad():
            return torch.tanh(x @ w)

    @staticmethod
    def backward(ctx, g):
        if not torch.autograd._is_checkpoint_valid():
            raise RuntimeError("Checkpointing is not compatible with .grad(), please use .backward() if possible")
        x, w = [t.detach().requires_grad_(True) for t in ctx.saved_tensors]
        with torch.enable_grad():
            y = torch.tanh(x @ w)
        torch.autograd.backward(y, g)
        return x.grad, w.grad


class FreesItsInput(torch.autograd.Function):
    '''a reversible layer: the output is kept, the input's storage freed (rebuilt from the output in backward)'''
    @staticmethod
    def forward(ctx, x):
        y = 2 * x + 1
        x.untyped_storage().resize_(0)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        return 2 * g


class CheckpointedTwiceTooLarge(Checkpointed):
    @staticmethod
    def backward(ctx, g):
        gx, gw = Checkpointed.backward(ctx, g)
        return gx, 2 * gw
"""


def test_checkpointing_and_storage_freeing_functions_get_verdicts(tmp_path):
    (tmp_path / "ckpt.py").write_text(SOURCE)
    report = tmp_path / "report.json"
    outcome = CliRunner().invoke(main, ["check", str(tmp_path / "ckpt.py"), "--format", "plain", "--json", str(report)])
    assert outcome.exit_code == 1, outcome.output
    statuses = {r["function"]: r["status"] for r in json.loads(report.read_text())["results"]}
    assert statuses == {"Checkpointed": "pass", "FreesItsInput": "pass", "CheckpointedTwiceTooLarge": "fail"}
    assert "w: " in next(r["message"] for r in json.loads(report.read_text())["results"]
                         if r["function"] == "CheckpointedTwiceTooLarge")
