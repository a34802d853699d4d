"""Barrier penalties for inequality constraints x < b: the log-barrier -log(b - x) / t with a learned
per-channel bound, the softplus barrier softplus(beta (x - b)) / beta; and three deliberate
estimators used with them (rounding to a lattice, a reversed gradient, a smoothed feasibility step)."""
import torch
import torch.nn.functional as F

TEMP = 4.0  # barrier temperature t
BETA = 3.0


def _log_barrier_inputs():
    gen = torch.Generator().manual_seed(61)
    x = torch.randn(2, 3, 4, dtype=torch.float64, generator=gen) * 0.5
    b = torch.tensor([2.0, 2.5, 1.8], dtype=torch.float64)
    return x.requires_grad_(), b.requires_grad_()


class BeyondLogBarrier(torch.autograd.Function):
    """-log(b_c - x) / t elementwise, x (N, C, L) strictly below its channel's bound b (C,)."""
    bug = None

    @staticmethod
    def forward(ctx, x, b):
        gap = b[:, None] - x
        ctx.save_for_backward(gap)
        return -torch.log(gap) / TEMP

    @staticmethod
    def backward(ctx, grad_out):
        (gap,) = ctx.saved_tensors
        grad_x = grad_out / (TEMP * gap)
        grad_b = -grad_x.sum(dim=(0, 2))
        return grad_x, grad_b

    @staticmethod
    def example_inputs():
        return _log_barrier_inputs()


class BeyondLogBarrierInplaceLog(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "the gap kept on ctx is overwritten by its own log (log_) to save memory, so backward divides by log(b - x)"}

    @staticmethod
    def forward(ctx, x, b):
        gap = b[:, None] - x
        ctx.gap = gap
        out = gap.log_().neg_()  # BUG
        return out / TEMP

    @staticmethod
    def backward(ctx, grad_out):
        gap = ctx.gap
        grad_x = grad_out / (TEMP * gap)
        grad_b = -grad_x.sum(dim=(0, 2))
        return grad_x, grad_b

    @staticmethod
    def example_inputs():
        return _log_barrier_inputs()


class BeyondLogBarrierBoundSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "b",
           "note": "the bound gradient is taken with the same sign as the x gradient, although b enters as b - x"}

    @staticmethod
    def forward(ctx, x, b):
        gap = b[:, None] - x
        ctx.save_for_backward(gap)
        return -torch.log(gap) / TEMP

    @staticmethod
    def backward(ctx, grad_out):
        (gap,) = ctx.saved_tensors
        grad_x = grad_out / (TEMP * gap)
        grad_b = grad_x.sum(dim=(0, 2))  # BUG
        return grad_x, grad_b

    @staticmethod
    def example_inputs():
        return _log_barrier_inputs()


class BeyondLogBarrierBoundPerPosition(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "b",
           "note": "the per-channel bound gradient is summed over the batch but not over the length, leaving a (C, L) gradient"}

    @staticmethod
    def forward(ctx, x, b):
        gap = b[:, None] - x
        ctx.save_for_backward(gap)
        return -torch.log(gap) / TEMP

    @staticmethod
    def backward(ctx, grad_out):
        (gap,) = ctx.saved_tensors
        grad_x = grad_out / (TEMP * gap)
        grad_b = -grad_x.sum(dim=0)  # BUG
        return grad_x, grad_b

    @staticmethod
    def example_inputs():
        return _log_barrier_inputs()


# ------------------------------------------------------------------------------ softplus barrier
def _softplus_inputs():
    gen = torch.Generator().manual_seed(62)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    b = torch.tensor([0.3, -0.2, 0.1, -0.4], dtype=torch.float64)
    return x.requires_grad_(), b.requires_grad_()


class BeyondSoftplusBarrier(torch.autograd.Function):
    """softplus(beta (x - b)) / beta, a smooth penalty for x above a per-column bound b."""
    bug = None

    @staticmethod
    def forward(ctx, x, b):
        z = BETA * (x - b)
        ctx.save_for_backward(z)
        return F.softplus(z) / BETA

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        grad_x = grad_out * torch.sigmoid(z)
        return grad_x, -grad_x.sum(dim=0)

    @staticmethod
    def example_inputs():
        return _softplus_inputs()


class BeyondSoftplusBarrierSummedGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "grad_out is summed to a scalar before it multiplies sigmoid(z), as if the penalty were always summed"}

    @staticmethod
    def forward(ctx, x, b):
        z = BETA * (x - b)
        ctx.save_for_backward(z)
        return F.softplus(z) / BETA

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        grad_x = grad_out.sum() * torch.sigmoid(z)  # BUG
        return grad_x, -(grad_out * torch.sigmoid(z)).sum(dim=0)

    @staticmethod
    def example_inputs():
        return _softplus_inputs()


class BeyondSoftplusBarrierLinearBranch(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the stable-softplus branch is switched at z > 0 instead of at a large threshold, so every violated constraint gets slope 1"}

    @staticmethod
    def forward(ctx, x, b):
        z = BETA * (x - b)
        ctx.save_for_backward(z)
        return F.softplus(z) / BETA

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        slope = torch.where(z > 0, torch.ones_like(z), torch.sigmoid(z))  # BUG
        grad_x = grad_out * slope
        return grad_x, -(grad_out * torch.sigmoid(z)).sum(dim=0)

    @staticmethod
    def example_inputs():
        return _softplus_inputs()


# ------------------------------------------------------------------------------ deliberate estimators
class BeyondLatticeRoundSTE(torch.autograd.Function):
    """Rounds to the lattice 0.25 Z; backward passes grad_out straight through."""
    bug = {"kind": "straight_through", "input": "x",
           "note": "a straight-through estimator: the rounding's derivative (zero almost everywhere) is replaced by identity"}

    @staticmethod
    def forward(ctx, x):
        return torch.round(x * 4) / 4

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out  # BUG


class BeyondConstraintGradReversal(torch.autograd.Function):
    """Identity in forward; backward negates and scales the gradient (adversarial constraint)."""
    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "a gradient reversal layer: identity forward, -lambda * grad_out backward"}

    @staticmethod
    def forward(ctx, x):
        ctx.lam = 0.5
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_out):
        return -ctx.lam * grad_out  # BUG


class BeyondFeasibleStepSurrogate(torch.autograd.Function):
    """Indicator of a satisfied constraint x < 0; backward uses a sigmoid's slope."""
    bug = {"kind": "smooth_surrogate", "input": "x",
           "note": "a smooth surrogate gradient: the step's derivative is replaced by that of sigmoid(-beta x)"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x < 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(-BETA * x)
        return -grad_out * BETA * s * (1 - s)  # BUG
