"""Cumulative ops along the last dim: cumsum, cumprod, discounted returns.

Written against gradcli's engine (`import gradcli as torch`), which speaks the
torch.autograd.Function API, so this file runs without PyTorch. Blind corpus: see README.md.
"""
import gradcli as torch

DISCOUNT = 0.9


def _away_from_zero(seed):
    torch.manual_seed(seed)
    magnitude = torch.rand(3, 4) + 0.5
    sign = torch.where(torch.rand(3, 4) > 0.3, torch.ones(3, 4), -torch.ones(3, 4))
    return magnitude * sign


def _reverse_cumsum(t, dim):
    return torch.flip(torch.cumsum(torch.flip(t, [dim]), dim), [dim])


# -------------------------------------------------------------------------------- cumsum
class Cumsum(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return torch.cumsum(x, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        return torch.flip(torch.cumsum(torch.flip(grad_out, [1]), dim=1), [1])


class CumsumBackwardScansForward(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "backward runs the same prefix scan as forward; it must be a suffix scan "
                   "(flip, cumsum, flip)"}

    @staticmethod
    def forward(ctx, x):
        return torch.cumsum(x, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        return torch.cumsum(grad_out, dim=1)  # BUG


class CumsumBackwardAlongRows(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the suffix scan in backward runs along dim 0 instead of the dim 1 of forward"}

    @staticmethod
    def forward(ctx, x):
        return torch.cumsum(x, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        return torch.flip(torch.cumsum(torch.flip(grad_out, [0]), dim=0), [0])  # BUG


# ------------------------------------------------------------------------------- cumprod
class Cumprod(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, dim=1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        # valid for x without zeros: d y_i / d x_j = y_i / x_j for j <= i
        return _reverse_cumsum(grad_out * y, 1) / x

    @staticmethod
    def example_inputs():
        return (_away_from_zero(61),)


class CumprodBackwardPrefixSum(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the sum over later outputs is written as a plain cumsum (a prefix sum)"}

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, dim=1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return torch.cumsum(grad_out * y, dim=1) / x  # BUG

    @staticmethod
    def example_inputs():
        return (_away_from_zero(61),)


class CumprodDividesByOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "divides by the saved output y where the input x belongs"}

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, dim=1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return _reverse_cumsum(grad_out * y, 1) / y  # BUG

    @staticmethod
    def example_inputs():
        return (_away_from_zero(61),)


# ------------------------------------------------------------- discounted returns (RL)
def _discounted_suffix(rewards):
    """G_t = r_t + DISCOUNT * G_{t+1}, along dim 1."""
    steps = rewards.shape[1]
    out = [None] * steps
    running = rewards[:, steps - 1]
    out[steps - 1] = running
    for t in range(steps - 2, -1, -1):
        running = rewards[:, t] + DISCOUNT * running
        out[t] = running
    return torch.stack(out, dim=1)


def _discounted_prefix(grads):
    """H_t = g_t + DISCOUNT * H_{t-1}, along dim 1: the transpose of _discounted_suffix."""
    steps = grads.shape[1]
    running = grads[:, 0]
    out = [running]
    for t in range(1, steps):
        running = grads[:, t] + DISCOUNT * running
        out.append(running)
    return torch.stack(out, dim=1)


class DiscountedReturns(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, rewards):
        return _discounted_suffix(rewards)

    @staticmethod
    def backward(ctx, grad_out):
        return _discounted_prefix(grad_out)


class DiscountedReturnsBackwardSameDirection(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "rewards",
           "note": "backward reuses forward's backward-in-time recursion; its transpose runs "
                   "forward in time"}

    @staticmethod
    def forward(ctx, rewards):
        return _discounted_suffix(rewards)

    @staticmethod
    def backward(ctx, grad_out):
        return _discounted_suffix(grad_out)  # BUG
