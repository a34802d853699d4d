"""PDE stencils on gradcli's engine: a periodic 1-D Laplacian by roll, a forward difference by
slicing, one explicit heat step with a per-row diffusivity."""
import gradcli as torch


def _lap(u):
    return torch.roll(u, 1, dims=1) + torch.roll(u, -1, dims=1) - 2 * u


class PeriodicLaplacian(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, u):
        return _lap(u)

    @staticmethod
    def backward(ctx, grad):
        return _lap(grad)


class PeriodicLaplacianRolledOverRows(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "u", "note": "the adjoint stencil rolls along dim 0"}

    @staticmethod
    def forward(ctx, u):
        return _lap(u)

    @staticmethod
    def backward(ctx, grad):
        return torch.roll(grad, 1, dims=0) + torch.roll(grad, -1, dims=0) - 2 * grad  # BUG


class ForwardDifference(torch.autograd.Function):
    """d[:, i] = u[:, i + 1] - u[:, i]."""
    bug = None

    @staticmethod
    def forward(ctx, u):
        ctx.width = u.shape[1]
        return u[:, 1:] - u[:, :-1]

    @staticmethod
    def backward(ctx, grad):
        g = torch.zeros(grad.shape[0], ctx.width, dtype=grad.dtype)
        g[:, 1:] += grad
        g[:, :-1] -= grad
        return g


class ForwardDifferenceSecondWriteOverwrites(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "u", "note": "the second stencil tap is assigned, wiping the first tap's contribution"}

    @staticmethod
    def forward(ctx, u):
        ctx.width = u.shape[1]
        return u[:, 1:] - u[:, :-1]

    @staticmethod
    def backward(ctx, grad):
        g = torch.zeros(grad.shape[0], ctx.width, dtype=grad.dtype)
        g[:, 1:] += grad
        g[:, :-1] = -grad  # BUG
        return g


class ForwardDifferenceAdjointNegated(torch.autograd.Function):
    bug = {"kind": "sign", "input": "u", "note": "the taps' signs are swapped in the adjoint"}

    @staticmethod
    def forward(ctx, u):
        ctx.width = u.shape[1]
        return u[:, 1:] - u[:, :-1]

    @staticmethod
    def backward(ctx, grad):
        g = torch.zeros(grad.shape[0], ctx.width, dtype=grad.dtype)
        g[:, 1:] -= grad  # BUG
        g[:, :-1] += grad
        return g


def _heat_inputs():
    gen = torch.Generator().manual_seed(31)
    u = torch.randn(3, 5, generator=gen, dtype=torch.float64)
    alpha = torch.rand(3, generator=gen, dtype=torch.float64) * 0.4 + 0.05
    return u.requires_grad_(), alpha.requires_grad_()


class HeatStep(torch.autograd.Function):
    """u + alpha[:, None] * lap(u)."""
    bug = None

    @staticmethod
    def forward(ctx, u, alpha):
        lap = _lap(u)
        ctx.save_for_backward(lap, alpha)
        return u + alpha[:, None] * lap

    @staticmethod
    def backward(ctx, grad):
        lap, alpha = ctx.saved_tensors
        return grad + alpha[:, None] * _lap(grad), (grad * lap).sum(1)

    @staticmethod
    def example_inputs():
        return _heat_inputs()


class HeatStepDiffusivityNotSummed(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "alpha", "note": "alpha's gradient is left per grid point"}

    @staticmethod
    def forward(ctx, u, alpha):
        lap = _lap(u)
        ctx.save_for_backward(lap, alpha)
        return u + alpha[:, None] * lap

    @staticmethod
    def backward(ctx, grad):
        lap, alpha = ctx.saved_tensors
        return grad + alpha[:, None] * _lap(grad), grad * lap  # BUG

    @staticmethod
    def example_inputs():
        return _heat_inputs()


class HeatStepIdentityDropped(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "u", "note": "the identity part of u + alpha*lap(u) is forgotten"}

    @staticmethod
    def forward(ctx, u, alpha):
        lap = _lap(u)
        ctx.save_for_backward(lap, alpha)
        return u + alpha[:, None] * lap

    @staticmethod
    def backward(ctx, grad):
        lap, alpha = ctx.saved_tensors
        return alpha[:, None] * _lap(grad), (grad * lap).sum(1)  # BUG

    @staticmethod
    def example_inputs():
        return _heat_inputs()
