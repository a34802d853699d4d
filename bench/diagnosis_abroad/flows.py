"""Flow layers: a planar flow (its map and its log-determinant), an affine coupling layer whose scale
and shift come from the first half, and the causal 1-D convolution of an autoregressive shift."""
import torch
import torch.nn.functional as F


def _planar_inputs():
    gen = torch.Generator().manual_seed(7)
    z = torch.randn(4, 4, dtype=torch.float64, generator=gen)
    u = 0.5 * torch.randn(4, dtype=torch.float64, generator=gen)
    w = 0.5 * torch.randn(4, dtype=torch.float64, generator=gen)
    b = torch.tensor([0.2], dtype=torch.float64)
    return z, u, w, b


# ----------------------------------------------------------------- planar flow f(z) = z + u tanh(w.z + b)
class AbroadPlanarFlow(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, z, u, w, b):
        a = z @ w + b
        h = torch.tanh(a)
        ctx.save_for_backward(z, u, w, a, h)
        return z + h[:, None] * u[None, :]

    @staticmethod
    def backward(ctx, g):
        z, u, w, a, h = ctx.saved_tensors
        grad_u = h @ g
        da = (g @ u) * (1 - h * h)
        grad_z = g + da[:, None] * w[None, :]
        grad_w = z.mT @ da
        grad_b = da.sum(0, keepdim=True)
        return grad_z, grad_u, grad_w, grad_b

    @staticmethod
    def example_inputs():
        return _planar_inputs()


class AbroadPlanarFlowNoSkip(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "z",
           "note": "the identity (skip) part of dz + u tanh(.) is left out of the z gradient"}

    @staticmethod
    def forward(ctx, z, u, w, b):
        a = z @ w + b
        h = torch.tanh(a)
        ctx.save_for_backward(z, u, w, a, h)
        return z + h[:, None] * u[None, :]

    @staticmethod
    def backward(ctx, g):
        z, u, w, a, h = ctx.saved_tensors
        grad_u = h @ g
        da = (g @ u) * (1 - h * h)
        grad_z = da[:, None] * w[None, :]  # BUG
        grad_w = z.mT @ da
        grad_b = da.sum(0, keepdim=True)
        return grad_z, grad_u, grad_w, grad_b

    @staticmethod
    def example_inputs():
        return _planar_inputs()


class AbroadPlanarFlowPreactU(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "u",
           "note": "the u gradient uses the saved pre-activation a instead of h = tanh(a)"}

    @staticmethod
    def forward(ctx, z, u, w, b):
        a = z @ w + b
        h = torch.tanh(a)
        ctx.save_for_backward(z, u, w, a, h)
        return z + h[:, None] * u[None, :]

    @staticmethod
    def backward(ctx, g):
        z, u, w, a, h = ctx.saved_tensors
        grad_u = a @ g  # BUG
        da = (g @ u) * (1 - h * h)
        grad_z = g + da[:, None] * w[None, :]
        grad_w = z.mT @ da
        grad_b = da.sum(0, keepdim=True)
        return grad_z, grad_u, grad_w, grad_b

    @staticmethod
    def example_inputs():
        return _planar_inputs()


class AbroadPlanarFlowWeightT(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "w",
           "note": "the w gradient is z @ da instead of z.mT @ da (square z hides the shape error)"}

    @staticmethod
    def forward(ctx, z, u, w, b):
        a = z @ w + b
        h = torch.tanh(a)
        ctx.save_for_backward(z, u, w, a, h)
        return z + h[:, None] * u[None, :]

    @staticmethod
    def backward(ctx, g):
        z, u, w, a, h = ctx.saved_tensors
        grad_u = h @ g
        da = (g @ u) * (1 - h * h)
        grad_z = g + da[:, None] * w[None, :]
        grad_w = z @ da  # BUG
        grad_b = da.sum(0, keepdim=True)
        return grad_z, grad_u, grad_w, grad_b

    @staticmethod
    def example_inputs():
        return _planar_inputs()


