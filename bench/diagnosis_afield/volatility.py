"""Volatility and risk paths: an exponentially weighted moving volatility as a loop over time, a
rolling z-score by unfold, and a drawdown penalty through a running maximum (torch.cummax)."""
import torch


# ------------------------------------------------------------------------------ EWMA volatility
def _ewma_inputs():
    gen = torch.Generator().manual_seed(11)
    returns = 0.3 * torch.randn(6, 3, dtype=torch.float64, generator=gen)
    returns[0] = torch.tensor([0.4, -0.5, 0.3], dtype=torch.float64)  # v_0 = r_0^2 away from 0
    lam = torch.tensor([0.8, 0.9, 0.7], dtype=torch.float64)
    return returns, lam


def _ewma_forward(returns, lam):
    v = torch.empty_like(returns)
    v[0] = returns[0] ** 2
    for t in range(1, returns.shape[0]):
        v[t] = lam * v[t - 1] + (1 - lam) * returns[t] ** 2
    return v


class AfieldEWMAVolatility(torch.autograd.Function):
    """sigma_t = sqrt(v_t), v_t = lam v_{t-1} + (1 - lam) r_t^2 (RiskMetrics style), per asset."""

    bug = None

    @staticmethod
    def forward(ctx, returns, lam):
        v = _ewma_forward(returns, lam)
        ctx.save_for_backward(returns, lam)
        ctx.var = v
        return v.sqrt()

    @staticmethod
    def backward(ctx, grad_sigma):
        r, lam = ctx.saved_tensors
        v = ctx.var
        grad_v = grad_sigma / (2 * v.sqrt())
        grad_r = torch.zeros_like(r)
        grad_lam = torch.zeros_like(lam)
        carry = torch.zeros_like(lam)
        for t in reversed(range(r.shape[0])):
            a = grad_v[t] + carry
            if t == 0:
                grad_r[0] = a * 2 * r[0]
            else:
                grad_r[t] = a * (1 - lam) * 2 * r[t]
                grad_lam += a * (v[t - 1] - r[t] ** 2)
            carry = a * lam
        return grad_r, grad_lam

    @staticmethod
    def example_inputs():
        return _ewma_inputs()


class AfieldEWMAVolatilityNoCarry(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "returns",
           "note": "the variance's adjoint carried back from v_{t+1} (lam * a_{t+1}) is left out of the recursion"}

    @staticmethod
    def forward(ctx, returns, lam):
        v = _ewma_forward(returns, lam)
        ctx.save_for_backward(returns, lam)
        ctx.var = v
        return v.sqrt()

    @staticmethod
    def backward(ctx, grad_sigma):
        r, lam = ctx.saved_tensors
        v = ctx.var
        grad_v = grad_sigma / (2 * v.sqrt())
        grad_r = torch.zeros_like(r)
        grad_lam = torch.zeros_like(lam)
        for t in reversed(range(r.shape[0])):
            a = grad_v[t]  # BUG
            if t == 0:
                grad_r[0] = a * 2 * r[0]
            else:
                grad_r[t] = a * (1 - lam) * 2 * r[t]
                grad_lam += a * (v[t - 1] - r[t] ** 2)
        return grad_r, grad_lam

    @staticmethod
    def example_inputs():
        return _ewma_inputs()


class AfieldEWMAVolatilityDecayDropped(torch.autograd.Function):
    bug = {"kind": "zero", "input": "lam",
           "note": "grad_lam.add(...) is not in place, so the decay's gradient stays zero"}

    @staticmethod
    def forward(ctx, returns, lam):
        v = _ewma_forward(returns, lam)
        ctx.save_for_backward(returns, lam)
        ctx.var = v
        return v.sqrt()

    @staticmethod
    def backward(ctx, grad_sigma):
        r, lam = ctx.saved_tensors
        v = ctx.var
        grad_v = grad_sigma / (2 * v.sqrt())
        grad_r = torch.zeros_like(r)
        grad_lam = torch.zeros_like(lam)
        carry = torch.zeros_like(lam)
        for t in reversed(range(r.shape[0])):
            a = grad_v[t] + carry
            if t == 0:
                grad_r[0] = a * 2 * r[0]
            else:
                grad_r[t] = a * (1 - lam) * 2 * r[t]
                grad_lam.add(a * (v[t - 1] - r[t] ** 2))  # BUG
            carry = a * lam
        return grad_r, grad_lam

    @staticmethod
    def example_inputs():
        return _ewma_inputs()


class AfieldEWMAVolatilitySqrtInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "returns",
           "note": "the variance kept on ctx is turned into the volatility by sqrt_() after it was saved"}

    @staticmethod
    def forward(ctx, returns, lam):
        v = _ewma_forward(returns, lam)
        ctx.save_for_backward(returns, lam)
        ctx.var = v
        return v.sqrt_()  # BUG

    @staticmethod
    def backward(ctx, grad_sigma):
        r, lam = ctx.saved_tensors
        v = ctx.var
        grad_v = grad_sigma / (2 * v.sqrt())
        grad_r = torch.zeros_like(r)
        grad_lam = torch.zeros_like(lam)
        carry = torch.zeros_like(lam)
        for t in reversed(range(r.shape[0])):
            a = grad_v[t] + carry
            if t == 0:
                grad_r[0] = a * 2 * r[0]
            else:
                grad_r[t] = a * (1 - lam) * 2 * r[t]
                grad_lam += a * (v[t - 1] - r[t] ** 2)
            carry = a * lam
        return grad_r, grad_lam

    @staticmethod
    def example_inputs():
        return _ewma_inputs()


# ------------------------------------------------------------------------------ rolling z-score
WINDOW = 4


def _zscore_inputs():
    gen = torch.Generator().manual_seed(12)
    return (torch.randn(3, 8, dtype=torch.float64, generator=gen),)


class AfieldRollingZScore(torch.autograd.Function):
    """z of the newest value in each trailing window of 4 (population std), series laid out (N, T)."""

    bug = None

    @staticmethod
    def forward(ctx, series):
        win = series.unfold(1, WINDOW, 1)  # (N, L, W)
        mean = win.mean(dim=-1, keepdim=True)
        std = win.std(dim=-1, unbiased=False, keepdim=True)
        xhat = (win - mean) / std
        ctx.save_for_backward(xhat, std)
        ctx.length = series.shape[1]
        return xhat[..., -1]

    @staticmethod
    def backward(ctx, grad_z):
        xhat, std = ctx.saved_tensors
        z = xhat[..., -1:]
        last = torch.zeros_like(xhat)
        last[..., -1] = 1.0
        grad_win = grad_z[..., None] / std * (last - 1.0 / WINDOW - z * xhat / WINDOW)
        n, length = grad_win.shape[0], grad_win.shape[1]
        grad = torch.zeros(n, ctx.length, dtype=grad_win.dtype)
        for k in range(WINDOW):
            grad[:, k:k + length] += grad_win[:, :, k]
        return grad

    @staticmethod
    def example_inputs():
        return _zscore_inputs()


class AfieldRollingZScoreStdTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "series",
           "note": "the window std's term z * xhat / W is added instead of subtracted"}

    @staticmethod
    def forward(ctx, series):
        win = series.unfold(1, WINDOW, 1)
        mean = win.mean(dim=-1, keepdim=True)
        std = win.std(dim=-1, unbiased=False, keepdim=True)
        xhat = (win - mean) / std
        ctx.save_for_backward(xhat, std)
        ctx.length = series.shape[1]
        return xhat[..., -1]

    @staticmethod
    def backward(ctx, grad_z):
        xhat, std = ctx.saved_tensors
        z = xhat[..., -1:]
        last = torch.zeros_like(xhat)
        last[..., -1] = 1.0
        grad_win = grad_z[..., None] / std * (last - 1.0 / WINDOW + z * xhat / WINDOW)  # BUG
        n, length = grad_win.shape[0], grad_win.shape[1]
        grad = torch.zeros(n, ctx.length, dtype=grad_win.dtype)
        for k in range(WINDOW):
            grad[:, k:k + length] += grad_win[:, :, k]
        return grad

    @staticmethod
    def example_inputs():
        return _zscore_inputs()


