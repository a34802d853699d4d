"""Scans along the time dim (dim 1) on gradcli's engine: exclusive cumsum, reverse (suffix) cumsum,
cumprod, a stable logcumsumexp, an exponential moving average (a first-order IIR filter written
as a loop) and a running mean.

BLIND corpus: see README.md. Never tune gradcli's diagnosis on these Functions.
"""
import gradcli as torch


def _reverse_cumsum(t):
    return t.flip(1).cumsum(1).flip(1)


def _sequences():
    torch.manual_seed(101)
    return (torch.randn(3, 5, dtype=torch.float64),)


def _positive_sequences():
    torch.manual_seed(102)
    return (0.5 + torch.rand(3, 5, dtype=torch.float64),)


class ExclusiveCumsum(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return x.cumsum(1) - x

    @staticmethod
    def backward(ctx, grad_out):
        return _reverse_cumsum(grad_out) - grad_out

    @staticmethod
    def example_inputs():
        return _sequences()


class ExclusiveCumsumNoFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "backward runs the cumsum forwards; it must run backwards (flip, cumsum, flip)"}

    @staticmethod
    def forward(ctx, x):
        return x.cumsum(1) - x

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.cumsum(1) - grad_out  # BUG -- _reverse_cumsum(grad_out) - grad_out

    @staticmethod
    def example_inputs():
        return _sequences()


class SuffixSum(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _reverse_cumsum(x)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.cumsum(1)

    @staticmethod
    def example_inputs():
        return _sequences()


class SuffixSumBackwardCopiesForward(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "backward repeats forward's flips: a suffix sum's gradient is a prefix sum, "
                   "so the scan runs the wrong way"}

    @staticmethod
    def forward(ctx, x):
        return _reverse_cumsum(x)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.flip(1).cumsum(1).flip(1)  # BUG -- grad_out.cumsum(1)

    @staticmethod
    def example_inputs():
        return _sequences()


class Cumprod(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = x.cumprod(1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return _reverse_cumsum(grad_out * y) / x

    @staticmethod
    def example_inputs():
        return _positive_sequences()


class CumprodDividesByOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the suffix sum of grad * y is divided by the output y instead of the input x"}

    @staticmethod
    def forward(ctx, x):
        y = x.cumprod(1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return _reverse_cumsum(grad_out * y) / y  # BUG -- / x

    @staticmethod
    def example_inputs():
        return _positive_sequences()


def _logcumsumexp(ctx, x):
    shift = x.max()
    y = torch.log(torch.exp(x - shift).cumsum(1)) + shift
    ctx.save_for_backward(x, y)
    return y


class LogCumSumExp(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _logcumsumexp(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return torch.exp(x) * _reverse_cumsum(grad_out * torch.exp(-y))

    @staticmethod
    def example_inputs():
        return _sequences()


class LogCumSumExpScanOverBatch(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "backward's reverse scan runs over dim 0 (the batch), forward's over dim 1"}

    @staticmethod
    def forward(ctx, x):
        return _logcumsumexp(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        w = grad_out * torch.exp(-y)
        return torch.exp(x) * w.flip(0).cumsum(0).flip(0)  # BUG -- dim 1

    @staticmethod
    def example_inputs():
        return _sequences()


def _ema_inputs():
    torch.manual_seed(103)
    return torch.randn(3, 5, dtype=torch.float64), 0.7


def _ema(ctx, x, decay):
    ctx.decay = decay
    state = (1 - decay) * x[:, 0]
    out = [state]
    for t in range(1, x.shape[1]):
        state = decay * state + (1 - decay) * x[:, t]
        out.append(state)
    return torch.stack(out, dim=1)


class ExponentialMovingAverage(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, decay):
        return _ema(ctx, x, decay)

    @staticmethod
    def backward(ctx, grad_out):
        decay = ctx.decay
        carry = torch.zeros_like(grad_out[:, 0])
        grads = []
        for t in reversed(range(grad_out.shape[1])):
            carry = grad_out[:, t] + decay * carry
            grads.append((1 - decay) * carry)
        return torch.stack(grads[::-1], dim=1), None

    @staticmethod
    def example_inputs():
        return _ema_inputs()


class ExponentialMovingAverageForwardInTime(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the adjoint recursion runs forwards in time; it must start at the last step"}

    @staticmethod
    def forward(ctx, x, decay):
        return _ema(ctx, x, decay)

    @staticmethod
    def backward(ctx, grad_out):
        decay = ctx.decay
        carry = torch.zeros_like(grad_out[:, 0])
        grads = []
        for t in range(grad_out.shape[1]):  # BUG -- reversed(range(...)), then grads[::-1]
            carry = grad_out[:, t] + decay * carry
            grads.append((1 - decay) * carry)
        return torch.stack(grads, dim=1), None

    @staticmethod
    def example_inputs():
        return _ema_inputs()


def _counts(x):
    return torch.arange(1, x.shape[1] + 1, dtype=x.dtype)


class RunningMean(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return x.cumsum(1) / _counts(x)

    @staticmethod
    def backward(ctx, grad_out):
        return _reverse_cumsum(grad_out / _counts(grad_out))

    @staticmethod
    def example_inputs():
        return _sequences()


class RunningMeanDividesAfterScan(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "divides by the counts after the reverse scan instead of before it: a wrong "
                   "formula"}

    @staticmethod
    def forward(ctx, x):
        return x.cumsum(1) / _counts(x)

    @staticmethod
    def backward(ctx, grad_out):
        return _reverse_cumsum(grad_out) / _counts(grad_out)  # BUG

    @staticmethod
    def example_inputs():
        return _sequences()