# ----------------------------------------------------------------- planar flow log|det J| = log|1 + u.psi|
class AbroadPlanarLogDet(torch.autograd.Function):
    """log|1 + (1 - tanh(w.z + b)^2) w.u| per row of z."""

    bug = None

    @staticmethod
    def forward(ctx, z, u, w, b):
        h = torch.tanh(z @ w + b)
        c = torch.dot(w, u)
        s = 1 + (1 - h * h) * c
        ctx.save_for_backward(z, u, w, h, s)
        return torch.log(s.abs())

    @staticmethod
    def backward(ctx, g):
        z, u, w, h, s = ctx.saved_tensors
        c = torch.dot(w, u)
        gs = g / s
        one_minus = 1 - h * h
        ga = gs * (-2 * h * one_minus * c)
        grad_z = ga[:, None] * w[None, :]
        k = (gs * one_minus).sum()
        grad_u = k * w
        grad_w = z.mT @ ga + k * u
        grad_b = ga.sum(0, keepdim=True)
        return grad_z, grad_u, grad_w, grad_b

    @staticmethod
    def example_inputs():
        return _planar_inputs()


class AbroadPlanarLogDetSquaredInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "z",
           "note": "h is saved, then turned into 1 - h^2 in place, so backward reads 1 - h^2 where it expects h"}

    @staticmethod
    def forward(ctx, z, u, w, b):
        h = torch.tanh(z @ w + b)
        c = torch.dot(w, u)
        ctx.save_for_backward(z, u, w, h)
        one_minus = h.mul_(h).neg_().add_(1)  # BUG
        s = 1 + one_minus * c
        ctx.s = s
        return torch.log(s.abs())

    @staticmethod
    def backward(ctx, g):
        z, u, w, h = ctx.saved_tensors
        s = ctx.s
        c = torch.dot(w, u)
        gs = g / s
        one_minus = 1 - h * h
        ga = gs * (-2 * h * one_minus * c)
        grad_z = ga[:, None] * w[None, :]
        k = (gs * one_minus).sum()
        grad_u = k * w
        grad_w = z.mT @ ga + k * u
        grad_b = ga.sum(0, keepdim=True)
        return grad_z, grad_u, grad_w, grad_b

    @staticmethod
    def example_inputs():
        return _planar_inputs()


class AbroadPlanarLogDetDropsUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "z",
           "note": "the z gradient divides by s but never multiplies by grad_output"}

    @staticmethod
    def forward(ctx, z, u, w, b):
        h = torch.tanh(z @ w + b)
        c = torch.dot(w, u)
        s = 1 + (1 - h * h) * c
        ctx.save_for_backward(z, u, w, h, s)
        return torch.log(s.abs())

    @staticmethod
    def backward(ctx, g):
        z, u, w, h, s = ctx.saved_tensors
        c = torch.dot(w, u)
        gs = g / s
        one_minus = 1 - h * h
        ga = gs * (-2 * h * one_minus * c)
        grad_z = (-2 * h * one_minus * c / s)[:, None] * w[None, :]  # BUG
        k = (gs * one_minus).sum()
        grad_u = k * w
        grad_w = z.mT @ ga + k * u
        grad_b = ga.sum(0, keepdim=True)
        return grad_z, grad_u, grad_w, grad_b

    @staticmethod
    def example_inputs():
        return _planar_inputs()


# ----------------------------------------------------------------- affine coupling
def _coupling_inputs():
    gen = torch.Generator().manual_seed(9)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    w_s = 0.5 * torch.randn(2, 2, dtype=torch.float64, generator=gen)
    w_t = torch.randn(2, 2, dtype=torch.float64, generator=gen)
    return x, w_s, w_t


class AbroadAffineCoupling(torch.autograd.Function):
    """[x1, x2] -> [x1, x2 * exp(tanh(x1 W_s)) + x1 W_t] (RealNVP-style, scale and shift from x1)."""

    bug = None

    @staticmethod
    def forward(ctx, x, w_s, w_t):
        x1, x2 = x.chunk(2, dim=1)
        s = torch.tanh(x1 @ w_s)
        y2 = x2 * s.exp() + x1 @ w_t
        ctx.save_for_backward(x1, x2, s, y2, w_s, w_t)
        return torch.cat([x1, y2], dim=1)

    @staticmethod
    def backward(ctx, g):
        x1, x2, s, y2, w_s, w_t = ctx.saved_tensors
        g1, g2 = g.chunk(2, dim=1)
        es = s.exp()
        d_pre = g2 * x2 * es * (1 - s * s)
        grad_x1 = g1 + d_pre @ w_s.mT + g2 @ w_t.mT
        grad_x = torch.cat([grad_x1, g2 * es], dim=1)
        return grad_x, x1.mT @ d_pre, x1.mT @ g2

    @staticmethod
    def example_inputs():
        return _coupling_inputs()


