"""Matrix products."""
import numpy as np

from gradcli.autograd.function import Function
from gradcli.autograd.ops._base import promoted, unbroadcast
from gradcli.autograd.tensor import Tensor


class MatMul(Function):
    """matmul for 2-D and batched (..., n, k) @ (..., k, m) operands; 1-D operands are
    promoted by ``matmul`` below so that this Function only sees the matrix case."""

    @staticmethod
    def forward(ctx, a, b):
        # each gradient reads only the other operand: save just what a needed gradient reads
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)
        ctx.shapes = (a.data.shape, b.data.shape)
        return Tensor(np.matmul(*promoted(a, b)))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = unbroadcast(g @ b.mT, ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        gb = unbroadcast(a.mT @ g, ctx.shapes[1]) if ctx.needs_input_grad[1] else None
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


class Mm(MatMul):
    """torch.mm: both operands 2-D (MatMul's backward, its own node name)."""


class Bmm(MatMul):
    """torch.bmm: both operands 3-D with the same batch size."""


class Dot(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(b if ctx.needs_input_grad[0] else None, a if ctx.needs_input_grad[1] else None)
        return Tensor(np.asarray(np.dot(a.data, b.data)))

    @staticmethod
    def backward(ctx, g):
        b, a = ctx.saved_tensors
        return (g * b if b is not None else None), (g * a if a is not None else None)


class Outer(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(b if ctx.needs_input_grad[0] else None, a if ctx.needs_input_grad[1] else None)
        return Tensor(np.outer(a.data, b.data))

    @staticmethod
    def backward(ctx, g):
        b, a = ctx.saved_tensors
        return (matmul(g, b) if b is not None else None), (matmul(g.t(), a) if a is not None else None)


def _diag_index(n_rows, n_cols, offset):
    """Row and column indices of diagonal ``offset`` of an (n_rows, n_cols) matrix."""
    start_r, start_c = max(-offset, 0), max(offset, 0)
    length = max(0, min(n_rows - start_r, n_cols - start_c))
    k = np.arange(length)
    return start_r + k, start_c + k


class Diag(Function):
    """torch.diag: a vector becomes a square matrix with it on diagonal ``offset``; a matrix
    gives its diagonal ``offset`` as a vector. Each backward is the other direction."""

    @staticmethod
    def forward(ctx, x, offset=0):
        a = x.data
        if a.ndim == 1:
            n = a.shape[0] + abs(offset)
            index = _diag_index(n, n, offset)
            out = np.zeros((n, n), dtype=a.dtype)
            out[index] = a
        elif a.ndim == 2:
            index = _diag_index(a.shape[0], a.shape[1], offset)
            out = a[index]
        else:
            raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {a.ndim}D")
        ctx.in_shape, ctx.index = a.shape, index
        return Tensor(out)

    @staticmethod
    def backward(ctx, g):
        from gradcli.autograd.ops.shape import IndexBackward
        if len(ctx.in_shape) == 1:
            return g[ctx.index], None
        return IndexBackward.apply(g, ctx.in_shape, ctx.index), None


class Trace(Function):
    @staticmethod
    def forward(ctx, x):
        if x.data.ndim != 2:
            raise RuntimeError("trace: expected a matrix")
        ctx.shape = x.data.shape
        return Tensor(np.asarray(np.trace(x.data)))

    @staticmethod
    def backward(ctx, g):
        return g * Tensor(np.eye(*ctx.shape, dtype=g.data.dtype))


def mm(a, b):
    if a.data.ndim != 2 or b.data.ndim != 2:
        raise RuntimeError(f"mm: expected 2-D tensors, got {a.data.ndim}-D and {b.data.ndim}-D")
    _check_inner(a, b)
    return Mm.apply(a, b)


def bmm(a, b):
    if a.data.ndim != 3 or b.data.ndim != 3:
        raise RuntimeError(f"batch1 and batch2 must be 3D tensors, got {a.data.ndim}-D and {b.data.ndim}-D")
    if a.data.shape[0] != b.data.shape[0]:
        raise RuntimeError("batch1 and batch2 must have same number of batches")
    _check_inner(a, b)
    return Bmm.apply(a, b)


def dot(a, b):
    if a.data.ndim != 1 or b.data.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.data.ndim}D and {b.data.ndim}D tensors")
    if a.data.shape != b.data.shape:
        raise RuntimeError("inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number "
                           "of elements, but got {} and {} elements respectively".format(
                               a.data.shape[0], b.data.shape[0], a.data.shape[0], b.data.shape[0]))
    return Dot.apply(a, b)


def outer(a, b):
    return Outer.apply(a, b)


def diag(x, diagonal=0):
    return Diag.apply(x, diagonal)


def trace(x):
    return Trace.apply(x)


def _check_inner(a, b):
    if a.data.shape[-1] != b.data.shape[-2]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.data.shape[-2]}x{a.data.shape[-1]} "
                           f"and {b.data.shape[-2]}x{b.data.shape[-1]})")
