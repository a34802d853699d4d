"""Pooling and upsampling by reshape, with hand-written backwards.

Part of the blind corpus bench/diagnosis_unseen (see its README): score only, never design.
"""
import torch


def _signal():
    g = torch.Generator().manual_seed(61)
    return (torch.randn(2, 3, 8, dtype=torch.float64, generator=g),)


class AvgPoolPairs(torch.autograd.Function):
    """Average of non-overlapping pairs along the last dim: (N, C, L) -> (N, C, L/2)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return x.reshape(*x.shape[:-1], -1, 2).mean(-1)

    @staticmethod
    def backward(ctx, grad_out):
        return (grad_out / 2).unsqueeze(-1).expand(*grad_out.shape, 2).reshape(ctx.shape)

    @staticmethod
    def example_inputs():
        return _signal()


class AvgPoolPairsNoHalf(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "each element of a pair gets the whole grad_out, the 1/2 of the mean is missing"}

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return x.reshape(*x.shape[:-1], -1, 2).mean(-1)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.unsqueeze(-1).expand(*grad_out.shape, 2).reshape(ctx.shape)  # BUG

    @staticmethod
    def example_inputs():
        return _signal()


class AvgPoolPairsTiled(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x",
           "note": "grad_out is tiled (repeat) instead of interleaved: [g0 g1 g2 g3 g0 ...] not [g0 g0 g1 ...]"}

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return x.reshape(*x.shape[:-1], -1, 2).mean(-1)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.repeat(1, 1, 2) / 2  # BUG

    @staticmethod
    def example_inputs():
        return _signal()


class MaxPoolPairs(torch.autograd.Function):
    """Max of non-overlapping pairs; also returns the argmax, marked non-differentiable."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        values, idx = x.reshape(*x.shape[:-1], -1, 2).max(dim=-1)
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return values, idx

    @staticmethod
    def backward(ctx, grad_values, grad_idx):
        (idx,) = ctx.saved_tensors
        out = grad_values.new_zeros(*idx.shape, 2)
        out.scatter_(-1, idx.unsqueeze(-1), grad_values.unsqueeze(-1))
        return out.reshape(ctx.shape)

    @staticmethod
    def example_inputs():
        return _signal()


class MaxPoolPairsMaskOnly(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "backward scatters 1.0 at each argmax: the winner mask, never times grad_values"}

    @staticmethod
    def forward(ctx, x):
        values, idx = x.reshape(*x.shape[:-1], -1, 2).max(dim=-1)
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return values, idx

    @staticmethod
    def backward(ctx, grad_values, grad_idx):
        (idx,) = ctx.saved_tensors
        out = grad_values.new_zeros(*idx.shape, 2)
        out.scatter_(-1, idx.unsqueeze(-1), 1.0)  # BUG
        return out.reshape(ctx.shape)

    @staticmethod
    def example_inputs():
        return _signal()


def _image():
    g = torch.Generator().manual_seed(62)
    return (torch.randn(1, 2, 3, 3, dtype=torch.float64, generator=g),)


class NearestUpsample2x(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return x.repeat_interleave(2, dim=2).repeat_interleave(2, dim=3)

    @staticmethod
    def backward(ctx, grad_out):
        n, c, h2, w2 = grad_out.shape
        return grad_out.reshape(n, c, h2 // 2, 2, w2 // 2, 2).sum(dim=(3, 5))

    @staticmethod
    def example_inputs():
        return _image()


class NearestUpsample2xTakesCorner(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "backward keeps the top-left copy of each 2x2 block instead of summing all four"}

    @staticmethod
    def forward(ctx, x):
        return x.repeat_interleave(2, dim=2).repeat_interleave(2, dim=3)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out[:, :, ::2, ::2].contiguous()  # BUG

    @staticmethod
    def example_inputs():
        return _image()
