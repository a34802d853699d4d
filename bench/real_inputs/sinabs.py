"""Inputs for sinabs' spike generation Functions: membrane potentials, a threshold and one of sinabs' own
surrogate gradient functions. Used by bench/real_packages.py as `--inputs-from` (one help)."""
import torch
from sinabs.activation import SingleExponential

D = torch.float64


def SingleSpike():
    return torch.randn(3, 4, dtype=D, requires_grad=True), 1.0, SingleExponential()


def MultiSpike():
    return 2 * torch.randn(3, 4, dtype=D, requires_grad=True), 1.0, SingleExponential()


def MaxSpikeInner():
    return 2 * torch.randn(3, 4, dtype=D, requires_grad=True), 2, 1.0, SingleExponential()
