"""Sparse and structured attention: sparsemax by sorting and a threshold, a top-k masked softmax,
and causal attention with an ALiBi linear bias whose per-head slopes are learned."""
import math

import torch


def _g(seed):
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------ sparsemax
def _sparsemax(z):
    zs, _ = torch.sort(z, dim=-1, descending=True)
    cs = zs.cumsum(-1)
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype)
    support = (1 + k * zs) > cs
    kz = support.sum(-1, keepdim=True)
    tau = (cs.gather(-1, kz - 1) - 1) / kz
    return torch.clamp(z - tau, min=0)


def _logits(seed):
    return (torch.randn(4, 6, dtype=torch.float64, generator=_g(seed)) * 1.2,)


class RemoteSparsemax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, z):
        p = _sparsemax(z)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad_p):
        (p,) = ctx.saved_tensors
        support = (p > 0).to(grad_p.dtype)
        mean_g = (grad_p * support).sum(-1, keepdim=True) / support.sum(-1, keepdim=True)
        return support * (grad_p - mean_g)

    @staticmethod
    def example_inputs():
        return _logits(60)


class RemoteSparsemaxUnmasked(torch.autograd.Function):
    bug = {"kind": "region", "input": "z",
           "note": "the final multiplication by the support mask is forgotten: off-support entries get grad - mean instead of 0"}

    @staticmethod
    def forward(ctx, z):
        p = _sparsemax(z)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad_p):
        (p,) = ctx.saved_tensors
        support = (p > 0).to(grad_p.dtype)
        mean_g = (grad_p * support).sum(-1, keepdim=True) / support.sum(-1, keepdim=True)
        return grad_p - mean_g  # BUG

    @staticmethod
    def example_inputs():
        return _logits(61)


class RemoteSparsemaxMeanOverBatch(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "z",
           "note": "the support mean of grad_p is taken over dim 0 (the batch) instead of the last dim"}

    @staticmethod
    def forward(ctx, z):
        p = _sparsemax(z)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad_p):
        (p,) = ctx.saved_tensors
        support = (p > 0).to(grad_p.dtype)
        mean_g = (grad_p * support).sum(0, keepdim=True) / support.sum(0, keepdim=True).clamp(min=1)  # BUG
        return support * (grad_p - mean_g)

    @staticmethod
    def example_inputs():
        return _logits(62)


class RemoteSparsemaxSoftmaxJacobian(torch.autograd.Function):
    bug = {"kind": "none", "input": "z",
           "note": "softmax's Jacobian-vector product p * (g - sum(g p)) used for sparsemax"}

    @staticmethod
    def forward(ctx, z):
        p = _sparsemax(z)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad_p):
        (p,) = ctx.saved_tensors
        return p * (grad_p - (grad_p * p).sum(-1, keepdim=True))  # BUG

    @staticmethod
    def example_inputs():
        return _logits(63)


# ------------------------------------------------------------------ top-k masked softmax
def _topk_softmax(ctx, scores, k):
    kth = scores.topk(k, dim=-1).values[..., -1:]
    keep = scores >= kth
    p = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
    ctx.save_for_backward(p)
    return p


class RemoteTopKSoftmax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, scores, k: int = 3):
        return _topk_softmax(ctx, scores, k)

    @staticmethod
    def backward(ctx, grad_p):
        (p,) = ctx.saved_tensors
        dot = (grad_p * p).sum(dim=-1, keepdim=True)
        return p * (grad_p - dot), None

    @staticmethod
    def example_inputs():
        return torch.randn(3, 7, dtype=torch.float64, generator=_g(64)), 3


class RemoteTopKSoftmaxDotAdded(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "scores",
           "note": "the softmax Jacobian's rank-one term -p (g . p) is added"}

    @staticmethod
    def forward(ctx, scores, k: int = 3):
        return _topk_softmax(ctx, scores, k)

    @staticmethod
    def backward(ctx, grad_p):
        (p,) = ctx.saved_tensors
        dot = (grad_p * p).sum(dim=-1, keepdim=True)
        return p * grad_p + p * dot, None  # BUG

    @staticmethod
    def example_inputs():
        return torch.randn(3, 7, dtype=torch.float64, generator=_g(65)), 3


