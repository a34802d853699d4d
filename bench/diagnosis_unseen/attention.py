"""Attention with hand-written backwards: scaled dot-product, causal mask, multi-head via reshape.

Part of the blind corpus bench/diagnosis_unseen (see its README): score only, never design.
"""
import math

import torch


def _qkv(seed, lq=4, lk=4, d=3, dv=2):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(lq, d, dtype=torch.float64, generator=g)
    k = torch.randn(lk, d, dtype=torch.float64, generator=g)
    v = torch.randn(lk, dv, dtype=torch.float64, generator=g)
    return q, k, v


def softmax_backward(p, dp, dim=-1):
    return p * (dp - (dp * p).sum(dim, keepdim=True))


class ScaledDotAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.T * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p = ctx.saved_tensors
        dv = p.T @ grad_out
        ds = softmax_backward(p, grad_out @ v.T) * ctx.scale
        return ds @ k, ds.T @ q, dv

    @staticmethod
    def example_inputs():
        return _qkv(1)


class SdpaValueGradNotTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "v",
           "note": "dv = p @ grad_out where p.T @ grad_out is needed (square score matrix)"}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.T * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p = ctx.saved_tensors
        dv = p @ grad_out  # BUG
        ds = softmax_backward(p, grad_out @ v.T) * ctx.scale
        return ds @ k, ds.T @ q, dv

    @staticmethod
    def example_inputs():
        return _qkv(1)


class AttentionSoftmaxGradOverQueries(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "q",
           "note": "the softmax backward sums dp * p over the query dim 0 instead of the key dim"}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.T * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p = ctx.saved_tensors
        dv = p.T @ grad_out
        ds = softmax_backward(p, grad_out @ v.T, dim=0) * ctx.scale  # BUG
        return ds @ k, ds.T @ q, dv

    @staticmethod
    def example_inputs():
        return _qkv(2, lq=3, lk=5)


class CausalSelfAttentionMasked(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        t, d = q.shape
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        scores = (q @ k.T / math.sqrt(d)).masked_fill(mask, float("-inf"))
        p = scores.softmax(-1)
        ctx.save_for_backward(q, k, v, p)
        return p @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p = ctx.saved_tensors
        d = q.shape[-1]
        dp = grad_out @ v.T
        ds = p * (dp - (p * dp).sum(-1, keepdim=True)) / math.sqrt(d)
        return ds @ k, ds.T @ q, p.T @ grad_out

    @staticmethod
    def example_inputs():
        return _qkv(3, lq=5, lk=5)


class CausalAttentionUnmaskedRecompute(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "q",
           "note": "backward recomputes the probabilities from the scores saved before masking"}

    @staticmethod
    def forward(ctx, q, k, v):
        t, d = q.shape
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        raw = q @ k.T / math.sqrt(d)
        ctx.save_for_backward(q, k, v, raw)
        return raw.masked_fill(mask, float("-inf")).softmax(-1) @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, raw = ctx.saved_tensors
        d = q.shape[-1]
        p = raw.softmax(-1)  # BUG
        dp = grad_out @ v.T
        ds = p * (dp - (p * dp).sum(-1, keepdim=True)) / math.sqrt(d)
        return ds @ k, ds.T @ q, p.T @ grad_out

    @staticmethod
    def example_inputs():
        return _qkv(3, lq=5, lk=5)


def _split(x, heads):
    t, width = x.shape
    return x.view(t, heads, width // heads).transpose(0, 1)  # (H, T, dh)


def _merge(x):
    h, t, dh = x.shape
    return x.transpose(0, 1).reshape(t, h * dh)


def _mh_inputs():
    g = torch.Generator().manual_seed(7)
    return tuple(torch.randn(4, 6, dtype=torch.float64, generator=g) for _ in range(3))


class MultiHeadAttention(torch.autograd.Function):
    """Two heads of width 3 over a (T, 6) input: split by view + transpose, merged back."""
    bug = None
    heads = 2

    @staticmethod
    def forward(ctx, q, k, v):
        qh, kh, vh = (_split(t, MultiHeadAttention.heads) for t in (q, k, v))
        scale = qh.shape[-1] ** -0.5
        p = torch.softmax(qh @ kh.transpose(-1, -2) * scale, dim=-1)
        ctx.save_for_backward(qh, kh, vh, p)
        ctx.scale = scale
        return _merge(p @ vh)

    @staticmethod
    def backward(ctx, grad_out):
        qh, kh, vh, p = ctx.saved_tensors
        gh = _split(grad_out, MultiHeadAttention.heads)
        dvh = p.transpose(-1, -2) @ gh
        ds = softmax_backward(p, gh @ vh.transpose(-1, -2)) * ctx.scale
        dqh = ds @ kh
        dkh = ds.transpose(-1, -2) @ qh
        return _merge(dqh), _merge(dkh), _merge(dvh)

    @staticmethod
    def example_inputs():
        return _mh_inputs()


class MultiHeadQueryMergeFlat(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "q",
           "note": "dq of shape (H, T, dh) is reshaped to (T, H*dh) without transposing heads back"}
    heads = 2

    @staticmethod
    def forward(ctx, q, k, v):
        qh, kh, vh = (_split(t, 2) for t in (q, k, v))
        scale = qh.shape[-1] ** -0.5
        p = torch.softmax(qh @ kh.transpose(-1, -2) * scale, dim=-1)
        ctx.save_for_backward(qh, kh, vh, p)
        ctx.scale = scale
        return _merge(p @ vh)

    @staticmethod
    def backward(ctx, grad_out):
        qh, kh, vh, p = ctx.saved_tensors
        gh = _split(grad_out, 2)
        dvh = p.transpose(-1, -2) @ gh
        ds = softmax_backward(p, gh @ vh.transpose(-1, -2)) * ctx.scale
        dq = (ds @ kh).reshape(grad_out.shape)  # BUG
        dkh = ds.transpose(-1, -2) @ qh
        return dq, _merge(dkh), _merge(dvh)

    @staticmethod
    def example_inputs():
        return _mh_inputs()


class MultiHeadKeyScaleModelWidth(torch.autograd.Function):
    bug = {"kind": "scale", "input": "k",
           "note": "backward scales by 1/sqrt(model width 6) where forward used 1/sqrt(head width 3)"}

    @staticmethod
    def forward(ctx, q, k, v):
        qh, kh, vh = (_split(t, 2) for t in (q, k, v))
        p = torch.softmax(qh @ kh.transpose(-1, -2) / math.sqrt(qh.shape[-1]), dim=-1)
        ctx.save_for_backward(qh, kh, vh, p)
        return _merge(p @ vh)

    @staticmethod
    def backward(ctx, grad_out):
        qh, kh, vh, p = ctx.saved_tensors
        gh = _split(grad_out, 2)
        dvh = p.transpose(-1, -2) @ gh
        ds_raw = softmax_backward(p, gh @ vh.transpose(-1, -2))
        dqh = ds_raw @ kh / math.sqrt(qh.shape[-1])
        dkh = ds_raw.transpose(-1, -2) @ qh / math.sqrt(grad_out.shape[-1])  # BUG
        return _merge(dqh), _merge(dkh), _merge(dvh)

    @staticmethod
    def example_inputs():
        return _mh_inputs()
