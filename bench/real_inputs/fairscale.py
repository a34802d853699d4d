"""Inputs for fairscale's autograd Functions. The model-parallel ones need torch.distributed: a one-process gloo
group (world size 1) and fairscale's model-parallel groups of size 1, set up once, as a user's test would.
Used by bench/real_packages.py as `--inputs-from` (one help)."""
import os
import tempfile
import types

import torch
import torch.distributed as dist

D = torch.float64


def _one_process_group():
    if not dist.is_initialized():
        handle, path = tempfile.mkstemp(prefix="gradcli-dist-")
        os.close(handle)
        os.remove(path)
        dist.init_process_group("gloo", init_method=f"file://{path}", rank=0, world_size=1)
    from fairscale.nn.model_parallel import initialize as mpu
    if not mpu.model_parallel_is_initialized():
        mpu.initialize_model_parallel(1)


def _VocabParallelCrossEntropy():
    _one_process_group()
    logits = torch.randn(3, 5, dtype=D, requires_grad=True)
    return logits, torch.tensor([0, 4, 2])


def _CopyToModelParallelRegion():
    _one_process_group()
    return (torch.randn(3, 4, dtype=D, requires_grad=True),)


def _SyncBatchNormFunction():
    _one_process_group()
    from fairscale.experimental.nn.sync_batchnorm import _calculate_stats
    x = torch.randn(4, 3, 2, dtype=D, requires_grad=True)
    # the batch statistics as SyncBatchNorm.forward computes them (outside the Function) and passes them in
    mean, _, invstd, total_count = _calculate_stats(x.detach(), 1e-5, dist.group.WORLD)
    weight = torch.randn(3, dtype=D, requires_grad=True)
    bias = torch.randn(3, dtype=D, requires_grad=True)
    return x, weight, bias, True, mean, invstd, total_count, dist.group.WORLD


def CheckpointFunction():
    # as fairscale's checkpoint_wrapper calls it: a dummy tensor, the module's forward, the module, its input
    module = torch.nn.Tanh()
    return (torch.tensor([], dtype=D, requires_grad=True), type(module).forward, {"offload": False}, (), module,
            torch.randn(3, 4, dtype=D, requires_grad=True))


def GetMaxFunction():
    # the kernel object fairscale passes (MemoryEfficientVocabOutput needs CUDA): its four attributes; the
    # gradient of w goes into kernel_obj.proj_weight.grad (a side effect), and backward returns None for w
    w = torch.randn(5, 4, dtype=D, requires_grad=True)  # backward asserts it
    kernel = types.SimpleNamespace(fp_max=False, margin=0.35, scale=None,
                                   proj_weight=types.SimpleNamespace(grad=torch.zeros(5, 4, dtype=D)))
    i = torch.randn(3, 4, dtype=D, requires_grad=True)
    return i, w, torch.tensor([0, 3, 1]), kernel, 0, 5, 0
