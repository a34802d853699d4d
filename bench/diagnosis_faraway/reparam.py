"""Probabilistic pieces with the noise given as an input: Gaussian reparameterisation, a logistic
sample, a Gumbel-softmax with a temperature, the KL divergence between two diagonal Gaussians, a
Bernoulli log-likelihood with logits."""
import torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _gauss_inputs():
    g = _gen(21)
    return (torch.randn(4, 3, dtype=torch.float64, generator=g),
            torch.randn(4, 3, dtype=torch.float64, generator=g) * 0.5,
            torch.randn(4, 3, dtype=torch.float64, generator=g))


def _gauss_forward(ctx, mu, log_sigma, eps):
    sigma = log_sigma.exp()
    z = mu + sigma * eps
    ctx.save_for_backward(sigma, eps, z)
    return z


class FarawayGaussianSample(torch.autograd.Function):
    """z = mu + exp(log_sigma) * eps with the noise eps an input."""
    bug = None

    @staticmethod
    def forward(ctx, mu, log_sigma, eps):
        return _gauss_forward(ctx, mu, log_sigma, eps)

    @staticmethod
    def backward(ctx, grad_z):
        sigma, eps, z = ctx.saved_tensors
        grad_mu = grad_z if ctx.needs_input_grad[0] else None
        grad_log_sigma = grad_z * sigma * eps
        grad_eps = grad_z * sigma
        return grad_mu, grad_log_sigma, grad_eps

    @staticmethod
    def example_inputs():
        return _gauss_inputs()


class FarawayGaussianSampleScaleFromSample(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "log_sigma",
           "note": "log_sigma's gradient multiplies by the saved sample z where the noise eps belongs"}

    @staticmethod
    def forward(ctx, mu, log_sigma, eps):
        return _gauss_forward(ctx, mu, log_sigma, eps)

    @staticmethod
    def backward(ctx, grad_z):
        sigma, eps, z = ctx.saved_tensors
        grad_mu = grad_z if ctx.needs_input_grad[0] else None
        grad_log_sigma = grad_z * sigma * z  # BUG
        grad_eps = grad_z * sigma
        return grad_mu, grad_log_sigma, grad_eps

    @staticmethod
    def example_inputs():
        return _gauss_inputs()


class FarawayGaussianSampleMeanOnes(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "mu",
           "note": "dz/dmu = 1 is returned as a tensor of ones, not multiplied by grad_z"}

    @staticmethod
    def forward(ctx, mu, log_sigma, eps):
        return _gauss_forward(ctx, mu, log_sigma, eps)

    @staticmethod
    def backward(ctx, grad_z):
        sigma, eps, z = ctx.saved_tensors
        grad_mu = torch.ones_like(z) if ctx.needs_input_grad[0] else None  # BUG
        grad_log_sigma = grad_z * sigma * eps
        grad_eps = grad_z * sigma
        return grad_mu, grad_log_sigma, grad_eps

    @staticmethod
    def example_inputs():
        return _gauss_inputs()


def _logistic_inputs():
    g = _gen(22)
    return (torch.randn(4, 3, dtype=torch.float64, generator=g),
            torch.rand(3, dtype=torch.float64, generator=g) + 0.5,
            torch.rand(4, 3, dtype=torch.float64, generator=g) * 0.8 + 0.1)


class FarawayLogisticSample(torch.autograd.Function):
    """z = mu + s * logit(u): a logistic sample from a uniform u in (0, 1); s per column."""
    bug = None

    @staticmethod
    def forward(ctx, mu, s, u):
        noise = torch.log(u) - torch.log1p(-u)
        ctx.save_for_backward(s, u, noise)
        return mu + s * noise

    @staticmethod
    def backward(ctx, grad_z):
        s, u, noise = ctx.saved_tensors
        grad_s = (grad_z * noise).sum(0)
        grad_u = grad_z * s * (1 / u + 1 / (1 - u))
        return grad_z, grad_s, grad_u

    @staticmethod
    def example_inputs():
        return _logistic_inputs()


class FarawayLogisticSampleScaledInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "s",
           "note": "the saved logistic noise is scaled by s in place to build the output, so backward reads s*noise"}

    @staticmethod
    def forward(ctx, mu, s, u):
        noise = torch.log(u) - torch.log1p(-u)
        ctx.save_for_backward(s, u, noise)
        out = noise.mul_(s)  # BUG
        return mu + out

    @staticmethod
    def backward(ctx, grad_z):
        s, u, noise = ctx.saved_tensors
        grad_s = (grad_z * noise).sum(0)
        grad_u = grad_z * s * (1 / u + 1 / (1 - u))
        return grad_z, grad_s, grad_u

    @staticmethod
    def example_inputs():
        return _logistic_inputs()


