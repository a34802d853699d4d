"""Finance-style payoffs: a softplus-smoothed call payoff (per strike and per asset over dates),
log-returns, cumulative wealth by cumprod, portfolio variance, a Sharpe ratio and per-trade P&L
of holdings looked up by an integer asset id."""
import torch
import torch.nn.functional as F

BETA = 4.0
EPS = 1e-8


def _call_inputs():
    g = torch.Generator().manual_seed(61)
    spot = 1.0 + 0.3 * torch.randn(3, 4, dtype=torch.float64, generator=g)
    strike = 1.0 + 0.1 * torch.randn(4, dtype=torch.float64, generator=g)
    return spot, strike


# --------------------------------------------------------------------------- softplus call
class UnheardSoftplusCall(torch.autograd.Function):
    """Smoothed call payoff softplus(beta (S - K)) / beta, one strike per column."""

    bug = None

    @staticmethod
    def forward(ctx, spot, strike):
        ctx.save_for_backward(spot, strike)
        return F.softplus(BETA * (spot - strike)) / BETA

    @staticmethod
    def backward(ctx, grad_payoff):
        spot, strike = ctx.saved_tensors
        delta = torch.sigmoid(BETA * (spot - strike)) * grad_payoff
        return delta, -delta.sum(0)

    example_inputs = staticmethod(_call_inputs)


class UnheardSoftplusCallStrikeDelta(torch.autograd.Function):
    """Same payoff; the strike sensitivity reduced over the scenarios."""

    bug = {"kind": "sign", "input": "strike",
           "note": "the payoff falls as the strike rises: dP/dK = -sigmoid(beta (S - K)); the "
                   "minus is missing"}

    @staticmethod
    def forward(ctx, spot, strike):
        moneyness = spot - strike
        ctx.save_for_backward(moneyness)
        return torch.log1p(torch.exp(BETA * moneyness)) / BETA

    @staticmethod
    def backward(ctx, grad_payoff):
        (moneyness,) = ctx.saved_tensors
        d = torch.sigmoid(BETA * moneyness)
        grad_spot = grad_payoff * d
        grad_strike = torch.sum(grad_payoff * d, dim=0)  # BUG
        return grad_spot, grad_strike

    example_inputs = staticmethod(_call_inputs)


class UnheardSoftplusCallScaledInPlace(torch.autograd.Function):
    """Same payoff; forward scales the saved moneyness in place before the softplus."""

    bug = {"kind": "inplace", "input": "spot",
           "note": "ctx.m holds S - K, then m.mul_(beta) turns it into beta (S - K); backward's "
                   "sigmoid(beta * ctx.m) applies beta twice"}

    @staticmethod
    def forward(ctx, spot, strike):
        m = spot - strike
        ctx.m = m
        m.mul_(BETA)  # BUG
        return F.softplus(m) / BETA

    @staticmethod
    def backward(ctx, grad_payoff):
        delta = torch.sigmoid(BETA * ctx.m)
        return grad_payoff * delta, -(grad_payoff * delta).sum(0)

    example_inputs = staticmethod(_call_inputs)


def _basket_inputs():
    g = torch.Generator().manual_seed(62)
    spot = 1.0 + 0.3 * torch.randn(3, 4, 4, dtype=torch.float64, generator=g)  # (path, asset, date)
    strike = 1.0 + 0.1 * torch.randn(4, dtype=torch.float64, generator=g)     # one per asset
    return spot, strike


class UnheardAssetCallGrid(torch.autograd.Function):
    """Softplus call on a (path, asset, date) grid of spots, one strike per asset."""

    bug = None

    @staticmethod
    def forward(ctx, spot, strike):
        ctx.save_for_backward(spot, strike)
        return F.softplus(BETA * (spot - strike[:, None])) / BETA

    @staticmethod
    def backward(ctx, grad_payoff):
        spot, strike = ctx.saved_tensors
        delta = grad_payoff * torch.sigmoid(BETA * (spot - strike[:, None]))
        return delta, -delta.sum(dim=(0, 2))

    example_inputs = staticmethod(_basket_inputs)


class UnheardAssetCallGridPathSum(torch.autograd.Function):
    """Same grid; the strike gradient summed over the simulated paths."""

    bug = {"kind": "not_reduced", "input": "strike",
           "note": "the strike gradient is summed over the paths only; the dates axis is left "
                   "(an (asset, date) table for a per-asset strike)"}

    @staticmethod
    def forward(ctx, spot, strike):
        z = BETA * (spot - strike.view(1, -1, 1))
        ctx.save_for_backward(z)
        return F.softplus(z) / BETA

    @staticmethod
    def backward(ctx, grad_payoff):
        (z,) = ctx.saved_tensors
        delta = grad_payoff * torch.sigmoid(z)
        grad_strike = -delta.sum(0)  # BUG
        return delta, grad_strike

    example_inputs = staticmethod(_basket_inputs)


