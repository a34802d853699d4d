"""Kernels and proximal steps on gradcli's engine: an RBF Gram matrix between two point sets, the
soft-threshold (L1 proximal) operator, a log-sum-exp pool over features."""
import gradcli as torch

LAMBDA = 0.5


class RBFGram(torch.autograd.Function):
    """K[i, j] = exp(-|x_i - y_j|^2 / 2)."""
    bug = None

    @staticmethod
    def forward(ctx, x, y):
        diff = x[:, None, :] - y[None, :, :]
        k = torch.exp(-0.5 * (diff ** 2).sum(-1))
        ctx.save_for_backward(diff, k)
        return k

    @staticmethod
    def backward(ctx, grad):
        diff, k = ctx.saved_tensors
        w = (grad * k)[:, :, None] * diff
        return -w.sum(1), w.sum(0)


class RBFGramHalfForgotten(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x", "note": "d/dx of |x - y|^2 / 2 written 2 (x - y), the 1/2 lost"}

    @staticmethod
    def forward(ctx, x, y):
        diff = x[:, None, :] - y[None, :, :]
        k = torch.exp(-0.5 * (diff ** 2).sum(-1))
        ctx.save_for_backward(diff, k)
        return k

    @staticmethod
    def backward(ctx, grad):
        diff, k = ctx.saved_tensors
        w = (grad * k)[:, :, None] * diff
        return -2 * w.sum(1), w.sum(0)  # BUG


def _shrink_inputs():
    x = torch.tensor([[-1.7, -0.8, -0.3, 0.1], [0.35, 0.9, 1.4, -0.15], [2.2, -0.65, 0.2, 0.75]],
                     dtype=torch.float64)
    return (x.requires_grad_(),)


class SoftThreshold(torch.autograd.Function):
    """sign(x) * max(|x| - LAMBDA, 0)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x) * torch.clamp(x.abs() - LAMBDA, min=0)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return torch.where(x.abs() > LAMBDA, grad, torch.zeros_like(grad))

    @staticmethod
    def example_inputs():
        return _shrink_inputs()


class SoftThresholdMaskAtZero(torch.autograd.Function):
    bug = {"kind": "region", "input": "x", "note": "the pass-through mask tests x != 0, as for a ReLU-like op, not |x| > lambda"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x) * torch.clamp(x.abs() - LAMBDA, min=0)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return torch.where(x.abs() > 0, grad, torch.zeros_like(grad))  # BUG

    @staticmethod
    def example_inputs():
        return _shrink_inputs()


class LogSumExpPool(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.logsumexp(x, dim=1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad[:, None] * torch.exp(x - y[:, None])


class LogSumExpPoolSoftmaxOnly(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x", "note": "returns the softmax weights alone, as if grad_output were ones"}

    @staticmethod
    def forward(ctx, x):
        y = torch.logsumexp(x, dim=1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return torch.exp(x - y[:, None])  # BUG
