"""Log-densities with learned parameters: von Mises, Student-t (learned degrees of freedom), Laplace,
and a Cauchy (Lorentzian) loss with a learned per-sample scale."""
import math

import torch


# ----------------------------------------------------------------- von Mises
def _von_mises_forward(ctx, x, mu, log_kappa):
    kappa = log_kappa.exp()
    d = x - mu
    ctx.save_for_backward(d, kappa)
    log_i0 = torch.log(torch.special.i0e(kappa)) + kappa
    return kappa * torch.cos(d) - math.log(2 * math.pi) - log_i0


def _bessel_ratio(kappa):
    return torch.special.i1e(kappa) / torch.special.i0e(kappa)  # I1 / I0 = d log I0 / d kappa


class AbroadVonMisesLogPdf(torch.autograd.Function):
    """log VM(x; mu, kappa) = kappa cos(x - mu) - log(2 pi I0(kappa)), kappa = exp(log_kappa)."""

    bug = None

    @staticmethod
    def forward(ctx, x, mu, log_kappa):
        return _von_mises_forward(ctx, x, mu, log_kappa)

    @staticmethod
    def backward(ctx, g):
        d, kappa = ctx.saved_tensors
        grad_x = -g * kappa * torch.sin(d)
        grad_mu = g * kappa * torch.sin(d)
        grad_log_kappa = g * kappa * (torch.cos(d) - _bessel_ratio(kappa))
        return grad_x, grad_mu, grad_log_kappa


class AbroadVonMisesNoNormaliser(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "log_kappa",
           "note": "the derivative of the log normaliser log I0(kappa) is left out of the concentration gradient"}

    @staticmethod
    def forward(ctx, x, mu, log_kappa):
        return _von_mises_forward(ctx, x, mu, log_kappa)

    @staticmethod
    def backward(ctx, g):
        d, kappa = ctx.saved_tensors
        grad_x = -g * kappa * torch.sin(d)
        grad_mu = g * kappa * torch.sin(d)
        grad_log_kappa = g * kappa * torch.cos(d)  # BUG
        return grad_x, grad_mu, grad_log_kappa


class AbroadVonMisesMuSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "mu",
           "note": "d cos(x - mu) / d mu is taken as -sin(x - mu), the same as for x"}

    @staticmethod
    def forward(ctx, x, mu, log_kappa):
        return _von_mises_forward(ctx, x, mu, log_kappa)

    @staticmethod
    def backward(ctx, g):
        d, kappa = ctx.saved_tensors
        grad_x = -g * kappa * torch.sin(d)
        grad_mu = -g * kappa * torch.sin(d)  # BUG
        grad_log_kappa = g * kappa * (torch.cos(d) - _bessel_ratio(kappa))
        return grad_x, grad_mu, grad_log_kappa


class AbroadVonMisesKappaChain(torch.autograd.Function):
    bug = {"kind": "none", "input": "log_kappa",
           "note": "d/d kappa is returned for log_kappa, the chain factor kappa (which varies) is dropped"}

    @staticmethod
    def forward(ctx, x, mu, log_kappa):
        return _von_mises_forward(ctx, x, mu, log_kappa)

    @staticmethod
    def backward(ctx, g):
        d, kappa = ctx.saved_tensors
        grad_x = -g * kappa * torch.sin(d)
        grad_mu = g * kappa * torch.sin(d)
        grad_log_kappa = g * (torch.cos(d) - _bessel_ratio(kappa))  # BUG
        return grad_x, grad_mu, grad_log_kappa


# ----------------------------------------------------------------- Student-t
def _student_t_forward(ctx, x, mu, log_sigma, log_nu):
    sigma, nu = log_sigma.exp(), log_nu.exp()
    z = (x - mu) / sigma
    ctx.save_for_backward(z, sigma, nu)
    return (torch.lgamma((nu + 1) / 2) - torch.lgamma(nu / 2) - 0.5 * torch.log(nu * math.pi)
            - log_sigma - (nu + 1) / 2 * torch.log1p(z * z / nu))