# ------------------------------------------------------------------------------ log-returns
def _price_inputs():
    g = torch.Generator().manual_seed(63)
    return (torch.exp(0.2 * torch.randn(3, 5, dtype=torch.float64, generator=g)),)


class UnheardLogReturn(torch.autograd.Function):
    """r_t = log(p_t / p_{t-1}) along the time axis."""

    bug = None

    @staticmethod
    def forward(ctx, prices):
        ctx.save_for_backward(prices)
        return torch.log(prices[:, 1:] / prices[:, :-1])

    @staticmethod
    def backward(ctx, grad_r):
        (prices,) = ctx.saved_tensors
        grad = torch.zeros_like(prices)
        grad[:, 1:] += grad_r / prices[:, 1:]
        grad[:, :-1] -= grad_r / prices[:, :-1]
        return grad

    example_inputs = staticmethod(_price_inputs)


class UnheardLogReturnNumeratorOnly(torch.autograd.Function):
    """Same returns, written as a difference of log prices."""

    bug = {"kind": "missing_term", "input": "prices",
           "note": "each price is the numerator of one return and the denominator of the "
                   "next; the -g_{t+1} / p_t term is missing"}

    @staticmethod
    def forward(ctx, prices):
        logp = prices.log()
        ctx.save_for_backward(prices)
        return logp[:, 1:] - logp[:, :-1]

    @staticmethod
    def backward(ctx, grad_r):
        (prices,) = ctx.saved_tensors
        inv = prices.reciprocal()
        pad = torch.zeros_like(prices[:, :1])
        return torch.cat([pad, grad_r], dim=1) * inv  # BUG

    example_inputs = staticmethod(_price_inputs)


# ---------------------------------------------------------------------------- cumulative wealth
def _returns_inputs():
    g = torch.Generator().manual_seed(64)
    return (0.05 * torch.randn(3, 5, dtype=torch.float64, generator=g),)


class UnheardCumulativeWealth(torch.autograd.Function):
    """W_t = prod_{s <= t} (1 + r_s) along time."""

    bug = None

    @staticmethod
    def forward(ctx, returns):
        wealth = torch.cumprod(1 + returns, dim=1)
        ctx.save_for_backward(returns, wealth)
        return wealth

    @staticmethod
    def backward(ctx, grad_w):
        returns, wealth = ctx.saved_tensors
        later = (grad_w * wealth).flip(1).cumsum(1).flip(1)   # sum over s >= t
        return later / (1 + returns)

    example_inputs = staticmethod(_returns_inputs)


class UnheardCumulativeWealthRunningSum(torch.autograd.Function):
    """Same wealth; backward by a running sum kept in a Python loop."""

    bug = {"kind": "missing_flip", "input": "returns",
           "note": "r_t affects every W_s with s >= t, so the sum must run from the last date "
                   "backwards; the loop runs forwards and sums s <= t"}

    @staticmethod
    def forward(ctx, returns):
        growth = 1 + returns
        wealth = torch.cumprod(growth, dim=1)
        ctx.save_for_backward(growth, wealth)
        return wealth

    @staticmethod
    def backward(ctx, grad_w):
        growth, wealth = ctx.saved_tensors
        weighted = grad_w * wealth
        acc = torch.zeros_like(weighted[:, 0])
        cols = []
        for t in range(weighted.shape[1]):  # BUG
            acc = acc + weighted[:, t]
            cols.append(acc / growth[:, t])
        return torch.stack(cols, dim=1)

    example_inputs = staticmethod(_returns_inputs)


# ------------------------------------------------------------------------ portfolio variance
def _portfolio_inputs():
    g = torch.Generator().manual_seed(65)
    w = torch.randn(3, 4, dtype=torch.float64, generator=g)
    sigma = torch.randn(4, 4, dtype=torch.float64, generator=g)
    return w, sigma


class UnheardPortfolioVariance(torch.autograd.Function):
    """v_b = w_b^T Sigma w_b for 3 portfolios (Sigma taken as given, not symmetrised)."""

    bug = None

    @staticmethod
    def forward(ctx, w, sigma):
        ctx.save_for_backward(w, sigma)
        return torch.einsum("bi,ij,bj->b", w, sigma, w)

    @staticmethod
    def backward(ctx, grad_v):
        w, sigma = ctx.saved_tensors
        grad_w = grad_v[:, None] * (w @ sigma.T + w @ sigma)
        grad_sigma = torch.einsum("b,bi,bj->ij", grad_v, w, w)
        return grad_w, grad_sigma

    example_inputs = staticmethod(_portfolio_inputs)


