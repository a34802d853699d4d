"""Pooling, nearest upsampling and distances with hand-written backwards."""
import torch


def _pairs_input():
    g = torch.Generator().manual_seed(75)
    return (torch.randn(3, 6, dtype=torch.float64, generator=g),)


class SealedAvgPool1d2(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        n, length = x.shape
        return x.view(n, length // 2, 2).mean(-1)

    @staticmethod
    def backward(ctx, grad):
        return grad.repeat_interleave(2, dim=1) * 0.5

    @staticmethod
    def example_inputs():
        return _pairs_input()


class SealedAvgPool1d2ConstantGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "backward returns the local derivative 1/2 everywhere, without the upstream grad"}

    @staticmethod
    def forward(ctx, x):
        n, length = x.shape
        ctx.shape = x.shape
        return x.view(n, length // 2, 2).mean(-1)

    @staticmethod
    def backward(ctx, grad):
        return torch.full(ctx.shape, 0.5, dtype=grad.dtype)  # BUG

    @staticmethod
    def example_inputs():
        return _pairs_input()


class SealedMaxPool1d2Indices(torch.autograd.Function):
    """Max of each pair, and which of the two won (non-differentiable second output)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        n, length = x.shape
        values, which = x.view(n, length // 2, 2).max(-1)
        ctx.save_for_backward(which)
        ctx.mark_non_differentiable(which)
        return values, which

    @staticmethod
    def backward(ctx, grad, grad_which):
        (which,) = ctx.saved_tensors
        n, half = grad.shape
        dx = grad.new_zeros(n, half, 2).scatter_(-1, which.unsqueeze(-1), grad.unsqueeze(-1))
        return dx.view(n, 2 * half)

    @staticmethod
    def example_inputs():
        return _pairs_input()


class SealedMaxPool1d2LoserGetsGrad(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the gradient is routed to the pair's smaller element (1 - argmax)"}

    @staticmethod
    def forward(ctx, x):
        n, length = x.shape
        values, which = x.view(n, length // 2, 2).max(-1)
        ctx.save_for_backward(which)
        ctx.mark_non_differentiable(which)
        return values, which

    @staticmethod
    def backward(ctx, grad, grad_which):
        (which,) = ctx.saved_tensors
        n, half = grad.shape
        slot = (1 - which).unsqueeze(-1)  # BUG
        dx = grad.new_zeros(n, half, 2).scatter_(-1, slot, grad.unsqueeze(-1))
        return dx.view(n, 2 * half)

    @staticmethod
    def example_inputs():
        return _pairs_input()


class SealedNearestUpsample2x(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return x.repeat_interleave(2, dim=1)

    @staticmethod
    def backward(ctx, grad):
        n, length = grad.shape
        return grad.view(n, length // 2, 2).sum(-1)


class SealedNearestUpsample2xTiledSum(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the copies are summed over view(n, 2, L).sum(1), the tiling axis, not the pair axis"}

    @staticmethod
    def forward(ctx, x):
        return x.repeat_interleave(2, dim=1)

    @staticmethod
    def backward(ctx, grad):
        n, length = grad.shape
        return grad.view(n, 2, length // 2).sum(1)  # BUG


def _points():
    g = torch.Generator().manual_seed(76)
    return (torch.randn(4, 3, dtype=torch.float64, generator=g),
            torch.randn(4, 3, dtype=torch.float64, generator=g))


class SealedPairwiseSqDist(torch.autograd.Function):
    """D[i, j] = |x_i - y_j|^2 by the expanded form."""
    bug = None

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return (x * x).sum(1, keepdim=True) - 2 * x @ y.t() + (y * y).sum(1)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        dx = 2 * (grad.sum(1, keepdim=True) * x - grad @ y)
        dy = 2 * (grad.sum(0).unsqueeze(1) * y - grad.t() @ x)
        return dx, dy

    @staticmethod
    def example_inputs():
        return _points()


class SealedPairwiseSqDistSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "x",
           "note": "the two gradients are returned in the wrong order (dy, dx)"}

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return (x * x).sum(1, keepdim=True) - 2 * x @ y.t() + (y * y).sum(1)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        dx = 2 * (grad.sum(1, keepdim=True) * x - grad @ y)
        dy = 2 * (grad.sum(0).unsqueeze(1) * y - grad.t() @ x)
        return dy, dx  # BUG

    @staticmethod
    def example_inputs():
        return _points()


class SealedPairwiseSqDistYSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "y",
           "note": "dy is written as d/d(x - y) of the square, i.e. with the sign of dx"}

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return (x * x).sum(1, keepdim=True) - 2 * x @ y.t() + (y * y).sum(1)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        dx = 2 * (grad.sum(1, keepdim=True) * x - grad @ y)
        dy = 2 * (grad.t() @ x - grad.sum(0).unsqueeze(1) * y)  # BUG
        return dx, dy

    @staticmethod
    def example_inputs():
        return _points()


class SealedRowCosine(torch.autograd.Function):
    """Cosine similarity of matching rows: (N, D), (N, D) -> (N,)."""
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        na, nb = a.norm(dim=1, keepdim=True), b.norm(dim=1, keepdim=True)
        cos = (a * b).sum(1, keepdim=True) / (na * nb)
        ctx.save_for_backward(a, b, na, nb, cos)
        return cos.squeeze(1)

    @staticmethod
    def backward(ctx, grad):
        a, b, na, nb, cos = ctx.saved_tensors
        g = grad.unsqueeze(1)
        da = g * (b / (na * nb) - cos * a / na ** 2)
        db = g * (a / (na * nb) - cos * b / nb ** 2)
        return da, db


class SealedRowCosineNoNormTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "a",
           "note": "da treats |a| as a constant: the -cos * a / |a|^2 term is missing"}

    @staticmethod
    def forward(ctx, a, b):
        na, nb = a.norm(dim=1, keepdim=True), b.norm(dim=1, keepdim=True)
        cos = (a * b).sum(1, keepdim=True) / (na * nb)
        ctx.save_for_backward(a, b, na, nb, cos)
        return cos.squeeze(1)

    @staticmethod
    def backward(ctx, grad):
        a, b, na, nb, cos = ctx.saved_tensors
        g = grad.unsqueeze(1)
        da = g * b / (na * nb)  # BUG
        db = g * (a / (na * nb) - cos * b / nb ** 2)
        return da, db
