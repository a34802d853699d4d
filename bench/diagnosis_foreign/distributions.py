"""Log-densities and reparameterised samples with hand-written backwards: Gaussian NLL with a
learned variance, Laplace, Student-t, log-normal, a Gumbel sample and a Gaussian sample
(BLIND corpus, see README.md)."""
import math

import torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------- Gaussian NLL, learned variance
def _nll_inputs():
    gen = _gen(21)
    mu = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    log_var = 0.5 * torch.randn(3, 4, dtype=torch.float64, generator=gen)
    y = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    return mu, log_var, y


def _nll(mu, log_var, y):
    return 0.5 * (log_var + (y - mu) ** 2 * torch.exp(-log_var)).mean()


class ForeignGaussianNLL(torch.autograd.Function):
    """mean of 0.5 * (log s^2 + (y - mu)^2 / s^2), the network predicting log s^2."""

    bug = None

    @staticmethod
    def forward(ctx, mu, log_var, y):
        ctx.save_for_backward(mu, log_var, y)
        return _nll(mu, log_var, y)

    @staticmethod
    def backward(ctx, grad):
        mu, log_var, y = ctx.saved_tensors
        n = mu.numel()
        precision = torch.exp(-log_var)
        resid = y - mu
        grad_mu = -grad * resid * precision / n
        grad_log_var = grad * 0.5 * (1 - resid * resid * precision) / n
        return grad_mu, grad_log_var, -grad_mu

    @staticmethod
    def example_inputs():
        return _nll_inputs()


class ForeignGaussianNLLVarianceNoConstant(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "log_var",
           "note": "d/dlog_var of 0.5 * log_var is dropped: only the -0.5 r^2 exp(-log_var) part "
                   "of the log-variance gradient is kept"}

    @staticmethod
    def forward(ctx, mu, log_var, y):
        ctx.save_for_backward(mu, log_var, y)
        return _nll(mu, log_var, y)

    @staticmethod
    def backward(ctx, grad):
        mu, log_var, y = ctx.saved_tensors
        scale = grad / mu.numel()
        inv_var = (-log_var).exp()
        sq = (y - mu).pow(2)
        g_log_var = scale * (-0.5 * sq * inv_var)  # BUG
        g_y = scale * (y - mu) * inv_var
        return -g_y, g_log_var, g_y

    @staticmethod
    def example_inputs():
        return _nll_inputs()


class ForeignGaussianNLLMeanUnscaled(torch.autograd.Function):
    bug = {"kind": "scale", "input": "mu",
           "note": "the mean's 1/N is applied to the log-variance and target gradients but "
                   "forgotten for mu"}

    @staticmethod
    def forward(ctx, mu, log_var, y):
        ctx.save_for_backward(mu, log_var, y)
        ctx.count = mu.numel()
        return _nll(mu, log_var, y)

    @staticmethod
    def backward(ctx, grad):
        mu, log_var, y = ctx.saved_tensors
        w = torch.exp(-log_var)
        r = y - mu
        grad_mu = grad * (mu - y) * w  # BUG
        grad_lv = grad * (0.5 - 0.5 * r * r * w) / ctx.count
        grad_y = grad * r * w / ctx.count
        return grad_mu, grad_lv, grad_y

    @staticmethod
    def example_inputs():
        return _nll_inputs()


# ---------------------------------------------------------------------------------- Laplace
def _laplace_inputs():
    gen = _gen(22)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    mu = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    b = torch.rand(3, 4, dtype=torch.float64, generator=gen) + 0.5
    return x, mu, b


class ForeignLaplaceLogProb(torch.autograd.Function):
    """log p(x) = -log(2b) - |x - mu| / b, elementwise."""

    bug = None

    @staticmethod
    def forward(ctx, x, mu, b):
        dev = x - mu
        ctx.save_for_backward(dev, b)
        return -torch.log(2 * b) - dev.abs() / b

    @staticmethod
    def backward(ctx, grad):
        dev, b = ctx.saved_tensors
        s = torch.sign(dev)
        grad_x = -grad * s / b
        grad_b = grad * (dev.abs() / (b * b) - 1 / b)
        return grad_x, -grad_x, grad_b

    @staticmethod
    def example_inputs():
        return _laplace_inputs()


class ForeignLaplaceLogProbLocationSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "mu",
           "note": "the location's gradient takes sign(mu - x) / b where d/dmu of -|x - mu|/b is "
                   "+sign(x - mu) / b"}

    @staticmethod
    def forward(ctx, x, mu, b):
        ctx.save_for_backward(x, mu, b)
        return -torch.log(2 * b) - (x - mu).abs() / b

    @staticmethod
    def backward(ctx, grad):
        x, mu, b = ctx.saved_tensors
        inv_b = 1.0 / b
        grad_x = grad * torch.sign(mu - x) * inv_b
        grad_mu = grad * torch.sign(mu - x) * inv_b  # BUG
        grad_b = grad * inv_b * ((x - mu).abs() * inv_b - 1)
        return grad_x, grad_mu, grad_b

    @staticmethod
    def example_inputs():
        return _laplace_inputs()


# -------------------------------------------------------------------------------- Student-t
def _student_inputs():
    gen = _gen(23)
    x = 2 * torch.randn(3, 4, dtype=torch.float64, generator=gen)
    mu = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    s = torch.rand(3, 4, dtype=torch.float64, generator=gen) + 0.5
    return x, mu, s, 4.0


def _student_logp(x, mu, s, nu):
    z = (x - mu) / s
    const = math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2) - 0.5 * math.log(nu * math.pi)
    return const - torch.log(s) - (nu + 1) / 2 * torch.log1p(z * z / nu)


class ForeignStudentTLogProb(torch.autograd.Function):
    """Student-t log-density with location mu, scale s and a fixed (float) nu."""

    bug = None

    @staticmethod
    def forward(ctx, x, mu, s, nu):
        ctx.save_for_backward(x, mu, s)
        ctx.nu = nu
        return _student_logp(x, mu, s, nu)

    @staticmethod
    def backward(ctx, grad):
        x, mu, s = ctx.saved_tensors
        nu = ctx.nu
        z = (x - mu) / s
        dz = -(nu + 1) * z / (nu + z * z)   # d logp / dz
        grad_x = grad * dz / s
        grad_s = grad * (-dz * z / s - 1 / s)
        return grad_x, -grad_x, grad_s, None

    @staticmethod
    def example_inputs():
        return _student_inputs()


class ForeignStudentTLogProbHalfDropped(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "d/dz of (nu+1)/2 * log1p(z^2/nu) keeps the 2z/nu of the square but not the 1/2 "
                   "in front, so the x (and mu) gradient is twice too large"}

    @staticmethod
    def forward(ctx, x, mu, s, nu):
        ctx.save_for_backward(x, mu, s)
        ctx.nu = nu
        return _student_logp(x, mu, s, nu)

    @staticmethod
    def backward(ctx, grad):
        x, mu, s = ctx.saved_tensors
        nu = ctx.nu
        z = (x - mu) / s
        inner = 1 + z * z / nu
        dlog1p = (2 * z / nu) / inner
        dz = -(nu + 1) * dlog1p  # BUG
        grad_x = grad * dz / s
        grad_s = grad * ((nu + 1) * z * z / (s * (nu + z * z)) - 1 / s)
        return grad_x, -grad_x, grad_s, None

    @staticmethod
    def example_inputs():
        return _student_inputs()


class ForeignStudentTLogProbScaleFromNLL(torch.autograd.Function):
    bug = {"kind": "sign", "input": "s",
           "note": "the scale's gradient is copied from the negative log-likelihood's derivative "
                   "1/s - (nu+1) z^2 / (s (nu + z^2)), i.e. of the wrong sign"}

    @staticmethod
    def forward(ctx, x, mu, s, nu):
        ctx.save_for_backward(x, mu, s)
        ctx.nu = nu
        return _student_logp(x, mu, s, nu)

    @staticmethod
    def backward(ctx, grad):
        x, mu, s = ctx.saved_tensors
        nu = ctx.nu
        z = (x - mu) / s
        w = (nu + 1) / (nu + z * z)
        grad_x = -grad * w * z / s
        nll_ds = 1 / s - w * z * z / s
        grad_s = grad * nll_ds  # BUG
        return grad_x, -grad_x, grad_s, None

    @staticmethod
    def example_inputs():
        return _student_inputs()


# ------------------------------------------------------------------------------- log-normal
def _lognormal_inputs():
    gen = _gen(24)
    x = torch.rand(3, 4, dtype=torch.float64, generator=gen) * 3 + 0.2
    mu = 0.5 * torch.randn(3, 4, dtype=torch.float64, generator=gen)
    sigma = torch.rand(3, 4, dtype=torch.float64, generator=gen) + 0.5
    return x, mu, sigma


