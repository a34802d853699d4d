"""Spiking neurons on gradcli's engine: a firing step with a fast-sigmoid surrogate, a gradient
reversal, leaky membrane integration with a per-channel decay, a sigmoid rate neuron and an
exponential synaptic trace along time."""
import gradcli as torch

THRESHOLD = 1.0


class WithheldSpikeFastSigmoid(torch.autograd.Function):
    """Heaviside firing s = [v > 1] with SuperSpike's surrogate 1 / (1 + 5|v - 1|)^2."""
    bug = {"kind": "smooth_surrogate", "input": "v",
           "note": "deliberate: the step's true derivative is zero, a fast-sigmoid surrogate replaces it"}

    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return (v > THRESHOLD).to(v.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (v,) = ctx.saved_tensors
        return grad_out / (1.0 + 5.0 * (v - THRESHOLD).abs()) ** 2  # BUG


class WithheldReverseGradient(torch.autograd.Function):
    """Identity forward, gradient multiplied by -0.7 (domain-adversarial training)."""
    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "deliberate: the identity's gradient is reversed and scaled by 0.7"}

    @staticmethod
    def forward(ctx, x):
        ctx.lam = 0.7
        return x.clone()

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.neg() * ctx.lam  # BUG


def _leak_inputs():
    v = torch.tensor([[0.3, -1.2, 0.8, 0.1], [1.5, 0.4, -0.6, 0.9], [-0.2, 0.7, 1.1, -1.4]],
                     dtype=torch.float64, requires_grad=True)
    x = torch.tensor([[1.0, 0.2, -0.5, 0.6], [-0.3, 1.3, 0.4, -0.8], [0.9, -1.1, 0.05, 0.35]],
                     dtype=torch.float64, requires_grad=True)
    beta = torch.tensor([0.9, 0.75, 0.6, 0.3], dtype=torch.float64, requires_grad=True)
    return v, x, beta


class WithheldLeakyIntegrate(torch.autograd.Function):
    """v_next = beta * v + (1 - beta) * x, a learnable decay beta [4] per channel."""
    bug = None

    @staticmethod
    def forward(ctx, v, x, beta):
        ctx.save_for_backward(v, x, beta)
        return beta * v + (1 - beta) * x

    @staticmethod
    def backward(ctx, grad_out):
        v, x, beta = ctx.saved_tensors
        grad_beta = (grad_out * (v - x)).sum(0)
        return grad_out * beta, grad_out * (1 - beta), grad_beta

    @staticmethod
    def example_inputs():
        return _leak_inputs()


class WithheldLeakyIntegrateDecaySum(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "beta",
           "note": "d/dbeta [beta v + (1 - beta) x] = v - x, written v + x"}

    @staticmethod
    def forward(ctx, v, x, beta):
        ctx.save_for_backward(v, x, beta)
        return beta * v + (1 - beta) * x

    @staticmethod
    def backward(ctx, grad_out):
        v, x, beta = ctx.saved_tensors
        grad_beta = (grad_out * (v + x)).sum(0)  # BUG
        return grad_out * beta, grad_out * (1 - beta), grad_beta

    @staticmethod
    def example_inputs():
        return _leak_inputs()


class WithheldLeakyIntegrateSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "v",
           "note": "the membrane and the input current get each other's gradient"}

    @staticmethod
    def forward(ctx, v, x, beta):
        ctx.save_for_backward(v, x, beta)
        return beta * v + (1 - beta) * x

    @staticmethod
    def backward(ctx, grad_out):
        v, x, beta = ctx.saved_tensors
        grad_beta = (grad_out * (v - x)).sum(0)
        grad_v, grad_x = grad_out * (1 - beta), grad_out * beta  # BUG
        return grad_v, grad_x, grad_beta

    @staticmethod
    def example_inputs():
        return _leak_inputs()


class WithheldSigmoidRate(torch.autograd.Function):
    """Firing rate r = sigmoid(4 (v - 0.5))."""
    bug = None

    @staticmethod
    def forward(ctx, v):
        rate = torch.sigmoid(4.0 * (v - 0.5))
        ctx.save_for_backward(rate)
        return rate

    @staticmethod
    def backward(ctx, grad_out):
        (rate,) = ctx.saved_tensors
        return grad_out * 4.0 * rate * (1 - rate)


class WithheldSigmoidRateFromMembrane(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "v",
           "note": "the sigmoid derivative r (1 - r) is evaluated on the saved membrane v, not on the rate"}

    @staticmethod
    def forward(ctx, v):
        rate = torch.sigmoid(4.0 * (v - 0.5))
        ctx.save_for_backward(v, rate)
        return rate

    @staticmethod
    def backward(ctx, grad_out):
        v, rate = ctx.saved_tensors
        return grad_out * 4.0 * v * (1 - v)  # BUG


def _trace_inputs():
    gen = torch.Generator().manual_seed(12)
    return (torch.randn(3, 5, dtype=torch.float64, generator=gen).requires_grad_(),)


class WithheldSynapticTrace(torch.autograd.Function):
    """trace[:, t] = 0.6 * trace[:, t - 1] + x[:, t], along dim 1 (time)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        columns, trace = [], torch.zeros_like(x[:, 0])
        for t in range(x.shape[1]):
            trace = 0.6 * trace + x[:, t]
            columns.append(trace)
        return torch.stack(columns, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        steps = grad_out.shape[1]
        columns, carry = [None] * steps, torch.zeros_like(grad_out[:, 0])
        for t in reversed(range(steps)):
            carry = 0.6 * carry + grad_out[:, t]
            columns[t] = carry
        return torch.stack(columns, dim=1)

    @staticmethod
    def example_inputs():
        return _trace_inputs()


class WithheldSynapticTraceForwardInTime(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the backward runs the causal recursion forward in time instead of reversed"}

    @staticmethod
    def forward(ctx, x):
        columns, trace = [], torch.zeros_like(x[:, 0])
        for t in range(x.shape[1]):
            trace = 0.6 * trace + x[:, t]
            columns.append(trace)
        return torch.stack(columns, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        steps = grad_out.shape[1]
        columns, carry = [None] * steps, torch.zeros_like(grad_out[:, 0])
        for t in range(steps):  # BUG
            carry = 0.6 * carry + grad_out[:, t]
            columns[t] = carry
        return torch.stack(columns, dim=1)

    @staticmethod
    def example_inputs():
        return _trace_inputs()
