"""Log-densities with hand-written backwards: Normal, Laplace, Student-t, Gamma (lgamma / digamma)
and a two-component Gaussian mixture (bench/diagnosis_hidden)."""
import math

import torch

HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0):
    return torch.randn(*shape, dtype=torch.float64, generator=_gen(seed))


def _positive(*shape, seed=0, low=0.5):
    return torch.rand(*shape, dtype=torch.float64, generator=_gen(seed)) * 2 + low


def _normal_inputs():
    return _randn(3, 4, seed=30), _randn(3, 4, seed=31), 0.3 * _randn(3, 4, seed=32)


class HiddenNormalLogProb(torch.autograd.Function):
    """log N(x; mu, exp(log_sigma)^2), elementwise."""

    bug = None

    @staticmethod
    def forward(ctx, x, mu, log_sigma):
        sigma = log_sigma.exp()
        z = (x - mu) / sigma
        ctx.save_for_backward(z, sigma)
        return -0.5 * z * z - log_sigma - HALF_LOG_2PI

    @staticmethod
    def backward(ctx, grad_out):
        z, sigma = ctx.saved_tensors
        grad_x = -grad_out * z / sigma
        return grad_x, -grad_x, grad_out * (z * z - 1)

    @staticmethod
    def example_inputs():
        return _normal_inputs()


class HiddenNormalLogProbScaleTerm(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "log_sigma",
           "note": "d/dlog_sigma is z^2 + 1: the -1 from -log_sigma enters with the wrong sign"}

    @staticmethod
    def forward(ctx, x, mu, log_sigma):
        sigma = log_sigma.exp()
        z = (x - mu) / sigma
        ctx.save_for_backward(z, sigma)
        return -0.5 * z * z - log_sigma - HALF_LOG_2PI

    @staticmethod
    def backward(ctx, grad_out):
        z, sigma = ctx.saved_tensors
        grad_x = -grad_out * z / sigma
        grad_log_sigma = grad_out * (z * z + 1)  # BUG
        return grad_x, -grad_x, grad_log_sigma

    @staticmethod
    def example_inputs():
        return _normal_inputs()


class HiddenNormalLogProbAbsGrad(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "x's gradient is the Laplace density's -sign(x - mu) / sigma"}

    @staticmethod
    def forward(ctx, x, mu, log_sigma):
        sigma = log_sigma.exp()
        z = (x - mu) / sigma
        ctx.save_for_backward(z, sigma)
        return -0.5 * z * z - log_sigma - HALF_LOG_2PI

    @staticmethod
    def backward(ctx, grad_out):
        z, sigma = ctx.saved_tensors
        grad_x = -grad_out * torch.sign(z) / sigma  # BUG
        grad_mu = grad_out * z / sigma
        return grad_x, grad_mu, grad_out * (z * z - 1)

    @staticmethod
    def example_inputs():
        return _normal_inputs()


def _laplace_inputs():
    return _randn(3, 4, seed=33), _randn(3, 4, seed=34), _positive(3, 4, seed=35)


class HiddenLaplaceLogProb(torch.autograd.Function):
    """log Laplace(x; loc, b) = -|x - loc| / b - log(2 b)."""

    bug = None

    @staticmethod
    def forward(ctx, x, loc, b):
        diff = x - loc
        ctx.save_for_backward(diff, b)
        return -diff.abs() / b - torch.log(2 * b)

    @staticmethod
    def backward(ctx, grad_out):
        diff, b = ctx.saved_tensors
        grad_x = -grad_out * diff.sign() / b
        grad_b = grad_out * (diff.abs() / (b * b) - 1 / b)
        return grad_x, -grad_x, grad_b

    @staticmethod
    def example_inputs():
        return _laplace_inputs()


class HiddenLaplaceLogProbNormaliser(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "b",
           "note": "the scale's gradient drops the -1/b of the log(2b) normaliser"}

    @staticmethod
    def forward(ctx, x, loc, b):
        diff = x - loc
        ctx.save_for_backward(diff, b)
        return -diff.abs() / b - torch.log(2 * b)

    @staticmethod
    def backward(ctx, grad_out):
        diff, b = ctx.saved_tensors
        grad_x = -grad_out * diff.sign() / b
        grad_b = grad_out * diff.abs() / (b * b)  # BUG
        return grad_x, -grad_x, grad_b

    @staticmethod
    def example_inputs():
        return _laplace_inputs()


def _student_t_log_prob(x, nu):
    return (torch.lgamma((nu + 1) / 2) - torch.lgamma(nu / 2) - 0.5 * torch.log(nu * math.pi)
            - (nu + 1) / 2 * torch.log1p(x * x / nu))


class HiddenStudentTLogProb(torch.autograd.Function):
    """Standard Student-t log-density with degrees of freedom nu > 0 (elementwise)."""

    bug = None

    @staticmethod
    def forward(ctx, x, nu):
        ctx.save_for_backward(x, nu)
        return _student_t_log_prob(x, nu)

    @staticmethod
    def backward(ctx, grad_out):
        x, nu = ctx.saved_tensors
        x2 = x * x
        grad_x = -(nu + 1) * x / (nu + x2)
        grad_nu = (0.5 * torch.digamma((nu + 1) / 2) - 0.5 * torch.digamma(nu / 2) - 0.5 / nu
                   - 0.5 * torch.log1p(x2 / nu) + (nu + 1) * x2 / (2 * nu * (nu + x2)))
        return grad_out * grad_x, grad_out * grad_nu

    @staticmethod
    def example_inputs():
        return _randn(3, 4, seed=36), _positive(3, 4, seed=37, low=1.5)


