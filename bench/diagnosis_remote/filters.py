"""Time-domain audio ops: pre-emphasis, mu-law companding, overlap-add of frames by F.fold with a
synthesis window, and an energy envelope by a causal moving average (F.conv1d)."""
import math

import torch
import torch.nn.functional as F


def _gen(seed):
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------ pre-emphasis
class RemotePreEmphasis(torch.autograd.Function):
    """y[t] = x[t] - coef * x[t-1] along the last dim, y[0] = x[0]."""
    bug = None

    @staticmethod
    def forward(ctx, x, coef: float = 0.97):
        ctx.coef = coef
        y = x.clone()
        y[..., 1:] -= coef * x[..., :-1]
        return y

    @staticmethod
    def backward(ctx, grad_y):
        grad_x = grad_y.clone()
        grad_x[..., :-1] -= ctx.coef * grad_y[..., 1:]
        return grad_x, None

    @staticmethod
    def example_inputs():
        return torch.randn(3, 7, dtype=torch.float64, generator=_gen(10)), 0.97


class RemotePreEmphasisShiftedBack(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "the adjoint of the delay is an advance: the backward delays grad_y again (the shift matrix, not its transpose)"}

    @staticmethod
    def forward(ctx, x, coef: float = 0.97):
        ctx.coef = coef
        y = x.clone()
        y[..., 1:] -= coef * x[..., :-1]
        return y

    @staticmethod
    def backward(ctx, grad_y):
        grad_x = grad_y.clone()
        grad_x[..., 1:] -= ctx.coef * grad_y[..., :-1]  # BUG
        return grad_x, None

    @staticmethod
    def example_inputs():
        return torch.randn(3, 7, dtype=torch.float64, generator=_gen(11)), 0.97


# ------------------------------------------------------------------ mu-law companding
def _mu_law(x, mu):
    return torch.sign(x) * torch.log1p(mu * x.abs()) / math.log1p(mu)


class RemoteMuLaw(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, mu: float = 255.0):
        ctx.save_for_backward(x)
        ctx.mu = mu
        return _mu_law(x, mu)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        mu = ctx.mu
        return grad_out * mu / ((1 + mu * x.abs()) * math.log1p(mu)), None

    @staticmethod
    def example_inputs():
        return torch.rand(4, 5, dtype=torch.float64, generator=_gen(12)) * 1.6 - 0.8, 255.0


