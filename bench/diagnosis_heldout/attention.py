"""Scaled dot-product attention with a hand-written backward (plain torch).

softmax(q kᵀ / √d) v, with and without a causal mask, and the head split of multi-head
attention. q, k, v are (batch, time, d). Blind corpus: see README.md.
"""
import math

import torch


def _qkv(batch=2, time=3, d=4, seed=21):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(batch, time, d, generator=gen, dtype=torch.float64)
                 for _ in range(3))


def _attend(ctx, q, k, v, causal=False):
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = q @ k.transpose(-2, -1) * scale
    if causal:
        t = q.shape[-2]
        future = torch.ones(t, t, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    ctx.save_for_backward(q, k, v, probs)
    ctx.scale = scale
    return probs @ v


class ScaledDotProductAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        return _attend(ctx, q, k, v)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, probs = ctx.saved_tensors
        dv = probs.transpose(-2, -1) @ grad_out
        dprobs = grad_out @ v.transpose(-2, -1)
        dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdim=True))
        dq = dscores @ k * ctx.scale
        dk = dscores.transpose(-2, -1) @ q * ctx.scale
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _qkv()


class AttentionQueryGradUnscaled(torch.autograd.Function):
    bug = {"kind": "scale", "input": "q",
           "note": "dq forgets the 1/sqrt(d) of the scores (dk keeps it)"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _attend(ctx, q, k, v)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, probs = ctx.saved_tensors
        dv = probs.transpose(-2, -1) @ grad_out
        dprobs = grad_out @ v.transpose(-2, -1)
        dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdim=True))
        dq = dscores @ k  # BUG
        dk = dscores.transpose(-2, -1) @ q * ctx.scale
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _qkv()


class AttentionValueGradUntransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "v",
           "note": "dv = P @ g instead of Pᵀ @ g (P is square, so the shapes still fit)"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _attend(ctx, q, k, v)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, probs = ctx.saved_tensors
        dv = probs @ grad_out  # BUG
        dprobs = grad_out @ v.transpose(-2, -1)
        dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdim=True))
        dq = dscores @ k * ctx.scale
        dk = dscores.transpose(-2, -1) @ q * ctx.scale
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _qkv()


class AttentionKeyGradUntransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "k",
           "note": "dk = dS @ q instead of dSᵀ @ q: the score gradient is used untransposed"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _attend(ctx, q, k, v)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, probs = ctx.saved_tensors
        dv = probs.transpose(-2, -1) @ grad_out
        dprobs = grad_out @ v.transpose(-2, -1)
        dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdim=True))
        dq = dscores @ k * ctx.scale
        dk = dscores @ q * ctx.scale  # BUG
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _qkv()


class AttentionSoftmaxRowSumOverQueries(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "q",
           "note": "softmax's backward sums <dP, P> over the query axis (-2) instead of the key "
                   "axis (-1) the softmax ran over"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _attend(ctx, q, k, v)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, probs = ctx.saved_tensors
        dv = probs.transpose(-2, -1) @ grad_out
        dprobs = grad_out @ v.transpose(-2, -1)
        dscores = probs * (dprobs - (dprobs * probs).sum(-2, keepdim=True))  # BUG
        dq = dscores @ k * ctx.scale
        dk = dscores.transpose(-2, -1) @ q * ctx.scale
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _qkv()


class AttentionSoftmaxDiagonalJacobian(torch.autograd.Function):
    bug = {"kind": "none", "input": "q",
           "note": "softmax's Jacobian is taken as its diagonal P(1-P), elementwise like a "
                   "sigmoid: a wrong formula, no simple pattern"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _attend(ctx, q, k, v)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, probs = ctx.saved_tensors
        dv = probs.transpose(-2, -1) @ grad_out
        dprobs = grad_out @ v.transpose(-2, -1)
        dscores = probs * (1 - probs) * dprobs  # BUG
        dq = dscores @ k * ctx.scale
        dk = dscores.transpose(-2, -1) @ q * ctx.scale
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _qkv()


# ------------------------------------------------------------------------ causal attention
class CausalAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        return _attend(ctx, q, k, v, causal=True)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, probs = ctx.saved_tensors
        dv = probs.transpose(-2, -1) @ grad_out
        dprobs = grad_out @ v.transpose(-2, -1)
        dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdim=True))
        dq = dscores @ k * ctx.scale
        dk = dscores.transpose(-2, -1) @ q * ctx.scale
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _qkv(time=4, seed=22)


