"""Cumulative ops: cumsum, reverse cumsum, cumprod, torch-style on gradcli's engine.
``bug = None`` marks a correct twin.
"""
import gradcli as torch


def _reverse_cumsum(t, dim):
    return t.flip(dim).cumsum(dim).flip(dim)


def _away_from_zero():
    # cumprod's backward divides by x: keep |x| in [0.5, 1.5] with both signs
    magnitude = torch.rand(3, 4) + 0.5
    sign = torch.tensor([[1.0, -1.0, 1.0, 1.0], [-1.0, 1.0, 1.0, -1.0], [1.0, 1.0, -1.0, 1.0]])
    return ((magnitude * sign).requires_grad_(),)


class Cumsum(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return x.cumsum(-1)

    @staticmethod
    def backward(ctx, grad_output):
        return _reverse_cumsum(grad_output, -1)


class CumsumMissingFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "backward is cumsum(g); the reverse cumsum flip(cumsum(flip(g))) is needed"}

    @staticmethod
    def forward(ctx, x):
        return x.cumsum(-1)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.cumsum(-1)  # BUG


class ReverseCumsumFlipped(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "forward is a reverse cumsum, whose backward is a plain cumsum; backward "
                   "copies the forward's flips"}

    @staticmethod
    def forward(ctx, x):
        return _reverse_cumsum(x, 1)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.flip(1).cumsum(1).flip(1)  # BUG


class CumsumWrongAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the reverse cumsum runs along dim 0; forward's cumsum is along dim 1"}

    @staticmethod
    def forward(ctx, x):
        return torch.cumsum(x, dim=1)

    @staticmethod
    def backward(ctx, grad_output):
        return _reverse_cumsum(grad_output, 0)  # BUG


class Cumprod(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, dim=-1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return _reverse_cumsum(grad_output * y, -1) / x

    @staticmethod
    def example_inputs():
        return _away_from_zero()


class CumprodMissingFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "sums g * y forwards (cumsum) where the sum over later positions is needed"}

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, dim=-1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return (grad_output * y).cumsum(-1) / x  # BUG

    @staticmethod
    def example_inputs():
        return _away_from_zero()


class CumprodUsesInput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "multiplies g by the input x where the running product y is needed"}

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, dim=-1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return _reverse_cumsum(grad_output * x, -1) / x  # BUG

    @staticmethod
    def example_inputs():
        return _away_from_zero()
