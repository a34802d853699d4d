"""Gaussian pieces of a VAE: the reparameterised sample with fixed noise, the KL between two diagonal
Gaussians, a Gaussian random walk sampled by cumsum, and the KL to N(0, 1) with a clamped log-variance."""
import torch


# ----------------------------------------------------------------- reparameterised sample
class AbroadReparamSample(torch.autograd.Function):
    """z = mu + exp(log_sigma) * eps, eps fixed noise (its gradient is sigma * g)."""

    bug = None

    @staticmethod
    def forward(ctx, mu, log_sigma, eps):
        sigma = log_sigma.exp()
        ctx.save_for_backward(sigma, eps)
        return mu + sigma * eps

    @staticmethod
    def backward(ctx, g):
        sigma, eps = ctx.saved_tensors
        grad_mu = g
        grad_log_sigma = g * sigma * eps
        grad_eps = g * sigma
        return grad_mu, grad_log_sigma, grad_eps


class AbroadReparamSampleSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "mu",
           "note": "the gradients of mu and log_sigma are returned in each other's positions"}

    @staticmethod
    def forward(ctx, mu, log_sigma, eps):
        sigma = log_sigma.exp()
        ctx.save_for_backward(sigma, eps)
        return mu + sigma * eps

    @staticmethod
    def backward(ctx, g):
        sigma, eps = ctx.saved_tensors
        grad_mu = g
        grad_log_sigma = g * sigma * eps
        grad_eps = g * sigma
        return grad_log_sigma, grad_mu, grad_eps  # BUG


class AbroadReparamSampleNoiseConst(torch.autograd.Function):
    bug = {"kind": "zero", "input": "eps",
           "note": "the noise is treated as a constant and gets None, though it is an input whose gradient is sigma * g"}

    @staticmethod
    def forward(ctx, mu, log_sigma, eps):
        sigma = log_sigma.exp()
        ctx.save_for_backward(sigma, eps)
        return mu + sigma * eps

    @staticmethod
    def backward(ctx, g):
        sigma, eps = ctx.saved_tensors
        grad_log_sigma = g * sigma * eps
        return g, grad_log_sigma, None  # BUG


# ----------------------------------------------------------------- KL(N1 || N2), diagonal
def _kl_forward(ctx, mu1, logvar1, mu2, logvar2):
    v1, v2 = logvar1.exp(), logvar2.exp()
    diff = mu1 - mu2
    ctx.save_for_backward(v1, v2, diff)
    return 0.5 * (logvar2 - logvar1 + (v1 + diff ** 2) / v2 - 1).sum(dim=-1)


class AbroadDiagGaussKL(torch.autograd.Function):
    """0.5 * sum_d (log v2 - log v1 + (v1 + (mu1 - mu2)^2) / v2 - 1), one value per row."""

    bug = None

    @staticmethod
    def forward(ctx, mu1, logvar1, mu2, logvar2):
        return _kl_forward(ctx, mu1, logvar1, mu2, logvar2)

    @staticmethod
    def backward(ctx, g):
        v1, v2, diff = ctx.saved_tensors
        g = g.unsqueeze(-1)
        grad_mu1 = g * diff / v2
        grad_mu2 = -g * diff / v2
        grad_logvar1 = g * 0.5 * (v1 / v2 - 1)
        grad_logvar2 = g * 0.5 * (1 - (v1 + diff ** 2) / v2)
        return grad_mu1, grad_logvar1, grad_mu2, grad_logvar2


class AbroadDiagGaussKLVarTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "logvar1",
           "note": "the -1 from differentiating -logvar1 is written +1"}

    @staticmethod
    def forward(ctx, mu1, logvar1, mu2, logvar2):
        return _kl_forward(ctx, mu1, logvar1, mu2, logvar2)

    @staticmethod
    def backward(ctx, g):
        v1, v2, diff = ctx.saved_tensors
        g = g.unsqueeze(-1)
        grad_mu1 = g * diff / v2
        grad_mu2 = -g * diff / v2
        grad_logvar1 = g * 0.5 * (v1 / v2 + 1)  # BUG
        grad_logvar2 = g * 0.5 * (1 - (v1 + diff ** 2) / v2)
        return grad_mu1, grad_logvar1, grad_mu2, grad_logvar2


