"""Convolutions written by unfolding (im2col), as in from-scratch vision code, plus pixel shuffle.

conv1d through Tensor.unfold, conv2d through F.unfold / F.fold (and the flipped-kernel form of
its input gradient), a depthwise conv1d with one filter per channel, and sub-pixel shuffling.
"""
import torch
import torch.nn.functional as F


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _conv1d_inputs(seed):
    g = _gen(seed)
    return (torch.randn(2, 3, 7, dtype=torch.float64, generator=g),
            torch.randn(4, 3, 3, dtype=torch.float64, generator=g))


def _conv2d_inputs(seed):
    g = _gen(seed)
    return (torch.randn(2, 2, 5, 4, dtype=torch.float64, generator=g),
            torch.randn(3, 2, 3, 2, dtype=torch.float64, generator=g))


def _fold_windows(dpatches, length):
    """(n, c, l_out, k) window gradients -> (n, c, length), overlapping windows summed."""
    n, c, l_out, k = dpatches.shape
    dx = dpatches.new_zeros(n, c, length)
    for j in range(k):
        dx[:, :, j:j + l_out] += dpatches[..., j]
    return dx


class UnknownConv1dUnfold(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        patches = x.unfold(2, weight.shape[-1], 1)  # (n, c, l_out, k)
        ctx.save_for_backward(patches, weight)
        ctx.length = x.shape[-1]
        return torch.einsum("nclk,ock->nol", patches, weight)

    @staticmethod
    def backward(ctx, dy):
        patches, weight = ctx.saved_tensors
        dx = dw = None
        if ctx.needs_input_grad[0]:
            dx = _fold_windows(torch.einsum("nol,ock->nclk", dy, weight), ctx.length)
        if ctx.needs_input_grad[1]:
            dw = torch.einsum("nclk,nol->ock", patches, dy)
        return dx, dw

    @staticmethod
    def example_inputs():
        return _conv1d_inputs(1)


class UnknownConv1dUnfoldOverlapOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "overlapping windows are written into dx with = instead of +=, so only the last tap survives"}

    @staticmethod
    def forward(ctx, x, weight):
        patches = x.unfold(2, weight.shape[-1], 1)
        ctx.save_for_backward(patches, weight)
        ctx.length = x.shape[-1]
        return torch.einsum("nclk,ock->nol", patches, weight)

    @staticmethod
    def backward(ctx, dy):
        patches, weight = ctx.saved_tensors
        dpatches = torch.einsum("nol,ock->nclk", dy, weight)
        n, c, l_out, k = dpatches.shape
        dx = dpatches.new_zeros(n, c, ctx.length)
        for j in range(k):
            dx[:, :, j:j + l_out] = dpatches[..., j]  # BUG
        return dx, torch.einsum("nclk,nol->ock", patches, dy)

    @staticmethod
    def example_inputs():
        return _conv1d_inputs(2)


