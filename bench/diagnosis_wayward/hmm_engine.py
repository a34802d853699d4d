import gradcli as torch

"""An HMM's forward pass in log space with missing observations (the emission term of an
unobserved step is 0), its gradient by the backward (beta) pass, and the Gaussian emission
log-densities, laid out state-major (K, T), that feed it. Runs on gradcli's numpy engine."""
import math


def _hmm_alpha(log_pi, log_A, em):
    alphas = [log_pi + em[0]]
    for t in range(1, em.shape[0]):
        alphas.append(torch.logsumexp(alphas[-1].unsqueeze(1) + log_A, dim=0) + em[t])
    return torch.stack(alphas)


def _hmm_beta(log_A, em):
    betas = [torch.zeros(log_A.shape[0], dtype=em.dtype)]
    for t in range(em.shape[0] - 2, -1, -1):
        betas.append(torch.logsumexp(log_A + (em[t + 1] + betas[-1]).unsqueeze(0), dim=1))
    return torch.stack(betas[::-1])


def _hmm_inputs():
    gen = torch.Generator().manual_seed(81)
    log_pi = torch.log_softmax(torch.randn(3, dtype=torch.float64, generator=gen), dim=0)
    log_A = torch.log_softmax(torch.randn(3, 3, dtype=torch.float64, generator=gen), dim=1)
    log_B = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    observed = torch.tensor([True, True, False, True, False])
    return log_pi, log_A, log_B, observed


class WaywardHmmLogLikelihood(torch.autograd.Function):
    """log p(observations) of an HMM: log_pi (K,), log_A (K, K) [from, to], log_B (T, K), observed (T,) bool."""
    bug = None

    @staticmethod
    def forward(ctx, log_pi, log_A, log_B, observed):
        em = torch.where(observed.unsqueeze(1), log_B, torch.zeros_like(log_B))
        alpha = _hmm_alpha(log_pi, log_A, em)
        logp = torch.logsumexp(alpha[-1], dim=0)
        ctx.save_for_backward(log_A, em, alpha, logp, observed)
        return logp

    @staticmethod
    def backward(ctx, grad_logp):
        log_A, em, alpha, logp, observed = ctx.saved_tensors
        beta = _hmm_beta(log_A, em)
        node = torch.exp(alpha + beta - logp)
        grad_B = grad_logp * torch.where(observed.unsqueeze(1), node, torch.zeros_like(node))
        grad_pi = grad_logp * node[0]
        pair = alpha[:-1].unsqueeze(2) + log_A + (em[1:] + beta[1:]).unsqueeze(1) - logp
        grad_A = grad_logp * torch.exp(pair).sum(0)
        return grad_pi, grad_A, grad_B, None

    example_inputs = staticmethod(_hmm_inputs)


class WaywardHmmLogLikelihoodFixedPrior(torch.autograd.Function):
    """HMM log-likelihood; the initial distribution is treated as given."""
    bug = {"kind": "zero", "input": "log_pi",
           "note": "grad for log_pi is returned as zeros, but log p depends on it through alpha[0]"}

    @staticmethod
    def forward(ctx, log_pi, log_A, log_B, observed):
        em = torch.where(observed.unsqueeze(1), log_B, torch.zeros_like(log_B))
        alpha = _hmm_alpha(log_pi, log_A, em)
        logp = torch.logsumexp(alpha[-1], dim=0)
        ctx.save_for_backward(log_A, em, alpha, logp, observed)
        return logp

    @staticmethod
    def backward(ctx, grad_logp):
        log_A, em, alpha, logp, observed = ctx.saved_tensors
        beta = _hmm_beta(log_A, em)
        node = torch.exp(alpha + beta - logp)
        grad_B = grad_logp * torch.where(observed.unsqueeze(1), node, torch.zeros_like(node))
        grad_pi = torch.zeros_like(node[0])  # BUG
        pair = alpha[:-1].unsqueeze(2) + log_A + (em[1:] + beta[1:]).unsqueeze(1) - logp
        grad_A = grad_logp * torch.exp(pair).sum(0)
        return grad_pi, grad_A, grad_B, None

    example_inputs = staticmethod(_hmm_inputs)


