"""softmax and log_softmax along a dim. Both save their output: the backward of each is written
in it, so a double backward flows through this same node again, as in torch.

On symbols (object arrays of SymPy expressions) the max-shift is skipped (exp of an expression cannot
overflow, and the max would compare expressions) and exp/log are the UNARY table's symbolic rules."""
import numpy as np

from gradcli.autograd.function import Function
from gradcli.autograd.ops._base import wrap_dim
from gradcli.autograd.ops.elementwise import symbolic_unary
from gradcli.autograd.tensor import Tensor


def _shifted(x, dim):
    """x minus its max along dim (exp of it cannot overflow), in a float dtype; symbols as they are."""
    a = x.data if x.data.dtype.kind in "fcO" else x.data.astype(np.float64)
    if a.dtype.kind == "O":  # symbols: nothing to overflow, nothing to compare
        return a if a.ndim else np.zeros_like(a)
    if a.ndim == 0:
        return a - a
    m = np.max(a, axis=dim, keepdims=True) if a.size else a
    return a - np.where(np.isfinite(m), m, 0)


class Softmax(Function):
    @staticmethod
    def forward(ctx, x, dim):
        d = wrap_dim(dim, x.data.ndim)
        ctx.dim = d if x.data.ndim else None
        s = _shifted(x, d)
        e = symbolic_unary("exp", s) if s.dtype.kind == "O" else np.exp(s)
        y = Tensor(e / (np.sum(e, axis=d, keepdims=True) if e.ndim else e))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        if ctx.dim is None:
            return g * 0, None
        return y * (g - (g * y).sum(dim=ctx.dim, keepdim=True)), None


class LogSoftmax(Function):
    @staticmethod
    def forward(ctx, x, dim):
        d = wrap_dim(dim, x.data.ndim)
        ctx.dim = d if x.data.ndim else None
        s = _shifted(x, d)
        if s.dtype.kind == "O":
            y = Tensor(s - symbolic_unary("log", np.sum(symbolic_unary("exp", s), axis=d, keepdims=True))
                       if s.ndim else s)
        else:
            with np.errstate(divide="ignore"):
                y = Tensor(s - np.log(np.sum(np.exp(s), axis=d, keepdims=True)) if s.ndim else s)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        if ctx.dim is None:
            return g * 0, None
        return g - y.exp() * g.sum(dim=ctx.dim, keepdim=True), None