class UnknownConv2dIm2col(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        o, _, kh, kw = weight.shape
        cols = F.unfold(x, (kh, kw))  # (n, c*kh*kw, L)
        h_out, w_out = x.shape[2] - kh + 1, x.shape[3] - kw + 1
        ctx.hw = x.shape[2:]
        ctx.save_for_backward(cols, weight)
        return (weight.view(o, -1) @ cols).view(x.shape[0], o, h_out, w_out)

    @staticmethod
    def backward(ctx, dy):
        cols, weight = ctx.saved_tensors
        o, _, kh, kw = weight.shape
        dy2 = dy.reshape(dy.shape[0], o, -1)
        dw = (dy2 @ cols.mT).sum(0).view_as(weight)
        dx = F.fold(weight.view(o, -1).mT @ dy2, ctx.hw, (kh, kw))
        return dx, dw

    @staticmethod
    def example_inputs():
        return _conv2d_inputs(3)


class UnknownConv2dIm2colUnflippedKernel(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "dx as a full convolution of dy with the kernel, but the kernel is not rotated by 180 degrees"}

    @staticmethod
    def forward(ctx, x, weight):
        o, _, kh, kw = weight.shape
        cols = F.unfold(x, (kh, kw))
        h_out, w_out = x.shape[2] - kh + 1, x.shape[3] - kw + 1
        ctx.save_for_backward(cols, weight)
        return (weight.view(o, -1) @ cols).view(x.shape[0], o, h_out, w_out)

    @staticmethod
    def backward(ctx, dy):
        cols, weight = ctx.saved_tensors
        o, _, kh, kw = weight.shape
        dw = (dy.flatten(2) @ cols.mT).sum(0).view_as(weight)
        padded = F.pad(dy, (kw - 1, kw - 1, kh - 1, kh - 1))
        dx = F.conv2d(padded, weight.transpose(0, 1))  # BUG
        return dx, dw

    @staticmethod
    def example_inputs():
        return _conv2d_inputs(4)


def _depthwise_inputs(seed):
    g = _gen(seed)
    return (torch.randn(2, 3, 6, dtype=torch.float64, generator=g),
            torch.randn(3, 3, dtype=torch.float64, generator=g))


class UnknownDepthwiseConv1d(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        patches = x.unfold(-1, weight.shape[1], 1)  # (n, c, l_out, k)
        ctx.save_for_backward(patches, weight)
        ctx.length = x.shape[-1]
        return (patches * weight[None, :, None, :]).sum(-1)

    @staticmethod
    def backward(ctx, dy):
        patches, weight = ctx.saved_tensors
        dpatches = dy.unsqueeze(-1) * weight[None, :, None, :]
        dw = (patches * dy.unsqueeze(-1)).sum(dim=(0, 2))
        return _fold_windows(dpatches, ctx.length), dw

    @staticmethod
    def example_inputs():
        return _depthwise_inputs(5)


class UnknownDepthwiseConv1dFilterSum(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "weight",
           "note": "the filter gradient sums the input windows without weighting them by dy"}

    @staticmethod
    def forward(ctx, x, weight):
        patches = x.unfold(-1, weight.shape[1], 1)
        ctx.save_for_backward(patches, weight)
        ctx.length = x.shape[-1]
        return (patches * weight[None, :, None, :]).sum(-1)

    @staticmethod
    def backward(ctx, dy):
        patches, weight = ctx.saved_tensors
        dpatches = dy.unsqueeze(-1) * weight[None, :, None, :]
        dw = patches.sum(dim=(0, 2))  # BUG
        return _fold_windows(dpatches, ctx.length), dw

    @staticmethod
    def example_inputs():
        return _depthwise_inputs(6)


R = 2


class UnknownPixelShuffle(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        n, crr, h, w = x.shape
        c = crr // (R * R)
        return x.view(n, c, R, R, h, w).permute(0, 1, 4, 2, 5, 3).reshape(n, c, h * R, w * R)

    @staticmethod
    def backward(ctx, dy):
        n, c, hr, wr = dy.shape
        return dy.view(n, c, hr // R, R, wr // R, R).permute(0, 1, 3, 5, 2, 4).reshape(n, c * R * R, hr // R, wr // R)

    @staticmethod
    def example_inputs():
        return (torch.randn(2, 8, 3, 2, dtype=torch.float64, generator=_gen(7)),)


class UnknownPixelShuffleSubpixelOrder(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "the inverse permutation swaps the row and column sub-pixel offsets within each r x r block"}

    @staticmethod
    def forward(ctx, x):
        n, crr, h, w = x.shape
        c = crr // (R * R)
        return x.view(n, c, R, R, h, w).permute(0, 1, 4, 2, 5, 3).reshape(n, c, h * R, w * R)

    @staticmethod
    def backward(ctx, dy):
        n, c, hr, wr = dy.shape
        blocks = dy.view(n, c, hr // R, R, wr // R, R)
        return blocks.permute(0, 1, 5, 3, 2, 4).reshape(n, c * R * R, hr // R, wr // R)  # BUG

    @staticmethod
    def example_inputs():
        return (torch.randn(2, 8, 3, 2, dtype=torch.float64, generator=_gen(8)),)
