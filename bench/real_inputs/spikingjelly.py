"""Inputs for spikingjelly's Functions: a surrogate id in range, a one-process gloo group, the leaky
integrator's scalar decay. Used by bench/real_packages.py as `--inputs-from` (one help)."""
import os
import tempfile

import torch
import torch.distributed as dist

D = torch.float64


def _SurrogateSpike():
    return torch.randn(3, 4, dtype=D, requires_grad=True), 2.0, 1


def _ColwiseBackwardAllReduce():
    if not dist.is_initialized():
        handle, path = tempfile.mkstemp(prefix="gradcli-dist-")
        os.close(handle)
        os.remove(path)
        dist.init_process_group("gloo", init_method=f"file://{path}", rank=0, world_size=1)
    return torch.randn(3, 4, dtype=D, requires_grad=True), dist.group.WORLD


def LeakyIntegratorStep():
    # as the Lava-exchange neuron calls it: a quantized scalar decay (0..4096), the state, an int scale
    x = torch.randn(3, 4, dtype=D, requires_grad=True)
    decay = torch.tensor(1024.0, dtype=D, requires_grad=True)
    state = torch.randn(3, 4, dtype=D, requires_grad=True)
    return x, decay, state, 64
