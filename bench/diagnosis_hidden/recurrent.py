"""Recurrent steps with hand-written backwards: a minimal tanh RNN cell, a GRU-style gated update,
an LSTM cell step with two outputs (h, c) and a linear scan over time (bench/diagnosis_hidden)."""
import torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0):
    return torch.randn(*shape, dtype=torch.float64, generator=_gen(seed))


def _rnn_inputs():
    return _randn(3, 4, seed=60), _randn(3, 4, seed=61), 0.5 * _randn(4, 4, seed=62)


class HiddenRNNCell(torch.autograd.Function):
    """h' = tanh(x + h @ W)."""

    bug = None

    @staticmethod
    def forward(ctx, x, h, weight):
        h_new = torch.tanh(x + h @ weight)
        ctx.save_for_backward(h, weight, h_new)
        return h_new

    @staticmethod
    def backward(ctx, grad_out):
        h, weight, h_new = ctx.saved_tensors
        pre = grad_out * (1 - h_new ** 2)
        grad_x = grad_h = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = pre
        if ctx.needs_input_grad[1]:
            grad_h = pre @ weight.t()
        if ctx.needs_input_grad[2]:
            grad_w = h.t() @ pre
        return grad_x, grad_h, grad_w

    @staticmethod
    def example_inputs():
        return _rnn_inputs()


class HiddenRNNCellRecurrentGrad(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "h",
           "note": "the hidden state's gradient multiplies by W instead of W^T"}

    @staticmethod
    def forward(ctx, x, h, weight):
        h_new = torch.tanh(x + h @ weight)
        ctx.save_for_backward(h, weight, h_new)
        return h_new

    @staticmethod
    def backward(ctx, grad_out):
        h, weight, h_new = ctx.saved_tensors
        pre = grad_out * (1 - h_new ** 2)
        grad_x = grad_h = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = pre
        if ctx.needs_input_grad[1]:
            grad_h = pre @ weight  # BUG
        if ctx.needs_input_grad[2]:
            grad_w = h.t() @ pre
        return grad_x, grad_h, grad_w

    @staticmethod
    def example_inputs():
        return _rnn_inputs()


class HiddenGRUUpdate(torch.autograd.Function):
    """GRU-style update: z = sigmoid(a), n = tanh(b), h' = (1 - z) h + z n."""

    bug = None

    @staticmethod
    def forward(ctx, a, b, h):
        z = torch.sigmoid(a)
        n = torch.tanh(b)
        ctx.save_for_backward(z, n, h)
        return (1 - z) * h + z * n

    @staticmethod
    def backward(ctx, grad_out):
        z, n, h = ctx.saved_tensors
        grad_a = grad_out * (n - h) * z * (1 - z)
        grad_b = grad_out * z * (1 - n * n)
        return grad_a, grad_b, grad_out * (1 - z)


class HiddenGRUUpdateGateGrad(torch.autograd.Function):
    bug = {"kind": "sign", "input": "a",
           "note": "the update gate's gradient uses h - n, the derivative of the opposite blend"}

    @staticmethod
    def forward(ctx, a, b, h):
        z = torch.sigmoid(a)
        n = torch.tanh(b)
        ctx.save_for_backward(z, n, h)
        return (1 - z) * h + z * n

    @staticmethod
    def backward(ctx, grad_out):
        z, n, h = ctx.saved_tensors
        grad_a = grad_out * (h - n) * z * (1 - z)  # BUG
        grad_b = grad_out * z * (1 - n * n)
        return grad_a, grad_b, grad_out * (1 - z)


def _lstm_forward(ctx, gates, c_prev):
    i, f, g, o = gates.chunk(4, dim=1)
    i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
    c = f * c_prev + i * g
    tanh_c = torch.tanh(c)
    ctx.save_for_backward(i, f, g, o, c_prev, tanh_c)
    return o * tanh_c, c


def _lstm_gate_grads(i, f, g, o, c_prev, dc, do):
    return torch.cat([dc * g * i * (1 - i), dc * c_prev * f * (1 - f),
                      dc * i * (1 - g * g), do * o * (1 - o)], dim=1)


def _lstm_inputs():
    return _randn(3, 16, seed=63), _randn(3, 4, seed=64)


