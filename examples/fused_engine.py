"""fused.py's Functions on gradcli's engine (numpy: float32 and float16; it has no bfloat16).

    gradcli check examples/fused_engine.py --dtype float32,bfloat16,float16

Each Function computes in float32 whatever its inputs' dtype (float64 stays float64, so the
finite-difference check runs too) and names a plain-torch ``reference``. The two twins at the end
carry the low-precision bugs that only reference mode catches: their float64 numerics pass.
A name under ``torch.`` in a ``reference`` string means gradcli's own op here (``import gradcli as torch``).
"""
import math

import gradcli as torch
import gradcli.nn.functional as F


def _acc(dtype):
    """The accumulation dtype of a low-precision kernel: float32 for fp16/fp32, float64 stays."""
    return torch.float64 if dtype == torch.float64 else torch.float32


# The engine's float16 sums accumulate in float16 (numpy's), so a plain reference at float16 would be
# as poor as the bug below; these references state the accumulation the kernels promise: float32.
def bias_gelu_reference(x, bias):
    return F.gelu(x.to(_acc(x.dtype)) + bias.to(_acc(x.dtype))).to(x.dtype)


def softmax_cross_entropy_reference(logits, target):
    return F.cross_entropy(logits.to(_acc(logits.dtype)), target, reduction="none").to(logits.dtype)


class FusedBiasGelu(torch.autograd.Function):
    """gelu(x + bias), forward and backward in float32 (erf form), one fused pass each."""

    reference = staticmethod(bias_gelu_reference)

    @staticmethod
    def forward(ctx, x, bias):  # the engine's erf: numpy float64 rounded to the dtype
        z = x.to(_acc(x.dtype)) + bias.to(_acc(x.dtype))
        ctx.save_for_backward(z)
        return (0.5 * z * (1 + torch.erf(z / math.sqrt(2)))).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        cdf = 0.5 * (1 + torch.erf(z / math.sqrt(2)))
        pdf = torch.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
        grad_z = grad_out.to(z.dtype) * (cdf + z * pdf)
        return grad_z.to(grad_out.dtype), grad_z.sum(0).to(grad_out.dtype)  # the bias sum in float32

    @staticmethod
    def example_inputs():
        return torch.rand(512, 8, dtype=torch.float64) * 4 - 2, torch.rand(8, dtype=torch.float64) * 2 - 1


class SoftmaxCrossEntropy(torch.autograd.Function):
    """Per-row cross-entropy of logits, stable: the row max is subtracted before exp, in float32."""

    reference = staticmethod(softmax_cross_entropy_reference)

    @staticmethod
    def forward(ctx, logits, target):
        x = logits.to(_acc(logits.dtype))
        shifted = x - x.max(dim=1, keepdim=True).values
        log_z = torch.log(torch.exp(shifted).sum(dim=1, keepdim=True))
        log_p = shifted - log_z
        ctx.save_for_backward(log_p, target)
        return (-log_p.gather(1, target[:, None])[:, 0]).to(logits.dtype)

    @staticmethod
    def backward(ctx, grad_loss):
        log_p, target = ctx.saved_tensors
        grad = torch.exp(log_p)
        grad[torch.arange(len(target)), target] -= 1
        return (grad * grad_loss.to(grad.dtype)[:, None]).to(grad_loss.dtype), None

    @staticmethod
    def example_inputs():
        logits = torch.rand(16, 10, dtype=torch.float64) * 24 - 12  # large logits: exp(12) overflows float16
        return logits, torch.randint(0, 10, (16,))


class FusedBiasGeluBf16Accumulate(FusedBiasGelu):
    """BUG: the bias gradient is accumulated row by row in the gradient's own dtype (a kernel whose
    accumulator register is bf16): fine in float64, wrong in bf16/fp16, and 5x the reference's error
    even in float32 (a sequential sum of 512 rows against torch's pairwise one)."""

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        cdf = 0.5 * (1 + torch.erf(z / math.sqrt(2)))
        pdf = torch.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
        grad_z = (grad_out.to(z.dtype) * (cdf + z * pdf)).to(grad_out.dtype)
        grad_bias = torch.zeros_like(grad_z[0])
        for row in grad_z:
            grad_bias = grad_bias + row
        return grad_z, grad_bias


class SoftmaxCrossEntropyNoRescale(SoftmaxCrossEntropy):
    """BUG: the missing rescale -- exp(logits) without subtracting the row max, at the input dtype:
    exact enough in float64, overflows (inf, then nan) in float16 as soon as a logit passes 11."""

    @staticmethod
    def forward(ctx, logits, target):
        e = torch.exp(logits)
        log_p = logits - torch.log(e.sum(dim=1, keepdim=True))
        ctx.save_for_backward(log_p, target)
        return -log_p.gather(1, target[:, None])[:, 0]

    @staticmethod
    def backward(ctx, grad_loss):
        log_p, target = ctx.saved_tensors
        grad = torch.exp(log_p)
        grad[torch.arange(len(target)), target] -= 1
        return grad * grad_loss[:, None], None