class RemoteMuLawNoNorm(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the constant 1 / log(1 + mu) of the forward is left out of the derivative"}

    @staticmethod
    def forward(ctx, x, mu: float = 255.0):
        ctx.save_for_backward(x)
        ctx.mu = mu
        return _mu_law(x, mu)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        mu = ctx.mu
        return grad_out * mu / (1 + mu * x.abs()), None  # BUG

    @staticmethod
    def example_inputs():
        return torch.rand(4, 5, dtype=torch.float64, generator=_gen(13)) * 1.6 - 0.8, 255.0


class RemoteMuLawKeepsSign(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "d|x|/dx = sign(x) times the outer sign(x) is 1, but the backward keeps one sign(x): wrong where x < 0"}

    @staticmethod
    def forward(ctx, x, mu: float = 255.0):
        ctx.save_for_backward(x)
        ctx.mu = mu
        return _mu_law(x, mu)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        mu = ctx.mu
        slope = torch.sign(x) * mu / ((1 + mu * x.abs()) * math.log1p(mu))  # BUG
        return grad_out * slope, None

    @staticmethod
    def example_inputs():
        return torch.rand(4, 5, dtype=torch.float64, generator=_gen(14)) * 1.6 - 0.8, 255.0


class RemoteMuLawInplaceLog(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "saves |x| and then turns that buffer into log1p(mu |x|) in place; backward reads the log"}

    @staticmethod
    def forward(ctx, x, mu: float = 255.0):
        ax = x.abs()
        ctx.save_for_backward(ax, torch.sign(x))
        ctx.mu = mu
        ax.mul_(mu).log1p_()  # BUG
        return torch.sign(x) * ax / math.log1p(mu)

    @staticmethod
    def backward(ctx, grad_out):
        ax, sgn = ctx.saved_tensors
        mu = ctx.mu
        return grad_out * mu / ((1 + mu * ax) * math.log1p(mu)), None

    @staticmethod
    def example_inputs():
        return torch.rand(4, 5, dtype=torch.float64, generator=_gen(15)) * 1.6 - 0.8, 255.0


# ------------------------------------------------------------------ overlap-add by F.fold
N_FFT, HOP = 4, 2


def _window(dtype=torch.float64):
    return torch.sin(math.pi * (torch.arange(N_FFT, dtype=dtype) + 0.5) / N_FFT)


class RemoteOverlapAdd(torch.autograd.Function):
    """frames (B, n_fft, T) * synthesis window, overlap-added to (B, L) by F.fold."""
    bug = None

    @staticmethod
    def forward(ctx, frames):
        T = frames.shape[-1]
        L = (T - 1) * HOP + N_FFT
        ctx.length = L
        out = F.fold(frames * _window()[:, None], output_size=(1, L), kernel_size=(1, N_FFT), stride=(1, HOP))
        return out[:, 0, 0]

    @staticmethod
    def backward(ctx, grad_out):
        cols = F.unfold(grad_out[:, None, None, :], kernel_size=(1, N_FFT), stride=(1, HOP))
        return cols * _window()[:, None]

    @staticmethod
    def example_inputs():
        return (torch.randn(2, N_FFT, 5, dtype=torch.float64, generator=_gen(16)),)


class RemoteOverlapAddReshapedFrames(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "frames", "also": ["transposed"],
           "note": "the frames of grad_out from Tensor.unfold are (B, T, n_fft); reshaped to (B, n_fft, T) instead of transposed"}

    @staticmethod
    def forward(ctx, frames):
        T = frames.shape[-1]
        L = (T - 1) * HOP + N_FFT
        out = F.fold(frames * _window()[:, None], output_size=(1, L), kernel_size=(1, N_FFT), stride=(1, HOP))
        return out[:, 0, 0]

    @staticmethod
    def backward(ctx, grad_out):
        B = grad_out.shape[0]
        cols = grad_out.unfold(-1, N_FFT, HOP)
        cols = cols.reshape(B, N_FFT, -1)  # BUG
        return cols * _window()[:, None]

    @staticmethod
    def example_inputs():
        return (torch.randn(2, N_FFT, 5, dtype=torch.float64, generator=_gen(17)),)


# ------------------------------------------------------------------ energy envelope
K = 4


def _decay(dtype=torch.float64):
    w = torch.exp(-0.5 * torch.arange(K, dtype=dtype))
    return w / w.sum()


class RemoteEnvelope(torch.autograd.Function):
    """env[t] = sum_k w[k] x[t-k]^2: a causal, decaying moving average of the energy, (B, 1, L)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        w = _decay().flip(0).view(1, 1, K)
        return F.conv1d(F.pad(x * x, (K - 1, 0)), w)

    @staticmethod
    def backward(ctx, grad_env):
        (x,) = ctx.saved_tensors
        w = _decay().view(1, 1, K)
        back = F.conv1d(F.pad(grad_env, (0, K - 1)), w)
        return 2 * x * back

    @staticmethod
    def example_inputs():
        return (torch.randn(2, 1, 9, dtype=torch.float64, generator=_gen(18)),)


class RemoteEnvelopeKernelNotFlipped(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the anti-causal correlation of the backward reuses the forward's flipped kernel instead of flipping it back"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        w = _decay().flip(0).view(1, 1, K)
        ctx.w = w
        return F.conv1d(F.pad(x * x, (K - 1, 0)), w)

    @staticmethod
    def backward(ctx, grad_env):
        (x,) = ctx.saved_tensors
        back = F.conv1d(F.pad(grad_env, (0, K - 1)), ctx.w)  # BUG
        return 2 * x * back

    @staticmethod
    def example_inputs():
        return (torch.randn(2, 1, 9, dtype=torch.float64, generator=_gen(19)),)