class HiddenLSTMCell(torch.autograd.Function):
    """One LSTM step from the 4 stacked gate pre-activations [N, 4H]; returns (h, c)."""

    bug = None

    @staticmethod
    def forward(ctx, gates, c_prev):
        return _lstm_forward(ctx, gates, c_prev)

    @staticmethod
    def backward(ctx, grad_h, grad_c):
        i, f, g, o, c_prev, tanh_c = ctx.saved_tensors
        dc = grad_c + grad_h * o * (1 - tanh_c * tanh_c)
        do = grad_h * tanh_c
        return _lstm_gate_grads(i, f, g, o, c_prev, dc, do), dc * f

    @staticmethod
    def example_inputs():
        return _lstm_inputs()


class HiddenLSTMCellStateGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "gates",
           "note": "the cell state's own incoming gradient grad_c is never added to dc"}

    @staticmethod
    def forward(ctx, gates, c_prev):
        return _lstm_forward(ctx, gates, c_prev)

    @staticmethod
    def backward(ctx, grad_h, grad_c):
        i, f, g, o, c_prev, tanh_c = ctx.saved_tensors
        dc = grad_h * o * (1 - tanh_c * tanh_c)  # BUG
        do = grad_h * tanh_c
        return _lstm_gate_grads(i, f, g, o, c_prev, dc, do), dc * f

    @staticmethod
    def example_inputs():
        return _lstm_inputs()


def _scan_inputs():
    x = _randn(5, 4, seed=65)
    decay = torch.rand(4, dtype=torch.float64, generator=_gen(66)) * 0.8 + 0.1
    return x, decay


def _scan_forward(ctx, x, decay):
    states = []
    h = torch.zeros_like(x[0])
    for t in range(x.shape[0]):
        h = decay * h + x[t]
        states.append(h)
    out = torch.stack(states)
    ctx.save_for_backward(decay, out)
    return out


class HiddenDecayScan(torch.autograd.Function):
    """h_t = decay * h_{t-1} + x_t over time (dim 0), per-feature decay [4]; returns every h_t."""

    bug = None

    @staticmethod
    def forward(ctx, x, decay):
        return _scan_forward(ctx, x, decay)

    @staticmethod
    def backward(ctx, grad_out):
        decay, out = ctx.saved_tensors
        steps = grad_out.shape[0]
        grad_x = torch.zeros_like(grad_out)
        grad_decay = torch.zeros_like(decay)
        carry = torch.zeros_like(decay)
        for t in reversed(range(steps)):
            carry = grad_out[t] + decay * carry
            grad_x[t] = carry
            if t > 0:
                grad_decay += carry * out[t - 1]
        return grad_x, grad_decay

    @staticmethod
    def example_inputs():
        return _scan_inputs()


class HiddenDecayScanForwardOrder(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the adjoint recurrence runs forward in time instead of reversed"}

    @staticmethod
    def forward(ctx, x, decay):
        return _scan_forward(ctx, x, decay)

    @staticmethod
    def backward(ctx, grad_out):
        decay, out = ctx.saved_tensors
        steps = grad_out.shape[0]
        grad_x = torch.zeros_like(grad_out)
        grad_decay = torch.zeros_like(decay)
        carry = torch.zeros_like(decay)
        for t in range(steps):  # BUG
            carry = grad_out[t] + decay * carry
            grad_x[t] = carry
            if t > 0:
                grad_decay += carry * out[t - 1]
        return grad_x, grad_decay

    @staticmethod
    def example_inputs():
        return _scan_inputs()


class HiddenDecayScanCurrentState(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "decay",
           "note": "the decay's gradient multiplies by the current state h_t instead of h_{t-1}"}

    @staticmethod
    def forward(ctx, x, decay):
        return _scan_forward(ctx, x, decay)

    @staticmethod
    def backward(ctx, grad_out):
        decay, out = ctx.saved_tensors
        steps = grad_out.shape[0]
        grad_x = torch.zeros_like(grad_out)
        grad_decay = torch.zeros_like(decay)
        carry = torch.zeros_like(decay)
        for t in reversed(range(steps)):
            carry = grad_out[t] + decay * carry
            grad_x[t] = carry
            if t > 0:
                grad_decay += carry * out[t]  # BUG
        return grad_x, grad_decay

    @staticmethod
    def example_inputs():
        return _scan_inputs()
