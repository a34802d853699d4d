"""Diagonal linear state-space scans and an exponential moving average, by Python loops over time.

h_t = a * h_{t-1} + b * x_t (learned a, b per channel) and y_t = d * y_{t-1} + (1 - d) * x_t
(learned decay d per channel); x is (T, D), every state starts at zero.
"""
import torch


def _scan_inputs():
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    a = 0.5 + 0.4 * torch.rand(3, generator=gen, dtype=torch.float64)
    b = torch.randn(3, generator=gen, dtype=torch.float64)
    return x, a, b


def _scan(x, a, b):
    h = torch.zeros_like(a)
    states = []
    for t in range(x.shape[0]):
        h = a * h + b * x[t]
        states.append(h)
    return torch.stack(states)


def _shift(h):
    """The previous state at each step: h_{t-1}, zero at t = 0."""
    return torch.cat([torch.zeros_like(h[:1]), h[:-1]])


class ElsewhereDiagScan(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, a, b):
        h = _scan(x, a, b)
        ctx.save_for_backward(x, a, b, h)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        x, a, b, h = ctx.saved_tensors
        h_prev = _shift(h)
        grad_x = torch.zeros_like(x)
        grad_a = torch.zeros_like(a)
        grad_b = torch.zeros_like(b)
        carry = torch.zeros_like(a)
        for t in reversed(range(x.shape[0])):
            carry = grad_h[t] + a * carry
            grad_x[t] = b * carry
            grad_a += carry * h_prev[t]
            grad_b += carry * x[t]
        return grad_x, grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _scan_inputs()


