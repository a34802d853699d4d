"""Attention and friends by hand: scaled dot-product attention, a causal mask, multi-head attention
by view + transpose, softmax with a learnable temperature, log_softmax, SwiGLU (sequestered corpus)."""
import math

import torch


def _qkv(seed, t=4, d=4):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(t, d, dtype=torch.float64, generator=gen) for _ in range(3))


def _softmax_backward(p, dp):
    return p * (dp - (dp * p).sum(dim=-1, keepdim=True))


# ------------------------------------------------------------------ scaled dot-product attention
class SequesteredDotAttention(torch.autograd.Function):
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
        ds = _softmax_backward(p, grad_out @ v.mT)
        return ds @ k * ctx.scale, ds.mT @ q * ctx.scale, p.mT @ grad_out

    @staticmethod
    def example_inputs():
        return _qkv(21)


class SequesteredDotAttentionKeyUnscaled(torch.autograd.Function):
    bug = {"kind": "scale", "input": "k",
           "note": "the key gradient forgets the 1/sqrt(d) the scores were multiplied by"}

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
        ds = _softmax_backward(p, grad_out @ v.mT)
        dq = ds @ k * ctx.scale
        dk = ds.mT @ q  # BUG
        dv = p.mT @ grad_out
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _qkv(21)


class SequesteredDotAttentionValueNoTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "v",
           "note": "dv = p @ grad_out: the attention weights are not transposed"}

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
        ds = _softmax_backward(p, grad_out @ v.mT)
        dv = p @ grad_out  # BUG
        return ds @ k * ctx.scale, ds.mT @ q * ctx.scale, dv

    @staticmethod
    def example_inputs():
        return _qkv(21)


class SequesteredDotAttentionSoftmaxDiagonalOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "q",
           "note": "the softmax backward keeps p * dp and drops the - p * sum(p * dp) term"}

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
        dp = grad_out @ v.mT
        ds = p * dp  # BUG
        return ds @ k * ctx.scale, ds.mT @ q * ctx.scale, p.mT @ grad_out

    @staticmethod
    def example_inputs():
        return _qkv(21)


# ------------------------------------------------------------------------------ causal mask
class SequesteredCausalAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        t = q.shape[0]
        future = torch.ones(t, t, dtype=torch.bool).triu(1)
        scores = (q @ k.mT) / math.sqrt(q.shape[1])
        p = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        ctx.save_for_backward(q, k, v, p)
        return p @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, p = ctx.saved_tensors
        c = 1.0 / math.sqrt(q.shape[1])
        ds = _softmax_backward(p, grad_out @ v.mT) * c
        grads = [None, None, None]
        if ctx.needs_input_grad[0]:
            grads[0] = ds @ k
        if ctx.needs_input_grad[1]:
            grads[1] = ds.mT @ q
        if ctx.needs_input_grad[2]:
            grads[2] = p.mT @ grad_out
        return tuple(grads)

    @staticmethod
    def example_inputs():
        return _qkv(22)


class SequesteredCausalAttentionRecomputedUnmasked(torch.autograd.Function):
    bug = {"kind": "region", "input": "q",
           "note": "backward recomputes the softmax from the saved scores without the causal mask"}

    @staticmethod
    def forward(ctx, q, k, v):
        t = q.shape[0]
        future = torch.ones(t, t, dtype=torch.bool).triu(1)
        scores = (q @ k.mT) / math.sqrt(q.shape[1])
        p = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        ctx.save_for_backward(q, k, v, scores)
        return p @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, scores = ctx.saved_tensors
        c = 1.0 / math.sqrt(q.shape[1])
        p = torch.softmax(scores, dim=-1)  # BUG
        ds = _softmax_backward(p, grad_out @ v.mT) * c
        return ds @ k, ds.mT @ q, p.mT @ grad_out

    @staticmethod
    def example_inputs():
        return _qkv(22)


# ---------------------------------------------------------------- multi-head, view + transpose
HEADS = 2


