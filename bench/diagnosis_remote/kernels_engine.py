"""Kernels between two point sets x (N, D) and y (M, D) on gradcli's engine: Gaussian (RBF),
Laplacian (L1) and inverse-quadratic."""
import math

import gradcli as torch


def _points(seed, n=4, m=4, d=3):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(n, d, dtype=torch.float64, generator=gen),
            torch.randn(m, d, dtype=torch.float64, generator=gen))


class RemoteGaussianKernel(torch.autograd.Function):
    """K[i, j] = exp(-|x_i - y_j|^2 / (2 bw^2))."""
    bug = None

    @staticmethod
    def forward(ctx, x, y, bandwidth: float = 1.2):
        diff = x[:, None, :] - y[None, :, :]
        k = torch.exp(-(diff * diff).sum(-1) / (2 * bandwidth ** 2))
        ctx.save_for_backward(diff, k)
        ctx.bw = bandwidth
        return k

    @staticmethod
    def backward(ctx, grad_k):
        diff, k = ctx.saved_tensors
        w = (grad_k * k)[:, :, None] * diff / ctx.bw ** 2
        return -w.sum(1), w.sum(0), None

    @staticmethod
    def example_inputs():
        return (*_points(110), 1.2)


class RemoteGaussianKernelSameSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "y",
           "note": "y enters the difference with a minus sign, but its gradient is given the same sign as x's"}

    @staticmethod
    def forward(ctx, x, y, bandwidth: float = 1.2):
        diff = x[:, None, :] - y[None, :, :]
        k = torch.exp(-(diff * diff).sum(-1) / (2 * bandwidth ** 2))
        ctx.save_for_backward(diff, k)
        ctx.bw = bandwidth
        return k

    @staticmethod
    def backward(ctx, grad_k):
        diff, k = ctx.saved_tensors
        w = (grad_k * k)[:, :, None] * diff / ctx.bw ** 2
        grad_x = -w.sum(1)
        grad_y = -w.sum(0)  # BUG
        return grad_x, grad_y, None

    @staticmethod
    def example_inputs():
        return (*_points(111), 1.2)


class RemoteGaussianKernelSumOverRows(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "x_i's gradient must sum over the partners j (dim 1); it sums over i (dim 0)"}

    @staticmethod
    def forward(ctx, x, y, bandwidth: float = 1.2):
        diff = x[:, None, :] - y[None, :, :]
        k = torch.exp(-(diff * diff).sum(-1) / (2 * bandwidth ** 2))
        ctx.save_for_backward(diff, k)
        ctx.bw = bandwidth
        return k

    @staticmethod
    def backward(ctx, grad_k):
        diff, k = ctx.saved_tensors
        w = (grad_k * k)[:, :, None] * diff / ctx.bw ** 2
        return -w.sum(0), w.sum(0), None  # BUG

    @staticmethod
    def example_inputs():
        return (*_points(112), 1.2)


class RemoteGaussianKernelSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "x",
           "note": "the gradients of the two point sets are returned in the wrong order (same shapes)"}

    @staticmethod
    def forward(ctx, x, y, bandwidth: float = 1.2):
        diff = x[:, None, :] - y[None, :, :]
        k = torch.exp(-(diff * diff).sum(-1) / (2 * bandwidth ** 2))
        ctx.save_for_backward(diff, k)
        ctx.bw = bandwidth
        return k

    @staticmethod
    def backward(ctx, grad_k):
        diff, k = ctx.saved_tensors
        w = (grad_k * k)[:, :, None] * diff / ctx.bw ** 2
        grad_x, grad_y = -w.sum(1), w.sum(0)
        return grad_y, grad_x, None  # BUG

    @staticmethod
    def example_inputs():
        return (*_points(113), 1.2)


