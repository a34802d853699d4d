"""A minGRU-style gated recurrence (loop over time) and an RWKV-like time-decayed weighted average
(vectorised: a (T, T, D) weight tensor, a causal mask and einsum).

minGRU: z_t = sigmoid(k_t), h_t = (1 - z_t) * h_{t-1} + z_t * v_t, h_{-1} = 0.
RWKV-like: y_t = sum_{i<=t} e^{-(t-i) w + k_i} v_i / sum_{i<=t} e^{-(t-i) w + k_i}, per channel.
"""
import torch


def _gru_inputs():
    gen = torch.Generator().manual_seed(21)
    k = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    v = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    return k, v


def _min_gru(k, v):
    z = torch.sigmoid(k)
    h = torch.zeros_like(v[0])
    states = []
    for t in range(k.shape[0]):
        h = (1 - z[t]) * h + z[t] * v[t]
        states.append(h)
    return z, torch.stack(states)


class ElsewhereMinGRU(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, k, v):
        z, h = _min_gru(k, v)
        ctx.save_for_backward(z, v, h)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        z, v, h = ctx.saved_tensors
        h_prev = torch.cat([torch.zeros_like(h[:1]), h[:-1]])
        grad_k = torch.empty_like(z)
        grad_v = torch.empty_like(v)
        carry = torch.zeros_like(v[0])
        for t in reversed(range(z.shape[0])):
            dh = grad_h[t] + carry
            grad_k[t] = dh * (v[t] - h_prev[t]) * z[t] * (1 - z[t])
            grad_v[t] = dh * z[t]
            carry = dh * (1 - z[t])
        return grad_k, grad_v

    @staticmethod
    def example_inputs():
        return _gru_inputs()


class ElsewhereMinGRUSwapGrads(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "k",
           "note": "the gate logits' and the candidate values' gradients are returned in each other's places"}

    @staticmethod
    def forward(ctx, k, v):
        z, h = _min_gru(k, v)
        ctx.save_for_backward(z, v, h)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        z, v, h = ctx.saved_tensors
        h_prev = torch.cat([torch.zeros_like(h[:1]), h[:-1]])
        grad_k = torch.empty_like(z)
        grad_v = torch.empty_like(v)
        carry = torch.zeros_like(v[0])
        for t in reversed(range(z.shape[0])):
            dh = grad_h[t] + carry
            grad_k[t] = dh * (v[t] - h_prev[t]) * z[t] * (1 - z[t])
            grad_v[t] = dh * z[t]
            carry = dh * (1 - z[t])
        return grad_v, grad_k  # BUG

    @staticmethod
    def example_inputs():
        return _gru_inputs()


class ElsewhereMinGRUCurrentState(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "k",
           "note": "dh_t/dz_t is v_t - h_{t-1}, but the new state h_t is used instead of the previous one"}

    @staticmethod
    def forward(ctx, k, v):
        z, h = _min_gru(k, v)
        ctx.save_for_backward(z, v, h)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        z, v, h = ctx.saved_tensors
        grad_k = torch.empty_like(z)
        grad_v = torch.empty_like(v)
        carry = torch.zeros_like(v[0])
        for t in reversed(range(z.shape[0])):
            dh = grad_h[t] + carry
            grad_k[t] = dh * (v[t] - h[t]) * z[t] * (1 - z[t])  # BUG
            grad_v[t] = dh * z[t]
            carry = dh * (1 - z[t])
        return grad_k, grad_v

    @staticmethod
    def example_inputs():
        return _gru_inputs()


class ElsewhereMinGRUGateSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "k",
           "note": "dh_t/dz_t is written h_{t-1} - v_t (the 1 - z and z roles mixed up), negating the whole gate gradient"}

    @staticmethod
    def forward(ctx, k, v):
        z, h = _min_gru(k, v)
        ctx.save_for_backward(z, v, h)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        z, v, h = ctx.saved_tensors
        h_prev = torch.cat([torch.zeros_like(h[:1]), h[:-1]])
        grad_k = torch.empty_like(z)
        grad_v = torch.empty_like(v)
        carry = torch.zeros_like(v[0])
        for t in reversed(range(z.shape[0])):
            dh = grad_h[t] + carry
            grad_k[t] = dh * (h_prev[t] - v[t]) * z[t] * (1 - z[t])  # BUG
            grad_v[t] = dh * z[t]
            carry = dh * (1 - z[t])
        return grad_k, grad_v

    @staticmethod
    def example_inputs():
        return _gru_inputs()


