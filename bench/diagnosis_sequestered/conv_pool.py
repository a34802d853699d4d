"""Convolutions by unfold / im2col, depthwise conv, average pooling and pixel shuffle, with
hand-written backwards (sequestered corpus)."""
import torch
import torch.nn.functional as F

K = 3


def _conv1d_inputs():
    gen = torch.Generator().manual_seed(31)
    return (torch.randn(2, 3, 7, dtype=torch.float64, generator=gen),
            torch.randn(4, 3, K, dtype=torch.float64, generator=gen))


def _conv1d_forward(ctx, x, w):
    cols = x.unfold(2, w.shape[-1], 1)  # (N, C, Lout, K)
    ctx.save_for_backward(cols, w)
    ctx.length = x.shape[-1]
    return torch.einsum("nclk,ock->nol", cols, w)


class SequesteredConv1dUnfold(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        return _conv1d_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        cols, w = ctx.saved_tensors
        n, c, lout, k = cols.shape
        dw = torch.einsum("nol,nclk->ock", grad_out, cols)
        dx = grad_out.new_zeros(n, c, ctx.length)
        for j in range(k):
            dx[:, :, j:j + lout] += torch.einsum("nol,oc->ncl", grad_out, w[:, :, j])
        return dx, dw

    @staticmethod
    def example_inputs():
        return _conv1d_inputs()


class SequesteredConv1dUnfoldOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "each kernel tap's contribution is assigned into the overlapping window instead of added"}

    @staticmethod
    def forward(ctx, x, w):
        return _conv1d_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        cols, w = ctx.saved_tensors
        n, c, lout, k = cols.shape
        dw = torch.einsum("nol,nclk->ock", grad_out, cols)
        dx = grad_out.new_zeros(n, c, ctx.length)
        for j in range(k):
            dx[:, :, j:j + lout] = torch.einsum("nol,oc->ncl", grad_out, w[:, :, j])  # BUG
        return dx, dw

    @staticmethod
    def example_inputs():
        return _conv1d_inputs()


