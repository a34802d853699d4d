"""Traps torch's gradcheck misses (issue 22), on gradcli's engine: each wrong Function has a correct twin.

Checked by tests/test_function_features.py; `gradcli check tests/traps/engine_traps.py` names each trap.
"""
import numpy as np

import gradcli as torch
from gradcli.autograd import Function


class WrongJvpSin(Function):
    """jvp uses sin(x) where the derivative is cos(x): backward is right, forward mode is not."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x.cos()

    @staticmethod
    def jvp(ctx, x_t):
        x, = ctx.saved_tensors
        return x_t * x.sin()


class JvpSin(WrongJvpSin):
    @staticmethod
    def jvp(ctx, x_t):
        x, = ctx.saved_tensors
        return x_t * x.cos()


class CtxAttributeExp(Function):
    """y = x·eˣ keeps eˣ as ctx.e: computed without a graph, so the double backward misses its derivative."""

    @staticmethod
    def forward(ctx, x):
        e = x.exp()
        ctx.e = e
        ctx.save_for_backward(x)
        return x * e

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * ctx.e * (1 + x)


class SavedExp(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.exp()

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x.exp() * (1 + x)


_noise = np.random.default_rng()


class NondeterministicDouble(Function):
    """backward's result wobbles by 1e-9 relative (an atomic-add kernel's reordering, in miniature)."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * (2 + torch.tensor(_noise.standard_normal(grad.shape) * 1e-9))


class DeterministicDouble(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class MemoryOrderSquare(Function):
    """backward flattens x in memory order (ravel order="K"), as a kernel assuming C order would."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        flat = np.ravel(x.data, order="K")
        return grad * torch.tensor(2 * flat.reshape(x.shape))


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * 2 * x.reshape(-1).reshape(x.shape)  # flattened in C order whatever the strides
