"""logcumsumexp along the last dim with a hand-written backward (plain torch).

Blind corpus: see README.md.
"""
import torch


def _inputs():
    gen = torch.Generator().manual_seed(62)
    return (torch.randn(3, 5, generator=gen, dtype=torch.float64),)


def _suffix_sum(t):
    return t.flip(-1).cumsum(-1).flip(-1)


class LogCumSumExp(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.logcumsumexp(x, dim=-1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        # d y_i / d x_j = exp(x_j - y_i) for j <= i
        return torch.exp(x) * _suffix_sum(grad_out * torch.exp(-y))

    @staticmethod
    def example_inputs():
        return _inputs()


class LogCumSumExpPrefixInBackward(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "sums grad_out * exp(-y) as a prefix cumsum; input j feeds outputs i >= j, "
                   "so it must be a suffix sum"}

    @staticmethod
    def forward(ctx, x):
        y = torch.logcumsumexp(x, dim=-1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return torch.exp(x) * (grad_out * torch.exp(-y)).cumsum(-1)  # BUG

    @staticmethod
    def example_inputs():
        return _inputs()


class LogCumSumExpInputForOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "exp(-x) is used inside the suffix sum where exp(-y) (the saved output) belongs"}

    @staticmethod
    def forward(ctx, x):
        y = torch.logcumsumexp(x, dim=-1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return torch.exp(x) * _suffix_sum(grad_out * torch.exp(-x))  # BUG

    @staticmethod
    def example_inputs():
        return _inputs()
