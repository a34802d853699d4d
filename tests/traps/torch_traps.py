"""Traps torch's gradcheck misses (issue 22), in real PyTorch: each wrong Function has a correct twin.

Checked by tests/test_function_features_torch.py; `gradcli check tests/traps/torch_traps.py` names each trap.
"""
import torch
from torch.autograd import Function


class WrongJvpSin(Function):
    """jvp uses sin(x) where the derivative is cos(x): backward is right, forward mode is not."""

    @staticmethod
    def forward(x):
        return x.sin()

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)

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


class WrongVmapScaledBySum(Function):
    """y = x·Σx; its vmap rule sums over the batch dimension too (the samples get mixed)."""

    @staticmethod
    def forward(x):
        return x * x.sum()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x.sum() + (grad * x).sum()

    @staticmethod
    def vmap(info, in_dims, x):
        x = x.movedim(in_dims[0], 0)
        return x * x.sum(), 0


class VmapScaledBySum(WrongVmapScaledBySum):
    @staticmethod
    def vmap(info, in_dims, x):
        x = x.movedim(in_dims[0], 0)
        total = x.flatten(1).sum(1).reshape((-1,) + (1,) * (x.dim() - 1))
        return x * total, 0


class GeneratedVmapScaledBySum(Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x * x.sum()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x.sum() + (grad * x).sum()


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


class NondeterministicDouble(Function):
    """backward's result wobbles by 1e-9 relative (an atomic-add kernel's reordering, in miniature)."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * (2 + torch.randn(grad.shape, dtype=grad.dtype) * 1e-9)


class DeterministicDouble(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class MemoryOrderSquare(Function):
    """backward reads x's storage in memory order (as_strided with contiguous strides), as a kernel
    assuming C order would."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        flat = x.as_strided((x.numel(),), (1,), x.storage_offset())
        return grad * 2 * flat.reshape(x.shape)


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * 2 * x.reshape(-1).reshape(x.shape)
