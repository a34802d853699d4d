import gradcli as torch

# Gaussian negative log-likelihood of a GARCH(1,1) variance recursion over a short return series,
# written as loops over time, on gradcli's numpy engine.

H0 = 0.1  # the initial variance, a fixed constant


def _garch_inputs():
    gen = torch.Generator().manual_seed(61)
    returns = 0.3 * torch.randn(8, dtype=torch.float64, generator=gen)
    omega = torch.tensor(0.05, dtype=torch.float64)
    alpha = torch.tensor(0.1, dtype=torch.float64)
    beta = torch.tensor(0.8, dtype=torch.float64)
    return returns, omega, alpha, beta


def _variances(returns, omega, alpha, beta):
    h = torch.empty_like(returns)
    h[0] = H0
    for t in range(1, returns.shape[0]):
        h[t] = omega + alpha * returns[t - 1] ** 2 + beta * h[t - 1]
    return h


class AfieldEngineGarchNLL(torch.autograd.Function):
    """0.5 sum_t (log h_t + r_t^2 / h_t), h_t = omega + alpha r_{t-1}^2 + beta h_{t-1}."""

    bug = None

    @staticmethod
    def forward(ctx, returns, omega, alpha, beta):
        h = _variances(returns, omega, alpha, beta)
        ctx.save_for_backward(returns, alpha, beta, h)
        return 0.5 * (torch.log(h) + returns ** 2 / h).sum()

    @staticmethod
    def backward(ctx, grad_out):
        r, alpha, beta, h = ctx.saved_tensors
        local = grad_out * 0.5 * (1.0 / h - r ** 2 / h ** 2)
        grad_r = grad_out * r / h
        grad_omega = torch.zeros_like(alpha)
        grad_alpha = torch.zeros_like(alpha)
        grad_beta = torch.zeros_like(alpha)
        a = torch.zeros_like(alpha)
        for t in reversed(range(1, r.shape[0])):
            a = local[t] + beta * a
            grad_omega = grad_omega + a
            grad_alpha = grad_alpha + a * r[t - 1] ** 2
            grad_beta = grad_beta + a * h[t - 1]
            grad_r[t - 1] = grad_r[t - 1] + a * 2 * alpha * r[t - 1]
        return grad_r, grad_omega, grad_alpha, grad_beta

    @staticmethod
    def example_inputs():
        return _garch_inputs()


class AfieldEngineGarchNLLNoCarry(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "omega",
           "note": "the variance's adjoint drops the term beta * a_{t+1} carried back from the next date"}

    @staticmethod
    def forward(ctx, returns, omega, alpha, beta):
        h = _variances(returns, omega, alpha, beta)
        ctx.save_for_backward(returns, alpha, beta, h)
        return 0.5 * (torch.log(h) + returns ** 2 / h).sum()

    @staticmethod
    def backward(ctx, grad_out):
        r, alpha, beta, h = ctx.saved_tensors
        local = grad_out * 0.5 * (1.0 / h - r ** 2 / h ** 2)
        grad_r = grad_out * r / h
        grad_omega = torch.zeros_like(alpha)
        grad_alpha = torch.zeros_like(alpha)
        grad_beta = torch.zeros_like(alpha)
        for t in reversed(range(1, r.shape[0])):
            a = local[t]  # BUG
            grad_omega = grad_omega + a
            grad_alpha = grad_alpha + a * r[t - 1] ** 2
            grad_beta = grad_beta + a * h[t - 1]
            grad_r[t - 1] = grad_r[t - 1] + a * 2 * alpha * r[t - 1]
        return grad_r, grad_omega, grad_alpha, grad_beta

    @staticmethod
    def example_inputs():
        return _garch_inputs()


