import gradcli as torch
import gradcli.nn.functional as F
import math

# Logit-normal pieces on gradcli's engine: the reparameterised logit-normal sample with a
# softplus-parameterised standard deviation, the logit-normal log-density, and a Gaussian NLL whose
# standard deviation is a numerically stable, branch-wise softplus.


def _sample_inputs():
    gen = torch.Generator().manual_seed(51)
    mu = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    rho = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    eps = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    return mu, rho, eps


class AbroadLogitNormalSample(torch.autograd.Function):
    """y = sigmoid(mu + softplus(rho) * eps), eps fixed noise."""

    bug = None

    @staticmethod
    def forward(ctx, mu, rho, eps):
        sigma = F.softplus(rho)
        y = torch.sigmoid(mu + sigma * eps)
        ctx.save_for_backward(y, sigma, rho, eps)
        return y

    @staticmethod
    def backward(ctx, g):
        y, sigma, rho, eps = ctx.saved_tensors
        dy = g * y * (1 - y)
        return dy, dy * eps * torch.sigmoid(rho), dy * sigma

    @staticmethod
    def example_inputs():
        return _sample_inputs()


class AbroadLogitNormalSoftplusAtOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "rho",
           "note": "softplus' derivative sigmoid is evaluated at sigma = softplus(rho) instead of at rho"}

    @staticmethod
    def forward(ctx, mu, rho, eps):
        sigma = F.softplus(rho)
        y = torch.sigmoid(mu + sigma * eps)
        ctx.save_for_backward(y, sigma, rho, eps)
        return y

    @staticmethod
    def backward(ctx, g):
        y, sigma, rho, eps = ctx.saved_tensors
        dy = g * y * (1 - y)
        grad_rho = dy * eps * torch.sigmoid(sigma)  # BUG
        return dy, grad_rho, dy * sigma

    @staticmethod
    def example_inputs():
        return _sample_inputs()


class AbroadLogitNormalSampleInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "eps",
           "note": "sigma is saved, then overwritten in place with the pre-activation mu + sigma * eps"}

    @staticmethod
    def forward(ctx, mu, rho, eps):
        sigma = F.softplus(rho)
        ctx.save_for_backward(sigma, rho, eps)
        pre = sigma.mul_(eps).add_(mu)  # BUG
        y = torch.sigmoid(pre)
        ctx.y = y
        return y

    @staticmethod
    def backward(ctx, g):
        sigma, rho, eps = ctx.saved_tensors
        y = ctx.y
        dy = g * y * (1 - y)
        return dy, dy * eps * torch.sigmoid(rho), dy * sigma

    @staticmethod
    def example_inputs():
        return _sample_inputs()


# ----------------------------------------------------------------- logit-normal log-density
def _pdf_inputs():
    gen = torch.Generator().manual_seed(52)
    x = torch.rand(3, 4, dtype=torch.float64, generator=gen) * 0.8 + 0.1
    mu = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    rho = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    return x, mu, rho


def _pdf_forward(ctx, x, mu, rho):
    sigma = F.softplus(rho)
    logit = torch.log(x) - torch.log(1 - x)
    ctx.save_for_backward(x, logit - mu, sigma, rho)
    return (-torch.log(sigma) - 0.5 * math.log(2 * math.pi) - (logit - mu) ** 2 / (2 * sigma * sigma)
            - torch.log(x) - torch.log(1 - x))


class AbroadLogitNormalLogPdf(torch.autograd.Function):
    """log LogitNormal(x; mu, softplus(rho)) for x in (0, 1), Jacobian of the logit included."""

    bug = None

    @staticmethod
    def forward(ctx, x, mu, rho):
        return _pdf_forward(ctx, x, mu, rho)

    @staticmethod
    def backward(ctx, g):
        x, d, sigma, rho = ctx.saved_tensors
        s2 = sigma * sigma
        grad_x = g * (-d / (s2 * x * (1 - x)) - 1 / x + 1 / (1 - x))
        grad_mu = g * d / s2
        grad_rho = g * (-1 / sigma + d * d / (s2 * sigma)) * torch.sigmoid(rho)
        return grad_x, grad_mu, grad_rho

    @staticmethod
    def example_inputs():
        return _pdf_inputs()


