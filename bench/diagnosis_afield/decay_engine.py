import gradcli as torch

# Time-series filters and time-weighted losses on gradcli's numpy engine: an exponential moving
# average written as a loop over time, cumulative wealth from log returns, a loss weighted by an
# exponential decay over the horizon, a loss with learned per-date weights, and the variance of
# winsorised (clamped) returns.


# ------------------------------------------------------------------------------------ EMA filter
def _ema_inputs():
    gen = torch.Generator().manual_seed(71)
    prices = torch.randn(6, 3, dtype=torch.float64, generator=gen)
    alpha = torch.tensor([0.6, 0.75, 0.9], dtype=torch.float64)
    return prices, alpha


def _ema(x, alpha):
    s = torch.empty_like(x)
    s[0] = x[0]
    for t in range(1, x.shape[0]):
        s[t] = alpha * s[t - 1] + (1 - alpha) * x[t]
    return s


class AfieldEngineEMAFilter(torch.autograd.Function):
    """s_0 = x_0, s_t = alpha s_{t-1} + (1 - alpha) x_t, one smoothing constant per asset."""

    bug = None

    @staticmethod
    def forward(ctx, prices, alpha):
        s = _ema(prices, alpha)
        ctx.save_for_backward(prices, alpha, s)
        return s

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha, s = ctx.saved_tensors
        grad_x = torch.zeros_like(x)
        grad_alpha = torch.zeros_like(alpha)
        carry = torch.zeros_like(alpha)
        for t in reversed(range(x.shape[0])):
            a = grad_out[t] + carry
            if t == 0:
                grad_x[0] = a
            else:
                grad_x[t] = a * (1 - alpha)
                grad_alpha = grad_alpha + a * (s[t - 1] - x[t])
            carry = a * alpha
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _ema_inputs()


class AfieldEngineEMAFilterForwardSweep(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "prices",
           "note": "the adjoint recursion runs forward in time; the carried adjoint must flow from the last date back"}

    @staticmethod
    def forward(ctx, prices, alpha):
        s = _ema(prices, alpha)
        ctx.save_for_backward(prices, alpha, s)
        return s

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha, s = ctx.saved_tensors
        grad_x = torch.zeros_like(x)
        grad_alpha = torch.zeros_like(alpha)
        carry = torch.zeros_like(alpha)
        for t in range(x.shape[0]):  # BUG
            a = grad_out[t] + carry
            if t == 0:
                grad_x[0] = a
            else:
                grad_x[t] = a * (1 - alpha)
                grad_alpha = grad_alpha + a * (s[t - 1] - x[t])
            carry = a * alpha
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _ema_inputs()


class AfieldEngineEMAFilterInnovationSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "alpha",
           "note": "d s_t / d alpha = s_{t-1} - x_t is written s_{t-1} + x_t"}

    @staticmethod
    def forward(ctx, prices, alpha):
        s = _ema(prices, alpha)
        ctx.save_for_backward(prices, alpha, s)
        return s

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha, s = ctx.saved_tensors
        grad_x = torch.zeros_like(x)
        grad_alpha = torch.zeros_like(alpha)
        carry = torch.zeros_like(alpha)
        for t in reversed(range(x.shape[0])):
            a = grad_out[t] + carry
            if t == 0:
                grad_x[0] = a
            else:
                grad_x[t] = a * (1 - alpha)
                grad_alpha = grad_alpha + a * (s[t - 1] + x[t])  # BUG
            carry = a * alpha
        return grad_x, grad_alpha

    @staticmethod
    def example_inputs():
        return _ema_inputs()


# ------------------------------------------------------------------------------ cumulative wealth
def _wealth_inputs():
    gen = torch.Generator().manual_seed(72)
    return (0.1 * torch.randn(5, 3, dtype=torch.float64, generator=gen),)


