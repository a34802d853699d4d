"""Inputs for revtorch's _ReversibleModuleFunction as ReversibleSequence calls it: an nn.ModuleList of
ReversibleBlocks. Used by bench/real_packages.py as `--inputs-from` (one help)."""
import torch
from revtorch import ReversibleBlock


def _ReversibleModuleFunction():
    blocks = torch.nn.ModuleList([ReversibleBlock(torch.nn.Linear(2, 2).double(), torch.nn.Linear(2, 2).double())])
    return torch.randn(3, 4, dtype=torch.float64, requires_grad=True), blocks, False
