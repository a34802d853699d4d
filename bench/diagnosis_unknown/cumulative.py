"""Cumulative ops: cumsum, cumprod, logcumsumexp (by a triangular mask and a stable shifted form)
and discounted returns over time steps (a Python loop, as in RL code).

Inputs are (batch, time); the scan runs along dim 1.
"""
import torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _rcumsum(t, dim):
    return t.flip(dim).cumsum(dim).flip(dim)


class UnknownCumsum(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return torch.cumsum(x, dim=1)

    @staticmethod
    def backward(ctx, dy):
        return _rcumsum(dy, 1)


class UnknownCumsumForwardScan(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the gradient of cumsum is a reverse cumsum, but the backward scans forward (no flips)"}

    @staticmethod
    def forward(ctx, x):
        return torch.cumsum(x, dim=1)

    @staticmethod
    def backward(ctx, dy):
        return dy.cumsum(dim=1)  # BUG


def _positive(seed):
    return (torch.rand(3, 4, dtype=torch.float64, generator=_gen(seed)) + 0.5,)


class UnknownCumprod(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        out = x.cumprod(dim=1)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, dy):
        x, out = ctx.saved_tensors
        return _rcumsum(dy * out, 1) / x

    @staticmethod
    def example_inputs():
        return _positive(1)


class UnknownCumprodDivideByOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the reverse cumsum of dy * prod is divided by the running product instead of by x"}

    @staticmethod
    def forward(ctx, x):
        out = x.cumprod(dim=1)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, dy):
        x, out = ctx.saved_tensors
        acc = _rcumsum(dy * out, 1)
        return acc / out  # BUG

    @staticmethod
    def example_inputs():
        return _positive(2)


class UnknownLogCumSumExpMasked(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.logcumsumexp(x, dim=1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, y = ctx.saved_tensors
        t = x.shape[1]
        later = torch.ones(t, t, dtype=torch.bool).triu(0)  # later[i, j]: j >= i
        w = torch.exp(x[:, :, None] - y[:, None, :]) * later
        return torch.einsum("bij,bj->bi", w, dy)


class UnknownLogCumSumExpMaskedStrict(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the mask keeps j > i instead of j >= i: each step's own term (the diagonal) is lost"}

    @staticmethod
    def forward(ctx, x):
        y = torch.logcumsumexp(x, dim=1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, y = ctx.saved_tensors
        t = x.shape[1]
        later = torch.ones(t, t, dtype=torch.bool).triu(1)  # BUG
        w = torch.exp(x[:, :, None] - y[:, None, :]) * later
        return torch.einsum("bij,bj->bi", w, dy)


class UnknownLogCumSumExpShifted(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        m = x.amax(dim=1, keepdim=True)
        shifted = x - m
        ctx.save_for_backward(shifted)
        return shifted.exp().cumsum(dim=1).log() + m

    @staticmethod
    def backward(ctx, dy):
        (shifted,) = ctx.saved_tensors
        rel = torch.logcumsumexp(shifted, dim=1)
        return shifted.exp() * _rcumsum(dy * torch.exp(-rel), 1)


class UnknownLogCumSumExpShiftedExpInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "the saved shifted input is exponentiated in place (exp_) after save_for_backward"}

    @staticmethod
    def forward(ctx, x):
        m = x.amax(dim=1, keepdim=True)
        shifted = x - m
        ctx.save_for_backward(shifted)
        return shifted.exp_().cumsum(dim=1).log() + m  # BUG

    @staticmethod
    def backward(ctx, dy):
        (shifted,) = ctx.saved_tensors
        rel = torch.logcumsumexp(shifted, dim=1)
        return shifted.exp() * _rcumsum(dy * torch.exp(-rel), 1)


def _rewards(seed):
    return torch.randn(2, 5, dtype=torch.float64, generator=_gen(seed)), 0.9


class UnknownDiscountedReturns(torch.autograd.Function):
    """G_t = r_t + gamma * G_{t+1}, computed backwards in time."""

    bug = None

    @staticmethod
    def forward(ctx, rewards, gamma):
        ctx.gamma = gamma
        returns = torch.zeros_like(rewards)
        running = torch.zeros_like(rewards[:, 0])
        for t in reversed(range(rewards.shape[1])):
            running = rewards[:, t] + gamma * running
            returns[:, t] = running
        return returns

    @staticmethod
    def backward(ctx, dg):
        drewards = torch.zeros_like(dg)
        carry = torch.zeros_like(dg[:, 0])
        for t in range(dg.shape[1]):  # the adjoint runs forward in time
            carry = dg[:, t] + ctx.gamma * carry
            drewards[:, t] = carry
        return drewards, None

    @staticmethod
    def example_inputs():
        return _rewards(3)


class UnknownDiscountedReturnsNoCarry(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "rewards",
           "note": "the adjoint drops the carried gamma * (earlier returns' gradient) term: dr_t = dG_t only"}

    @staticmethod
    def forward(ctx, rewards, gamma):
        ctx.gamma = gamma
        returns = torch.zeros_like(rewards)
        running = torch.zeros_like(rewards[:, 0])
        for t in reversed(range(rewards.shape[1])):
            running = rewards[:, t] + gamma * running
            returns[:, t] = running
        return returns

    @staticmethod
    def backward(ctx, dg):
        drewards = torch.zeros_like(dg)
        for t in range(dg.shape[1]):
            drewards[:, t] = dg[:, t]  # BUG
        return drewards, None

    @staticmethod
    def example_inputs():
        return _rewards(4)
