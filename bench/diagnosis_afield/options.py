"""Black-Scholes European calls, the normal CDF written with erf: the price's gradient w.r.t. spot,
volatility and rate, and a two-output Function returning the price and its delta."""
import math

import torch


def _ncdf(x):
    return 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def _npdf(x):
    return torch.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _d1_d2(spot, vol, rate, strike, tau):
    sq = math.sqrt(tau)
    d1 = (torch.log(spot / strike) + (rate + 0.5 * vol * vol) * tau) / (vol * sq)
    return d1, d1 - vol * sq


def _call_inputs():
    spot = torch.tensor([88.0, 95.0, 101.0, 106.0, 114.0], dtype=torch.float64, requires_grad=True)
    vol = torch.tensor([0.18, 0.25, 0.31, 0.22, 0.4], dtype=torch.float64, requires_grad=True)
    rate = torch.tensor([0.01, 0.03, 0.05, 0.02, 0.04], dtype=torch.float64, requires_grad=True)
    strike = torch.tensor(100.0, dtype=torch.float64)
    return spot, vol, rate, strike, 0.75


class AfieldBlackScholesCall(torch.autograd.Function):
    """C = S N(d1) - K exp(-r tau) N(d2); strike and maturity are not differentiated."""

    bug = None

    @staticmethod
    def forward(ctx, spot, vol, rate, strike, tau):
        d1, d2 = _d1_d2(spot, vol, rate, strike, tau)
        disc = torch.exp(-rate * tau)
        ctx.save_for_backward(spot, d1, d2, disc, strike)
        ctx.tau = tau
        return spot * _ncdf(d1) - strike * disc * _ncdf(d2)

    @staticmethod
    def backward(ctx, grad_price):
        spot, d1, d2, disc, strike = ctx.saved_tensors
        tau = ctx.tau
        grad_spot = grad_vol = grad_rate = None
        if ctx.needs_input_grad[0]:
            grad_spot = grad_price * _ncdf(d1)
        if ctx.needs_input_grad[1]:
            grad_vol = grad_price * spot * _npdf(d1) * math.sqrt(tau)
        if ctx.needs_input_grad[2]:
            grad_rate = grad_price * strike * tau * disc * _ncdf(d2)
        return grad_spot, grad_vol, grad_rate, None, None

    @staticmethod
    def example_inputs():
        return _call_inputs()


class AfieldBlackScholesCallVegaD2(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "vol",
           "note": "vega is written S phi(d2) sqrt(tau): the density at d2 where S needs phi(d1)"}

    @staticmethod
    def forward(ctx, spot, vol, rate, strike, tau):
        d1, d2 = _d1_d2(spot, vol, rate, strike, tau)
        disc = torch.exp(-rate * tau)
        ctx.save_for_backward(spot, d1, d2, disc, strike)
        ctx.tau = tau
        return spot * _ncdf(d1) - strike * disc * _ncdf(d2)

    @staticmethod
    def backward(ctx, grad_price):
        spot, d1, d2, disc, strike = ctx.saved_tensors
        tau = ctx.tau
        grad_spot = grad_vol = grad_rate = None
        if ctx.needs_input_grad[0]:
            grad_spot = grad_price * _ncdf(d1)
        if ctx.needs_input_grad[1]:
            grad_vol = grad_price * spot * _npdf(d2) * math.sqrt(tau)  # BUG
        if ctx.needs_input_grad[2]:
            grad_rate = grad_price * strike * tau * disc * _ncdf(d2)
        return grad_spot, grad_vol, grad_rate, None, None

    @staticmethod
    def example_inputs():
        return _call_inputs()


class AfieldBlackScholesCallRhoSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "rate",
           "note": "rho is negated: d/dr of -K exp(-r tau) N(d2) taken as -K tau exp(-r tau) N(d2)"}

    @staticmethod
    def forward(ctx, spot, vol, rate, strike, tau):
        d1, d2 = _d1_d2(spot, vol, rate, strike, tau)
        disc = torch.exp(-rate * tau)
        ctx.save_for_backward(spot, d1, d2, disc, strike)
        ctx.tau = tau
        return spot * _ncdf(d1) - strike * disc * _ncdf(d2)

    @staticmethod
    def backward(ctx, grad_price):
        spot, d1, d2, disc, strike = ctx.saved_tensors
        tau = ctx.tau
        grad_spot = grad_vol = grad_rate = None
        if ctx.needs_input_grad[0]:
            grad_spot = grad_price * _ncdf(d1)
        if ctx.needs_input_grad[1]:
            grad_vol = grad_price * spot * _npdf(d1) * math.sqrt(tau)
        if ctx.needs_input_grad[2]:
            grad_rate = -grad_price * strike * tau * disc * _ncdf(d2)  # BUG
        return grad_spot, grad_vol, grad_rate, None, None

    @staticmethod
    def example_inputs():
        return _call_inputs()


class AfieldBlackScholesCallRateFlag(torch.autograd.Function):
    bug = {"kind": "zero", "input": "rate",
           "note": "rho is gated on needs_input_grad[3] (the strike's flag, off by one), so the rate gets None"}

    @staticmethod
    def forward(ctx, spot, vol, rate, strike, tau):
        d1, d2 = _d1_d2(spot, vol, rate, strike, tau)
        disc = torch.exp(-rate * tau)
        ctx.save_for_backward(spot, d1, d2, disc, strike)
        ctx.tau = tau
        return spot * _ncdf(d1) - strike * disc * _ncdf(d2)

    @staticmethod
    def backward(ctx, grad_price):
        spot, d1, d2, disc, strike = ctx.saved_tensors
        tau = ctx.tau
        grad_spot = grad_vol = None
        if ctx.needs_input_grad[0]:
            grad_spot = grad_price * _ncdf(d1)
        if ctx.needs_input_grad[1]:
            grad_vol = grad_price * spot * _npdf(d1) * math.sqrt(tau)
        grad_rate = grad_price * strike * tau * disc * _ncdf(d2) if ctx.needs_input_grad[3] else None  # BUG
        return grad_spot, grad_vol, grad_rate, None, None

    @staticmethod
    def example_inputs():
        return _call_inputs()


# ------------------------------------------------------------------- price and delta, 2 outputs
def _delta_inputs():
    spot = torch.tensor([86.0, 97.0, 103.0, 109.0, 118.0], dtype=torch.float64, requires_grad=True)
    vol = torch.tensor([0.35, 0.2, 0.28, 0.24, 0.3], dtype=torch.float64, requires_grad=True)
    strike = torch.tensor(100.0, dtype=torch.float64)
    return spot, vol, strike, 0.02, 0.5


class AfieldCallPriceDelta(torch.autograd.Function):
    """(price, delta) of a call; the backward takes both outputs' cotangents."""

    bug = None

    @staticmethod
    def forward(ctx, spot, vol, strike, rate, tau):
        d1, d2 = _d1_d2(spot, vol, rate, strike, tau)
        price = spot * _ncdf(d1) - strike * math.exp(-rate * tau) * _ncdf(d2)
        ctx.save_for_backward(spot, vol, d1, d2)
        ctx.tau = tau
        return price, _ncdf(d1)

    @staticmethod
    def backward(ctx, grad_price, grad_delta):
        spot, vol, d1, d2 = ctx.saved_tensors
        sq = math.sqrt(ctx.tau)
        pdf = _npdf(d1)
        gamma = pdf / (spot * vol * sq)
        vanna = -pdf * d2 / vol
        grad_spot = grad_price * _ncdf(d1) + grad_delta * gamma
        grad_vol = grad_price * spot * pdf * sq + grad_delta * vanna
        return grad_spot, grad_vol, None, None, None

    @staticmethod
    def example_inputs():
        return _delta_inputs()


