"""Mixture densities: a 1-D mixture-of-Gaussians NLL by logsumexp over components, a Beta
log-density and a Dirichlet log-density (lgamma / digamma)."""
import math

import torch

HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _mog_inputs():
    gen = torch.Generator().manual_seed(701)
    return (torch.randn(4, dtype=torch.float64, generator=gen) * 1.5,
            torch.randn(3, dtype=torch.float64, generator=gen),
            torch.tensor([-1.0, 0.2, 1.3], dtype=torch.float64),
            0.3 * torch.randn(3, dtype=torch.float64, generator=gen))


def _joint(x, logits, mu, log_sigma):
    """log w_k + log N(x_n; mu_k, sigma_k): (N, K), and z = (x - mu) / sigma."""
    z = (x[:, None] - mu[None, :]) / log_sigma.exp()[None, :]
    return torch.log_softmax(logits, 0)[None, :] - 0.5 * z ** 2 - log_sigma[None, :] - HALF_LOG_2PI, z


class StrangerMixtureGaussianNLL(torch.autograd.Function):
    """Per point: -log sum_k w_k N(x; mu_k, sigma_k), w = softmax(logits), sigma = exp(log_sigma)."""

    bug = None

    @staticmethod
    def forward(ctx, x, logits, mu, log_sigma):
        joint, z = _joint(x, logits, mu, log_sigma)
        ctx.save_for_backward(joint, z, logits, log_sigma)
        return -torch.logsumexp(joint, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        joint, z, logits, log_sigma = ctx.saved_tensors
        resp = torch.softmax(joint, dim=1)  # responsibilities (N, K)
        g_resp = grad_out[:, None] * resp
        z_over_sigma = z / log_sigma.exp()
        grad_x = (g_resp * z_over_sigma).sum(1)
        grad_mu = -(g_resp * z_over_sigma).sum(0)
        grad_log_sigma = -(g_resp * (z ** 2 - 1)).sum(0)
        grad_logits = -(g_resp.sum(0) - grad_out.sum() * torch.softmax(logits, 0))
        return grad_x, grad_logits, grad_mu, grad_log_sigma

    @staticmethod
    def example_inputs():
        return _mog_inputs()


class StrangerMixtureGaussianNLLResponsibilitiesOverPoints(torch.autograd.Function):
    """Mixture NLL whose backward recomputes the responsibilities from the log-joint."""

    bug = {"kind": "wrong_axis", "input": "mu",
           "note": "the responsibilities are normalised over the points (dim 0) instead of over "
                   "the components (dim 1)"}

    @staticmethod
    def forward(ctx, x, logits, mu, log_sigma):
        joint, _ = _joint(x, logits, mu, log_sigma)
        ctx.save_for_backward(x, logits, mu, log_sigma, joint)
        return -joint.logsumexp(-1)

    @staticmethod
    def backward(ctx, grad_out):
        x, logits, mu, log_sigma, joint = ctx.saved_tensors
        resp = (joint - joint.logsumexp(0, keepdim=True)).exp()  # BUG
        sigma = log_sigma.exp()
        diff = x[:, None] - mu[None, :]
        weighted = grad_out[:, None] * resp
        grad_x = (weighted * diff / sigma ** 2).sum(-1)
        grad_mu = -(weighted * diff / sigma ** 2).sum(0)
        grad_log_sigma = (weighted * (1 - diff ** 2 / sigma ** 2)).sum(0)
        mix = logits.softmax(0)
        grad_logits = mix * grad_out.sum() - weighted.sum(0)
        return grad_x, grad_logits, grad_mu, grad_log_sigma

    @staticmethod
    def example_inputs():
        return _mog_inputs()


class StrangerMixtureGaussianNLLUnnormalisedWeights(torch.autograd.Function):
    """Mixture NLL, backward per component in a loop."""

    bug = {"kind": "missing_term", "input": "logits",
           "note": "log softmax(logits)_k has the -log sum exp(logits) normaliser; its "
                   "+grad_out.sum() * w_k term is missing"}

    @staticmethod
    def forward(ctx, x, logits, mu, log_sigma):
        joint, z = _joint(x, logits, mu, log_sigma)
        resp = torch.softmax(joint, dim=1)
        ctx.save_for_backward(resp, z, log_sigma)
        return -torch.logsumexp(joint, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        resp, z, log_sigma = ctx.saved_tensors
        k_count = resp.shape[1]
        grad_x = torch.zeros_like(grad_out)
        grad_logits = torch.empty(k_count, dtype=grad_out.dtype)
        grad_mu = torch.empty(k_count, dtype=grad_out.dtype)
        grad_log_sigma = torch.empty(k_count, dtype=grad_out.dtype)
        for k in range(k_count):
            r = grad_out * resp[:, k]
            sigma = torch.exp(log_sigma[k])
            grad_x += r * z[:, k] / sigma
            grad_mu[k] = -(r * z[:, k]).sum() / sigma
            grad_log_sigma[k] = (r * (1 - z[:, k] ** 2)).sum()
            grad_logits[k] = -r.sum()  # BUG
        return grad_x, grad_logits, grad_mu, grad_log_sigma

    @staticmethod
    def example_inputs():
        return _mog_inputs()


class StrangerMixtureGaussianNLLPointSign(torch.autograd.Function):
    """Mixture NLL with the point gradient written from the log-density's derivative."""

    bug = {"kind": "sign", "input": "x",
           "note": "d/dx log N = -(x - mu)/sigma^2, so d nll/dx = +sum_k r_k (x - mu)/sigma^2; the "
                   "code keeps the log-density's sign"}

    @staticmethod
    def forward(ctx, x, logits, mu, log_sigma):
        joint, z = _joint(x, logits, mu, log_sigma)
        ctx.save_for_backward(joint, z, logits, log_sigma)
        return -torch.logsumexp(joint, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        joint, z, logits, log_sigma = ctx.saved_tensors
        resp = torch.softmax(joint, dim=1)
        inv_sigma = torch.exp(-log_sigma)
        dlogp_dx = -z * inv_sigma  # d log N / dx per component
        grad_x = grad_out * (resp * dlogp_dx).sum(1)  # BUG
        g_resp = grad_out[:, None] * resp
        grad_mu = -(g_resp * z * inv_sigma).sum(0)
        grad_log_sigma = (g_resp * (1 - z * z)).sum(0)
        grad_logits = grad_out.sum() * torch.softmax(logits, 0) - g_resp.sum(0)
        return grad_x, grad_logits, grad_mu, grad_log_sigma

    @staticmethod
    def example_inputs():
        return _mog_inputs()


def _beta_inputs():
    gen = torch.Generator().manual_seed(702)
    return (torch.rand(5, dtype=torch.float64, generator=gen) * 0.8 + 0.1,
            torch.rand(5, dtype=torch.float64, generator=gen) * 2.5 + 0.5,
            torch.rand(5, dtype=torch.float64, generator=gen) * 2.5 + 0.5)


class StrangerBetaLogDensity(torch.autograd.Function):
    """log Beta(x; a, b), elementwise."""

    bug = None

    @staticmethod
    def forward(ctx, x, a, b):
        ctx.save_for_backward(x, a, b)
        return (torch.lgamma(a + b) - torch.lgamma(a) - torch.lgamma(b)
                + (a - 1) * torch.log(x) + (b - 1) * torch.log1p(-x))

    @staticmethod
    def backward(ctx, grad_out):
        x, a, b = ctx.saved_tensors
        psi_ab = torch.digamma(a + b)
        grad_x = (a - 1) / x - (b - 1) / (1 - x)
        grad_a = psi_ab - torch.digamma(a) + torch.log(x)
        grad_b = psi_ab - torch.digamma(b) + torch.log1p(-x)
        return grad_out * grad_x, grad_out * grad_a, grad_out * grad_b

    @staticmethod
    def example_inputs():
        return _beta_inputs()


class StrangerBetaLogDensityLogForDigamma(torch.autograd.Function):
    """Beta log-density whose author differentiated lgamma as if it were log."""

    bug = {"kind": "none", "input": "a",
           "note": "d lgamma(u)/du is digamma(u); the code uses log(u) (and its 1/u) - an "
                   "entirely wrong formula for a's gradient"}

    @staticmethod
    def forward(ctx, x, a, b):
        ctx.save_for_backward(x, a, b)
        norm = torch.lgamma(a + b) - torch.lgamma(a) - torch.lgamma(b)
        return norm + (a - 1) * x.log() + (b - 1) * (1 - x).log()

    @staticmethod
    def backward(ctx, grad_out):
        x, a, b = ctx.saved_tensors
        grad_a = grad_out * (torch.log(a + b) - torch.log(a) + 1 / a + x.log())  # BUG
        grad_b = grad_out * (torch.digamma(a + b) - torch.digamma(b) + (1 - x).log())
        grad_x = grad_out * ((a - 1) / x - (b - 1) / (1 - x))
        return grad_x, grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _beta_inputs()


class StrangerBetaLogDensityLog1pChain(torch.autograd.Function):
    """Beta log-density with the x-gradient assembled term by term."""

    bug = {"kind": "term_sign", "input": "x",
           "note": "d/dx log(1 - x) = -1/(1 - x); the (b - 1) term is added with a plus sign"}

    @staticmethod
    def forward(ctx, x, a, b):
        log_x, log_1mx = torch.log(x), torch.log1p(-x)
        ctx.save_for_backward(x, a, b, log_x, log_1mx)
        return torch.lgamma(a + b) - torch.lgamma(a) - torch.lgamma(b) + (a - 1) * log_x + (b - 1) * log_1mx

    @staticmethod
    def backward(ctx, grad_out):
        x, a, b, log_x, log_1mx = ctx.saved_tensors
        from_x_term = (a - 1) / x
        from_1mx_term = (b - 1) / (1 - x)
        grad_x = grad_out * (from_x_term + from_1mx_term)  # BUG
        shared = torch.digamma(a + b)
        grad_a = grad_out * (shared - torch.digamma(a) + log_x)
        grad_b = grad_out * (shared - torch.digamma(b) + log_1mx)
        return grad_x, grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _beta_inputs()


def _dirichlet_inputs():
    gen = torch.Generator().manual_seed(703)
    x = torch.softmax(torch.randn(3, 4, dtype=torch.float64, generator=gen), dim=-1)
    alpha = torch.rand(3, 4, dtype=torch.float64, generator=gen) * 2 + 0.5
    return x, alpha


class StrangerDirichletLogDensity(torch.autograd.Function):
    """log Dir(x; alpha) per row of (N, K)."""

    bug = None

    @staticmethod
    def forward(ctx, x, alpha):
        ctx.save_for_backward(x, alpha)
        return (torch.lgamma(alpha.sum(-1)) - torch.lgamma(alpha).sum(-1)
                + ((alpha - 1) * torch.log(x)).sum(-1))

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha = ctx.saved_tensors
        g = grad_out.unsqueeze(-1)
        grad_x = g * (alpha - 1) / x
        grad_alpha = g * (torch.digamma(alpha.sum(-1, keepdim=True)) - torch.digamma(alpha) + torch.log(x))
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _dirichlet_inputs()


class StrangerDirichletLogDensityObservationFrozen(torch.autograd.Function):
    """Dirichlet log-density whose author treated x as observed data."""

    bug = {"kind": "zero", "input": "x",
           "note": "the gradient for x is never computed (None), but x is differentiable here"}

    @staticmethod
    def forward(ctx, x, alpha):
        log_x = x.log()
        ctx.save_for_backward(alpha, log_x)
        concentration = alpha.sum(dim=1)
        return torch.lgamma(concentration) - torch.lgamma(alpha).sum(1) + ((alpha - 1) * log_x).sum(1)

    @staticmethod
    def backward(ctx, grad_out):
        alpha, log_x = ctx.saved_tensors
        grad_alpha = None
        if ctx.needs_input_grad[1]:
            psi_total = torch.digamma(alpha.sum(dim=1, keepdim=True))
            grad_alpha = grad_out[:, None] * (psi_total - torch.digamma(alpha) + log_x)
        grad_x = None  # BUG
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _dirichlet_inputs()
