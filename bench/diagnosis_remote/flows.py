"""Normalizing-flow layers with their log-determinants: an affine coupling layer with a tanh-scaled
log-scale, a planar flow, ActNorm with per-channel log-scale and bias, and an invertible 1x1 mixing
(x @ W^T per position) whose logdet comes from slogdet."""
import torch


def _g(seed):
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------ affine coupling
def _coupling_inputs(seed):
    gen = _g(seed)
    x = torch.randn(5, 6, dtype=torch.float64, generator=gen)
    weight = torch.randn(3, 3, dtype=torch.float64, generator=gen) * 0.6
    bias = torch.randn(3, dtype=torch.float64, generator=gen) * 0.3
    return x, weight, bias


def _coupling_forward(ctx, x, weight, bias):
    x1, x2 = x.chunk(2, dim=-1)
    h = x1 @ weight + bias
    s = torch.tanh(h)
    e = torch.exp(s)
    ctx.save_for_backward(x1, x2, weight, h, s, e)
    return torch.cat([x1, x2 * e], dim=-1), s.sum(-1)


class RemoteAffineCoupling(torch.autograd.Function):
    """y = [x1, x2 * exp(tanh(x1 W + b))], logdet = sum tanh(x1 W + b)."""
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _coupling_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_y, grad_logdet):
        x1, x2, weight, h, s, e = ctx.saved_tensors
        gy1, gy2 = grad_y.chunk(2, dim=-1)
        grad_s = gy2 * x2 * e + grad_logdet[:, None]
        grad_h = grad_s * (1 - s * s)
        grad_x = torch.cat([gy1 + grad_h @ weight.T, gy2 * e], dim=-1)
        return grad_x, x1.T @ grad_h, grad_h.sum(0)

    @staticmethod
    def example_inputs():
        return _coupling_inputs(40)


class RemoteAffineCouplingNoLogdet(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "weight",
           "note": "the log-determinant's gradient grad_logdet never reaches the log-scale s (only the y2 path)"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _coupling_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_y, grad_logdet):
        x1, x2, weight, h, s, e = ctx.saved_tensors
        gy1, gy2 = grad_y.chunk(2, dim=-1)
        grad_s = gy2 * x2 * e  # BUG
        grad_h = grad_s * (1 - s * s)
        grad_x = torch.cat([gy1 + grad_h @ weight.T, gy2 * e], dim=-1)
        return grad_x, x1.T @ grad_h, grad_h.sum(0)

    @staticmethod
    def example_inputs():
        return _coupling_inputs(41)


class RemoteAffineCouplingTanhOfPre(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "bias",
           "note": "tanh' written 1 - h^2 with the pre-activation h instead of the saved output s = tanh(h)"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _coupling_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_y, grad_logdet):
        x1, x2, weight, h, s, e = ctx.saved_tensors
        gy1, gy2 = grad_y.chunk(2, dim=-1)
        grad_s = gy2 * x2 * e + grad_logdet[:, None]
        grad_h = grad_s * (1 - h * h)  # BUG
        grad_x = torch.cat([gy1 + grad_h @ weight.T, gy2 * e], dim=-1)
        return grad_x, x1.T @ grad_h, grad_h.sum(0)

    @staticmethod
    def example_inputs():
        return _coupling_inputs(42)


class RemoteAffineCouplingWeightTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "weight",
           "note": "grad_weight = grad_h^T x1 instead of x1^T grad_h (a square 3x3 weight, so no shape error)"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _coupling_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_y, grad_logdet):
        x1, x2, weight, h, s, e = ctx.saved_tensors
        gy1, gy2 = grad_y.chunk(2, dim=-1)
        grad_s = gy2 * x2 * e + grad_logdet[:, None]
        grad_h = grad_s * (1 - s * s)
        grad_x = torch.cat([gy1 + grad_h @ weight.T, gy2 * e], dim=-1)
        grad_weight = grad_h.T @ x1  # BUG
        return grad_x, grad_weight, grad_h.sum(0)

    @staticmethod
    def example_inputs():
        return _coupling_inputs(43)


class RemoteAffineCouplingNoPassthrough(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "x1 is also copied to the output unchanged: its identity gradient gy1 is forgotten, only the path through the scale net"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _coupling_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_y, grad_logdet):
        x1, x2, weight, h, s, e = ctx.saved_tensors
        gy1, gy2 = grad_y.chunk(2, dim=-1)
        grad_s = gy2 * x2 * e + grad_logdet[:, None]
        grad_h = grad_s * (1 - s * s)
        grad_x1 = grad_h @ weight.T  # BUG
        return torch.cat([grad_x1, gy2 * e], dim=-1), x1.T @ grad_h, grad_h.sum(0)

    @staticmethod
    def example_inputs():
        return _coupling_inputs(44)


