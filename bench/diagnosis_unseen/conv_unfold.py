"""Convolutions written with unfold / im2col and a hand-written backward.

Part of the blind corpus bench/diagnosis_unseen (see its README): score only, never design.
"""
import torch
import torch.nn.functional as F


def _conv1d_inputs():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 2, 6, dtype=torch.float64, generator=g)   # (N, C, L)
    w = torch.randn(3, 2, 3, dtype=torch.float64, generator=g)   # (O, C, K)
    return x, w


def fold_windows(dcols, length):
    """Adjoint of x.unfold(2, K, 1): add each window's gradient back where it was read."""
    n, c, windows, k = dcols.shape
    dx = dcols.new_zeros(n, c, length)
    for j in range(k):
        dx[:, :, j:j + windows] += dcols[..., j]
    return dx


class Conv1dByUnfold(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        cols = x.unfold(2, w.shape[-1], 1)                  # (N, C, L_out, K)
        ctx.save_for_backward(cols, w)
        ctx.length = x.shape[-1]
        return torch.einsum("nclk,ock->nol", cols, w)

    @staticmethod
    def backward(ctx, grad_out):
        cols, w = ctx.saved_tensors
        dcols = torch.einsum("nol,ock->nclk", grad_out, w)
        dw = torch.einsum("nol,nclk->ock", grad_out, cols)
        return fold_windows(dcols, ctx.length), dw

    @staticmethod
    def example_inputs():
        return _conv1d_inputs()


class Conv1dFoldAssigns(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "overlapping windows' gradients are assigned into dx, so later taps overwrite earlier"}

    @staticmethod
    def forward(ctx, x, w):
        cols = x.unfold(2, w.shape[-1], 1)
        ctx.save_for_backward(cols, w)
        ctx.length = x.shape[-1]
        return torch.einsum("nclk,ock->nol", cols, w)

    @staticmethod
    def backward(ctx, grad_out):
        cols, w = ctx.saved_tensors
        dcols = torch.einsum("nol,ock->nclk", grad_out, w)
        n, c, windows, k = dcols.shape
        dx = dcols.new_zeros(n, c, ctx.length)
        for j in range(k):
            dx[:, :, j:j + windows] = dcols[..., j]  # BUG
        return dx, torch.einsum("nol,nclk->ock", grad_out, cols)

    @staticmethod
    def example_inputs():
        return _conv1d_inputs()


class Conv1dFrozenKernel(torch.autograd.Function):
    bug = {"kind": "zero", "input": "w",
           "note": "backward returns None for the kernel, written for a frozen-filter model"}

    @staticmethod
    def forward(ctx, x, w):
        cols = x.unfold(2, w.shape[-1], 1)
        ctx.save_for_backward(cols, w)
        ctx.length = x.shape[-1]
        return torch.einsum("nclk,ock->nol", cols, w)

    @staticmethod
    def backward(ctx, grad_out):
        cols, w = ctx.saved_tensors
        dcols = torch.einsum("nol,ock->nclk", grad_out, w)
        return fold_windows(dcols, ctx.length), None  # BUG

    @staticmethod
    def example_inputs():
        return _conv1d_inputs()


class Conv1dPatchMatmul(torch.autograd.Function):
    """Patches laid out (N, L_out, C*K) for one matmul with the flattened kernel."""
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        n, c, length = x.shape
        o, _, k = w.shape
        patches = x.unfold(2, k, 1).permute(0, 2, 1, 3).reshape(n, -1, c * k)
        ctx.save_for_backward(patches, w)
        ctx.dims = (n, c, length, k)
        return (patches @ w.reshape(o, -1).T).transpose(1, 2)

    @staticmethod
    def backward(ctx, grad_out):
        patches, w = ctx.saved_tensors
        n, c, length, k = ctx.dims
        g = grad_out.transpose(1, 2)                       # (N, L_out, O)
        dw = (g.reshape(-1, g.shape[-1]).T @ patches.reshape(-1, c * k)).reshape(w.shape)
        dpatches = g @ w.reshape(w.shape[0], -1)           # (N, L_out, C*K)
        dcols = dpatches.reshape(n, -1, c, k).permute(0, 2, 1, 3)
        return fold_windows(dcols, length), dw

    @staticmethod
    def example_inputs():
        return _conv1d_inputs()


class Conv1dPatchGradUnpermuted(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x",
           "note": "patch gradients (N, L_out, C*K) reshaped straight to (N, C, L_out, K), no permute"}

    @staticmethod
    def forward(ctx, x, w):
        n, c, length = x.shape
        o, _, k = w.shape
        patches = x.unfold(2, k, 1).permute(0, 2, 1, 3).reshape(n, -1, c * k)
        ctx.save_for_backward(patches, w)
        ctx.dims = (n, c, length, k)
        return (patches @ w.reshape(o, -1).T).transpose(1, 2)

    @staticmethod
    def backward(ctx, grad_out):
        patches, w = ctx.saved_tensors
        n, c, length, k = ctx.dims
        g = grad_out.transpose(1, 2)
        dw = (g.reshape(-1, g.shape[-1]).T @ patches.reshape(-1, c * k)).reshape(w.shape)
        dpatches = g @ w.reshape(w.shape[0], -1)
        dcols = dpatches.reshape(n, c, -1, k)  # BUG
        return fold_windows(dcols, length), dw

    @staticmethod
    def example_inputs():
        return _conv1d_inputs()


def _conv2d_inputs():
    g = torch.Generator().manual_seed(9)
    x = torch.randn(2, 2, 4, 4, dtype=torch.float64, generator=g)
    w = torch.randn(2, 2, 2, 2, dtype=torch.float64, generator=g)
    b = torch.randn(2, dtype=torch.float64, generator=g)
    return x, w, b


class Conv2dByIm2col(torch.autograd.Function):
    """2x2 kernel, stride 1, no padding, with a per-output-channel bias."""
    bug = None

    @staticmethod
    def forward(ctx, x, w, b):
        n, _, h, wd = x.shape
        o, _, kh, kw = w.shape
        cols = F.unfold(x, (kh, kw))                        # (N, C*kh*kw, L)
        out = w.view(o, -1) @ cols + b.view(1, o, 1)
        ctx.save_for_backward(cols, w)
        ctx.hw = (h, wd)
        return out.view(n, o, h - kh + 1, wd - kw + 1)

    @staticmethod
    def backward(ctx, grad_out):
        cols, w = ctx.saved_tensors
        n, o = grad_out.shape[:2]
        g = grad_out.reshape(n, o, -1)
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = F.fold(w.view(o, -1).T @ g, ctx.hw, w.shape[-2:])
        if ctx.needs_input_grad[1]:
            dw = (g @ cols.transpose(1, 2)).sum(0).view_as(w)
        if ctx.needs_input_grad[2]:
            db = grad_out.sum((0, 2, 3))
        return dx, dw, db

    @staticmethod
    def example_inputs():
        return _conv2d_inputs()


class Conv2dBiasMissesWidth(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "b",
           "note": "the bias gradient sums over batch and height but not over the width dim"}

    @staticmethod
    def forward(ctx, x, w, b):
        n, _, h, wd = x.shape
        o, _, kh, kw = w.shape
        cols = F.unfold(x, (kh, kw))
        out = w.view(o, -1) @ cols + b.view(1, o, 1)
        ctx.save_for_backward(cols, w)
        ctx.hw = (h, wd)
        return out.view(n, o, h - kh + 1, wd - kw + 1)

    @staticmethod
    def backward(ctx, grad_out):
        cols, w = ctx.saved_tensors
        n, o = grad_out.shape[:2]
        g = grad_out.reshape(n, o, -1)
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = F.fold(w.view(o, -1).T @ g, ctx.hw, w.shape[-2:])
        if ctx.needs_input_grad[1]:
            dw = (g @ cols.transpose(1, 2)).sum(0).view_as(w)
        if ctx.needs_input_grad[2]:
            db = grad_out.sum((0, 2))  # BUG
        return dx, dw, db

    @staticmethod
    def example_inputs():
        return _conv2d_inputs()
