"""Attention pieces written by hand: fused scaled causal softmax, rotary embedding on q and k, a per-head
projection with a head split and merge (blind corpus yonder)."""
import torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _scores(seed):
    return (torch.randn(2, 4, 4, dtype=torch.float64, generator=_gen(seed)), 0.5)


def _causal_softmax(ctx, scores, scale):
    t = scores.shape[-1]
    causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    y = torch.softmax((scores * scale).masked_fill(causal, float("-inf")), dim=-1)
    ctx.scale = scale
    ctx.save_for_backward(y)
    return y


class YonderScaledCausalSoftmax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, scores, scale: float = 0.5):
        return _causal_softmax(ctx, scores, scale)

    @staticmethod
    def backward(ctx, grad_y):
        (y,) = ctx.saved_tensors
        dot = (grad_y * y).sum(dim=-1, keepdim=True)
        return ctx.scale * y * (grad_y - dot), None

    @staticmethod
    def example_inputs():
        return _scores(0)


class YonderScaledCausalSoftmaxNoScale(torch.autograd.Function):
    bug = {"kind": "scale", "input": "scores",
           "note": "the softmax scale applied in forward but not in backward (factor 2)"}

    @staticmethod
    def forward(ctx, scores, scale: float = 0.5):
        return _causal_softmax(ctx, scores, scale)

    @staticmethod
    def backward(ctx, grad_y):
        (y,) = ctx.saved_tensors
        dot = (grad_y * y).sum(dim=-1, keepdim=True)
        grad = y * (grad_y - dot)  # BUG
        return grad, None

    @staticmethod
    def example_inputs():
        return _scores(1)


class YonderScaledCausalSoftmaxRowDim(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "scores",
           "note": "the softmax projection <g, y> summed over the query dim (-2) instead of the key dim"}

    @staticmethod
    def forward(ctx, scores, scale: float = 0.5):
        return _causal_softmax(ctx, scores, scale)

    @staticmethod
    def backward(ctx, grad_y):
        (y,) = ctx.saved_tensors
        dot = (grad_y * y).sum(dim=-2, keepdim=True)  # BUG
        return ctx.scale * y * (grad_y - dot), None

    @staticmethod
    def example_inputs():
        return _scores(2)


class YonderScaledCausalSoftmaxNoProjection(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "scores",
           "note": "the -y*<g, y> term of the softmax Jacobian left out (only the diagonal kept)"}

    @staticmethod
    def forward(ctx, scores, scale: float = 0.5):
        return _causal_softmax(ctx, scores, scale)

    @staticmethod
    def backward(ctx, grad_y):
        (y,) = ctx.saved_tensors
        grad = ctx.scale * y * grad_y  # BUG
        return grad, None

    @staticmethod
    def example_inputs():
        return _scores(3)


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def _rotate_half_t(x):  # the transpose of rotate_half (a rotation by -90 degrees)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x2, -x1), dim=-1)


def _cos_sin(t, d):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    angles = torch.arange(t, dtype=torch.float64)[:, None] * inv_freq[None, :] + 0.3
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos(), emb.sin()


def _qk(seed):
    g = _gen(seed)
    return (torch.randn(2, 5, 6, dtype=torch.float64, generator=g),
            torch.randn(2, 5, 6, dtype=torch.float64, generator=g))


class YonderRotaryQK(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k):
        cos, sin = _cos_sin(q.shape[-2], q.shape[-1])
        ctx.save_for_backward(cos, sin)
        return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin

    @staticmethod
    def backward(ctx, grad_q, grad_k):
        cos, sin = ctx.saved_tensors
        dq = grad_q * cos + _rotate_half_t(grad_q * sin)
        dk = grad_k * cos + _rotate_half_t(grad_k * sin)
        return dq, dk

    @staticmethod
    def example_inputs():
        return _qk(4)


