"""Cumulative ops on gradcli's engine: cumsum, reverse cumsum over dim 0, cumprod, logcumsumexp."""
import gradcli as torch


def _positive():
    g = torch.Generator().manual_seed(80)
    return (torch.rand(3, 4, dtype=torch.float64, generator=g) + 0.5,)


def _reverse_cumsum(t, dim):
    return t.flip(dim).cumsum(dim).flip(dim)


class SealedRowCumsum(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return x.cumsum(1)

    @staticmethod
    def backward(ctx, grad):
        return _reverse_cumsum(grad, 1)


class SealedRowCumsumForwardScan(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "backward runs a forward cumsum of grad instead of a reversed one"}

    @staticmethod
    def forward(ctx, x):
        return x.cumsum(1)

    @staticmethod
    def backward(ctx, grad):
        return grad.cumsum(1)  # BUG


class SealedSuffixSumDim0(torch.autograd.Function):
    """y[i] = sum_{k >= i} x[k] down dim 0."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _reverse_cumsum(x, 0)

    @staticmethod
    def backward(ctx, grad):
        return grad.cumsum(0)

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(81)
        return (torch.randn(4, 4, dtype=torch.float64, generator=g),)


class SealedSuffixSumDim0AlongRows(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the backward's prefix sum runs along dim 1 instead of dim 0"}

    @staticmethod
    def forward(ctx, x):
        return _reverse_cumsum(x, 0)

    @staticmethod
    def backward(ctx, grad):
        return grad.cumsum(1)  # BUG

    @staticmethod
    def example_inputs():
        return SealedSuffixSumDim0.example_inputs()


class SealedRowCumprod(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = x.cumprod(1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return _reverse_cumsum(grad * y, 1) / x

    @staticmethod
    def example_inputs():
        return _positive()


class SealedRowCumprodDividesByOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the suffix sum is divided by the output y instead of the input x"}

    @staticmethod
    def forward(ctx, x):
        y = x.cumprod(1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return _reverse_cumsum(grad * y, 1) / y  # BUG

    @staticmethod
    def example_inputs():
        return _positive()


class SealedRowCumprodAsCumsum(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "backward of a cumsum (reversed cumsum of grad) used for the cumprod"}

    @staticmethod
    def forward(ctx, x):
        y = x.cumprod(1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        return _reverse_cumsum(grad, 1)  # BUG

    @staticmethod
    def example_inputs():
        return _positive()


class SealedLogCumSumExp(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        m = x.amax(1, keepdim=True)
        y = (x - m).exp().cumsum(1).log() + m
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        dx = None
        if ctx.needs_input_grad[0]:
            dx = _reverse_cumsum(grad * (-y).exp(), 1) * x.exp()
        return dx


class SealedLogCumSumExpGuardIndex(torch.autograd.Function):
    bug = {"kind": "zero", "input": "x",
           "note": "dx.add(...) (not add_) discards the sum, so the zeros it started from are returned"}

    @staticmethod
    def forward(ctx, x):
        m = x.amax(1, keepdim=True)
        y = (x - m).exp().cumsum(1).log() + m
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        dx = torch.zeros_like(x)
        if ctx.needs_input_grad[0]:
            dx.add(_reverse_cumsum(grad * (-y).exp(), 1) * x.exp())  # BUG
        return dx
