"""Quantization-aware training ops: PACT clipping, a symmetric clip with a learned scale, a
straight-through fake quantizer, differentiable soft quantization (DSQ) and a noise proxy."""
import torch


def _seeded(*shape, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=torch.float64, generator=gen)


def _pact_inputs():
    x = _seeded(4, 3, seed=11) * 1.5  # channels first: [C, L]
    alpha = torch.tensor([0.7, 1.1, 0.9, 1.3], dtype=torch.float64)
    return x.requires_grad_(), alpha.requires_grad_()


class WithheldPACTClip(torch.autograd.Function):
    """PACT: y = clamp(x, 0, alpha) with a learnable ceiling alpha [C] per channel (row) of x [C, L]."""
    bug = None

    @staticmethod
    def forward(ctx, x, alpha):
        ceiling = alpha.unsqueeze(1)
        ctx.save_for_backward(x, ceiling)
        return torch.minimum(x.clamp(min=0), ceiling)

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha = ctx.saved_tensors
        inside = (x > 0) & (x < alpha)
        grad_x = grad_out * inside
        grad_alpha = (grad_out * (x >= alpha)).sum(dim=1)
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _pact_inputs()


class WithheldPACTClipAlphaPerElement(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "alpha",
           "note": "the ceiling alpha [C] is broadcast along each row of x [C, L]; its gradient is not summed over dim 1"}

    @staticmethod
    def forward(ctx, x, alpha):
        ceiling = alpha.unsqueeze(1)
        ctx.save_for_backward(x, ceiling)
        return torch.minimum(x.clamp(min=0), ceiling)

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha = ctx.saved_tensors
        inside = (x > 0) & (x < alpha)
        grad_x = grad_out * inside
        grad_alpha = grad_out * (x >= alpha)  # BUG
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _pact_inputs()


class WithheldPACTClipUpperRegion(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the input gradient passes everywhere above zero, also where the ceiling clips"}

    @staticmethod
    def forward(ctx, x, alpha):
        ceiling = alpha.unsqueeze(1)
        ctx.save_for_backward(x, ceiling)
        return torch.minimum(x.clamp(min=0), ceiling)

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha = ctx.saved_tensors
        grad_x = grad_out * (x > 0)  # BUG
        grad_alpha = (grad_out * (x >= alpha)).sum(dim=1)
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _pact_inputs()


def _symclip_inputs():
    x = _seeded(3, 4, seed=5) * 1.4
    scale = torch.tensor(0.8, dtype=torch.float64)
    return x.requires_grad_(), scale.requires_grad_()


class WithheldSymmetricClipScale(torch.autograd.Function):
    """y = scale * clamp(x / scale, -1, 1) = clamp(x, -scale, scale), scale a learned scalar."""
    bug = None

    @staticmethod
    def forward(ctx, x, scale):
        u = x / scale
        ctx.save_for_backward(u)
        return scale * u.clamp(-1.0, 1.0)

    @staticmethod
    def backward(ctx, grad_out):
        (u,) = ctx.saved_tensors
        within = u.abs() < 1
        grad_x = grad_out * within
        grad_scale = (grad_out * torch.where(within, torch.zeros_like(u), u.sign())).sum()
        return grad_x, grad_scale

    @staticmethod
    def example_inputs():
        return _symclip_inputs()


class WithheldSymmetricClipScaleLowSide(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "scale",
           "note": "the clipped-below entries add +grad to the scale instead of -grad (sign(u) dropped)"}

    @staticmethod
    def forward(ctx, x, scale):
        u = x / scale
        ctx.save_for_backward(u)
        return scale * u.clamp(-1.0, 1.0)

    @staticmethod
    def backward(ctx, grad_out):
        (u,) = ctx.saved_tensors
        within = u.abs() < 1
        grad_x = grad_out * within
        grad_scale = (grad_out * (~within)).sum()  # BUG
        return grad_x, grad_scale

    @staticmethod
    def example_inputs():
        return _symclip_inputs()


class WithheldFakeQuantSTE(torch.autograd.Function):
    """8-level fake quantizer round(clamp(x/s, -4, 3)) * s with a clipped straight-through estimator."""
    bug = {"kind": "straight_through", "input": "x",
           "note": "deliberate: round() has zero derivative, the backward passes grad inside the clip range"}

    @staticmethod
    def forward(ctx, x):
        s = 0.25
        q = torch.clamp(x / s, -4, 3)
        ctx.mask = (x / s >= -4) & (x / s <= 3)
        return torch.round(q) * s

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out * ctx.mask  # BUG


class WithheldSoftQuantizer(torch.autograd.Function):
    """DSQ soft rounding of one interval: y = s * tanh(k * (x - c)), k = 2.5, c = 0.5."""
    bug = None

    @staticmethod
    def forward(ctx, x, s):
        t = torch.tanh(2.5 * (x - 0.5))
        ctx.save_for_backward(t, s)
        return s * t

    @staticmethod
    def backward(ctx, grad_out):
        t, s = ctx.saved_tensors
        return grad_out * s * 2.5 * (1 - t * t), grad_out * t


class WithheldSoftQuantizerNoSlope(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the slope k = 2.5 of the inner argument is dropped from the chain rule"}

    @staticmethod
    def forward(ctx, x, s):
        t = torch.tanh(2.5 * (x - 0.5))
        ctx.save_for_backward(t, s)
        return s * t

    @staticmethod
    def backward(ctx, grad_out):
        t, s = ctx.saved_tensors
        return grad_out * s * (1 - t * t), grad_out * t  # BUG


def _noise_inputs():
    x = _seeded(3, 4, seed=2)
    step = torch.tensor([0.5, 0.25, 1.0, 0.75], dtype=torch.float64)
    return x.requires_grad_(), step.requires_grad_()


class WithheldNoiseProxyQuant(torch.autograd.Function):
    """Training proxy for quantization: y = x + step * u, u a fixed uniform(-0.5, 0.5) draw."""
    bug = None

    @staticmethod
    def forward(ctx, x, step):
        gen = torch.Generator().manual_seed(7)
        u = torch.rand(x.shape, dtype=x.dtype, generator=gen) - 0.5
        ctx.save_for_backward(u)
        return x + step * u

    @staticmethod
    def backward(ctx, grad_out):
        (u,) = ctx.saved_tensors
        return grad_out, (grad_out * u).sum(0)

    @staticmethod
    def example_inputs():
        return _noise_inputs()


class WithheldNoiseProxyQuantStepGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "step",
           "note": "the step's gradient sums the noise alone, never multiplied by grad_out"}

    @staticmethod
    def forward(ctx, x, step):
        gen = torch.Generator().manual_seed(7)
        u = torch.rand(x.shape, dtype=x.dtype, generator=gen) - 0.5
        ctx.save_for_backward(u)
        return x + step * u

    @staticmethod
    def backward(ctx, grad_out):
        (u,) = ctx.saved_tensors
        return grad_out, u.sum(0)  # BUG

    @staticmethod
    def example_inputs():
        return _noise_inputs()
