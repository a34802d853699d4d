"""Recurrent cell steps on gradcli's engine: a tanh RNN step, an LSTM cell update with two outputs,
a GRU interpolation."""
import gradcli as torch


def _rnn_inputs():
    gen = torch.Generator().manual_seed(41)
    x = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    h = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    w = torch.randn(4, 4, generator=gen, dtype=torch.float64) * 0.5
    return x.requires_grad_(), h.requires_grad_(), w.requires_grad_()


class TanhRNNStep(torch.autograd.Function):
    """h' = tanh(x + h @ w)."""
    bug = None

    @staticmethod
    def forward(ctx, x, h, w):
        y = torch.tanh(x + h @ w)
        ctx.save_for_backward(h, w, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        h, w, y = ctx.saved_tensors
        d = grad * (1 - y * y)
        return d, d @ w.T, h.T @ d

    @staticmethod
    def example_inputs():
        return _rnn_inputs()


class TanhRNNStepHiddenNotTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "h", "note": "h's gradient multiplies by w instead of w^T"}

    @staticmethod
    def forward(ctx, x, h, w):
        y = torch.tanh(x + h @ w)
        ctx.save_for_backward(h, w, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        h, w, y = ctx.saved_tensors
        d = grad * (1 - y * y)
        return d, d @ w, h.T @ d  # BUG

    @staticmethod
    def example_inputs():
        return _rnn_inputs()


class TanhRNNStepWeightSkipsTanh(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "w", "note": "the weight gradient uses grad_output where the pre-activation gradient d is needed"}

    @staticmethod
    def forward(ctx, x, h, w):
        y = torch.tanh(x + h @ w)
        ctx.save_for_backward(h, w, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        h, w, y = ctx.saved_tensors
        d = grad * (1 - y * y)
        return d, d @ w.T, h.T @ grad  # BUG

    @staticmethod
    def example_inputs():
        return _rnn_inputs()


class TanhRNNStepSigmoidDerivative(torch.autograd.Function):
    bug = {"kind": "none", "input": "x", "note": "tanh's derivative written as the sigmoid form y * (1 - y)"}

    @staticmethod
    def forward(ctx, x, h, w):
        y = torch.tanh(x + h @ w)
        ctx.save_for_backward(h, w, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        h, w, y = ctx.saved_tensors
        d = grad * y * (1 - y)  # BUG
        return d, d @ w.T, h.T @ d

    @staticmethod
    def example_inputs():
        return _rnn_inputs()


class LSTMCellUpdate(torch.autograd.Function):
    """c' = f*c + i*u ; h = o*tanh(c'); returns (h, c')."""
    bug = None

    @staticmethod
    def forward(ctx, f, i, u, o, c):
        c2 = f * c + i * u
        t = torch.tanh(c2)
        ctx.save_for_backward(f, i, u, o, c, t)
        return o * t, c2

    @staticmethod
    def backward(ctx, grad_h, grad_c):
        f, i, u, o, c, t = ctx.saved_tensors
        dc = grad_c + grad_h * o * (1 - t * t)
        return dc * c, dc * u, dc * i, grad_h * t, dc * f


class LSTMCellUpdateHiddenPathDropped(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "f", "note": "the cell's gradient takes only grad_c, not the path through h"}

    @staticmethod
    def forward(ctx, f, i, u, o, c):
        c2 = f * c + i * u
        t = torch.tanh(c2)
        ctx.save_for_backward(f, i, u, o, c, t)
        return o * t, c2

    @staticmethod
    def backward(ctx, grad_h, grad_c):
        f, i, u, o, c, t = ctx.saved_tensors
        dc = grad_c  # BUG
        return dc * c, dc * u, dc * i, grad_h * t, dc * f


class LSTMCellUpdateGatesSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "i", "note": "the input gate and candidate gradients are returned in each other's place"}

    @staticmethod
    def forward(ctx, f, i, u, o, c):
        c2 = f * c + i * u
        t = torch.tanh(c2)
        ctx.save_for_backward(f, i, u, o, c, t)
        return o * t, c2

    @staticmethod
    def backward(ctx, grad_h, grad_c):
        f, i, u, o, c, t = ctx.saved_tensors
        dc = grad_c + grad_h * o * (1 - t * t)
        return dc * c, dc * i, dc * u, grad_h * t, dc * f  # BUG


class GRUInterpolate(torch.autograd.Function):
    """h' = (1 - z) * h + z * n."""
    bug = None

    @staticmethod
    def forward(ctx, z, h, n):
        ctx.save_for_backward(z, h, n)
        return (1 - z) * h + z * n

    @staticmethod
    def backward(ctx, grad):
        z, h, n = ctx.saved_tensors
        return grad * (n - h), grad * (1 - z), grad * z


class GRUInterpolateGateTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "z", "note": "d/dz of -z*h written +h"}

    @staticmethod
    def forward(ctx, z, h, n):
        ctx.save_for_backward(z, h, n)
        return (1 - z) * h + z * n

    @staticmethod
    def backward(ctx, grad):
        z, h, n = ctx.saved_tensors
        return grad * (n + h), grad * (1 - z), grad * z  # BUG