class HiddenStudentTLogProbDigamma(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "nu",
           "note": "the digamma(nu / 2) term of -lgamma(nu / 2) is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x, nu):
        ctx.save_for_backward(x, nu)
        return _student_t_log_prob(x, nu)

    @staticmethod
    def backward(ctx, grad_out):
        x, nu = ctx.saved_tensors
        x2 = x * x
        grad_x = -(nu + 1) * x / (nu + x2)
        grad_nu = (0.5 * torch.digamma((nu + 1) / 2) + 0.5 * torch.digamma(nu / 2) - 0.5 / nu  # BUG
                   - 0.5 * torch.log1p(x2 / nu) + (nu + 1) * x2 / (2 * nu * (nu + x2)))
        return grad_out * grad_x, grad_out * grad_nu

    @staticmethod
    def example_inputs():
        return _randn(3, 4, seed=36), _positive(3, 4, seed=37, low=1.5)


def _gamma_inputs():
    return _positive(3, 4, seed=38), _positive(3, 4, seed=39, low=1.0), _positive(3, 4, seed=40)


class HiddenGammaLogProb(torch.autograd.Function):
    """log Gamma(x; alpha, rate beta) = a log b + (a - 1) log x - b x - lgamma(a)."""

    bug = None

    @staticmethod
    def forward(ctx, x, alpha, beta):
        ctx.save_for_backward(x, alpha, beta)
        return alpha * beta.log() + (alpha - 1) * x.log() - beta * x - torch.lgamma(alpha)

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha, beta = ctx.saved_tensors
        grad_x = (alpha - 1) / x - beta
        grad_alpha = beta.log() + x.log() - torch.digamma(alpha)
        grad_beta = alpha / beta - x
        return grad_out * grad_x, grad_out * grad_alpha, grad_out * grad_beta

    @staticmethod
    def example_inputs():
        return _gamma_inputs()


class HiddenGammaLogProbRate(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "x's gradient subtracts alpha where the rate beta belongs"}

    @staticmethod
    def forward(ctx, x, alpha, beta):
        ctx.save_for_backward(x, alpha, beta)
        return alpha * beta.log() + (alpha - 1) * x.log() - beta * x - torch.lgamma(alpha)

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha, beta = ctx.saved_tensors
        grad_x = (alpha - 1) / x - alpha  # BUG
        grad_alpha = beta.log() + x.log() - torch.digamma(alpha)
        grad_beta = alpha / beta - x
        return grad_out * grad_x, grad_out * grad_alpha, grad_out * grad_beta

    @staticmethod
    def example_inputs():
        return _gamma_inputs()


def _mixture_forward(ctx, x, means, logits):
    log_weights = torch.log_softmax(logits, 0)
    comp = log_weights - 0.5 * (x[:, None] - means) ** 2 - HALF_LOG_2PI  # [N, K]
    out = torch.logsumexp(comp, 1)
    ctx.save_for_backward(x, means, logits, torch.softmax(comp, 1))
    return out


def _mixture_inputs():
    return (_randn(6, seed=41) * 2, torch.tensor([-1.0, 1.5], dtype=torch.float64),
            torch.tensor([0.2, -0.4], dtype=torch.float64))


class HiddenGaussianMixtureLogLik(torch.autograd.Function):
    """Per-point log-likelihood of a 2-component unit-variance Gaussian mixture (logit weights)."""

    bug = None

    @staticmethod
    def forward(ctx, x, means, logits):
        return _mixture_forward(ctx, x, means, logits)

    @staticmethod
    def backward(ctx, grad_out):
        x, means, logits, resp = ctx.saved_tensors
        diff = x[:, None] - means
        g = grad_out[:, None]
        grad_x = -(g * resp * diff).sum(1)
        grad_means = (g * resp * diff).sum(0)
        grad_logits = (g * (resp - torch.softmax(logits, 0))).sum(0)
        return grad_x, grad_means, grad_logits

    @staticmethod
    def example_inputs():
        return _mixture_inputs()


class HiddenGaussianMixtureWeights(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "logits",
           "note": "the logits' gradient sums the responsibilities, dropping -softmax(logits)"}

    @staticmethod
    def forward(ctx, x, means, logits):
        return _mixture_forward(ctx, x, means, logits)

    @staticmethod
    def backward(ctx, grad_out):
        x, means, logits, resp = ctx.saved_tensors
        diff = x[:, None] - means
        g = grad_out[:, None]
        grad_x = -(g * resp * diff).sum(1)
        grad_means = (g * resp * diff).sum(0)
        grad_logits = (g * resp).sum(0)  # BUG
        return grad_x, grad_means, grad_logits

    @staticmethod
    def example_inputs():
        return _mixture_inputs()
