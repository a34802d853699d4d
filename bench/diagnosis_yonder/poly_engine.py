"""Activations with learnable parameters on gradcli's engine: a quadratic polynomial activation with
learnable coefficients and a parametric softplus (blind corpus yonder). Runs without PyTorch."""
import math

import gradcli as torch


def _poly_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 4, dtype=torch.float64, generator=g),
            torch.randn(3, dtype=torch.float64, generator=g))


def _poly_forward(ctx, x, coef):
    ctx.save_for_backward(x, coef)
    return coef[0] + coef[1] * x + coef[2] * x * x


class YonderPolyActivation(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, coef):
        return _poly_forward(ctx, x, coef)

    @staticmethod
    def backward(ctx, grad_out):
        x, coef = ctx.saved_tensors
        grad_x = grad_out * (coef[1] + 2 * coef[2] * x)
        grad_coef = torch.stack([grad_out.sum(), (grad_out * x).sum(), (grad_out * x * x).sum()])
        return grad_x, grad_coef

    @staticmethod
    def example_inputs():
        return _poly_inputs(0)


class YonderPolyActivationLoop(torch.autograd.Function):
    """The same activation, backward by a loop over the powers of x (a second twin)."""
    bug = None

    @staticmethod
    def forward(ctx, x, coef):
        return _poly_forward(ctx, x, coef)

    @staticmethod
    def backward(ctx, grad_out):
        x, coef = ctx.saved_tensors
        grad_x = torch.zeros_like(x)
        parts = []
        power = torch.ones_like(x)
        for k in range(3):
            parts.append((grad_out * power).sum())
            if k > 0:
                grad_x = grad_x + k * coef[k] * grad_out * x ** (k - 1)
            power = power * x
        return grad_x, torch.stack(parts)

    @staticmethod
    def example_inputs():
        return _poly_inputs(1)


class YonderPolyActivationDropsLinear(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "only the quadratic term differentiated: the coef[1] term of d/dx is left out"}

    @staticmethod
    def forward(ctx, x, coef):
        return _poly_forward(ctx, x, coef)

    @staticmethod
    def backward(ctx, grad_out):
        x, coef = ctx.saved_tensors
        grad_x = grad_out * 2 * coef[2] * x  # BUG
        grad_coef = torch.stack([grad_out.sum(), (grad_out * x).sum(), (grad_out * x * x).sum()])
        return grad_x, grad_coef

    @staticmethod
    def example_inputs():
        return _poly_inputs(2)


class YonderPolyActivationCoefPowers(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "coef",
           "note": "the coefficient gradient sums the powers of x alone, without weighting by grad_out"}

    @staticmethod
    def forward(ctx, x, coef):
        return _poly_forward(ctx, x, coef)

    @staticmethod
    def backward(ctx, grad_out):
        x, coef = ctx.saved_tensors
        grad_x = grad_out * (coef[1] + 2 * coef[2] * x)
        grad_coef = torch.stack([torch.ones_like(x).sum(), x.sum(), (x * x).sum()])  # BUG
        return grad_x, grad_coef

    @staticmethod
    def example_inputs():
        return _poly_inputs(3)


def _sp_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 4, dtype=torch.float64, generator=g),
            torch.rand(1, dtype=torch.float64, generator=g) + 0.8)


def _softplus_forward(ctx, x, beta):
    sp = torch.log1p(torch.exp(beta * x))
    ctx.save_for_backward(x, beta, sp)
    return sp / beta


class YonderParamSoftplus(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        return _softplus_forward(ctx, x, beta)

    @staticmethod
    def backward(ctx, grad_out):
        x, beta, sp = ctx.saved_tensors
        s = torch.sigmoid(beta * x)
        grad_beta = (grad_out * (x * s / beta - sp / (beta * beta))).sum().reshape(beta.shape)
        return grad_out * s, grad_beta

    @staticmethod
    def example_inputs():
        return _sp_inputs(4)


class YonderParamSoftplusNeedsGrad(torch.autograd.Function):
    """The same softplus, grads computed only where needed (a second twin)."""
    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        return _softplus_forward(ctx, x, beta)

    @staticmethod
    def backward(ctx, grad_out):
        x, beta, sp = ctx.saved_tensors
        s = torch.sigmoid(beta * x)
        grad_x = grad_out * s if ctx.needs_input_grad[0] else None
        grad_beta = None
        if ctx.needs_input_grad[1]:
            grad_beta = ((grad_out * x * s).sum() / beta - (grad_out * sp).sum() / (beta * beta))
        return grad_x, grad_beta

    @staticmethod
    def example_inputs():
        return _sp_inputs(5)


class YonderParamSoftplusQuotientSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "beta",
           "note": "d/dbeta of sp(beta x)/beta: the -sp/beta^2 term of the quotient rule added instead"}

    @staticmethod
    def forward(ctx, x, beta):
        return _softplus_forward(ctx, x, beta)

    @staticmethod
    def backward(ctx, grad_out):
        x, beta, sp = ctx.saved_tensors
        s = torch.sigmoid(beta * x)
        grad_beta = (grad_out * (x * s / beta + sp / (beta * beta))).sum().reshape(beta.shape)  # BUG
        return grad_out * s, grad_beta

    @staticmethod
    def example_inputs():
        return _sp_inputs(6)


class YonderParamSoftplusFrozenBeta(torch.autograd.Function):
    bug = {"kind": "zero", "input": "beta",
           "note": "beta treated as a hyper-parameter in backward: its gradient returned as zeros"}

    @staticmethod
    def forward(ctx, x, beta):
        return _softplus_forward(ctx, x, beta)

    @staticmethod
    def backward(ctx, grad_out):
        x, beta, sp = ctx.saved_tensors
        grad_beta = torch.zeros_like(beta)  # BUG
        return grad_out * torch.sigmoid(beta * x), grad_beta

    @staticmethod
    def example_inputs():
        return _sp_inputs(7)
