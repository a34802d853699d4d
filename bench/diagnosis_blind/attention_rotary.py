"""Multi-head attention with a key-padding mask on (B, H, T, D) tensors, and rotary position
embeddings (the half-rotation form, cos/sin tables duplicated over the two halves).

BLIND corpus: see README.md. Never tune gradcli's diagnosis on these Functions.
"""
import torch


def _qkv():
    torch.manual_seed(21)
    b, h, t, d = 2, 2, 3, 4
    q, k, v = (torch.randn(b, h, t, d, dtype=torch.float64, requires_grad=True) for _ in range(3))
    key_mask = torch.tensor([[True, True, True], [True, True, False]])  # the last key is padding
    return q, k, v, key_mask


def _masked_attention(ctx, q, k, v, key_mask):
    scale = q.shape[-1] ** -0.5
    scores = (q @ k.transpose(-2, -1)) * scale
    scores = scores.masked_fill(~key_mask[:, None, None, :], float("-inf"))
    p = scores.softmax(dim=-1)
    ctx.save_for_backward(q, k, v, p)
    ctx.scale = scale
    return p @ v


class MaskedMultiHeadAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v, key_mask):
        return _masked_attention(ctx, q, k, v, key_mask)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p = ctx.saved_tensors
        grad_v = p.transpose(-2, -1) @ grad_out
        grad_p = grad_out @ v.transpose(-2, -1)
        grad_s = p * (grad_p - (grad_p * p).sum(-1, keepdim=True)) * ctx.scale
        grad_q = grad_s @ k
        grad_k = grad_s.transpose(-2, -1) @ q
        return grad_q, grad_k, grad_v, None

    @staticmethod
    def example_inputs():
        return _qkv()


class MaskedAttentionKeyGradNotTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "k",
           "note": "k's gradient multiplies the score gradient by q without transposing it "
                   "(queries and keys have the same length, so the shapes fit)"}

    @staticmethod
    def forward(ctx, q, k, v, key_mask):
        return _masked_attention(ctx, q, k, v, key_mask)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p = ctx.saved_tensors
        grad_v = p.transpose(-2, -1) @ grad_out
        grad_p = grad_out @ v.transpose(-2, -1)
        grad_s = p * (grad_p - (grad_p * p).sum(-1, keepdim=True)) * ctx.scale
        grad_q = grad_s @ k
        grad_k = grad_s @ q  # BUG -- grad_s.transpose(-2, -1) @ q
        return grad_q, grad_k, grad_v, None

    @staticmethod
    def example_inputs():
        return _qkv()


class MaskedAttentionSoftmaxSumOverQueries(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "q",
           "note": "the softmax backward's row sum runs over the query dim (-2), not the key dim"}

    @staticmethod
    def forward(ctx, q, k, v, key_mask):
        return _masked_attention(ctx, q, k, v, key_mask)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p = ctx.saved_tensors
        grad_v = p.transpose(-2, -1) @ grad_out
        grad_p = grad_out @ v.transpose(-2, -1)
        grad_s = p * (grad_p - (grad_p * p).sum(-2, keepdim=True)) * ctx.scale  # BUG -- dim -1
        grad_q = grad_s @ k
        grad_k = grad_s.transpose(-2, -1) @ q
        return grad_q, grad_k, grad_v, None

    @staticmethod
    def example_inputs():
        return _qkv()


class MaskedAttentionDividesByHeadDim(torch.autograd.Function):
    bug = {"kind": "scale", "input": "q",
           "note": "backward divides the score gradient by d instead of sqrt(d) (a factor 1/2 "
                   "for d = 4, on q and k)"}

    @staticmethod
    def forward(ctx, q, k, v, key_mask):
        return _masked_attention(ctx, q, k, v, key_mask)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p = ctx.saved_tensors
        grad_v = p.transpose(-2, -1) @ grad_out
        grad_p = grad_out @ v.transpose(-2, -1)
        grad_s = p * (grad_p - (grad_p * p).sum(-1, keepdim=True)) / q.shape[-1]  # BUG -- sqrt(d)
        grad_q = grad_s @ k
        grad_k = grad_s.transpose(-2, -1) @ q
        return grad_q, grad_k, grad_v, None

    @staticmethod
    def example_inputs():
        return _qkv()


class MaskedAttentionNoSoftmaxCorrection(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "q",
           "note": "the softmax backward keeps only p * grad_p and drops - p * sum(grad_p * p)"}

    @staticmethod
    def forward(ctx, q, k, v, key_mask):
        return _masked_attention(ctx, q, k, v, key_mask)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p = ctx.saved_tensors
        grad_v = p.transpose(-2, -1) @ grad_out
        grad_p = grad_out @ v.transpose(-2, -1)
        grad_s = p * grad_p * ctx.scale  # BUG -- - (grad_p * p).sum(-1, keepdim=True) forgotten
        grad_q = grad_s @ k
        grad_k = grad_s.transpose(-2, -1) @ q
        return grad_q, grad_k, grad_v, None

    @staticmethod
    def example_inputs():
        return _qkv()


def _rotary_inputs():
    torch.manual_seed(22)
    t, d = 5, 6
    x = torch.randn(t, d, dtype=torch.float64, requires_grad=True)
    inv_freq = 1.0 / (100 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    angles = torch.arange(t, dtype=torch.float64)[:, None] * inv_freq[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    return x, angles.cos(), angles.sin()


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class RotaryEmbedding(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, cos, sin):
        ctx.save_for_backward(cos, sin)
        return x * cos + _rotate_half(x) * sin

    @staticmethod
    def backward(ctx, grad_out):
        cos, sin = ctx.saved_tensors
        u1, u2 = (grad_out * sin).chunk(2, dim=-1)
        return grad_out * cos + torch.cat([u2, -u1], dim=-1), None, None

    @staticmethod
    def example_inputs():
        return _rotary_inputs()


class RotaryEmbeddingRotatesForward(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "backward applies the forward rotation to grad_out instead of its transpose "
                   "(the inverse rotation)", "also": ["term_sign"]}

    @staticmethod
    def forward(ctx, x, cos, sin):
        ctx.save_for_backward(cos, sin)
        return x * cos + _rotate_half(x) * sin

    @staticmethod
    def backward(ctx, grad_out):
        cos, sin = ctx.saved_tensors
        return grad_out * cos + _rotate_half(grad_out * sin), None, None  # BUG -- rotate back

    @staticmethod
    def example_inputs():
        return _rotary_inputs()
