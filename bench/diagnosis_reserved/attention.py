"""Attention with hand-written backwards: scaled dot product, causal mask, heads by view + transpose, relative position bias."""
import math

import torch


def _softmax_backward(p, grad_p):
    return p * (grad_p - (grad_p * p).sum(-1, keepdim=True))


def _square(seed, *shape):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*shape, dtype=torch.float64, generator=g) for _ in range(3))



class ReservedAttention(torch.autograd.Function):
    """softmax(q k^T / sqrt(d)) v for one sequence (square shapes)."""
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.mT * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p = ctx.saved_tensors
        grad_v = p.mT @ grad_out
        grad_s = _softmax_backward(p, grad_out @ v.mT) * ctx.scale
        grad_q = grad_s @ k
        grad_k = grad_s.mT @ q
        return grad_q, grad_k, grad_v

    @staticmethod
    def example_inputs():
        return _square(21, 4, 4)


class ReservedAttentionKeyNoTranspose(torch.autograd.Function):
    """softmax(q k^T / sqrt(d)) v for one sequence (square shapes)."""
    bug = {'kind': 'transposed', 'input': 'k', 'note': 'the key gradient uses grad_s where its transpose is needed'}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.mT * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p = ctx.saved_tensors
        grad_v = p.mT @ grad_out
        grad_s = _softmax_backward(p, grad_out @ v.mT) * ctx.scale
        grad_q = grad_s @ k
        grad_k = grad_s @ q  # BUG
        return grad_q, grad_k, grad_v

    @staticmethod
    def example_inputs():
        return _square(21, 4, 4)


