import gradcli as torch

"""On gradcli's engine: a leaky integrator v_t = v_{t-1} + (x_t - v_{t-1}) / tau with a learned
per-channel time constant tau, by Python loops over time, and a spiking threshold with a smooth
surrogate gradient."""


def _integrator_inputs():
    gen = torch.Generator().manual_seed(91)
    x = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    tau = 1.5 + 2.5 * torch.rand(3, generator=gen, dtype=torch.float64)
    return x, tau


def _integrate(x, tau):
    v = torch.zeros_like(tau)
    states = []
    for t in range(x.shape[0]):
        v = v + (x[t] - v) / tau
        states.append(v)
    return torch.stack(states)


def _previous(v):
    return torch.cat([torch.zeros_like(v[:1]), v[:-1]])


class ElsewhereLeakyIntegrator(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, tau):
        v = _integrate(x, tau)
        ctx.save_for_backward(x, tau, v)
        return v

    @staticmethod
    def backward(ctx, grad_v):
        x, tau, v = ctx.saved_tensors
        v_prev = _previous(v)
        grad_x = []
        grad_tau = torch.zeros_like(tau)
        carry = torch.zeros_like(tau)
        for t in reversed(range(x.shape[0])):
            dv = grad_v[t] + carry
            grad_x.append(dv / tau)
            grad_tau = grad_tau - dv * (x[t] - v_prev[t]) / tau ** 2
            carry = dv - dv / tau
        return torch.stack(grad_x[::-1]), grad_tau

    @staticmethod
    def example_inputs():
        return _integrator_inputs()


class ElsewhereLeakyIntegratorNoLeakCarry(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the state carried back keeps dv but drops the leak's -dv / tau term"}

    @staticmethod
    def forward(ctx, x, tau):
        v = _integrate(x, tau)
        ctx.save_for_backward(x, tau, v)
        return v

    @staticmethod
    def backward(ctx, grad_v):
        x, tau, v = ctx.saved_tensors
        v_prev = _previous(v)
        grad_x = []
        grad_tau = torch.zeros_like(tau)
        carry = torch.zeros_like(tau)
        for t in reversed(range(x.shape[0])):
            dv = grad_v[t] + carry
            grad_x.append(dv / tau)
            grad_tau = grad_tau - dv * (x[t] - v_prev[t]) / tau ** 2
            carry = dv  # BUG
        return torch.stack(grad_x[::-1]), grad_tau

    @staticmethod
    def example_inputs():
        return _integrator_inputs()


class ElsewhereLeakyIntegratorCurrentState(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "tau",
           "note": "the time constant's gradient uses the new state v_t where the update read v_{t-1}"}

    @staticmethod
    def forward(ctx, x, tau):
        v = _integrate(x, tau)
        ctx.save_for_backward(x, tau, v)
        return v

    @staticmethod
    def backward(ctx, grad_v):
        x, tau, v = ctx.saved_tensors
        grad_x = []
        grad_tau = torch.zeros_like(tau)
        carry = torch.zeros_like(tau)
        for t in reversed(range(x.shape[0])):
            dv = grad_v[t] + carry
            grad_x.append(dv / tau)
            grad_tau = grad_tau - dv * (x[t] - v[t]) / tau ** 2  # BUG
            carry = dv - dv / tau
        return torch.stack(grad_x[::-1]), grad_tau

    @staticmethod
    def example_inputs():
        return _integrator_inputs()


class ElsewhereLeakyIntegratorListOrder(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the per-step gradients are collected last step first and stacked without reversing the list"}

    @staticmethod
    def forward(ctx, x, tau):
        v = _integrate(x, tau)
        ctx.save_for_backward(x, tau, v)
        return v

    @staticmethod
    def backward(ctx, grad_v):
        x, tau, v = ctx.saved_tensors
        v_prev = _previous(v)
        grad_x = []
        grad_tau = torch.zeros_like(tau)
        carry = torch.zeros_like(tau)
        for t in reversed(range(x.shape[0])):
            dv = grad_v[t] + carry
            grad_x.append(dv / tau)
            grad_tau = grad_tau - dv * (x[t] - v_prev[t]) / tau ** 2
            carry = dv - dv / tau
        return torch.stack(grad_x), grad_tau  # BUG

    @staticmethod
    def example_inputs():
        return _integrator_inputs()


class ElsewhereSpikeSurrogate(torch.autograd.Function):
    """A spike where the membrane potential crosses the threshold 1; backward uses the derivative
    of a steep sigmoid around the threshold (the usual surrogate gradient of spiking networks)."""

    bug = {"kind": "smooth_surrogate", "input": "v",
           "note": "deliberate: the step's zero derivative is replaced by a sigmoid's bump"}

    SLOPE = 4.0

    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return (v > 1.0).to(v.dtype)

    @staticmethod
    def backward(ctx, grad):
        (v,) = ctx.saved_tensors
        s = torch.sigmoid(ElsewhereSpikeSurrogate.SLOPE * (v - 1.0))
        return grad * ElsewhereSpikeSurrogate.SLOPE * s * (1 - s)  # BUG