class WaywardHmmLogLikelihoodBetaOrder(torch.autograd.Function):
    """HMM log-likelihood with the beta pass written inline."""
    bug = {"kind": "missing_flip", "input": "log_B",
           "note": "betas are appended from t = T-1 down to 0 and stacked without reversing: beta[t] holds beta[T-1-t]; log_pi and log_A are wrong too"}

    @staticmethod
    def forward(ctx, log_pi, log_A, log_B, observed):
        em = torch.where(observed.unsqueeze(1), log_B, torch.zeros_like(log_B))
        alpha = _hmm_alpha(log_pi, log_A, em)
        logp = torch.logsumexp(alpha[-1], dim=0)
        ctx.save_for_backward(log_A, em, alpha, logp, observed)
        return logp

    @staticmethod
    def backward(ctx, grad_logp):
        log_A, em, alpha, logp, observed = ctx.saved_tensors
        betas = [torch.zeros(log_A.shape[0], dtype=em.dtype)]
        for t in range(em.shape[0] - 2, -1, -1):
            betas.append(torch.logsumexp(log_A + (em[t + 1] + betas[-1]).unsqueeze(0), dim=1))
        beta = torch.stack(betas)  # BUG
        node = torch.exp(alpha + beta - logp)
        grad_B = grad_logp * torch.where(observed.unsqueeze(1), node, torch.zeros_like(node))
        grad_pi = grad_logp * node[0]
        pair = alpha[:-1].unsqueeze(2) + log_A + (em[1:] + beta[1:]).unsqueeze(1) - logp
        grad_A = grad_logp * torch.exp(pair).sum(0)
        return grad_pi, grad_A, grad_B, None

    example_inputs = staticmethod(_hmm_inputs)


class WaywardHmmLogLikelihoodMeanTransitions(torch.autograd.Function):
    """HMM log-likelihood; the expected transition counts over time."""
    bug = {"kind": "scale", "input": "log_A",
           "note": "the edge marginals are averaged over the T-1 steps (.mean(0)) instead of summed"}

    @staticmethod
    def forward(ctx, log_pi, log_A, log_B, observed):
        em = torch.where(observed.unsqueeze(1), log_B, torch.zeros_like(log_B))
        alpha = _hmm_alpha(log_pi, log_A, em)
        logp = torch.logsumexp(alpha[-1], dim=0)
        ctx.save_for_backward(log_A, em, alpha, logp, observed)
        return logp

    @staticmethod
    def backward(ctx, grad_logp):
        log_A, em, alpha, logp, observed = ctx.saved_tensors
        beta = _hmm_beta(log_A, em)
        node = torch.exp(alpha + beta - logp)
        grad_B = grad_logp * torch.where(observed.unsqueeze(1), node, torch.zeros_like(node))
        grad_pi = grad_logp * node[0]
        pair = alpha[:-1].unsqueeze(2) + log_A + (em[1:] + beta[1:]).unsqueeze(1) - logp
        grad_A = grad_logp * torch.exp(pair).mean(0)  # BUG
        return grad_pi, grad_A, grad_B, None

    example_inputs = staticmethod(_hmm_inputs)


class WaywardHmmLogLikelihoodUnmaskedEmissions(torch.autograd.Function):
    """HMM log-likelihood; the emission gradient is the state posterior."""
    bug = {"kind": "region", "input": "log_B",
           "note": "the posterior is returned for every step, also the unobserved ones whose log_B the forward replaced by 0"}

    @staticmethod
    def forward(ctx, log_pi, log_A, log_B, observed):
        em = torch.where(observed.unsqueeze(1), log_B, torch.zeros_like(log_B))
        alpha = _hmm_alpha(log_pi, log_A, em)
        logp = torch.logsumexp(alpha[-1], dim=0)
        ctx.save_for_backward(log_A, em, alpha, logp, observed)
        return logp

    @staticmethod
    def backward(ctx, grad_logp):
        log_A, em, alpha, logp, observed = ctx.saved_tensors
        beta = _hmm_beta(log_A, em)
        node = torch.exp(alpha + beta - logp)
        grad_B = grad_logp * node  # BUG
        grad_pi = grad_logp * node[0]
        pair = alpha[:-1].unsqueeze(2) + log_A + (em[1:] + beta[1:]).unsqueeze(1) - logp
        grad_A = grad_logp * torch.exp(pair).sum(0)
        return grad_pi, grad_A, grad_B, None

    example_inputs = staticmethod(_hmm_inputs)


def _gauss_inputs():
    gen = torch.Generator().manual_seed(82)
    return (torch.randn(4, dtype=torch.float64, generator=gen),
            torch.randn(3, dtype=torch.float64, generator=gen),
            torch.randn(3, dtype=torch.float64, generator=gen) * 0.3)


class WaywardGaussianEmissions(torch.autograd.Function):
    """log_B[k, t] = log N(x_t; mu_k, exp(log_sigma_k)^2): x (T,), mu (K,), log_sigma (K,)."""
    bug = None

    @staticmethod
    def forward(ctx, x, mu, log_sigma):
        var = torch.exp(2 * log_sigma)
        diff = x.unsqueeze(0) - mu.unsqueeze(1)
        ctx.save_for_backward(x, mu, var)
        return -0.5 * diff ** 2 / var.unsqueeze(1) - log_sigma.unsqueeze(1) - 0.5 * math.log(2 * math.pi)

    @staticmethod
    def backward(ctx, grad):
        x, mu, var = ctx.saved_tensors
        diff = x.unsqueeze(0) - mu.unsqueeze(1)
        pull = diff / var.unsqueeze(1)
        per_step = (x.unsqueeze(1) - mu.unsqueeze(0)) / var.unsqueeze(0)  # (T, K)
        grad_x = -(grad.T * per_step).sum(1)
        grad_mu = (grad * pull).sum(1)
        grad_log_sigma = (grad * (diff * pull - 1)).sum(1)
        return grad_x, grad_mu, grad_log_sigma

    example_inputs = staticmethod(_gauss_inputs)


