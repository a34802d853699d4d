"""Numerically stable scalar formulas: softplus with a threshold and a beta, logaddexp,
log-sigmoid, log-cosh and log(1 - exp(-x)) written with log1p / expm1."""
import math

import torch

BETA = 2.0
THRESHOLD = 20.0


def _softplus(x):
    z = BETA * x
    soft = torch.log1p(torch.exp(z.clamp(max=THRESHOLD))) / BETA
    return torch.where(z > THRESHOLD, x, soft)


class WithheldSoftplusThreshold(torch.autograd.Function):
    """softplus_beta(x) = log1p(exp(beta x)) / beta, linear above beta x = 20 (as torch's)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _softplus(x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * torch.sigmoid(BETA * x)


class WithheldSoftplusThresholdBetaTwice(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the inner beta of exp(beta x) is applied but the outer 1/beta is forgotten"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _softplus(x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * BETA * torch.sigmoid(BETA * x)  # BUG


class WithheldSoftplusThresholdInplace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "forward saves z = beta x, then exp_() overwrites the saved z in place"}

    @staticmethod
    def forward(ctx, x):
        z = BETA * x
        ctx.save_for_backward(z)
        soft = z.clamp_(max=THRESHOLD).exp_().log1p_() / BETA  # BUG
        return torch.where(BETA * x > THRESHOLD, x, soft)

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        return grad_out * torch.sigmoid(z)


class WithheldLogAddExp(torch.autograd.Function):
    """log(exp(a) + exp(b)) = max(a, b) + log1p(exp(-|a - b|))."""
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a - b)
        return torch.maximum(a, b) + torch.log1p(torch.exp(-(a - b).abs()))

    @staticmethod
    def backward(ctx, grad_out):
        (delta,) = ctx.saved_tensors
        return grad_out * torch.sigmoid(delta), grad_out * torch.sigmoid(-delta)


class WithheldLogAddExpWeightsSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "a",
           "note": "each operand receives the other's softmax weight"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a - b)
        return torch.maximum(a, b) + torch.log1p(torch.exp(-(a - b).abs()))

    @staticmethod
    def backward(ctx, grad_out):
        (delta,) = ctx.saved_tensors
        return grad_out * torch.sigmoid(-delta), grad_out * torch.sigmoid(delta)  # BUG


class WithheldLogSigmoid(torch.autograd.Function):
    """log sigmoid(x) = min(x, 0) - log1p(exp(-|x|))."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(max=0) - torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * torch.sigmoid(-x)


class WithheldLogSigmoidSoftplusGrad(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the backward is softplus(x)'s derivative sigmoid(x), not log-sigmoid's sigmoid(-x)"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(max=0) - torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * torch.sigmoid(x)  # BUG


class WithheldLogCosh(torch.autograd.Function):
    """log cosh(x) = |x| + log1p(exp(-2|x|)) - log 2."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.abs() + torch.log1p(torch.exp(-2 * x.abs())) - math.log(2.0)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * torch.tanh(x)


class WithheldLogCoshAbsOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "differentiates |x| and drops the log1p(exp(-2|x|)) correction term"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.abs() + torch.log1p(torch.exp(-2 * x.abs())) - math.log(2.0)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * x.sign()  # BUG


def _positive_inputs():
    gen = torch.Generator().manual_seed(17)
    return ((torch.rand(3, 4, dtype=torch.float64, generator=gen) * 2 + 0.3).requires_grad_(),)


class WithheldLog1mExp(torch.autograd.Function):
    """log(1 - exp(-x)) for x > 0, as log(-expm1(-x)); derivative 1 / expm1(x)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log(-torch.expm1(-x))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out / torch.expm1(x)

    @staticmethod
    def example_inputs():
        return _positive_inputs()


class WithheldLog1mExpNoUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "returns the local derivative 1 / expm1(x) without multiplying by grad_out"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log(-torch.expm1(-x))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return 1.0 / torch.expm1(x)  # BUG

    @staticmethod
    def example_inputs():
        return _positive_inputs()
