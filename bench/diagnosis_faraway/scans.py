"""Scans from time stepping: a leaky integrator h_t = a h_{t-1} + x_t (explicit Euler of
dh/dt = -k h + x) written as a loop, a cumulative Riemann integral by cumsum with a learnable step,
a survival curve by cumprod."""
import torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _leaky_inputs():
    g = _gen(41)
    return (torch.randn(3, 6, dtype=torch.float64, generator=g),
            torch.tensor([0.8], dtype=torch.float64))


def _leaky_forward(ctx, x, a):
    hs, h = [], torch.zeros_like(x[:, 0])
    for t in range(x.shape[1]):
        h = a * h + x[:, t]
        hs.append(h)
    out = torch.stack(hs, 1)
    ctx.save_for_backward(out, a)
    return out


class FarawayLeakyIntegrator(torch.autograd.Function):
    """h_t = a * h_{t-1} + x_t over the time dim, h_{-1} = 0; backward as a reverse-time loop."""
    bug = None

    @staticmethod
    def forward(ctx, x, a):
        return _leaky_forward(ctx, x, a)

    @staticmethod
    def backward(ctx, grad_h):
        h, a = ctx.saved_tensors
        T = h.shape[1]
        grad_x = torch.zeros_like(grad_h)
        carry = torch.zeros_like(grad_h[:, 0])
        for t in reversed(range(T)):
            carry = grad_h[:, t] + a * carry
            grad_x[:, t] = carry
        prev = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], 1)
        grad_a = (grad_x * prev).sum().reshape(1)
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _leaky_inputs()


class FarawayLeakyIntegratorForwardLoop(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the adjoint recurrence runs forward in time (t = 0..T-1) instead of in reverse"}

    @staticmethod
    def forward(ctx, x, a):
        return _leaky_forward(ctx, x, a)

    @staticmethod
    def backward(ctx, grad_h):
        h, a = ctx.saved_tensors
        T = h.shape[1]
        grad_x = torch.zeros_like(grad_h)
        carry = torch.zeros_like(grad_h[:, 0])
        for t in range(T):  # BUG
            carry = grad_h[:, t] + a * carry
            grad_x[:, t] = carry
        prev = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], 1)
        grad_a = (grad_x * prev).sum().reshape(1)
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _leaky_inputs()


class FarawayLeakyIntegratorCurrentState(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "a",
           "note": "the decay's gradient pairs the adjoint with h_t instead of the previous state h_{t-1}"}

    @staticmethod
    def forward(ctx, x, a):
        return _leaky_forward(ctx, x, a)

    @staticmethod
    def backward(ctx, grad_h):
        h, a = ctx.saved_tensors
        T = h.shape[1]
        grad_x = torch.zeros_like(grad_h)
        carry = torch.zeros_like(grad_h[:, 0])
        for t in reversed(range(T)):
            carry = grad_h[:, t] + a * carry
            grad_x[:, t] = carry
        grad_a = (grad_x * h).sum().reshape(1)  # BUG
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _leaky_inputs()


def _cumint_inputs():
    g = _gen(42)
    return (torch.randn(2, 3, 5, dtype=torch.float64, generator=g),
            torch.tensor([0.25], dtype=torch.float64))


class FarawayCumulativeIntegral(torch.autograd.Function):
    """Running left-Riemann integral F_t = h * sum_{s<=t} f_s along the last dim."""
    bug = None

    @staticmethod
    def forward(ctx, f, h):
        running = torch.cumsum(f, dim=-1)
        ctx.save_for_backward(running, h)
        return h * running

    @staticmethod
    def backward(ctx, grad_F):
        running, h = ctx.saved_tensors
        grad_f = h * torch.cumsum(grad_F.flip(-1), dim=-1).flip(-1)
        grad_h = (grad_F * running).sum().reshape(1)
        return grad_f, grad_h

    @staticmethod
    def example_inputs():
        return _cumint_inputs()


class FarawayCumulativeIntegralNoFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "f",
           "note": "the adjoint of a cumsum is a suffix sum; a plain cumsum of grad_F is used instead"}

    @staticmethod
    def forward(ctx, f, h):
        running = torch.cumsum(f, dim=-1)
        ctx.save_for_backward(running, h)
        return h * running

    @staticmethod
    def backward(ctx, grad_F):
        running, h = ctx.saved_tensors
        grad_f = h * torch.cumsum(grad_F, dim=-1)  # BUG
        grad_h = (grad_F * running).sum().reshape(1)
        return grad_f, grad_h

    @staticmethod
    def example_inputs():
        return _cumint_inputs()


class FarawayCumulativeIntegralFixedStep(torch.autograd.Function):
    bug = {"kind": "zero", "input": "h",
           "note": "the step is taken for a constant and gets a zero gradient"}

    @staticmethod
    def forward(ctx, f, h):
        running = torch.cumsum(f, dim=-1)
        ctx.save_for_backward(running, h)
        return h * running

    @staticmethod
    def backward(ctx, grad_F):
        running, h = ctx.saved_tensors
        grad_f = h * torch.cumsum(grad_F.flip(-1), dim=-1).flip(-1)
        grad_h = torch.zeros_like(h)  # BUG
        return grad_f, grad_h

    @staticmethod
    def example_inputs():
        return _cumint_inputs()


def _survival_inputs():
    return (torch.rand(3, 5, dtype=torch.float64, generator=_gen(43)) * 0.6 + 0.1,)


class FarawaySurvivalCurve(torch.autograd.Function):
    """S_t = prod_{s<=t} (1 - p_s): survival from per-step hazards p in (0, 1)."""
    bug = None

    @staticmethod
    def forward(ctx, p):
        q = 1 - p
        S = torch.cumprod(q, dim=1)
        ctx.save_for_backward(q, S)
        return S

    @staticmethod
    def backward(ctx, grad_S):
        q, S = ctx.saved_tensors
        tail = torch.cumsum((grad_S * S).flip(1), dim=1).flip(1)
        return -tail / q

    @staticmethod
    def example_inputs():
        return _survival_inputs()


class FarawaySurvivalCurveLogInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "p",
           "note": "S is built as exp(cumsum(log q)) with q.log_() in place after q was saved, so backward divides by log q"}

    @staticmethod
    def forward(ctx, p):
        q = 1 - p
        ctx.save_for_backward(q)
        S = torch.cumsum(q.log_(), dim=1).exp()  # BUG
        ctx.S = S
        return S

    @staticmethod
    def backward(ctx, grad_S):
        (q,) = ctx.saved_tensors
        S = ctx.S
        tail = torch.cumsum((grad_S * S).flip(1), dim=1).flip(1)
        return -tail / q

    @staticmethod
    def example_inputs():
        return _survival_inputs()
