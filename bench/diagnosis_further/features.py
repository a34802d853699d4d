"""Frame-level features: a spectral centroid, frame energy in dB and a soft zero-crossing rate."""
import math

import torch

DB_EPS = 1e-3
SHARPNESS = 2.0


def _centroid_forward(ctx, mag):
    freqs = torch.arange(mag.shape[-1], dtype=mag.dtype)
    total = mag.sum(dim=-1)
    centroid = (mag * freqs).sum(dim=-1) / total
    ctx.save_for_backward(mag, centroid)
    return centroid


def _centroid_inputs():
    gen = torch.Generator().manual_seed(31)
    return (0.2 + torch.rand(2, 3, 5, dtype=torch.float64, generator=gen),)


class FurtherSpectralCentroid(torch.autograd.Function):
    """sum_k f_k m_k / sum_k m_k per frame, magnitudes (B, T, K)."""
    bug = None

    @staticmethod
    def forward(ctx, mag):
        return _centroid_forward(ctx, mag)

    @staticmethod
    def backward(ctx, grad):
        mag, centroid = ctx.saved_tensors
        freqs = torch.arange(mag.shape[-1], dtype=mag.dtype)
        total = mag.sum(dim=-1, keepdim=True)
        return grad.unsqueeze(-1) * (freqs - centroid.unsqueeze(-1)) / total

    @staticmethod
    def example_inputs():
        return _centroid_inputs()


class FurtherSpectralCentroidNoQuotient(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "mag",
           "note": "the quotient rule's -centroid/total term (the denominator's derivative) is left out"}

    @staticmethod
    def forward(ctx, mag):
        return _centroid_forward(ctx, mag)

    @staticmethod
    def backward(ctx, grad):
        mag, centroid = ctx.saved_tensors
        freqs = torch.arange(mag.shape[-1], dtype=mag.dtype)
        total = mag.sum(dim=-1, keepdim=True)
        return grad.unsqueeze(-1) * freqs / total  # BUG

    @staticmethod
    def example_inputs():
        return _centroid_inputs()


class FurtherSpectralCentroidTimeTotal(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "mag",
           "note": "the total magnitude is recomputed in backward over time (dim 1) instead of over frequency bins"}

    @staticmethod
    def forward(ctx, mag):
        return _centroid_forward(ctx, mag)

    @staticmethod
    def backward(ctx, grad):
        mag, centroid = ctx.saved_tensors
        freqs = torch.arange(mag.shape[-1], dtype=mag.dtype)
        total = mag.sum(dim=1, keepdim=True)  # BUG
        return grad.unsqueeze(-1) * (freqs - centroid.unsqueeze(-1)) / total

    @staticmethod
    def example_inputs():
        return _centroid_inputs()


class FurtherSpectralCentroidPlusCentroid(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "mag",
           "note": "(f*S - N)/S^2 written as (f + centroid)/S: the quotient rule's second term gets a plus"}

    @staticmethod
    def forward(ctx, mag):
        return _centroid_forward(ctx, mag)

    @staticmethod
    def backward(ctx, grad):
        mag, centroid = ctx.saved_tensors
        freqs = torch.arange(mag.shape[-1], dtype=mag.dtype)
        total = mag.sum(dim=-1, keepdim=True)
        return grad.unsqueeze(-1) * (freqs + centroid.unsqueeze(-1)) / total  # BUG

    @staticmethod
    def example_inputs():
        return _centroid_inputs()


def _energy_forward(ctx, frames):
    power = (frames * frames).mean(dim=-1)
    ctx.save_for_backward(frames, power)
    return 10 * torch.log10(power + DB_EPS)


def _energy_inputs():
    gen = torch.Generator().manual_seed(32)  # B = F = N = 3: an un-unsqueezed grad still broadcasts
    return (torch.randn(3, 3, 3, dtype=torch.float64, generator=gen),)


class FurtherFrameEnergyDb(torch.autograd.Function):
    """10 log10(mean(x^2) + eps) per frame, frames (B, F, N)."""
    bug = None

    @staticmethod
    def forward(ctx, frames):
        return _energy_forward(ctx, frames)

    @staticmethod
    def backward(ctx, grad):
        frames, power = ctx.saved_tensors
        n = frames.shape[-1]
        coeff = 10 / (math.log(10) * (power + DB_EPS))
        return (grad * coeff).unsqueeze(-1) * 2 * frames / n

    @staticmethod
    def example_inputs():
        return _energy_inputs()


