"""Saved tensors changed in place: after ``save_for_backward`` in forward, or by backward itself,
and an input modified by forward. torch-style on gradcli's engine; ``bug = None`` is a correct twin.
"""
import gradcli as torch


class SwishSavesSigmoid(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        return grad_output * s * (1 + x * (1 - s))


class SwishSigmoidReusedInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "forward saves sigmoid(x) and then turns it into the output with s.mul_(x), "
                   "so backward reads x * sigmoid(x) as the sigmoid"}

    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return s.mul_(x)  # BUG

    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        return grad_output * s * (1 + x * (1 - s))


class SigmoidBackwardInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "backward overwrites the saved output with y * (1 - y) to save memory; a "
                   "second backward reads the overwritten tensor"}

    @staticmethod
    def forward(ctx, x):
        y = torch.sigmoid(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        y.mul_(1 - y)  # BUG
        return grad_output * y


class ReLUClampsInput(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "forward clamps its input in place (x.clamp_) without mark_dirty"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp_(min=0.0)  # BUG

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x > 0).type_as(x)
