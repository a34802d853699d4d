"""Companding: mu-law with a learned mu, dynamic range compression log1p(c*x) with learned
per-channel c, and three deliberate estimators (a straight-through mu-law quantiser, a gradient
reversal layer for speaker-adversarial features, a tanh surrogate for a 1-bit quantiser)."""
import math

import torch

LEVELS = 7
SURROGATE_K = 3.0


def _mulaw_inputs():
    gen = torch.Generator().manual_seed(41)
    mag = 0.1 + 0.8 * torch.rand(3, 4, dtype=torch.float64, generator=gen)
    sign = torch.tensor([[1.0, -1.0, 1.0, -1.0], [-1.0, 1.0, 1.0, -1.0], [1.0, 1.0, -1.0, -1.0]],
                        dtype=torch.float64)
    return mag * sign, torch.tensor([5.0], dtype=torch.float64)


def _mulaw_forward(ctx, x, mu):
    norm = torch.log1p(mu)
    y = torch.sign(x) * torch.log1p(mu * x.abs()) / norm
    ctx.save_for_backward(x, mu)
    return y


class FurtherMuLaw(torch.autograd.Function):
    """sign(x) log(1 + mu |x|) / log(1 + mu) with a learned mu (1,)."""
    bug = None

    @staticmethod
    def forward(ctx, x, mu):
        return _mulaw_forward(ctx, x, mu)

    @staticmethod
    def backward(ctx, grad):
        x, mu = ctx.saved_tensors
        a = x.abs()
        norm = torch.log1p(mu)
        g_x = grad * mu / ((1 + mu * a) * norm)
        d_mu = a / ((1 + mu * a) * norm) - torch.log1p(mu * a) / ((1 + mu) * norm * norm)
        g_mu = (grad * torch.sign(x) * d_mu).sum().reshape(1)
        return g_x, g_mu

    @staticmethod
    def example_inputs():
        return _mulaw_inputs()


class FurtherMuLawFixedNorm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "mu",
           "note": "the normaliser 1/log(1 + mu) is treated as a constant, its derivative term is left out"}

    @staticmethod
    def forward(ctx, x, mu):
        return _mulaw_forward(ctx, x, mu)

    @staticmethod
    def backward(ctx, grad):
        x, mu = ctx.saved_tensors
        a = x.abs()
        norm = torch.log1p(mu)
        g_x = grad * mu / ((1 + mu * a) * norm)
        d_mu = a / ((1 + mu * a) * norm)  # BUG
        g_mu = (grad * torch.sign(x) * d_mu).sum().reshape(1)
        return g_x, g_mu

    @staticmethod
    def example_inputs():
        return _mulaw_inputs()


class FurtherMuLawAbsChain(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "d|x|/dx = sign(x) is multiplied in although the outer sign(x) cancels it: wrong for negative samples only"}

    @staticmethod
    def forward(ctx, x, mu):
        return _mulaw_forward(ctx, x, mu)

    @staticmethod
    def backward(ctx, grad):
        x, mu = ctx.saved_tensors
        a = x.abs()
        norm = torch.log1p(mu)
        g_x = grad * torch.sign(x) * mu / ((1 + mu * a) * norm)  # BUG
        d_mu = a / ((1 + mu * a) * norm) - torch.log1p(mu * a) / ((1 + mu) * norm * norm)
        g_mu = (grad * torch.sign(x) * d_mu).sum().reshape(1)
        return g_x, g_mu

    @staticmethod
    def example_inputs():
        return _mulaw_inputs()


class FurtherMuLawMuGuess(torch.autograd.Function):
    bug = {"kind": "none", "input": "mu",
           "note": "d/dmu written as |x| / (1 + mu|x|)^2 times log(1 + mu): a made-up formula"}

    @staticmethod
    def forward(ctx, x, mu):
        return _mulaw_forward(ctx, x, mu)

    @staticmethod
    def backward(ctx, grad):
        x, mu = ctx.saved_tensors
        a = x.abs()
        norm = torch.log1p(mu)
        g_x = grad * mu / ((1 + mu * a) * norm)
        d_mu = a / (1 + mu * a) ** 2 * norm  # BUG
        g_mu = (grad * torch.sign(x) * d_mu).sum().reshape(1)
        return g_x, g_mu

    @staticmethod
    def example_inputs():
        return _mulaw_inputs()


def _drc_inputs():
    gen = torch.Generator().manual_seed(42)
    x = 0.1 + torch.rand(2, 3, 4, dtype=torch.float64, generator=gen)
    c = 1.0 + 4.0 * torch.rand(3, dtype=torch.float64, generator=gen)
    return x, c


class FurtherLog1pCompression(torch.autograd.Function):
    """log(1 + c x) on magnitudes (B, C, T) with a learned per-channel c (C,)."""
    bug = None

    @staticmethod
    def forward(ctx, x, c):
        u = c[:, None] * x
        ctx.save_for_backward(x, c)
        ctx.u = u
        return torch.log1p(u)

    @staticmethod
    def backward(ctx, grad):
        x, c = ctx.saved_tensors
        g_u = grad / (1 + ctx.u)
        return g_u * c[:, None], (g_u * x).sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        return _drc_inputs()


class FurtherLog1pCompressionBatchSum(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "c",
           "note": "the per-channel c's gradient is summed over the batch but not over time, (C, T) for a (C,) parameter"}

    @staticmethod
    def forward(ctx, x, c):
        u = c[:, None] * x
        ctx.save_for_backward(x, c)
        ctx.u = u
        return torch.log1p(u)

    @staticmethod
    def backward(ctx, grad):
        x, c = ctx.saved_tensors
        g_u = grad / (1 + ctx.u)
        return g_u * c[:, None], (g_u * x).sum(dim=0)  # BUG

    @staticmethod
    def example_inputs():
        return _drc_inputs()


class FurtherLog1pCompressionInplace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "u = c x is kept on ctx and then turned into the output by log1p_ in place, so backward divides by 1 + log1p(u)"}

    @staticmethod
    def forward(ctx, x, c):
        u = c[:, None] * x
        ctx.save_for_backward(x, c)
        ctx.u = u
        return u.log1p_()  # BUG

    @staticmethod
    def backward(ctx, grad):
        x, c = ctx.saved_tensors
        g_u = grad / (1 + ctx.u)
        return g_u * c[:, None], (g_u * x).sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        return _drc_inputs()


def _compand(x):
    return torch.sign(x) * torch.log1p(255 * x.abs()) / math.log(256)


def _expand(y):
    return torch.sign(y) * ((1 + 255) ** y.abs() - 1) / 255


class FurtherMuLawQuantizerSTE(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x",
           "note": "mu-law 8-level quantisation whose backward passes the gradient straight through"}

    @staticmethod
    def forward(ctx, x):
        return _expand(torch.round(_compand(x) * LEVELS) / LEVELS)

    @staticmethod
    def backward(ctx, grad):
        return grad  # BUG

    @staticmethod
    def example_inputs():
        return (_mulaw_inputs()[0],)


class FurtherSpeakerGradReversal(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "feats",
           "note": "identity forward, negated gradient backward (domain-adversarial speaker head)", "also": ["sign"]}

    @staticmethod
    def forward(ctx, feats):
        return feats.clone()

    @staticmethod
    def backward(ctx, grad):
        return -grad  # BUG


class FurtherOneBitSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "x",
           "note": "1-bit sign quantiser trained through the derivative of tanh(kx)"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        t = torch.tanh(SURROGATE_K * x)
        return grad * SURROGATE_K * (1 - t * t)  # BUG
