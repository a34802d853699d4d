"""Gated linear units (GLU by .chunk, GeGLU, SwiGLU) and rotary position embeddings by pairs."""
import math

import torch


def _glu_inputs():
    gen = torch.Generator().manual_seed(41)
    return (torch.randn(3, 6, dtype=torch.float64, generator=gen),)


class DistantGlu(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        a, b = x.chunk(2, dim=-1)
        s = torch.sigmoid(b)
        ctx.save_for_backward(a, b, s)
        return a * s

    @staticmethod
    def backward(ctx, grad_out):
        a, b, s = ctx.saved_tensors
        grad_a = grad_out * s
        grad_b = grad_out * a * s * (1 - s)
        return torch.cat([grad_a, grad_b], dim=-1)

    @staticmethod
    def example_inputs():
        return _glu_inputs()


class DistantGluGateHalfUsed(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the gate half's gradient multiplies by b (the gate's own input) where the value half a is needed"}

    @staticmethod
    def forward(ctx, x):
        a, b = x.chunk(2, dim=-1)
        s = torch.sigmoid(b)
        ctx.save_for_backward(a, b, s)
        return a * s

    @staticmethod
    def backward(ctx, grad_out):
        a, b, s = ctx.saved_tensors
        grad_a = grad_out * s
        grad_b = grad_out * b * s * (1 - s)  # BUG
        return torch.cat([grad_a, grad_b], dim=-1)

    @staticmethod
    def example_inputs():
        return _glu_inputs()


class DistantGluSiluDerivative(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the gate half uses the derivative of silu(b) = b*sigmoid(b) instead of sigmoid(b)'s"}

    @staticmethod
    def forward(ctx, x):
        a, b = x.chunk(2, dim=-1)
        s = torch.sigmoid(b)
        ctx.save_for_backward(a, b, s)
        return a * s

    @staticmethod
    def backward(ctx, grad_out):
        a, b, s = ctx.saved_tensors
        grad_a = grad_out * s
        grad_b = grad_out * a * (s + b * s * (1 - s))  # BUG
        return torch.cat([grad_a, grad_b], dim=-1)

    @staticmethod
    def example_inputs():
        return _glu_inputs()


def _gelu(u):
    return 0.5 * u * (1 + torch.erf(u / math.sqrt(2)))


def _gelu_grad(u):
    cdf = 0.5 * (1 + torch.erf(u / math.sqrt(2)))
    pdf = torch.exp(-0.5 * u * u) / math.sqrt(2 * math.pi)
    return cdf + u * pdf


def _geglu_inputs():
    gen = torch.Generator().manual_seed(42)
    return (torch.randn(5, 4, dtype=torch.float64, generator=gen),
            torch.randn(4, 4, dtype=torch.float64, generator=gen) * 0.7)


class DistantGeglu(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        h = x @ weight  # weight stored (in, 2 * hidden)
        a, b = h.chunk(2, dim=-1)
        ctx.save_for_backward(x, weight, a, b)
        return a * _gelu(b)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, a, b = ctx.saved_tensors
        grad_h = torch.cat([grad_out * _gelu(b), grad_out * a * _gelu_grad(b)], dim=-1)
        return grad_h @ weight.t(), x.t() @ grad_h

    @staticmethod
    def example_inputs():
        return _geglu_inputs()


class DistantGegluCdfOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "gelu'(b) written as Phi(b) only: the u * phi(u) term of the product rule is missing"}

    @staticmethod
    def forward(ctx, x, weight):
        h = x @ weight
        a, b = h.chunk(2, dim=-1)
        ctx.save_for_backward(x, weight, a, b)
        return a * _gelu(b)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, a, b = ctx.saved_tensors
        cdf = 0.5 * (1 + torch.erf(b / math.sqrt(2)))
        grad_h = torch.cat([grad_out * _gelu(b), grad_out * a * cdf], dim=-1)  # BUG
        return grad_h @ weight.t(), x.t() @ grad_h

    @staticmethod
    def example_inputs():
        return _geglu_inputs()


class DistantGegluWeightLinearConvention(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "weight",
           "note": "weight's gradient written as grad_h.T @ x (nn.Linear's (out, in) layout) for a weight stored (in, out)"}

    @staticmethod
    def forward(ctx, x, weight):
        h = x @ weight
        a, b = h.chunk(2, dim=-1)
        ctx.save_for_backward(x, weight, a, b)
        return a * _gelu(b)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, a, b = ctx.saved_tensors
        grad_h = torch.cat([grad_out * _gelu(b), grad_out * a * _gelu_grad(b)], dim=-1)
        grad_w = grad_h.t() @ x  # BUG
        return grad_h @ weight.t(), grad_w

    @staticmethod
    def example_inputs():
        return _geglu_inputs()


def _swiglu_inputs():
    gen = torch.Generator().manual_seed(43)
    return (torch.randn(4, 3, dtype=torch.float64, generator=gen),
            torch.randn(3, 5, dtype=torch.float64, generator=gen),
            torch.randn(3, 5, dtype=torch.float64, generator=gen))


class DistantSwiglu(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w_gate, w_up):
        u = x @ w_gate
        v = x @ w_up
        ctx.save_for_backward(x, w_gate, w_up, u, v)
        return u * torch.sigmoid(u) * v

    @staticmethod
    def backward(ctx, grad_out):
        x, w_gate, w_up, u, v = ctx.saved_tensors
        s = torch.sigmoid(u)
        grad_u = grad_out * v * s * (1 + u * (1 - s))
        grad_v = grad_out * u * s
        grad_x = grad_u @ w_gate.mT + grad_v @ w_up.mT
        return grad_x, x.mT @ grad_u, x.mT @ grad_v

    @staticmethod
    def example_inputs():
        return _swiglu_inputs()


class DistantSwigluWeightsSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "w_gate",
           "note": "the gate and up projections' gradients are returned in each other's places"}

    @staticmethod
    def forward(ctx, x, w_gate, w_up):
        u = x @ w_gate
        v = x @ w_up
        ctx.save_for_backward(x, w_gate, w_up, u, v)
        return u * torch.sigmoid(u) * v

    @staticmethod
    def backward(ctx, grad_out):
        x, w_gate, w_up, u, v = ctx.saved_tensors
        s = torch.sigmoid(u)
        grad_u = grad_out * v * s * (1 + u * (1 - s))
        grad_v = grad_out * u * s
        grad_x = grad_u @ w_gate.mT + grad_v @ w_up.mT
        grad_up, grad_gate = x.mT @ grad_u, x.mT @ grad_v  # BUG
        return grad_x, grad_gate, grad_up

    @staticmethod
    def example_inputs():
        return _swiglu_inputs()


class DistantSwigluSiluPrimeSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "w_gate",
           "note": "silu'(u) written as s * (1 - u * (1 - s)): the sign of the u * s * (1 - s) term is flipped"}

    @staticmethod
    def forward(ctx, x, w_gate, w_up):
        u = x @ w_gate
        v = x @ w_up
        ctx.save_for_backward(x, w_gate, w_up, u, v)
        return u * torch.sigmoid(u) * v

    @staticmethod
    def backward(ctx, grad_out):
        x, w_gate, w_up, u, v = ctx.saved_tensors
        s = torch.sigmoid(u)
        grad_u = grad_out * v * s * (1 - u * (1 - s))  # BUG
        grad_v = grad_out * u * s
        grad_x = grad_u @ w_gate.mT + grad_v @ w_up.mT
        return grad_x, x.mT @ grad_u, x.mT @ grad_v

    @staticmethod
    def example_inputs():
        return _swiglu_inputs()


