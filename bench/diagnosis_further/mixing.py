"""Multichannel mixing: a learned channel-mixing matrix, constant-power stereo panning with a
learned pan, and per-channel gain and offset."""
import math

import torch


def _mix_inputs():
    gen = torch.Generator().manual_seed(61)
    x = torch.randn(2, 3, 4, dtype=torch.float64, generator=gen)
    mix = torch.randn(3, 3, dtype=torch.float64, generator=gen)  # square so a wrong transpose runs
    return x, mix


class FurtherChannelMix(torch.autograd.Function):
    """y = mix @ x: (C_out, C) mixing of (B, C, T) signals."""
    bug = None

    @staticmethod
    def forward(ctx, x, mix):
        ctx.save_for_backward(x, mix)
        return mix @ x

    @staticmethod
    def backward(ctx, grad):
        x, mix = ctx.saved_tensors
        return mix.mT @ grad, (grad @ x.mT).sum(dim=0)

    @staticmethod
    def example_inputs():
        return _mix_inputs()


class FurtherChannelMixSignalNoT(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "the signal's gradient is mix @ grad where mix.mT @ grad is needed"}

    @staticmethod
    def forward(ctx, x, mix):
        ctx.save_for_backward(x, mix)
        return mix @ x

    @staticmethod
    def backward(ctx, grad):
        x, mix = ctx.saved_tensors
        return mix @ grad, (grad @ x.mT).sum(dim=0)  # BUG

    @staticmethod
    def example_inputs():
        return _mix_inputs()


class FurtherChannelMixMatrixOuter(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "mix",
           "note": "the mixing matrix's gradient is x @ grad.mT, the transpose of grad @ x.mT"}

    @staticmethod
    def forward(ctx, x, mix):
        ctx.save_for_backward(x, mix)
        return mix @ x

    @staticmethod
    def backward(ctx, grad):
        x, mix = ctx.saved_tensors
        return mix.mT @ grad, (x @ grad.mT).sum(dim=0)  # BUG

    @staticmethod
    def example_inputs():
        return _mix_inputs()


def _pan_inputs():
    gen = torch.Generator().manual_seed(62)
    left = torch.randn(2, 5, dtype=torch.float64, generator=gen)
    right = torch.randn(2, 5, dtype=torch.float64, generator=gen)
    return left, right, torch.tensor([0.3], dtype=torch.float64)


def _pan_forward(ctx, left, right, pan):
    theta = (pan + 1) * math.pi / 4  # pan in [-1, 1] -> [0, pi/2]
    ctx.save_for_backward(left, right, theta)
    return torch.cos(theta) * left + torch.sin(theta) * right


class FurtherStereoPan(torch.autograd.Function):
    """Constant-power pan of a stereo pair to mono: cos(theta) l + sin(theta) r."""
    bug = None

    @staticmethod
    def forward(ctx, left, right, pan):
        return _pan_forward(ctx, left, right, pan)

    @staticmethod
    def backward(ctx, grad):
        left, right, theta = ctx.saved_tensors
        g_left = grad * torch.cos(theta)
        g_right = grad * torch.sin(theta)
        d_theta = -torch.sin(theta) * left + torch.cos(theta) * right
        g_pan = (grad * d_theta).sum().reshape(1) * math.pi / 4
        return g_left, g_right, g_pan

    @staticmethod
    def example_inputs():
        return _pan_inputs()


class FurtherStereoPanChannelsSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "left",
           "note": "the left and right gradients are returned in each other's positions"}

    @staticmethod
    def forward(ctx, left, right, pan):
        return _pan_forward(ctx, left, right, pan)

    @staticmethod
    def backward(ctx, grad):
        left, right, theta = ctx.saved_tensors
        g_left = grad * torch.cos(theta)
        g_right = grad * torch.sin(theta)
        d_theta = -torch.sin(theta) * left + torch.cos(theta) * right
        g_pan = (grad * d_theta).sum().reshape(1) * math.pi / 4
        return g_right, g_left, g_pan  # BUG

    @staticmethod
    def example_inputs():
        return _pan_inputs()


