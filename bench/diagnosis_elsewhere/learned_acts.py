"""Activations with learned parameters: Snake x + sin(a x)**2 / a, a learned-beta SiLU
x * sigmoid(beta x), ELU with a learned alpha, Softplus with a learned beta, and squared ReLU.
"""
import torch
import torch.nn.functional as F


def _per_feature_inputs(seed, rows=3, low=0.6, high=1.4):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, 4, generator=gen, dtype=torch.float64)
    p = low + (high - low) * torch.rand(4, generator=gen, dtype=torch.float64)
    return x, p


# ---------------------------------------------------------------------------- Snake
class ElsewhereSnake(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return x + torch.sin(a * x) ** 2 / a

    @staticmethod
    def backward(ctx, grad):
        x, a = ctx.saved_tensors
        grad_x = grad * (1 + torch.sin(2 * a * x))
        grad_a = (grad * (x * torch.sin(2 * a * x) / a - torch.sin(a * x) ** 2 / a ** 2)).sum(0)
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _per_feature_inputs(71)


class ElsewhereSnakeNoQuotientTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "a",
           "note": "d/da of sin(ax)**2 / a keeps the numerator's term but drops -sin(ax)**2 / a**2"}

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return x + torch.sin(a * x) ** 2 / a

    @staticmethod
    def backward(ctx, grad):
        x, a = ctx.saved_tensors
        grad_x = grad * (1 + torch.sin(2 * a * x))
        grad_a = (grad * x * torch.sin(2 * a * x) / a).sum(0)  # BUG
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _per_feature_inputs(71)


class ElsewhereSnakeExpandedProduct(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "grad * (1 + sin(2ax)) is expanded as grad + sin(2ax), the periodic term not multiplied by grad"}

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return x + torch.sin(a * x) ** 2 / a

    @staticmethod
    def backward(ctx, grad):
        x, a = ctx.saved_tensors
        grad_x = grad + torch.sin(2 * a * x)  # BUG
        grad_a = (grad * (x * torch.sin(2 * a * x) / a - torch.sin(a * x) ** 2 / a ** 2)).sum(0)
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _per_feature_inputs(71)


