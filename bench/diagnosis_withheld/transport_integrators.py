"""Optimal transport and integrators: three Sinkhorn half-iterations on a Gibbs kernel, an explicit
Euler step of a tanh vector field, an RK2 midpoint step, a leapfrog step of a pendulum (two
outputs) and a causal FIR filter along time."""
import torch
import torch.nn.functional as F

EPS = 0.5
H = 0.1


def _normalise(x, dim):
    s = x.sum(dim, keepdim=True)
    return x / s, s


def _normalise_vjp(g, y, s, dim):
    return (g - (g * y).sum(dim, keepdim=True)) / s


class WithheldSinkhornThreeSteps(torch.autograd.Function):
    """Rows, columns, rows: the plan after 1.5 Sinkhorn iterations of exp(-C / eps)."""
    bug = None

    @staticmethod
    def forward(ctx, cost):
        kernel = torch.exp(-cost / EPS)
        p1, s1 = _normalise(kernel, 1)
        p2, s2 = _normalise(p1, 0)
        p3, s3 = _normalise(p2, 1)
        ctx.save_for_backward(kernel, p1, s1, p2, s2, p3, s3)
        return p3

    @staticmethod
    def backward(ctx, grad_out):
        kernel, p1, s1, p2, s2, p3, s3 = ctx.saved_tensors
        g = _normalise_vjp(grad_out, p3, s3, 1)
        g = _normalise_vjp(g, p2, s2, 0)
        g = _normalise_vjp(g, p1, s1, 1)
        return -g * kernel / EPS


class WithheldSinkhornColumnStepOnRows(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "cost",
           "note": "the column normalisation's backward reduces over rows (dim 1) instead of dim 0"}

    @staticmethod
    def forward(ctx, cost):
        kernel = torch.exp(-cost / EPS)
        p1, s1 = _normalise(kernel, 1)
        p2, s2 = _normalise(p1, 0)
        p3, s3 = _normalise(p2, 1)
        ctx.save_for_backward(kernel, p1, s1, p2, s2, p3, s3)
        return p3

    @staticmethod
    def backward(ctx, grad_out):
        kernel, p1, s1, p2, s2, p3, s3 = ctx.saved_tensors
        g = _normalise_vjp(grad_out, p3, s3, 1)
        g = (g - (g * p2).sum(1, keepdim=True)) / s2  # BUG
        g = _normalise_vjp(g, p1, s1, 1)
        return -g * kernel / EPS


class WithheldSinkhornKernelSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "cost",
           "note": "d exp(-C/eps)/dC = -exp(-C/eps)/eps: the minus is lost"}

    @staticmethod
    def forward(ctx, cost):
        kernel = torch.exp(-cost / EPS)
        p1, s1 = _normalise(kernel, 1)
        p2, s2 = _normalise(p1, 0)
        p3, s3 = _normalise(p2, 1)
        ctx.save_for_backward(kernel, p1, s1, p2, s2, p3, s3)
        return p3

    @staticmethod
    def backward(ctx, grad_out):
        kernel, p1, s1, p2, s2, p3, s3 = ctx.saved_tensors
        g = _normalise_vjp(grad_out, p3, s3, 1)
        g = _normalise_vjp(g, p2, s2, 0)
        g = _normalise_vjp(g, p1, s1, 1)
        return g * kernel / EPS  # BUG


def _euler_inputs():
    gen = torch.Generator().manual_seed(21)
    y = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    w = torch.randn(4, 4, dtype=torch.float64, generator=gen)
    return y.requires_grad_(), w.requires_grad_()


class WithheldEulerStep(torch.autograd.Function):
    """y_next = y + h * tanh(y @ W)."""
    bug = None

    @staticmethod
    def forward(ctx, y, weight):
        a = torch.tanh(y @ weight)
        ctx.save_for_backward(y, weight, a)
        return y + H * a

    @staticmethod
    def backward(ctx, grad_out):
        y, weight, a = ctx.saved_tensors
        grad_z = H * grad_out * (1 - a.pow(2))
        return grad_out + grad_z @ weight.t(), y.t() @ grad_z

    @staticmethod
    def example_inputs():
        return _euler_inputs()


class WithheldEulerStepNoSkip(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "y",
           "note": "the identity path of y + h f(y) is dropped: only the vector field's gradient is returned"}

    @staticmethod
    def forward(ctx, y, weight):
        a = torch.tanh(y @ weight)
        ctx.save_for_backward(y, weight, a)
        return y + H * a

    @staticmethod
    def backward(ctx, grad_out):
        y, weight, a = ctx.saved_tensors
        grad_z = H * grad_out * (1 - a.pow(2))
        grad_y = grad_z @ weight.t()  # BUG
        return grad_y, y.t() @ grad_z

    @staticmethod
    def example_inputs():
        return _euler_inputs()


class WithheldEulerStepWeightNotTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "y",
           "note": "grad_z @ W instead of grad_z @ W^T (W is square, so the shapes agree)"}

    @staticmethod
    def forward(ctx, y, weight):
        a = torch.tanh(y @ weight)
        ctx.save_for_backward(y, weight, a)
        return y + H * a

    @staticmethod
    def backward(ctx, grad_out):
        y, weight, a = ctx.saved_tensors
        grad_z = H * grad_out * (1 - a.pow(2))
        return grad_out + grad_z @ weight, y.t() @ grad_z  # BUG

    @staticmethod
    def example_inputs():
        return _euler_inputs()


