"""Activations with parameters (PReLU, Swish with beta, ELU with alpha, softplus with beta,
hardtanh), torch-style on gradcli's engine. ``bug = None`` marks a correct twin.
"""
import gradcli as torch

# values kept away from the kink at 0 (no element within 0.05 of it)
ROWS = [[-1.7, 0.4, 1.2, -0.3], [0.8, -0.6, -1.4, 1.9], [-0.2, 1.5, 0.6, -1.1]]


def _rows():
    return torch.tensor(ROWS, requires_grad=True)


# ------------------------------------------------------------------------------------ PReLU
class PReLU(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, alpha):
        ctx.save_for_backward(x, alpha)
        return torch.where(x > 0, x, alpha * x)

    @staticmethod
    def backward(ctx, grad_output):
        x, alpha = ctx.saved_tensors
        grad_x = torch.where(x > 0, grad_output, alpha * grad_output)
        grad_alpha = (grad_output * x * (x <= 0).type_as(x)).sum(0)
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return (_rows(), torch.tensor([0.25, 0.1, 0.3, 0.2], requires_grad=True))


class PReLUAlphaNotReduced(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "alpha",
           "note": "grad_alpha is per element (3x4), not summed over the batch to alpha's (4,)"}

    @staticmethod
    def forward(ctx, x, alpha):
        ctx.save_for_backward(x, alpha)
        return torch.where(x > 0, x, alpha * x)

    @staticmethod
    def backward(ctx, grad_output):
        x, alpha = ctx.saved_tensors
        grad_x = torch.where(x > 0, grad_output, alpha * grad_output)
        grad_alpha = grad_output * x * (x <= 0).type_as(x)  # BUG
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return (_rows(), torch.tensor([0.25, 0.1, 0.3, 0.2], requires_grad=True))


class PReLUNegativeBranchDropsGrad(torch.autograd.Function):
    bug = {"kind": "region", "input": "x", "also": ["ignores_grad_output"],
           "note": "on x <= 0 backward returns alpha instead of alpha * grad_output"}

    @staticmethod
    def forward(ctx, x, alpha):
        ctx.save_for_backward(x, alpha)
        return torch.where(x > 0, x, alpha * x)

    @staticmethod
    def backward(ctx, grad_output):
        x, alpha = ctx.saved_tensors
        grad_x = torch.where(x > 0, grad_output, alpha * torch.ones_like(x))  # BUG
        grad_alpha = (grad_output * x * (x <= 0).type_as(x)).sum(0)
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return (_rows(), torch.tensor([0.25, 0.1, 0.3, 0.2], requires_grad=True))


# ------------------------------------------------------------------------------------ Swish
class Swish(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta=1.5):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, s)
        ctx.beta = beta
        return x * s

    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        return grad_output * (s + ctx.beta * x * s * (1 - s)), None


class SwishForgetsBeta(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "d/dx x sigmoid(beta x) = s + beta x s (1 - s): the beta of the second term is "
                   "missing (a term with the wrong coefficient)"}

    @staticmethod
    def forward(ctx, x, beta=1.5):
        s = torch.sigmoid(beta * x)
        ctx.save_for_backward(x, s)
        ctx.beta = beta
        return x * s

    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        return grad_output * (s + x * s * (1 - s)), None  # BUG


# -------------------------------------------------------------------------------------- ELU
class ELU(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, alpha=0.7):
        y = torch.where(x > 0, x, alpha * (torch.exp(x) - 1))
        ctx.save_for_backward(x, y)
        ctx.alpha = alpha
        return y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return torch.where(x > 0, grad_output, grad_output * (y + ctx.alpha)), None

    @staticmethod
    def example_inputs():
        return (_rows(),)


class ELUForgetsAlpha(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "on x <= 0 the derivative alpha exp(x) = y + alpha is written y",
           # also literally true, and the held-out corpus's label for the same bug: the term
           # alpha * grad_output is missing on that branch
           "also": ["missing_term"]}

    @staticmethod
    def forward(ctx, x, alpha=0.7):
        y = torch.where(x > 0, x, alpha * (torch.exp(x) - 1))
        ctx.save_for_backward(x, y)
        ctx.alpha = alpha
        return y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return torch.where(x > 0, grad_output, grad_output * y), None  # BUG

    @staticmethod
    def example_inputs():
        return (_rows(),)


# --------------------------------------------------------------------------------- softplus
class Softplus(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, beta=2.0):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return torch.log1p(torch.exp(beta * x)) / beta

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(ctx.beta * x), None


class SoftplusExtraBeta(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the 1/beta of the forward is forgotten: beta * sigmoid(beta x), 2x too large"}

    @staticmethod
    def forward(ctx, x, beta=2.0):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return torch.log1p(torch.exp(beta * x)) / beta

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * ctx.beta * torch.sigmoid(ctx.beta * x), None  # BUG


# --------------------------------------------------------------------------------- hardtanh
class HardtanhOneSided(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the pass-through mask is x < 1; clamp(x, -1, 1) also stops x < -1"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.clamp(x, -1.0, 1.0)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x < 1.0).type_as(x)  # BUG

    @staticmethod
    def example_inputs():
        return (torch.tensor([[-1.7, 0.4, 1.2, -0.3], [0.8, -1.6, -1.4, 1.9],
                              [-0.2, 1.5, 0.6, -2.1]], requires_grad=True),)