# ------------------------------------------------------------------ planar flow
def _planar_inputs(seed):
    gen = _g(seed)
    z = torch.randn(6, 3, dtype=torch.float64, generator=gen)
    u = torch.randn(3, dtype=torch.float64, generator=gen) * 0.4
    w = torch.randn(3, dtype=torch.float64, generator=gen) * 0.4
    b = torch.randn(1, dtype=torch.float64, generator=gen)
    return z, u, w, b


def _planar_forward(ctx, z, u, w, b):
    a = z @ w + b
    h = torch.tanh(a)
    hp = 1 - h * h
    uw = torch.dot(u, w)
    det = 1 + hp * uw
    ctx.save_for_backward(z, u, w, a, h, hp, det)
    return z + h[:, None] * u, torch.log(det.abs())


class RemotePlanarFlow(torch.autograd.Function):
    """f(z) = z + u tanh(w.z + b), logdet = log|1 + tanh'(w.z + b) u.w|."""
    bug = None

    @staticmethod
    def forward(ctx, z, u, w, b):
        return _planar_forward(ctx, z, u, w, b)

    @staticmethod
    def backward(ctx, grad_y, grad_logdet):
        z, u, w, a, h, hp, det = ctx.saved_tensors
        uw = torch.dot(u, w)
        g_det = grad_logdet / det
        g_a = (grad_y @ u) * hp + g_det * uw * (-2 * h * hp)
        g_z = grad_y + g_a[:, None] * w
        g_u = (grad_y * h[:, None]).sum(0) + (g_det * hp).sum() * w
        g_w = (g_a[:, None] * z).sum(0) + (g_det * hp).sum() * u
        return g_z, g_u, g_w, g_a.sum().reshape(1)

    @staticmethod
    def example_inputs():
        return _planar_inputs(45)


class RemotePlanarFlowSecondDerivSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "z",
           "note": "d tanh'(a)/da = -2 tanh(a) tanh'(a): the log-det term enters g_a with the wrong sign"}

    @staticmethod
    def forward(ctx, z, u, w, b):
        return _planar_forward(ctx, z, u, w, b)

    @staticmethod
    def backward(ctx, grad_y, grad_logdet):
        z, u, w, a, h, hp, det = ctx.saved_tensors
        uw = torch.dot(u, w)
        g_det = grad_logdet / det
        g_a = (grad_y @ u) * hp + g_det * uw * (2 * h * hp)  # BUG
        g_z = grad_y + g_a[:, None] * w
        g_u = (grad_y * h[:, None]).sum(0) + (g_det * hp).sum() * w
        g_w = (g_a[:, None] * z).sum(0) + (g_det * hp).sum() * u
        return g_z, g_u, g_w, g_a.sum().reshape(1)

    @staticmethod
    def example_inputs():
        return _planar_inputs(46)


class RemotePlanarFlowPreActivation(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "u",
           "note": "u multiplies tanh(a) in the forward; the backward uses the pre-activation a instead of h"}

    @staticmethod
    def forward(ctx, z, u, w, b):
        return _planar_forward(ctx, z, u, w, b)

    @staticmethod
    def backward(ctx, grad_y, grad_logdet):
        z, u, w, a, h, hp, det = ctx.saved_tensors
        uw = torch.dot(u, w)
        g_det = grad_logdet / det
        g_a = (grad_y @ u) * hp - 2 * g_det * uw * h * hp
        g_z = grad_y + g_a[:, None] * w
        g_u = (grad_y * a[:, None]).sum(0) + (g_det * hp).sum() * w  # BUG
        g_w = (g_a[:, None] * z).sum(0) + (g_det * hp).sum() * u
        return g_z, g_u, g_w, g_a.sum().reshape(1)

    @staticmethod
    def example_inputs():
        return _planar_inputs(47)


# ------------------------------------------------------------------ ActNorm
def _actnorm_inputs(seed):
    gen = _g(seed)
    x = torch.randn(3, 3, 5, dtype=torch.float64, generator=gen)
    log_scale = torch.randn(3, dtype=torch.float64, generator=gen) * 0.3
    bias = torch.randn(3, dtype=torch.float64, generator=gen)
    return x, log_scale, bias


class RemoteActNorm(torch.autograd.Function):
    """y = (x + bias) * exp(log_scale) per channel of (B, C, L); logdet = L * sum(log_scale) per sample."""
    bug = None

    @staticmethod
    def forward(ctx, x, log_scale, bias):
        B, C, L = x.shape
        y = (x + bias.view(1, C, 1)) * torch.exp(log_scale).view(1, C, 1)
        ctx.save_for_backward(log_scale, y)
        ctx.length = L
        return y, (L * log_scale.sum()).expand(B).clone()

    @staticmethod
    def backward(ctx, grad_y, grad_logdet):
        log_scale, y = ctx.saved_tensors
        scale = torch.exp(log_scale).view(1, -1, 1)
        grad_x = grad_y * scale
        grad_ls = (grad_y * y).sum(dim=(0, 2)) + ctx.length * grad_logdet.sum()
        return grad_x, grad_ls, grad_x.sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        return _actnorm_inputs(48)