class AfieldCallPriceDeltaNoGamma(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "spot",
           "note": "the spot's gradient keeps the price's delta term and leaves out the delta output's gamma term"}

    @staticmethod
    def forward(ctx, spot, vol, strike, rate, tau):
        d1, d2 = _d1_d2(spot, vol, rate, strike, tau)
        price = spot * _ncdf(d1) - strike * math.exp(-rate * tau) * _ncdf(d2)
        ctx.save_for_backward(spot, vol, d1, d2)
        ctx.tau = tau
        return price, _ncdf(d1)

    @staticmethod
    def backward(ctx, grad_price, grad_delta):
        spot, vol, d1, d2 = ctx.saved_tensors
        sq = math.sqrt(ctx.tau)
        pdf = _npdf(d1)
        vanna = -pdf * d2 / vol
        grad_spot = grad_price * _ncdf(d1)  # BUG
        grad_vol = grad_price * spot * pdf * sq + grad_delta * vanna
        return grad_spot, grad_vol, None, None, None

    @staticmethod
    def example_inputs():
        return _delta_inputs()


class AfieldCallPriceDeltaBareVega(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "vol",
           "note": "vega is added to the volatility's gradient without multiplying by the price's cotangent"}

    @staticmethod
    def forward(ctx, spot, vol, strike, rate, tau):
        d1, d2 = _d1_d2(spot, vol, rate, strike, tau)
        price = spot * _ncdf(d1) - strike * math.exp(-rate * tau) * _ncdf(d2)
        ctx.save_for_backward(spot, vol, d1, d2)
        ctx.tau = tau
        return price, _ncdf(d1)

    @staticmethod
    def backward(ctx, grad_price, grad_delta):
        spot, vol, d1, d2 = ctx.saved_tensors
        sq = math.sqrt(ctx.tau)
        pdf = _npdf(d1)
        gamma = pdf / (spot * vol * sq)
        vanna = -pdf * d2 / vol
        grad_spot = grad_price * _ncdf(d1) + grad_delta * gamma
        grad_vol = spot * pdf * sq + grad_delta * vanna  # BUG
        return grad_spot, grad_vol, None, None, None

    @staticmethod
    def example_inputs():
        return _delta_inputs()


class AfieldCallPriceDeltaVannaSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "vol",
           "note": "vanna is taken as +phi(d1) d2 / vol, the delta output's term with the wrong sign"}

    @staticmethod
    def forward(ctx, spot, vol, strike, rate, tau):
        d1, d2 = _d1_d2(spot, vol, rate, strike, tau)
        price = spot * _ncdf(d1) - strike * math.exp(-rate * tau) * _ncdf(d2)
        ctx.save_for_backward(spot, vol, d1, d2)
        ctx.tau = tau
        return price, _ncdf(d1)

    @staticmethod
    def backward(ctx, grad_price, grad_delta):
        spot, vol, d1, d2 = ctx.saved_tensors
        sq = math.sqrt(ctx.tau)
        pdf = _npdf(d1)
        gamma = pdf / (spot * vol * sq)
        vanna = pdf * d2 / vol  # BUG
        grad_spot = grad_price * _ncdf(d1) + grad_delta * gamma
        grad_vol = grad_price * spot * pdf * sq + grad_delta * vanna
        return grad_spot, grad_vol, None, None, None

    @staticmethod
    def example_inputs():
        return _delta_inputs()


class AfieldCallPriceDeltaSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "spot",
           "note": "the spot's and the volatility's gradients are returned in each other's place"}

    @staticmethod
    def forward(ctx, spot, vol, strike, rate, tau):
        d1, d2 = _d1_d2(spot, vol, rate, strike, tau)
        price = spot * _ncdf(d1) - strike * math.exp(-rate * tau) * _ncdf(d2)
        ctx.save_for_backward(spot, vol, d1, d2)
        ctx.tau = tau
        return price, _ncdf(d1)

    @staticmethod
    def backward(ctx, grad_price, grad_delta):
        spot, vol, d1, d2 = ctx.saved_tensors
        sq = math.sqrt(ctx.tau)
        pdf = _npdf(d1)
        gamma = pdf / (spot * vol * sq)
        vanna = -pdf * d2 / vol
        grad_spot = grad_price * _ncdf(d1) + grad_delta * gamma
        grad_vol = grad_price * spot * pdf * sq + grad_delta * vanna
        return grad_vol, grad_spot, None, None, None  # BUG

    @staticmethod
    def example_inputs():
        return _delta_inputs()