class AbroadDiagGaussKLMu2Sign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "mu2",
           "note": "the mu2 gradient is copied from mu1's, forgetting that diff = mu1 - mu2 flips it"}

    @staticmethod
    def forward(ctx, mu1, logvar1, mu2, logvar2):
        return _kl_forward(ctx, mu1, logvar1, mu2, logvar2)

    @staticmethod
    def backward(ctx, g):
        v1, v2, diff = ctx.saved_tensors
        g = g.unsqueeze(-1)
        grad_mu1 = g * diff / v2
        grad_mu2 = g * diff / v2  # BUG
        grad_logvar1 = g * 0.5 * (v1 / v2 - 1)
        grad_logvar2 = g * 0.5 * (1 - (v1 + diff ** 2) / v2)
        return grad_mu1, grad_logvar1, grad_mu2, grad_logvar2


class AbroadDiagGaussKLNoMeanTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "logvar2",
           "note": "the (mu1 - mu2)^2 / v2 part of the logvar2 gradient is left out"}

    @staticmethod
    def forward(ctx, mu1, logvar1, mu2, logvar2):
        return _kl_forward(ctx, mu1, logvar1, mu2, logvar2)

    @staticmethod
    def backward(ctx, g):
        v1, v2, diff = ctx.saved_tensors
        g = g.unsqueeze(-1)
        grad_mu1 = g * diff / v2
        grad_mu2 = -g * diff / v2
        grad_logvar1 = g * 0.5 * (v1 / v2 - 1)
        grad_logvar2 = g * 0.5 * (1 - v1 / v2)  # BUG
        return grad_mu1, grad_logvar1, grad_mu2, grad_logvar2


class AbroadDiagGaussKLDropsUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "mu1",
           "note": "the mu1 gradient is the local derivative only, never multiplied by grad_output"}

    @staticmethod
    def forward(ctx, mu1, logvar1, mu2, logvar2):
        return _kl_forward(ctx, mu1, logvar1, mu2, logvar2)

    @staticmethod
    def backward(ctx, g):
        v1, v2, diff = ctx.saved_tensors
        g = g.unsqueeze(-1)
        grad_mu1 = diff / v2  # BUG
        grad_mu2 = -g * diff / v2
        grad_logvar1 = g * 0.5 * (v1 / v2 - 1)
        grad_logvar2 = g * 0.5 * (1 - (v1 + diff ** 2) / v2)
        return grad_mu1, grad_logvar1, grad_mu2, grad_logvar2


# ----------------------------------------------------------------- Gaussian random walk sample
class AbroadRandomWalkSample(torch.autograd.Function):
    """z_t = sum_{s <= t} exp(log_sigma_s) * eps_s along dim 1 (a random walk with fixed noise)."""

    bug = None

    @staticmethod
    def forward(ctx, log_sigma, eps):
        sigma = log_sigma.exp()
        ctx.save_for_backward(sigma, eps)
        return torch.cumsum(sigma * eps, dim=1)

    @staticmethod
    def backward(ctx, g):
        sigma, eps = ctx.saved_tensors
        later = torch.flip(torch.cumsum(torch.flip(g, [1]), dim=1), [1])  # sum over t >= s
        return later * sigma * eps, later * sigma


class AbroadRandomWalkSampleNoFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "eps",
           "note": "the adjoint of cumsum is taken as a forward cumsum of g instead of a reversed one"}

    @staticmethod
    def forward(ctx, log_sigma, eps):
        sigma = log_sigma.exp()
        ctx.save_for_backward(sigma, eps)
        return torch.cumsum(sigma * eps, dim=1)

    @staticmethod
    def backward(ctx, g):
        sigma, eps = ctx.saved_tensors
        later = torch.cumsum(g, dim=1)  # BUG
        return later * sigma * eps, later * sigma


# ----------------------------------------------------------------- KL to N(0, 1), clamped log-variance
LOGVAR_BOUND = 2.5


