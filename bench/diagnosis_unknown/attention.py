"""Attention kernels with hand-written backwards: scaled dot product, causal mask (per-head loop),
multi-head via view + transpose, and an ALiBi position bias.

Shapes: q, k, v are (batch, time, dim); the multi-head ones are (batch, time, heads * head_dim).
"""
import math

import torch


def _qkv(seed, b=2, t=4, d=3):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(b, t, d, dtype=torch.float64, generator=gen) for _ in range(3))


def _softmax_bwd(p, dp):
    return p * (dp - (dp * p).sum(dim=-1, keepdim=True))


class UnknownScaledDotProductAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(torch.einsum("btd,bsd->bts", q, k) * scale, dim=-1)
        ctx.scale = scale
        ctx.save_for_backward(q, k, v, p)
        return torch.einsum("bts,bsd->btd", p, v)

    @staticmethod
    def backward(ctx, do):
        q, k, v, p = ctx.saved_tensors
        dv = torch.einsum("bts,btd->bsd", p, do)
        ds = _softmax_bwd(p, torch.einsum("btd,bsd->bts", do, v))
        dq = torch.einsum("bts,bsd->btd", ds, k) * ctx.scale
        dk = torch.einsum("bts,btd->bsd", ds, q) * ctx.scale
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _qkv(1)


class UnknownScaledDotProductAttentionKeyGrad(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "k",
           "note": "dK uses dS @ Q instead of dS^T @ Q (the score gradient is not transposed)"}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.mT * scale, dim=-1)
        ctx.scale = scale
        ctx.save_for_backward(q, k, v, p)
        return p @ v

    @staticmethod
    def backward(ctx, do):
        q, k, v, p = ctx.saved_tensors
        dv = p.mT @ do
        ds = _softmax_bwd(p, do @ v.mT)
        dq = ds @ k * ctx.scale
        dk = ds @ q * ctx.scale  # BUG
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _qkv(2)


class UnknownScaledDotProductAttentionUnscaledQuery(torch.autograd.Function):
    bug = {"kind": "scale", "input": "q",
           "note": "the 1/sqrt(d) softmax scale is dropped from the query gradient (kept for the keys)"}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.mT * scale, dim=-1)
        ctx.scale = scale
        ctx.save_for_backward(q, k, v, p)
        return p @ v

    @staticmethod
    def backward(ctx, do):
        q, k, v, p = ctx.saved_tensors
        ds = _softmax_bwd(p, do @ v.mT)
        dq = ds @ k  # BUG
        dk = ds.mT @ q * ctx.scale
        return dq, dk, p.mT @ do

    @staticmethod
    def example_inputs():
        return _qkv(3)


def _causal_forward(ctx, q, k, v):
    t = q.shape[1]
    mask = torch.ones(t, t, dtype=torch.bool).triu(1)
    scores = (q @ k.transpose(1, 2)) / math.sqrt(q.shape[-1])
    p = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
    ctx.save_for_backward(q, k, v, p)
    return p @ v


class UnknownCausalAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        return _causal_forward(ctx, q, k, v)

    @staticmethod
    def backward(ctx, do):
        q, k, v, p = ctx.saved_tensors
        scale = 1.0 / math.sqrt(q.shape[-1])
        dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
        for b in range(q.shape[0]):  # one sequence at a time, as a reference kernel would
            pb = p[b]
            dv[b] = pb.t() @ do[b]
            dp = do[b] @ v[b].t()
            ds = pb * (dp - (pb * dp).sum(-1, keepdim=True))
            dq[b] = ds @ k[b] * scale
            dk[b] = ds.t() @ q[b] * scale
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _qkv(4)


class UnknownCausalAttentionRowSumSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "q",
           "note": "softmax backward adds the row sum sum(p * dp) instead of subtracting it"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _causal_forward(ctx, q, k, v)

    @staticmethod
    def backward(ctx, do):
        q, k, v, p = ctx.saved_tensors
        scale = 1.0 / math.sqrt(q.shape[-1])
        dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
        for b in range(q.shape[0]):
            pb = p[b]
            dv[b] = pb.t() @ do[b]
            dp = do[b] @ v[b].t()
            ds = pb * (dp + (pb * dp).sum(-1, keepdim=True))  # BUG
            dq[b] = ds @ k[b] * scale
            dk[b] = ds.t() @ q[b] * scale
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _qkv(5)


HEADS = 2


