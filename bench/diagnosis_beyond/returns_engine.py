import gradcli as torch
import math

"""Discounted returns and exponential smoothing on gradcli's numpy engine, by Python loops over
time: G_t = r_t + gamma G_{t+1} computed backwards with a learned discount, and an exponential
moving average e_t = alpha e_{t-1} + (1 - alpha) x_t with a learned decay."""


def _reward_inputs():
    gen = torch.Generator().manual_seed(101)
    rewards = torch.randn(2, 5, generator=gen, dtype=torch.float64)
    gamma = torch.tensor([0.8], dtype=torch.float64)
    return rewards.requires_grad_(), gamma.requires_grad_()


def _returns(ctx, rewards, gamma):
    T = rewards.shape[1]
    G = [None] * (T + 1)
    G[T] = torch.zeros_like(rewards[:, 0])
    for t in reversed(range(T)):
        G[t] = rewards[:, t] + gamma * G[t + 1]
    G = torch.stack(G, dim=1)  # (B, T + 1), the last column is the zero bootstrap
    ctx.save_for_backward(gamma, G)
    return G[:, :T]


class BeyondDiscountedReturn(torch.autograd.Function):
    """Returns G (B, T); the adjoint runs forwards in time: lam_t = g_t + gamma lam_{t-1}."""
    bug = None

    @staticmethod
    def forward(ctx, rewards, gamma):
        return _returns(ctx, rewards, gamma)

    @staticmethod
    def backward(ctx, grad_out):
        gamma, G = ctx.saved_tensors
        T = grad_out.shape[1]
        lam = []
        carry = torch.zeros_like(grad_out[:, 0])
        for t in range(T):
            carry = grad_out[:, t] + gamma * carry
            lam.append(carry)
        lam = torch.stack(lam, dim=1)
        grad_gamma = (lam * G[:, 1:]).sum().reshape(1)
        return lam, grad_gamma

    @staticmethod
    def example_inputs():
        return _reward_inputs()


class BeyondDiscountedReturnSameStep(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "gamma",
           "note": "the discount gradient multiplies lam_t by G_t instead of the next return G_{t+1} that gamma scales"}

    @staticmethod
    def forward(ctx, rewards, gamma):
        return _returns(ctx, rewards, gamma)

    @staticmethod
    def backward(ctx, grad_out):
        gamma, G = ctx.saved_tensors
        T = grad_out.shape[1]
        lam = []
        carry = torch.zeros_like(grad_out[:, 0])
        for t in range(T):
            carry = grad_out[:, t] + gamma * carry
            lam.append(carry)
        lam = torch.stack(lam, dim=1)
        grad_gamma = (lam * G[:, :T]).sum().reshape(1)  # BUG
        return lam, grad_gamma

    @staticmethod
    def example_inputs():
        return _reward_inputs()


class BeyondDiscountedReturnFixedGamma(torch.autograd.Function):
    bug = {"kind": "zero", "input": "gamma",
           "note": "the discount is treated as a constant and returns no gradient although it is learned"}

    @staticmethod
    def forward(ctx, rewards, gamma):
        return _returns(ctx, rewards, gamma)

    @staticmethod
    def backward(ctx, grad_out):
        gamma, G = ctx.saved_tensors
        T = grad_out.shape[1]
        lam = []
        carry = torch.zeros_like(grad_out[:, 0])
        for t in range(T):
            carry = grad_out[:, t] + gamma * carry
            lam.append(carry)
        return torch.stack(lam, dim=1), None  # BUG

    @staticmethod
    def example_inputs():
        return _reward_inputs()


# ------------------------------------------------------------------------------ exponential moving average
def _ema_inputs():
    gen = torch.Generator().manual_seed(102)
    x = torch.randn(2, 6, generator=gen, dtype=torch.float64)
    alpha = torch.tensor([0.7], dtype=torch.float64)
    return x.requires_grad_(), alpha.requires_grad_()


def _ema(ctx, x, alpha):
    e = [x[:, 0]]
    for t in range(1, x.shape[1]):
        e.append(alpha * e[t - 1] + (1 - alpha) * x[:, t])
    e = torch.stack(e, dim=1)
    ctx.save_for_backward(x, alpha, e)
    return e


class BeyondMovingAverage(torch.autograd.Function):
    """e_0 = x_0, e_t = alpha e_{t-1} + (1 - alpha) x_t; the adjoint runs backwards in time."""
    bug = None

    @staticmethod
    def forward(ctx, x, alpha):
        return _ema(ctx, x, alpha)

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha, e = ctx.saved_tensors
        T = x.shape[1]
        grad_x = [None] * T
        grad_alpha = torch.zeros_like(alpha)
        lam = torch.zeros_like(x[:, 0])
        for t in reversed(range(1, T)):
            lam = grad_out[:, t] + alpha * lam
            grad_x[t] = (1 - alpha) * lam
            grad_alpha = grad_alpha + (lam * (e[:, t - 1] - x[:, t])).sum()
        grad_x[0] = grad_out[:, 0] + alpha * lam
        return torch.stack(grad_x, dim=1), grad_alpha

    @staticmethod
    def example_inputs():
        return _ema_inputs()


class BeyondMovingAverageDecaySign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "alpha",
           "note": "d e_t / d alpha is taken as e_{t-1} + x_t, the (1 - alpha) x_t term's derivative added instead of subtracted"}

    @staticmethod
    def forward(ctx, x, alpha):
        return _ema(ctx, x, alpha)

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha, e = ctx.saved_tensors
        T = x.shape[1]
        grad_x = [None] * T
        grad_alpha = torch.zeros_like(alpha)
        lam = torch.zeros_like(x[:, 0])
        for t in reversed(range(1, T)):
            lam = grad_out[:, t] + alpha * lam
            grad_x[t] = (1 - alpha) * lam
            grad_alpha = grad_alpha + (lam * (e[:, t - 1] + x[:, t])).sum()  # BUG
        grad_x[0] = grad_out[:, 0] + alpha * lam
        return torch.stack(grad_x, dim=1), grad_alpha

    @staticmethod
    def example_inputs():
        return _ema_inputs()