class UnheardPortfolioVarianceSymmetricAssumed(torch.autograd.Function):
    """Same variance; backward as for a symmetric covariance, d(w^T S w)/dw = 2 S w."""

    bug = {"kind": "transposed", "input": "w",
           "note": "2 w Sigma holds only for a symmetric Sigma; the gradient is w (Sigma + "
                   "Sigma^T), the Sigma^T half is replaced by Sigma"}

    @staticmethod
    def forward(ctx, w, sigma):
        ctx.save_for_backward(w, sigma)
        return ((w @ sigma) * w).sum(-1)

    @staticmethod
    def backward(ctx, grad_v):
        w, sigma = ctx.saved_tensors
        grad_w = 2.0 * grad_v.unsqueeze(1) * (w @ sigma)  # BUG
        grad_sigma = w.T @ (grad_v.unsqueeze(1) * w)
        return grad_w, grad_sigma

    example_inputs = staticmethod(_portfolio_inputs)


# --------------------------------------------------------------------------------- Sharpe
def _sharpe_inputs():
    g = torch.Generator().manual_seed(66)
    return (0.01 + 0.05 * torch.randn(3, 6, dtype=torch.float64, generator=g),)


class UnheardSharpeRatio(torch.autograd.Function):
    """mean / std (population) of each row of returns."""

    bug = None

    @staticmethod
    def forward(ctx, returns):
        m = returns.mean(-1, keepdim=True)
        sd = ((returns - m) ** 2).mean(-1, keepdim=True).add(EPS).sqrt()
        ctx.save_for_backward(returns, m, sd)
        return (m / sd).squeeze(-1)

    @staticmethod
    def backward(ctx, grad_s):
        returns, m, sd = ctx.saved_tensors
        n = returns.shape[-1]
        g = grad_s[:, None]
        return g * (1.0 / (n * sd) - m * (returns - m) / (n * sd ** 3))

    example_inputs = staticmethod(_sharpe_inputs)


class UnheardSharpeRatioRawDeviation(torch.autograd.Function):
    """Same ratio; the std's derivative written from the sum of squares."""

    bug = {"kind": "wrong_variable", "input": "returns",
           "note": "d sd / d r_t = (r_t - mean) / (n sd); the raw return r_t is used instead of "
                   "its deviation from the mean"}

    @staticmethod
    def forward(ctx, returns):
        m = returns.mean(-1, keepdim=True)
        sd = torch.sqrt(returns.var(-1, unbiased=False, keepdim=True) + EPS)
        ctx.save_for_backward(returns, m, sd)
        return m.squeeze(-1) / sd.squeeze(-1)

    @staticmethod
    def backward(ctx, grad_s):
        returns, m, sd = ctx.saved_tensors
        n = returns.shape[-1]
        dmean = 1.0 / n
        dsd = returns / (n * sd)  # BUG
        ds = dmean / sd - (m / sd ** 2) * dsd
        return grad_s.unsqueeze(-1) * ds

    example_inputs = staticmethod(_sharpe_inputs)


# ----------------------------------------------------------------- P&L by asset id
def _pnl_inputs():
    g = torch.Generator().manual_seed(67)
    holdings = torch.randn(4, dtype=torch.float64, generator=g)
    moves = torch.randn(8, dtype=torch.float64, generator=g)
    asset = torch.tensor([0, 2, 2, 1, 3, 0, 2, 1])
    return holdings, moves, asset


class UnheardTradePnl(torch.autograd.Function):
    """P&L of each trade: holdings[asset_id] * price move."""

    bug = None

    @staticmethod
    def forward(ctx, holdings, moves, asset):
        ctx.save_for_backward(holdings, moves, asset)
        return holdings[asset] * moves

    @staticmethod
    def backward(ctx, grad_pnl):
        holdings, moves, asset = ctx.saved_tensors
        grad_h = torch.zeros_like(holdings).index_add_(0, asset, grad_pnl * moves)
        return grad_h, grad_pnl * holdings[asset], None

    example_inputs = staticmethod(_pnl_inputs)


class UnheardTradePnlScatter(torch.autograd.Function):
    """Same P&L, with index_select in forward and scatter in backward."""

    bug = {"kind": "not_accumulated", "input": "holdings",
           "note": "scatter writes the trades of an asset one over another; trades of the same "
                   "asset must be summed (scatter_add / index_add)"}

    @staticmethod
    def forward(ctx, holdings, moves, asset):
        ctx.save_for_backward(holdings, moves, asset)
        return holdings.index_select(0, asset) * moves

    @staticmethod
    def backward(ctx, grad_pnl):
        holdings, moves, asset = ctx.saved_tensors
        grad_moves = grad_pnl * holdings.index_select(0, asset)
        grad_h = torch.zeros_like(holdings).scatter(0, asset, grad_pnl * moves)  # BUG
        return grad_h, grad_moves, None

    example_inputs = staticmethod(_pnl_inputs)