class RemoteActNormBiasBatchOnly(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "bias",
           "note": "the bias gradient is summed over the batch only, not over the length: (C, L) for a (C,) bias"}

    @staticmethod
    def forward(ctx, x, log_scale, bias):
        B, C, L = x.shape
        y = (x + bias.view(1, C, 1)) * torch.exp(log_scale).view(1, C, 1)
        ctx.save_for_backward(log_scale, y)
        ctx.length = L
        return y, (L * log_scale.sum()).expand(B).clone()

    @staticmethod
    def backward(ctx, grad_y, grad_logdet):
        log_scale, y = ctx.saved_tensors
        scale = torch.exp(log_scale).view(1, -1, 1)
        grad_x = grad_y * scale
        grad_ls = (grad_y * y).sum(dim=(0, 2)) + ctx.length * grad_logdet.sum()
        grad_bias = grad_x.sum(dim=0)  # BUG
        return grad_x, grad_ls, grad_bias

    @staticmethod
    def example_inputs():
        return _actnorm_inputs(49)


class RemoteActNormScaleWrongAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "log_scale",
           "note": "the per-channel sum is taken over dims (1, 2) (channel and length) instead of (0, 2) (batch and length)"}

    @staticmethod
    def forward(ctx, x, log_scale, bias):
        B, C, L = x.shape
        y = (x + bias.view(1, C, 1)) * torch.exp(log_scale).view(1, C, 1)
        ctx.save_for_backward(log_scale, y)
        ctx.length = L
        return y, (L * log_scale.sum()).expand(B).clone()

    @staticmethod
    def backward(ctx, grad_y, grad_logdet):
        log_scale, y = ctx.saved_tensors
        scale = torch.exp(log_scale).view(1, -1, 1)
        grad_x = grad_y * scale
        grad_ls = (grad_y * y).sum(dim=(1, 2)) + ctx.length * grad_logdet.sum()  # BUG
        return grad_x, grad_ls, grad_x.sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        return _actnorm_inputs(50)


# ------------------------------------------------------------------ invertible 1x1 mixing
def _mix_inputs(seed):
    gen = _g(seed)
    x = torch.randn(2, 4, 3, dtype=torch.float64, generator=gen)
    weight = torch.eye(3, dtype=torch.float64) + 0.4 * torch.randn(3, 3, dtype=torch.float64, generator=gen)
    return x, weight


class RemoteInvertibleMix(torch.autograd.Function):
    """y[b, t] = W x[b, t] for (B, T, C) inputs; logdet = T log|det W| per sample."""
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        B, T, _ = x.shape
        logabsdet = torch.linalg.slogdet(weight).logabsdet
        return x @ weight.mT, (T * logabsdet).expand(B).clone()

    @staticmethod
    def backward(ctx, grad_y, grad_logdet):
        x, weight = ctx.saved_tensors
        T = x.shape[1]
        grad_x = grad_y @ weight
        grad_w = torch.einsum("btd,btc->dc", grad_y, x)
        grad_w = grad_w + T * grad_logdet.sum() * torch.linalg.inv(weight).mT
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _mix_inputs(51)


class RemoteInvertibleMixInverseNotTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "weight",
           "note": "d log|det W| / dW = W^{-T}; the backward adds W^{-1}"}

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        B, T, _ = x.shape
        logabsdet = torch.linalg.slogdet(weight).logabsdet
        return x @ weight.mT, (T * logabsdet).expand(B).clone()

    @staticmethod
    def backward(ctx, grad_y, grad_logdet):
        x, weight = ctx.saved_tensors
        T = x.shape[1]
        grad_x = grad_y @ weight
        grad_w = torch.einsum("btd,btc->dc", grad_y, x)
        dlogdet = torch.linalg.inv(weight)  # BUG
        return grad_x, grad_w + T * grad_logdet.sum() * dlogdet

    @staticmethod
    def example_inputs():
        return _mix_inputs(52)


class RemoteInvertibleMixTraceLogdet(torch.autograd.Function):
    bug = {"kind": "none", "input": "weight",
           "note": "the logdet's gradient taken as that of trace(W - I) (the identity), a first-order approximation, not W^{-T}"}

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        B, T, _ = x.shape
        logabsdet = torch.linalg.slogdet(weight).logabsdet
        return x @ weight.mT, (T * logabsdet).expand(B).clone()

    @staticmethod
    def backward(ctx, grad_y, grad_logdet):
        x, weight = ctx.saved_tensors
        T = x.shape[1]
        grad_x = grad_y @ weight
        grad_w = torch.einsum("btd,btc->dc", grad_y, x)
        dlogdet = torch.eye(weight.shape[0], dtype=weight.dtype)  # BUG
        return grad_x, grad_w + T * grad_logdet.sum() * dlogdet

    @staticmethod
    def example_inputs():
        return _mix_inputs(53)