class ForeignLogNormalLogProb(torch.autograd.Function):
    """log p(x) of a log-normal: -log x - log sigma - log(2 pi)/2 - (log x - mu)^2 / (2 sigma^2)."""

    bug = None

    @staticmethod
    def forward(ctx, x, mu, sigma):
        lx = torch.log(x)
        u = (lx - mu) / sigma
        ctx.save_for_backward(x, sigma, u)
        return -lx - torch.log(sigma) - 0.5 * math.log(2 * math.pi) - 0.5 * u * u

    @staticmethod
    def backward(ctx, grad):
        x, sigma, u = ctx.saved_tensors
        grad_mu = grad * u / sigma
        grad_x = -grad * (1 + u / sigma) / x
        grad_sigma = grad * (u * u - 1) / sigma
        return grad_x, grad_mu, grad_sigma

    @staticmethod
    def example_inputs():
        return _lognormal_inputs()


class ForeignLogNormalLogProbGaussianResidual(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the x gradient uses the residual x - mu of a Gaussian instead of log x - mu "
                   "(the mu and sigma gradients use the right one)"}

    @staticmethod
    def forward(ctx, x, mu, sigma):
        lx = torch.log(x)
        u = (lx - mu) / sigma
        ctx.save_for_backward(x, mu, sigma, lx)
        return -lx - torch.log(sigma) - 0.5 * math.log(2 * math.pi) - 0.5 * u * u

    @staticmethod
    def backward(ctx, grad):
        x, mu, sigma, lx = ctx.saved_tensors
        var = sigma * sigma
        resid = lx - mu
        grad_mu = grad * resid / var
        grad_sigma = grad * (resid * resid / (var * sigma) - 1 / sigma)
        grad_x = -grad * (1 + (x - mu) / var) / x  # BUG
        return grad_x, grad_mu, grad_sigma

    @staticmethod
    def example_inputs():
        return _lognormal_inputs()


# ---------------------------------------------------------------------- Gumbel reparameterised
def _gumbel_inputs():
    gen = _gen(25)
    mu = torch.randn(3, 3, dtype=torch.float64, generator=gen)
    beta = torch.rand(3, dtype=torch.float64, generator=gen) + 0.5
    u = torch.rand(3, 3, dtype=torch.float64, generator=gen) * 0.9 + 0.05
    return mu, beta, u


class ForeignGumbelSample(torch.autograd.Function):
    """z = mu - beta * log(-log u) with one scale per row and uniform noise u."""

    bug = None

    @staticmethod
    def forward(ctx, mu, beta, u):
        gumbel = -torch.log(-torch.log(u))
        ctx.save_for_backward(beta, u, gumbel)
        return mu + beta[:, None] * gumbel

    @staticmethod
    def backward(ctx, grad):
        beta, u, gumbel = ctx.saved_tensors
        grad_beta = (grad * gumbel).sum(dim=1)
        grad_u = -grad * beta.unsqueeze(1) / (u * torch.log(u))
        return grad, grad_beta, grad_u

    @staticmethod
    def example_inputs():
        return _gumbel_inputs()


class ForeignGumbelSampleScaleUnsummed(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "beta",
           "note": "the per-row scale's gradient is left as the (rows, cols) product grad * gumbel "
                   "instead of being summed over the columns it was broadcast along"}

    @staticmethod
    def forward(ctx, mu, beta, u):
        gumbel = -torch.log(-torch.log(u))
        ctx.save_for_backward(beta, u, gumbel)
        return mu + beta[:, None] * gumbel

    @staticmethod
    def backward(ctx, grad):
        beta, u, gumbel = ctx.saved_tensors
        grad_beta = grad * gumbel  # BUG
        grad_u = grad * beta[:, None] / (-u * u.log())
        return grad.clone(), grad_beta, grad_u

    @staticmethod
    def example_inputs():
        return _gumbel_inputs()


# ------------------------------------------------------------------- Gaussian reparameterised
class ForeignGaussianRsample(torch.autograd.Function):
    """z = mu + exp(log_var / 2) * eps."""

    bug = None

    @staticmethod
    def forward(ctx, mu, log_var, eps):
        std = torch.exp(0.5 * log_var)
        ctx.save_for_backward(std, eps)
        return mu + std * eps

    @staticmethod
    def backward(ctx, grad):
        std, eps = ctx.saved_tensors
        return grad, 0.5 * grad * std * eps, grad * std


class ForeignGaussianRsampleVarianceParam(torch.autograd.Function):
    bug = {"kind": "none", "input": "log_var",
           "note": "the log-variance gradient is eps / (2 std), dz/dvar for a variance "
                   "parameterisation, instead of 0.5 * std * eps: an entirely wrong formula"}

    @staticmethod
    def forward(ctx, mu, log_var, eps):
        std = torch.exp(0.5 * log_var)
        ctx.save_for_backward(std, eps)
        return mu + std * eps

    @staticmethod
    def backward(ctx, grad):
        std, eps = ctx.saved_tensors
        grad_log_var = grad * eps / (2 * std)  # BUG
        return grad, grad_log_var, grad * std