class AfieldEngineCumulativeWealth(torch.autograd.Function):
    """W_t = exp(sum_{s<=t} r_s) per asset, log returns laid out (T, N)."""

    bug = None

    @staticmethod
    def forward(ctx, logret):
        wealth = torch.exp(torch.cumsum(logret, dim=0))
        ctx.save_for_backward(wealth)
        return wealth

    @staticmethod
    def backward(ctx, grad_out):
        (wealth,) = ctx.saved_tensors
        return torch.cumsum((grad_out * wealth).flip(0), dim=0).flip(0)

    @staticmethod
    def example_inputs():
        return _wealth_inputs()


class AfieldEngineCumulativeWealthNoReverse(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "logret",
           "note": "the adjoint of the cumulative sum is taken as a forward cumsum, not a reversed one"}

    @staticmethod
    def forward(ctx, logret):
        wealth = torch.exp(torch.cumsum(logret, dim=0))
        ctx.save_for_backward(wealth)
        return wealth

    @staticmethod
    def backward(ctx, grad_out):
        (wealth,) = ctx.saved_tensors
        return torch.cumsum(grad_out * wealth, dim=0)  # BUG

    @staticmethod
    def example_inputs():
        return _wealth_inputs()


class AfieldEngineCumulativeWealthAssetAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "logret",
           "note": "the reversed cumulative sum runs over the assets (dim 1) instead of over time"}

    @staticmethod
    def forward(ctx, logret):
        wealth = torch.exp(torch.cumsum(logret, dim=0))
        ctx.save_for_backward(wealth)
        return wealth

    @staticmethod
    def backward(ctx, grad_out):
        (wealth,) = ctx.saved_tensors
        return torch.cumsum((grad_out * wealth).flip(1), dim=1).flip(1)  # BUG

    @staticmethod
    def example_inputs():
        return _wealth_inputs()


# --------------------------------------------------------------------- decay-weighted horizon loss
def _decay_inputs():
    gen = torch.Generator().manual_seed(73)
    pred = torch.randn(3, 5, dtype=torch.float64, generator=gen)
    target = torch.randn(3, 5, dtype=torch.float64, generator=gen)
    kappa = torch.tensor(0.3, dtype=torch.float64)
    return pred, target, kappa


class AfieldEngineDecayedLoss(torch.autograd.Function):
    """sum_h exp(-kappa h) mean_b (pred - target)^2: later horizons count less."""

    bug = None

    @staticmethod
    def forward(ctx, pred, target, kappa):
        h = torch.arange(pred.shape[1], dtype=torch.float64)
        w = torch.exp(-kappa * h)
        err = pred - target
        ctx.save_for_backward(err, w, h, kappa)
        return (w * err ** 2).sum() / pred.shape[0]

    @staticmethod
    def backward(ctx, grad_out):
        err, w, h, kappa = ctx.saved_tensors
        b = err.shape[0]
        grad_pred = grad_out * 2 * w * err / b
        dw = -h * w
        grad_kappa = grad_out * (dw * (err ** 2).sum(dim=0)).sum() / b
        return grad_pred, -grad_pred, grad_kappa

    @staticmethod
    def example_inputs():
        return _decay_inputs()


class AfieldEngineDecayedLossRateDerivative(torch.autograd.Function):
    bug = {"kind": "none", "input": "kappa",
           "note": "d exp(-kappa h) / d kappa is written -kappa exp(-kappa h), the derivative in h"}

    @staticmethod
    def forward(ctx, pred, target, kappa):
        h = torch.arange(pred.shape[1], dtype=torch.float64)
        w = torch.exp(-kappa * h)
        err = pred - target
        ctx.save_for_backward(err, w, h, kappa)
        return (w * err ** 2).sum() / pred.shape[0]

    @staticmethod
    def backward(ctx, grad_out):
        err, w, h, kappa = ctx.saved_tensors
        b = err.shape[0]
        grad_pred = grad_out * 2 * w * err / b
        dw = -kappa * w  # BUG
        grad_kappa = grad_out * (dw * (err ** 2).sum(dim=0)).sum() / b
        return grad_pred, -grad_pred, grad_kappa

    @staticmethod
    def example_inputs():
        return _decay_inputs()


