"""Pooling (average, max with its argmax, adaptive average with overlapping bins), dropout with
a saved mask, gather, and three deliberate gradient estimators (straight-through rounding,
gradient reversal, a smooth surrogate for a step).
"""
import math

import torch

P_DROP = 0.25
K = 2


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _ncl(seed, length=6):
    return (torch.randn(2, 3, length, dtype=torch.float64, generator=_gen(seed)),)


class UnknownAvgPool1d(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        n, c, length = x.shape
        return x.view(n, c, length // K, K).mean(dim=-1)

    @staticmethod
    def backward(ctx, dy):
        return dy.repeat_interleave(K, dim=-1) / K

    @staticmethod
    def example_inputs():
        return _ncl(1)


class UnknownAvgPool1dTiled(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x", "also": ["missing_reshape"],
           "note": "dy is tiled with repeat (a b c a b c) where each window needs its own value repeated (a a b b c c)"}

    @staticmethod
    def forward(ctx, x):
        n, c, length = x.shape
        return x.view(n, c, length // K, K).mean(dim=-1)

    @staticmethod
    def backward(ctx, dy):
        return dy.repeat(1, 1, K) / K  # BUG

    @staticmethod
    def example_inputs():
        return _ncl(2)


class UnknownMaxPool1d(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        n, c, length = x.shape
        values, arg = x.view(n, c, length // K, K).max(dim=-1)
        ctx.save_for_backward(arg)
        ctx.shape = x.shape
        return values

    @staticmethod
    def backward(ctx, dy):
        (arg,) = ctx.saved_tensors
        n, c, length = ctx.shape
        dx = dy.new_zeros(n, c, length // K, K)
        dx.scatter_(-1, arg.unsqueeze(-1), dy.unsqueeze(-1))
        return dx.view(n, c, length)

    @staticmethod
    def example_inputs():
        return _ncl(3)


class UnknownMaxPool1dOutOfPlaceScatter(torch.autograd.Function):
    bug = {"kind": "zero", "input": "x",
           "note": "Tensor.scatter (out of place) is called and its result dropped, so the zeros are returned"}

    @staticmethod
    def forward(ctx, x):
        n, c, length = x.shape
        values, arg = x.view(n, c, length // K, K).max(dim=-1)
        ctx.save_for_backward(arg)
        ctx.shape = x.shape
        return values

    @staticmethod
    def backward(ctx, dy):
        (arg,) = ctx.saved_tensors
        n, c, length = ctx.shape
        dx = dy.new_zeros(n, c, length // K, K)
        dx.scatter(-1, arg.unsqueeze(-1), dy.unsqueeze(-1))  # BUG
        return dx.view(n, c, length)

    @staticmethod
    def example_inputs():
        return _ncl(4)


OUT_BINS = 3


def _bins(length, out):
    return [(math.floor(i * length / out), math.ceil((i + 1) * length / out)) for i in range(out)]


def _adaptive_forward(ctx, x):
    ctx.length = x.shape[-1]
    return torch.stack([x[..., a:b].mean(dim=-1) for a, b in _bins(x.shape[-1], OUT_BINS)], dim=-1)


class UnknownAdaptiveAvgPool1d(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _adaptive_forward(ctx, x)

    @staticmethod
    def backward(ctx, dy):
        dx = dy.new_zeros(*dy.shape[:-1], ctx.length)
        for i, (a, b) in enumerate(_bins(ctx.length, OUT_BINS)):
            dx[..., a:b] += dy[..., i:i + 1] / (b - a)
        return dx

    @staticmethod
    def example_inputs():
        return _ncl(5, length=7)  # bins [0, 3), [2, 5), [4, 7) overlap


class UnknownAdaptiveAvgPool1dOverlapAssign(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "bins overlap when the length is not a multiple of the output size; dx[a:b] = ... overwrites the shared element"}

    @staticmethod
    def forward(ctx, x):
        return _adaptive_forward(ctx, x)

    @staticmethod
    def backward(ctx, dy):
        dx = dy.new_zeros(*dy.shape[:-1], ctx.length)
        for i, (a, b) in enumerate(_bins(ctx.length, OUT_BINS)):
            dx[..., a:b] = dy[..., i:i + 1] / (b - a)  # BUG
        return dx

    @staticmethod
    def example_inputs():
        return _ncl(6, length=7)


def _dropout_inputs(seed):
    g = _gen(seed)
    x = torch.randn(3, 5, dtype=torch.float64, generator=g)
    keep = torch.rand(3, 5, generator=g) >= P_DROP
    return x, keep


class UnknownDropoutSavedMask(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, keep):
        scale = keep.to(x.dtype) / (1.0 - P_DROP)
        ctx.save_for_backward(scale)
        return x * scale

    @staticmethod
    def backward(ctx, dy):
        (scale,) = ctx.saved_tensors
        return dy * scale, None

    @staticmethod
    def example_inputs():
        return _dropout_inputs(7)


class UnknownDropoutMaskRescaledInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "the saved 0/1 mask is divided by (1 - p) in place after saving, so the backward rescales twice"}

    @staticmethod
    def forward(ctx, x, keep):
        mask = keep.to(x.dtype)
        ctx.save_for_backward(mask)
        return x * mask.div_(1.0 - P_DROP)  # BUG

    @staticmethod
    def backward(ctx, dy):
        (mask,) = ctx.saved_tensors
        return dy * mask / (1.0 - P_DROP), None

    @staticmethod
    def example_inputs():
        return _dropout_inputs(8)


def _gather_inputs(seed):
    g = _gen(seed)
    return torch.randn(3, 4, dtype=torch.float64, generator=g), torch.tensor([[0, 0, 3], [2, 1, 2], [3, 3, 3]])


class UnknownGatherColumns(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return torch.gather(x, 1, index)

    @staticmethod
    def backward(ctx, dy):
        (index,) = ctx.saved_tensors
        return dy.new_zeros(ctx.shape).scatter_add_(1, index, dy), None

    @staticmethod
    def example_inputs():
        return _gather_inputs(9)


class UnknownGatherColumnsCounts(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "the backward scatters ones (how often each entry was picked) instead of the incoming gradient"}

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return torch.gather(x, 1, index)

    @staticmethod
    def backward(ctx, dy):
        (index,) = ctx.saved_tensors
        return dy.new_zeros(ctx.shape).scatter_add_(1, index, torch.ones_like(dy)), None  # BUG

    @staticmethod
    def example_inputs():
        return _gather_inputs(10)


class UnknownStraightThroughQuantize(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x",
           "note": "rounding to multiples of 1/8 is treated as the identity in the backward (deliberate)"}

    @staticmethod
    def forward(ctx, x):
        return torch.round(x * 8) / 8

    @staticmethod
    def backward(ctx, dy):
        return dy.clone()  # BUG


class UnknownGradientReversal(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "identity forward, gradient multiplied by -lambda (domain-adversarial training, deliberate)"}

    @staticmethod
    def forward(ctx, x, lambd):
        ctx.lambd = lambd
        return x.view_as(x)

    @staticmethod
    def backward(ctx, dy):
        return -ctx.lambd * dy, None  # BUG

    @staticmethod
    def example_inputs():
        return torch.randn(3, 4, dtype=torch.float64, generator=_gen(11)), 0.7


class UnknownSpikeSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "x",
           "note": "a Heaviside spike whose backward is the derivative of sigmoid(4x) (spiking nets, deliberate)"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x > 0).to(x.dtype)

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(4 * x)
        return dy * 4 * s * (1 - s)  # BUG
