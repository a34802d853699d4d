"""Cumulative ops on gradcli's engine: cumsum, reverse cumsum, cumprod, logcumsumexp, discounted returns."""
import gradcli as torch


def _rows(seed, low=None):
    gen = torch.Generator().manual_seed(seed)
    if low is None:
        return (torch.randn(3, 5, dtype=torch.float64, generator=gen),)
    return (torch.rand(3, 5, dtype=torch.float64, generator=gen) + low,)


def _rev_cumsum(t, dim):
    return t.flip(dim).cumsum(dim).flip(dim)


class NovelCumsum(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return x.cumsum(1)

    @staticmethod
    def backward(ctx, g):
        return g.flip(1).cumsum(1).flip(1)


class NovelCumsumForwardScan(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the backward scans g forwards (cumsum) where a reverse cumulative sum is needed"}

    @staticmethod
    def forward(ctx, x):
        return x.cumsum(1)

    @staticmethod
    def backward(ctx, g):
        return g.cumsum(1)  # BUG


class NovelReverseCumsum(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _rev_cumsum(x, 1)

    @staticmethod
    def backward(ctx, g):
        return g.cumsum(dim=1)


class NovelReverseCumsumOverBatch(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the backward's cumulative sum runs down the batch (dim 0) instead of along the row"}

    @staticmethod
    def forward(ctx, x):
        return _rev_cumsum(x, 1)

    @staticmethod
    def backward(ctx, g):
        return g.cumsum(dim=0)  # BUG


class NovelCumprod(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = x.cumprod(1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return _rev_cumsum(g * y, 1) / x

    @staticmethod
    def example_inputs():
        return _rows(70, low=0.5)


class NovelCumprodDividesByOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the reverse sum of g * y is divided by the output y instead of the input x"}

    @staticmethod
    def forward(ctx, x):
        y = x.cumprod(1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return _rev_cumsum(g * y, 1) / y  # BUG

    @staticmethod
    def example_inputs():
        return _rows(71, low=0.5)


class NovelCumprodSumRule(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the cumulative sum's backward (a reverse cumsum of g) written for a cumulative product"}

    @staticmethod
    def forward(ctx, x):
        y = x.cumprod(1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        return _rev_cumsum(g, 1)  # BUG

    @staticmethod
    def example_inputs():
        return _rows(72, low=0.5)


class NovelLogCumSumExp(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.log(torch.exp(x).cumsum(1))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return torch.exp(x) * _rev_cumsum(g * torch.exp(-y), 1)


class NovelLogCumSumExpNoUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "the reverse sum is over exp(-y) alone: the incoming gradient g is never used"}

    @staticmethod
    def forward(ctx, x):
        y = torch.log(torch.exp(x).cumsum(1))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return torch.exp(x) * _rev_cumsum(torch.exp(-y), 1)  # BUG


DISCOUNT = 0.9


class NovelDiscountedReturns(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, rewards):
        steps = rewards.shape[1]
        out = [None] * steps
        running = rewards[:, steps - 1] * 0
        for t in reversed(range(steps)):
            running = rewards[:, t] + DISCOUNT * running
            out[t] = running
        return torch.stack(out, dim=1)

    @staticmethod
    def backward(ctx, g):
        steps = g.shape[1]
        grads = []
        running = g[:, 0] * 0
        for t in range(steps):
            running = g[:, t] + DISCOUNT * running
            grads.append(running)
        return torch.stack(grads, dim=1)


class NovelDiscountedReturnsSameDirection(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "rewards",
           "note": "the backward discounts g backwards in time like the forward; the adjoint runs forwards"}

    @staticmethod
    def forward(ctx, rewards):
        steps = rewards.shape[1]
        out = [None] * steps
        running = rewards[:, steps - 1] * 0
        for t in reversed(range(steps)):
            running = rewards[:, t] + DISCOUNT * running
            out[t] = running
        return torch.stack(out, dim=1)

    @staticmethod
    def backward(ctx, g):
        steps = g.shape[1]
        grads = [None] * steps
        running = g[:, 0] * 0
        for t in reversed(range(steps)):
            running = g[:, t] + DISCOUNT * running  # BUG
            grads[t] = running
        return torch.stack(grads, dim=1)