class RemoteTopKSoftmaxDotOverRows(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "scores",
           "note": "g . p summed over dim 0 instead of over the keys (dim -1)"}

    @staticmethod
    def forward(ctx, scores, k: int = 3):
        return _topk_softmax(ctx, scores, k)

    @staticmethod
    def backward(ctx, grad_p):
        (p,) = ctx.saved_tensors
        dot = (grad_p * p).sum(dim=0, keepdim=True)  # BUG
        return p * (grad_p - dot), None

    @staticmethod
    def example_inputs():
        return torch.randn(3, 7, dtype=torch.float64, generator=_g(66)), 3


# ------------------------------------------------------------------ ALiBi causal attention
def _alibi_inputs(seed):
    gen = _g(seed)
    q, k, v = (torch.randn(2, 2, 4, 3, dtype=torch.float64, generator=gen) for _ in range(3))
    slopes = torch.tensor([0.5, 0.25], dtype=torch.float64)
    return q, k, v, slopes


def _alibi_forward(ctx, q, k, v, slopes):
    T, D = q.shape[-2], q.shape[-1]
    pos = torch.arange(T, dtype=q.dtype)
    rel = pos[None, :] - pos[:, None]  # j - i, <= 0 on the causal side
    causal = rel > 0
    scores = q @ k.transpose(-2, -1) / math.sqrt(D) + slopes.view(1, -1, 1, 1) * rel
    attn = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
    ctx.save_for_backward(q, k, v, attn, rel)
    return attn @ v


class RemoteALiBiAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v, slopes):
        return _alibi_forward(ctx, q, k, v, slopes)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, attn, rel = ctx.saved_tensors
        scale = 1 / math.sqrt(q.shape[-1])
        grad_v = attn.transpose(-2, -1) @ grad_out
        grad_attn = grad_out @ v.transpose(-2, -1)
        grad_s = attn * (grad_attn - (grad_attn * attn).sum(-1, keepdim=True))
        grad_q = grad_s @ k * scale
        grad_k = grad_s.transpose(-2, -1) @ q * scale
        grad_slopes = (grad_s * rel).sum(dim=(0, 2, 3))
        return grad_q, grad_k, grad_v, grad_slopes

    @staticmethod
    def example_inputs():
        return _alibi_inputs(67)


class RemoteALiBiSlopesBatchAndRows(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "slopes",
           "note": "the slope gradient is summed over batch and query rows but not over the keys: (H, T) for (H,) slopes"}

    @staticmethod
    def forward(ctx, q, k, v, slopes):
        return _alibi_forward(ctx, q, k, v, slopes)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, attn, rel = ctx.saved_tensors
        scale = 1 / math.sqrt(q.shape[-1])
        grad_v = attn.transpose(-2, -1) @ grad_out
        grad_attn = grad_out @ v.transpose(-2, -1)
        grad_s = attn * (grad_attn - (grad_attn * attn).sum(-1, keepdim=True))
        grad_q = grad_s @ k * scale
        grad_k = grad_s.transpose(-2, -1) @ q * scale
        grad_slopes = (grad_s * rel).sum(dim=(0, 2))  # BUG
        return grad_q, grad_k, grad_v, grad_slopes

    @staticmethod
    def example_inputs():
        return _alibi_inputs(68)


class RemoteALiBiKeyNotTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "k",
           "note": "grad_k = grad_s @ q instead of grad_s^T @ q (T x T scores, so the shapes agree)"}

    @staticmethod
    def forward(ctx, q, k, v, slopes):
        return _alibi_forward(ctx, q, k, v, slopes)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, attn, rel = ctx.saved_tensors
        scale = 1 / math.sqrt(q.shape[-1])
        grad_v = attn.transpose(-2, -1) @ grad_out
        grad_attn = grad_out @ v.transpose(-2, -1)
        grad_s = attn * (grad_attn - (grad_attn * attn).sum(-1, keepdim=True))
        grad_q = grad_s @ k * scale
        grad_k = grad_s @ q * scale  # BUG
        grad_slopes = (grad_s * rel).sum(dim=(0, 2, 3))
        return grad_q, grad_k, grad_v, grad_slopes

    @staticmethod
    def example_inputs():
        return _alibi_inputs(69)
