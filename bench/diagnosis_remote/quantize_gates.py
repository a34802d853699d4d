"""Quantisers, gates and framing: a straight-through mu-law quantiser, a gradient-reversal layer, a
hard gate trained through a sigmoid surrogate (the three deliberate estimators), framing a signal by
an index matrix (gather, index_add_), and a soft clipper with a learnable drive."""
import math

import torch


def _g(seed):
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------ deliberate estimators
class RemoteMuLawQuantizeST(torch.autograd.Function):
    """mu-law encode, round to 256 levels, decode; the rounding is passed straight through."""
    bug = {"kind": "straight_through", "input": "x",
           "note": "deliberate straight-through estimator: the quantiser's zero derivative replaced by the identity"}

    @staticmethod
    def forward(ctx, x, mu: float = 255.0):
        enc = torch.sign(x) * torch.log1p(mu * x.abs()) / math.log1p(mu)
        q = torch.round((enc + 1) / 2 * mu) / mu * 2 - 1
        return torch.sign(q) * ((1 + mu) ** q.abs() - 1) / mu

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out, None  # BUG

    @staticmethod
    def example_inputs():
        return torch.rand(3, 4, dtype=torch.float64, generator=_g(70)) * 1.6 - 0.8, 255.0


class RemoteGradReverse(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "deliberate gradient-reversal layer (domain-adversarial training): identity forward, -lam * grad backward"}

    @staticmethod
    def forward(ctx, x, lam: float = 0.5):
        ctx.lam = lam
        return x.view_as(x).clone()

    @staticmethod
    def backward(ctx, grad_out):
        return -ctx.lam * grad_out, None  # BUG

    @staticmethod
    def example_inputs():
        return torch.randn(3, 4, dtype=torch.float64, generator=_g(71)), 0.5


class RemoteHardGateSurrogate(torch.autograd.Function):
    """A binary gate x > threshold, trained through the derivative of a sigmoid of temperature 0.5."""
    bug = {"kind": "smooth_surrogate", "input": "x",
           "note": "deliberate surrogate gradient: the step's zero derivative replaced by sigmoid'((x - t) / T) / T"}

    @staticmethod
    def forward(ctx, x, threshold: float = 0.1):
        ctx.save_for_backward(x)
        ctx.threshold = threshold
        return (x > threshold).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid((x - ctx.threshold) / 0.5)
        return grad_out * s * (1 - s) / 0.5, None  # BUG

    @staticmethod
    def example_inputs():
        return torch.randn(3, 4, dtype=torch.float64, generator=_g(72)), 0.1


# ------------------------------------------------------------------ framing by an index matrix
N_FFT, HOP = 4, 2


def _frame_index(length):
    T = (length - N_FFT) // HOP + 1
    return torch.arange(T)[:, None] * HOP + torch.arange(N_FFT)[None, :]


class RemoteFrameSignal(torch.autograd.Function):
    """(B, L) -> overlapping frames as columns (B, n_fft, T), by an index matrix."""
    bug = None

    @staticmethod
    def forward(ctx, signal):
        idx = _frame_index(signal.shape[-1])
        ctx.save_for_backward(idx)
        ctx.length = signal.shape[-1]
        return signal[:, idx].transpose(1, 2)

    @staticmethod
    def backward(ctx, grad_frames):
        (idx,) = ctx.saved_tensors
        B = grad_frames.shape[0]
        flat = grad_frames.transpose(1, 2).reshape(B, -1)
        grad = grad_frames.new_zeros(B, ctx.length)
        return grad.index_add_(1, idx.reshape(-1), flat)

    @staticmethod
    def example_inputs():
        return (torch.randn(2, 10, dtype=torch.float64, generator=_g(73)),)


class RemoteFrameSignalIndexCopy(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "signal",
           "note": "grad[:, idx] = frames: samples shared by two frames keep one frame's gradient instead of the sum"}

    @staticmethod
    def forward(ctx, signal):
        idx = _frame_index(signal.shape[-1])
        ctx.save_for_backward(idx)
        ctx.length = signal.shape[-1]
        return signal[:, idx].transpose(1, 2)

    @staticmethod
    def backward(ctx, grad_frames):
        (idx,) = ctx.saved_tensors
        B = grad_frames.shape[0]
        flat = grad_frames.transpose(1, 2).reshape(B, -1)
        grad = grad_frames.new_zeros(B, ctx.length)
        grad[:, idx.reshape(-1)] = flat  # BUG
        return grad

    @staticmethod
    def example_inputs():
        return (torch.randn(2, 10, dtype=torch.float64, generator=_g(74)),)


class RemoteFrameSignalFlatColumns(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "signal", "also": ["transposed"],
           "note": "the (B, n_fft, T) gradient is flattened as it is, without moving T back in front of n_fft"}

    @staticmethod
    def forward(ctx, signal):
        idx = _frame_index(signal.shape[-1])
        ctx.save_for_backward(idx)
        ctx.length = signal.shape[-1]
        return signal[:, idx].transpose(1, 2)

    @staticmethod
    def backward(ctx, grad_frames):
        (idx,) = ctx.saved_tensors
        B = grad_frames.shape[0]
        flat = grad_frames.reshape(B, -1)  # BUG
        grad = grad_frames.new_zeros(B, ctx.length)
        return grad.index_add_(1, idx.reshape(-1), flat)

    @staticmethod
    def example_inputs():
        return (torch.randn(2, 10, dtype=torch.float64, generator=_g(75)),)


# ------------------------------------------------------------------ soft clipper
class RemoteSoftClip(torch.autograd.Function):
    """y = tanh(drive x) / tanh(drive), drive of shape (1,)."""
    bug = None

    @staticmethod
    def forward(ctx, x, drive):
        t = torch.tanh(drive * x)
        td = torch.tanh(drive)
        ctx.save_for_backward(x, drive, t, td)
        return t / td

    @staticmethod
    def backward(ctx, grad_out):
        x, drive, t, td = ctx.saved_tensors
        dt = 1 - t * t
        grad_x = grad_out * drive * dt / td
        grad_drive = (grad_out * (x * dt / td - t * (1 - td * td) / (td * td))).sum().reshape(1)
        return grad_x, grad_drive

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 5, dtype=torch.float64, generator=_g(76)),
                torch.tensor([1.7], dtype=torch.float64))


class RemoteSoftClipFixedDrive(torch.autograd.Function):
    bug = {"kind": "zero", "input": "drive",
           "note": "the drive is treated as a constant: its gradient is returned as zeros"}

    @staticmethod
    def forward(ctx, x, drive):
        t = torch.tanh(drive * x)
        td = torch.tanh(drive)
        ctx.save_for_backward(x, drive, t, td)
        return t / td

    @staticmethod
    def backward(ctx, grad_out):
        x, drive, t, td = ctx.saved_tensors
        grad_x = grad_out * drive * (1 - t * t) / td
        grad_drive = torch.zeros_like(drive)  # BUG
        return grad_x, grad_drive

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 5, dtype=torch.float64, generator=_g(77)),
                torch.tensor([1.7], dtype=torch.float64))