class WaywardGaussianEmissionsMeanMap(torch.autograd.Function):
    """Gaussian emissions; the mean's gradient is left per step."""
    bug = {"kind": "not_reduced", "input": "mu",
           "note": "grad_mu is the (K, T) map grad * (x - mu) / var, never summed over the T steps (torch refuses the shape: it raises)"}

    @staticmethod
    def forward(ctx, x, mu, log_sigma):
        var = torch.exp(2 * log_sigma)
        diff = x.unsqueeze(0) - mu.unsqueeze(1)
        ctx.save_for_backward(x, mu, var)
        return -0.5 * diff ** 2 / var.unsqueeze(1) - log_sigma.unsqueeze(1) - 0.5 * math.log(2 * math.pi)

    @staticmethod
    def backward(ctx, grad):
        x, mu, var = ctx.saved_tensors
        diff = x.unsqueeze(0) - mu.unsqueeze(1)
        pull = diff / var.unsqueeze(1)
        per_step = (x.unsqueeze(1) - mu.unsqueeze(0)) / var.unsqueeze(0)
        grad_x = -(grad.T * per_step).sum(1)
        grad_mu = grad * pull  # BUG
        grad_log_sigma = (grad * (diff * pull - 1)).sum(1)
        return grad_x, grad_mu, grad_log_sigma

    example_inputs = staticmethod(_gauss_inputs)


class WaywardGaussianEmissionsLogSigmaSign(torch.autograd.Function):
    """Gaussian emissions; d/d log_sigma of -(x - mu)^2 / (2 sigma^2) - log_sigma."""
    bug = {"kind": "term_sign", "input": "log_sigma",
           "note": "the normaliser's term enters as +1: d(-log_sigma)/d log_sigma is -1, so it is z^2 - 1, not z^2 + 1"}

    @staticmethod
    def forward(ctx, x, mu, log_sigma):
        var = torch.exp(2 * log_sigma)
        diff = x.unsqueeze(0) - mu.unsqueeze(1)
        ctx.save_for_backward(x, mu, var)
        return -0.5 * diff ** 2 / var.unsqueeze(1) - log_sigma.unsqueeze(1) - 0.5 * math.log(2 * math.pi)

    @staticmethod
    def backward(ctx, grad):
        x, mu, var = ctx.saved_tensors
        diff = x.unsqueeze(0) - mu.unsqueeze(1)
        pull = diff / var.unsqueeze(1)
        per_step = (x.unsqueeze(1) - mu.unsqueeze(0)) / var.unsqueeze(0)
        grad_x = -(grad.T * per_step).sum(1)
        grad_mu = (grad * pull).sum(1)
        grad_log_sigma = (grad * (diff * pull + 1)).sum(1)  # BUG
        return grad_x, grad_mu, grad_log_sigma

    example_inputs = staticmethod(_gauss_inputs)


class WaywardGaussianEmissionsStepMajor(torch.autograd.Function):
    """Gaussian emissions; x's gradient is formed in step-major (T, K) layout."""
    bug = {"kind": "missing_reshape", "input": "x", "also": ["transposed"],
           "note": "the state-major (K, T) grad is reshaped to (T, K) instead of transposed before meeting the (T, K) per-step terms"}

    @staticmethod
    def forward(ctx, x, mu, log_sigma):
        var = torch.exp(2 * log_sigma)
        diff = x.unsqueeze(0) - mu.unsqueeze(1)
        ctx.save_for_backward(x, mu, var)
        return -0.5 * diff ** 2 / var.unsqueeze(1) - log_sigma.unsqueeze(1) - 0.5 * math.log(2 * math.pi)

    @staticmethod
    def backward(ctx, grad):
        x, mu, var = ctx.saved_tensors
        diff = x.unsqueeze(0) - mu.unsqueeze(1)
        pull = diff / var.unsqueeze(1)
        per_step = (x.unsqueeze(1) - mu.unsqueeze(0)) / var.unsqueeze(0)
        grad_x = -(grad.reshape(x.shape[0], mu.shape[0]) * per_step).sum(1)  # BUG
        grad_mu = (grad * pull).sum(1)
        grad_log_sigma = (grad * (diff * pull - 1)).sum(1)
        return grad_x, grad_mu, grad_log_sigma

    example_inputs = staticmethod(_gauss_inputs)
