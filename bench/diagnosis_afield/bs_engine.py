import gradcli as torch
import math

# Black-Scholes on gradcli's numpy engine, the normal CDF by erf: a call price's gradient w.r.t. spot
# and volatility, a cash-or-nothing digital call, and the present value of cash flows on a zero curve.


def _ncdf(x):
    return 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def _npdf(x):
    return torch.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _d1_d2(spot, vol, strike, rate, tau):
    sq = math.sqrt(tau)
    d1 = (torch.log(spot / strike) + (rate + 0.5 * vol * vol) * tau) / (vol * sq)
    return d1, d1 - vol * sq


def _option_inputs():
    spot = torch.tensor([84.0, 93.0, 100.5, 107.0, 121.0], dtype=torch.float64)
    vol = torch.tensor([0.3, 0.22, 0.27, 0.35, 0.19], dtype=torch.float64)
    return spot, vol, 100.0, 0.05, 1.0


# ------------------------------------------------------------------------------------ call price
class AfieldEngineCallPrice(torch.autograd.Function):
    """C = S N(d1) - K exp(-r tau) N(d2); strike, rate and maturity are plain numbers."""

    bug = None

    @staticmethod
    def forward(ctx, spot, vol, strike, rate, tau):
        d1, d2 = _d1_d2(spot, vol, strike, rate, tau)
        ctx.save_for_backward(spot, vol, d1, d2)
        ctx.tau = tau
        return spot * _ncdf(d1) - strike * math.exp(-rate * tau) * _ncdf(d2)

    @staticmethod
    def backward(ctx, grad_out):
        spot, vol, d1, d2 = ctx.saved_tensors
        delta = _ncdf(d1)
        vega = spot * _npdf(d1) * math.sqrt(ctx.tau)
        return grad_out * delta, grad_out * vega, None, None, None

    @staticmethod
    def example_inputs():
        return _option_inputs()


class AfieldEngineCallPriceDensityDelta(torch.autograd.Function):
    bug = {"kind": "none", "input": "spot",
           "note": "delta is written with the normal density phi(d1) instead of the CDF N(d1)"}

    @staticmethod
    def forward(ctx, spot, vol, strike, rate, tau):
        d1, d2 = _d1_d2(spot, vol, strike, rate, tau)
        ctx.save_for_backward(spot, vol, d1, d2)
        ctx.tau = tau
        return spot * _ncdf(d1) - strike * math.exp(-rate * tau) * _ncdf(d2)

    @staticmethod
    def backward(ctx, grad_out):
        spot, vol, d1, d2 = ctx.saved_tensors
        delta = _npdf(d1)  # BUG
        vega = spot * _npdf(d1) * math.sqrt(ctx.tau)
        return grad_out * delta, grad_out * vega, None, None, None

    @staticmethod
    def example_inputs():
        return _option_inputs()


class AfieldEngineCallPriceOneLegVega(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "vol",
           "note": "vega differentiates only the S N(d1) leg; the strike leg's K exp(-r tau) phi(d2) d1/vol is left out"}

    @staticmethod
    def forward(ctx, spot, vol, strike, rate, tau):
        d1, d2 = _d1_d2(spot, vol, strike, rate, tau)
        ctx.save_for_backward(spot, vol, d1, d2)
        ctx.tau = tau
        return spot * _ncdf(d1) - strike * math.exp(-rate * tau) * _ncdf(d2)

    @staticmethod
    def backward(ctx, grad_out):
        spot, vol, d1, d2 = ctx.saved_tensors
        delta = _ncdf(d1)
        dd1_dvol = -d2 / vol
        vega = spot * _npdf(d1) * dd1_dvol  # BUG
        return grad_out * delta, grad_out * vega, None, None, None

    @staticmethod
    def example_inputs():
        return _option_inputs()


# ---------------------------------------------------------------------------------- digital call
class AfieldEngineDigitalCall(torch.autograd.Function):
    """Cash-or-nothing call paying 1: exp(-r tau) N(d2)."""

    bug = None

    @staticmethod
    def forward(ctx, spot, vol, strike, rate, tau):
        d1, d2 = _d1_d2(spot, vol, strike, rate, tau)
        ctx.save_for_backward(spot, vol, d1, d2)
        ctx.tau = tau
        ctx.disc = math.exp(-rate * tau)
        return ctx.disc * _ncdf(d2)

    @staticmethod
    def backward(ctx, grad_out):
        spot, vol, d1, d2 = ctx.saved_tensors
        dens = ctx.disc * _npdf(d2)
        grad_spot = grad_out * dens / (spot * vol * math.sqrt(ctx.tau))
        grad_vol = grad_out * dens * (-d1 / vol)
        return grad_spot, grad_vol, None, None, None

    @staticmethod
    def example_inputs():
        return _option_inputs()


