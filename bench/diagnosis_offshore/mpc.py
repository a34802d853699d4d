"""A differentiable MPC rollout cost: linear dynamics x_{t+1} = A x_t + B u_t from x0, cost
sum_t |x_{t+1}|^2 + rho |u_t|^2 (rho a float), backward by the adjoint (costate) recursion run
backwards in time; a weighted tracking cost against a reference trajectory; a control-rate
penalty by unfold; and a bang-bang thruster with a tanh surrogate gradient."""
import torch


def _rollout_inputs():
    gen = torch.Generator().manual_seed(53)
    x0 = torch.randn(3, generator=gen, dtype=torch.float64)
    U = torch.randn(4, 3, generator=gen, dtype=torch.float64)
    A = torch.randn(3, 3, generator=gen, dtype=torch.float64) * 0.5
    B = torch.randn(3, 3, generator=gen, dtype=torch.float64)
    return x0, U, A, B, 0.3


def _rollout_forward(ctx, x0, U, A, B, rho):
    xs = [x0]
    for t in range(U.shape[0]):
        xs.append(A @ xs[-1] + B @ U[t])
    states = torch.stack(xs)
    ctx.save_for_backward(states, U, A, B)
    ctx.rho = rho
    return (states[1:] ** 2).sum() + rho * (U ** 2).sum()


class OffshoreMPCRollout(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x0, U, A, B, rho):
        return _rollout_forward(ctx, x0, U, A, B, rho)

    @staticmethod
    def backward(ctx, grad_out):
        states, U, A, B = ctx.saved_tensors
        T = U.shape[0]
        lam_next = torch.zeros_like(states[0])
        grad_U = torch.zeros_like(U)
        grad_A = torch.zeros_like(A)
        grad_B = torch.zeros_like(B)
        for t in reversed(range(T)):
            lam = 2 * states[t + 1] + A.T @ lam_next
            grad_U[t] = B.T @ lam + 2 * ctx.rho * U[t]
            grad_A += torch.outer(lam, states[t])
            grad_B += torch.outer(lam, U[t])
            lam_next = lam
        grad_x0 = A.T @ lam_next
        return grad_out * grad_x0, grad_out * grad_U, grad_out * grad_A, grad_out * grad_B, None

    @staticmethod
    def example_inputs():
        return _rollout_inputs()


class OffshoreMPCRolloutGradAOverwritten(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "A",
           "note": "A's gradient is assigned at each step of the adjoint loop, so only the first step's outer product survives"}

    @staticmethod
    def forward(ctx, x0, U, A, B, rho):
        return _rollout_forward(ctx, x0, U, A, B, rho)

    @staticmethod
    def backward(ctx, grad_out):
        states, U, A, B = ctx.saved_tensors
        T = U.shape[0]
        lam_next = torch.zeros_like(states[0])
        grad_U = torch.zeros_like(U)
        grad_A = torch.zeros_like(A)
        grad_B = torch.zeros_like(B)
        for t in reversed(range(T)):
            lam = 2 * states[t + 1] + A.T @ lam_next
            grad_U[t] = B.T @ lam + 2 * ctx.rho * U[t]
            grad_A = torch.outer(lam, states[t])  # BUG
            grad_B += torch.outer(lam, U[t])
            lam_next = lam
        grad_x0 = A.T @ lam_next
        return grad_out * grad_x0, grad_out * grad_U, grad_out * grad_A, grad_out * grad_B, None

    @staticmethod
    def example_inputs():
        return _rollout_inputs()


class OffshoreMPCRolloutAdjointNoTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x0",
           "note": "the costate is propagated with A instead of A^T (every input's gradient is wrong; x0 is the first)"}

    @staticmethod
    def forward(ctx, x0, U, A, B, rho):
        return _rollout_forward(ctx, x0, U, A, B, rho)

    @staticmethod
    def backward(ctx, grad_out):
        states, U, A, B = ctx.saved_tensors
        T = U.shape[0]
        lam_next = torch.zeros_like(states[0])
        grad_U = torch.zeros_like(U)
        grad_A = torch.zeros_like(A)
        grad_B = torch.zeros_like(B)
        for t in reversed(range(T)):
            lam = 2 * states[t + 1] + A @ lam_next  # BUG
            grad_U[t] = B.T @ lam + 2 * ctx.rho * U[t]
            grad_A += torch.outer(lam, states[t])
            grad_B += torch.outer(lam, U[t])
            lam_next = lam
        grad_x0 = A.T @ lam_next
        return grad_out * grad_x0, grad_out * grad_U, grad_out * grad_A, grad_out * grad_B, None

    @staticmethod
    def example_inputs():
        return _rollout_inputs()


class OffshoreMPCRolloutNextState(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "A",
           "note": "A's gradient pairs the costate with the state after the step, x_{t+1}, instead of x_t"}

    @staticmethod
    def forward(ctx, x0, U, A, B, rho):
        return _rollout_forward(ctx, x0, U, A, B, rho)

    @staticmethod
    def backward(ctx, grad_out):
        states, U, A, B = ctx.saved_tensors
        T = U.shape[0]
        lam_next = torch.zeros_like(states[0])
        grad_U = torch.zeros_like(U)
        grad_A = torch.zeros_like(A)
        grad_B = torch.zeros_like(B)
        for t in reversed(range(T)):
            lam = 2 * states[t + 1] + A.T @ lam_next
            grad_U[t] = B.T @ lam + 2 * ctx.rho * U[t]
            grad_A += torch.outer(lam, states[t + 1])  # BUG
            grad_B += torch.outer(lam, U[t])
            lam_next = lam
        grad_x0 = A.T @ lam_next
        return grad_out * grad_x0, grad_out * grad_U, grad_out * grad_A, grad_out * grad_B, None

    @staticmethod
    def example_inputs():
        return _rollout_inputs()


class OffshoreMPCRolloutNoEffortTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "U",
           "note": "the controls' gradient keeps B^T lambda and drops the effort cost's 2 rho u_t"}

    @staticmethod
    def forward(ctx, x0, U, A, B, rho):
        return _rollout_forward(ctx, x0, U, A, B, rho)

    @staticmethod
    def backward(ctx, grad_out):
        states, U, A, B = ctx.saved_tensors
        T = U.shape[0]
        lam_next = torch.zeros_like(states[0])
        grad_U = torch.zeros_like(U)
        grad_A = torch.zeros_like(A)
        grad_B = torch.zeros_like(B)
        for t in reversed(range(T)):
            lam = 2 * states[t + 1] + A.T @ lam_next
            grad_U[t] = B.T @ lam  # BUG
            grad_A += torch.outer(lam, states[t])
            grad_B += torch.outer(lam, U[t])
            lam_next = lam
        grad_x0 = A.T @ lam_next
        return grad_out * grad_x0, grad_out * grad_U, grad_out * grad_A, grad_out * grad_B, None

    @staticmethod
    def example_inputs():
        return _rollout_inputs()


def _tracking_inputs():
    gen = torch.Generator().manual_seed(59)
    X = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    ref = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    w = torch.rand(3, generator=gen, dtype=torch.float64) + 0.5
    return X, ref, w


class OffshoreMPCTracking(torch.autograd.Function):
    """Tracking cost sum_t sum_i w_i (x_{t,i} - ref_{t,i})^2, a scalar."""

    bug = None

    @staticmethod
    def forward(ctx, X, ref, w):
        diff = X - ref
        ctx.save_for_backward(diff, w)
        return (w * diff * diff).sum()

    @staticmethod
    def backward(ctx, grad_out):
        diff, w = ctx.saved_tensors
        grad_X = 2 * grad_out * w * diff
        return grad_X, -grad_X, grad_out * (diff * diff).sum(dim=0)

    @staticmethod
    def example_inputs():
        return _tracking_inputs()