class AfieldEngineGarchNLLCurrentVariance(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "beta",
           "note": "beta's gradient multiplies by the current variance h_t instead of the lagged h_{t-1}"}

    @staticmethod
    def forward(ctx, returns, omega, alpha, beta):
        h = _variances(returns, omega, alpha, beta)
        ctx.save_for_backward(returns, alpha, beta, h)
        return 0.5 * (torch.log(h) + returns ** 2 / h).sum()

    @staticmethod
    def backward(ctx, grad_out):
        r, alpha, beta, h = ctx.saved_tensors
        local = grad_out * 0.5 * (1.0 / h - r ** 2 / h ** 2)
        grad_r = grad_out * r / h
        grad_omega = torch.zeros_like(alpha)
        grad_alpha = torch.zeros_like(alpha)
        grad_beta = torch.zeros_like(alpha)
        a = torch.zeros_like(alpha)
        for t in reversed(range(1, r.shape[0])):
            a = local[t] + beta * a
            grad_omega = grad_omega + a
            grad_alpha = grad_alpha + a * r[t - 1] ** 2
            grad_beta = grad_beta + a * h[t]  # BUG
            grad_r[t - 1] = grad_r[t - 1] + a * 2 * alpha * r[t - 1]
        return grad_r, grad_omega, grad_alpha, grad_beta

    @staticmethod
    def example_inputs():
        return _garch_inputs()


class AfieldEngineGarchNLLSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "alpha",
           "note": "the ARCH and GARCH coefficients' gradients are returned in each other's place"}

    @staticmethod
    def forward(ctx, returns, omega, alpha, beta):
        h = _variances(returns, omega, alpha, beta)
        ctx.save_for_backward(returns, alpha, beta, h)
        return 0.5 * (torch.log(h) + returns ** 2 / h).sum()

    @staticmethod
    def backward(ctx, grad_out):
        r, alpha, beta, h = ctx.saved_tensors
        local = grad_out * 0.5 * (1.0 / h - r ** 2 / h ** 2)
        grad_r = grad_out * r / h
        grad_omega = torch.zeros_like(alpha)
        grad_alpha = torch.zeros_like(alpha)
        grad_beta = torch.zeros_like(alpha)
        a = torch.zeros_like(alpha)
        for t in reversed(range(1, r.shape[0])):
            a = local[t] + beta * a
            grad_omega = grad_omega + a
            grad_alpha = grad_alpha + a * r[t - 1] ** 2
            grad_beta = grad_beta + a * h[t - 1]
            grad_r[t - 1] = grad_r[t - 1] + a * 2 * alpha * r[t - 1]
        return grad_r, grad_omega, grad_beta, grad_alpha  # BUG

    @staticmethod
    def example_inputs():
        return _garch_inputs()


class AfieldEngineGarchNLLScoreInR(torch.autograd.Function):
    bug = {"kind": "none", "input": "omega",
           "note": "d(r^2/h)/dh is written 2r/h, the derivative in r, so the variance's adjoint is 0.5 (1/h - 2r/h)"}

    @staticmethod
    def forward(ctx, returns, omega, alpha, beta):
        h = _variances(returns, omega, alpha, beta)
        ctx.save_for_backward(returns, alpha, beta, h)
        return 0.5 * (torch.log(h) + returns ** 2 / h).sum()

    @staticmethod
    def backward(ctx, grad_out):
        r, alpha, beta, h = ctx.saved_tensors
        local = grad_out * 0.5 * (1.0 / h - 2 * r / h)  # BUG
        grad_r = grad_out * r / h
        grad_omega = torch.zeros_like(alpha)
        grad_alpha = torch.zeros_like(alpha)
        grad_beta = torch.zeros_like(alpha)
        a = torch.zeros_like(alpha)
        for t in reversed(range(1, r.shape[0])):
            a = local[t] + beta * a
            grad_omega = grad_omega + a
            grad_alpha = grad_alpha + a * r[t - 1] ** 2
            grad_beta = grad_beta + a * h[t - 1]
            grad_r[t - 1] = grad_r[t - 1] + a * 2 * alpha * r[t - 1]
        return grad_r, grad_omega, grad_alpha, grad_beta

    @staticmethod
    def example_inputs():
        return _garch_inputs()