class AfieldEngineDigitalCallUndiscounted(torch.autograd.Function):
    bug = {"kind": "scale", "input": "spot",
           "note": "the spot's gradient leaves out the discount factor exp(-r tau) of the payoff"}

    @staticmethod
    def forward(ctx, spot, vol, strike, rate, tau):
        d1, d2 = _d1_d2(spot, vol, strike, rate, tau)
        ctx.save_for_backward(spot, vol, d1, d2)
        ctx.tau = tau
        ctx.disc = math.exp(-rate * tau)
        return ctx.disc * _ncdf(d2)

    @staticmethod
    def backward(ctx, grad_out):
        spot, vol, d1, d2 = ctx.saved_tensors
        dens = ctx.disc * _npdf(d2)
        grad_spot = grad_out * _npdf(d2) / (spot * vol * math.sqrt(ctx.tau))  # BUG
        grad_vol = grad_out * dens * (-d1 / vol)
        return grad_spot, grad_vol, None, None, None

    @staticmethod
    def example_inputs():
        return _option_inputs()


class AfieldEngineDigitalCallDensityAtD1(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "vol",
           "note": "the volatility's gradient evaluates the density at d1 instead of d2"}

    @staticmethod
    def forward(ctx, spot, vol, strike, rate, tau):
        d1, d2 = _d1_d2(spot, vol, strike, rate, tau)
        ctx.save_for_backward(spot, vol, d1, d2)
        ctx.tau = tau
        ctx.disc = math.exp(-rate * tau)
        return ctx.disc * _ncdf(d2)

    @staticmethod
    def backward(ctx, grad_out):
        spot, vol, d1, d2 = ctx.saved_tensors
        dens = ctx.disc * _npdf(d2)
        grad_spot = grad_out * dens / (spot * vol * math.sqrt(ctx.tau))
        grad_vol = grad_out * ctx.disc * _npdf(d1) * (-d1 / vol)  # BUG
        return grad_spot, grad_vol, None, None, None

    @staticmethod
    def example_inputs():
        return _option_inputs()


# ------------------------------------------------------------------------- present value on a curve
def _pv_inputs():
    cash = torch.tensor([3.0, 3.0, 3.0, 3.0, 3.0, 103.0], dtype=torch.float64)
    rates = torch.tensor([0.02, 0.025, 0.028, 0.031, 0.033, 0.035], dtype=torch.float64)
    return cash, rates


def _times(n):
    return 0.5 * (torch.arange(n, dtype=torch.float64) + 1.0)


class AfieldEnginePresentValue(torch.autograd.Function):
    """PV = sum_i c_i exp(-y_i t_i), semi-annual dates t_i = 0.5, 1, ..."""

    bug = None

    @staticmethod
    def forward(ctx, cash, rates):
        t = _times(cash.shape[0])
        disc = torch.exp(-rates * t)
        ctx.save_for_backward(cash, t)
        ctx.disc = disc
        return (cash * disc).sum()

    @staticmethod
    def backward(ctx, grad_out):
        cash, t = ctx.saved_tensors
        disc = ctx.disc
        return grad_out * disc, -grad_out * cash * t * disc

    @staticmethod
    def example_inputs():
        return _pv_inputs()


class AfieldEnginePresentValueInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "cash",
           "note": "the discount factors kept on ctx are multiplied by the cash flows in place (mul_) to form the PV terms"}

    @staticmethod
    def forward(ctx, cash, rates):
        t = _times(cash.shape[0])
        disc = torch.exp(-rates * t)
        ctx.save_for_backward(cash, t)
        ctx.disc = disc
        return disc.mul_(cash).sum()  # BUG

    @staticmethod
    def backward(ctx, grad_out):
        cash, t = ctx.saved_tensors
        disc = ctx.disc
        return grad_out * disc, -grad_out * cash * t * disc

    @staticmethod
    def example_inputs():
        return _pv_inputs()


class AfieldEnginePresentValueDurationSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "rates",
           "note": "the rates' gradient (minus the dollar duration) is returned without its minus sign"}

    @staticmethod
    def forward(ctx, cash, rates):
        t = _times(cash.shape[0])
        disc = torch.exp(-rates * t)
        ctx.save_for_backward(cash, t)
        ctx.disc = disc
        return (cash * disc).sum()

    @staticmethod
    def backward(ctx, grad_out):
        cash, t = ctx.saved_tensors
        disc = ctx.disc
        grad_rates = grad_out * cash * t * disc  # BUG
        return grad_out * disc, grad_rates

    @staticmethod
    def example_inputs():
        return _pv_inputs()
