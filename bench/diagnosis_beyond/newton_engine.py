import gradcli as torch
import math

"""Newton iterations and power means on gradcli's numpy engine: one Newton step for sqrt(a) and
for the cube root of a (the step itself is the Function), and the power mean
(mean_i x_i^p)^(1/p) of positive rows with a learned exponent p."""


def _newton_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    a = torch.rand(3, 4, generator=gen, dtype=torch.float64) * 3 + 0.5
    x = torch.rand(3, 4, generator=gen, dtype=torch.float64) * 1.5 + 0.6
    return x.requires_grad_(), a.requires_grad_()


# ------------------------------------------------------------------------------ Newton step for sqrt
class BeyondNewtonSqrtStep(torch.autograd.Function):
    """x' = (x + a / x) / 2, one Babylonian step towards sqrt(a)."""
    bug = None

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return 0.5 * (x + a / x)

    @staticmethod
    def backward(ctx, grad_out):
        x, a = ctx.saved_tensors
        grad_x = grad_out * 0.5 * (1 - a / (x * x))
        grad_a = grad_out * 0.5 / x
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _newton_inputs(91)


class BeyondNewtonSqrtStepQuotientSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "d(a/x)/dx is taken as +a/x^2, so the step's Jacobian is (1 + a/x^2)/2"}

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return 0.5 * (x + a / x)

    @staticmethod
    def backward(ctx, grad_out):
        x, a = ctx.saved_tensors
        grad_x = grad_out * 0.5 * (1 + a / (x * x))  # BUG
        grad_a = grad_out * 0.5 / x
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _newton_inputs(91)


# ------------------------------------------------------------------------------ Newton step for cbrt
class BeyondNewtonCbrtStep(torch.autograd.Function):
    """x' = x - (x^3 - a) / (3 x^2) = (2 x + a / x^2) / 3."""
    bug = None

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return (2 * x + a / (x * x)) / 3

    @staticmethod
    def backward(ctx, grad_out):
        x, a = ctx.saved_tensors
        grad_x = grad_out * (2 - 2 * a / (x * x * x)) / 3
        grad_a = grad_out / (3 * x * x)
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _newton_inputs(92)


class BeyondNewtonCbrtStepLimitDerivative(torch.autograd.Function):
    bug = {"kind": "none", "input": "a",
           "note": "d x'/da is taken from the limit the iteration converges to, d a^(1/3)/da = a^(-2/3)/3, instead of 1/(3 x^2) of the step"}

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return (2 * x + a / (x * x)) / 3

    @staticmethod
    def backward(ctx, grad_out):
        x, a = ctx.saved_tensors
        grad_x = grad_out * (2 - 2 * a / (x * x * x)) / 3
        grad_a = grad_out * a ** (-2.0 / 3.0) / 3  # BUG
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _newton_inputs(92)


# ------------------------------------------------------------------------------ power mean
def _power_inputs():
    gen = torch.Generator().manual_seed(93)
    x = torch.rand(3, 3, generator=gen, dtype=torch.float64) * 2 + 0.3
    p = torch.tensor([1.7], dtype=torch.float64)
    return x.requires_grad_(), p.requires_grad_()


def _power_mean(ctx, x, p):
    xp = x ** p
    S = xp.mean(dim=1, keepdim=True)
    M = S ** (1 / p)
    ctx.save_for_backward(x, p, M)
    return M


class BeyondPowerMean(torch.autograd.Function):
    """M_b = (mean_i x_bi^p)^(1/p), x > 0, one learned exponent p: (B, 1)."""
    bug = None

    @staticmethod
    def forward(ctx, x, p):
        return _power_mean(ctx, x, p)

    @staticmethod
    def backward(ctx, grad_out):
        x, p, M = ctx.saved_tensors
        N = x.shape[1]
        xp = x ** p
        S = xp.mean(dim=1, keepdim=True)
        grad_x = grad_out * M ** (1 - p) * x ** (p - 1) / N
        dM_dp = M * (-torch.log(S) / (p * p) + (xp * torch.log(x)).mean(dim=1, keepdim=True) / (p * S))
        grad_p = (grad_out * dM_dp).sum().reshape(1)
        return grad_x, grad_p

    @staticmethod
    def example_inputs():
        return _power_inputs()


class BeyondPowerMeanColumnMean(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "backward recomputes the mean of x^p over dim 0 (the batch) instead of dim 1 for the x gradient's M^(1-p)"}

    @staticmethod
    def forward(ctx, x, p):
        return _power_mean(ctx, x, p)

    @staticmethod
    def backward(ctx, grad_out):
        x, p, M = ctx.saved_tensors
        N = x.shape[1]
        xp = x ** p
        S = xp.mean(dim=1, keepdim=True)
        Sc = xp.mean(dim=0, keepdim=True)  # BUG
        grad_x = grad_out * Sc ** ((1 - p) / p) * x ** (p - 1) / N
        dM_dp = M * (-torch.log(S) / (p * p) + (xp * torch.log(x)).mean(dim=1, keepdim=True) / (p * S))
        grad_p = (grad_out * dM_dp).sum().reshape(1)
        return grad_x, grad_p

    @staticmethod
    def example_inputs():
        return _power_inputs()


class BeyondPowerMeanOuterExponent(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "p",
           "note": "the exponent gradient keeps the inner x^p term and drops -log(S)/p^2 from the outer exponent 1/p"}

    @staticmethod
    def forward(ctx, x, p):
        return _power_mean(ctx, x, p)

    @staticmethod
    def backward(ctx, grad_out):
        x, p, M = ctx.saved_tensors
        N = x.shape[1]
        xp = x ** p
        S = xp.mean(dim=1, keepdim=True)
        grad_x = grad_out * M ** (1 - p) * x ** (p - 1) / N
        dM_dp = M * (xp * torch.log(x)).mean(dim=1, keepdim=True) / (p * S)  # BUG
        grad_p = (grad_out * dM_dp).sum().reshape(1)
        return grad_x, grad_p

    @staticmethod
    def example_inputs():
        return _power_inputs()
