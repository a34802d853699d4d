"""Recurrences over time: a one-pole smoother (leaky integrator) with a learned pole, backward
by a reversed loop, and an oscillator whose phase accumulates a learned frequency track."""
import math

import torch


def _pole_inputs():
    gen = torch.Generator().manual_seed(71)
    return torch.randn(2, 6, dtype=torch.float64, generator=gen), torch.tensor([0.6], dtype=torch.float64)


def _pole_forward(ctx, x, alpha):
    batch, steps = x.shape
    state = x.new_zeros(batch)
    outs = []
    for t in range(steps):
        state = alpha * state + (1 - alpha) * x[:, t]
        outs.append(state)
    y = torch.stack(outs, dim=1)
    ctx.save_for_backward(x, alpha, y)
    return y


class FurtherOnePole(torch.autograd.Function):
    """y[t] = alpha y[t-1] + (1 - alpha) x[t], y[-1] = 0."""
    bug = None

    @staticmethod
    def forward(ctx, x, alpha):
        return _pole_forward(ctx, x, alpha)

    @staticmethod
    def backward(ctx, grad):
        x, alpha, y = ctx.saved_tensors
        steps = x.shape[1]
        g_x = torch.zeros_like(x)
        g_alpha = x.new_zeros(1)
        carry = x.new_zeros(x.shape[0])
        for t in reversed(range(steps)):
            g_y = grad[:, t] + alpha * carry
            g_x[:, t] = (1 - alpha) * g_y
            y_prev = y[:, t - 1] if t > 0 else torch.zeros_like(carry)
            g_alpha = g_alpha + (g_y * (y_prev - x[:, t])).sum()
            carry = g_y
        return g_x, g_alpha

    @staticmethod
    def example_inputs():
        return _pole_inputs()


class FurtherOnePoleNoCarry(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the carried alpha * dL/dy[t+1] term of the recurrence's adjoint is dropped"}

    @staticmethod
    def forward(ctx, x, alpha):
        return _pole_forward(ctx, x, alpha)

    @staticmethod
    def backward(ctx, grad):
        x, alpha, y = ctx.saved_tensors
        steps = x.shape[1]
        g_x = torch.zeros_like(x)
        g_alpha = x.new_zeros(1)
        carry = x.new_zeros(x.shape[0])
        for t in reversed(range(steps)):
            g_y = grad[:, t]  # BUG
            g_x[:, t] = (1 - alpha) * g_y
            y_prev = y[:, t - 1] if t > 0 else torch.zeros_like(carry)
            g_alpha = g_alpha + (g_y * (y_prev - x[:, t])).sum()
            carry = g_y
        return g_x, g_alpha

    @staticmethod
    def example_inputs():
        return _pole_inputs()


class FurtherOnePoleCurrentState(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "alpha",
           "note": "the pole's gradient uses the current output y[t] where the previous state y[t-1] is needed"}

    @staticmethod
    def forward(ctx, x, alpha):
        return _pole_forward(ctx, x, alpha)

    @staticmethod
    def backward(ctx, grad):
        x, alpha, y = ctx.saved_tensors
        steps = x.shape[1]
        g_x = torch.zeros_like(x)
        g_alpha = x.new_zeros(1)
        carry = x.new_zeros(x.shape[0])
        for t in reversed(range(steps)):
            g_y = grad[:, t] + alpha * carry
            g_x[:, t] = (1 - alpha) * g_y
            y_prev = y[:, t]  # BUG
            g_alpha = g_alpha + (g_y * (y_prev - x[:, t])).sum()
            carry = g_y
        return g_x, g_alpha

    @staticmethod
    def example_inputs():
        return _pole_inputs()


class FurtherOnePoleForwardSweep(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the adjoint recurrence runs forward in time (range) instead of reversed, carrying the past instead of the future"}

    @staticmethod
    def forward(ctx, x, alpha):
        return _pole_forward(ctx, x, alpha)

    @staticmethod
    def backward(ctx, grad):
        x, alpha, y = ctx.saved_tensors
        steps = x.shape[1]
        g_x = torch.zeros_like(x)
        g_alpha = x.new_zeros(1)
        carry = x.new_zeros(x.shape[0])
        for t in range(steps):  # BUG
            g_y = grad[:, t] + alpha * carry
            g_x[:, t] = (1 - alpha) * g_y
            y_prev = y[:, t - 1] if t > 0 else torch.zeros_like(carry)
            g_alpha = g_alpha + (g_y * (y_prev - x[:, t])).sum()
            carry = g_y
        return g_x, g_alpha

    @staticmethod
    def example_inputs():
        return _pole_inputs()


def _osc_inputs():
    gen = torch.Generator().manual_seed(72)
    return (0.05 + 0.15 * torch.rand(2, 6, dtype=torch.float64, generator=gen),)


def _osc_forward(ctx, freq):
    phase = torch.cumsum(2 * math.pi * freq, dim=-1)
    ctx.save_for_backward(phase)
    return torch.sin(phase)


class FurtherPhaseOscillator(torch.autograd.Function):
    """sin(cumsum(2 pi f)): an oscillator driven by a frequency track (cycles per sample)."""
    bug = None

    @staticmethod
    def forward(ctx, freq):
        return _osc_forward(ctx, freq)

    @staticmethod
    def backward(ctx, grad):
        (phase,) = ctx.saved_tensors
        g_phase = grad * torch.cos(phase)
        return 2 * math.pi * torch.flip(torch.cumsum(torch.flip(g_phase, [-1]), dim=-1), [-1])

    @staticmethod
    def example_inputs():
        return _osc_inputs()


class FurtherPhaseOscillatorPlainCumsum(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "freq",
           "note": "the adjoint of cumsum is a reversed cumsum; the plain cumsum is used"}

    @staticmethod
    def forward(ctx, freq):
        return _osc_forward(ctx, freq)

    @staticmethod
    def backward(ctx, grad):
        (phase,) = ctx.saved_tensors
        g_phase = grad * torch.cos(phase)
        return 2 * math.pi * torch.cumsum(g_phase, dim=-1)  # BUG

    @staticmethod
    def example_inputs():
        return _osc_inputs()


class FurtherPhaseOscillatorBatchCumsum(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "freq",
           "note": "the reversed cumsum of the adjoint runs over dim 0 (batch) instead of time"}

    @staticmethod
    def forward(ctx, freq):
        return _osc_forward(ctx, freq)

    @staticmethod
    def backward(ctx, grad):
        (phase,) = ctx.saved_tensors
        g_phase = grad * torch.cos(phase)
        return 2 * math.pi * torch.flip(torch.cumsum(torch.flip(g_phase, [-1]), dim=0), [-1])  # BUG

    @staticmethod
    def example_inputs():
        return _osc_inputs()


class FurtherPhaseOscillatorSinDerivative(torch.autograd.Function):
    bug = {"kind": "sign", "input": "freq",
           "note": "d sin is written -cos (the derivative of cos), negating the whole gradient"}

    @staticmethod
    def forward(ctx, freq):
        return _osc_forward(ctx, freq)

    @staticmethod
    def backward(ctx, grad):
        (phase,) = ctx.saved_tensors
        g_phase = -grad * torch.cos(phase)  # BUG
        return 2 * math.pi * torch.flip(torch.cumsum(torch.flip(g_phase, [-1]), dim=-1), [-1])

    @staticmethod
    def example_inputs():
        return _osc_inputs()