class RemoteLaplacianKernel(torch.autograd.Function):
    """K[i, j] = exp(-gamma |x_i - y_j|_1)."""
    bug = None

    @staticmethod
    def forward(ctx, x, y, gamma: float = 0.7):
        diff = x[:, None, :] - y[None, :, :]
        k = torch.exp(-gamma * diff.abs().sum(-1))
        ctx.save_for_backward(diff, k)
        ctx.gamma = gamma
        return k

    @staticmethod
    def backward(ctx, grad_k):
        diff, k = ctx.saved_tensors
        w = ctx.gamma * (grad_k * k)[:, :, None] * torch.sign(diff)
        return -w.sum(1), w.sum(0), None

    @staticmethod
    def example_inputs():
        return (*_points(114, n=4, m=5, d=2), 0.7)


class RemoteLaplacianKernelNoGamma(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the chain factor gamma of exp(-gamma d) is left out of x's gradient"}

    @staticmethod
    def forward(ctx, x, y, gamma: float = 0.7):
        diff = x[:, None, :] - y[None, :, :]
        k = torch.exp(-gamma * diff.abs().sum(-1))
        ctx.save_for_backward(diff, k)
        ctx.gamma = gamma
        return k

    @staticmethod
    def backward(ctx, grad_k):
        diff, k = ctx.saved_tensors
        grad_x = -((grad_k * k)[:, :, None] * torch.sign(diff)).sum(1)  # BUG
        grad_y = (ctx.gamma * (grad_k * k)[:, :, None] * torch.sign(diff)).sum(0)
        return grad_x, grad_y, None

    @staticmethod
    def example_inputs():
        return (*_points(115, n=4, m=5, d=2), 0.7)


class RemoteLaplacianKernelFixedCentres(torch.autograd.Function):
    bug = {"kind": "zero", "input": "y",
           "note": "y is treated as fixed centres: a zero gradient although y requires grad"}

    @staticmethod
    def forward(ctx, x, y, gamma: float = 0.7):
        diff = x[:, None, :] - y[None, :, :]
        k = torch.exp(-gamma * diff.abs().sum(-1))
        ctx.save_for_backward(diff, k)
        ctx.gamma = gamma
        ctx.y_shape = y.shape
        return k

    @staticmethod
    def backward(ctx, grad_k):
        diff, k = ctx.saved_tensors
        w = ctx.gamma * (grad_k * k)[:, :, None] * torch.sign(diff)
        grad_y = torch.zeros(ctx.y_shape, dtype=grad_k.dtype)  # BUG
        return -w.sum(1), grad_y, None

    @staticmethod
    def example_inputs():
        return (*_points(116, n=4, m=5, d=2), 0.7)


class RemoteInverseQuadraticKernel(torch.autograd.Function):
    """K[i, j] = 1 / (1 + |x_i - y_j|^2)."""
    bug = None

    @staticmethod
    def forward(ctx, x, y):
        diff = x[:, None, :] - y[None, :, :]
        k = 1 / (1 + (diff * diff).sum(-1))
        ctx.save_for_backward(diff, k)
        return k

    @staticmethod
    def backward(ctx, grad_k):
        diff, k = ctx.saved_tensors
        w = 2 * (grad_k * k * k)[:, :, None] * diff
        return -w.sum(1), w.sum(0)

    @staticmethod
    def example_inputs():
        return _points(117, n=3, m=5, d=2)


class RemoteGaussianMMD(torch.autograd.Function):
    """The cross term of an MMD estimate: mean_ij exp(-|x_i - y_j|^2 / 2), a scalar."""
    bug = None

    @staticmethod
    def forward(ctx, x, y):
        diff = x[:, None, :] - y[None, :, :]
        k = torch.exp(-0.5 * (diff * diff).sum(-1))
        ctx.save_for_backward(diff, k)
        return k.mean()

    @staticmethod
    def backward(ctx, grad_m):
        diff, k = ctx.saved_tensors
        n, m = k.shape
        w = (grad_m * k / (n * m))[:, :, None] * diff
        return -w.sum(1), w.sum(0)

    @staticmethod
    def example_inputs():
        return _points(118, n=3, m=4, d=2)