class FurtherStereoPanCosDerivative(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "pan",
           "note": "d cos(theta) is taken as +sin(theta): the left channel's term in the pan gradient has the wrong sign"}

    @staticmethod
    def forward(ctx, left, right, pan):
        return _pan_forward(ctx, left, right, pan)

    @staticmethod
    def backward(ctx, grad):
        left, right, theta = ctx.saved_tensors
        g_left = grad * torch.cos(theta)
        g_right = grad * torch.sin(theta)
        d_theta = torch.sin(theta) * left + torch.cos(theta) * right  # BUG
        g_pan = (grad * d_theta).sum().reshape(1) * math.pi / 4
        return g_left, g_right, g_pan

    @staticmethod
    def example_inputs():
        return _pan_inputs()


class FurtherStereoPanNoChainFactor(torch.autograd.Function):
    bug = {"kind": "scale", "input": "pan",
           "note": "the pan gradient stops at theta: d theta / d pan = pi/4 is forgotten"}

    @staticmethod
    def forward(ctx, left, right, pan):
        return _pan_forward(ctx, left, right, pan)

    @staticmethod
    def backward(ctx, grad):
        left, right, theta = ctx.saved_tensors
        g_left = grad * torch.cos(theta)
        g_right = grad * torch.sin(theta)
        d_theta = -torch.sin(theta) * left + torch.cos(theta) * right
        g_pan = (grad * d_theta).sum().reshape(1)  # BUG
        return g_left, g_right, g_pan

    @staticmethod
    def example_inputs():
        return _pan_inputs()


def _gain_inputs():
    gen = torch.Generator().manual_seed(63)
    x = torch.randn(2, 3, 4, dtype=torch.float64, generator=gen)
    gain = 0.5 + torch.rand(3, dtype=torch.float64, generator=gen)
    bias = torch.randn(3, dtype=torch.float64, generator=gen)
    return x, gain, bias


class FurtherChannelGain(torch.autograd.Function):
    """y = gain[c] * x + bias[c] on (B, C, T)."""
    bug = None

    @staticmethod
    def forward(ctx, x, gain, bias):
        ctx.save_for_backward(x, gain)
        return x * gain[:, None] + bias[:, None]

    @staticmethod
    def backward(ctx, grad):
        x, gain = ctx.saved_tensors
        g_x = grad * gain[:, None]
        g_gain = (grad * x).sum(dim=(0, 2))
        g_bias = grad.sum(dim=(0, 2))
        return g_x, g_gain, g_bias

    @staticmethod
    def example_inputs():
        return _gain_inputs()


class FurtherChannelGainBiasBatchOnly(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "bias",
           "note": "the bias gradient is summed over the batch only and keeps the time axis, (C, T) for a (C,) bias"}

    @staticmethod
    def forward(ctx, x, gain, bias):
        ctx.save_for_backward(x, gain)
        return x * gain[:, None] + bias[:, None]

    @staticmethod
    def backward(ctx, grad):
        x, gain = ctx.saved_tensors
        g_x = grad * gain[:, None]
        g_gain = (grad * x).sum(dim=(0, 2))
        g_bias = grad.sum(dim=0)  # BUG
        return g_x, g_gain, g_bias

    @staticmethod
    def example_inputs():
        return _gain_inputs()


class FurtherChannelGainLocalDerivative(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "gain",
           "note": "the gain's gradient is the local derivative x summed, never multiplied by grad"}

    @staticmethod
    def forward(ctx, x, gain, bias):
        ctx.save_for_backward(x, gain)
        return x * gain[:, None] + bias[:, None]

    @staticmethod
    def backward(ctx, grad):
        x, gain = ctx.saved_tensors
        g_x = grad * gain[:, None]
        g_gain = x.sum(dim=(0, 2))  # BUG
        g_bias = grad.sum(dim=(0, 2))
        return g_x, g_gain, g_bias

    @staticmethod
    def example_inputs():
        return _gain_inputs()


class FurtherChannelGainParamsSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "gain",
           "note": "gain and bias have the same (C,) shape and their gradients are returned in each other's slots"}

    @staticmethod
    def forward(ctx, x, gain, bias):
        ctx.save_for_backward(x, gain)
        return x * gain[:, None] + bias[:, None]

    @staticmethod
    def backward(ctx, grad):
        x, gain = ctx.saved_tensors
        g_x = grad * gain[:, None]
        g_gain = (grad * x).sum(dim=(0, 2))
        g_bias = grad.sum(dim=(0, 2))
        return g_x, g_bias, g_gain  # BUG

    @staticmethod
    def example_inputs():
        return _gain_inputs()
