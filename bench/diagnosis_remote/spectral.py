"""Spectral front ends written by hand: a DFT power spectrum by matmul with cos/sin matrices, a
log-mel by matmul + log(eps + .), and an STFT power by framing, windowing and the DFT matrices."""
import math

import torch


def _dft(n, bins, dtype=torch.float64):
    t = torch.arange(n, dtype=dtype)[:, None]
    k = torch.arange(bins, dtype=dtype)[None, :]
    ang = 2 * math.pi * t * k / n
    return torch.cos(ang), -torch.sin(ang)


def _hann(n, dtype=torch.float64):
    return 0.5 - 0.5 * torch.cos(2 * math.pi * torch.arange(n, dtype=dtype) / n)


def _signal(*shape, seed=0):
    return torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


# ------------------------------------------------------------------ DFT power spectrum
class RemoteDFTPower(torch.autograd.Function):
    """|rfft(x)|^2 over the last dim, as (x C)^2 + (x S)^2."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        C, S = _dft(x.shape[-1], x.shape[-1] // 2 + 1)
        re, im = x @ C, x @ S
        ctx.save_for_backward(re, im, C, S)
        return re * re + im * im

    @staticmethod
    def backward(ctx, grad_power):
        re, im, C, S = ctx.saved_tensors
        return 2 * (grad_power * re) @ C.T + 2 * (grad_power * im) @ S.T

    @staticmethod
    def example_inputs():
        return (_signal(3, 8),)


class RemoteDFTPowerRealOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "only the real part's contribution 2 (g re) C^T; the imaginary part's 2 (g im) S^T is dropped"}

    @staticmethod
    def forward(ctx, x):
        C, S = _dft(x.shape[-1], x.shape[-1] // 2 + 1)
        re, im = x @ C, x @ S
        ctx.save_for_backward(re, im, C, S)
        return re * re + im * im

    @staticmethod
    def backward(ctx, grad_power):
        re, im, C, S = ctx.saved_tensors
        grad_re = 2 * grad_power * re
        grad_im = 2 * grad_power * im
        grad_x = grad_re @ C.T  # BUG
        return grad_x

    @staticmethod
    def example_inputs():
        return (_signal(3, 8),)


class RemoteDFTPowerNoTwo(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "d(re^2)/d re = 2 re: the factor 2 of the square is forgotten on both parts"}

    @staticmethod
    def forward(ctx, x):
        C, S = _dft(x.shape[-1], x.shape[-1] // 2 + 1)
        re, im = x @ C, x @ S
        ctx.save_for_backward(re, im, C, S)
        return re * re + im * im

    @staticmethod
    def backward(ctx, grad_power):
        re, im, C, S = ctx.saved_tensors
        return (grad_power * re) @ C.T + (grad_power * im) @ S.T  # BUG

    @staticmethod
    def example_inputs():
        return (_signal(3, 8, seed=1),)


# ------------------------------------------------------------------ log-mel
class RemoteLogMel(torch.autograd.Function):
    """log(eps + power @ fb) with a learnable filterbank fb (bins x bands)."""
    bug = None

    @staticmethod
    def forward(ctx, power, fb, eps: float = 0.5):
        mel = power @ fb
        ctx.save_for_backward(power, fb, mel)
        ctx.eps = eps
        return torch.log(eps + mel)

    @staticmethod
    def backward(ctx, grad_out):
        power, fb, mel = ctx.saved_tensors
        g = grad_out / (ctx.eps + mel)
        grad_power = g @ fb.mT
        grad_fb = torch.einsum("btf,btm->fm", power, g)
        return grad_power, grad_fb, None

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(2)
        power = torch.rand(2, 3, 5, dtype=torch.float64, generator=gen) + 0.1
        fb = torch.rand(5, 5, dtype=torch.float64, generator=gen) + 0.1
        return power, fb, 0.5


class RemoteLogMelDividesByLog(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "power",
           "note": "divides by the saved output log(eps + mel) instead of the argument eps + mel"}

    @staticmethod
    def forward(ctx, power, fb, eps: float = 0.5):
        mel = power @ fb
        out = torch.log(eps + mel)
        ctx.save_for_backward(power, fb, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        power, fb, out = ctx.saved_tensors
        g = grad_out / out  # BUG
        grad_power = g @ fb.mT
        grad_fb = torch.einsum("btf,btm->fm", power, g)
        return grad_power, grad_fb, None

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(3)
        power = torch.rand(2, 3, 5, dtype=torch.float64, generator=gen) + 0.5
        fb = torch.rand(5, 5, dtype=torch.float64, generator=gen) + 0.5
        return power, fb, 0.5


class RemoteLogMelNoTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "power",
           "note": "grad_power = g @ fb instead of g @ fb.mT (the square filterbank hides the shape error)"}

    @staticmethod
    def forward(ctx, power, fb, eps: float = 0.5):
        mel = power @ fb
        ctx.save_for_backward(power, fb, mel)
        ctx.eps = eps
        return torch.log(eps + mel)

    @staticmethod
    def backward(ctx, grad_out):
        power, fb, mel = ctx.saved_tensors
        g = grad_out / (ctx.eps + mel)
        grad_fb = torch.einsum("btf,btm->fm", power, g)
        grad_power = g @ fb  # BUG
        return grad_power, grad_fb, None

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(4)
        power = torch.rand(2, 3, 5, dtype=torch.float64, generator=gen) + 0.1
        fb = torch.rand(5, 5, dtype=torch.float64, generator=gen) + 0.1
        return power, fb, 0.5


# ------------------------------------------------------------------ STFT power
N_FFT, HOP = 4, 2


class RemoteSTFTPower(torch.autograd.Function):
    """Frames of a (B, L) signal (n_fft 4, hop 2), Hann window, DFT power per frame: (B, T, 3)."""
    bug = None

    @staticmethod
    def forward(ctx, signal):
        frames = signal.unfold(-1, N_FFT, HOP) * _hann(N_FFT)
        C, S = _dft(N_FFT, N_FFT // 2 + 1)
        re, im = frames @ C, frames @ S
        ctx.save_for_backward(re, im)
        ctx.length = signal.shape[-1]
        return re ** 2 + im ** 2

    @staticmethod
    def backward(ctx, grad_out):
        re, im = ctx.saved_tensors
        C, S = _dft(N_FFT, N_FFT // 2 + 1)
        grad_frames = (2 * (grad_out * re) @ C.T + 2 * (grad_out * im) @ S.T) * _hann(N_FFT)
        grad_signal = grad_out.new_zeros(grad_out.shape[0], ctx.length)
        for t in range(grad_frames.shape[1]):
            grad_signal[:, t * HOP:t * HOP + N_FFT] += grad_frames[:, t]
        return grad_signal

    @staticmethod
    def example_inputs():
        return (_signal(2, 10, seed=5),)


class RemoteSTFTPowerFramesOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "signal",
           "note": "overlapping frames are written back with = instead of +=: the overlap keeps only the last frame"}

    @staticmethod
    def forward(ctx, signal):
        frames = signal.unfold(-1, N_FFT, HOP) * _hann(N_FFT)
        C, S = _dft(N_FFT, N_FFT // 2 + 1)
        re, im = frames @ C, frames @ S
        ctx.save_for_backward(re, im)
        ctx.length = signal.shape[-1]
        return re ** 2 + im ** 2

    @staticmethod
    def backward(ctx, grad_out):
        re, im = ctx.saved_tensors
        C, S = _dft(N_FFT, N_FFT // 2 + 1)
        grad_frames = (2 * (grad_out * re) @ C.T + 2 * (grad_out * im) @ S.T) * _hann(N_FFT)
        grad_signal = grad_out.new_zeros(grad_out.shape[0], ctx.length)
        for t in range(grad_frames.shape[1]):
            grad_signal[:, t * HOP:t * HOP + N_FFT] = grad_frames[:, t]  # BUG
        return grad_signal

    @staticmethod
    def example_inputs():
        return (_signal(2, 10, seed=6),)
