"""Matrix products."""
import numpy as np

from gradcli.autograd.function import Function
from gradcli.autograd.ops._base import unbroadcast
from gradcli.autograd.tensor import Tensor


class MatMul(Function):
    """matmul for 2-D and batched (..., n, k) @ (..., k, m) operands; 1-D operands are
    promoted by ``matmul`` below so that this Function only sees the matrix case."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return Tensor(np.matmul(a.data, b.data))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = unbroadcast(g @ b.mT, a.data.shape) if ctx.needs_input_grad[0] else None
        gb = unbroadcast(a.mT @ g, b.data.shape) if ctx.needs_input_grad[1] else None
        return ga, gb


def matmul(a, b):
    if a.data.ndim == 0 or b.data.ndim == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D")
    squeeze = []
    if a.data.ndim == 1:
        a = a.unsqueeze(0)
        squeeze.append(-2)
    if b.data.ndim == 1:
        b = b.unsqueeze(-1)
        squeeze.append(-1)
    if a.data.shape[-1] != b.data.shape[-2]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.data.shape[-2]}x{a.data.shape[-1]} "
                           f"and {b.data.shape[-2]}x{b.data.shape[-1]})")
    out = MatMul.apply(a, b)
    for d in sorted(squeeze):
        out = out.squeeze(d)
    return out
