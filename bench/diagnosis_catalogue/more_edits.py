"""Bugs one edit or one term away from right (issue 17, fourth pass: the rules' own tuning
corpus): a batched operand used untransposed, the sign of one term holding a module constant,
the wrong saved tensor, a term missing in one branch, the product rule's other half, a bias
gradient left with an extra dim, a recomputed tensor where the saved one is needed."""
import math

import torch
from torch.autograd import Function

DOUBLE = torch.float64
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
SELU_ALPHA, SELU_LAMBDA = 1.6732632423543772, 1.0507009873554805


def _seeded(seed, *shapes):
    torch.manual_seed(seed)
    return tuple(torch.randn(*s, dtype=DOUBLE) for s in shapes)


def _away_from_zero(seed, *shape):
    torch.manual_seed(seed)
    magnitude = torch.rand(*shape, dtype=DOUBLE) * 1.5 + 0.25
    return (magnitude * torch.where(torch.rand(*shape) > 0.5, 1.0, -1.0).to(DOUBLE),)


# ---------------------------------------------------------------- linear attention (no softmax)
class LinearAttention(Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        ctx.save_for_backward(q, k, v)
        return (q @ k.transpose(-2, -1)) @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v = ctx.saved_tensors
        ds = g @ v.transpose(-2, -1)
        return ds @ k, ds.transpose(-2, -1) @ q, (q @ k.transpose(-2, -1)).transpose(-2, -1) @ g

    @staticmethod
    def example_inputs():
        return _seeded(401, (2, 3, 3), (2, 3, 3), (2, 3, 3))


class LinearAttentionKeyUntransposed(Function):
    bug = {"kind": "transposed", "input": "k", "note": "dk = ds @ q where ds.mT @ q is needed (batched)"}

    @staticmethod
    def forward(ctx, q, k, v):
        ctx.save_for_backward(q, k, v)
        return (q @ k.transpose(-2, -1)) @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v = ctx.saved_tensors
        ds = g @ v.transpose(-2, -1)
        dk = ds @ q  # BUG
        return ds @ k, dk, (q @ k.transpose(-2, -1)).transpose(-2, -1) @ g

    @staticmethod
    def example_inputs():
        return _seeded(401, (2, 3, 3), (2, 3, 3), (2, 3, 3))


# ---------------------------------------------------------------------------- exact GELU
class GeluErf(Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        cdf = 0.5 * (1 + torch.erf(x / math.sqrt(2.0)))
        ctx.save_for_backward(x, cdf)
        return x * cdf

    @staticmethod
    def backward(ctx, g):
        x, cdf = ctx.saved_tensors
        return g * (cdf + x * INV_SQRT_2PI * torch.exp(-0.5 * x * x))

    @staticmethod
    def example_inputs():
        return _seeded(402, (3, 4))


class GeluErfDensityTermSign(Function):
    bug = {"kind": "term_sign", "input": "x", "note": "the x·φ(x) term subtracted instead of added"}

    @staticmethod
    def forward(ctx, x):
        cdf = 0.5 * (1 + torch.erf(x / math.sqrt(2.0)))
        ctx.save_for_backward(x, cdf)
        return x * cdf

    @staticmethod
    def backward(ctx, g):
        x, cdf = ctx.saved_tensors
        return g * (cdf - x * INV_SQRT_2PI * torch.exp(-0.5 * x * x))  # BUG

    @staticmethod
    def example_inputs():
        return _seeded(402, (3, 4))


# ------------------------------------------------------------------ mixup soft-target loss
def _mixup_forward(ctx, logits, a, b, lam=0.3):
    classes = logits.shape[1]
    p = torch.softmax(logits, dim=1)
    first = torch.nn.functional.one_hot(a, classes).to(DOUBLE)
    mixed = (1 - lam) * first + lam * torch.nn.functional.one_hot(b, classes).to(DOUBLE)
    ctx.save_for_backward(p, first, mixed)
    return -(mixed * torch.log(p)).sum() / logits.shape[0]


def _mixup_inputs():
    (logits,) = _seeded(403, (4, 5))
    return logits, torch.tensor([0, 3, 1, 4]), torch.tensor([2, 3, 0, 1])


class MixupCrossEntropy(Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, a, b):
        return _mixup_forward(ctx, logits, a, b)

    @staticmethod
    def backward(ctx, g):
        p, first, mixed = ctx.saved_tensors
        return g * (p - mixed) / p.shape[0], None, None

    @staticmethod
    def example_inputs():
        return _mixup_inputs()


class MixupCrossEntropyUsesFirstTarget(Function):
    bug = {"kind": "wrong_variable", "input": "logits", "note": "subtracts the first target's one-hot, not the mix"}

    @staticmethod
    def forward(ctx, logits, a, b):
        return _mixup_forward(ctx, logits, a, b)

    @staticmethod
    def backward(ctx, g):
        p, first, mixed = ctx.saved_tensors
        return g * (p - first) / p.shape[0], None, None  # BUG

    @staticmethod
    def example_inputs():
        return _mixup_inputs()


# ------------------------------------------------------------------------------------ SELU
class SELU(Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = SELU_LAMBDA * torch.where(x > 0, x, SELU_ALPHA * (torch.exp(x) - 1))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return torch.where(x > 0, SELU_LAMBDA * g, g * (y + SELU_LAMBDA * SELU_ALPHA))

    @staticmethod
    def example_inputs():
        return _away_from_zero(404, 3, 4)


class SELUNegativeBranchDropsConstant(Function):
    bug = {"kind": "missing_term", "input": "x", "note": "on x <= 0, λα·eˣ = y + λα is written y"}

    @staticmethod
    def forward(ctx, x):
        y = SELU_LAMBDA * torch.where(x > 0, x, SELU_ALPHA * (torch.exp(x) - 1))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return torch.where(x > 0, SELU_LAMBDA * g, g * y)  # BUG

    @staticmethod
    def example_inputs():
        return _away_from_zero(404, 3, 4)


# ----------------------------------------------------------- a quadratic form, right-applied
class QuadraticRight(Function):
    bug = None

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return torch.einsum("bi,bj,ij->b", x, x, a)

    @staticmethod
    def backward(ctx, g):
        x, a = ctx.saved_tensors
        dx = torch.einsum("b,bj,ij->bi", g, x, a) + torch.einsum("b,bi,ij->bj", g, x, a)
        return dx, torch.einsum("b,bi,bj->ij", g, x, x)

    @staticmethod
    def example_inputs():
        return _seeded(405, (3, 4), (4, 4))


class QuadraticRightOneSide(Function):
    bug = {"kind": "missing_term", "input": "x", "note": "x appears twice; only the A·x half is written"}

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return torch.einsum("bi,bj,ij->b", x, x, a)

    @staticmethod
    def backward(ctx, g):
        x, a = ctx.saved_tensors
        dx = torch.einsum("b,bj,ij->bi", g, x, a)  # BUG
        return dx, torch.einsum("b,bi,bj->ij", g, x, x)

    @staticmethod
    def example_inputs():
        return _seeded(405, (3, 4), (4, 4))


# -------------------------------------------------------------- a temporal (N, C, L) bias
class TemporalBiasNotSummedOverTime(Function):
    bug = {"kind": "not_reduced", "input": "bias", "note": "summed over the batch only: a (C, L) gradient"}

    @staticmethod
    def forward(ctx, x, bias):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y + bias[None, :, None]

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        grad_bias = g.sum(0)  # BUG
        return g * (1 - y * y), grad_bias

    @staticmethod
    def example_inputs():
        return _seeded(406, (2, 3, 5), (3,))


# ------------------------------------------------------------------- a masked softmax
def _masked_forward(ctx, x, keep):
    p = torch.softmax(x.masked_fill(~keep, float("-inf")), dim=-1)
    ctx.save_for_backward(x, p)
    return p


def _masked_inputs():
    (x,) = _seeded(407, (3, 4))
    keep = torch.tensor([[1, 1, 0, 1], [1, 0, 1, 1], [1, 1, 1, 0]], dtype=torch.bool)
    return x, keep


class MaskedSoftmaxRecomputedWithoutMask(Function):
    bug = {"kind": "wrong_variable", "input": "x", "note": "backward recomputes p without the mask; the saved p is right"}

    @staticmethod
    def forward(ctx, x, keep):
        return _masked_forward(ctx, x, keep)

    @staticmethod
    def backward(ctx, g):
        x, _ = ctx.saved_tensors
        p = torch.softmax(x, dim=-1)  # BUG
        return p * (g - (g * p).sum(-1, keepdim=True)), None

    @staticmethod
    def example_inputs():
        return _masked_inputs()