class AbroadLogitNormalNoJacobian(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the derivative of the logit's Jacobian term -log x - log(1 - x) is left out of the x gradient"}

    @staticmethod
    def forward(ctx, x, mu, rho):
        return _pdf_forward(ctx, x, mu, rho)

    @staticmethod
    def backward(ctx, g):
        x, d, sigma, rho = ctx.saved_tensors
        s2 = sigma * sigma
        grad_x = g * (-d / (s2 * x * (1 - x)))  # BUG
        grad_mu = g * d / s2
        grad_rho = g * (-1 / sigma + d * d / (s2 * sigma)) * torch.sigmoid(rho)
        return grad_x, grad_mu, grad_rho

    @staticmethod
    def example_inputs():
        return _pdf_inputs()


class AbroadLogitNormalMuSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "mu",
           "note": "d (logit - mu)^2 / d mu is taken with the sign of the derivative in x"}

    @staticmethod
    def forward(ctx, x, mu, rho):
        return _pdf_forward(ctx, x, mu, rho)

    @staticmethod
    def backward(ctx, g):
        x, d, sigma, rho = ctx.saved_tensors
        s2 = sigma * sigma
        grad_x = g * (-d / (s2 * x * (1 - x)) - 1 / x + 1 / (1 - x))
        grad_mu = -g * d / s2  # BUG
        grad_rho = g * (-1 / sigma + d * d / (s2 * sigma)) * torch.sigmoid(rho)
        return grad_x, grad_mu, grad_rho

    @staticmethod
    def example_inputs():
        return _pdf_inputs()


# ----------------------------------------------------------------- Gaussian NLL, stable softplus std
def _nll_forward(ctx, x, mu, rho):
    sigma = torch.where(rho > 0, rho + torch.log1p(torch.exp(-rho.abs())), torch.log1p(torch.exp(rho.clamp(max=0))))
    r = x - mu
    ctx.save_for_backward(r, sigma, rho)
    return 0.5 * (r / sigma) ** 2 + torch.log(sigma) + 0.5 * math.log(2 * math.pi)


class AbroadSoftplusGaussNll(torch.autograd.Function):
    """0.5 ((x - mu) / sigma)^2 + log sigma + const, sigma = softplus(rho) computed branch-wise."""

    bug = None

    @staticmethod
    def forward(ctx, x, mu, rho):
        return _nll_forward(ctx, x, mu, rho)

    @staticmethod
    def backward(ctx, g):
        r, sigma, rho = ctx.saved_tensors
        e = torch.exp(-rho.abs())
        dsigma_drho = torch.where(rho > 0, 1 / (1 + e), e / (1 + e))
        grad_sigma = g * (1 / sigma - r * r / sigma ** 3)
        return g * r / sigma ** 2, -g * r / sigma ** 2, grad_sigma * dsigma_drho

    @staticmethod
    def example_inputs():
        return _sample_inputs()


class AbroadSoftplusGaussNllNegBranch(torch.autograd.Function):
    bug = {"kind": "region", "input": "rho",
           "note": "the rho <= 0 branch of softplus' derivative is copied from the other one, giving 1 - sigmoid(rho) there"}

    @staticmethod
    def forward(ctx, x, mu, rho):
        return _nll_forward(ctx, x, mu, rho)

    @staticmethod
    def backward(ctx, g):
        r, sigma, rho = ctx.saved_tensors
        e = torch.exp(-rho.abs())
        dsigma_drho = torch.where(rho > 0, 1 / (1 + e), 1 / (1 + e))  # BUG
        grad_sigma = g * (1 / sigma - r * r / sigma ** 3)
        return g * r / sigma ** 2, -g * r / sigma ** 2, grad_sigma * dsigma_drho

    @staticmethod
    def example_inputs():
        return _sample_inputs()