class FurtherFrameEnergyDbNaturalLog(torch.autograd.Function):
    bug = {"kind": "scale", "input": "frames",
           "note": "d log10(p) is taken as 1/p, forgetting the 1/ln(10)"}

    @staticmethod
    def forward(ctx, frames):
        return _energy_forward(ctx, frames)

    @staticmethod
    def backward(ctx, grad):
        frames, power = ctx.saved_tensors
        n = frames.shape[-1]
        coeff = 10 / (power + DB_EPS)  # BUG
        return (grad * coeff).unsqueeze(-1) * 2 * frames / n

    @staticmethod
    def example_inputs():
        return _energy_inputs()


class FurtherFrameEnergyDbFlatGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "frames",
           "note": "grad (B, F) is multiplied in without unsqueeze(-1), so it broadcasts along the wrong axes"}

    @staticmethod
    def forward(ctx, frames):
        return _energy_forward(ctx, frames)

    @staticmethod
    def backward(ctx, grad):
        frames, power = ctx.saved_tensors
        n = frames.shape[-1]
        coeff = 10 / (math.log(10) * (power + DB_EPS))
        return grad * coeff.unsqueeze(-1) * 2 * frames / n  # BUG

    @staticmethod
    def example_inputs():
        return _energy_inputs()


def _zcr_forward(ctx, x):
    s = torch.tanh(SHARPNESS * x)
    ctx.save_for_backward(x, s)
    return ((1 - s[:, :-1] * s[:, 1:]) / 2).mean(dim=-1)


def _zcr_inputs():
    gen = torch.Generator().manual_seed(33)
    return (0.6 * torch.randn(3, 6, dtype=torch.float64, generator=gen),)


class FurtherSoftZeroCrossing(torch.autograd.Function):
    """Soft zero-crossing rate: mean over t of (1 - tanh(k x_t) tanh(k x_t+1)) / 2."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _zcr_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad):
        x, s = ctx.saved_tensors
        pairs = x.shape[1] - 1
        g_s = torch.zeros_like(s)
        g_s[:, :-1] -= s[:, 1:] / 2
        g_s[:, 1:] -= s[:, :-1] / 2
        return grad[:, None] / pairs * g_s * SHARPNESS * (1 - s * s)

    @staticmethod
    def example_inputs():
        return _zcr_inputs()


class FurtherSoftZeroCrossingLeftOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "each sample is in two pairs; only the pair where it is the left element contributes"}

    @staticmethod
    def forward(ctx, x):
        return _zcr_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad):
        x, s = ctx.saved_tensors
        pairs = x.shape[1] - 1
        g_s = torch.zeros_like(s)
        g_s[:, :-1] -= s[:, 1:] / 2  # BUG
        return grad[:, None] / pairs * g_s * SHARPNESS * (1 - s * s)

    @staticmethod
    def example_inputs():
        return _zcr_inputs()


class FurtherSoftZeroCrossingTanhOfInput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "tanh' is written 1 - x^2 with the input instead of 1 - tanh(kx)^2"}

    @staticmethod
    def forward(ctx, x):
        return _zcr_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad):
        x, s = ctx.saved_tensors
        pairs = x.shape[1] - 1
        g_s = torch.zeros_like(s)
        g_s[:, :-1] -= s[:, 1:] / 2
        g_s[:, 1:] -= s[:, :-1] / 2
        return grad[:, None] / pairs * g_s * SHARPNESS * (1 - x * x)  # BUG

    @staticmethod
    def example_inputs():
        return _zcr_inputs()


class FurtherSoftZeroCrossingPerSample(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the mean is taken over T samples in backward, but there are T - 1 pairs"}

    @staticmethod
    def forward(ctx, x):
        return _zcr_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad):
        x, s = ctx.saved_tensors
        pairs = x.shape[1]  # BUG
        g_s = torch.zeros_like(s)
        g_s[:, :-1] -= s[:, 1:] / 2
        g_s[:, 1:] -= s[:, :-1] / 2
        return grad[:, None] / pairs * g_s * SHARPNESS * (1 - s * s)

    @staticmethod
    def example_inputs():
        return _zcr_inputs()