class ElsewhereDiagScanNoCarry(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the adjoint state drops the carried a * carry term, so each step sees only its own output's gradient"}

    @staticmethod
    def forward(ctx, x, a, b):
        h = _scan(x, a, b)
        ctx.save_for_backward(x, a, b, h)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        x, a, b, h = ctx.saved_tensors
        h_prev = _shift(h)
        grad_x = torch.zeros_like(x)
        grad_a = torch.zeros_like(a)
        grad_b = torch.zeros_like(b)
        for t in reversed(range(x.shape[0])):
            carry = grad_h[t]  # BUG
            grad_x[t] = b * carry
            grad_a += carry * h_prev[t]
            grad_b += carry * x[t]
        return grad_x, grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _scan_inputs()


class ElsewhereDiagScanStaleState(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "a",
           "note": "the decay's gradient multiplies by the state h_t instead of the previous state h_{t-1}"}

    @staticmethod
    def forward(ctx, x, a, b):
        h = _scan(x, a, b)
        ctx.save_for_backward(x, a, b, h)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        x, a, b, h = ctx.saved_tensors
        grad_x = torch.zeros_like(x)
        grad_a = torch.zeros_like(a)
        grad_b = torch.zeros_like(b)
        carry = torch.zeros_like(a)
        for t in reversed(range(x.shape[0])):
            carry = grad_h[t] + a * carry
            grad_x[t] = b * carry
            grad_a += carry * h[t]  # BUG
            grad_b += carry * x[t]
        return grad_x, grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _scan_inputs()


class ElsewhereDiagScanForwardLoop(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the adjoint scan runs forward in time (causal) instead of backward from the last step"}

    @staticmethod
    def forward(ctx, x, a, b):
        h = _scan(x, a, b)
        ctx.save_for_backward(x, a, b, h)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        x, a, b, h = ctx.saved_tensors
        h_prev = _shift(h)
        grad_x = torch.zeros_like(x)
        grad_a = torch.zeros_like(a)
        grad_b = torch.zeros_like(b)
        carry = torch.zeros_like(a)
        for t in range(x.shape[0]):  # BUG
            carry = grad_h[t] + a * carry
            grad_x[t] = b * carry
            grad_a += carry * h_prev[t]
            grad_b += carry * x[t]
        return grad_x, grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _scan_inputs()


class ElsewhereDiagScanAliasedState(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "a",
           "note": "the state is updated in place, so every saved previous state is the same final buffer"}

    @staticmethod
    def forward(ctx, x, a, b):
        h = torch.zeros_like(a)
        previous, outputs = [], []
        for t in range(x.shape[0]):
            previous.append(h)
            h.mul_(a).add_(b * x[t])  # BUG
            outputs.append(h.clone())
        ctx.previous = previous
        ctx.save_for_backward(x, a, b)
        return torch.stack(outputs)

    @staticmethod
    def backward(ctx, grad_h):
        x, a, b = ctx.saved_tensors
        h_prev = torch.stack(ctx.previous)
        grad_x = torch.zeros_like(x)
        grad_a = torch.zeros_like(a)
        grad_b = torch.zeros_like(b)
        carry = torch.zeros_like(a)
        for t in reversed(range(x.shape[0])):
            carry = grad_h[t] + a * carry
            grad_x[t] = b * carry
            grad_a += carry * h_prev[t]
            grad_b += carry * x[t]
        return grad_x, grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _scan_inputs()


class ElsewhereDiagScanSwapAB(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "a",
           "note": "the decay's and the input gain's gradients are returned in each other's places"}

    @staticmethod
    def forward(ctx, x, a, b):
        h = _scan(x, a, b)
        ctx.save_for_backward(x, a, b, h)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        x, a, b, h = ctx.saved_tensors
        h_prev = _shift(h)
        grad_x = torch.zeros_like(x)
        grad_a = torch.zeros_like(a)
        grad_b = torch.zeros_like(b)
        carry = torch.zeros_like(a)
        for t in reversed(range(x.shape[0])):
            carry = grad_h[t] + a * carry
            grad_x[t] = b * carry
            grad_a += carry * h_prev[t]
            grad_b += carry * x[t]
        return grad_x, grad_b, grad_a  # BUG

    @staticmethod
    def example_inputs():
        return _scan_inputs()


# ------------------------------------------------------------------ EMA with a learned decay
def _ema_inputs():
    gen = torch.Generator().manual_seed(12)
    x = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    decay = 0.6 + 0.3 * torch.rand(3, generator=gen, dtype=torch.float64)
    return x, decay


def _ema(x, decay):
    y = torch.zeros_like(decay)
    out = []
    for t in range(x.shape[0]):
        y = decay * y + (1 - decay) * x[t]
        out.append(y)
    return torch.stack(out)


class ElsewhereEMA(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, decay):
        y = _ema(x, decay)
        ctx.save_for_backward(x, decay, y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, decay, y = ctx.saved_tensors
        y_prev = _shift(y)
        grad_x = torch.zeros_like(x)
        grad_decay = torch.zeros_like(decay)
        carry = torch.zeros_like(decay)
        for t in reversed(range(x.shape[0])):
            carry = grad_y[t] + decay * carry
            grad_x[t] = (1 - decay) * carry
            grad_decay = grad_decay + carry * (y_prev[t] - x[t])
        return grad_x, grad_decay

    @staticmethod
    def example_inputs():
        return _ema_inputs()


class ElsewhereEMADropInputTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "decay",
           "note": "d/d decay of decay*y_prev + (1-decay)*x_t keeps y_prev but drops the -x_t term"}

    @staticmethod
    def forward(ctx, x, decay):
        y = _ema(x, decay)
        ctx.save_for_backward(x, decay, y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, decay, y = ctx.saved_tensors
        y_prev = _shift(y)
        grad_x = torch.zeros_like(x)
        grad_decay = torch.zeros_like(decay)
        carry = torch.zeros_like(decay)
        for t in reversed(range(x.shape[0])):
            carry = grad_y[t] + decay * carry
            grad_x[t] = (1 - decay) * carry
            grad_decay = grad_decay + carry * y_prev[t]  # BUG
        return grad_x, grad_decay

    @staticmethod
    def example_inputs():
        return _ema_inputs()


class ElsewhereEMADecayTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "decay",
           "note": "the derivative of (1 - decay) * x_t is taken as +x_t instead of -x_t"}

    @staticmethod
    def forward(ctx, x, decay):
        y = _ema(x, decay)
        ctx.save_for_backward(x, decay, y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, decay, y = ctx.saved_tensors
        y_prev = _shift(y)
        grad_x = torch.zeros_like(x)
        grad_decay = torch.zeros_like(decay)
        carry = torch.zeros_like(decay)
        for t in reversed(range(x.shape[0])):
            carry = grad_y[t] + decay * carry
            grad_x[t] = (1 - decay) * carry
            grad_decay = grad_decay + carry * (y_prev[t] + x[t])  # BUG
        return grad_x, grad_decay

    @staticmethod
    def example_inputs():
        return _ema_inputs()


class ElsewhereEMAAddNotInPlace(torch.autograd.Function):
    bug = {"kind": "zero", "input": "decay",
           "note": "the decay's gradient is accumulated with out-of-place .add whose result is discarded, so it stays zero"}

    @staticmethod
    def forward(ctx, x, decay):
        y = _ema(x, decay)
        ctx.save_for_backward(x, decay, y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, decay, y = ctx.saved_tensors
        y_prev = _shift(y)
        grad_x = torch.zeros_like(x)
        grad_decay = torch.zeros_like(decay)
        carry = torch.zeros_like(decay)
        for t in reversed(range(x.shape[0])):
            carry = grad_y[t] + decay * carry
            grad_x[t] = (1 - decay) * carry
            grad_decay.add(carry * (y_prev[t] - x[t]))  # BUG
        return grad_x, grad_decay

    @staticmethod
    def example_inputs():
        return _ema_inputs()
