"""Inputs for entmax's loss Functions: scores [n, classes] and int64 target classes [n].
Used by bench/real_packages.py as `--inputs-from` (one help)."""
import torch


def SparsemaxLossFunction():
    X = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    return X, torch.tensor([0, 3, 1])
