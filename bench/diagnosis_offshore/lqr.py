"""LQR quadratic costs: per-step c_t = x_t^T Q x_t + u_t^T R u_t + 2 x_t^T N u_t with learned (not
symmetric) Q, R and cross weight N, and a diagonal state cost sum_i q_i x_{i,t}^2 of a state
trajectory stored states x time (n, T)."""
import torch


def _lqr_inputs():
    gen = torch.Generator().manual_seed(23)
    X = torch.randn(4, 3, generator=gen, dtype=torch.float64)
    U = torch.randn(4, 3, generator=gen, dtype=torch.float64)
    Q = torch.randn(3, 3, generator=gen, dtype=torch.float64)
    R = torch.randn(3, 3, generator=gen, dtype=torch.float64)
    N = torch.randn(3, 3, generator=gen, dtype=torch.float64)
    return X, U, Q, R, N


def _lqr_forward(ctx, X, U, Q, R, N):
    ctx.save_for_backward(X, U, Q, R, N)
    return ((X @ Q) * X).sum(1) + ((U @ R) * U).sum(1) + 2 * ((X @ N) * U).sum(1)


class OffshoreLQRCost(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, X, U, Q, R, N):
        return _lqr_forward(ctx, X, U, Q, R, N)

    @staticmethod
    def backward(ctx, grad_out):
        X, U, Q, R, N = ctx.saved_tensors
        g = grad_out[:, None]
        grad_X = g * (X @ Q.T + X @ Q + 2 * U @ N.T)
        grad_U = g * (U @ R.T + U @ R + 2 * X @ N)
        grad_Q = X.T @ (g * X)
        grad_R = U.T @ (g * U)
        grad_N = 2 * X.T @ (g * U)
        return grad_X, grad_U, grad_Q, grad_R, grad_N

    @staticmethod
    def example_inputs():
        return _lqr_inputs()


class OffshoreLQRCostEinsum(torch.autograd.Function):
    """The same cost, backward by einsum and needs_input_grad."""

    bug = None

    @staticmethod
    def forward(ctx, X, U, Q, R, N):
        return _lqr_forward(ctx, X, U, Q, R, N)

    @staticmethod
    def backward(ctx, grad_out):
        X, U, Q, R, N = ctx.saved_tensors
        grads = [None] * 5
        if ctx.needs_input_grad[0]:
            grads[0] = torch.einsum("t,ij,tj->ti", grad_out, Q + Q.mT, X) + 2 * torch.einsum("t,ij,tj->ti", grad_out, N, U)
        if ctx.needs_input_grad[1]:
            grads[1] = torch.einsum("t,ij,tj->ti", grad_out, R + R.mT, U) + 2 * torch.einsum("t,ji,tj->ti", grad_out, N, X)
        if ctx.needs_input_grad[2]:
            grads[2] = torch.einsum("t,ti,tj->ij", grad_out, X, X)
        if ctx.needs_input_grad[3]:
            grads[3] = torch.einsum("t,ti,tj->ij", grad_out, U, U)
        if ctx.needs_input_grad[4]:
            grads[4] = 2 * torch.einsum("t,ti,tj->ij", grad_out, X, U)
        return tuple(grads)

    @staticmethod
    def example_inputs():
        return _lqr_inputs()


class OffshoreLQRCostOneSided(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "X",
           "note": "d(x^T Q x)/dx written Q x only: the Q^T x half is dropped (Q is not symmetric)"}

    @staticmethod
    def forward(ctx, X, U, Q, R, N):
        return _lqr_forward(ctx, X, U, Q, R, N)

    @staticmethod
    def backward(ctx, grad_out):
        X, U, Q, R, N = ctx.saved_tensors
        g = grad_out[:, None]
        grad_X = g * (X @ Q.T + 2 * U @ N.T)  # BUG
        grad_U = g * (U @ R.T + U @ R + 2 * X @ N)
        grad_Q = X.T @ (g * X)
        grad_R = U.T @ (g * U)
        grad_N = 2 * X.T @ (g * U)
        return grad_X, grad_U, grad_Q, grad_R, grad_N

    @staticmethod
    def example_inputs():
        return _lqr_inputs()


class OffshoreLQRCostCrossNoTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "U",
           "note": "the cross term's control gradient uses N x (X @ N.T) instead of N^T x (X @ N)"}

    @staticmethod
    def forward(ctx, X, U, Q, R, N):
        return _lqr_forward(ctx, X, U, Q, R, N)

    @staticmethod
    def backward(ctx, grad_out):
        X, U, Q, R, N = ctx.saved_tensors
        g = grad_out[:, None]
        grad_X = g * (X @ Q.T + X @ Q + 2 * U @ N.T)
        grad_U = g * (U @ R.T + U @ R + 2 * X @ N.T)  # BUG
        grad_Q = X.T @ (g * X)
        grad_R = U.T @ (g * U)
        grad_N = 2 * X.T @ (g * U)
        return grad_X, grad_U, grad_Q, grad_R, grad_N

    @staticmethod
    def example_inputs():
        return _lqr_inputs()


class OffshoreLQRCostRDoubled(torch.autograd.Function):
    bug = {"kind": "scale", "input": "R",
           "note": "the control weight's gradient carries a spurious 2 (as if u^T R u were differentiated in u)"}

    @staticmethod
    def forward(ctx, X, U, Q, R, N):
        return _lqr_forward(ctx, X, U, Q, R, N)

    @staticmethod
    def backward(ctx, grad_out):
        X, U, Q, R, N = ctx.saved_tensors
        g = grad_out[:, None]
        grad_X = g * (X @ Q.T + X @ Q + 2 * U @ N.T)
        grad_U = g * (U @ R.T + U @ R + 2 * X @ N)
        grad_Q = X.T @ (g * X)
        grad_R = 2 * U.T @ (g * U)  # BUG
        grad_N = 2 * X.T @ (g * U)
        return grad_X, grad_U, grad_Q, grad_R, grad_N

    @staticmethod
    def example_inputs():
        return _lqr_inputs()


class OffshoreLQRCostStateWeightNoGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "Q",
           "note": "Q's gradient is sum_t x_t x_t^T, the per-step grad_out never weighs it"}

    @staticmethod
    def forward(ctx, X, U, Q, R, N):
        return _lqr_forward(ctx, X, U, Q, R, N)

    @staticmethod
    def backward(ctx, grad_out):
        X, U, Q, R, N = ctx.saved_tensors
        g = grad_out[:, None]
        grad_X = g * (X @ Q.T + X @ Q + 2 * U @ N.T)
        grad_U = g * (U @ R.T + U @ R + 2 * X @ N)
        grad_Q = X.T @ X  # BUG
        grad_R = U.T @ (g * U)
        grad_N = 2 * X.T @ (g * U)
        return grad_X, grad_U, grad_Q, grad_R, grad_N

    @staticmethod
    def example_inputs():
        return _lqr_inputs()


def _diag_inputs():
    gen = torch.Generator().manual_seed(29)
    X = torch.randn(4, 4, generator=gen, dtype=torch.float64)   # n = T = 4
    q = torch.rand(4, generator=gen, dtype=torch.float64) + 0.5
    return X, q


class OffshoreLQRDiagCost(torch.autograd.Function):
    """c_t = sum_i q_i X[i, t]^2 for X of shape (n, T): one cost per time step."""

    bug = None

    @staticmethod
    def forward(ctx, X, q):
        ctx.save_for_backward(X, q)
        return (q[:, None] * X * X).sum(dim=0)

    @staticmethod
    def backward(ctx, grad_out):
        X, q = ctx.saved_tensors
        g = grad_out.unsqueeze(0)
        return 2 * q[:, None] * X * g, (X * X * g).sum(dim=1)

    @staticmethod
    def example_inputs():
        return _diag_inputs()


class OffshoreLQRDiagCostNotReduced(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "q",
           "note": "q's gradient is left (n, T), never summed over time; torch sums the (n,) broadcast over "
                   "the leading axis instead (n = T), so the values are wrong"}

    @staticmethod
    def forward(ctx, X, q):
        ctx.save_for_backward(X, q)
        return (q[:, None] * X * X).sum(dim=0)

    @staticmethod
    def backward(ctx, grad_out):
        X, q = ctx.saved_tensors
        g = grad_out.unsqueeze(0)
        grad_q = X * X * g  # BUG
        return 2 * q[:, None] * X * g, grad_q

    @staticmethod
    def example_inputs():
        return _diag_inputs()


class OffshoreLQRDiagCostStateAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "q",
           "note": "q's gradient sums over the states (dim 0) instead of over time (dim 1)"}

    @staticmethod
    def forward(ctx, X, q):
        ctx.save_for_backward(X, q)
        return (q[:, None] * X * X).sum(dim=0)

    @staticmethod
    def backward(ctx, grad_out):
        X, q = ctx.saved_tensors
        g = grad_out.unsqueeze(0)
        return 2 * q[:, None] * X * g, (X * X * g).sum(dim=0)  # BUG

    @staticmethod
    def example_inputs():
        return _diag_inputs()
