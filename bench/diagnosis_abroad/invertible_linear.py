"""Glow's invertible 1x1 convolution (by einsum and by flattening to a matmul), its log-determinant
H * W * log|det W| via torch.slogdet, and ActNorm's per-channel affine map."""
import torch

HW = 4  # spatial positions the log-determinant is counted over (a 2x2 feature map)


def _conv_inputs():
    gen = torch.Generator().manual_seed(21)
    x = torch.randn(2, 3, 2, 2, dtype=torch.float64, generator=gen)
    weight = torch.eye(3, dtype=torch.float64) + 0.3 * torch.randn(3, 3, dtype=torch.float64, generator=gen)
    return x, weight


def _weight_input():
    return (_conv_inputs()[1],)


# ----------------------------------------------------------------- 1x1 conv by einsum
class AbroadInvConv1x1(torch.autograd.Function):
    """y[n, o, h, w] = sum_c W[o, c] x[n, c, h, w]."""

    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return torch.einsum("oc,nchw->nohw", weight, x)

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        grad_x = torch.einsum("oc,nohw->nchw", weight, g)
        grad_w = torch.einsum("nohw,nchw->oc", g, x)
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _conv_inputs()


class AbroadInvConv1x1WrongSide(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "the input gradient contracts g with W[c, o] (W) instead of W[o, c] (W.T)"}

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return torch.einsum("oc,nchw->nohw", weight, x)

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        grad_x = torch.einsum("co,nohw->nchw", weight, g)  # BUG
        grad_w = torch.einsum("nohw,nchw->oc", g, x)
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _conv_inputs()


# ----------------------------------------------------------------- 1x1 conv by flattening
class AbroadInvConv1x1Flat(torch.autograd.Function):
    """The same map as a matmul on (N*H*W, C) rows: permute channels last, flatten, multiply, undo."""

    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        n, c, h, w = x.shape
        rows = x.permute(0, 2, 3, 1).reshape(-1, c)
        ctx.save_for_backward(rows, weight)
        ctx.shape = (n, c, h, w)
        return (rows @ weight.mT).view(n, h, w, c).permute(0, 3, 1, 2)

    @staticmethod
    def backward(ctx, g):
        rows, weight = ctx.saved_tensors
        n, c, h, w = ctx.shape
        g_rows = g.permute(0, 2, 3, 1).reshape(-1, c)
        grad_x = (g_rows @ weight).view(n, h, w, c).permute(0, 3, 1, 2)
        return grad_x, g_rows.mT @ rows

    @staticmethod
    def example_inputs():
        return _conv_inputs()


class AbroadInvConv1x1FlatNoPermuteBack(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x",
           "note": "the (N*H*W, C) row gradient is viewed straight as (N, C, H, W) without moving channels back"}

    @staticmethod
    def forward(ctx, x, weight):
        n, c, h, w = x.shape
        rows = x.permute(0, 2, 3, 1).reshape(-1, c)
        ctx.save_for_backward(rows, weight)
        ctx.shape = (n, c, h, w)
        return (rows @ weight.mT).view(n, h, w, c).permute(0, 3, 1, 2)

    @staticmethod
    def backward(ctx, g):
        rows, weight = ctx.saved_tensors
        n, c, h, w = ctx.shape
        g_rows = g.permute(0, 2, 3, 1).reshape(-1, c)
        grad_x = (g_rows @ weight).reshape(n, c, h, w)  # BUG
        return grad_x, g_rows.mT @ rows

    @staticmethod
    def example_inputs():
        return _conv_inputs()


# ----------------------------------------------------------------- log-determinant of the 1x1 conv
class AbroadInvConvLogDet(torch.autograd.Function):
    """H * W * log|det W|; its gradient is H * W * W^{-T}."""

    bug = None

    @staticmethod
    def forward(ctx, weight):
        sign, logabsdet = torch.slogdet(weight)
        ctx.save_for_backward(weight)
        return HW * logabsdet

    @staticmethod
    def backward(ctx, g):
        (weight,) = ctx.saved_tensors
        return g * HW * torch.linalg.inv(weight).mT

    @staticmethod
    def example_inputs():
        return _weight_input()


class AbroadInvConvLogDetNoTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "weight",
           "note": "d log|det W| / dW is taken as W^{-1} instead of W^{-T}"}

    @staticmethod
    def forward(ctx, weight):
        sign, logabsdet = torch.slogdet(weight)
        ctx.save_for_backward(weight)
        return HW * logabsdet

    @staticmethod
    def backward(ctx, g):
        (weight,) = ctx.saved_tensors
        return g * HW * torch.linalg.inv(weight)  # BUG

    @staticmethod
    def example_inputs():
        return _weight_input()


class AbroadInvConvLogDetPerPixel(torch.autograd.Function):
    bug = {"kind": "scale", "input": "weight",
           "note": "the factor H * W the log-determinant is counted over is left out of the gradient"}

    @staticmethod
    def forward(ctx, weight):
        sign, logabsdet = torch.slogdet(weight)
        ctx.save_for_backward(weight)
        return HW * logabsdet

    @staticmethod
    def backward(ctx, g):
        (weight,) = ctx.saved_tensors
        return g * torch.linalg.inv(weight).mT  # BUG

    @staticmethod
    def example_inputs():
        return _weight_input()


# ----------------------------------------------------------------- ActNorm
def _actnorm_inputs():
    gen = torch.Generator().manual_seed(22)
    x = torch.randn(2, 3, 2, 2, dtype=torch.float64, generator=gen)
    return (x, 0.3 * torch.randn(3, dtype=torch.float64, generator=gen),
            torch.randn(3, dtype=torch.float64, generator=gen))


class AbroadActNorm(torch.autograd.Function):
    """y = (x + bias_c) * exp(log_scale_c), per channel c of an (N, C, H, W) map."""

    bug = None

    @staticmethod
    def forward(ctx, x, log_scale, bias):
        scale = log_scale.exp()[:, None, None]
        y = (x + bias[:, None, None]) * scale
        ctx.save_for_backward(y, scale)
        return y

    @staticmethod
    def backward(ctx, g):
        y, scale = ctx.saved_tensors
        grad_x = g * scale
        return grad_x, (g * y).sum(dim=(0, 2, 3)), grad_x.sum(dim=(0, 2, 3))

    @staticmethod
    def example_inputs():
        return _actnorm_inputs()


class AbroadActNormScaleBatchOnly(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "log_scale",
           "note": "the per-channel log-scale gradient is summed over the batch only, not over H and W"}

    @staticmethod
    def forward(ctx, x, log_scale, bias):
        scale = log_scale.exp()[:, None, None]
        y = (x + bias[:, None, None]) * scale
        ctx.save_for_backward(y, scale)
        return y

    @staticmethod
    def backward(ctx, g):
        y, scale = ctx.saved_tensors
        grad_x = g * scale
        grad_log_scale = (g * y).sum(dim=0)  # BUG
        return grad_x, grad_log_scale, grad_x.sum(dim=(0, 2, 3))

    @staticmethod
    def example_inputs():
        return _actnorm_inputs()
