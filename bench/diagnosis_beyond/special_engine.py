import gradcli as torch
import math

"""Special functions on gradcli's numpy engine: the Gaussian CDF through erf with learned mean and
scale, and log1p / expm1 based functions (softplus as log1p(e^x), its inverse log(expm1(x)), the
relative exponential expm1(x) / x, a learned log1p(a x^2) penalty)."""

SQRT2 = math.sqrt(2.0)
SQRT2PI = math.sqrt(2.0 * math.pi)


def _cdf_inputs():
    gen = torch.Generator().manual_seed(81)
    x = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    mu = torch.randn(3, 4, generator=gen, dtype=torch.float64) * 0.5
    sigma = torch.rand(3, 4, generator=gen, dtype=torch.float64) + 0.5
    return x.requires_grad_(), mu.requires_grad_(), sigma.requires_grad_()


# ------------------------------------------------------------------------------ Gaussian CDF
class BeyondNormalCdf(torch.autograd.Function):
    """Phi((x - mu) / sigma) = (1 + erf(z / sqrt 2)) / 2."""
    bug = None

    @staticmethod
    def forward(ctx, x, mu, sigma):
        z = (x - mu) / sigma
        ctx.save_for_backward(z, sigma)
        return 0.5 * (1 + torch.erf(z / SQRT2))

    @staticmethod
    def backward(ctx, grad_out):
        z, sigma = ctx.saved_tensors
        pdf = torch.exp(-0.5 * z * z) / SQRT2PI
        gx = grad_out * pdf / sigma
        return gx, -gx, -gx * z

    @staticmethod
    def example_inputs():
        return _cdf_inputs()


class BeyondNormalCdfNoNormaliser(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the density is written as exp(-z^2 / 2) without its 1/sqrt(2 pi) normaliser"}

    @staticmethod
    def forward(ctx, x, mu, sigma):
        z = (x - mu) / sigma
        ctx.save_for_backward(z, sigma)
        return 0.5 * (1 + torch.erf(z / SQRT2))

    @staticmethod
    def backward(ctx, grad_out):
        z, sigma = ctx.saved_tensors
        pdf = torch.exp(-0.5 * z * z)  # BUG
        gx = grad_out * pdf / sigma
        return gx, -gx, -gx * z

    @staticmethod
    def example_inputs():
        return _cdf_inputs()


class BeyondNormalCdfMeanSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "mu",
           "note": "the mean gets the same gradient as x although it enters as x - mu"}

    @staticmethod
    def forward(ctx, x, mu, sigma):
        z = (x - mu) / sigma
        ctx.save_for_backward(z, sigma)
        return 0.5 * (1 + torch.erf(z / SQRT2))

    @staticmethod
    def backward(ctx, grad_out):
        z, sigma = ctx.saved_tensors
        pdf = torch.exp(-0.5 * z * z) / SQRT2PI
        gx = grad_out * pdf / sigma
        gmu = gx  # BUG
        return gx, gmu, -gx * z

    @staticmethod
    def example_inputs():
        return _cdf_inputs()


class BeyondNormalCdfSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "mu",
           "note": "the mean and scale gradients are returned in each other's positions"}

    @staticmethod
    def forward(ctx, x, mu, sigma):
        z = (x - mu) / sigma
        ctx.save_for_backward(z, sigma)
        return 0.5 * (1 + torch.erf(z / SQRT2))

    @staticmethod
    def backward(ctx, grad_out):
        z, sigma = ctx.saved_tensors
        pdf = torch.exp(-0.5 * z * z) / SQRT2PI
        gx = grad_out * pdf / sigma
        return gx, -gx * z, -gx  # BUG

    @staticmethod
    def example_inputs():
        return _cdf_inputs()