class AbroadClampedLogvarKL(torch.autograd.Function):
    """0.5 * sum(mu^2 + exp(lv) - 1 - lv) with lv = logvar.clamp(-2.5, 2.5), the usual VAE guard."""

    bug = None

    @staticmethod
    def forward(ctx, mu, logvar):
        lv = logvar.clamp(-LOGVAR_BOUND, LOGVAR_BOUND)
        ctx.save_for_backward(mu, logvar, lv)
        return 0.5 * (mu * mu + lv.exp() - 1 - lv).sum(dim=1)

    @staticmethod
    def backward(ctx, g):
        mu, logvar, lv = ctx.saved_tensors
        inside = (logvar > -LOGVAR_BOUND) & (logvar < LOGVAR_BOUND)
        g = g[:, None]
        return g * mu, g * 0.5 * (lv.exp() - 1) * inside

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(11)
        mu = torch.randn(3, 4, dtype=torch.float64, generator=gen)
        logvar = torch.tensor([[-3.4, -1.2, 0.3, 2.0], [3.1, -0.6, 1.1, -2.0],
                               [0.8, 2.9, -3.0, -0.2]], dtype=torch.float64)
        return mu, logvar


class AbroadClampedLogvarKLLeakyMask(torch.autograd.Function):
    bug = {"kind": "region", "input": "logvar",
           "note": "the clamp mask is computed from the clamped value, so it is always true and gradient leaks past the bounds"}

    @staticmethod
    def forward(ctx, mu, logvar):
        lv = logvar.clamp(-LOGVAR_BOUND, LOGVAR_BOUND)
        ctx.save_for_backward(mu, logvar, lv)
        return 0.5 * (mu * mu + lv.exp() - 1 - lv).sum(dim=1)

    @staticmethod
    def backward(ctx, g):
        mu, logvar, lv = ctx.saved_tensors
        inside = (lv >= -LOGVAR_BOUND) & (lv <= LOGVAR_BOUND)  # BUG
        g = g[:, None]
        return g * mu, g * 0.5 * (lv.exp() - 1) * inside

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(11)
        mu = torch.randn(3, 4, dtype=torch.float64, generator=gen)
        logvar = torch.tensor([[-3.4, -1.2, 0.3, 2.0], [3.1, -0.6, 1.1, -2.0],
                               [0.8, 2.9, -3.0, -0.2]], dtype=torch.float64)
        return mu, logvar


# ----------------------------------------------------------------- reparameterised AR(1) sample path
class AbroadAR1Sample(torch.autograd.Function):
    """z_t = phi * z_{t-1} + eps_t along dim 1 from z_0 = 0, one learned coefficient per series."""

    bug = None

    @staticmethod
    def forward(ctx, phi, eps):
        T = eps.shape[1]
        zs, prev = [], torch.zeros_like(eps[:, 0])
        for t in range(T):
            prev = phi * prev + eps[:, t]
            zs.append(prev)
        z = torch.stack(zs, dim=1)
        ctx.save_for_backward(phi, z)
        return z

    @staticmethod
    def backward(ctx, g):
        phi, z = ctx.saved_tensors
        T = z.shape[1]
        grad_eps = torch.zeros_like(g)
        grad_phi = torch.zeros_like(phi)
        carry = torch.zeros_like(phi)
        for t in reversed(range(T)):
            carry = g[:, t] + phi * carry
            grad_eps[:, t] = carry
            if t > 0:
                grad_phi = grad_phi + carry * z[:, t - 1]
        return grad_phi, grad_eps

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(13)
        return (torch.tensor([0.6, -0.4, 0.9], dtype=torch.float64),
                torch.randn(3, 4, dtype=torch.float64, generator=gen))


class AbroadAR1SampleStaleState(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "phi",
           "note": "the coefficient's gradient multiplies the carried adjoint by z_t instead of the previous state z_{t-1}"}

    @staticmethod
    def forward(ctx, phi, eps):
        T = eps.shape[1]
        zs, prev = [], torch.zeros_like(eps[:, 0])
        for t in range(T):
            prev = phi * prev + eps[:, t]
            zs.append(prev)
        z = torch.stack(zs, dim=1)
        ctx.save_for_backward(phi, z)
        return z

    @staticmethod
    def backward(ctx, g):
        phi, z = ctx.saved_tensors
        T = z.shape[1]
        grad_eps = torch.zeros_like(g)
        grad_phi = torch.zeros_like(phi)
        carry = torch.zeros_like(phi)
        for t in reversed(range(T)):
            carry = g[:, t] + phi * carry
            grad_eps[:, t] = carry
            if t > 0:
                grad_phi = grad_phi + carry * z[:, t]  # BUG
        return grad_phi, grad_eps

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(13)
        return (torch.tensor([0.6, -0.4, 0.9], dtype=torch.float64),
                torch.randn(3, 4, dtype=torch.float64, generator=gen))
