"""Inputs for lightly's GatherLayer: torch.distributed with one gloo process (world size 1).
Used by bench/real_packages.py as `--inputs-from` (one help)."""
import os
import tempfile

import torch
import torch.distributed as dist


def GatherLayer():
    if not dist.is_initialized():
        handle, path = tempfile.mkstemp(prefix="gradcli-dist-")
        os.close(handle)
        os.remove(path)
        dist.init_process_group("gloo", init_method=f"file://{path}", rank=0, world_size=1)
    return (torch.randn(3, 4, dtype=torch.float64, requires_grad=True),)
