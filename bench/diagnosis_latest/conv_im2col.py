"""Convolutions by unfold / im2col: conv1d by Tensor.unfold + einsum, conv2d by F.unfold / F.fold."""
import torch
import torch.nn.functional as F


def _conv1d_inputs():
    gen = torch.Generator().manual_seed(31)
    return (torch.randn(2, 7, dtype=torch.float64, generator=gen),
            torch.randn(3, dtype=torch.float64, generator=gen))


class LatestConv1dUnfold(torch.autograd.Function):
    """Valid cross-correlation of rows x (N, L) with a kernel w (K,)."""
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        cols = x.unfold(1, w.shape[0], 1)
        ctx.save_for_backward(cols, w)
        ctx.length = x.shape[1]
        return torch.einsum("nik,k->ni", cols, w)

    @staticmethod
    def backward(ctx, g):
        cols, w = ctx.saved_tensors
        full = F.pad(g, (w.shape[0] - 1, w.shape[0] - 1))
        grad_x = F.conv1d(full.unsqueeze(1), w.flip(0).view(1, 1, -1)).squeeze(1)
        return grad_x, torch.einsum("nik,ni->k", cols, g)

    example_inputs = staticmethod(_conv1d_inputs)


class LatestConv1dUnfoldUnflipped(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the input gradient correlates the padded g with the kernel without flipping it"}

    @staticmethod
    def forward(ctx, x, w):
        cols = x.unfold(1, w.shape[0], 1)
        ctx.save_for_backward(cols, w)
        return torch.einsum("nik,k->ni", cols, w)

    @staticmethod
    def backward(ctx, g):
        cols, w = ctx.saved_tensors
        full = F.pad(g, (w.shape[0] - 1, w.shape[0] - 1))
        grad_x = F.conv1d(full.unsqueeze(1), w.view(1, 1, -1)).squeeze(1)  # BUG
        return grad_x, torch.einsum("nik,ni->k", cols, g)

    example_inputs = staticmethod(_conv1d_inputs)


class LatestConv1dUnfoldOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "each kernel tap assigns into the overlapping window instead of adding to it"}

    @staticmethod
    def forward(ctx, x, w):
        cols = x.unfold(1, w.shape[0], 1)
        ctx.save_for_backward(cols, w)
        ctx.length = x.shape[1]
        return torch.einsum("nik,k->ni", cols, w)

    @staticmethod
    def backward(ctx, g):
        cols, w = ctx.saved_tensors
        out_len = g.shape[1]
        grad_x = g.new_zeros(g.shape[0], ctx.length)
        for k in range(w.shape[0]):
            grad_x[:, k:k + out_len] = g * w[k]  # BUG
        return grad_x, torch.einsum("nik,ni->k", cols, g)

    example_inputs = staticmethod(_conv1d_inputs)


def _conv2d_inputs():
    gen = torch.Generator().manual_seed(32)
    return (torch.randn(2, 2, 4, 4, dtype=torch.float64, generator=gen),
            torch.randn(3, 2, 2, 2, dtype=torch.float64, generator=gen))


class LatestConv2dIm2col(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        n, _, h, wd = x.shape
        o, _, kh, kw = w.shape
        cols = F.unfold(x, (kh, kw))
        out = w.view(o, -1) @ cols
        ctx.save_for_backward(cols, w)
        ctx.size = (h, wd)
        return out.view(n, o, h - kh + 1, wd - kw + 1)

    @staticmethod
    def backward(ctx, g):
        cols, w = ctx.saved_tensors
        o = w.shape[0]
        g2 = g.reshape(g.shape[0], o, -1)
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = F.fold(w.view(o, -1).t() @ g2, ctx.size, w.shape[2:])
        if ctx.needs_input_grad[1]:
            grad_w = (g2 @ cols.transpose(1, 2)).sum(0).view_as(w)
        return grad_x, grad_w

    example_inputs = staticmethod(_conv2d_inputs)


class LatestConv2dIm2colWeightPlaceholder(torch.autograd.Function):
    bug = {"kind": "zero", "input": "w",
           "note": "the weight gradient is left as the zeros placeholder it was initialised with"}

    @staticmethod
    def forward(ctx, x, w):
        n, _, h, wd = x.shape
        o, _, kh, kw = w.shape
        cols = F.unfold(x, (kh, kw))
        out = w.view(o, -1) @ cols
        ctx.save_for_backward(cols, w)
        ctx.size = (h, wd)
        return out.view(n, o, h - kh + 1, wd - kw + 1)

    @staticmethod
    def backward(ctx, g):
        cols, w = ctx.saved_tensors
        o = w.shape[0]
        g2 = g.reshape(g.shape[0], o, -1)
        grad_x = F.fold(w.view(o, -1).t() @ g2, ctx.size, w.shape[2:])
        grad_w = torch.zeros_like(w)  # BUG
        return grad_x, grad_w

    example_inputs = staticmethod(_conv2d_inputs)