class AbroadAffineCouplingShiftT(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "w_t",
           "note": "the shift weight's gradient is g2.T @ x1, the transpose of x1.T @ g2"}

    @staticmethod
    def forward(ctx, x, w_s, w_t):
        x1, x2 = x.chunk(2, dim=1)
        s = torch.tanh(x1 @ w_s)
        y2 = x2 * s.exp() + x1 @ w_t
        ctx.save_for_backward(x1, x2, s, y2, w_s, w_t)
        return torch.cat([x1, y2], dim=1)

    @staticmethod
    def backward(ctx, g):
        x1, x2, s, y2, w_s, w_t = ctx.saved_tensors
        g1, g2 = g.chunk(2, dim=1)
        es = s.exp()
        d_pre = g2 * x2 * es * (1 - s * s)
        grad_x1 = g1 + d_pre @ w_s.mT + g2 @ w_t.mT
        grad_x = torch.cat([grad_x1, g2 * es], dim=1)
        grad_w_t = g2.mT @ x1  # BUG
        return grad_x, x1.mT @ d_pre, grad_w_t

    @staticmethod
    def example_inputs():
        return _coupling_inputs()


class AbroadAffineCouplingUsesOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "w_s",
           "note": "the scale path uses the saved output y2 for x2 * exp(s), so the shift t leaks into it"}

    @staticmethod
    def forward(ctx, x, w_s, w_t):
        x1, x2 = x.chunk(2, dim=1)
        s = torch.tanh(x1 @ w_s)
        y2 = x2 * s.exp() + x1 @ w_t
        ctx.save_for_backward(x1, x2, s, y2, w_s, w_t)
        return torch.cat([x1, y2], dim=1)

    @staticmethod
    def backward(ctx, g):
        x1, x2, s, y2, w_s, w_t = ctx.saved_tensors
        g1, g2 = g.chunk(2, dim=1)
        es = s.exp()
        d_pre = g2 * y2 * (1 - s * s)  # BUG
        grad_x1 = g1 + d_pre @ w_s.mT + g2 @ w_t.mT
        grad_x = torch.cat([grad_x1, g2 * es], dim=1)
        return grad_x, x1.mT @ d_pre, x1.mT @ g2

    @staticmethod
    def example_inputs():
        return _coupling_inputs()


# ----------------------------------------------------------------- causal conv (autoregressive shift)
def _causal_inputs():
    gen = torch.Generator().manual_seed(4)
    return (torch.randn(2, 1, 6, dtype=torch.float64, generator=gen),
            torch.randn(1, 1, 3, dtype=torch.float64, generator=gen))


class AbroadCausalConvShift(torch.autograd.Function):
    """y_t = sum_k w_k x_{t + k - 2}: a causal conv (left padding) giving an autoregressive flow's shift."""

    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        k = weight.shape[-1]
        xp = F.pad(x, (k - 1, 0))
        ctx.save_for_backward(xp, weight)
        return F.conv1d(xp, weight)

    @staticmethod
    def backward(ctx, g):
        xp, weight = ctx.saved_tensors
        k = weight.shape[-1]
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = F.conv1d(F.pad(g, (0, k - 1)), weight.flip(-1))
        if ctx.needs_input_grad[1]:
            grad_w = F.conv1d(xp.transpose(0, 1), g.transpose(0, 1))
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _causal_inputs()


class AbroadCausalConvShiftNoFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the input gradient correlates g with the kernel as it is instead of the flipped kernel"}

    @staticmethod
    def forward(ctx, x, weight):
        k = weight.shape[-1]
        xp = F.pad(x, (k - 1, 0))
        ctx.save_for_backward(xp, weight)
        return F.conv1d(xp, weight)

    @staticmethod
    def backward(ctx, g):
        xp, weight = ctx.saved_tensors
        k = weight.shape[-1]
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = F.conv1d(F.pad(g, (0, k - 1)), weight)  # BUG
        if ctx.needs_input_grad[1]:
            grad_w = F.conv1d(xp.transpose(0, 1), g.transpose(0, 1))
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _causal_inputs()