# ------------------------------------------------------------------------------ softplus by log1p
class BeyondLog1pExp(torch.autograd.Function):
    """log1p(e^x); its derivative is the logistic e^x / (1 + e^x)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ex = torch.exp(x)
        ctx.save_for_backward(ex)
        return torch.log1p(ex)

    @staticmethod
    def backward(ctx, grad_out):
        (ex,) = ctx.saved_tensors
        return grad_out * ex / (1 + ex)


class BeyondLog1pExpReciprocal(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the derivative is written 1 / (1 + e^x), the logistic of -x, instead of e^x / (1 + e^x)"}

    @staticmethod
    def forward(ctx, x):
        ex = torch.exp(x)
        ctx.save_for_backward(ex)
        return torch.log1p(ex)

    @staticmethod
    def backward(ctx, grad_out):
        (ex,) = ctx.saved_tensors
        return grad_out / (1 + ex)  # BUG


# ------------------------------------------------------------------------------ inverse softplus
def _positive(seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.rand(3, 4, generator=gen, dtype=torch.float64) * 1.5 + 0.3).requires_grad_()


class BeyondLogExpm1(torch.autograd.Function):
    """log(expm1(x)) for x > 0 (inverse softplus): d/dx = e^x / expm1(x) = 1 + 1 / expm1(x)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        em1 = torch.expm1(x)
        ctx.save_for_backward(em1)
        return torch.log(em1)

    @staticmethod
    def backward(ctx, grad_out):
        (em1,) = ctx.saved_tensors
        return grad_out * (1 + 1 / em1)

    @staticmethod
    def example_inputs():
        return (_positive(82),)


class BeyondLogExpm1DropOne(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the derivative 1 + 1/expm1(x) is written without its leading 1 (d log(u)/dx taken as 1/u only)"}

    @staticmethod
    def forward(ctx, x):
        em1 = torch.expm1(x)
        ctx.save_for_backward(em1)
        return torch.log(em1)

    @staticmethod
    def backward(ctx, grad_out):
        (em1,) = ctx.saved_tensors
        return grad_out * (1 / em1)  # BUG

    @staticmethod
    def example_inputs():
        return (_positive(82),)


# ------------------------------------------------------------------------------ relative exponential
class BeyondExprel(torch.autograd.Function):
    """expm1(x) / x, x away from 0: d/dx = (x e^x - expm1(x)) / x^2."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        em1 = torch.expm1(x)
        ctx.save_for_backward(x, em1)
        return em1 / x

    @staticmethod
    def backward(ctx, grad_out):
        x, em1 = ctx.saved_tensors
        return grad_out * (x * (em1 + 1) - em1) / (x * x)

    @staticmethod
    def example_inputs():
        return (_positive(83),)


class BeyondExprelQuotientSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the quotient rule's second term is added: (x e^x + expm1(x)) / x^2"}

    @staticmethod
    def forward(ctx, x):
        em1 = torch.expm1(x)
        ctx.save_for_backward(x, em1)
        return em1 / x

    @staticmethod
    def backward(ctx, grad_out):
        x, em1 = ctx.saved_tensors
        return grad_out * (x * (em1 + 1) + em1) / (x * x)  # BUG

    @staticmethod
    def example_inputs():
        return (_positive(83),)


# ------------------------------------------------------------------------------ log1p penalty
def _penalty_inputs():
    gen = torch.Generator().manual_seed(84)
    x = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    a = torch.rand(3, 4, generator=gen, dtype=torch.float64) + 0.5
    return x.requires_grad_(), a.requires_grad_()


class BeyondLog1pPenalty(torch.autograd.Function):
    """log1p(a x^2), a robust (Cauchy-like) penalty with a learned sharpness a > 0."""
    bug = None

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return torch.log1p(a * x * x)

    @staticmethod
    def backward(ctx, grad_out):
        x, a = ctx.saved_tensors
        denom = 1 + a * x * x
        return grad_out * 2 * a * x / denom, grad_out * x * x / denom

    @staticmethod
    def example_inputs():
        return _penalty_inputs()


class BeyondLog1pPenaltyFrozenSharpness(torch.autograd.Function):
    bug = {"kind": "zero", "input": "a",
           "note": "the sharpness is treated as a fixed hyperparameter and gets a zero gradient although it is learned"}

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return torch.log1p(a * x * x)

    @staticmethod
    def backward(ctx, grad_out):
        x, a = ctx.saved_tensors
        denom = 1 + a * x * x
        return grad_out * 2 * a * x / denom, torch.zeros_like(a)  # BUG

    @staticmethod
    def example_inputs():
        return _penalty_inputs()
