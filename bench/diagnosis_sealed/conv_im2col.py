"""Convolutions written as unfold / im2col, with hand-written backwards."""
import torch
import torch.nn.functional as F


def _conv1d_inputs():
    g = torch.Generator().manual_seed(65)
    return (torch.randn(2, 2, 6, dtype=torch.float64, generator=g),
            torch.randn(3, 2, 3, dtype=torch.float64, generator=g))


class SealedConv1dUnfold(torch.autograd.Function):
    """Valid 1-D cross-correlation: x (N, C, L), w (O, C, K), by Tensor.unfold and einsum."""
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        patches = x.unfold(2, w.shape[-1], 1)  # (N, C, Lout, K)
        ctx.save_for_backward(x, w, patches)
        return torch.einsum("nclk,ock->nol", patches, w)

    @staticmethod
    def backward(ctx, grad):
        x, w, patches = ctx.saved_tensors
        dw = torch.einsum("nol,nclk->ock", grad, patches)
        dpatches = torch.einsum("nol,ock->nclk", grad, w)
        dx = torch.zeros_like(x)
        lout = grad.shape[-1]
        for k in range(w.shape[-1]):
            dx[:, :, k:k + lout] += dpatches[..., k]
        return dx, dw

    @staticmethod
    def example_inputs():
        return _conv1d_inputs()


class SealedConv1dUnfoldOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "the overlapping patch gradients are assigned into dx instead of added"}

    @staticmethod
    def forward(ctx, x, w):
        patches = x.unfold(2, w.shape[-1], 1)
        ctx.save_for_backward(x, w, patches)
        return torch.einsum("nclk,ock->nol", patches, w)

    @staticmethod
    def backward(ctx, grad):
        x, w, patches = ctx.saved_tensors
        dw = torch.einsum("nol,nclk->ock", grad, patches)
        dpatches = torch.einsum("nol,ock->nclk", grad, w)
        dx = torch.zeros_like(x)
        lout = grad.shape[-1]
        for k in range(w.shape[-1]):
            dx[:, :, k:k + lout] = dpatches[..., k]  # BUG
        return dx, dw

    @staticmethod
    def example_inputs():
        return _conv1d_inputs()


def _full_correlate(grad, kernel):
    """Correlate grad (N, O, Lout) with kernel (O, C, K) over a zero-padded grad: (N, C, L)."""
    k = kernel.shape[-1]
    padded = F.pad(grad, (k - 1, k - 1))
    return torch.einsum("nolk,ock->ncl", padded.unfold(2, k, 1), kernel)


class SealedConv1dTransposedBackward(torch.autograd.Function):
    """The input gradient as a full correlation with the flipped kernel."""
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return torch.einsum("nclk,ock->nol", x.unfold(2, w.shape[-1], 1), w)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        dx = _full_correlate(grad, w.flip(-1))
        dw = torch.einsum("nol,nclk->ock", grad, x.unfold(2, w.shape[-1], 1))
        return dx, dw

    @staticmethod
    def example_inputs():
        return _conv1d_inputs()


class SealedConv1dUnflippedKernel(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the full correlation for dx uses the kernel as is, not flipped along K"}

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return torch.einsum("nclk,ock->nol", x.unfold(2, w.shape[-1], 1), w)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        dx = _full_correlate(grad, w)  # BUG
        dw = torch.einsum("nol,nclk->ock", grad, x.unfold(2, w.shape[-1], 1))
        return dx, dw

    @staticmethod
    def example_inputs():
        return _conv1d_inputs()


def _conv2d_inputs():
    g = torch.Generator().manual_seed(66)
    return (torch.randn(2, 2, 4, 4, dtype=torch.float64, generator=g),
            torch.randn(3, 2, 2, 2, dtype=torch.float64, generator=g),
            torch.randn(3, dtype=torch.float64, generator=g))


class SealedConv2dIm2col(torch.autograd.Function):
    """conv2d by F.unfold + matmul; the input gradient by F.fold."""
    bug = None

    @staticmethod
    def forward(ctx, x, w, b):
        n, _, h, wd = x.shape
        o, _, kh, kw = w.shape
        cols = F.unfold(x, (kh, kw))
        out = w.reshape(o, -1) @ cols + b.view(1, -1, 1)
        ctx.save_for_backward(cols, w)
        ctx.size = (h, wd)
        return out.view(n, o, h - kh + 1, wd - kw + 1)

    @staticmethod
    def backward(ctx, grad):
        cols, w = ctx.saved_tensors
        n, o = grad.shape[:2]
        g2 = grad.reshape(n, o, -1)
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = F.fold(w.reshape(o, -1).t() @ g2, ctx.size, w.shape[-2:])
        if ctx.needs_input_grad[1]:
            dw = (g2 @ cols.transpose(1, 2)).sum(0).view_as(w)
        if ctx.needs_input_grad[2]:
            db = g2.sum((0, 2))
        return dx, dw, db

    @staticmethod
    def example_inputs():
        return _conv2d_inputs()


class SealedConv2dIm2colWeightGrad(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "w",
           "note": "dw is computed as cols @ g^T, (C*kh*kw, O), and viewed as (O, C, kh, kw)"}

    @staticmethod
    def forward(ctx, x, w, b):
        n, _, h, wd = x.shape
        o, _, kh, kw = w.shape
        cols = F.unfold(x, (kh, kw))
        out = w.reshape(o, -1) @ cols + b.view(1, -1, 1)
        ctx.save_for_backward(cols, w)
        ctx.size = (h, wd)
        return out.view(n, o, h - kh + 1, wd - kw + 1)

    @staticmethod
    def backward(ctx, grad):
        cols, w = ctx.saved_tensors
        n, o = grad.shape[:2]
        g2 = grad.reshape(n, o, -1)
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = F.fold(w.reshape(o, -1).t() @ g2, ctx.size, w.shape[-2:])
        if ctx.needs_input_grad[1]:
            dw = (cols @ g2.transpose(1, 2)).sum(0).reshape(w.shape)  # BUG
        if ctx.needs_input_grad[2]:
            db = g2.sum((0, 2))
        return dx, dw, db

    @staticmethod
    def example_inputs():
        return _conv2d_inputs()


class SealedConv2dIm2colNoBiasGrad(torch.autograd.Function):
    bug = {"kind": "zero", "input": "b",
           "note": "the bias gradient is returned as zeros (left as a placeholder)"}

    @staticmethod
    def forward(ctx, x, w, b):
        n, _, h, wd = x.shape
        o, _, kh, kw = w.shape
        cols = F.unfold(x, (kh, kw))
        out = w.reshape(o, -1) @ cols + b.view(1, -1, 1)
        ctx.save_for_backward(cols, w, b)
        ctx.size = (h, wd)
        return out.view(n, o, h - kh + 1, wd - kw + 1)

    @staticmethod
    def backward(ctx, grad):
        cols, w, b = ctx.saved_tensors
        n, o = grad.shape[:2]
        g2 = grad.reshape(n, o, -1)
        dx = F.fold(w.reshape(o, -1).t() @ g2, ctx.size, w.shape[-2:])
        dw = (g2 @ cols.transpose(1, 2)).sum(0).view_as(w)
        db = torch.zeros_like(b)  # BUG
        return dx, dw, db

    @staticmethod
    def example_inputs():
        return _conv2d_inputs()
