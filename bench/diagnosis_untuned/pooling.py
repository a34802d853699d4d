"""Pooling by hand over 1-D windows, torch-style on gradcli's engine. ``bug = None`` marks a
correct twin.
"""
import gradcli as torch


def _windows(x, k, stride):
    n = (x.shape[-1] - k) // stride + 1
    return torch.stack([x[..., i * stride:i * stride + k] for i in range(n)], dim=-2)  # (..., n, k)


def _signal():
    # distinct values: every window has a clear maximum
    return (torch.tensor([[0.3, 1.7, -0.4, 0.9, 2.2, -1.1, 0.6],
                          [-0.8, 0.1, 1.4, -1.9, 0.5, 1.2, -0.2]], requires_grad=True),)


class AvgPool1d(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, k=2):
        ctx.k = k
        ctx.length = x.shape[-1]
        return _windows(x, k, k).mean(-1)

    @staticmethod
    def backward(ctx, grad_output):
        k = ctx.k
        grad_x = torch.zeros(*grad_output.shape[:-1], ctx.length)
        for i in range(grad_output.shape[-1]):
            grad_x[..., i * k:(i + 1) * k] += grad_output[..., i:i + 1] / k
        return grad_x, None

    @staticmethod
    def example_inputs():
        return _signal()


class AvgPool1dNoDivide(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "forward averages each window of 2, backward forgets the 1/k"}

    @staticmethod
    def forward(ctx, x, k=2):
        ctx.k = k
        ctx.length = x.shape[-1]
        return _windows(x, k, k).mean(-1)

    @staticmethod
    def backward(ctx, grad_output):
        k = ctx.k
        grad_x = torch.zeros(*grad_output.shape[:-1], ctx.length)
        for i in range(grad_output.shape[-1]):
            grad_x[..., i * k:(i + 1) * k] += grad_output[..., i:i + 1]  # BUG
        return grad_x, None

    @staticmethod
    def example_inputs():
        return _signal()


class MaxPool1dOverlapping(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, k=3):
        values, arg = _windows(x, k, 1).max(dim=-1)
        starts = torch.arange(values.shape[-1])
        ctx.save_for_backward(arg + starts)
        ctx.shape = x.shape
        return values

    @staticmethod
    def backward(ctx, grad_output):
        (where,) = ctx.saved_tensors
        return torch.zeros(*ctx.shape).scatter_add(-1, where, grad_output), None

    @staticmethod
    def example_inputs():
        return _signal()


class MaxPool1dOverlapOverwrites(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "overlapping windows share a maximum; scatter keeps one window's gradient "
                   "where scatter_add is needed"}

    @staticmethod
    def forward(ctx, x, k=3):
        values, arg = _windows(x, k, 1).max(dim=-1)
        starts = torch.arange(values.shape[-1])
        ctx.save_for_backward(arg + starts)
        ctx.shape = x.shape
        return values

    @staticmethod
    def backward(ctx, grad_output):
        (where,) = ctx.saved_tensors
        return torch.zeros(*ctx.shape).scatter(-1, where, grad_output), None  # BUG

    @staticmethod
    def example_inputs():
        return _signal()