class SequesteredConv1dFullCorrelation(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        return _conv1d_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        cols, w = ctx.saved_tensors
        k = w.shape[-1]
        padded = F.pad(grad_out, (k - 1, k - 1))
        dx = F.conv1d(padded, w.transpose(0, 1).flip(-1))
        return dx, torch.einsum("nol,nclk->ock", grad_out, cols)

    @staticmethod
    def example_inputs():
        return _conv1d_inputs()


class SequesteredConv1dFullCorrelationNoFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the input gradient is a full correlation with the kernel, which must be flipped in time"}

    @staticmethod
    def forward(ctx, x, w):
        return _conv1d_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        cols, w = ctx.saved_tensors
        k = w.shape[-1]
        padded = F.pad(grad_out, (k - 1, k - 1))
        dx = F.conv1d(padded, w.transpose(0, 1))  # BUG
        return dx, torch.einsum("nol,nclk->ock", grad_out, cols)

    @staticmethod
    def example_inputs():
        return _conv1d_inputs()


# ------------------------------------------------------------------------- conv2d by im2col
def _conv2d_inputs():
    gen = torch.Generator().manual_seed(32)
    return (torch.randn(2, 2, 4, 4, dtype=torch.float64, generator=gen),
            torch.randn(3, 2, 2, 2, dtype=torch.float64, generator=gen))


def _conv2d_forward(ctx, x, w):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    cols = F.unfold(x, (kh, kw))  # (N, C*kh*kw, L)
    out = w.reshape(o, -1) @ cols
    ctx.save_for_backward(cols, w)
    ctx.size = (h, wd)
    return out.reshape(n, o, h - kh + 1, wd - kw + 1)


class SequesteredConv2dIm2col(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        return _conv2d_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        cols, w = ctx.saved_tensors
        n, o = grad_out.shape[:2]
        g = grad_out.reshape(n, o, -1)
        dw = (g @ cols.mT).sum(0).reshape(w.shape)
        dcols = w.reshape(o, -1).mT @ g
        dx = F.fold(dcols, ctx.size, w.shape[-2:])
        return dx, dw

    @staticmethod
    def example_inputs():
        return _conv2d_inputs()


class SequesteredConv2dIm2colWeightFlipped(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "w",
           "note": "the weight gradient is formed as cols @ g^T, (C*k*k, O) instead of (O, C*k*k), then reshaped"}

    @staticmethod
    def forward(ctx, x, w):
        return _conv2d_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        cols, w = ctx.saved_tensors
        n, o = grad_out.shape[:2]
        g = grad_out.reshape(n, o, -1)
        dw = (cols @ g.mT).sum(0).reshape(w.shape)  # BUG
        dcols = w.reshape(o, -1).mT @ g
        dx = F.fold(dcols, ctx.size, w.shape[-2:])
        return dx, dw

    @staticmethod
    def example_inputs():
        return _conv2d_inputs()


# --------------------------------------------------------------------------- depthwise conv1d
def _depthwise_inputs():
    gen = torch.Generator().manual_seed(33)
    return (torch.randn(2, 3, 6, dtype=torch.float64, generator=gen),
            torch.randn(3, K, dtype=torch.float64, generator=gen))


class SequesteredDepthwiseConv1d(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        cols = x.unfold(-1, w.shape[1], 1)
        ctx.save_for_backward(cols, w)
        return (cols * w[:, None, :]).sum(-1)

    @staticmethod
    def backward(ctx, grad_out):
        cols, w = ctx.saved_tensors
        lout, k = cols.shape[2], cols.shape[3]
        dw = torch.einsum("ncl,nclk->ck", grad_out, cols)
        dx = torch.zeros(cols.shape[0], cols.shape[1], lout + k - 1, dtype=grad_out.dtype)
        for j in range(k):
            dx[..., j:j + lout] += grad_out * w[:, j:j + 1]
        return dx, dw

    @staticmethod
    def example_inputs():
        return _depthwise_inputs()


class SequesteredDepthwiseConv1dWeightNoUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "w",
           "note": "the kernel gradient sums the input windows without weighting them by grad_out"}

    @staticmethod
    def forward(ctx, x, w):
        cols = x.unfold(-1, w.shape[1], 1)
        ctx.save_for_backward(cols, w)
        return (cols * w[:, None, :]).sum(-1)

    @staticmethod
    def backward(ctx, grad_out):
        cols, w = ctx.saved_tensors
        lout, k = cols.shape[2], cols.shape[3]
        dw = cols.sum(dim=(0, 2))  # BUG
        dx = torch.zeros(cols.shape[0], cols.shape[1], lout + k - 1, dtype=grad_out.dtype)
        for j in range(k):
            dx[..., j:j + lout] += grad_out * w[:, j:j + 1]
        return dx, dw

    @staticmethod
    def example_inputs():
        return _depthwise_inputs()


# ------------------------------------------------------------------------------ average pool
def _pool_inputs():
    gen = torch.Generator().manual_seed(34)
    return (torch.randn(3, 8, dtype=torch.float64, generator=gen),)


class SequesteredAvgPool1d(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return x.reshape(x.shape[0], -1, 2).mean(-1)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.repeat_interleave(2, dim=-1) / 2

    @staticmethod
    def example_inputs():
        return _pool_inputs()


class SequesteredAvgPool1dNoHalf(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the window's gradient is copied to both elements without dividing by the window size 2"}

    @staticmethod
    def forward(ctx, x):
        return x.reshape(x.shape[0], -1, 2).mean(-1)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.repeat_interleave(2, dim=-1)  # BUG

    @staticmethod
    def example_inputs():
        return _pool_inputs()


# ----------------------------------------------------------------------------- pixel shuffle
R = 2


def _shuffle_inputs():
    gen = torch.Generator().manual_seed(35)
    return (torch.randn(1, 8, 2, 3, dtype=torch.float64, generator=gen),)


class SequesteredPixelShuffle(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        n, c, h, w = x.shape
        oc = c // (R * R)
        return x.view(n, oc, R, R, h, w).permute(0, 1, 4, 2, 5, 3).reshape(n, oc, h * R, w * R)

    @staticmethod
    def backward(ctx, grad_out):
        n, oc, hr, wr = grad_out.shape
        g = grad_out.reshape(n, oc, hr // R, R, wr // R, R)
        return g.permute(0, 1, 3, 5, 2, 4).reshape(n, oc * R * R, hr // R, wr // R)

    @staticmethod
    def example_inputs():
        return _shuffle_inputs()


class SequesteredPixelShuffleReshapeOnly(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x",
           "note": "the output gradient is reshaped straight to the input's shape, without undoing the permute"}

    @staticmethod
    def forward(ctx, x):
        n, c, h, w = x.shape
        oc = c // (R * R)
        return x.view(n, oc, R, R, h, w).permute(0, 1, 4, 2, 5, 3).reshape(n, oc, h * R, w * R)

    @staticmethod
    def backward(ctx, grad_out):
        n, oc, hr, wr = grad_out.shape
        return grad_out.reshape(n, oc * R * R, hr // R, wr // R)  # BUG

    @staticmethod
    def example_inputs():
        return _shuffle_inputs()