# ------------------------------------------------------------------ learned-beta SiLU
class ElsewhereBetaSiLU(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        y = x * torch.sigmoid(beta * x)
        ctx.save_for_backward(x, beta, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, beta, y = ctx.saved_tensors
        s = torch.sigmoid(beta * x)
        grad_x = grad * (s + beta * y * (1 - s))
        grad_beta = (grad * x * y * (1 - s)).sum(0)
        return grad_x, grad_beta

    @staticmethod
    def example_inputs():
        return _per_feature_inputs(72, rows=4)


class ElsewhereBetaSiLUOutputAsGate(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the (1 - s) factor is written with the saved output y instead of the gate s"}

    @staticmethod
    def forward(ctx, x, beta):
        y = x * torch.sigmoid(beta * x)
        ctx.save_for_backward(x, beta, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, beta, y = ctx.saved_tensors
        s = torch.sigmoid(beta * x)
        grad_x = grad * (s + beta * y * (1 - y))  # BUG
        grad_beta = (grad * x * y * (1 - s)).sum(0)
        return grad_x, grad_beta

    @staticmethod
    def example_inputs():
        return _per_feature_inputs(72, rows=4)


class ElsewhereBetaSiLUBetaAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "beta",
           "note": "the per-feature beta's gradient is summed over features (dim 1) instead of over rows"}

    @staticmethod
    def forward(ctx, x, beta):
        y = x * torch.sigmoid(beta * x)
        ctx.save_for_backward(x, beta, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, beta, y = ctx.saved_tensors
        s = torch.sigmoid(beta * x)
        grad_x = grad * (s + beta * y * (1 - s))
        grad_beta = (grad * x * y * (1 - s)).sum(1)  # BUG
        return grad_x, grad_beta

    @staticmethod
    def example_inputs():
        return _per_feature_inputs(72, rows=4)


# --------------------------------------------------------------------- ELU with alpha
def _elu_inputs():
    x = torch.tensor([[-1.2, 0.7, -0.3, 1.5], [0.4, -2.1, 0.9, -0.6], [-0.8, 1.1, -1.7, 0.2]],
                     dtype=torch.float64)
    alpha = torch.tensor([0.8, 1.0, 1.3, 0.6], dtype=torch.float64)
    return x, alpha


class ElsewhereAlphaELU(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, alpha):
        y = torch.where(x > 0, x, alpha * torch.expm1(x))
        ctx.save_for_backward(x, alpha, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, alpha, y = ctx.saved_tensors
        grad_x = grad * torch.where(x > 0, 1.0, alpha * torch.exp(x))
        grad_alpha = (grad * torch.where(x > 0, 0.0, torch.expm1(x))).sum(0)
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _elu_inputs()


class ElsewhereAlphaELUWrongSide(torch.autograd.Function):
    bug = {"kind": "region", "input": "alpha",
           "note": "the where's branches are swapped: alpha gets expm1(x) on the positive side and nothing on the negative"}

    @staticmethod
    def forward(ctx, x, alpha):
        y = torch.where(x > 0, x, alpha * torch.expm1(x))
        ctx.save_for_backward(x, alpha, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, alpha, y = ctx.saved_tensors
        grad_x = grad * torch.where(x > 0, 1.0, alpha * torch.exp(x))
        grad_alpha = (grad * torch.where(x > 0, torch.expm1(x), 0.0)).sum(0)  # BUG
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _elu_inputs()


class ElsewhereAlphaELUExpOfOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the negative branch's derivative alpha * exp(x) is computed from the saved output y"}

    @staticmethod
    def forward(ctx, x, alpha):
        y = torch.where(x > 0, x, alpha * torch.expm1(x))
        ctx.save_for_backward(x, alpha, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, alpha, y = ctx.saved_tensors
        grad_x = grad * torch.where(x > 0, 1.0, alpha * torch.exp(y))  # BUG
        grad_alpha = (grad * torch.where(x > 0, 0.0, torch.expm1(x))).sum(0)
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _elu_inputs()


# ------------------------------------------------------------- Softplus with beta
def _softplus_inputs():
    gen = torch.Generator().manual_seed(73)
    return torch.randn(3, 4, generator=gen, dtype=torch.float64), torch.tensor(1.6, dtype=torch.float64)


class ElsewhereBetaSoftplus(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        y = F.softplus(beta * x) / beta
        ctx.save_for_backward(x, beta, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, beta, y = ctx.saved_tensors
        s = torch.sigmoid(beta * x)
        grad_x = grad * s
        grad_beta = (grad * (x * s - y) / beta).sum()
        return grad_x, grad_beta

    @staticmethod
    def example_inputs():
        return _softplus_inputs()


class ElsewhereBetaSoftplusChainBeta(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the inner derivative beta is kept although the 1/beta outside cancels it"}

    @staticmethod
    def forward(ctx, x, beta):
        y = F.softplus(beta * x) / beta
        ctx.save_for_backward(x, beta, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, beta, y = ctx.saved_tensors
        s = torch.sigmoid(beta * x)
        grad_x = grad * beta * s  # BUG
        grad_beta = (grad * (x * s - y) / beta).sum()
        return grad_x, grad_beta

    @staticmethod
    def example_inputs():
        return _softplus_inputs()


class ElsewhereBetaSoftplusQuotientSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "beta",
           "note": "the derivative of the 1/beta factor, -y/beta, is added with the wrong sign"}

    @staticmethod
    def forward(ctx, x, beta):
        y = F.softplus(beta * x) / beta
        ctx.save_for_backward(x, beta, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, beta, y = ctx.saved_tensors
        s = torch.sigmoid(beta * x)
        grad_x = grad * s
        grad_beta = (grad * (x * s + y) / beta).sum()  # BUG
        return grad_x, grad_beta

    @staticmethod
    def example_inputs():
        return _softplus_inputs()


# -------------------------------------------------------------------- squared ReLU
class ElsewhereSquaredReLU(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        r = torch.relu(x)
        ctx.save_for_backward(r)
        return r * r

    @staticmethod
    def backward(ctx, grad):
        (r,) = ctx.saved_tensors
        return 2 * r * grad


class ElsewhereSquaredReLUNoTwo(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "d relu(x)**2 / dx = 2 relu(x); the 2 is forgotten"}

    @staticmethod
    def forward(ctx, x):
        r = torch.relu(x)
        ctx.save_for_backward(r)
        return r * r

    @staticmethod
    def backward(ctx, grad):
        (r,) = ctx.saved_tensors
        return r * grad  # BUG


class ElsewhereSquaredReLUNoMask(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the derivative is written 2x as for x**2, without the relu's mask on the negative side"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.relu(x) ** 2

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad  # BUG
