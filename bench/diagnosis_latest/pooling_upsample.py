"""Pooling and upsampling: pair average pooling, pair max pooling with argmax, nearest 2x upsampling."""
import torch


class LatestAvgPoolPairs(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return x.view(x.shape[0], -1, 2).mean(-1)

    @staticmethod
    def backward(ctx, g):
        return g.repeat_interleave(2, dim=1) / 2


class LatestAvgPoolPairsNoHalf(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x", "note": "copies g to both members of each pair without halving"}

    @staticmethod
    def forward(ctx, x):
        return x.view(x.shape[0], -1, 2).mean(-1)

    @staticmethod
    def backward(ctx, g):
        return g.repeat_interleave(2, dim=1)  # BUG


class LatestMaxPoolPairsArgmax(torch.autograd.Function):
    """Returns (max of each pair, its position 0/1); the position is not differentiable."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        values, which = x.view(x.shape[0], -1, 2).max(-1)
        ctx.mark_non_differentiable(which)
        ctx.save_for_backward(which)
        ctx.shape = x.shape
        return values, which

    @staticmethod
    def backward(ctx, grad_values, grad_which):
        (which,) = ctx.saved_tensors
        grad = grad_values.new_zeros(ctx.shape[0], ctx.shape[1] // 2, 2)
        grad.scatter_(2, which[..., None], grad_values[..., None])
        return grad.view(ctx.shape)


class LatestMaxPoolPairsArgmaxWrongCotangent(torch.autograd.Function):
    bug = {"kind": "zero", "input": "x",
           "note": "routes the cotangent of the non-differentiable index output (always zero)"}

    @staticmethod
    def forward(ctx, x):
        values, which = x.view(x.shape[0], -1, 2).max(-1)
        ctx.mark_non_differentiable(which)
        ctx.save_for_backward(which)
        ctx.shape = x.shape
        return values, which

    @staticmethod
    def backward(ctx, grad_values, grad_which):
        (which,) = ctx.saved_tensors
        grad = grad_values.new_zeros(ctx.shape[0], ctx.shape[1] // 2, 2)
        grad.scatter_(2, which[..., None], grad_which[..., None].to(grad.dtype))  # BUG
        return grad.view(ctx.shape)


class LatestUpsampleNearest2x(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return x.repeat_interleave(2, dim=1)

    @staticmethod
    def backward(ctx, g):
        n, width = g.shape
        return g.view(n, width // 2, 2).sum(-1)


class LatestUpsampleNearest2xHalves(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "sums the two halves of each row instead of each adjacent pair"}

    @staticmethod
    def forward(ctx, x):
        return x.repeat_interleave(2, dim=1)

    @staticmethod
    def backward(ctx, g):
        n, width = g.shape
        return g.view(n, 2, width // 2).sum(1)  # BUG