class OffshoreMPCTrackingKeepdim(torch.autograd.Function):
    """The same cost, the weights kept (1, n) through a keepdim reduction and squeezed at the end."""

    bug = None

    @staticmethod
    def forward(ctx, X, ref, w):
        diff = X - ref
        ctx.save_for_backward(diff, w)
        return (w.view(1, -1) * diff.pow(2)).sum()

    @staticmethod
    def backward(ctx, grad_out):
        diff, w = ctx.saved_tensors
        grad_w = diff.pow(2).sum(dim=0, keepdim=True) * grad_out
        grad_X = grad_out * 2 * w.view(1, -1) * diff
        return grad_X, grad_X.neg(), grad_w.squeeze(0)

    @staticmethod
    def example_inputs():
        return _tracking_inputs()


class OffshoreMPCTrackingRefSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "ref",
           "note": "the reference gets the state's gradient unchanged; the minus of d(x - ref)/dref is lost"}

    @staticmethod
    def forward(ctx, X, ref, w):
        diff = X - ref
        ctx.save_for_backward(diff, w)
        return (w * diff * diff).sum()

    @staticmethod
    def backward(ctx, grad_out):
        diff, w = ctx.saved_tensors
        grad_X = 2 * grad_out * w * diff
        grad_ref = 2 * grad_out * w * diff  # BUG
        return grad_X, grad_ref, grad_out * (diff * diff).sum(dim=0)

    @staticmethod
    def example_inputs():
        return _tracking_inputs()


class OffshoreMPCTrackingWeightDoubled(torch.autograd.Function):
    bug = {"kind": "scale", "input": "w",
           "note": "the weights' gradient carries the 2 of the square's derivative, which belongs to X only"}

    @staticmethod
    def forward(ctx, X, ref, w):
        diff = X - ref
        ctx.save_for_backward(diff, w)
        return (w * diff * diff).sum()

    @staticmethod
    def backward(ctx, grad_out):
        diff, w = ctx.saved_tensors
        grad_X = 2 * grad_out * w * diff
        grad_w = 2 * grad_out * (diff * diff).sum(dim=0)  # BUG
        return grad_X, -grad_X, grad_w

    @staticmethod
    def example_inputs():
        return _tracking_inputs()


class OffshoreMPCSlewPenalty(torch.autograd.Function):
    """Control-rate penalty sum_t |u_{t+1} - u_t|^2, the pairs taken by U.unfold(0, 2, 1)."""

    bug = None

    @staticmethod
    def forward(ctx, U):
        pairs = U.unfold(0, 2, 1)            # (T - 1, m, 2)
        rate = pairs[..., 1] - pairs[..., 0]
        ctx.save_for_backward(rate)
        return (rate ** 2).sum()

    @staticmethod
    def backward(ctx, grad_out):
        (rate,) = ctx.saved_tensors
        g = 2 * grad_out * rate
        zero = torch.zeros_like(rate[:1])
        return torch.cat([zero, g]) - torch.cat([g, zero])

    @staticmethod
    def example_inputs():
        return (_rollout_inputs()[1],)


class OffshoreBangBangThrusterSurrogate(torch.autograd.Function):
    """Bang-bang thruster u = umax sign(s) for a switching function s (umax = 2.0)."""

    bug = {"kind": "smooth_surrogate", "input": "s",
           "note": "deliberate: sign's zero derivative replaced by that of umax tanh(s / 0.5)"}

    @staticmethod
    def forward(ctx, s):
        ctx.save_for_backward(s)
        return 2.0 * torch.sign(s)

    @staticmethod
    def backward(ctx, grad_out):
        (s,) = ctx.saved_tensors
        return grad_out * 2.0 * (1 - torch.tanh(s / 0.5) ** 2) / 0.5  # BUG