# --------------------------------------------------------------------- learned per-date weights
def _dated_inputs():
    gen = torch.Generator().manual_seed(74)
    errors = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    date_weight = torch.tensor([0.2, 0.5, 0.9, 1.3, 1.8], dtype=torch.float64)
    return errors, date_weight


class AfieldEngineDatedLoss(torch.autograd.Function):
    """sum_t w_t mean_n e_{t,n}^2 with a learned weight per date (errors laid out (T, N))."""

    bug = None

    @staticmethod
    def forward(ctx, errors, date_weight):
        ctx.save_for_backward(errors, date_weight)
        return (date_weight[:, None] * errors ** 2).mean(dim=1).sum()

    @staticmethod
    def backward(ctx, grad_out):
        e, w = ctx.saved_tensors
        n = e.shape[1]
        grad_e = grad_out * w[:, None] * 2 * e / n
        grad_w = grad_out * (e ** 2).sum(dim=1) / n
        return grad_e, grad_w

    @staticmethod
    def example_inputs():
        return _dated_inputs()


class AfieldEngineDatedLossPerAsset(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "date_weight",
           "note": "the per-date weight's gradient is left (T, N), not summed over the assets it was broadcast to"}

    @staticmethod
    def forward(ctx, errors, date_weight):
        ctx.save_for_backward(errors, date_weight)
        return (date_weight[:, None] * errors ** 2).mean(dim=1).sum()

    @staticmethod
    def backward(ctx, grad_out):
        e, w = ctx.saved_tensors
        n = e.shape[1]
        grad_e = grad_out * w[:, None] * 2 * e / n
        grad_w = grad_out * e ** 2 / n  # BUG
        return grad_e, grad_w

    @staticmethod
    def example_inputs():
        return _dated_inputs()


# ------------------------------------------------------------------------- winsorised variance
CLIP = 1.0


def _clip_inputs():
    returns = torch.tensor([[0.3, -1.6, 0.8], [1.4, 0.2, -0.5], [-0.7, 0.9, 1.9],
                            [-1.3, -0.4, 0.1], [0.6, 1.2, -1.5], [-0.2, -0.8, 0.45]],
                           dtype=torch.float64)
    return (returns,)


class AfieldEngineWinsorizedVariance(torch.autograd.Function):
    """Per-asset population variance of the returns clamped to [-1, 1]."""

    bug = None

    @staticmethod
    def forward(ctx, returns):
        w = torch.clamp(returns, -CLIP, CLIP)
        dev = w - w.mean(dim=0)
        ctx.save_for_backward(returns, dev)
        return (dev ** 2).mean(dim=0)

    @staticmethod
    def backward(ctx, grad_out):
        r, dev = ctx.saved_tensors
        grad_w = grad_out * 2 * dev / r.shape[0]
        inside = (r.abs() < CLIP).to(r.dtype)
        return grad_w * inside

    @staticmethod
    def example_inputs():
        return _clip_inputs()


class AfieldEngineWinsorizedVarianceLowerOnly(torch.autograd.Function):
    bug = {"kind": "region", "input": "returns",
           "note": "the pass-through mask tests only the lower bound (r > -clip), so returns clamped at +clip still get a gradient"}

    @staticmethod
    def forward(ctx, returns):
        w = torch.clamp(returns, -CLIP, CLIP)
        dev = w - w.mean(dim=0)
        ctx.save_for_backward(returns, dev)
        return (dev ** 2).mean(dim=0)

    @staticmethod
    def backward(ctx, grad_out):
        r, dev = ctx.saved_tensors
        grad_w = grad_out * 2 * dev / r.shape[0]
        inside = (r > -CLIP).to(r.dtype)  # BUG
        return grad_w * inside

    @staticmethod
    def example_inputs():
        return _clip_inputs()
