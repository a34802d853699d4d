"""Portfolio construction: variance w'BB'w of softmax weights under a factor model, a mean-variance
utility with a risk-aversion scalar, a Sharpe-ratio loss and a turnover penalty on softmax weights."""
import torch


# ------------------------------------------------------------------------- portfolio variance
def _variance_inputs():
    gen = torch.Generator().manual_seed(21)
    logits = torch.randn(4, dtype=torch.float64, generator=gen)
    loadings = torch.randn(4, 4, dtype=torch.float64, generator=gen)
    return logits, loadings


class AfieldPortfolioVariance(torch.autograd.Function):
    """w = softmax(logits); variance = |B' w|^2 (covariance B B' from factor loadings)."""

    bug = None

    @staticmethod
    def forward(ctx, logits, loadings):
        w = torch.softmax(logits, dim=0)
        u = loadings.mT @ w
        ctx.save_for_backward(w, u, loadings)
        return u @ u

    @staticmethod
    def backward(ctx, grad_out):
        w, u, B = ctx.saved_tensors
        grad_w = 2 * grad_out * (B @ u)
        grad_logits = w * (grad_w - (w * grad_w).sum())
        grad_loadings = 2 * grad_out * torch.outer(w, u)
        return grad_logits, grad_loadings

    @staticmethod
    def example_inputs():
        return _variance_inputs()


class AfieldPortfolioVarianceHalf(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits",
           "note": "d|u|^2/du is taken as u, dropping the factor 2, on the weights' path"}

    @staticmethod
    def forward(ctx, logits, loadings):
        w = torch.softmax(logits, dim=0)
        u = loadings.mT @ w
        ctx.save_for_backward(w, u, loadings)
        return u @ u

    @staticmethod
    def backward(ctx, grad_out):
        w, u, B = ctx.saved_tensors
        grad_w = grad_out * (B @ u)  # BUG
        grad_logits = w * (grad_w - (w * grad_w).sum())
        grad_loadings = 2 * grad_out * torch.outer(w, u)
        return grad_logits, grad_loadings

    @staticmethod
    def example_inputs():
        return _variance_inputs()


class AfieldPortfolioVarianceOuterFlipped(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "loadings",
           "note": "the loadings' gradient is outer(u, w), the transpose of outer(w, u)"}

    @staticmethod
    def forward(ctx, logits, loadings):
        w = torch.softmax(logits, dim=0)
        u = loadings.mT @ w
        ctx.save_for_backward(w, u, loadings)
        return u @ u

    @staticmethod
    def backward(ctx, grad_out):
        w, u, B = ctx.saved_tensors
        grad_w = 2 * grad_out * (B @ u)
        grad_logits = w * (grad_w - (w * grad_w).sum())
        grad_loadings = 2 * grad_out * torch.outer(u, w)  # BUG
        return grad_logits, grad_loadings

    @staticmethod
    def example_inputs():
        return _variance_inputs()


# ------------------------------------------------------------------------ mean-variance utility
def _utility_inputs():
    gen = torch.Generator().manual_seed(22)
    weights = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    mu = 0.1 * torch.randn(4, dtype=torch.float64, generator=gen)
    cov = torch.randn(4, 4, dtype=torch.float64, generator=gen)
    gamma = torch.tensor(3.0, dtype=torch.float64)
    return weights, mu, cov, gamma


class AfieldMeanVarianceUtility(torch.autograd.Function):
    """U_b = w_b' mu - gamma / 2 * w_b' S w_b for a batch of portfolios."""

    bug = None

    @staticmethod
    def forward(ctx, weights, mu, cov, gamma):
        quad = torch.einsum("bi,ij,bj->b", weights, cov, weights)
        ctx.save_for_backward(weights, mu, cov, gamma, quad)
        return weights @ mu - 0.5 * gamma * quad

    @staticmethod
    def backward(ctx, grad_out):
        w, mu, cov, gamma, quad = ctx.saved_tensors
        grad_w = grad_out[:, None] * (mu - 0.5 * gamma * (w @ cov + w @ cov.mT))
        grad_mu = grad_out @ w
        grad_cov = -0.5 * gamma * torch.einsum("b,bi,bj->ij", grad_out, w, w)
        grad_gamma = -0.5 * (grad_out * quad).sum()
        return grad_w, grad_mu, grad_cov, grad_gamma

    @staticmethod
    def example_inputs():
        return _utility_inputs()


