"""Returns from price series: simple and log returns by slicing, a price ratio, a transaction-cost
penalty on weight changes, and a mean return over the available (masked) observations."""
import torch


def _prices(seed, T=6, N=3):
    gen = torch.Generator().manual_seed(seed)
    steps = 0.05 * torch.randn(T, N, dtype=torch.float64, generator=gen)
    return 100.0 * torch.exp(torch.cumsum(steps, dim=0))


# ------------------------------------------------------------------------------ simple returns
class AfieldSimpleReturns(torch.autograd.Function):
    """r_t = p_t / p_{t-1} - 1 along time (dim 0)."""

    bug = None

    @staticmethod
    def forward(ctx, prices):
        ctx.save_for_backward(prices)
        return prices[1:] / prices[:-1] - 1.0

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        grad = torch.zeros_like(p)
        grad[1:] += grad_out / p[:-1]
        grad[:-1] -= grad_out * p[1:] / p[:-1] ** 2
        return grad

    @staticmethod
    def example_inputs():
        return (_prices(1),)


class AfieldSimpleReturnsNoDenominator(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "prices",
           "note": "only the numerator's term is sent back; the -p_t/p_{t-1}^2 term for the older price is left out"}

    @staticmethod
    def forward(ctx, prices):
        ctx.save_for_backward(prices)
        return prices[1:] / prices[:-1] - 1.0

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        grad = torch.zeros_like(p)
        grad[1:] = grad_out / p[:-1]  # BUG
        return grad

    @staticmethod
    def example_inputs():
        return (_prices(1),)


# --------------------------------------------------------------------------------- log returns
class AfieldLogReturns(torch.autograd.Function):
    """r_t = log p_t - log p_{t-1}."""

    bug = None

    @staticmethod
    def forward(ctx, prices):
        ctx.save_for_backward(prices)
        logp = torch.log(prices)
        return logp[1:] - logp[:-1]

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        grad = torch.zeros_like(p)
        grad[1:] += grad_out / p[1:]
        grad[:-1] -= grad_out / p[:-1]
        return grad

    @staticmethod
    def example_inputs():
        return (_prices(2),)


class AfieldLogReturnsOlderSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "prices",
           "note": "the older price's term -g/p_{t-1} is added with a plus sign"}

    @staticmethod
    def forward(ctx, prices):
        ctx.save_for_backward(prices)
        logp = torch.log(prices)
        return logp[1:] - logp[:-1]

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        grad = torch.zeros_like(p)
        grad[1:] += grad_out / p[1:]
        grad[:-1] += grad_out / p[:-1]  # BUG
        return grad

    @staticmethod
    def example_inputs():
        return (_prices(2),)


class AfieldLogReturnsShiftedPrice(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "prices",
           "note": "the older price's term divides by the newer price p[1:] instead of p[:-1]"}

    @staticmethod
    def forward(ctx, prices):
        ctx.save_for_backward(prices)
        logp = torch.log(prices)
        return logp[1:] - logp[:-1]

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        grad = torch.zeros_like(p)
        grad[1:] += grad_out / p[1:]
        grad[:-1] -= grad_out / p[1:]  # BUG
        return grad

    @staticmethod
    def example_inputs():
        return (_prices(2),)


# --------------------------------------------------------------------------------- price ratio
class AfieldPriceRatio(torch.autograd.Function):
    """Relative price of a pair, long / short."""

    bug = None

    @staticmethod
    def forward(ctx, long_leg, short_leg):
        ctx.save_for_backward(long_leg, short_leg)
        return long_leg / short_leg

    @staticmethod
    def backward(ctx, grad_out):
        p, q = ctx.saved_tensors
        grad_long = grad_out / q
        grad_short = -grad_out * p / (q * q)
        return grad_long, grad_short

    @staticmethod
    def example_inputs():
        return _prices(3), _prices(4)


class AfieldPriceRatioSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "long_leg",
           "note": "the two legs' gradients are returned in the wrong order"}

    @staticmethod
    def forward(ctx, long_leg, short_leg):
        ctx.save_for_backward(long_leg, short_leg)
        return long_leg / short_leg

    @staticmethod
    def backward(ctx, grad_out):
        p, q = ctx.saved_tensors
        grad_long = grad_out / q
        grad_short = -grad_out * p / (q * q)
        return grad_short, grad_long  # BUG

    @staticmethod
    def example_inputs():
        return _prices(3), _prices(4)


