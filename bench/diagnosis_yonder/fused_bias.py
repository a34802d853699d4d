"""Fused bias + activation kernels as written by hand in training repos (blind corpus yonder)."""
import math

import torch

K = math.sqrt(2.0 / math.pi)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _xb(seed=0, n=5, c=4):
    g = _gen(seed)
    return (torch.randn(n, c, dtype=torch.float64, generator=g),
            torch.randn(c, dtype=torch.float64, generator=g))


def gelu_tanh(z):
    return 0.5 * z * (1.0 + torch.tanh(K * (z + 0.044715 * z ** 3)))


def gelu_tanh_grad(z):
    t = torch.tanh(K * (z + 0.044715 * z ** 3))
    return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * K * (1.0 + 3 * 0.044715 * z * z)


class YonderBiasGelu(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, bias):
        z = x + bias
        ctx.save_for_backward(z)
        return gelu_tanh(z)

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        grad_z = grad_out * gelu_tanh_grad(z)
        return grad_z, grad_z.sum(dim=0)

    @staticmethod
    def example_inputs():
        return _xb(0)


class YonderBiasGeluBiasMean(torch.autograd.Function):
    bug = {"kind": "scale", "input": "bias",
           "note": "the bias gradient averaged over the batch instead of summed (factor 1/5)"}

    @staticmethod
    def forward(ctx, x, bias):
        z = x + bias
        ctx.save_for_backward(z)
        return gelu_tanh(z)

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        grad_z = grad_out * gelu_tanh_grad(z)
        grad_bias = grad_z.mean(dim=0)  # BUG
        return grad_z, grad_bias

    @staticmethod
    def example_inputs():
        return _xb(1)


class YonderBiasGeluDropsInnerChain(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "d/dz of the cubic inside tanh taken as 1: the 3*0.044715*z^2 term of the inner derivative is left out"}

    @staticmethod
    def forward(ctx, x, bias):
        z = x + bias
        ctx.save_for_backward(z)
        return gelu_tanh(z)

    @staticmethod
    def _tanh_of(z):
        return torch.tanh(K * (z + 0.044715 * z ** 3))

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        t = YonderBiasGeluDropsInnerChain._tanh_of(z)
        local = 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * K  # BUG
        grad_z = grad_out * local
        return grad_z, grad_z.sum(0)

    @staticmethod
    def example_inputs():
        return _xb(2)


class YonderBiasGeluIgnoresGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "the local derivative returned without multiplying by grad_out"}

    @staticmethod
    def forward(ctx, x, bias):
        z = x + bias
        ctx.save_for_backward(z)
        return gelu_tanh(z)

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        grad_x = grad_bias = None
        local = gelu_tanh_grad(z)
        if ctx.needs_input_grad[0]:
            grad_x = local  # BUG
        if ctx.needs_input_grad[1]:
            grad_bias = (grad_out * local).sum(0)
        return grad_x, grad_bias

    @staticmethod
    def example_inputs():
        return _xb(3)


class YonderBiasGeluQuickDerivative(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "backward of the sigmoid 'quick GELU' z*sigmoid(1.702 z) used for the tanh-approximation GELU"}

    @staticmethod
    def forward(ctx, x, bias):
        z = x + bias
        ctx.save_for_backward(z)
        return gelu_tanh(z)

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        s = torch.sigmoid(1.702 * z)
        grad_z = grad_out * (s + 1.702 * z * s * (1 - s))  # BUG
        return grad_z, grad_z.sum(0)

    @staticmethod
    def example_inputs():
        return _xb(4)


def _dropout_inputs(seed):
    g = _gen(seed)
    x = torch.randn(4, 6, dtype=torch.float64, generator=g)
    bias = torch.randn(6, dtype=torch.float64, generator=g)
    residual = torch.randn(4, 6, dtype=torch.float64, generator=g)
    mask = torch.rand(4, 6, generator=g) > 0.25
    return (x.requires_grad_(), bias.requires_grad_(), residual.requires_grad_(), mask, 0.25)


class YonderBiasDropoutAdd(torch.autograd.Function):
    """residual + dropout(x + bias) with a fixed keep-mask, as in Megatron's fused kernel."""
    bug = None

    @staticmethod
    def forward(ctx, x, bias, residual, mask, p: float = 0.25):
        ctx.p = p
        ctx.save_for_backward(mask)
        return residual + (x + bias) * mask / (1.0 - p)

    @staticmethod
    def backward(ctx, grad_out):
        (mask,) = ctx.saved_tensors
        grad_x = grad_out * mask / (1.0 - ctx.p)
        return grad_x, grad_x.sum(0), grad_out, None, None

    @staticmethod
    def example_inputs():
        return _dropout_inputs(5)


class YonderBiasDropoutAddNoRescale(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the inverted-dropout rescale 1/(1-p) forgotten in backward (factor 0.75)"}

    @staticmethod
    def forward(ctx, x, bias, residual, mask, p: float = 0.25):
        ctx.p = p
        ctx.save_for_backward(mask)
        return residual + (x + bias) * mask / (1.0 - p)

    @staticmethod
    def backward(ctx, grad_out):
        (mask,) = ctx.saved_tensors
        grad_x = grad_out * mask  # BUG
        return grad_x, grad_x.sum(0), grad_out, None, None

    @staticmethod
    def example_inputs():
        return _dropout_inputs(6)


class YonderBiasDropoutAddMaskOnResidual(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "x",
           "note": "the masked gradient given to the residual and the plain one to x: the two gradients exchanged"}

    @staticmethod
    def forward(ctx, x, bias, residual, mask, p: float = 0.25):
        ctx.p = p
        ctx.save_for_backward(mask)
        return residual + (x + bias) * mask / (1.0 - p)

    @staticmethod
    def backward(ctx, grad_out):
        (mask,) = ctx.saved_tensors
        grad_branch = grad_out * mask / (1.0 - ctx.p)
        grad_x, grad_residual = grad_out, grad_branch  # BUG
        return grad_x, grad_branch.sum(0), grad_residual, None, None

    @staticmethod
    def example_inputs():
        return _dropout_inputs(7)


class YonderBiasSilu(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, bias):
        z = x + bias
        ctx.save_for_backward(z)
        return z * torch.sigmoid(z)

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        s = torch.sigmoid(z)
        grad_z = grad_out * s * (1 + z * (1 - s))
        return grad_z, grad_z.sum(0)

    @staticmethod
    def example_inputs():
        return _xb(8)


class YonderBiasSiluInplace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "z saved, then multiplied in place by sigmoid(z) to save memory: backward reads silu(z) as z"}

    @staticmethod
    def forward(ctx, x, bias):
        z = x + bias
        ctx.save_for_backward(z)
        z.mul_(torch.sigmoid(z))  # BUG
        return z

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        s = torch.sigmoid(z)
        grad_z = grad_out * s * (1 + z * (1 - s))
        return grad_z, grad_z.sum(0)

    @staticmethod
    def example_inputs():
        return _xb(9)