# ---------------------------------------------------------------------------- drawdown penalty
TOLERANCE = 0.01


def _path():
    steps = torch.tensor([[0.04, -0.03, 0.02], [-0.05, 0.01, -0.004], [0.02, -0.06, 0.03],
                          [-0.03, 0.02, -0.05], [0.01, 0.05, 0.01], [-0.02, -0.03, 0.02],
                          [0.03, -0.02, -0.03], [-0.004, 0.01, 0.045]], dtype=torch.float64)
    return (100.0 * torch.exp(torch.cumsum(steps, dim=0)),)


class AfieldDrawdownPenalty(torch.autograd.Function):
    """relu(dd_t - tol) with dd_t = 1 - p_t / max_{s<=t} p_s; the max routes to its argmax date."""

    bug = None

    @staticmethod
    def forward(ctx, wealth):
        peak, where = torch.cummax(wealth, dim=0)
        dd = 1.0 - wealth / peak
        ctx.save_for_backward(wealth, peak, where, dd)
        return torch.relu(dd - TOLERANCE)

    @staticmethod
    def backward(ctx, grad_out):
        p, peak, where, dd = ctx.saved_tensors
        g = grad_out * (dd > TOLERANCE)
        grad = -g / peak
        grad.scatter_add_(0, where, g * p / peak ** 2)
        return grad

    @staticmethod
    def example_inputs():
        return _path()


class AfieldDrawdownPenaltyPeakOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "wealth",
           "note": "the peak's gradient is scattered with scatter_, so dates sharing one argmax overwrite each other"}

    @staticmethod
    def forward(ctx, wealth):
        peak, where = torch.cummax(wealth, dim=0)
        dd = 1.0 - wealth / peak
        ctx.save_for_backward(wealth, peak, where, dd)
        return torch.relu(dd - TOLERANCE)

    @staticmethod
    def backward(ctx, grad_out):
        p, peak, where, dd = ctx.saved_tensors
        g = grad_out * (dd > TOLERANCE)
        grad_peak = torch.zeros_like(p).scatter_(0, where, g * p / peak ** 2)  # BUG
        return -g / peak + grad_peak

    @staticmethod
    def example_inputs():
        return _path()


class AfieldDrawdownPenaltyNoTolerance(torch.autograd.Function):
    bug = {"kind": "region", "input": "wealth",
           "note": "the active mask is dd > 0 instead of dd > tol, so shallow drawdowns inside the tolerance get a gradient"}

    @staticmethod
    def forward(ctx, wealth):
        peak, where = torch.cummax(wealth, dim=0)
        dd = 1.0 - wealth / peak
        ctx.save_for_backward(wealth, peak, where, dd)
        return torch.relu(dd - TOLERANCE)

    @staticmethod
    def backward(ctx, grad_out):
        p, peak, where, dd = ctx.saved_tensors
        g = grad_out * (dd > 0)  # BUG
        grad = -g / peak
        grad.scatter_add_(0, where, g * p / peak ** 2)
        return grad

    @staticmethod
    def example_inputs():
        return _path()


class AfieldDrawdownPenaltyOwnPrice(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "wealth",
           "note": "the direct term divides by the price p_t instead of the running peak"}

    @staticmethod
    def forward(ctx, wealth):
        peak, where = torch.cummax(wealth, dim=0)
        dd = 1.0 - wealth / peak
        ctx.save_for_backward(wealth, peak, where, dd)
        return torch.relu(dd - TOLERANCE)

    @staticmethod
    def backward(ctx, grad_out):
        p, peak, where, dd = ctx.saved_tensors
        g = grad_out * (dd > TOLERANCE)
        grad = -g / p  # BUG
        grad.scatter_add_(0, where, g * p / peak ** 2)
        return grad

    @staticmethod
    def example_inputs():
        return _path()