def _split(x, heads):
    b, t, hd = x.shape
    return x.view(b, t, heads, hd // heads).transpose(1, 2)


def _merge(x):
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)


def _mha_forward(ctx, q, k, v):
    qh, kh, vh = _split(q, HEADS), _split(k, HEADS), _split(v, HEADS)
    scale = qh.shape[-1] ** -0.5
    p = torch.softmax(qh @ kh.transpose(-1, -2) * scale, dim=-1)
    ctx.scale = scale
    ctx.save_for_backward(qh, kh, vh, p)
    return _merge(p @ vh)


def _mha_inputs(seed):
    return _qkv(seed, b=2, t=3, d=4)


class UnknownMultiHeadAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        return _mha_forward(ctx, q, k, v)

    @staticmethod
    def backward(ctx, do):
        qh, kh, vh, p = ctx.saved_tensors
        doh = _split(do, HEADS)
        dv = p.transpose(-1, -2) @ doh
        ds = _softmax_bwd(p, doh @ vh.transpose(-1, -2)) * ctx.scale
        return _merge(ds @ kh), _merge(ds.transpose(-1, -2) @ qh), _merge(dv)

    @staticmethod
    def example_inputs():
        return _mha_inputs(6)


class UnknownMultiHeadAttentionFlatMerge(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "q", "also": ["transposed"],
           "note": "the query gradient (b, h, t, d) is flattened back by reshape without swapping heads and time"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _mha_forward(ctx, q, k, v)

    @staticmethod
    def backward(ctx, do):
        qh, kh, vh, p = ctx.saved_tensors
        b, t, hd = do.shape
        doh = _split(do, HEADS)
        dv = p.transpose(-1, -2) @ doh
        ds = _softmax_bwd(p, doh @ vh.transpose(-1, -2)) * ctx.scale
        dq = (ds @ kh).reshape(b, t, hd)  # BUG
        return dq, _merge(ds.transpose(-1, -2) @ qh), _merge(dv)

    @staticmethod
    def example_inputs():
        return _mha_inputs(7)


def _alibi_bias(heads, t):
    slopes = torch.tensor([2.0 ** (-(h + 1)) for h in range(heads)], dtype=torch.float64)
    dist = (torch.arange(t)[None, :] - torch.arange(t)[:, None]).to(torch.float64)
    return slopes[:, None, None] * dist


def _alibi_forward(ctx, q, k, v):
    qh, kh, vh = _split(q, HEADS), _split(k, HEADS), _split(v, HEADS)
    scale = qh.shape[-1] ** -0.5
    scores = torch.einsum("bhtd,bhsd->bhts", qh, kh) * scale + _alibi_bias(HEADS, q.shape[1])
    p = scores.softmax(-1)
    ctx.scale = scale
    ctx.save_for_backward(qh, kh, vh, p)
    return _merge(torch.einsum("bhts,bhsd->bhtd", p, vh))


class UnknownALiBiAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        return _alibi_forward(ctx, q, k, v)

    @staticmethod
    def backward(ctx, do):
        qh, kh, vh, p = ctx.saved_tensors
        doh = _split(do, HEADS)
        dv = torch.einsum("bhts,bhtd->bhsd", p, doh)
        ds = _softmax_bwd(p, torch.einsum("bhtd,bhsd->bhts", doh, vh)) * ctx.scale
        dq = torch.einsum("bhts,bhsd->bhtd", ds, kh)
        dk = torch.einsum("bhts,bhtd->bhsd", ds, qh)
        return _merge(dq), _merge(dk), _merge(dv)

    @staticmethod
    def example_inputs():
        return _mha_inputs(8)


class UnknownALiBiAttentionSwappedQK(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "q",
           "note": "the query and key gradients are returned in each other's slots"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _alibi_forward(ctx, q, k, v)

    @staticmethod
    def backward(ctx, do):
        qh, kh, vh, p = ctx.saved_tensors
        doh = _split(do, HEADS)
        dv = torch.einsum("bhts,bhtd->bhsd", p, doh)
        ds = _softmax_bwd(p, torch.einsum("bhtd,bhsd->bhts", doh, vh)) * ctx.scale
        dq = torch.einsum("bhts,bhsd->bhtd", ds, kh)
        dk = torch.einsum("bhts,bhtd->bhsd", ds, qh)
        return _merge(dk), _merge(dq), _merge(dv)  # BUG

    @staticmethod
    def example_inputs():
        return _mha_inputs(9)