class YonderRotaryQKForwardRotation(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "k",
           "note": "k's backward rotates grad*sin by +90 degrees like forward: the sin term has the wrong sign"}

    @staticmethod
    def forward(ctx, q, k):
        cos, sin = _cos_sin(q.shape[-2], q.shape[-1])
        ctx.save_for_backward(cos, sin)
        return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin

    @staticmethod
    def backward(ctx, grad_q, grad_k):
        cos, sin = ctx.saved_tensors
        dq = grad_q * cos + _rotate_half_t(grad_q * sin)
        dk = grad_k * cos + _rotate_half(grad_k * sin)  # BUG
        return dq, dk

    @staticmethod
    def example_inputs():
        return _qk(5)


class YonderRotaryQKSwappedReturn(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "q",
           "note": "the gradients of q and k returned in the wrong order"}

    @staticmethod
    def forward(ctx, q, k):
        cos, sin = _cos_sin(q.shape[-2], q.shape[-1])
        ctx.save_for_backward(cos, sin)
        return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin

    @staticmethod
    def backward(ctx, grad_q, grad_k):
        cos, sin = ctx.saved_tensors
        dq = grad_q * cos + _rotate_half_t(grad_q * sin)
        dk = grad_k * cos + _rotate_half_t(grad_k * sin)
        return dk, dq  # BUG

    @staticmethod
    def example_inputs():
        return _qk(6)


def _heads(seed):
    g = _gen(seed)
    return (torch.randn(2, 3, 4 * 2, dtype=torch.float64, generator=g),
            torch.randn(4, 4, dtype=torch.float64, generator=g))


def _split(x, heads):
    b, t, hd = x.shape
    return x.view(b, t, heads, hd // heads).transpose(1, 2)


class YonderMultiHeadProject(torch.autograd.Function):
    """x (B, T, H*D) split into 2 heads, each head multiplied by the shared (D, D) weight, merged back."""
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        xh = _split(x, 2)
        ctx.save_for_backward(xh, w)
        out = torch.matmul(xh, w)
        return out.transpose(1, 2).reshape(x.shape)

    @staticmethod
    def backward(ctx, grad_out):
        xh, w = ctx.saved_tensors
        gh = _split(grad_out, 2)
        gxh = gh @ w.mT
        grad_x = gxh.transpose(1, 2).reshape(grad_out.shape)
        grad_w = torch.einsum("bhtd,bhte->de", xh, gh)
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _heads(7)


class YonderMultiHeadProjectFlatMerge(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x", "also": ["transposed"],
           "note": "the per-head input gradient (B, H, T, D) flattened to (B, T, H*D) without moving heads back behind time"}

    @staticmethod
    def forward(ctx, x, w):
        xh = _split(x, 2)
        ctx.save_for_backward(xh, w)
        out = torch.matmul(xh, w)
        return out.transpose(1, 2).reshape(x.shape)

    @staticmethod
    def backward(ctx, grad_out):
        xh, w = ctx.saved_tensors
        gh = _split(grad_out, 2)
        gxh = gh @ w.mT
        grad_x = gxh.reshape(grad_out.shape)  # BUG
        grad_w = torch.einsum("bhtd,bhte->de", xh, gh)
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _heads(8)


class YonderMultiHeadProjectWeightFlipped(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "w",
           "note": "the einsum output of the weight gradient written 'ed' instead of 'de'"}

    @staticmethod
    def forward(ctx, x, w):
        xh = _split(x, 2)
        ctx.save_for_backward(xh, w)
        out = torch.matmul(xh, w)
        return out.transpose(1, 2).reshape(x.shape)

    @staticmethod
    def backward(ctx, grad_out):
        xh, w = ctx.saved_tensors
        gh = _split(grad_out, 2)
        grad_x = (gh @ w.mT).transpose(1, 2).reshape(grad_out.shape)
        grad_w = torch.einsum("bhtd,bhte->ed", xh, gh)  # BUG
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _heads(9)