class CausalAttentionRecomputedWithoutMask(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "q",
           "note": "backward recomputes the probabilities from q and k (to save memory) but "
                   "forgets the causal mask: the unmasked probabilities stand where the masked ones "
                   "(saved by forward) belong. Labelled 'none' by its writer; relabelled in session 5 "
                   "(2026-12-01) after the corpus was released for design: one replacement makes every "
                   "gradient exact, so the mistake has a simple pattern"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _attend(ctx, q, k, v, causal=True)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, _ = ctx.saved_tensors
        probs = torch.softmax(q @ k.transpose(-2, -1) * ctx.scale, dim=-1)  # BUG
        dv = probs.transpose(-2, -1) @ grad_out
        dprobs = grad_out @ v.transpose(-2, -1)
        dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdim=True))
        dq = dscores @ k * ctx.scale
        dk = dscores.transpose(-2, -1) @ q * ctx.scale
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _qkv(time=4, seed=22)


class CausalAttentionScoreGradSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "q",
           "note": "softmax's backward is written (rowsum - dP) * P: the score gradient, and so "
                   "dq and dk, come out negated"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _attend(ctx, q, k, v, causal=True)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, probs = ctx.saved_tensors
        dv = probs.transpose(-2, -1) @ grad_out
        dprobs = grad_out @ v.transpose(-2, -1)
        dscores = probs * ((dprobs * probs).sum(-1, keepdim=True) - dprobs)  # BUG
        dq = dscores @ k * ctx.scale
        dk = dscores.transpose(-2, -1) @ q * ctx.scale
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _qkv(time=4, seed=22)


# ------------------------------------------------------------------------------ head split
HEADS = 2


class SplitHeads(torch.autograd.Function):
    """(batch, time, heads*d) -> (batch, heads, time, d), then scaled by a per-head gain."""
    bug = None

    @staticmethod
    def forward(ctx, x, gain):
        b, t, hd = x.shape
        heads = x.reshape(b, t, HEADS, hd // HEADS).transpose(1, 2)
        ctx.save_for_backward(heads, gain)
        return heads * gain[None, :, None, None]

    @staticmethod
    def backward(ctx, grad_out):
        heads, gain = ctx.saved_tensors
        b, h, t, d = grad_out.shape
        dheads = grad_out * gain[None, :, None, None]
        dx = dheads.transpose(1, 2).reshape(b, t, h * d)
        dgain = (grad_out * heads).sum(dim=(0, 2, 3))
        return dx, dgain

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(23)
        x = torch.randn(2, 3, 4, generator=gen, dtype=torch.float64)
        return x, torch.tensor([0.7, 1.6], dtype=torch.float64)


class SplitHeadsBackwardReshapeOnly(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x",
           "note": "backward reshapes (b, h, t, d) straight to (b, t, h*d) without first "
                   "transposing heads and time back: the gradient lands in the wrong layout"}

    @staticmethod
    def forward(ctx, x, gain):
        b, t, hd = x.shape
        heads = x.reshape(b, t, HEADS, hd // HEADS).transpose(1, 2)
        ctx.save_for_backward(heads, gain)
        return heads * gain[None, :, None, None]

    @staticmethod
    def backward(ctx, grad_out):
        heads, gain = ctx.saved_tensors
        b, h, t, d = grad_out.shape
        dheads = grad_out * gain[None, :, None, None]
        dx = dheads.reshape(b, t, h * d)  # BUG
        dgain = (grad_out * heads).sum(dim=(0, 2, 3))
        return dx, dgain

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(23)
        x = torch.randn(2, 3, 4, generator=gen, dtype=torch.float64)
        return x, torch.tensor([0.7, 1.6], dtype=torch.float64)
