"""Attention and matrix products (issue 17 catalogue: the rules' own tuning corpus)."""
import math

import torch
from torch.autograd import Function


def _attend(q, k, v, scale):
    s = q @ k.transpose(-2, -1) * scale
    p = torch.softmax(s, dim=-1)
    return p, p @ v


class AttentionDqMissingScale(Function):
    bug = {"kind": "scale", "input": "q", "note": "dq lacks 1/sqrt(d)"}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p, out = _attend(q, k, v, scale)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        dp = g @ v.transpose(-2, -1)
        ds = p * (dp - (dp * p).sum(-1, keepdim=True))
        dq = ds @ k  # BUG
        dk = ds.transpose(-2, -1) @ q * ctx.scale
        dv = p.transpose(-2, -1) @ g
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        torch.manual_seed(21)
        return tuple(torch.randn(3, 4, dtype=torch.float64) for _ in range(3))


class AttentionDvNotTransposed(Function):
    bug = {"kind": "transposed", "input": "v", "note": "dv = p @ g instead of p.T @ g"}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p, out = _attend(q, k, v, scale)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        dp = g @ v.transpose(-2, -1)
        ds = p * (dp - (dp * p).sum(-1, keepdim=True))
        dq = ds @ k * ctx.scale
        dk = ds.transpose(-2, -1) @ q * ctx.scale
        dv = p @ g  # BUG
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        torch.manual_seed(22)
        return tuple(torch.randn(3, 4, dtype=torch.float64) for _ in range(3))


class AttentionSoftmaxWrongDim(Function):
    bug = {"kind": "wrong_axis", "input": "q", "note": "softmax backward sums over dim -2"}

    @staticmethod
    def forward(ctx, q, k, v):
        p, out = _attend(q, k, v, 0.5)
        ctx.save_for_backward(q, k, v, p)
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        dp = g @ v.transpose(-2, -1)
        ds = p * (dp - (dp * p).sum(-2, keepdim=True))  # BUG
        return ds @ k * 0.5, ds.transpose(-2, -1) @ q * 0.5, p.transpose(-2, -1) @ g

    @staticmethod
    def example_inputs():
        torch.manual_seed(23)
        return tuple(torch.randn(3, 4, dtype=torch.float64) for _ in range(3))


class BatchedMatmulMissingTranspose(Function):
    bug = {"kind": "transposed", "input": "a", "note": "da = g @ b instead of g @ b^T"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.bmm(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        da = torch.bmm(g, b)  # BUG
        db = torch.bmm(a.transpose(1, 2), g)
        return da, db

    @staticmethod
    def example_inputs():
        torch.manual_seed(24)
        return torch.randn(2, 3, 3, dtype=torch.float64), torch.randn(2, 3, 3, dtype=torch.float64)


class LinearWeightSwappedOrder(Function):
    bug = {"kind": "swapped", "input": "x", "note": "returns (dw, dx, db) in the wrong order"}

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        return x @ w.t() + b

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g.t() @ x, g @ w, g.sum(0)  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(25)
        return (torch.randn(3, 3, dtype=torch.float64), torch.randn(3, 3, dtype=torch.float64),
                torch.randn(3, dtype=torch.float64))


class LinearBiasMean(Function):
    bug = {"kind": "scale", "input": "b", "note": "bias gradient averaged over the batch"}

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        return x @ w.t() + b

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w, g.t() @ x, g.mean(0)  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(26)
        return (torch.randn(4, 3, dtype=torch.float64), torch.randn(2, 3, dtype=torch.float64),
                torch.randn(2, dtype=torch.float64))


class AttentionOk(Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        p, out = _attend(q, k, v, 0.5)
        ctx.save_for_backward(q, k, v, p)
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        dp = g @ v.transpose(-2, -1)
        ds = p * (dp - (dp * p).sum(-1, keepdim=True))
        return ds @ k * 0.5, ds.transpose(-2, -1) @ q * 0.5, p.transpose(-2, -1) @ g

    @staticmethod
    def example_inputs():
        torch.manual_seed(27)
        return tuple(torch.randn(3, 4, dtype=torch.float64) for _ in range(3))
