"""Convolution and pooling written with unfold/fold and reshapes: conv2d by F.unfold with a
(N, L, O) matmul layout, 2x2 average pooling by reshape, 2x2 max pooling by unfold, and a top-k
mean pooling over the last dim.

BLIND corpus: see README.md. Never tune gradcli's diagnosis on these Functions.
"""
import torch
import torch.nn.functional as F

K = 3
TOP = 2


def _conv_inputs():
    torch.manual_seed(71)
    x = torch.randn(2, 2, 4, 4, dtype=torch.float64)
    weight = torch.randn(3, 2, K, K, dtype=torch.float64)
    bias = torch.randn(3, dtype=torch.float64)
    return x, weight, bias


def _conv(ctx, x, weight, bias):
    n, _, h, w = x.shape
    o = weight.shape[0]
    cols = F.unfold(x, K)                                            # (N, C*K*K, L)
    out = cols.transpose(1, 2) @ weight.reshape(o, -1).t() + bias    # (N, L, O)
    ctx.save_for_backward(cols, weight)
    ctx.hw = (h, w)
    return out.transpose(1, 2).reshape(n, o, h - K + 1, w - K + 1)


class Conv2dUnfold(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _conv(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        cols, weight = ctx.saved_tensors
        n, o = grad_out.shape[:2]
        g = grad_out.reshape(n, o, -1).transpose(1, 2)                 # (N, L, O)
        grad_cols = g @ weight.reshape(o, -1)                          # (N, L, C*K*K)
        grad_x = F.fold(grad_cols.transpose(1, 2), ctx.hw, K)
        grad_w = (g.transpose(1, 2) @ cols.transpose(1, 2)).sum(0).reshape(weight.shape)
        return grad_x, grad_w, grad_out.sum(dim=(0, 2, 3))

    @staticmethod
    def example_inputs():
        return _conv_inputs()


class Conv2dUnfoldGradOutputLayout(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x",
           "note": "grad_out (N, O, Ho, Wo) is reshaped straight to (N, L, O), without the "
                   "transpose from (N, O, L)", "also": ["transposed"]}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _conv(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        cols, weight = ctx.saved_tensors
        n, o = grad_out.shape[:2]
        g = grad_out.reshape(n, -1, o)  # BUG -- grad_out.reshape(n, o, -1).transpose(1, 2)
        grad_cols = g @ weight.reshape(o, -1)
        grad_x = F.fold(grad_cols.transpose(1, 2), ctx.hw, K)
        grad_w = (g.transpose(1, 2) @ cols.transpose(1, 2)).sum(0).reshape(weight.shape)
        return grad_x, grad_w, grad_out.sum(dim=(0, 2, 3))

    @staticmethod
    def example_inputs():
        return _conv_inputs()


class Conv2dUnfoldBiasNotReduced(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "bias",
           "note": "the bias gradient is summed over batch and rows but not over the columns "
                   "(shape (O, Wo) for a bias of shape (O,))"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _conv(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        cols, weight = ctx.saved_tensors
        n, o = grad_out.shape[:2]
        g = grad_out.reshape(n, o, -1).transpose(1, 2)
        grad_cols = g @ weight.reshape(o, -1)
        grad_x = F.fold(grad_cols.transpose(1, 2), ctx.hw, K)
        grad_w = (g.transpose(1, 2) @ cols.transpose(1, 2)).sum(0).reshape(weight.shape)
        grad_b = grad_out.sum(dim=(0, 2))  # BUG -- dim=(0, 2, 3)
        return grad_x, grad_w, grad_b

    @staticmethod
    def example_inputs():
        return _conv_inputs()


class Conv2dUnfoldWeightProductOfSums(torch.autograd.Function):
    bug = {"kind": "none", "input": "weight",
           "note": "the weight gradient multiplies the sums over positions instead of summing "
                   "the products: a wrong formula"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _conv(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        cols, weight = ctx.saved_tensors
        n, o = grad_out.shape[:2]
        g = grad_out.reshape(n, o, -1).transpose(1, 2)
        grad_cols = g @ weight.reshape(o, -1)
        grad_x = F.fold(grad_cols.transpose(1, 2), ctx.hw, K)
        grad_w = (g.sum(1)[:, :, None] * cols.sum(2)[:, None, :]).sum(0).reshape(weight.shape)  # BUG
        return grad_x, grad_w, grad_out.sum(dim=(0, 2, 3))

    @staticmethod
    def example_inputs():
        return _conv_inputs()


def _pool_inputs():
    torch.manual_seed(72)
    return (torch.randn(2, 2, 4, 6, dtype=torch.float64, requires_grad=True),)


def _avg_pool(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).mean(dim=(3, 5))


class AvgPool2x2(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _avg_pool(x)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.repeat_interleave(2, dim=2).repeat_interleave(2, dim=3) / 4

    @staticmethod
    def example_inputs():
        return _pool_inputs()


class AvgPool2x2TiledGradient(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x",
           "note": "repeat (tiling the whole map) where repeat_interleave is needed: the right "
                   "values in the wrong layout"}

    @staticmethod
    def forward(ctx, x):
        return _avg_pool(x)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.repeat(1, 1, 2, 2) / 4  # BUG -- repeat_interleave along dims 2 and 3

    @staticmethod
    def example_inputs():
        return _pool_inputs()


class MaxPool2x2Unfold(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        n, c, h, w = x.shape
        cols = F.unfold(x, 2, stride=2).reshape(n, c, 4, -1)
        values, arg = cols.max(dim=2)
        ctx.save_for_backward(arg)
        ctx.shape = x.shape
        return values.reshape(n, c, h // 2, w // 2)

    @staticmethod
    def backward(ctx, grad_out):
        (arg,) = ctx.saved_tensors
        n, c, h, w = ctx.shape
        g = grad_out.reshape(n, c, 1, -1)
        grad_cols = torch.zeros(n, c, 4, g.shape[-1], dtype=g.dtype).scatter_(2, arg[:, :, None], g)
        return F.fold(grad_cols.reshape(n, c * 4, -1), (h, w), 2, stride=2)

    @staticmethod
    def example_inputs():
        return _pool_inputs()


class TopKMeanPool(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        values, idx = x.topk(TOP, dim=-1)
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return values.mean(-1)

    @staticmethod
    def backward(ctx, grad_out):
        (idx,) = ctx.saved_tensors
        spread = (grad_out[:, None] / TOP).expand(-1, TOP)
        return torch.zeros(ctx.shape, dtype=grad_out.dtype).scatter(-1, idx, spread)