class AfieldMeanVarianceUtilityMuSum(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "mu",
           "note": "the expected returns' gradient sums the weights over the batch without weighting by grad_out"}

    @staticmethod
    def forward(ctx, weights, mu, cov, gamma):
        quad = torch.einsum("bi,ij,bj->b", weights, cov, weights)
        ctx.save_for_backward(weights, mu, cov, gamma, quad)
        return weights @ mu - 0.5 * gamma * quad

    @staticmethod
    def backward(ctx, grad_out):
        w, mu, cov, gamma, quad = ctx.saved_tensors
        grad_w = grad_out[:, None] * (mu - 0.5 * gamma * (w @ cov + w @ cov.mT))
        grad_mu = w.sum(dim=0)  # BUG
        grad_cov = -0.5 * gamma * torch.einsum("b,bi,bj->ij", grad_out, w, w)
        grad_gamma = -0.5 * (grad_out * quad).sum()
        return grad_w, grad_mu, grad_cov, grad_gamma

    @staticmethod
    def example_inputs():
        return _utility_inputs()


class AfieldMeanVarianceUtilityCovSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "cov",
           "note": "the covariance's gradient drops the minus of the penalty: +gamma/2 w w'"}

    @staticmethod
    def forward(ctx, weights, mu, cov, gamma):
        quad = torch.einsum("bi,ij,bj->b", weights, cov, weights)
        ctx.save_for_backward(weights, mu, cov, gamma, quad)
        return weights @ mu - 0.5 * gamma * quad

    @staticmethod
    def backward(ctx, grad_out):
        w, mu, cov, gamma, quad = ctx.saved_tensors
        grad_w = grad_out[:, None] * (mu - 0.5 * gamma * (w @ cov + w @ cov.mT))
        grad_mu = grad_out @ w
        grad_cov = 0.5 * gamma * torch.einsum("b,bi,bj->ij", grad_out, w, w)  # BUG
        grad_gamma = -0.5 * (grad_out * quad).sum()
        return grad_w, grad_mu, grad_cov, grad_gamma

    @staticmethod
    def example_inputs():
        return _utility_inputs()


class AfieldMeanVarianceUtilityPenaltySign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "weights",
           "note": "the weights' gradient adds the risk penalty's term instead of subtracting it"}

    @staticmethod
    def forward(ctx, weights, mu, cov, gamma):
        quad = torch.einsum("bi,ij,bj->b", weights, cov, weights)
        ctx.save_for_backward(weights, mu, cov, gamma, quad)
        return weights @ mu - 0.5 * gamma * quad

    @staticmethod
    def backward(ctx, grad_out):
        w, mu, cov, gamma, quad = ctx.saved_tensors
        grad_w = grad_out[:, None] * (mu + 0.5 * gamma * (w @ cov + w @ cov.mT))  # BUG
        grad_mu = grad_out @ w
        grad_cov = -0.5 * gamma * torch.einsum("b,bi,bj->ij", grad_out, w, w)
        grad_gamma = -0.5 * (grad_out * quad).sum()
        return grad_w, grad_mu, grad_cov, grad_gamma

    @staticmethod
    def example_inputs():
        return _utility_inputs()


# ---------------------------------------------------------------------------------- Sharpe loss
def _sharpe_inputs():
    gen = torch.Generator().manual_seed(23)
    returns = 0.01 + 0.02 * torch.randn(5, 5, dtype=torch.float64, generator=gen)  # (T, N)
    weights = torch.tensor([0.3, 0.1, 0.25, 0.15, 0.2], dtype=torch.float64)
    return returns, weights


class AfieldSharpeLoss(torch.autograd.Function):
    """-mean(p) / std(p) of the portfolio returns p = R w (population std)."""

    bug = None

    @staticmethod
    def forward(ctx, returns, weights):
        p = returns @ weights
        m, s = p.mean(), p.std(unbiased=False)
        ctx.save_for_backward(returns, weights, p, m, s)
        return -m / s

    @staticmethod
    def backward(ctx, grad_out):
        R, w, p, m, s = ctx.saved_tensors
        T = p.shape[0]
        dsharpe = 1.0 / (T * s) - m * (p - m) / (T * s ** 3)
        grad_p = -grad_out * dsharpe
        return torch.outer(grad_p, w), R.mT @ grad_p

    @staticmethod
    def example_inputs():
        return _sharpe_inputs()


class AfieldSharpeLossUncentred(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "weights",
           "note": "the std's term uses the raw returns p instead of the deviations p - mean"}

    @staticmethod
    def forward(ctx, returns, weights):
        p = returns @ weights
        m, s = p.mean(), p.std(unbiased=False)
        ctx.save_for_backward(returns, weights, p, m, s)
        return -m / s

    @staticmethod
    def backward(ctx, grad_out):
        R, w, p, m, s = ctx.saved_tensors
        T = p.shape[0]
        dsharpe = 1.0 / (T * s) - m * p / (T * s ** 3)  # BUG
        grad_p = -grad_out * dsharpe
        return torch.outer(grad_p, w), R.mT @ grad_p

    @staticmethod
    def example_inputs():
        return _sharpe_inputs()


class AfieldSharpeLossReturnsNotTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "weights",
           "note": "the weights' gradient is R @ grad_p instead of R.mT @ grad_p"}

    @staticmethod
    def forward(ctx, returns, weights):
        p = returns @ weights
        m, s = p.mean(), p.std(unbiased=False)
        ctx.save_for_backward(returns, weights, p, m, s)
        return -m / s

    @staticmethod
    def backward(ctx, grad_out):
        R, w, p, m, s = ctx.saved_tensors
        T = p.shape[0]
        dsharpe = 1.0 / (T * s) - m * (p - m) / (T * s ** 3)
        grad_p = -grad_out * dsharpe
        return torch.outer(grad_p, w), R @ grad_p  # BUG

    @staticmethod
    def example_inputs():
        return _sharpe_inputs()


class AfieldSharpeLossQuotientRule(torch.autograd.Function):
    bug = {"kind": "none", "input": "weights",
           "note": "the quotient rule is applied with d mean/dp = d std/dp = 1/T, giving (s - m)/(T s^2)"}

    @staticmethod
    def forward(ctx, returns, weights):
        p = returns @ weights
        m, s = p.mean(), p.std(unbiased=False)
        ctx.save_for_backward(returns, weights, p, m, s)
        return -m / s

    @staticmethod
    def backward(ctx, grad_out):
        R, w, p, m, s = ctx.saved_tensors
        T = p.shape[0]
        dsharpe = (s - m) / (T * s ** 2) * torch.ones_like(p)  # BUG
        grad_p = -grad_out * dsharpe
        return torch.outer(grad_p, w), R.mT @ grad_p

    @staticmethod
    def example_inputs():
        return _sharpe_inputs()


# ------------------------------------------------------------------------ turnover of softmax w
def _turnover_inputs():
    gen = torch.Generator().manual_seed(24)
    return (torch.randn(5, 3, dtype=torch.float64, generator=gen),)


class AfieldSoftmaxTurnover(torch.autograd.Function):
    """sum_t |w_t - w_{t-1}|^2 with w_t = softmax over assets of the logits (T, N)."""

    bug = None

    @staticmethod
    def forward(ctx, logits):
        w = torch.softmax(logits, dim=1)
        ctx.save_for_backward(w)
        return ((w[1:] - w[:-1]) ** 2).sum()

    @staticmethod
    def backward(ctx, grad_out):
        (w,) = ctx.saved_tensors
        d = 2 * grad_out * (w[1:] - w[:-1])
        grad_w = torch.zeros_like(w)
        grad_w[1:] += d
        grad_w[:-1] -= d
        return w * (grad_w - (grad_w * w).sum(dim=1, keepdim=True))

    @staticmethod
    def example_inputs():
        return _turnover_inputs()


class AfieldSoftmaxTurnoverTimeAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "logits",
           "note": "the softmax backward's inner product is summed over time (dim 0) instead of over assets"}

    @staticmethod
    def forward(ctx, logits):
        w = torch.softmax(logits, dim=1)
        ctx.save_for_backward(w)
        return ((w[1:] - w[:-1]) ** 2).sum()

    @staticmethod
    def backward(ctx, grad_out):
        (w,) = ctx.saved_tensors
        d = 2 * grad_out * (w[1:] - w[:-1])
        grad_w = torch.zeros_like(w)
        grad_w[1:] += d
        grad_w[:-1] -= d
        return w * (grad_w - (grad_w * w).sum(dim=0, keepdim=True))  # BUG

    @staticmethod
    def example_inputs():
        return _turnover_inputs()


class AfieldSoftmaxTurnoverDiagonal(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "logits",
           "note": "the softmax Jacobian is taken as its diagonal only: the -w (w . g) term is left out"}

    @staticmethod
    def forward(ctx, logits):
        w = torch.softmax(logits, dim=1)
        ctx.save_for_backward(w)
        return ((w[1:] - w[:-1]) ** 2).sum()

    @staticmethod
    def backward(ctx, grad_out):
        (w,) = ctx.saved_tensors
        d = 2 * grad_out * (w[1:] - w[:-1])
        grad_w = torch.zeros_like(w)
        grad_w[1:] += d
        grad_w[:-1] -= d
        return w * grad_w  # BUG

    @staticmethod
    def example_inputs():
        return _turnover_inputs()