class ElsewhereMinGRUTanhDerivative(torch.autograd.Function):
    bug = {"kind": "none", "input": "k",
           "note": "the gate's derivative is taken as tanh's 1 - z**2 instead of sigmoid's z * (1 - z)"}

    @staticmethod
    def forward(ctx, k, v):
        z, h = _min_gru(k, v)
        ctx.save_for_backward(z, v, h)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        z, v, h = ctx.saved_tensors
        h_prev = torch.cat([torch.zeros_like(h[:1]), h[:-1]])
        grad_k = torch.empty_like(z)
        grad_v = torch.empty_like(v)
        carry = torch.zeros_like(v[0])
        for t in reversed(range(z.shape[0])):
            dh = grad_h[t] + carry
            grad_k[t] = dh * (v[t] - h_prev[t]) * (1 - z[t] ** 2)  # BUG
            grad_v[t] = dh * z[t]
            carry = dh * (1 - z[t])
        return grad_k, grad_v

    @staticmethod
    def example_inputs():
        return _gru_inputs()


# ------------------------------------------------------------- RWKV-like decayed average
def _rwkv_inputs():
    gen = torch.Generator().manual_seed(22)
    w = 0.2 + 0.6 * torch.rand(3, generator=gen, dtype=torch.float64)
    k = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    v = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    return w, k, v


def _distance(T, dtype):
    t = torch.arange(T)
    return (t[:, None] - t[None, :]).to(dtype)  # (T, T): t - i


def _weights(w, k, diagonal=0, dim=1):
    T = k.shape[0]
    dist = _distance(T, k.dtype)
    causal = torch.ones(T, T, dtype=torch.bool).tril(diagonal)
    logits = -dist[:, :, None] * w + k[None, :, :]
    return torch.softmax(logits.masked_fill(~causal[:, :, None], float("-inf")), dim=dim)


