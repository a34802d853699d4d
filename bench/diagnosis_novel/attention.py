"""Attention by hand: scaled dot product, a causal mask, multi-head via view + transpose."""
import math

import torch


def _qkv(t, s, d, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(n, d, dtype=torch.float64, generator=gen) for n in (t, s, s))


class NovelAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.T * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        gv = p.T @ g
        gp = g @ v.T
        gs = p * (gp - (gp * p).sum(dim=-1, keepdim=True))
        return gs @ k * ctx.scale, gs.T @ q * ctx.scale, gv

    @staticmethod
    def example_inputs():
        return _qkv(4, 4, 4, seed=10)


class NovelAttentionKeyGradUntransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "k",
           "note": "the key gradient uses the score gradient gs where its transpose gs.T is needed"}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.T * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        gv = p.T @ g
        gp = g @ v.T
        gs = p * (gp - (gp * p).sum(dim=-1, keepdim=True))
        gk = gs @ q * ctx.scale  # BUG
        return gs @ k * ctx.scale, gk, gv

    @staticmethod
    def example_inputs():
        return _qkv(4, 4, 4, seed=11)


class NovelAttentionSoftmaxUncentred(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "q",
           "note": "the softmax backward keeps p * gp and forgets the - p * sum(p * gp) term"}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.T * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        gv = p.T @ g
        gs = p * (g @ v.T)  # BUG
        return gs @ k * ctx.scale, gs.T @ q * ctx.scale, gv

    @staticmethod
    def example_inputs():
        return _qkv(3, 5, 4, seed=12)


class NovelAttentionQueryUnscaled(torch.autograd.Function):
    bug = {"kind": "scale", "input": "q",
           "note": "the query gradient forgets the 1/sqrt(d) of the scores"}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.T * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        gv = p.T @ g
        gp = g @ v.T
        gs = p * (gp - (gp * p).sum(dim=-1, keepdim=True))
        gq = gs @ k  # BUG
        return gq, gs.T @ q * ctx.scale, gv

    @staticmethod
    def example_inputs():
        return _qkv(3, 5, 4, seed=13)


def _causal(q, k):
    t = q.shape[0]
    scores = torch.einsum("id,jd->ij", q, k) / math.sqrt(q.shape[1])
    future = torch.ones(t, t, dtype=torch.bool).triu(diagonal=1)
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=1)


class NovelCausalAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        p = _causal(q, k)
        ctx.save_for_backward(q, k, v, p)
        return torch.einsum("ij,jd->id", p, v)

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        gp = torch.einsum("id,jd->ij", g, v)
        gs = p * (gp - (p * gp).sum(dim=1, keepdim=True))
        future = torch.ones_like(gs, dtype=torch.bool).triu(diagonal=1)
        gs = gs.masked_fill(future, 0.0) / math.sqrt(q.shape[1])
        return (torch.einsum("ij,jd->id", gs, k), torch.einsum("ij,id->jd", gs, q),
                torch.einsum("ij,id->jd", p, g))

    @staticmethod
    def example_inputs():
        return _qkv(5, 5, 3, seed=14)


class NovelCausalAttentionMaskEatsDiagonal(torch.autograd.Function):
    bug = {"kind": "region", "input": "q",
           "note": "the backward's mask is triu(diagonal=0): it also zeroes the score gradient of j == i"}

    @staticmethod
    def forward(ctx, q, k, v):
        p = _causal(q, k)
        ctx.save_for_backward(q, k, v, p)
        return torch.einsum("ij,jd->id", p, v)

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        gp = torch.einsum("id,jd->ij", g, v)
        gs = p * (gp - (p * gp).sum(dim=1, keepdim=True))
        future = torch.ones_like(gs, dtype=torch.bool).triu(diagonal=0)  # BUG
        gs = gs.masked_fill(future, 0.0) / math.sqrt(q.shape[1])
        return (torch.einsum("ij,jd->id", gs, k), torch.einsum("ij,id->jd", gs, q),
                torch.einsum("ij,id->jd", p, g))

    @staticmethod
    def example_inputs():
        return _qkv(5, 5, 3, seed=14)


HEADS = 2


def _split(x):
    t, width = x.shape
    return x.view(t, HEADS, width // HEADS).transpose(0, 1)


def _merge(x):
    return x.transpose(0, 1).reshape(x.shape[1], -1)


def _mha_forward(ctx, q, k, v):
    qh, kh, vh = _split(q), _split(k), _split(v)
    scale = (q.shape[1] // HEADS) ** -0.5
    p = torch.softmax(qh @ kh.mT * scale, dim=-1)
    ctx.save_for_backward(qh, kh, vh, p)
    ctx.scale = scale
    return _merge(p @ vh)


def _mha_head_grads(ctx, g):
    qh, kh, vh, p = ctx.saved_tensors
    gh = _split(g)
    gvh = p.mT @ gh
    gp = gh @ vh.mT
    gs = p * (gp - (gp * p).sum(-1, keepdim=True)) * ctx.scale
    return gs @ kh, gs.mT @ qh, gvh


class NovelMultiHeadAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        return _mha_forward(ctx, q, k, v)

    @staticmethod
    def backward(ctx, g):
        gq, gk, gv = _mha_head_grads(ctx, g)
        return _merge(gq), _merge(gk), _merge(gv)

    @staticmethod
    def example_inputs():
        return _qkv(3, 3, 4, seed=15)


class NovelMultiHeadQueryMergedByReshape(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "q", "also": ["transposed"],
           "note": "the query gradient (heads, T, dh) is reshaped to (T, width) without swapping heads and T back"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _mha_forward(ctx, q, k, v)

    @staticmethod
    def backward(ctx, g):
        gq, gk, gv = _mha_head_grads(ctx, g)
        gq = gq.reshape(g.shape[0], -1)  # BUG
        return gq, _merge(gk), _merge(gv)

    @staticmethod
    def example_inputs():
        return _qkv(3, 3, 4, seed=16)


class NovelMultiHeadKeyValueSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "k",
           "note": "the key and value gradients are returned in each other's place"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _mha_forward(ctx, q, k, v)

    @staticmethod
    def backward(ctx, g):
        gq, gk, gv = _mha_head_grads(ctx, g)
        return _merge(gq), _merge(gv), _merge(gk)  # BUG

    @staticmethod
    def example_inputs():
        return _qkv(3, 3, 4, seed=17)
