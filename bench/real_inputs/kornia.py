"""Inputs for kornia's _TargetLogSoftmax as focal_loss calls it: logits [N, C], int64 targets [N, 1], no mask.
Used by bench/real_packages.py as `--inputs-from` (one help)."""
import torch


def _TargetLogSoftmax():
    pred = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    return pred, torch.tensor([[0], [3], [1]]), None