class ElsewhereRWKVAverage(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, w, k, v):
        p = _weights(w, k)
        y = torch.einsum("tid,id->td", p, v)
        ctx.save_for_backward(w, k, v, y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        w, k, v, y = ctx.saved_tensors
        p = _weights(w, k)
        dist = _distance(k.shape[0], k.dtype)
        grad_p = torch.einsum("td,id->tid", grad_y, v)
        grad_logits = p * (grad_p - (grad_y * y)[:, None, :])
        grad_k = grad_logits.sum(0)
        grad_w = -(grad_logits * dist[:, :, None]).sum((0, 1))
        grad_v = torch.einsum("tid,td->id", p, grad_y)
        return grad_w, grad_k, grad_v

    @staticmethod
    def example_inputs():
        return _rwkv_inputs()


class ElsewhereRWKVMaskOffByOne(torch.autograd.Function):
    bug = {"kind": "region", "input": "k",
           "note": "backward rebuilds the causal mask with tril(1), letting each step weigh the next token too"}

    @staticmethod
    def forward(ctx, w, k, v):
        p = _weights(w, k)
        y = torch.einsum("tid,id->td", p, v)
        ctx.save_for_backward(w, k, v, y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        w, k, v, y = ctx.saved_tensors
        p = _weights(w, k, diagonal=1)  # BUG
        dist = _distance(k.shape[0], k.dtype)
        grad_p = torch.einsum("td,id->tid", grad_y, v)
        grad_logits = p * (grad_p - (grad_y * y)[:, None, :])
        grad_k = grad_logits.sum(0)
        grad_w = -(grad_logits * dist[:, :, None]).sum((0, 1))
        grad_v = torch.einsum("tid,td->id", p, grad_y)
        return grad_w, grad_k, grad_v

    @staticmethod
    def example_inputs():
        return _rwkv_inputs()


class ElsewhereRWKVValueEinsum(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "v",
           "note": "dv_i = sum_t p[t, i] g_t, but the einsum reads the weights as p[i, t]"}

    @staticmethod
    def forward(ctx, w, k, v):
        p = _weights(w, k)
        y = torch.einsum("tid,id->td", p, v)
        ctx.save_for_backward(w, k, v, y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        w, k, v, y = ctx.saved_tensors
        p = _weights(w, k)
        dist = _distance(k.shape[0], k.dtype)
        grad_p = torch.einsum("td,id->tid", grad_y, v)
        grad_logits = p * (grad_p - (grad_y * y)[:, None, :])
        grad_k = grad_logits.sum(0)
        grad_w = -(grad_logits * dist[:, :, None]).sum((0, 1))
        grad_v = torch.einsum("itd,td->id", p, grad_y)  # BUG
        return grad_w, grad_k, grad_v

    @staticmethod
    def example_inputs():
        return _rwkv_inputs()


class ElsewhereRWKVNoCentring(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "k",
           "note": "the softmax backward keeps p * dL/dp but drops the -p * sum(p * dL/dp) = -p * g.y term"}

    @staticmethod
    def forward(ctx, w, k, v):
        p = _weights(w, k)
        y = torch.einsum("tid,id->td", p, v)
        ctx.save_for_backward(w, k, v, y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        w, k, v, y = ctx.saved_tensors
        p = _weights(w, k)
        dist = _distance(k.shape[0], k.dtype)
        grad_p = torch.einsum("td,id->tid", grad_y, v)
        grad_logits = p * grad_p  # BUG
        grad_k = grad_logits.sum(0)
        grad_w = -(grad_logits * dist[:, :, None]).sum((0, 1))
        grad_v = torch.einsum("tid,td->id", p, grad_y)
        return grad_w, grad_k, grad_v

    @staticmethod
    def example_inputs():
        return _rwkv_inputs()


class ElsewhereRWKVDecaySign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "w",
           "note": "the logits are -(t - i) * w, but the minus is lost in the decay's gradient"}

    @staticmethod
    def forward(ctx, w, k, v):
        p = _weights(w, k)
        y = torch.einsum("tid,id->td", p, v)
        ctx.save_for_backward(w, k, v, y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        w, k, v, y = ctx.saved_tensors
        p = _weights(w, k)
        dist = _distance(k.shape[0], k.dtype)
        grad_p = torch.einsum("td,id->tid", grad_y, v)
        grad_logits = p * (grad_p - (grad_y * y)[:, None, :])
        grad_k = grad_logits.sum(0)
        grad_w = (grad_logits * dist[:, :, None]).sum((0, 1))  # BUG
        grad_v = torch.einsum("tid,td->id", p, grad_y)
        return grad_w, grad_k, grad_v

    @staticmethod
    def example_inputs():
        return _rwkv_inputs()


class ElsewhereRWKVSoftmaxAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "v",
           "note": "backward recomputes the weights with a softmax over the output steps t (dim 0) instead of the inputs i"}

    @staticmethod
    def forward(ctx, w, k, v):
        p = _weights(w, k)
        y = torch.einsum("tid,id->td", p, v)
        ctx.save_for_backward(w, k, v, y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        w, k, v, y = ctx.saved_tensors
        p = _weights(w, k, dim=0)  # BUG
        dist = _distance(k.shape[0], k.dtype)
        grad_p = torch.einsum("td,id->tid", grad_y, v)
        grad_logits = p * (grad_p - (grad_y * y)[:, None, :])
        grad_k = grad_logits.sum(0)
        grad_w = -(grad_logits * dist[:, :, None]).sum((0, 1))
        grad_v = torch.einsum("tid,td->id", p, grad_y)
        return grad_w, grad_k, grad_v

    @staticmethod
    def example_inputs():
        return _rwkv_inputs()
