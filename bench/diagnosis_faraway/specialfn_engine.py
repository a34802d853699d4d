"""Special-function approximations on gradcli's engine: Stirling's log-gamma, a truncated series
for exp(a x), the power series of the Bessel function I0, erf-based normal CDF and survival."""
import math

import gradcli as torch

SQRT2 = math.sqrt(2.0)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
TERMS = 8


def _positive():
    return (torch.tensor([[2.1, 3.4, 5.2, 4.0], [2.7, 6.3, 3.1, 2.4], [4.6, 5.8, 2.2, 3.9]],
                         dtype=torch.float64),)


def _stirling_forward(ctx, x):
    ctx.save_for_backward(x)
    return ((x - 0.5) * torch.log(x) - x + 0.5 * math.log(2 * math.pi)
            + 1.0 / (12.0 * x) - 1.0 / (360.0 * x ** 3))


class FarawayStirlingLogGamma(torch.autograd.Function):
    """log Gamma(x) by Stirling's series with the 1/(12x) and 1/(360x^3) corrections."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _stirling_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        d = torch.log(x) + (x - 0.5) / x - 1.0 - 1.0 / (12.0 * x ** 2) + 1.0 / (120.0 * x ** 4)
        return grad_out * d

    @staticmethod
    def example_inputs():
        return _positive()


class FarawayStirlingLogGammaCorrectionSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "d/dx of 1/(12x) is -1/(12x^2), written with a plus"}

    @staticmethod
    def forward(ctx, x):
        return _stirling_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        d = torch.log(x) + (x - 0.5) / x - 1.0 + 1.0 / (12.0 * x ** 2) + 1.0 / (120.0 * x ** 4)  # BUG
        return grad_out * d

    @staticmethod
    def example_inputs():
        return _positive()


def _series_inputs():
    return (torch.tensor([[0.3, -0.8, 1.1], [0.5, -0.2, 0.9]], dtype=torch.float64),
            torch.tensor([0.7], dtype=torch.float64))


def _series(z, terms):
    total, term = torch.ones_like(z), torch.ones_like(z)
    for n in range(1, terms):
        term = term * z / n
        total = total + term
    return total


class FarawayExpSeries(torch.autograd.Function):
    """exp(a x) by its Taylor series truncated after TERMS terms; a is a learnable rate (1,)."""
    bug = None

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return _series(a * x, TERMS)

    @staticmethod
    def backward(ctx, grad_out):
        x, a = ctx.saved_tensors
        dseries = _series(a * x, TERMS - 1)
        grad_x = grad_out * a * dseries
        grad_a = (grad_out * x * dseries).sum().reshape(1)
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _series_inputs()


class FarawayExpSeriesRateTimesRate(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "a",
           "note": "the rate's chain factor d(ax)/da = x is written as a (copied from grad_x)"}

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return _series(a * x, TERMS)

    @staticmethod
    def backward(ctx, grad_out):
        x, a = ctx.saved_tensors
        dseries = _series(a * x, TERMS - 1)
        grad_x = grad_out * a * dseries
        grad_a = (grad_out * a * dseries).sum().reshape(1)  # BUG
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _series_inputs()


def _bessel_terms(x, first, alternate):
    half = x / 2
    total = torch.zeros_like(x)
    for k in range(TERMS):
        c = ((-1.0) ** k if alternate else 1.0) / (math.factorial(k) * math.factorial(k + first))
        total = total + c * half ** (2 * k + first)
    return total


def _bessel_inputs():
    return (torch.tensor([[0.4, 1.3, -2.1, 2.8], [-0.7, 1.9, 0.2, -1.5]], dtype=torch.float64),)


class FarawayBesselI0(torch.autograd.Function):
    """The modified Bessel function I0 by its power series; I0' = I1."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _bessel_terms(x, 0, False)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * _bessel_terms(x, 1, False)

    @staticmethod
    def example_inputs():
        return _bessel_inputs()


class FarawayBesselI0OrdinaryDerivative(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the derivative of the ordinary Bessel J0 (-J1, alternating series) is used for I0"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _bessel_terms(x, 0, False)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return -grad_out * _bessel_terms(x, 1, True)  # BUG

    @staticmethod
    def example_inputs():
        return _bessel_inputs()


def _cdf_inputs():
    return (torch.tensor([[0.2, -1.1, 0.8, 1.7], [-0.4, 0.6, -2.0, 0.1], [1.2, -0.3, 0.5, -0.9]],
                         dtype=torch.float64),
            torch.tensor([0.1, -0.2, 0.3, 0.0], dtype=torch.float64),
            torch.tensor([0.8, 1.3, 0.6, 1.1], dtype=torch.float64))


def _cdf_forward(ctx, x, mu, sigma):
    z = (x - mu) / sigma
    ctx.save_for_backward(z, sigma)
    return 0.5 * (1 + torch.erf(z / SQRT2))


class FarawayNormalCDF(torch.autograd.Function):
    """Phi((x - mu) / sigma) by erf, with per-column mu and sigma (C,)."""
    bug = None

    @staticmethod
    def forward(ctx, x, mu, sigma):
        return _cdf_forward(ctx, x, mu, sigma)

    @staticmethod
    def backward(ctx, grad_out):
        z, sigma = ctx.saved_tensors
        pdf = INV_SQRT_2PI * torch.exp(-0.5 * z * z)
        grad_x = grad_out * pdf / sigma
        return grad_x, -grad_x.sum(0), -(grad_x * z).sum(0)

    @staticmethod
    def example_inputs():
        return _cdf_inputs()


class FarawayNormalCDFUnnormalisedDensity(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the density is written exp(-z^2/2) without its 1/sqrt(2 pi)"}

    @staticmethod
    def forward(ctx, x, mu, sigma):
        return _cdf_forward(ctx, x, mu, sigma)

    @staticmethod
    def backward(ctx, grad_out):
        z, sigma = ctx.saved_tensors
        pdf = torch.exp(-0.5 * z * z)  # BUG
        grad_x = grad_out * pdf / sigma
        return grad_x, -grad_x.sum(0), -(grad_x * z).sum(0)

    @staticmethod
    def example_inputs():
        return _cdf_inputs()


class FarawayNormalSurvival(torch.autograd.Function):
    """The standard normal survival function 1 - Phi(x) = erfc(x / sqrt 2) / 2."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * (1 - torch.erf(x / SQRT2))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return -grad_out * INV_SQRT_2PI * torch.exp(-0.5 * x * x)

    @staticmethod
    def example_inputs():
        return _bessel_inputs()


class FarawayNormalSurvivalDensitySign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "x",
           "note": "the survival function decreases, but its derivative is written as +pdf (the CDF's)"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * (1 - torch.erf(x / SQRT2))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * INV_SQRT_2PI * torch.exp(-0.5 * x * x)  # BUG

    @staticmethod
    def example_inputs():
        return _bessel_inputs()