def _gumbel_inputs():
    g = _gen(23)
    u = torch.rand(3, 5, dtype=torch.float64, generator=g) * 0.9 + 0.05
    return (torch.randn(3, 5, dtype=torch.float64, generator=g),
            -torch.log(-torch.log(u)),
            torch.tensor([0.7], dtype=torch.float64))


def _gumbel_forward(ctx, logits, gumbel, tau):
    a = logits + gumbel
    y = torch.softmax(a / tau, dim=-1)
    ctx.save_for_backward(a, y, tau)
    return y


class FarawayGumbelSoftmax(torch.autograd.Function):
    """softmax((logits + gumbel) / tau) with the Gumbel noise given and a learnable temperature."""
    bug = None

    @staticmethod
    def forward(ctx, logits, gumbel, tau):
        return _gumbel_forward(ctx, logits, gumbel, tau)

    @staticmethod
    def backward(ctx, grad_y):
        a, y, tau = ctx.saved_tensors
        grad_scaled = y * (grad_y - (grad_y * y).sum(-1, keepdim=True))
        grad_a = grad_scaled / tau
        grad_tau = -(grad_scaled * a).sum().reshape(1) / tau ** 2
        return grad_a, grad_a, grad_tau

    @staticmethod
    def example_inputs():
        return _gumbel_inputs()


class FarawayGumbelSoftmaxNoTemperature(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits",
           "note": "the chain factor 1/tau of the scaled logits is left out of the logits' gradient"}

    @staticmethod
    def forward(ctx, logits, gumbel, tau):
        return _gumbel_forward(ctx, logits, gumbel, tau)

    @staticmethod
    def backward(ctx, grad_y):
        a, y, tau = ctx.saved_tensors
        grad_scaled = y * (grad_y - (grad_y * y).sum(-1, keepdim=True))
        grad_logits = grad_scaled  # BUG
        grad_gumbel = grad_scaled / tau
        grad_tau = -(grad_scaled * a).sum().reshape(1) / tau ** 2
        return grad_logits, grad_gumbel, grad_tau

    @staticmethod
    def example_inputs():
        return _gumbel_inputs()


class FarawayGumbelSoftmaxBatchDot(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "logits",
           "note": "the softmax Jacobian's <g, y> is reduced over the batch (dim 0), not over the classes"}

    @staticmethod
    def forward(ctx, logits, gumbel, tau):
        return _gumbel_forward(ctx, logits, gumbel, tau)

    @staticmethod
    def backward(ctx, grad_y):
        a, y, tau = ctx.saved_tensors
        grad_scaled = y * (grad_y - (grad_y * y).sum(0, keepdim=True))  # BUG
        grad_a = grad_scaled / tau
        grad_tau = -(grad_scaled * a).sum().reshape(1) / tau ** 2
        return grad_a, grad_a, grad_tau

    @staticmethod
    def example_inputs():
        return _gumbel_inputs()


def _kl_inputs():
    g = _gen(24)
    return tuple(torch.randn(3, 4, dtype=torch.float64, generator=g) * 0.7 for _ in range(4))


def _kl_forward(ctx, mu_q, log_sq, mu_p, log_sp):
    var_q, var_p = torch.exp(2 * log_sq), torch.exp(2 * log_sp)
    diff = mu_q - mu_p
    ctx.save_for_backward(var_q, var_p, diff)
    return (log_sp - log_sq + (var_q + diff ** 2) / (2 * var_p) - 0.5).sum(-1)


class FarawayDiagGaussianKL(torch.autograd.Function):
    """KL(q || p) for diagonal Gaussians given by means and log standard deviations; one per row."""
    bug = None

    @staticmethod
    def forward(ctx, mu_q, log_sq, mu_p, log_sp):
        return _kl_forward(ctx, mu_q, log_sq, mu_p, log_sp)

    @staticmethod
    def backward(ctx, grad_kl):
        var_q, var_p, diff = ctx.saved_tensors
        g = grad_kl.unsqueeze(-1)
        grad_mu_q = g * diff / var_p
        grad_log_sq = g * (var_q / var_p - 1)
        grad_log_sp = g * (1 - (var_q + diff ** 2) / var_p)
        return grad_mu_q, grad_log_sq, -grad_mu_q, grad_log_sp

    @staticmethod
    def example_inputs():
        return _kl_inputs()