class WithheldEulerStepSigmoidDerivative(torch.autograd.Function):
    bug = {"kind": "none", "input": "weight",
           "note": "the backward uses the logistic sigmoid's derivative a(1-a) for the tanh field"}

    @staticmethod
    def forward(ctx, y, weight):
        a = torch.tanh(y @ weight)
        ctx.save_for_backward(y, weight, a)
        return y + H * a

    @staticmethod
    def backward(ctx, grad_out):
        y, weight, a = ctx.saved_tensors
        grad_z = H * grad_out * a * (1 - a)  # BUG
        return grad_out + grad_z @ weight.t(), y.t() @ grad_z

    @staticmethod
    def example_inputs():
        return _euler_inputs()


class WithheldMidpointStep(torch.autograd.Function):
    """RK2 midpoint step of dy/dt = sin(y) with h = 0.3, elementwise."""
    bug = None

    @staticmethod
    def forward(ctx, y):
        h = 0.3
        y_mid = y + 0.5 * h * torch.sin(y)
        ctx.save_for_backward(y, y_mid)
        return y + h * torch.sin(y_mid)

    @staticmethod
    def backward(ctx, grad_out):
        y, y_mid = ctx.saved_tensors
        h = 0.3
        return grad_out * (1 + h * torch.cos(y_mid) * (1 + 0.5 * h * torch.cos(y)))


class WithheldMidpointStepCosAtStart(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "y",
           "note": "the outer stage's derivative cos is taken at y instead of at the midpoint y_mid"}

    @staticmethod
    def forward(ctx, y):
        h = 0.3
        y_mid = y + 0.5 * h * torch.sin(y)
        ctx.save_for_backward(y, y_mid)
        return y + h * torch.sin(y_mid)

    @staticmethod
    def backward(ctx, grad_out):
        y, y_mid = ctx.saved_tensors
        h = 0.3
        return grad_out * (1 + h * torch.cos(y) * (1 + 0.5 * h * torch.cos(y)))  # BUG


class WithheldLeapfrogPendulum(torch.autograd.Function):
    """One kick-drift-kick step of q'' = -sin(q), h = 0.2: returns (q_next, p_next)."""
    bug = None

    @staticmethod
    def forward(ctx, q, p):
        h = 0.2
        p_half = p - 0.5 * h * torch.sin(q)
        q_next = q + h * p_half
        p_next = p_half - 0.5 * h * torch.sin(q_next)
        ctx.save_for_backward(q, q_next)
        return q_next, p_next

    @staticmethod
    def backward(ctx, grad_q_next, grad_p_next):
        q, q_next = ctx.saved_tensors
        h = 0.2
        g_q_next = grad_q_next - grad_p_next * 0.5 * h * torch.cos(q_next)
        g_p_half = grad_p_next + h * g_q_next
        grad_q = g_q_next - g_p_half * 0.5 * h * torch.cos(q)
        return grad_q, g_p_half


class WithheldLeapfrogPendulumFirstKick(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "q",
           "note": "the first kick's term -h/2 cos(q) enters grad_q with a plus"}

    @staticmethod
    def forward(ctx, q, p):
        h = 0.2
        p_half = p - 0.5 * h * torch.sin(q)
        q_next = q + h * p_half
        p_next = p_half - 0.5 * h * torch.sin(q_next)
        ctx.save_for_backward(q, q_next)
        return q_next, p_next

    @staticmethod
    def backward(ctx, grad_q_next, grad_p_next):
        q, q_next = ctx.saved_tensors
        h = 0.2
        g_q_next = grad_q_next - grad_p_next * 0.5 * h * torch.cos(q_next)
        g_p_half = grad_p_next + h * g_q_next
        grad_q = g_q_next + g_p_half * 0.5 * h * torch.cos(q)  # BUG
        return grad_q, g_p_half


def _fir_inputs():
    gen = torch.Generator().manual_seed(13)
    x = torch.randn(3, 6, dtype=torch.float64, generator=gen)
    taps = torch.tensor([0.6, -0.3, 0.2], dtype=torch.float64)
    return x.requires_grad_(), taps.requires_grad_()


class WithheldCausalFIR(torch.autograd.Function):
    """y[:, t] = sum_k taps[k] * x[:, t - k] (zero before t = 0), 3 taps along dim 1."""
    bug = None

    @staticmethod
    def forward(ctx, x, taps):
        xp = F.pad(x, (2, 0))
        ctx.save_for_backward(xp, taps)
        return sum(taps[k] * xp[:, 2 - k:8 - k] for k in range(3))

    @staticmethod
    def backward(ctx, grad_out):
        xp, taps = ctx.saved_tensors
        gp = F.pad(grad_out, (0, 2))
        grad_x = sum(taps[k] * gp[:, k:k + 6] for k in range(3))
        grad_taps = torch.stack([(grad_out * xp[:, 2 - k:8 - k]).sum() for k in range(3)])
        return grad_x, grad_taps

    @staticmethod
    def example_inputs():
        return _fir_inputs()


class WithheldCausalFIRInputGradCausal(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the input gradient runs the same causal filter over grad_out instead of the time-reversed one"}

    @staticmethod
    def forward(ctx, x, taps):
        xp = F.pad(x, (2, 0))
        ctx.save_for_backward(xp, taps)
        return sum(taps[k] * xp[:, 2 - k:8 - k] for k in range(3))

    @staticmethod
    def backward(ctx, grad_out):
        xp, taps = ctx.saved_tensors
        gp = F.pad(grad_out, (2, 0))
        grad_x = sum(taps[k] * gp[:, 2 - k:8 - k] for k in range(3))  # BUG
        grad_taps = torch.stack([(grad_out * xp[:, 2 - k:8 - k]).sum() for k in range(3)])
        return grad_x, grad_taps

    @staticmethod
    def example_inputs():
        return _fir_inputs()