class AbroadStudentTLogPdf(torch.autograd.Function):
    """log t_nu(x; mu, sigma) with sigma = exp(log_sigma) and nu = exp(log_nu) both learned."""

    bug = None

    @staticmethod
    def forward(ctx, x, mu, log_sigma, log_nu):
        return _student_t_forward(ctx, x, mu, log_sigma, log_nu)

    @staticmethod
    def backward(ctx, g):
        z, sigma, nu = ctx.saved_tensors
        score = (nu + 1) * z / (sigma * (nu + z * z))
        grad_x = -g * score
        grad_mu = g * score
        grad_log_sigma = g * ((nu + 1) * z * z / (nu + z * z) - 1)
        d_nu = (0.5 * torch.digamma((nu + 1) / 2) - 0.5 * torch.digamma(nu / 2) - 0.5 / nu
                - 0.5 * torch.log1p(z * z / nu) + (nu + 1) * z * z / (2 * nu * (nu + z * z)))
        grad_log_nu = g * nu * d_nu
        return grad_x, grad_mu, grad_log_sigma, grad_log_nu


class AbroadStudentTHalfScore(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the (nu + 1) / 2 coefficient is kept but the 2 from d z^2 / dz is forgotten, halving the x gradient"}

    @staticmethod
    def forward(ctx, x, mu, log_sigma, log_nu):
        return _student_t_forward(ctx, x, mu, log_sigma, log_nu)

    @staticmethod
    def backward(ctx, g):
        z, sigma, nu = ctx.saved_tensors
        score = (nu + 1) * z / (sigma * (nu + z * z))
        grad_x = -g * (nu + 1) / 2 * z / (sigma * (nu + z * z))  # BUG
        grad_mu = g * score
        grad_log_sigma = g * ((nu + 1) * z * z / (nu + z * z) - 1)
        d_nu = (0.5 * torch.digamma((nu + 1) / 2) - 0.5 * torch.digamma(nu / 2) - 0.5 / nu
                - 0.5 * torch.log1p(z * z / nu) + (nu + 1) * z * z / (2 * nu * (nu + z * z)))
        grad_log_nu = g * nu * d_nu
        return grad_x, grad_mu, grad_log_sigma, grad_log_nu


class AbroadStudentTFixedDf(torch.autograd.Function):
    bug = {"kind": "zero", "input": "log_nu",
           "note": "the degrees of freedom are treated as a fixed hyper-parameter and get None, though nu is learned"}

    @staticmethod
    def forward(ctx, x, mu, log_sigma, log_nu):
        return _student_t_forward(ctx, x, mu, log_sigma, log_nu)

    @staticmethod
    def backward(ctx, g):
        z, sigma, nu = ctx.saved_tensors
        score = (nu + 1) * z / (sigma * (nu + z * z))
        grad_x = -g * score
        grad_mu = g * score
        grad_log_sigma = g * ((nu + 1) * z * z / (nu + z * z) - 1)
        return grad_x, grad_mu, grad_log_sigma, None  # BUG


class AbroadStudentTDfNoDigamma(torch.autograd.Function):
    bug = {"kind": "none", "input": "log_nu",
           "note": "the df gradient is guessed: digamma replaced by log and the 1/(2 nu) and z^2 terms dropped, a different formula"}

    @staticmethod
    def forward(ctx, x, mu, log_sigma, log_nu):
        return _student_t_forward(ctx, x, mu, log_sigma, log_nu)

    @staticmethod
    def backward(ctx, g):
        z, sigma, nu = ctx.saved_tensors
        score = (nu + 1) * z / (sigma * (nu + z * z))
        grad_x = -g * score
        grad_mu = g * score
        grad_log_sigma = g * ((nu + 1) * z * z / (nu + z * z) - 1)
        grad_log_nu = g * nu * 0.5 * (torch.log((nu + 1) / 2) - torch.log(nu / 2) - torch.log1p(z * z / nu))  # BUG
        return grad_x, grad_mu, grad_log_sigma, grad_log_nu


# ----------------------------------------------------------------- Laplace
def _laplace_forward(ctx, x, mu, log_b):
    b = log_b.exp()
    r = x - mu
    ctx.save_for_backward(r, b, log_b)
    return -r.abs() / b - math.log(2.0) - log_b


class AbroadLaplaceLogLik(torch.autograd.Function):
    """log Laplace(x; mu, b) = -|x - mu| / b - log(2 b), b = exp(log_b)."""

    bug = None

    @staticmethod
    def forward(ctx, x, mu, log_b):
        return _laplace_forward(ctx, x, mu, log_b)

    @staticmethod
    def backward(ctx, g):
        r, b, log_b = ctx.saved_tensors
        s = torch.sign(r)
        return -g * s / b, g * s / b, g * (r.abs() / b - 1)


class AbroadLaplaceStepNotSign(torch.autograd.Function):
    bug = {"kind": "region", "input": "mu",
           "note": "d|r|/dr is written as the step (r > 0) instead of sign(r), wrong wherever x < mu"}

    @staticmethod
    def forward(ctx, x, mu, log_b):
        return _laplace_forward(ctx, x, mu, log_b)

    @staticmethod
    def backward(ctx, g):
        r, b, log_b = ctx.saved_tensors
        s = torch.sign(r)
        grad_mu = g * (r > 0).to(r.dtype) / b  # BUG
        return -g * s / b, grad_mu, g * (r.abs() / b - 1)


class AbroadLaplaceLogScaleRaw(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "log_b",
           "note": "the saved log-scale is divided by where the scale b = exp(log_b) is needed"}

    @staticmethod
    def forward(ctx, x, mu, log_b):
        return _laplace_forward(ctx, x, mu, log_b)

    @staticmethod
    def backward(ctx, g):
        r, b, log_b = ctx.saved_tensors
        s = torch.sign(r)
        grad_log_b = g * (r.abs() / log_b - 1)  # BUG
        return -g * s / b, g * s / b, grad_log_b


# ----------------------------------------------------------------- Cauchy loss, learned per-sample scale
def _cauchy_inputs():
    gen = torch.Generator().manual_seed(5)
    r = torch.randn(3, 4, dtype=torch.float64, generator=gen) * 1.5
    c = torch.tensor([0.7, 1.3, 2.1], dtype=torch.float64)
    return r, c


class AbroadCauchyLoss(torch.autograd.Function):
    """sum_j c^2 / 2 * log(1 + (r_ij / c_i)^2) per row i, c a positive per-sample scale."""

    bug = None

    @staticmethod
    def forward(ctx, r, c):
        c2 = (c * c)[:, None]
        ctx.save_for_backward(r, c)
        return (0.5 * c2 * torch.log1p(r * r / c2)).sum(dim=1)

    @staticmethod
    def backward(ctx, g):
        r, c = ctx.saved_tensors
        cc = c[:, None]
        denom = cc * cc + r * r
        grad_r = g[:, None] * r * cc * cc / denom
        grad_c = (g[:, None] * (cc * torch.log1p(r * r / (cc * cc)) - r * r * cc / denom)).sum(dim=1)
        return grad_r, grad_c

    @staticmethod
    def example_inputs():
        return _cauchy_inputs()


class AbroadCauchyLossScaleNoInner(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "c",
           "note": "only the c^2 prefactor is differentiated; the term through r^2 / c^2 inside the log is left out"}

    @staticmethod
    def forward(ctx, r, c):
        c2 = (c * c)[:, None]
        ctx.save_for_backward(r, c)
        return (0.5 * c2 * torch.log1p(r * r / c2)).sum(dim=1)

    @staticmethod
    def backward(ctx, g):
        r, c = ctx.saved_tensors
        cc = c[:, None]
        denom = cc * cc + r * r
        grad_r = g[:, None] * r * cc * cc / denom
        grad_c = (g[:, None] * cc * torch.log1p(r * r / (cc * cc))).sum(dim=1)  # BUG
        return grad_r, grad_c

    @staticmethod
    def example_inputs():
        return _cauchy_inputs()


class AbroadCauchyLossScaleUnsummed(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "c",
           "note": "the per-sample scale's gradient is left per element (3, 4) instead of summed over the row to (3,)"}

    @staticmethod
    def forward(ctx, r, c):
        c2 = (c * c)[:, None]
        ctx.save_for_backward(r, c)
        return (0.5 * c2 * torch.log1p(r * r / c2)).sum(dim=1)

    @staticmethod
    def backward(ctx, g):
        r, c = ctx.saved_tensors
        cc = c[:, None]
        denom = cc * cc + r * r
        grad_r = g[:, None] * r * cc * cc / denom
        grad_c = g[:, None] * (cc * torch.log1p(r * r / (cc * cc)) - r * r * cc / denom)  # BUG
        return grad_r, grad_c

    @staticmethod
    def example_inputs():
        return _cauchy_inputs()
