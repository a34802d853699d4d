"""Spectral front ends: an STFT magnitude by unfold and fixed DFT matrices (learned window) and a
log-mel projection with a learned filterbank."""
import math

import torch

N_FFT, HOP = 4, 2
MEL_EPS = 0.1


def _dft(n_fft):
    """One-sided real DFT matrices (K, N): re = frames @ C.mT, im = frames @ S.mT."""
    k = torch.arange(n_fft // 2 + 1, dtype=torch.float64)
    n = torch.arange(n_fft, dtype=torch.float64)
    angle = 2 * math.pi * k[:, None] * n[None, :] / n_fft
    return torch.cos(angle), -torch.sin(angle)


def _stft_inputs():
    gen = torch.Generator().manual_seed(11)
    signal = torch.randn(2, 10, dtype=torch.float64, generator=gen)
    window = 0.5 + torch.rand(N_FFT, dtype=torch.float64, generator=gen)
    return signal, window


def _stft_forward(ctx, signal, window):
    frames = signal.unfold(-1, N_FFT, HOP)  # (B, F, N)
    cos, sin = _dft(N_FFT)
    windowed = frames * window
    re = windowed @ cos.mT
    im = windowed @ sin.mT
    mag = torch.sqrt(re * re + im * im)
    ctx.save_for_backward(frames, window, re, im, mag)
    ctx.length = signal.shape[-1]
    return mag


def _frame_index(n_frames):
    return (torch.arange(n_frames)[:, None] * HOP + torch.arange(N_FFT)[None, :]).reshape(-1)


class FurtherStftMagnitude(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, signal, window):
        return _stft_forward(ctx, signal, window)

    @staticmethod
    def backward(ctx, grad):
        frames, window, re, im, mag = ctx.saved_tensors
        cos, sin = _dft(N_FFT)
        g_windowed = (grad * re / mag) @ cos + (grad * im / mag) @ sin
        g_window = (g_windowed * frames).sum(dim=(0, 1))
        g_frames = g_windowed * window
        batch, n_frames, _ = frames.shape
        g_signal = torch.zeros(batch, ctx.length, dtype=grad.dtype)
        g_signal.index_add_(1, _frame_index(n_frames), g_frames.reshape(batch, -1))
        return g_signal, g_window

    @staticmethod
    def example_inputs():
        return _stft_inputs()


class FurtherStftMagnitudeRealOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "signal",
           "note": "the imaginary part's contribution grad*im/mag @ S is left out of the frames' gradient"}

    @staticmethod
    def forward(ctx, signal, window):
        return _stft_forward(ctx, signal, window)

    @staticmethod
    def backward(ctx, grad):
        frames, window, re, im, mag = ctx.saved_tensors
        cos, sin = _dft(N_FFT)
        g_windowed = (grad * re / mag) @ cos  # BUG
        g_window = (g_windowed * frames).sum(dim=(0, 1))
        g_frames = g_windowed * window
        batch, n_frames, _ = frames.shape
        g_signal = torch.zeros(batch, ctx.length, dtype=grad.dtype)
        g_signal.index_add_(1, _frame_index(n_frames), g_frames.reshape(batch, -1))
        return g_signal, g_window

    @staticmethod
    def example_inputs():
        return _stft_inputs()


class FurtherStftMagnitudeOverlapPut(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "signal",
           "note": "the overlapping frames' gradients are written back with index_put_ without accumulate, so overlaps keep only the last frame"}

    @staticmethod
    def forward(ctx, signal, window):
        return _stft_forward(ctx, signal, window)

    @staticmethod
    def backward(ctx, grad):
        frames, window, re, im, mag = ctx.saved_tensors
        cos, sin = _dft(N_FFT)
        g_windowed = (grad * re / mag) @ cos + (grad * im / mag) @ sin
        g_window = (g_windowed * frames).sum(dim=(0, 1))
        g_frames = g_windowed * window
        batch, n_frames, _ = frames.shape
        g_signal = torch.zeros(batch, ctx.length, dtype=grad.dtype)
        rows = torch.arange(batch)[:, None].expand(batch, n_frames * N_FFT)
        cols = _frame_index(n_frames)[None, :].expand(batch, n_frames * N_FFT)
        g_signal.index_put_((rows, cols), g_frames.reshape(batch, -1))  # BUG
        return g_signal, g_window

    @staticmethod
    def example_inputs():
        return _stft_inputs()


