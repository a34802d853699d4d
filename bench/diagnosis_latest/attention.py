"""Attention by hand: scaled dot-product, a causal mask, two heads by view + transpose."""
import math

import torch


def _softmax_backward(p, dp):
    return p * (dp - (p * dp).sum(-1, keepdim=True))


def _square_qkv():
    gen = torch.Generator().manual_seed(21)
    return tuple(torch.randn(4, 4, dtype=torch.float64, generator=gen) for _ in range(3))


class LatestScaledDotAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.t() * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        ds = _softmax_backward(p, g @ v.t()) * ctx.scale
        return ds @ k, ds.t() @ q, p.t() @ g

    example_inputs = staticmethod(_square_qkv)


class LatestScaledDotAttentionValueGrad(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "v", "note": "grad v is p @ g instead of p.T @ g"}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.t() * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        ds = _softmax_backward(p, g @ v.t()) * ctx.scale
        grad_v = p @ g  # BUG
        return ds @ k, ds.t() @ q, grad_v

    example_inputs = staticmethod(_square_qkv)


class LatestScaledDotAttentionUnscaledQuery(torch.autograd.Function):
    bug = {"kind": "scale", "input": "q",
           "note": "the query gradient forgets the 1/sqrt(d) factor of the scores"}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.t() * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        dscores = _softmax_backward(p, g @ v.t())
        grad_q = dscores @ k  # BUG
        return grad_q, (dscores * ctx.scale).t() @ q, p.t() @ g

    example_inputs = staticmethod(_square_qkv)


class LatestScaledDotAttentionSwappedQK(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "q", "note": "returns the key gradient in the query's slot and back"}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.t() * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        ds = _softmax_backward(p, g @ v.t()) * ctx.scale
        grad_q, grad_k = ds @ k, ds.t() @ q
        return grad_k, grad_q, p.t() @ g  # BUG

    example_inputs = staticmethod(_square_qkv)


class LatestCausalAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        t = q.shape[0]
        future = torch.ones(t, t, dtype=torch.bool).triu(1)
        scores = (q @ k.t() / math.sqrt(q.shape[1])).masked_fill(future, float("-inf"))
        p = scores.softmax(-1)
        ctx.save_for_backward(q, k, v, p)
        return p @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        ds = _softmax_backward(p, g @ v.t()) / math.sqrt(q.shape[1])
        return ds @ k, ds.t() @ q, p.t() @ g

    example_inputs = staticmethod(_square_qkv)


class LatestCausalAttentionRemaskDiagonal(torch.autograd.Function):
    bug = {"kind": "region", "input": "q",
           "note": "backward re-masks the score gradient with triu(0), zeroing the diagonal too"}

    @staticmethod
    def forward(ctx, q, k, v):
        t = q.shape[0]
        future = torch.ones(t, t, dtype=torch.bool).triu(1)
        scores = (q @ k.t() / math.sqrt(q.shape[1])).masked_fill(future, float("-inf"))
        p = scores.softmax(-1)
        ctx.save_for_backward(q, k, v, p)
        return p @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        t = q.shape[0]
        ds = _softmax_backward(p, g @ v.t()) / math.sqrt(q.shape[1])
        ds = ds.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(0), 0.0)  # BUG
        return ds @ k, ds.t() @ q, p.t() @ g

    example_inputs = staticmethod(_square_qkv)


def _split_heads(x, heads):
    t, width = x.shape
    return x.view(t, heads, width // heads).transpose(0, 1)


class LatestTwoHeadAttention(torch.autograd.Function):
    """(T, 2*dh) inputs split into two heads by view + transpose, merged back the same way."""
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        qh, kh, vh = (_split_heads(t, 2) for t in (q, k, v))
        p = torch.softmax(qh @ kh.transpose(1, 2) / math.sqrt(qh.shape[-1]), dim=-1)
        ctx.save_for_backward(qh, kh, vh, p)
        return (p @ vh).transpose(0, 1).reshape(q.shape)

    @staticmethod
    def backward(ctx, g):
        qh, kh, vh, p = ctx.saved_tensors
        t = g.shape[0]
        gh = _split_heads(g, 2)
        ds = _softmax_backward(p, gh @ vh.transpose(1, 2)) / math.sqrt(qh.shape[-1])
        merge = lambda h: h.transpose(0, 1).reshape(t, -1)
        return merge(ds @ kh), merge(ds.transpose(1, 2) @ qh), merge(p.transpose(1, 2) @ gh)


class LatestTwoHeadAttentionQueryLayout(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "q", "also": ["transposed"],
           "note": "the per-head query gradient (H, T, dh) is reshaped to (T, H*dh) without moving heads back"}

    @staticmethod
    def forward(ctx, q, k, v):
        qh, kh, vh = (_split_heads(t, 2) for t in (q, k, v))
        p = torch.softmax(qh @ kh.transpose(1, 2) / math.sqrt(qh.shape[-1]), dim=-1)
        ctx.save_for_backward(qh, kh, vh, p)
        return (p @ vh).transpose(0, 1).reshape(q.shape)

    @staticmethod
    def backward(ctx, g):
        qh, kh, vh, p = ctx.saved_tensors
        t = g.shape[0]
        gh = _split_heads(g, 2)
        ds = _softmax_backward(p, gh @ vh.transpose(1, 2)) / math.sqrt(qh.shape[-1])
        merge = lambda h: h.transpose(0, 1).reshape(t, -1)
        grad_q = (ds @ kh).reshape(t, -1)  # BUG
        return grad_q, merge(ds.transpose(1, 2) @ qh), merge(p.transpose(1, 2) @ gh)
