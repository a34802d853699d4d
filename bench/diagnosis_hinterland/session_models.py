"""Sequential / session-based recommendation: a user-interest state decaying over the session
(h_t = a * h_{t-1} + x_t, by a Python loop over time), a running total of engagement scaled by a
per-session weight (cumsum), and a causal 1-D convolution over the behaviour sequence."""
import torch
import torch.nn.functional as F


# ------------------------------------------------------------------ decaying interest state
def _decay_inputs():
    gen = torch.Generator().manual_seed(7701)
    x = torch.randn(2, 5, dtype=torch.float64, generator=gen)
    a = torch.tensor([0.7], dtype=torch.float64)
    return x, a


def _decay_forward(ctx, x, a):
    B, T = x.shape
    h = torch.zeros(B, dtype=x.dtype)
    states = []
    for t in range(T):
        h = a * h + x[:, t]
        states.append(h)
    H = torch.stack(states, dim=1)
    ctx.save_for_backward(H, a)
    return H


class HinterlandInterestDecay(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, a):
        return _decay_forward(ctx, x, a)

    @staticmethod
    def backward(ctx, grad_out):
        H, a = ctx.saved_tensors
        B, T = H.shape
        grad_x = torch.zeros_like(H)
        grad_a = torch.zeros_like(a)
        carry = torch.zeros(B, dtype=H.dtype)
        for t in reversed(range(T)):
            carry = grad_out[:, t] + a * carry
            grad_x[:, t] = carry
            if t > 0:
                grad_a = grad_a + (carry * H[:, t - 1]).sum()
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _decay_inputs()