def _rope_inputs():
    gen = torch.Generator().manual_seed(44)
    return (torch.randn(2, 5, 6, dtype=torch.float64, generator=gen),)


def _rope_angles(seq, half, base, dtype):
    pos = torch.arange(seq, dtype=dtype)[:, None]
    inv = base ** (-torch.arange(half, dtype=dtype) / half)
    theta = pos * inv[None, :]
    return torch.cos(theta), torch.sin(theta)


class DistantRotary(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, base=10.0):
        b, t, d = x.shape
        cos, sin = _rope_angles(t, d // 2, base, x.dtype)
        pairs = x.reshape(b, t, d // 2, 2)
        x0, x1 = pairs[..., 0], pairs[..., 1]
        ctx.save_for_backward(cos, sin)
        return torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).reshape(b, t, d)

    @staticmethod
    def backward(ctx, grad_out):
        cos, sin = ctx.saved_tensors
        b, t, d = grad_out.shape
        g = grad_out.reshape(b, t, d // 2, 2)
        g0, g1 = g[..., 0], g[..., 1]
        grad = torch.stack([g0 * cos + g1 * sin, -g0 * sin + g1 * cos], dim=-1)
        return grad.reshape(b, t, d), None

    @staticmethod
    def example_inputs():
        return _rope_inputs()


class DistantRotaryForwardRotation(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "backward rotates grad_out by +theta (the forward's rotation matrix R) instead of by R transposed"}

    @staticmethod
    def forward(ctx, x, base=10.0):
        b, t, d = x.shape
        cos, sin = _rope_angles(t, d // 2, base, x.dtype)
        pairs = x.reshape(b, t, d // 2, 2)
        x0, x1 = pairs[..., 0], pairs[..., 1]
        ctx.save_for_backward(cos, sin)
        return torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).reshape(b, t, d)

    @staticmethod
    def backward(ctx, grad_out):
        cos, sin = ctx.saved_tensors
        b, t, d = grad_out.shape
        g = grad_out.reshape(b, t, d // 2, 2)
        g0, g1 = g[..., 0], g[..., 1]
        grad = torch.stack([g0 * cos - g1 * sin, g0 * sin + g1 * cos], dim=-1)  # BUG
        return grad.reshape(b, t, d), None

    @staticmethod
    def example_inputs():
        return _rope_inputs()


class DistantRotaryHalvesConcatenated(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x",
           "note": "the pair gradients are concatenated as two halves (cat) instead of stacked back into interleaved pairs",
           "also": ["transposed"]}

    @staticmethod
    def forward(ctx, x, base=10.0):
        b, t, d = x.shape
        cos, sin = _rope_angles(t, d // 2, base, x.dtype)
        pairs = x.reshape(b, t, d // 2, 2)
        x0, x1 = pairs[..., 0], pairs[..., 1]
        ctx.save_for_backward(cos, sin)
        return torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).reshape(b, t, d)

    @staticmethod
    def backward(ctx, grad_out):
        cos, sin = ctx.saved_tensors
        b, t, d = grad_out.shape
        g = grad_out.reshape(b, t, d // 2, 2)
        g0, g1 = g[..., 0], g[..., 1]
        grad = torch.cat([g0 * cos + g1 * sin, -g0 * sin + g1 * cos], dim=-1)  # BUG
        return grad, None

    @staticmethod
    def example_inputs():
        return _rope_inputs()