# ---------------------------------------------------------------------------- transaction cost
def _tc_inputs():
    gen = torch.Generator().manual_seed(5)
    weights = torch.randn(3, 6, dtype=torch.float64, generator=gen)  # (assets, time)
    cost = torch.tensor([0.01, 0.02, 0.05], dtype=torch.float64)
    return weights, cost


class AfieldTransactionCost(torch.autograd.Function):
    """sum_n c_n sum_t |w_{n,t} - w_{n,t-1}|, weights laid out (assets, time)."""

    bug = None

    @staticmethod
    def forward(ctx, weights, cost):
        d = weights[:, 1:] - weights[:, :-1]
        ctx.save_for_backward(d, cost)
        return (cost[:, None] * d.abs()).sum()

    @staticmethod
    def backward(ctx, grad_out):
        d, cost = ctx.saved_tensors
        grad_w = grad_cost = None
        if ctx.needs_input_grad[0]:
            s = grad_out * cost[:, None] * torch.sign(d)
            grad_w = torch.zeros(d.shape[0], d.shape[1] + 1, dtype=d.dtype)
            grad_w[:, 1:] += s
            grad_w[:, :-1] -= s
        if ctx.needs_input_grad[1]:
            grad_cost = grad_out * d.abs().sum(dim=1)
        return grad_w, grad_cost

    @staticmethod
    def example_inputs():
        return _tc_inputs()


class AfieldTransactionCostPerStep(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "cost",
           "note": "the per-asset cost rate's gradient is left per time step (assets, T-1), not summed over time"}

    @staticmethod
    def forward(ctx, weights, cost):
        d = weights[:, 1:] - weights[:, :-1]
        ctx.save_for_backward(d, cost)
        return (cost[:, None] * d.abs()).sum()

    @staticmethod
    def backward(ctx, grad_out):
        d, cost = ctx.saved_tensors
        grad_w = grad_cost = None
        if ctx.needs_input_grad[0]:
            s = grad_out * cost[:, None] * torch.sign(d)
            grad_w = torch.zeros(d.shape[0], d.shape[1] + 1, dtype=d.dtype)
            grad_w[:, 1:] += s
            grad_w[:, :-1] -= s
        if ctx.needs_input_grad[1]:
            grad_cost = grad_out * d.abs()  # BUG
        return grad_w, grad_cost

    @staticmethod
    def example_inputs():
        return _tc_inputs()


# -------------------------------------------------------------------------- masked mean return
def _masked_inputs():
    gen = torch.Generator().manual_seed(6)
    returns = 0.02 * torch.randn(5, 3, dtype=torch.float64, generator=gen)
    observed = torch.tensor([[True, True, False], [True, False, True], [False, True, True],
                             [True, True, True], [True, False, True]])
    return returns, observed


class AfieldMaskedMeanReturn(torch.autograd.Function):
    """Mean return per asset over the dates where the asset traded (bool mask)."""

    bug = None

    @staticmethod
    def forward(ctx, returns, observed):
        count = observed.sum(dim=0).to(returns.dtype)
        ctx.save_for_backward(observed, count)
        return returns.masked_fill(~observed, 0.0).sum(dim=0) / count

    @staticmethod
    def backward(ctx, grad_out):
        observed, count = ctx.saved_tensors
        grad = (grad_out / count).expand(observed.shape[0], -1)
        return grad.masked_fill(~observed, 0.0), None

    @staticmethod
    def example_inputs():
        return _masked_inputs()


class AfieldMaskedMeanReturnUnmasked(torch.autograd.Function):
    bug = {"kind": "region", "input": "returns",
           "note": "the gradient is not masked: dates where the asset did not trade get g/count too"}

    @staticmethod
    def forward(ctx, returns, observed):
        count = observed.sum(dim=0).to(returns.dtype)
        ctx.save_for_backward(observed, count)
        return returns.masked_fill(~observed, 0.0).sum(dim=0) / count

    @staticmethod
    def backward(ctx, grad_out):
        observed, count = ctx.saved_tensors
        grad = (grad_out / count).expand(observed.shape[0], -1).clone()  # BUG
        return grad, None

    @staticmethod
    def example_inputs():
        return _masked_inputs()