def _split(x):
    t, d = x.shape
    return x.view(t, HEADS, d // HEADS).transpose(0, 1)  # (H, T, dh)


def _merge(x):
    h, t, dh = x.shape
    return x.transpose(0, 1).reshape(t, h * dh)


def _mh_forward(ctx, q, k, v):
    qh, kh, vh = _split(q), _split(k), _split(v)
    scale = qh.shape[-1] ** -0.5
    p = torch.softmax(torch.einsum("htd,hsd->hts", qh, kh) * scale, dim=-1)
    ctx.save_for_backward(qh, kh, vh, p)
    ctx.scale = scale
    return _merge(p @ vh)


class SequesteredMultiHeadAttention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        return _mh_forward(ctx, q, k, v)

    @staticmethod
    def backward(ctx, grad_out):
        qh, kh, vh, p = ctx.saved_tensors
        gh = _split(grad_out)
        ds = _softmax_backward(p, gh @ vh.mT) * ctx.scale
        return (_merge(torch.einsum("hts,hsd->htd", ds, kh)),
                _merge(torch.einsum("hts,htd->hsd", ds, qh)),
                _merge(p.mT @ gh))

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(23)
        return tuple(torch.randn(3, 4, dtype=torch.float64, generator=gen) for _ in range(3))


class SequesteredMultiHeadAttentionFlatMerge(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "q", "also": ["transposed"],
           "note": "the per-head query gradient (H, T, dh) is flattened to (T, D) without swapping heads and time back"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _mh_forward(ctx, q, k, v)

    @staticmethod
    def backward(ctx, grad_out):
        qh, kh, vh, p = ctx.saved_tensors
        gh = _split(grad_out)
        ds = _softmax_backward(p, gh @ vh.mT) * ctx.scale
        dqh = torch.einsum("hts,hsd->htd", ds, kh)
        dq = dqh.reshape(grad_out.shape)  # BUG
        return (dq, _merge(torch.einsum("hts,htd->hsd", ds, qh)), _merge(p.mT @ gh))

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(23)
        return tuple(torch.randn(3, 4, dtype=torch.float64, generator=gen) for _ in range(3))


# ------------------------------------------------------------- softmax with learnable temperature
def _temp_inputs():
    gen = torch.Generator().manual_seed(24)
    return torch.randn(3, 4, dtype=torch.float64, generator=gen), torch.tensor(0.7, dtype=torch.float64)


class SequesteredTemperatureSoftmax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, temperature):
        y = torch.softmax(logits / temperature, dim=1)
        ctx.save_for_backward(logits, temperature, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        logits, temperature, y = ctx.saved_tensors
        dz = _softmax_backward(y, grad_out)
        dlogits = dz / temperature
        dtemp = -(dz * logits).sum() / temperature ** 2
        return dlogits, dtemp

    @staticmethod
    def example_inputs():
        return _temp_inputs()


class SequesteredTemperatureSoftmaxTempFlipped(torch.autograd.Function):
    bug = {"kind": "sign", "input": "temperature",
           "note": "d(z/t)/dt = -z/t^2: the minus sign is lost"}

    @staticmethod
    def forward(ctx, logits, temperature):
        y = torch.softmax(logits / temperature, dim=1)
        ctx.save_for_backward(logits, temperature, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        logits, temperature, y = ctx.saved_tensors
        dz = _softmax_backward(y, grad_out)
        dlogits = dz / temperature
        dtemp = (dz * logits).sum() / temperature ** 2  # BUG
        return dlogits, dtemp

    @staticmethod
    def example_inputs():
        return _temp_inputs()


# ------------------------------------------------------------------------------- log_softmax
class SequesteredLogSoftmax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        out = x - x.logsumexp(dim=-1, keepdim=True)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        (out,) = ctx.saved_tensors
        return grad_out - out.exp() * grad_out.sum(dim=-1, keepdim=True)


class SequesteredLogSoftmaxColumnSum(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the upstream gradient is summed down the columns instead of along each row"}

    @staticmethod
    def forward(ctx, x):
        out = x - x.logsumexp(dim=-1, keepdim=True)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        (out,) = ctx.saved_tensors
        total = grad_out.sum(dim=0, keepdim=True)  # BUG
        return grad_out - out.exp() * total


# ------------------------------------------------------------------------------------ SwiGLU
def _swiglu(x):
    a, b = x.chunk(2, dim=-1)
    s = torch.sigmoid(a)
    return a, b, s


class SequesteredSwiGLU(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        a, b, s = _swiglu(x)
        ctx.save_for_backward(a, b, s)
        return a * s * b

    @staticmethod
    def backward(ctx, grad_out):
        a, b, s = ctx.saved_tensors
        da = grad_out * b * (s + a * s * (1 - s))
        db = grad_out * a * s
        return torch.cat([da, db], dim=-1)


class SequesteredSwiGLUNoSigmoidSlope(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "silu'(a) = s + a s (1 - s): the gate half keeps only s"}

    @staticmethod
    def forward(ctx, x):
        a, b, s = _swiglu(x)
        ctx.save_for_backward(a, b, s)
        return a * s * b

    @staticmethod
    def backward(ctx, grad_out):
        a, b, s = ctx.saved_tensors
        da = grad_out * b * s  # BUG
        db = grad_out * a * s
        return torch.cat([da, db], dim=-1)
