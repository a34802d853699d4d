"""Attention with hand-written backwards: scaled dot-product, a causal mask, two heads by reshape."""
import math

import torch


def _qkv(t=4, d=3, seed=62):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(t, d, dtype=torch.float64, generator=g) for _ in range(3))


def _softmax_backward(p, dp):
    return p * (dp - (dp * p).sum(-1, keepdim=True))


class SealedDotAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.t() * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, grad):
        q, k, v, p = ctx.saved_tensors
        ds = _softmax_backward(p, grad @ v.t()) * ctx.scale
        return ds @ k, ds.t() @ q, p.t() @ grad

    @staticmethod
    def example_inputs():
        return _qkv()


class SealedDotAttentionKeysUnscaled(torch.autograd.Function):
    bug = {"kind": "scale", "input": "k",
           "note": "the 1/sqrt(d) is applied to the query gradient only, not to the keys'"}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.t() * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, grad):
        q, k, v, p = ctx.saved_tensors
        ds = _softmax_backward(p, grad @ v.t())
        dk = ds.t() @ q  # BUG
        return ds @ k * ctx.scale, dk, p.t() @ grad

    @staticmethod
    def example_inputs():
        return _qkv()


class SealedDotAttentionColumnSum(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "q",
           "note": "the softmax backward's row sum is taken over dim 0 (keys' rows) instead of dim -1"}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.t() * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, grad):
        q, k, v, p = ctx.saved_tensors
        dp = grad @ v.t()
        ds = p * (dp - (dp * p).sum(0, keepdim=True)) * ctx.scale  # BUG
        return ds @ k, ds.t() @ q, p.t() @ grad

    @staticmethod
    def example_inputs():
        return _qkv()


class SealedDotAttentionValueGrad(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "v",
           "note": "the value gradient multiplies by p instead of p transposed"}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.t() * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, grad):
        q, k, v, p = ctx.saved_tensors
        ds = _softmax_backward(p, grad @ v.t()) * ctx.scale
        dv = p @ grad  # BUG
        return ds @ k, ds.t() @ q, dv


class SealedCausalAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        t = q.shape[0]
        future = torch.ones(t, t, dtype=torch.bool).triu(diagonal=1)
        s = (q @ k.t() / math.sqrt(q.shape[-1])).masked_fill(future, float("-inf"))
        p = s.softmax(dim=-1)
        ctx.save_for_backward(q, k, v, p)
        return p @ v

    @staticmethod
    def backward(ctx, grad):
        q, k, v, p = ctx.saved_tensors
        ds = _softmax_backward(p, grad @ v.t()) / math.sqrt(q.shape[-1])
        return ds @ k, ds.t() @ q, p.t() @ grad

    @staticmethod
    def example_inputs():
        return _qkv(seed=63)


class SealedCausalAttentionMasksDiagonal(torch.autograd.Function):
    bug = {"kind": "region", "input": "q",
           "note": "backward re-masks with triu(diagonal=0), zeroing the diagonal scores' gradient too"}

    @staticmethod
    def forward(ctx, q, k, v):
        t = q.shape[0]
        future = torch.ones(t, t, dtype=torch.bool).triu(diagonal=1)
        s = (q @ k.t() / math.sqrt(q.shape[-1])).masked_fill(future, float("-inf"))
        p = s.softmax(dim=-1)
        ctx.save_for_backward(q, k, v, p)
        return p @ v

    @staticmethod
    def backward(ctx, grad):
        q, k, v, p = ctx.saved_tensors
        t = q.shape[0]
        ds = _softmax_backward(p, grad @ v.t()) / math.sqrt(q.shape[-1])
        ds = ds.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(diagonal=0), 0.0)  # BUG
        return ds @ k, ds.t() @ q, p.t() @ grad

    @staticmethod
    def example_inputs():
        return _qkv(seed=63)


def _split(x, heads):
    t, d = x.shape
    return x.view(t, heads, d // heads).transpose(0, 1)


def _merge(x):
    h, t, dh = x.shape
    return x.transpose(0, 1).reshape(t, h * dh)


class SealedTwoHeadAttention(torch.autograd.Function):
    """Two heads: (T, D) -> (H, T, D/H) by view + transpose, batched attention, merged back."""
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        qh, kh, vh = _split(q, 2), _split(k, 2), _split(v, 2)
        p = torch.softmax(qh @ kh.transpose(-1, -2) / math.sqrt(qh.shape[-1]), dim=-1)
        ctx.save_for_backward(qh, kh, vh, p)
        return _merge(p @ vh)

    @staticmethod
    def backward(ctx, grad):
        qh, kh, vh, p = ctx.saved_tensors
        gh = _split(grad, 2)
        ds = _softmax_backward(p, gh @ vh.transpose(-1, -2)) / math.sqrt(qh.shape[-1])
        return _merge(ds @ kh), _merge(ds.transpose(-1, -2) @ qh), _merge(p.transpose(-1, -2) @ gh)

    @staticmethod
    def example_inputs():
        return _qkv(t=3, d=4, seed=64)


class SealedTwoHeadAttentionFlatQuery(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "q", "also": ["transposed"],
           "note": "the query gradient (H, T, dh) is reshaped to (T, D) without swapping heads and time back"}

    @staticmethod
    def forward(ctx, q, k, v):
        qh, kh, vh = _split(q, 2), _split(k, 2), _split(v, 2)
        p = torch.softmax(qh @ kh.transpose(-1, -2) / math.sqrt(qh.shape[-1]), dim=-1)
        ctx.save_for_backward(qh, kh, vh, p)
        return _merge(p @ vh)

    @staticmethod
    def backward(ctx, grad):
        qh, kh, vh, p = ctx.saved_tensors
        gh = _split(grad, 2)
        ds = _softmax_backward(p, gh @ vh.transpose(-1, -2)) / math.sqrt(qh.shape[-1])
        dq = (ds @ kh).reshape(grad.shape)  # BUG
        return dq, _merge(ds.transpose(-1, -2) @ qh), _merge(p.transpose(-1, -2) @ gh)

    @staticmethod
    def example_inputs():
        return _qkv(t=3, d=4, seed=64)
