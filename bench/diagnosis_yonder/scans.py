"""Scans written by hand: a logcumsumexp from cumsum, a discounted return by a reverse loop, cumprod
(blind corpus yonder)."""
import torch


def _lcse_inputs(seed):
    return (torch.randn(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)),)


def _lcse_forward(ctx, x):
    m = x.max(dim=1, keepdim=True).values
    out = m + torch.log(torch.cumsum(torch.exp(x - m), dim=1))
    ctx.save_for_backward(x, out)
    return out


def _reverse_cumsum(t, dim):
    return t.flip(dim).cumsum(dim).flip(dim)


class YonderLogCumSumExp(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _lcse_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, out = ctx.saved_tensors
        return torch.exp(x) * _reverse_cumsum(grad_out * torch.exp(-out), 1)


class YonderLogCumSumExpForwardScan(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the weighted gradients summed with a forward cumsum instead of a suffix sum (flip forgotten)"}

    @staticmethod
    def forward(ctx, x):
        return _lcse_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, out = ctx.saved_tensors
        weighted = grad_out * torch.exp(-out)
        return torch.exp(x) * torch.cumsum(weighted, dim=1)  # BUG


class YonderLogCumSumExpReadsInput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "exp(-x) used where exp(-out) is needed: the saved input read instead of the saved output"}

    @staticmethod
    def forward(ctx, x):
        return _lcse_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, out = ctx.saved_tensors
        weighted = grad_out * torch.exp(-x)  # BUG
        return torch.exp(x) * _reverse_cumsum(weighted, 1)


class YonderLogCumSumExpRowSoftmax(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "backward of a whole-row logsumexp broadcast (softmax times the row sum of grad) instead of the prefix scan"}

    @staticmethod
    def forward(ctx, x):
        return _lcse_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, out = ctx.saved_tensors
        return torch.softmax(x, dim=1) * grad_out.sum(dim=1, keepdim=True)  # BUG


def _returns_inputs(seed):
    return (torch.randn(2, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)), 0.8)


def _discounted(rewards, gamma):
    out = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[:, 0])
    for t in reversed(range(rewards.shape[1])):
        running = rewards[:, t] + gamma * running
        out[:, t] = running
    return out


class YonderDiscountedReturns(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, rewards, gamma: float = 0.8):
        ctx.gamma = gamma
        return _discounted(rewards, gamma)

    @staticmethod
    def backward(ctx, grad_out):
        grad = torch.zeros_like(grad_out)
        running = torch.zeros_like(grad_out[:, 0])
        for t in range(grad_out.shape[1]):
            running = grad_out[:, t] + ctx.gamma * running
            grad[:, t] = running
        return grad, None

    @staticmethod
    def example_inputs():
        return _returns_inputs(0)


class YonderDiscountedReturnsSameDirection(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "rewards",
           "note": "the backward scan copied from forward: it runs from the end like forward instead of from the start"}

    @staticmethod
    def forward(ctx, rewards, gamma: float = 0.8):
        ctx.gamma = gamma
        return _discounted(rewards, gamma)

    @staticmethod
    def backward(ctx, grad_out):
        grad = _discounted(grad_out, ctx.gamma)  # BUG
        return grad, None

    @staticmethod
    def example_inputs():
        return _returns_inputs(1)


def _cumprod_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(4, 4, dtype=torch.float64, generator=g) + 0.5,)


class YonderCumprod(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, dim=1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return _reverse_cumsum(grad_out * y, 1) / x

    @staticmethod
    def example_inputs():
        return _cumprod_inputs(2)


class YonderCumprodSuffixDim(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the suffix sum of grad*y taken along dim 0 instead of the scan dim 1"}

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, dim=1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return _reverse_cumsum(grad_out * y, 0) / x  # BUG

    @staticmethod
    def example_inputs():
        return _cumprod_inputs(3)
