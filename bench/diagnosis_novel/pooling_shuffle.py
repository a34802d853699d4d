"""Pooling, dropout with a saved mask, pixel shuffle, gather."""
import torch


def _signal(seed, *shape):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, dtype=torch.float64, generator=gen),)


class NovelMaxPool1d(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        n, c, length = x.shape
        values, where = x.view(n, c, length // 2, 2).max(dim=-1)
        ctx.save_for_backward(where)
        return values

    @staticmethod
    def backward(ctx, g):
        (where,) = ctx.saved_tensors
        n, c, half = g.shape
        grad = g.new_zeros(n, c, half, 2).scatter_(-1, where.unsqueeze(-1), g.unsqueeze(-1))
        return grad.view(n, c, 2 * half)

    @staticmethod
    def example_inputs():
        return _signal(50, 2, 3, 6)


class NovelMaxPool1dAveraged(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "average pooling's backward (g / 2 to both entries) written for a max pool"}

    @staticmethod
    def forward(ctx, x):
        n, c, length = x.shape
        values, where = x.view(n, c, length // 2, 2).max(dim=-1)
        ctx.save_for_backward(where)
        return values

    @staticmethod
    def backward(ctx, g):
        return g.repeat_interleave(2, dim=-1) / 2  # BUG

    @staticmethod
    def example_inputs():
        return _signal(51, 2, 3, 6)


OUT_BINS = 4


def _bins(length):
    return [((i * length) // OUT_BINS, -((-(i + 1) * length) // OUT_BINS)) for i in range(OUT_BINS)]


class NovelAdaptiveAvgPool1d(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.length = x.shape[-1]
        return torch.stack([x[..., s:e].mean(-1) for s, e in _bins(x.shape[-1])], dim=-1)

    @staticmethod
    def backward(ctx, g):
        grad = g.new_zeros(g.shape[:-1] + (ctx.length,))
        for i, (s, e) in enumerate(_bins(ctx.length)):
            grad[..., s:e] += g[..., i:i + 1] / (e - s)
        return grad

    @staticmethod
    def example_inputs():
        return _signal(52, 2, 6)  # bins [0,2) [1,3) [3,5) [4,6) overlap


class NovelAdaptiveAvgPool1dAssigns(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "overlapping bins write their share with =, so the later bin overwrites the shared entry"}

    @staticmethod
    def forward(ctx, x):
        ctx.length = x.shape[-1]
        return torch.stack([x[..., s:e].mean(-1) for s, e in _bins(x.shape[-1])], dim=-1)

    @staticmethod
    def backward(ctx, g):
        grad = g.new_zeros(g.shape[:-1] + (ctx.length,))
        for i, (s, e) in enumerate(_bins(ctx.length)):
            grad[..., s:e] = g[..., i:i + 1] / (e - s)  # BUG
        return grad

    @staticmethod
    def example_inputs():
        return _signal(53, 2, 6)


P_DROP = 0.5


def _mask(x):
    gen = torch.Generator().manual_seed(7)
    return (torch.rand(x.shape, generator=gen) >= P_DROP).to(x.dtype)


class NovelDropoutSavedMask(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        keep = _mask(x)
        ctx.save_for_backward(keep)
        return x * keep / (1 - P_DROP)

    @staticmethod
    def backward(ctx, g):
        (keep,) = ctx.saved_tensors
        return g * keep / (1 - P_DROP)


class NovelDropoutNoRescale(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the backward applies the mask but forgets the 1/(1-p) rescaling of the kept entries"}

    @staticmethod
    def forward(ctx, x):
        keep = _mask(x)
        ctx.save_for_backward(keep)
        return x * keep / (1 - P_DROP)

    @staticmethod
    def backward(ctx, g):
        (keep,) = ctx.saved_tensors
        return g * keep  # BUG


R = 2


class NovelPixelShuffle(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        n, crr, h, w = x.shape
        c = crr // (R * R)
        return x.view(n, c, R, R, h, w).permute(0, 1, 4, 2, 5, 3).reshape(n, c, h * R, w * R)

    @staticmethod
    def backward(ctx, g):
        n, c, hr, wr = g.shape
        h, w = hr // R, wr // R
        return g.view(n, c, h, R, w, R).permute(0, 1, 3, 5, 2, 4).reshape(n, c * R * R, h, w)

    @staticmethod
    def example_inputs():
        return _signal(54, 1, 8, 2, 3)


class NovelPixelShufflePlainReshape(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x",
           "note": "the backward reshapes g straight to the input's shape, without undoing the permutation"}

    @staticmethod
    def forward(ctx, x):
        n, crr, h, w = x.shape
        c = crr // (R * R)
        return x.view(n, c, R, R, h, w).permute(0, 1, 4, 2, 5, 3).reshape(n, c, h * R, w * R)

    @staticmethod
    def backward(ctx, g):
        n, c, hr, wr = g.shape
        return g.reshape(n, c * R * R, hr // R, wr // R)  # BUG

    @staticmethod
    def example_inputs():
        return _signal(55, 1, 8, 2, 3)


def _gather_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(4, 4, dtype=torch.float64, generator=gen)
    idx = torch.tensor([[0, 2, 2], [1, 1, 3], [3, 0, 0], [2, 2, 1]])
    return x, idx


class NovelGatherColumns(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, idx):
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return x.gather(1, idx)

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        return g.new_zeros(ctx.shape).scatter_add_(1, idx, g), None

    @staticmethod
    def example_inputs():
        return _gather_inputs(56)


class NovelGatherColumnsScatterRows(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the gradient is scattered back along dim 0 while the forward gathered along dim 1"}

    @staticmethod
    def forward(ctx, x, idx):
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return x.gather(1, idx)

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        return g.new_zeros(ctx.shape).scatter_add_(0, idx, g), None  # BUG

    @staticmethod
    def example_inputs():
        return _gather_inputs(57)
