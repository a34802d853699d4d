"""A Kalman filter measurement update, elementwise for a batch of scalar filters (H = 1): gain
K = P / (P + R), state x+ = x + K (z - x), covariance P+ = (1 - K) P. Two outputs."""
import torch


def _kalman_inputs():
    gen = torch.Generator().manual_seed(41)
    x = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    P = torch.rand(3, 4, generator=gen, dtype=torch.float64) + 0.3
    z = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    R = torch.rand(3, 4, generator=gen, dtype=torch.float64) + 0.2
    return x, P, z, R


def _kalman_forward(ctx, x, P, z, R):
    S = P + R
    K = P / S
    ctx.save_for_backward(x, P, z, R, S, K)
    return x + K * (z - x), (1 - K) * P


class OffshoreKalmanUpdate(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, P, z, R):
        return _kalman_forward(ctx, x, P, z, R)

    @staticmethod
    def backward(ctx, grad_x_new, grad_P_new):
        x, P, z, R, S, K = ctx.saved_tensors
        innov = z - x
        grad_x = grad_x_new * (1 - K)
        grad_z = grad_x_new * K
        grad_P = grad_x_new * innov * R / S ** 2 + grad_P_new * R ** 2 / S ** 2
        grad_R = -grad_x_new * innov * P / S ** 2 + grad_P_new * P ** 2 / S ** 2
        return grad_x, grad_P, grad_z, grad_R

    @staticmethod
    def example_inputs():
        return _kalman_inputs()


class OffshoreKalmanUpdateNeedsGrad(torch.autograd.Function):
    """The same update; gradients only where asked, written through dK."""

    bug = None

    @staticmethod
    def forward(ctx, x, P, z, R):
        return _kalman_forward(ctx, x, P, z, R)

    @staticmethod
    def backward(ctx, grad_x_new, grad_P_new):
        x, P, z, R, S, K = ctx.saved_tensors
        grad_K = grad_x_new * (z - x) - grad_P_new * P
        out = [None, None, None, None]
        if ctx.needs_input_grad[0]:
            out[0] = grad_x_new * (1 - K)
        if ctx.needs_input_grad[1]:
            out[1] = grad_K * R / (S * S) + grad_P_new * (1 - K)
        if ctx.needs_input_grad[2]:
            out[2] = grad_x_new * K
        if ctx.needs_input_grad[3]:
            out[3] = -grad_K * P / (S * S)
        return tuple(out)

    @staticmethod
    def example_inputs():
        return _kalman_inputs()


class OffshoreKalmanNoiseTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "R",
           "note": "the state path of R's gradient is added: dK/dR = -P / S^2 taken as +P / S^2"}

    @staticmethod
    def forward(ctx, x, P, z, R):
        return _kalman_forward(ctx, x, P, z, R)

    @staticmethod
    def backward(ctx, grad_x_new, grad_P_new):
        x, P, z, R, S, K = ctx.saved_tensors
        innov = z - x
        grad_x = grad_x_new * (1 - K)
        grad_z = grad_x_new * K
        grad_P = grad_x_new * innov * R / S ** 2 + grad_P_new * R ** 2 / S ** 2
        grad_R = grad_x_new * innov * P / S ** 2 + grad_P_new * P ** 2 / S ** 2  # BUG
        return grad_x, grad_P, grad_z, grad_R

    @staticmethod
    def example_inputs():
        return _kalman_inputs()


class OffshoreKalmanPriorCovOnlyState(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "P",
           "note": "the prior covariance's gradient forgets the covariance output P+: only the state path is kept"}

    @staticmethod
    def forward(ctx, x, P, z, R):
        return _kalman_forward(ctx, x, P, z, R)

    @staticmethod
    def backward(ctx, grad_x_new, grad_P_new):
        x, P, z, R, S, K = ctx.saved_tensors
        innov = z - x
        grad_x = grad_x_new * (1 - K)
        grad_z = grad_x_new * K
        grad_P = grad_x_new * innov * R / S ** 2  # BUG
        grad_R = -grad_x_new * innov * P / S ** 2 + grad_P_new * P ** 2 / S ** 2
        return grad_x, grad_P, grad_z, grad_R

    @staticmethod
    def example_inputs():
        return _kalman_inputs()


class OffshoreKalmanStateSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "x",
           "note": "the prior state's gradient written grad (K - 1) instead of grad (1 - K)"}

    @staticmethod
    def forward(ctx, x, P, z, R):
        return _kalman_forward(ctx, x, P, z, R)

    @staticmethod
    def backward(ctx, grad_x_new, grad_P_new):
        x, P, z, R, S, K = ctx.saved_tensors
        innov = z - x
        grad_x = grad_x_new * (K - 1)  # BUG
        grad_z = grad_x_new * K
        grad_P = grad_x_new * innov * R / S ** 2 + grad_P_new * R ** 2 / S ** 2
        grad_R = -grad_x_new * innov * P / S ** 2 + grad_P_new * P ** 2 / S ** 2
        return grad_x, grad_P, grad_z, grad_R

    @staticmethod
    def example_inputs():
        return _kalman_inputs()


class OffshoreKalmanMeasurementUsesR(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "z",
           "note": "the measurement's gradient uses R / S (that is 1 - K) where the gain P / S belongs"}

    @staticmethod
    def forward(ctx, x, P, z, R):
        return _kalman_forward(ctx, x, P, z, R)

    @staticmethod
    def backward(ctx, grad_x_new, grad_P_new):
        x, P, z, R, S, K = ctx.saved_tensors
        innov = z - x
        grad_x = grad_x_new * (1 - K)
        grad_z = grad_x_new * R / S  # BUG
        grad_P = grad_x_new * innov * R / S ** 2 + grad_P_new * R ** 2 / S ** 2
        grad_R = -grad_x_new * innov * P / S ** 2 + grad_P_new * P ** 2 / S ** 2
        return grad_x, grad_P, grad_z, grad_R

    @staticmethod
    def example_inputs():
        return _kalman_inputs()


class OffshoreKalmanGainReused(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "forward keeps the gain on ctx, then turns it into 1 - K in place to form P+; backward "
                   "reads 1 - K as K (every input's gradient is wrong)"}

    @staticmethod
    def forward(ctx, x, P, z, R):
        S = P + R
        K = P / S
        ctx.K = K
        ctx.save_for_backward(x, P, z, R, S)
        x_new = x + K * (z - x)
        K.neg_().add_(1)  # BUG
        return x_new, K * P

    @staticmethod
    def backward(ctx, grad_x_new, grad_P_new):
        x, P, z, R, S = ctx.saved_tensors
        K = ctx.K
        innov = z - x
        grad_x = grad_x_new * (1 - K)
        grad_z = grad_x_new * K
        grad_P = grad_x_new * innov * R / S ** 2 + grad_P_new * (1 - K) ** 2
        grad_R = -grad_x_new * innov * P / S ** 2 + grad_P_new * K ** 2
        return grad_x, grad_P, grad_z, grad_R

    @staticmethod
    def example_inputs():
        return _kalman_inputs()


class OffshoreKalmanMeasurementZero(torch.autograd.Function):
    bug = {"kind": "zero", "input": "z",
           "note": "the measurement is treated as data: its gradient is returned as zeros although z is learned"}

    @staticmethod
    def forward(ctx, x, P, z, R):
        return _kalman_forward(ctx, x, P, z, R)

    @staticmethod
    def backward(ctx, grad_x_new, grad_P_new):
        x, P, z, R, S, K = ctx.saved_tensors
        innov = z - x
        grad_x = grad_x_new * (1 - K)
        grad_z = torch.zeros_like(z)  # BUG
        grad_P = grad_x_new * innov * R / S ** 2 + grad_P_new * R ** 2 / S ** 2
        grad_R = -grad_x_new * innov * P / S ** 2 + grad_P_new * P ** 2 / S ** 2
        return grad_x, grad_P, grad_z, grad_R

    @staticmethod
    def example_inputs():
        return _kalman_inputs()


class OffshoreKalmanNoiseGuess(torch.autograd.Function):
    bug = {"kind": "none", "input": "R",
           "note": "R's gradient guessed as grad_P+ * P / (P + R) - grad_x+ * K: no term of the right formula"}

    @staticmethod
    def forward(ctx, x, P, z, R):
        return _kalman_forward(ctx, x, P, z, R)

    @staticmethod
    def backward(ctx, grad_x_new, grad_P_new):
        x, P, z, R, S, K = ctx.saved_tensors
        innov = z - x
        grad_x = grad_x_new * (1 - K)
        grad_z = grad_x_new * K
        grad_P = grad_x_new * innov * R / S ** 2 + grad_P_new * R ** 2 / S ** 2
        grad_R = grad_P_new * P / S - grad_x_new * K  # BUG
        return grad_x, grad_P, grad_z, grad_R

    @staticmethod
    def example_inputs():
        return _kalman_inputs()