class FarawayDiagGaussianKLEntropySign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "log_sq",
           "note": "the -log sigma_q term's derivative -1 is written as +1"}

    @staticmethod
    def forward(ctx, mu_q, log_sq, mu_p, log_sp):
        return _kl_forward(ctx, mu_q, log_sq, mu_p, log_sp)

    @staticmethod
    def backward(ctx, grad_kl):
        var_q, var_p, diff = ctx.saved_tensors
        g = grad_kl.unsqueeze(-1)
        grad_mu_q = g * diff / var_p
        grad_log_sq = g * (var_q / var_p + 1)  # BUG
        grad_log_sp = g * (1 - (var_q + diff ** 2) / var_p)
        return grad_mu_q, grad_log_sq, -grad_mu_q, grad_log_sp

    @staticmethod
    def example_inputs():
        return _kl_inputs()


class FarawayDiagGaussianKLPriorScaleNoMean(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "log_sp",
           "note": "the prior scale's gradient forgets the (mu_q - mu_p)^2 / sigma_p^2 part"}

    @staticmethod
    def forward(ctx, mu_q, log_sq, mu_p, log_sp):
        return _kl_forward(ctx, mu_q, log_sq, mu_p, log_sp)

    @staticmethod
    def backward(ctx, grad_kl):
        var_q, var_p, diff = ctx.saved_tensors
        g = grad_kl.unsqueeze(-1)
        grad_mu_q = g * diff / var_p
        grad_log_sq = g * (var_q / var_p - 1)
        grad_log_sp = g * (1 - var_q / var_p)  # BUG
        return grad_mu_q, grad_log_sq, -grad_mu_q, grad_log_sp

    @staticmethod
    def example_inputs():
        return _kl_inputs()


class FarawayDiagGaussianKLReverseDirection(torch.autograd.Function):
    bug = {"kind": "none", "input": "log_sq",
           "note": "log sigma_q's gradient is taken from KL(p || q), the other direction: 1 - (var_p + diff^2)/var_q"}

    @staticmethod
    def forward(ctx, mu_q, log_sq, mu_p, log_sp):
        return _kl_forward(ctx, mu_q, log_sq, mu_p, log_sp)

    @staticmethod
    def backward(ctx, grad_kl):
        var_q, var_p, diff = ctx.saved_tensors
        g = grad_kl.unsqueeze(-1)
        grad_mu_q = g * diff / var_p
        grad_log_sq = g * (1 - (var_p + diff ** 2) / var_q)  # BUG
        grad_log_sp = g * (1 - (var_q + diff ** 2) / var_p)
        return grad_mu_q, grad_log_sq, -grad_mu_q, grad_log_sp

    @staticmethod
    def example_inputs():
        return _kl_inputs()


def _bernoulli_inputs():
    g = _gen(25)
    return (torch.randn(4, 5, dtype=torch.float64, generator=g) * 2,
            torch.randint(0, 2, (4, 5), generator=g))


class FarawayBernoulliLogLik(torch.autograd.Function):
    """Elementwise Bernoulli log-likelihood y*l - softplus(l) from logits l and 0/1 targets."""
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        y = target.to(logits.dtype)
        ctx.save_for_backward(logits, y)
        return y * logits - torch.nn.functional.softplus(logits)

    @staticmethod
    def backward(ctx, grad_out):
        logits, y = ctx.saved_tensors
        return grad_out * (y - torch.sigmoid(logits)), None

    @staticmethod
    def example_inputs():
        return _bernoulli_inputs()


class FarawayBernoulliLogLikLossSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "logits",
           "note": "the gradient of the negative log-likelihood, sigmoid(l) - y, is used for the log-likelihood"}

    @staticmethod
    def forward(ctx, logits, target):
        y = target.to(logits.dtype)
        ctx.save_for_backward(logits, y)
        return y * logits - torch.nn.functional.softplus(logits)

    @staticmethod
    def backward(ctx, grad_out):
        logits, y = ctx.saved_tensors
        return grad_out * (torch.sigmoid(logits) - y), None  # BUG

    @staticmethod
    def example_inputs():
        return _bernoulli_inputs()