class HinterlandInterestDecayForwardSweep(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the adjoint recurrence runs forward in time instead of reversed, so each step collects the past instead of the future"}

    @staticmethod
    def forward(ctx, x, a):
        return _decay_forward(ctx, x, a)

    @staticmethod
    def backward(ctx, grad_out):
        H, a = ctx.saved_tensors
        B, T = H.shape
        grad_x = torch.zeros_like(H)
        grad_a = torch.zeros_like(a)
        carry = torch.zeros(B, dtype=H.dtype)
        for t in range(T):  # BUG
            carry = grad_out[:, t] + a * carry
            grad_x[:, t] = carry
            if t > 0:
                grad_a = grad_a + (carry * H[:, t - 1]).sum()
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _decay_inputs()


class HinterlandInterestDecayNoCarry(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the adjoint drops the carried term a * carry, keeping only the step's own grad_output"}

    @staticmethod
    def forward(ctx, x, a):
        return _decay_forward(ctx, x, a)

    @staticmethod
    def backward(ctx, grad_out):
        H, a = ctx.saved_tensors
        B, T = H.shape
        grad_x = torch.zeros_like(H)
        grad_a = torch.zeros_like(a)
        for t in reversed(range(T)):
            carry = grad_out[:, t]  # BUG
            grad_x[:, t] = carry
            if t > 0:
                grad_a = grad_a + (carry * H[:, t - 1]).sum()
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _decay_inputs()


class HinterlandInterestDecayCurrentState(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "a",
           "note": "the decay's gradient pairs the adjoint with the current state H[:, t] instead of the previous one H[:, t - 1]"}

    @staticmethod
    def forward(ctx, x, a):
        return _decay_forward(ctx, x, a)

    @staticmethod
    def backward(ctx, grad_out):
        H, a = ctx.saved_tensors
        B, T = H.shape
        grad_x = torch.zeros_like(H)
        grad_a = torch.zeros_like(a)
        carry = torch.zeros(B, dtype=H.dtype)
        for t in reversed(range(T)):
            carry = grad_out[:, t] + a * carry
            grad_x[:, t] = carry
            if t > 0:
                grad_a = grad_a + (carry * H[:, t]).sum()  # BUG
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _decay_inputs()


# ------------------------------------------------------------- running engagement total
def _running_inputs():
    gen = torch.Generator().manual_seed(7702)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    s = torch.rand(3, dtype=torch.float64, generator=gen) + 0.5
    return x, s


class HinterlandRunningEngagement(torch.autograd.Function):
    """y[b, t] = s[b] * sum_{u <= t} x[b, u]."""

    bug = None

    @staticmethod
    def forward(ctx, x, s):
        total = torch.cumsum(x, dim=1)
        ctx.save_for_backward(total, s)
        return total * s[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        total, s = ctx.saved_tensors
        g = grad_out * s[:, None]
        grad_x = g.flip(1).cumsum(1).flip(1)
        return grad_x, (grad_out * total).sum(1)

    @staticmethod
    def example_inputs():
        return _running_inputs()


class HinterlandRunningEngagementNoFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the cumsum's adjoint is taken as a plain cumsum, without flipping to a reverse cumulative sum"}

    @staticmethod
    def forward(ctx, x, s):
        total = torch.cumsum(x, dim=1)
        ctx.save_for_backward(total, s)
        return total * s[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        total, s = ctx.saved_tensors
        g = grad_out * s[:, None]
        grad_x = g.cumsum(1)  # BUG
        return grad_x, (grad_out * total).sum(1)

    @staticmethod
    def example_inputs():
        return _running_inputs()


class HinterlandRunningEngagementWeightUnsummed(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "s",
           "note": "the per-session weight's gradient is returned per time step (B, T), not summed over time"}

    @staticmethod
    def forward(ctx, x, s):
        total = torch.cumsum(x, dim=1)
        ctx.save_for_backward(total, s)
        return total * s[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        total, s = ctx.saved_tensors
        g = grad_out * s[:, None]
        grad_x = g.flip(1).cumsum(1).flip(1)
        grad_s = grad_out * total  # BUG
        return grad_x, grad_s

    @staticmethod
    def example_inputs():
        return _running_inputs()


# ------------------------------------------------------ causal conv over the behaviour sequence
def _conv_inputs():
    gen = torch.Generator().manual_seed(7703)
    x = torch.randn(2, 2, 6, dtype=torch.float64, generator=gen)  # (B, C, T)
    w = torch.randn(2, 2, 3, dtype=torch.float64, generator=gen)  # (C_out, C, K)
    return x, w


def _conv_forward(ctx, x, w):
    K = w.shape[-1]
    x_padded = F.pad(x, (K - 1, 0))
    ctx.save_for_backward(x_padded, w)
    return F.conv1d(x_padded, w)


class HinterlandCausalBehaviourConv(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        return _conv_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        x_padded, w = ctx.saved_tensors
        K = w.shape[-1]
        grad_x = F.conv1d(F.pad(grad_out, (0, K - 1)), w.flip(-1).transpose(0, 1))
        grad_w = torch.einsum("bot,bctk->ock", grad_out, x_padded.unfold(2, K, 1))
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _conv_inputs()


class HinterlandCausalBehaviourConvUnflipped(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the input gradient correlates with the kernel as is; the adjoint of a correlation needs it flipped in time"}

    @staticmethod
    def forward(ctx, x, w):
        return _conv_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        x_padded, w = ctx.saved_tensors
        K = w.shape[-1]
        grad_x = F.conv1d(F.pad(grad_out, (0, K - 1)), w.transpose(0, 1))  # BUG
        grad_w = torch.einsum("bot,bctk->ock", grad_out, x_padded.unfold(2, K, 1))
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _conv_inputs()


class HinterlandCausalBehaviourConvChannels(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "the flipped kernel is used as (C_out, C, K) without swapping its channel axes for the adjoint"}

    @staticmethod
    def forward(ctx, x, w):
        return _conv_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        x_padded, w = ctx.saved_tensors
        K = w.shape[-1]
        grad_x = F.conv1d(F.pad(grad_out, (0, K - 1)), w.flip(-1))  # BUG
        grad_w = torch.einsum("bot,bctk->ock", grad_out, x_padded.unfold(2, K, 1))
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _conv_inputs()
