"""Fused kernels on gradcli's engine: bias + SiLU + a fixed dropout mask in one pass, and residual
add + RMSNorm with a gain, the way fused-kernel libraries write their backward by hand."""
import gradcli as torch

KEEP_SCALE = 1.5  # 1 / (1 - p), p = 1/3


def _keep_mask(shape, dtype):
    index = torch.arange(shape[0] * shape[1]).reshape(shape[0], shape[1])
    return ((index % 3) != 0).to(dtype)


def _silu_grad(z):
    s = torch.sigmoid(z)
    return s * (1 + z * (1 - s))


def _bias_inputs():
    gen = torch.Generator().manual_seed(31)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    bias = torch.tensor([0.2, -0.4, 0.1, 0.5], dtype=torch.float64)
    return x.requires_grad_(), bias.requires_grad_()


class WithheldBiasSiluDropout(torch.autograd.Function):
    """y = silu(x + bias) * keep / (1 - p), bias [4] broadcast over the rows of x [3, 4]."""
    bug = None

    @staticmethod
    def forward(ctx, x, bias):
        z = x + bias
        keep = _keep_mask(z.shape, z.dtype)
        ctx.save_for_backward(z, keep)
        return z * torch.sigmoid(z) * keep * KEEP_SCALE

    @staticmethod
    def backward(ctx, grad_out):
        z, keep = ctx.saved_tensors
        grad_z = grad_out * keep * KEEP_SCALE * _silu_grad(z)
        return grad_z, grad_z.sum(dim=0)

    @staticmethod
    def example_inputs():
        return _bias_inputs()


class WithheldBiasSiluDropoutBiasFromUpstream(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "bias",
           "note": "the bias gradient sums grad_out (as a linear layer's would), not grad_z through SiLU and the mask"}

    @staticmethod
    def forward(ctx, x, bias):
        z = x + bias
        keep = _keep_mask(z.shape, z.dtype)
        ctx.save_for_backward(z, keep)
        return z * torch.sigmoid(z) * keep * KEEP_SCALE

    @staticmethod
    def backward(ctx, grad_out):
        z, keep = ctx.saved_tensors
        grad_z = grad_out * keep * KEEP_SCALE * _silu_grad(z)
        return grad_z, grad_out.sum(dim=0)  # BUG

    @staticmethod
    def example_inputs():
        return _bias_inputs()


class WithheldBiasSiluDropoutMaskForgotten(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the dropout mask is not applied in backward: dropped entries receive gradient"}

    @staticmethod
    def forward(ctx, x, bias):
        z = x + bias
        keep = _keep_mask(z.shape, z.dtype)
        ctx.save_for_backward(z, keep)
        return z * torch.sigmoid(z) * keep * KEEP_SCALE

    @staticmethod
    def backward(ctx, grad_out):
        z, keep = ctx.saved_tensors
        grad_z = grad_out * KEEP_SCALE * _silu_grad(z)  # BUG
        return grad_z, grad_z.sum(dim=0)

    @staticmethod
    def example_inputs():
        return _bias_inputs()


class WithheldBiasSiluDropoutUnscaled(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the inverted-dropout factor 1 / (1 - p) is left out of the backward"}

    @staticmethod
    def forward(ctx, x, bias):
        z = x + bias
        keep = _keep_mask(z.shape, z.dtype)
        ctx.save_for_backward(z, keep)
        return z * torch.sigmoid(z) * keep * KEEP_SCALE

    @staticmethod
    def backward(ctx, grad_out):
        z, keep = ctx.saved_tensors
        grad_z = grad_out * keep * _silu_grad(z)  # BUG
        return grad_z, grad_z.sum(dim=0)

    @staticmethod
    def example_inputs():
        return _bias_inputs()


def _norm_inputs():
    gen = torch.Generator().manual_seed(32)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    res = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    gain = torch.tensor([1.2, 0.8, -0.5, 1.0], dtype=torch.float64)
    return x.requires_grad_(), res.requires_grad_(), gain.requires_grad_()


class WithheldResidualRMSNorm(torch.autograd.Function):
    """h = x + residual; y = h / sqrt(mean(h^2, dim=1) + 1e-6) * gain."""
    bug = None

    @staticmethod
    def forward(ctx, x, residual, gain):
        h = x + residual
        rinv = torch.rsqrt(h.pow(2).mean(dim=1, keepdim=True) + 1e-6)
        ctx.save_for_backward(h, rinv, gain)
        return h * rinv * gain

    @staticmethod
    def backward(ctx, grad_out):
        h, rinv, gain = ctx.saved_tensors
        g_hat = grad_out * gain
        grad_h = rinv * (g_hat - h * rinv.pow(2) * (g_hat * h).mean(dim=1, keepdim=True))
        return grad_h, grad_h, (grad_out * h * rinv).sum(0)

    @staticmethod
    def example_inputs():
        return _norm_inputs()


class WithheldResidualRMSNormNoMeanTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "treats the RMS as a constant: the term through mean(h^2) is dropped"}

    @staticmethod
    def forward(ctx, x, residual, gain):
        h = x + residual
        rinv = torch.rsqrt(h.pow(2).mean(dim=1, keepdim=True) + 1e-6)
        ctx.save_for_backward(h, rinv, gain)
        return h * rinv * gain

    @staticmethod
    def backward(ctx, grad_out):
        h, rinv, gain = ctx.saved_tensors
        g_hat = grad_out * gain
        grad_h = rinv * g_hat  # BUG
        return grad_h, grad_h, (grad_out * h * rinv).sum(0)

    @staticmethod
    def example_inputs():
        return _norm_inputs()


class WithheldResidualRMSNormMeanOverBatch(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the backward's mean of g_hat * h runs over the batch (dim 0), the forward's over dim 1"}

    @staticmethod
    def forward(ctx, x, residual, gain):
        h = x + residual
        rinv = torch.rsqrt(h.pow(2).mean(dim=1, keepdim=True) + 1e-6)
        ctx.save_for_backward(h, rinv, gain)
        return h * rinv * gain

    @staticmethod
    def backward(ctx, grad_out):
        h, rinv, gain = ctx.saved_tensors
        g_hat = grad_out * gain
        grad_h = rinv * (g_hat - h * rinv.pow(2) * (g_hat * h).mean(dim=0, keepdim=True))  # BUG
        return grad_h, grad_h, (grad_out * h * rinv).sum(0)

    @staticmethod
    def example_inputs():
        return _norm_inputs()


class WithheldResidualRMSNormNormalisedInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "forward saves h, then normalises it in place with mul_, so backward reads h / rms"}

    @staticmethod
    def forward(ctx, x, residual, gain):
        h = x + residual
        rinv = torch.rsqrt(h.pow(2).mean(dim=1, keepdim=True) + 1e-6)
        ctx.save_for_backward(h, rinv, gain)
        h.mul_(rinv)  # BUG
        return h * gain

    @staticmethod
    def backward(ctx, grad_out):
        h, rinv, gain = ctx.saved_tensors
        g_hat = grad_out * gain
        grad_h = rinv * (g_hat - h * rinv.pow(2) * (g_hat * h).mean(dim=1, keepdim=True))
        return grad_h, grad_h, (grad_out * h * rinv).sum(0)

    @staticmethod
    def example_inputs():
        return _norm_inputs()