class FurtherStftMagnitudeWindowedFrames(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "window",
           "note": "the window's gradient multiplies by the windowed frames instead of the raw frames"}

    @staticmethod
    def forward(ctx, signal, window):
        return _stft_forward(ctx, signal, window)

    @staticmethod
    def backward(ctx, grad):
        frames, window, re, im, mag = ctx.saved_tensors
        cos, sin = _dft(N_FFT)
        g_windowed = (grad * re / mag) @ cos + (grad * im / mag) @ sin
        g_window = (g_windowed * frames * window).sum(dim=(0, 1))  # BUG
        g_frames = g_windowed * window
        batch, n_frames, _ = frames.shape
        g_signal = torch.zeros(batch, ctx.length, dtype=grad.dtype)
        g_signal.index_add_(1, _frame_index(n_frames), g_frames.reshape(batch, -1))
        return g_signal, g_window

    @staticmethod
    def example_inputs():
        return _stft_inputs()


def _mel_inputs():
    gen = torch.Generator().manual_seed(12)
    spec = 0.1 + torch.rand(2, 3, 5, dtype=torch.float64, generator=gen)
    fb = 0.1 + torch.rand(5, 5, dtype=torch.float64, generator=gen)  # K = M so a missing .mT runs
    return spec, fb


class FurtherLogMel(torch.autograd.Function):
    """log(spec @ fb + eps): power spectrogram (B, T, K) through a learned (K, M) filterbank."""
    bug = None

    @staticmethod
    def forward(ctx, spec, fb):
        z = spec @ fb + MEL_EPS
        out = torch.log(z)
        ctx.save_for_backward(spec, fb, z, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        spec, fb, z, out = ctx.saved_tensors
        g_z = grad / z
        g_spec = g_z @ fb.mT if ctx.needs_input_grad[0] else None
        g_fb = torch.einsum("btk,btm->km", spec, g_z) if ctx.needs_input_grad[1] else None
        return g_spec, g_fb

    @staticmethod
    def example_inputs():
        return _mel_inputs()


class FurtherLogMelNoTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "spec",
           "note": "the spectrogram's gradient uses g @ fb where g @ fb.mT is needed"}

    @staticmethod
    def forward(ctx, spec, fb):
        z = spec @ fb + MEL_EPS
        out = torch.log(z)
        ctx.save_for_backward(spec, fb, z, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        spec, fb, z, out = ctx.saved_tensors
        g_z = grad / z
        g_spec = g_z @ fb if ctx.needs_input_grad[0] else None  # BUG
        g_fb = torch.einsum("btk,btm->km", spec, g_z) if ctx.needs_input_grad[1] else None
        return g_spec, g_fb

    @staticmethod
    def example_inputs():
        return _mel_inputs()


class FurtherLogMelDividesByLog(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "spec",
           "note": "d log z is computed as grad / out with the saved log output instead of grad / z (both inputs' gradients)"}

    @staticmethod
    def forward(ctx, spec, fb):
        z = spec @ fb + MEL_EPS
        out = torch.log(z)
        ctx.save_for_backward(spec, fb, z, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        spec, fb, z, out = ctx.saved_tensors
        g_z = grad / out  # BUG
        g_spec = g_z @ fb.mT if ctx.needs_input_grad[0] else None
        g_fb = torch.einsum("btk,btm->km", spec, g_z) if ctx.needs_input_grad[1] else None
        return g_spec, g_fb

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(13)  # z well above 1 so log z stays away from 0
        spec = 1.0 + torch.rand(2, 3, 5, dtype=torch.float64, generator=gen)
        fb = 0.5 + torch.rand(5, 5, dtype=torch.float64, generator=gen)
        return spec, fb


class FurtherLogMelFilterJacobian(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "fb",
           "note": "the filterbank's gradient contracts spec with 1/z, the local derivative, and never multiplies by grad"}

    @staticmethod
    def forward(ctx, spec, fb):
        z = spec @ fb + MEL_EPS
        out = torch.log(z)
        ctx.save_for_backward(spec, fb, z, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        spec, fb, z, out = ctx.saved_tensors
        g_z = grad / z
        g_spec = g_z @ fb.mT if ctx.needs_input_grad[0] else None
        g_fb = torch.einsum("btk,btm->km", spec, 1.0 / z) if ctx.needs_input_grad[1] else None  # BUG
        return g_spec, g_fb

    @staticmethod
    def example_inputs():
        return _mel_inputs()