class ReservedAttentionValueNoTranspose(torch.autograd.Function):
    """softmax(q k^T / sqrt(d)) v for one sequence (square shapes)."""
    bug = {'kind': 'transposed', 'input': 'v', 'note': 'the value gradient multiplies by p instead of p transposed'}

    @staticmethod
    def forward(ctx, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.mT * scale, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p = ctx.saved_tensors
        grad_v = p @ grad_out  # BUG
        grad_s = _softmax_backward(p, grad_out @ v.mT) * ctx.scale
        grad_q = grad_s @ k
        grad_k = grad_s.mT @ q
        return grad_q, grad_k, grad_v

    @staticmethod
    def example_inputs():
        return _square(21, 4, 4)


class ReservedAttentionEinsum(torch.autograd.Function):
    """Scaled dot-product attention, einsum style, with the scale applied at each use."""
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        d = q.shape[-1]
        scores = torch.einsum("id,jd->ij", q, k) / math.sqrt(d)
        p = scores.softmax(dim=-1)
        ctx.save_for_backward(q, k, v, p)
        return torch.einsum("ij,jd->id", p, v)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p = ctx.saved_tensors
        d = q.shape[-1]
        grad_p = torch.einsum("id,jd->ij", grad_out, v)
        grad_scores = _softmax_backward(p, grad_p)
        grad_q = torch.einsum("ij,jd->id", grad_scores, k) / math.sqrt(d)
        grad_k = torch.einsum("ij,id->jd", grad_scores, q) / math.sqrt(d)
        grad_v = torch.einsum("ij,id->jd", p, grad_out)
        return grad_q, grad_k, grad_v

    @staticmethod
    def example_inputs():
        return _square(22, 4, 4)


class ReservedAttentionEinsumQueryUnscaled(torch.autograd.Function):
    """Scaled dot-product attention, einsum style, with the scale applied at each use."""
    bug = {'kind': 'scale', 'input': 'q', 'note': 'forgets the 1/sqrt(d) of the scores in the query gradient'}

    @staticmethod
    def forward(ctx, q, k, v):
        d = q.shape[-1]
        scores = torch.einsum("id,jd->ij", q, k) / math.sqrt(d)
        p = scores.softmax(dim=-1)
        ctx.save_for_backward(q, k, v, p)
        return torch.einsum("ij,jd->id", p, v)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p = ctx.saved_tensors
        d = q.shape[-1]
        grad_p = torch.einsum("id,jd->ij", grad_out, v)
        grad_scores = _softmax_backward(p, grad_p)
        grad_q = torch.einsum("ij,jd->id", grad_scores, k)  # BUG
        grad_k = torch.einsum("ij,id->jd", grad_scores, q) / math.sqrt(d)
        grad_v = torch.einsum("ij,id->jd", p, grad_out)
        return grad_q, grad_k, grad_v

    @staticmethod
    def example_inputs():
        return _square(22, 4, 4)


class ReservedAttentionEinsumSoftmaxNoCentering(torch.autograd.Function):
    """Scaled dot-product attention, einsum style, with the scale applied at each use."""
    bug = {'kind': 'missing_term', 'input': 'q', 'note': 'the softmax backward forgets to subtract the row sum of grad_p * p'}

    @staticmethod
    def forward(ctx, q, k, v):
        d = q.shape[-1]
        scores = torch.einsum("id,jd->ij", q, k) / math.sqrt(d)
        p = scores.softmax(dim=-1)
        ctx.save_for_backward(q, k, v, p)
        return torch.einsum("ij,jd->id", p, v)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p = ctx.saved_tensors
        d = q.shape[-1]
        grad_p = torch.einsum("id,jd->ij", grad_out, v)
        grad_scores = p * grad_p  # BUG
        grad_q = torch.einsum("ij,jd->id", grad_scores, k) / math.sqrt(d)
        grad_k = torch.einsum("ij,id->jd", grad_scores, q) / math.sqrt(d)
        grad_v = torch.einsum("ij,id->jd", p, grad_out)
        return grad_q, grad_k, grad_v

    @staticmethod
    def example_inputs():
        return _square(22, 4, 4)


class ReservedCausalAttention(torch.autograd.Function):
    """Causal self-attention: position i attends to j <= i; backward recomputes the mask."""
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        t = q.shape[0]
        future = torch.ones(t, t, dtype=torch.bool).triu(diagonal=1)
        s = (q @ k.T / math.sqrt(q.shape[1])).masked_fill(future, float("-inf"))
        ctx.save_for_backward(q, k, v)
        return torch.softmax(s, -1) @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v = ctx.saved_tensors
        t = q.shape[0]
        future = torch.ones(t, t, dtype=torch.bool).triu(diagonal=1)
        s = (q @ k.T / math.sqrt(q.shape[1])).masked_fill(future, float("-inf"))
        p = torch.softmax(s, -1)
        gs = _softmax_backward(p, grad_out @ v.T) / math.sqrt(q.shape[1])
        return gs @ k, gs.T @ q, p.T @ grad_out

    @staticmethod
    def example_inputs():
        return _square(23, 4, 4)


class ReservedCausalAttentionMaskDiagonal(torch.autograd.Function):
    """Causal self-attention: position i attends to j <= i; backward recomputes the mask."""
    bug = {'kind': 'region', 'input': 'q', 'note': "backward's mask also hides the diagonal (triu diagonal=0), so a token ignores itself there"}

    @staticmethod
    def forward(ctx, q, k, v):
        t = q.shape[0]
        future = torch.ones(t, t, dtype=torch.bool).triu(diagonal=1)
        s = (q @ k.T / math.sqrt(q.shape[1])).masked_fill(future, float("-inf"))
        ctx.save_for_backward(q, k, v)
        return torch.softmax(s, -1) @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v = ctx.saved_tensors
        t = q.shape[0]
        future = torch.ones(t, t, dtype=torch.bool).triu(diagonal=0)  # BUG
        s = (q @ k.T / math.sqrt(q.shape[1])).masked_fill(future, float("-inf"))
        p = torch.softmax(s, -1)
        gs = _softmax_backward(p, grad_out @ v.T) / math.sqrt(q.shape[1])
        return gs @ k, gs.T @ q, p.T @ grad_out

    @staticmethod
    def example_inputs():
        return _square(23, 4, 4)


class ReservedMultiHeadAttention(torch.autograd.Function):
    """Two-head self-attention on (T, D): heads split by view + transpose, merged back."""
    bug = None
    heads = 2

    @staticmethod
    def forward(ctx, q, k, v):
        t, d = q.shape
        h = ReservedMultiHeadAttention.heads
        qh, kh, vh = (z.view(t, h, d // h).transpose(0, 1) for z in (q, k, v))
        p = torch.softmax(qh @ kh.transpose(1, 2) / math.sqrt(d // h), dim=-1)
        ctx.save_for_backward(qh, kh, vh, p)
        return (p @ vh).transpose(0, 1).reshape(t, d)

    @staticmethod
    def backward(ctx, grad_out):
        qh, kh, vh, p = ctx.saved_tensors
        h, t, dh = qh.shape
        g = grad_out.view(t, h, dh).transpose(0, 1)
        gs = _softmax_backward(p, g @ vh.transpose(1, 2)) / math.sqrt(dh)
        gq, gk, gv = gs @ kh, gs.transpose(1, 2) @ qh, p.transpose(1, 2) @ g
        merge = lambda z: z.transpose(0, 1).reshape(t, h * dh)
        return merge(gq), merge(gk), merge(gv)

    @staticmethod
    def example_inputs():
        return _square(24, 4, 6)


class ReservedMultiHeadAttentionFlatMerge(torch.autograd.Function):
    """Two-head self-attention on (T, D): heads split by view + transpose, merged back."""
    bug = {'kind': 'missing_reshape', 'input': 'q', 'note': 'merges the head gradients back with a plain reshape, without swapping heads and time first', 'also': ['transposed']}
    heads = 2

    @staticmethod
    def forward(ctx, q, k, v):
        t, d = q.shape
        h = ReservedMultiHeadAttentionFlatMerge.heads
        qh, kh, vh = (z.view(t, h, d // h).transpose(0, 1) for z in (q, k, v))
        p = torch.softmax(qh @ kh.transpose(1, 2) / math.sqrt(d // h), dim=-1)
        ctx.save_for_backward(qh, kh, vh, p)
        return (p @ vh).transpose(0, 1).reshape(t, d)

    @staticmethod
    def backward(ctx, grad_out):
        qh, kh, vh, p = ctx.saved_tensors
        h, t, dh = qh.shape
        g = grad_out.view(t, h, dh).transpose(0, 1)
        gs = _softmax_backward(p, g @ vh.transpose(1, 2)) / math.sqrt(dh)
        gq, gk, gv = gs @ kh, gs.transpose(1, 2) @ qh, p.transpose(1, 2) @ g
        merge = lambda z: z.reshape(t, h * dh)  # BUG
        return merge(gq), merge(gk), merge(gv)

    @staticmethod
    def example_inputs():
        return _square(24, 4, 6)


class ReservedRelPosAttention(torch.autograd.Function):
    """Attention with a learned relative position bias b[i - j + T - 1] added to the scores."""
    bug = None

    @staticmethod
    def forward(ctx, q, k, v, rel_bias):
        t = q.shape[0]
        pos = torch.arange(t)
        idx = pos[:, None] - pos[None, :] + t - 1
        p = torch.softmax(q @ k.T + rel_bias[idx], dim=1)
        ctx.save_for_backward(q, k, v, p, idx)
        return p @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p, idx = ctx.saved_tensors
        gs = _softmax_backward(p, grad_out @ v.T)
        grad_bias = q.new_zeros(2 * q.shape[0] - 1)
        grad_bias.index_add_(0, idx.reshape(-1), gs.reshape(-1))
        return gs @ k, gs.T @ q, p.T @ grad_out, grad_bias

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(25)
        q, k, v = (torch.randn(4, 3, dtype=torch.float64, generator=g) for _ in range(3))
        return q, k, v, torch.randn(7, dtype=torch.float64, generator=g)


class ReservedRelPosAttentionBiasOverwrite(torch.autograd.Function):
    """Attention with a learned relative position bias b[i - j + T - 1] added to the scores."""
    bug = {'kind': 'not_accumulated', 'input': 'rel_bias', 'note': 'scatters the score gradients into the bias table by assignment, so a relative offset shared by several (i, j) keeps only one'}

    @staticmethod
    def forward(ctx, q, k, v, rel_bias):
        t = q.shape[0]
        pos = torch.arange(t)
        idx = pos[:, None] - pos[None, :] + t - 1
        p = torch.softmax(q @ k.T + rel_bias[idx], dim=1)
        ctx.save_for_backward(q, k, v, p, idx)
        return p @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p, idx = ctx.saved_tensors
        gs = _softmax_backward(p, grad_out @ v.T)
        grad_bias = q.new_zeros(2 * q.shape[0] - 1)
        grad_bias[idx.reshape(-1)] = gs.reshape(-1)  # BUG
        return gs @ k, gs.T @ q, p.T @ grad_out, grad_bias

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(25)
        q, k, v = (torch.randn(4, 3, dtype=torch.float64, generator=g) for _ in range(3))
        return q, k, v, torch.randn(7, dtype=torch.float64, generator=g)
