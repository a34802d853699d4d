"""Inputs for torch_geometric's autograd Functions: an EdgeIndex sorted by row, int64 edge labels, a GroupAddRev
of a GCNConv. Used by bench/real_packages.py as `--inputs-from` (one help)."""
import torch
from torch_geometric import EdgeIndex
from torch_geometric.nn import GCNConv, GroupAddRev

D = torch.float64


def _TorchSPMM():
    edges = EdgeIndex(torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]), sparse_size=(3, 3), sort_order="row")
    # sparse_mm_reduce takes float32 only
    return edges, torch.randn(3, 4, dtype=torch.float32, requires_grad=True), None, "sum", False


def SparseCrossEntropy():
    inputs = torch.randn(3, 4, dtype=D, requires_grad=True)
    return inputs, torch.tensor([[0, 1, 2], [3, 0, 1]]), None


def InvertibleFunction():
    rev = GroupAddRev(GCNConv(2, 2).double(), num_groups=2)
    x = torch.randn(4, 4, dtype=D, requires_grad=True)
    edge_index = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    params = [p for p in rev.parameters() if p.requires_grad]
    return (rev._forward, rev._inverse, 10_000, 2, x, edge_index, *params)
