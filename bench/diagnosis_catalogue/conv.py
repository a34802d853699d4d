"""Convolutions written with unfold (issue 17 catalogue: the rules' own tuning corpus)."""
import torch
from torch.autograd import Function


def _cols(x, k):
    # x (C, L) -> (L', C*k)
    c = x.unfold(1, k, 1)  # (C, L', k)
    return c.permute(1, 0, 2).reshape(c.shape[1], -1)


class Conv1dWeightGradLayout(Function):
    bug = {"kind": "missing_reshape", "input": "w", "note": "g.reshape(L', O) where g.T is needed",
           "also": ["transposed"]}

    @staticmethod
    def forward(ctx, x, w):
        cols = _cols(x, w.shape[2])
        ctx.save_for_backward(x, w, cols)
        return w.reshape(w.shape[0], -1) @ cols.t()  # (O, L')

    @staticmethod
    def backward(ctx, g):
        x, w, cols = ctx.saved_tensors
        o, c, k = w.shape
        dw = (g.reshape(g.shape[1], g.shape[0]).t() @ cols).reshape(o, c, k)  # BUG
        dcols = g.t() @ w.reshape(o, -1)  # (L', C*k)
        dx = torch.zeros_like(x)
        dc = dcols.reshape(-1, c, k)
        for j in range(k):
            dx[:, j:j + dc.shape[0]] += dc[:, :, j].t()
        return dx, dw

    @staticmethod
    def example_inputs():
        torch.manual_seed(31)
        return torch.randn(2, 6, dtype=torch.float64), torch.randn(3, 2, 2, dtype=torch.float64)


class Conv1dInputGradMissingPermute(Function):
    bug = {"kind": "missing_reshape", "input": "x", "note": "dcols reshaped to (C, L', k) without the permute",
           "also": ["transposed"]}

    @staticmethod
    def forward(ctx, x, w):
        cols = _cols(x, w.shape[2])
        ctx.save_for_backward(x, w, cols)
        return w.reshape(w.shape[0], -1) @ cols.t()

    @staticmethod
    def backward(ctx, g):
        x, w, cols = ctx.saved_tensors
        o, c, k = w.shape
        dw = (g @ cols).reshape(o, c, k)
        dcols = g.t() @ w.reshape(o, -1)
        dc = dcols.reshape(c, -1, k)  # BUG
        dx = torch.zeros_like(x)
        for j in range(k):
            dx[:, j:j + dc.shape[1]] += dc[:, :, j]
        return dx, dw

    @staticmethod
    def example_inputs():
        torch.manual_seed(32)
        return torch.randn(2, 6, dtype=torch.float64), torch.randn(3, 2, 2, dtype=torch.float64)


class Conv1dInputGradNoOverlapAdd(Function):
    bug = {"kind": "not_accumulated", "input": "x", "note": "overlapping windows assigned, not added"}

    @staticmethod
    def forward(ctx, x, w):
        cols = _cols(x, w.shape[2])
        ctx.save_for_backward(x, w, cols)
        return w.reshape(w.shape[0], -1) @ cols.t()

    @staticmethod
    def backward(ctx, g):
        x, w, cols = ctx.saved_tensors
        o, c, k = w.shape
        dw = (g @ cols).reshape(o, c, k)
        dc = (g.t() @ w.reshape(o, -1)).reshape(-1, c, k)
        dx = torch.zeros_like(x)
        for j in range(k):
            dx[:, j:j + dc.shape[0]] = dc[:, :, j].t()  # BUG
        return dx, dw

    @staticmethod
    def example_inputs():
        torch.manual_seed(33)
        return torch.randn(2, 6, dtype=torch.float64), torch.randn(3, 2, 2, dtype=torch.float64)


class Conv1dOk(Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        cols = _cols(x, w.shape[2])
        ctx.save_for_backward(x, w, cols)
        return w.reshape(w.shape[0], -1) @ cols.t()

    @staticmethod
    def backward(ctx, g):
        x, w, cols = ctx.saved_tensors
        o, c, k = w.shape
        dw = (g @ cols).reshape(o, c, k)
        dc = (g.t() @ w.reshape(o, -1)).reshape(-1, c, k)
        dx = torch.zeros_like(x)
        for j in range(k):
            dx[:, j:j + dc.shape[0]] += dc[:, :, j].t()
        return dx, dw

    @staticmethod
    def example_inputs():
        torch.manual_seed(34)
        return torch.randn(2, 6, dtype=torch.float64), torch.randn(3, 2, 2, dtype=torch.float64)
