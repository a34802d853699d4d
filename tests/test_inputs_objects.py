"""Example inputs that are not plain strided tensors - a tensor subclass that forward relies on (like
torch_geometric's EdgeIndex) and a sparse COO matrix - reach forward as they are (found on the help corpus:
"'Tensor' object has no attribute 'is_sorted_by_row'", and an internal error recording a sparse tensor)."""
import json

import pytest
from click.testing import CliRunner

from gradcli.cli import main

SOURCE = """import torch


class SortedIndex(torch.Tensor):
    '''An int64 index that knows it is sorted (like torch_geometric's EdgeIndex).'''
    @staticmethod
    def __new__(cls, data):
        return torch.Tensor._make_subclass(cls, data)

    # like EdgeIndex: torch ops on it (clone() included) give plain tensors
    __torch_function__ = torch._C._disabled_torch_function_impl

    def is_sorted_by_row(self):
        return True


class GatherRows(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, index):
        assert index.is_sorted_by_row()
        ctx.save_for_backward(index)
        ctx.rows = x.shape[0]
        return x[index]

    @staticmethod
    def backward(ctx, g):
        (index,) = ctx.saved_tensors
        out = g.new_zeros((ctx.rows,) + g.shape[1:])
        out.index_add_(0, index.as_subclass(torch.Tensor), g)
        return out, None

    @staticmethod
    def example_inputs():
        return [(torch.randn(4, 3, dtype=torch.float64, requires_grad=True), SortedIndex(torch.tensor([0, 0, 2, 3])))]


class SparseMatmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, x):
        ctx.save_for_backward(a)
        return torch.sparse.mm(a, x)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return None, torch.sparse.mm(a.t(), g)

    @staticmethod
    def example_inputs():
        a = torch.tensor([[0.0, 2.0, 0.0], [1.0, 0.0, -1.0]], dtype=torch.float64).to_sparse()
        return [(a, torch.randn(3, 2, dtype=torch.float64, requires_grad=True))]
"""


def test_a_tensor_subclass_and_a_sparse_example_input_reach_forward_as_they_are(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "ops.py").write_text(SOURCE)
    report = tmp_path / "report.json"
    outcome = CliRunner().invoke(main, ["check", str(tmp_path / "ops.py"), "--format", "plain",
                                        "--json", str(report)])
    assert outcome.exit_code == 0, outcome.output
    results = {r["function"]: r for r in json.loads(report.read_text())["results"]}
    assert {name: r["status"] for name, r in results.items()} == {"GatherRows": "pass", "SparseMatmul": "pass"}
    recorded = {rec["name"]: rec for rec in results["SparseMatmul"]["inputs"][0]}
    assert recorded["a"]["shape"] == [2, 3] and recorded["a"]["value"] is None
    assert recorded["a"]["layout"] == "torch.Tensor torch.sparse_coo"


POPPING = '''
import gradcli as torch


class ScaleByOption(torch.autograd.Function):
    """forward pops its options (xitorch's solve_ivp does fwd_options.pop("method")): every call must get its own dict"""
    @staticmethod
    def forward(ctx, x, options):
        factor = options.pop("factor")
        ctx.factor = factor
        return x * factor

    @staticmethod
    def backward(ctx, g):
        return g * ctx.factor, None

    @staticmethod
    def example_inputs():
        return [(torch.randn(3, 4, dtype=torch.float64, requires_grad=True), {"factor": 3.0})]
'''


def test_a_dict_argument_forward_pops_from_is_fresh_on_every_call(tmp_path):
    (tmp_path / "popping.py").write_text(POPPING)
    outcome = CliRunner().invoke(main, ["check", str(tmp_path / "popping.py"), "--format", "plain"])
    assert outcome.exit_code == 0, outcome.output
    assert "1 passed: ScaleByOption" in outcome.output
