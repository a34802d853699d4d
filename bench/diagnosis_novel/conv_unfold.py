"""Convolutions by unfolding: conv1d by Tensor.unfold + einsum, conv1d by F.conv1d, conv2d by im2col, depthwise."""
import torch
import torch.nn.functional as F


def _conv1d_inputs(seed, n=2, c=3, length=7, out=2, k=3):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(n, c, length, dtype=torch.float64, generator=gen),
            torch.randn(out, c, k, dtype=torch.float64, generator=gen))


class NovelConv1dUnfold(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        cols = x.unfold(2, w.shape[2], 1)  # (N, C, Lout, K)
        ctx.save_for_backward(cols, w)
        ctx.length = x.shape[2]
        return torch.einsum("nclk,ock->nol", cols, w)

    @staticmethod
    def backward(ctx, g):
        cols, w = ctx.saved_tensors
        gw = torch.einsum("nol,nclk->ock", g, cols)
        gcols = torch.einsum("nol,ock->nclk", g, w)
        n, c, lout, k = gcols.shape
        gx = gcols.new_zeros(n, c, ctx.length)
        for j in range(k):
            gx[:, :, j:j + lout] += gcols[..., j]
        return gx, gw

    @staticmethod
    def example_inputs():
        return _conv1d_inputs(20)


class NovelConv1dUnfoldOverwrites(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "folding the column gradients back assigns each tap's slice, so overlapping windows overwrite"}

    @staticmethod
    def forward(ctx, x, w):
        cols = x.unfold(2, w.shape[2], 1)
        ctx.save_for_backward(cols, w)
        ctx.length = x.shape[2]
        return torch.einsum("nclk,ock->nol", cols, w)

    @staticmethod
    def backward(ctx, g):
        cols, w = ctx.saved_tensors
        gw = torch.einsum("nol,nclk->ock", g, cols)
        gcols = torch.einsum("nol,ock->nclk", g, w)
        n, c, lout, k = gcols.shape
        gx = gcols.new_zeros(n, c, ctx.length)
        for j in range(k):
            gx[:, :, j:j + lout] = gcols[..., j]  # BUG
        return gx, gw

    @staticmethod
    def example_inputs():
        return _conv1d_inputs(21)


class NovelConv1dByCorrelation(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return F.conv1d(x, w)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        k = w.shape[-1]
        gx = F.conv1d(F.pad(g, (k - 1, k - 1)), w.transpose(0, 1).flip(-1))
        gw = F.conv1d(x.transpose(0, 1), g.transpose(0, 1)).transpose(0, 1)
        return gx, gw

    @staticmethod
    def example_inputs():
        return _conv1d_inputs(22)


class NovelConv1dByCorrelationNoFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the input gradient correlates the padded g with the kernel unflipped (a full convolution needs the flip)"}

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return F.conv1d(x, w)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        k = w.shape[-1]
        gx = F.conv1d(F.pad(g, (k - 1, k - 1)), w.transpose(0, 1))  # BUG
        gw = F.conv1d(x.transpose(0, 1), g.transpose(0, 1)).transpose(0, 1)
        return gx, gw

    @staticmethod
    def example_inputs():
        return _conv1d_inputs(23)


def _conv2d_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    # one input channel, 2x2 kernels and 4 filters: the filter matrix is square (4 x 4)
    return (torch.randn(2, 1, 4, 5, dtype=torch.float64, generator=gen),
            torch.randn(4, 1, 2, 2, dtype=torch.float64, generator=gen))


class NovelConv2dIm2col(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        kh, kw = w.shape[2:]
        cols = F.unfold(x, (kh, kw))  # (N, C*kh*kw, L)
        ctx.save_for_backward(cols, w)
        ctx.size = x.shape[2:]
        ho, wo = x.shape[2] - kh + 1, x.shape[3] - kw + 1
        return (w.flatten(1) @ cols).view(x.shape[0], w.shape[0], ho, wo)

    @staticmethod
    def backward(ctx, g):
        cols, w = ctx.saved_tensors
        gy = g.flatten(2)
        gw = (gy @ cols.mT).sum(0).view_as(w)
        gcols = w.flatten(1).mT @ gy
        gx = F.fold(gcols, ctx.size, tuple(w.shape[2:]))
        return gx, gw

    @staticmethod
    def example_inputs():
        return _conv2d_inputs(24)


class NovelConv2dIm2colFilterGradFlipped(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "w",
           "note": "the filter gradient is computed as cols @ gy^T, the transpose of gy @ cols^T"}

    @staticmethod
    def forward(ctx, x, w):
        kh, kw = w.shape[2:]
        cols = F.unfold(x, (kh, kw))
        ctx.save_for_backward(cols, w)
        ctx.size = x.shape[2:]
        ho, wo = x.shape[2] - kh + 1, x.shape[3] - kw + 1
        return (w.flatten(1) @ cols).view(x.shape[0], w.shape[0], ho, wo)

    @staticmethod
    def backward(ctx, g):
        cols, w = ctx.saved_tensors
        gy = g.flatten(2)
        gw = (cols @ gy.mT).sum(0).reshape(w.shape)  # BUG
        gcols = w.flatten(1).mT @ gy
        gx = F.fold(gcols, ctx.size, tuple(w.shape[2:]))
        return gx, gw

    @staticmethod
    def example_inputs():
        return _conv2d_inputs(25)


def _depthwise_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 6, dtype=torch.float64, generator=gen),
            torch.randn(3, 2, dtype=torch.float64, generator=gen))


class NovelDepthwiseConv1d(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return F.conv1d(x, w.unsqueeze(1), groups=x.shape[1])

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx = gw = None
        if ctx.needs_input_grad[0]:
            gx = F.conv_transpose1d(g, w.unsqueeze(1), groups=x.shape[1])
        if ctx.needs_input_grad[1]:
            windows = x.unfold(2, w.shape[1], 1)  # (N, C, Lout, K)
            gw = torch.einsum("ncl,nclk->ck", g, windows)
        return gx, gw

    @staticmethod
    def example_inputs():
        return _depthwise_inputs(26)


class NovelDepthwiseConv1dInputLeftOut(torch.autograd.Function):
    bug = {"kind": "zero", "input": "x",
           "note": "the input gradient is checked against needs_input_grad[1] (the weight's flag) and never computed"}

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return F.conv1d(x, w.unsqueeze(1), groups=x.shape[1])

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx = torch.zeros_like(x)
        if ctx.needs_input_grad[1]:
            windows = x.unfold(2, w.shape[1], 1)
            gw = torch.einsum("ncl,nclk->ck", g, windows)
        if not ctx.needs_input_grad[1]:  # BUG
            gx = F.conv_transpose1d(g, w.unsqueeze(1), groups=x.shape[1])
        return gx, gw

    @staticmethod
    def example_inputs():
        return _depthwise_inputs(27)
