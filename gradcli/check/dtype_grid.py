"""The dtypes of reference mode and how each backend makes, runs and reads tensors at them.

Reference mode (reference.py) runs a Function and its reference at a low-precision dtype and the
reference once more in float64 (the golden). This module hides the backend: gradcli's engine
(numpy: float32 and float16, no bfloat16) or PyTorch (float32, bfloat16, float16; on a device,
with the golden always on the CPU). Values cross between dtypes as float64 numpy arrays. No numpy import at module level: the CLI
parses --dtype with ``parse_grid``.
"""
from __future__ import annotations

from typing import Optional, Sequence

GRID_DTYPES = ("float64", "float32", "bfloat16", "float16")  # what --dtype accepts
LOW_PRECISION = ("float32", "bfloat16", "float16")  # the dtypes reference mode compares at
SHORT = {"float64": "f64", "float32": "f32", "bfloat16": "bf16", "float16": "f16"}
# the dtype's machine epsilon (spacing at 1.0); the pass criterion's floor is half of it (the unit
# roundoff) times the golden's largest magnitude: it matters only where the reference is exact
EPS = {"float32": 2.0 ** -23, "bfloat16": 2.0 ** -7, "float16": 2.0 ** -10, "float64": 2.0 ** -52}


def parse_grid(text: str) -> tuple:
    """``"float32,bfloat16"`` -> ("float32", "bfloat16"); ValueError naming what is wrong."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError("expected one or more of " + ", ".join(GRID_DTYPES))
    aliases = {"bf16": "bfloat16", "f16": "float16", "half": "float16", "f32": "float32", "float": "float32",
               "f64": "float64", "double": "float64"}
    out = []
    for name in names:
        name = aliases.get(name.lower(), name.lower())
        if name not in GRID_DTYPES:
            raise ValueError(f"unknown dtype {name!r}: expected one or more of {', '.join(GRID_DTYPES)}")
        if name not in out:
            out.append(name)
    return tuple(out)


class EngineRunner:
    """gradcli's engine: numpy arrays, CPU only, no bfloat16 (numpy has none)."""

    backend = "gradcli"
    dtypes = ("float64", "float32", "float16")

    def __init__(self, device: str = "cpu"):
        import gradcli

        self.gradcli = gradcli
        self.device = device

    def unavailable(self, dtype: str) -> Optional[str]:
        if self.device != "cpu":
            return f"--device {self.device}: gradcli's engine runs on the CPU only"
        if dtype not in self.dtypes:
            return f"gradcli's engine (numpy) has no {dtype}"
        return None

    def is_tensor(self, obj) -> bool:
        return isinstance(obj, self.gradcli.Tensor)

    def is_floating(self, obj) -> bool:
        import numpy as np

        return self.is_tensor(obj) and np.issubdtype(obj.dtype, np.floating)

    def make(self, array, dtype: str, requires_grad: bool, golden: bool = False):
        import numpy as np

        return self.gradcli.tensor(np.asarray(array, dtype=np.float64).astype(dtype), requires_grad=requires_grad)

    def numpy64(self, tensor):
        import numpy as np

        return np.asarray(tensor.detach().numpy(), dtype=np.float64)

    def grad(self, outputs: Sequence, inputs: Sequence, cotangents: Sequence) -> list:
        grads = self.gradcli.autograd.grad(list(outputs), list(inputs), list(cotangents), allow_unused=True)
        return list(grads)


class TorchRunner:
    """PyTorch on ``device`` (the golden on the CPU in float64 whatever the device)."""

    backend = "torch"
    dtypes = ("float64", "float32", "bfloat16", "float16")

    def __init__(self, device: str = "cpu"):
        import torch

        self.torch = torch
        self.device = device

    def unavailable(self, dtype: str) -> Optional[str]:
        if self.device == "cuda" and not self.torch.cuda.is_available():
            return "--device cuda: torch.cuda.is_available() is False (no CUDA device here)"
        if dtype not in self.dtypes:
            return f"torch has no {dtype}"
        return None

    def is_tensor(self, obj) -> bool:
        return isinstance(obj, self.torch.Tensor)

    def is_floating(self, obj) -> bool:
        return self.is_tensor(obj) and obj.is_floating_point()

    def make(self, array, dtype: str, requires_grad: bool, golden: bool = False):
        import numpy as np

        # np.array, not np.ascontiguousarray: that makes a 0-d array shape (1,)
        t = self.torch.from_numpy(np.array(array, dtype=np.float64, order="C")).to(getattr(self.torch, dtype))
        if not golden:
            t = t.to(self.device)
        return t.requires_grad_(requires_grad)

    def numpy64(self, tensor):
        return tensor.detach().to("cpu", self.torch.float64).numpy()

    def grad(self, outputs: Sequence, inputs: Sequence, cotangents: Sequence) -> list:
        return list(self.torch.autograd.grad(list(outputs), list(inputs), list(cotangents), allow_unused=True))


def runner_for(backend: str, device: str = "cpu"):
    return TorchRunner(device) if backend == "torch" else EngineRunner(device)
