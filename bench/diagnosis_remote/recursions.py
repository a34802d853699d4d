"""Recursive filters and scans: a one-pole IIR filter unrolled by a Python loop with a learnable
feedback coefficient, an integrator by cumsum, and a cascade of gains by cumprod."""
import torch


def _g(seed):
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------ one-pole IIR
def _one_pole(x, a):
    ys, prev = [], torch.zeros_like(x[:, 0])
    for t in range(x.shape[1]):
        prev = x[:, t] + a * prev
        ys.append(prev)
    return torch.stack(ys, dim=1)


def _pole_inputs(seed):
    return (torch.randn(3, 6, dtype=torch.float64, generator=_g(seed)),
            torch.tensor([0.7], dtype=torch.float64))


class RemoteOnePole(torch.autograd.Function):
    """y[t] = x[t] + coef * y[t-1], y[-1] = 0, over (B, T)."""
    bug = None

    @staticmethod
    def forward(ctx, x, coef):
        y = _one_pole(x, coef)
        ctx.save_for_backward(y, coef)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        y, coef = ctx.saved_tensors
        grad_x = torch.zeros_like(grad_y)
        carry = torch.zeros_like(grad_y[:, 0])
        for t in reversed(range(grad_y.shape[1])):
            carry = grad_y[:, t] + coef * carry
            grad_x[:, t] = carry
        grad_coef = (grad_x[:, 1:] * y[:, :-1]).sum().reshape(1)
        return grad_x, grad_coef

    @staticmethod
    def example_inputs():
        return _pole_inputs(80)


class RemoteOnePoleForwardScan(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the adjoint recursion runs forward in time (range(T)) instead of from the end (reversed)"}

    @staticmethod
    def forward(ctx, x, coef):
        y = _one_pole(x, coef)
        ctx.save_for_backward(y, coef)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        y, coef = ctx.saved_tensors
        grad_x = _one_pole(grad_y, coef)  # BUG
        grad_coef = (grad_x[:, 1:] * y[:, :-1]).sum().reshape(1)
        return grad_x, grad_coef

    @staticmethod
    def example_inputs():
        return _pole_inputs(81)


class RemoteOnePoleCoefSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "coef",
           "note": "the coefficient's gradient is negated, as for the y[t] = x[t] - a y[t-1] convention"}

    @staticmethod
    def forward(ctx, x, coef):
        y = _one_pole(x, coef)
        ctx.save_for_backward(y, coef)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        y, coef = ctx.saved_tensors
        grad_x = torch.zeros_like(grad_y)
        carry = torch.zeros_like(grad_y[:, 0])
        for t in reversed(range(grad_y.shape[1])):
            carry = grad_y[:, t] + coef * carry
            grad_x[:, t] = carry
        grad_coef = -(grad_x[:, 1:] * y[:, :-1]).sum().reshape(1)  # BUG
        return grad_x, grad_coef

    @staticmethod
    def example_inputs():
        return _pole_inputs(82)


# ------------------------------------------------------------------ integrator
class RemoteIntegrator(torch.autograd.Function):
    """A running sum over time (B, T): y = cumsum(x, -1) * dt."""
    bug = None

    @staticmethod
    def forward(ctx, x, dt: float = 0.5):
        ctx.dt = dt
        return torch.cumsum(x, dim=-1) * dt

    @staticmethod
    def backward(ctx, grad_y):
        return torch.cumsum(grad_y.flip(-1), dim=-1).flip(-1) * ctx.dt, None

    @staticmethod
    def example_inputs():
        return torch.randn(3, 5, dtype=torch.float64, generator=_g(83)), 0.5


class RemoteIntegratorNoFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the backward of cumsum is a suffix sum; a plain cumsum of grad_y (no flips) is returned"}

    @staticmethod
    def forward(ctx, x, dt: float = 0.5):
        ctx.dt = dt
        return torch.cumsum(x, dim=-1) * dt

    @staticmethod
    def backward(ctx, grad_y):
        return torch.cumsum(grad_y, dim=-1) * ctx.dt, None  # BUG

    @staticmethod
    def example_inputs():
        return torch.randn(3, 5, dtype=torch.float64, generator=_g(84)), 0.5


class RemoteIntegratorBatchDim(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the suffix sum runs over dim 0 (the batch) instead of time"}

    @staticmethod
    def forward(ctx, x, dt: float = 0.5):
        ctx.dt = dt
        return torch.cumsum(x, dim=-1) * dt

    @staticmethod
    def backward(ctx, grad_y):
        suffix = torch.cumsum(grad_y.flip(0), dim=0).flip(0)  # BUG
        return suffix * ctx.dt, None

    @staticmethod
    def example_inputs():
        return torch.randn(3, 5, dtype=torch.float64, generator=_g(85)), 0.5


# ------------------------------------------------------------------ cascade of gains
def _gains(seed):
    return (torch.rand(3, 5, dtype=torch.float64, generator=_g(seed)) + 0.5,)


class RemoteGainCascade(torch.autograd.Function):
    """y = cumprod(x, -1): the running product of positive stage gains."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, dim=-1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, y = ctx.saved_tensors
        return torch.cumsum((grad_y * y).flip(-1), dim=-1).flip(-1) / x

    @staticmethod
    def example_inputs():
        return _gains(86)


class RemoteGainCascadeNoGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "the suffix sum of y / x is returned without weighting by grad_y"}

    @staticmethod
    def forward(ctx, x):
        y = torch.cumprod(x, dim=-1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, y = ctx.saved_tensors
        return torch.cumsum(y.flip(-1), dim=-1).flip(-1) / x  # BUG

    @staticmethod
    def example_inputs():
        return _gains(87)
