"""L2-normalisation over the last dim, y = x / ||x||, with a hand-written backward (plain torch).

Blind corpus: see README.md.
"""
import torch


class L2Normalize(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        norm = x.norm(dim=-1, keepdim=True)
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        y, norm = ctx.saved_tensors
        return (grad_out - y * (grad_out * y).sum(-1, keepdim=True)) / norm


class L2NormalizeProjectionSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the projection onto y is added back instead of removed"}

    @staticmethod
    def forward(ctx, x):
        norm = x.norm(dim=-1, keepdim=True)
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        y, norm = ctx.saved_tensors
        return (grad_out + y * (grad_out * y).sum(-1, keepdim=True)) / norm  # BUG


class L2NormalizeDotOverRows(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the dot product <g, y> is summed over dim 0 instead of the normalised dim -1"}

    @staticmethod
    def forward(ctx, x):
        norm = x.norm(dim=-1, keepdim=True)
        y = x / norm
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        y, norm = ctx.saved_tensors
        return (grad_out - y * (grad_out * y).sum(0, keepdim=True)) / norm  # BUG
