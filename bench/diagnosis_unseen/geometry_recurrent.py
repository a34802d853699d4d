"""Pairwise distances, 2-D rotations and an Elman RNN step, with hand-written backwards.

Part of the blind corpus bench/diagnosis_unseen (see its README): score only, never design.
"""
import torch


def _point_sets():
    g = torch.Generator().manual_seed(71)
    return (torch.randn(4, 3, dtype=torch.float64, generator=g),
            torch.randn(4, 3, dtype=torch.float64, generator=g) + 0.5)


class PairwiseSqDist(torch.autograd.Function):
    """D[i, j] = |a_i - b_j|^2 by the expanded form."""
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        da = 2 * (grad.sum(1, keepdim=True) * a - grad @ b)
        db = 2 * (grad.sum(0)[:, None] * b - grad.T @ a)
        return da, db

    @staticmethod
    def example_inputs():
        return _point_sets()


class PairwiseSqDistColumnSums(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "a",
           "note": "da weights a_i by the column sums of grad (dim 0) instead of its row sums"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        da = 2 * (grad.sum(0)[:, None] * a - grad @ b)  # BUG
        db = 2 * (grad.sum(0)[:, None] * b - grad.T @ a)
        return da, db

    @staticmethod
    def example_inputs():
        return _point_sets()


class PairwiseSqDistReturnsCrossed(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "a",
           "note": "the two gradients are returned in the wrong order (db, da)"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        da = 2 * (grad.sum(1, keepdim=True) * a - grad @ b)
        db = 2 * (grad.sum(0)[:, None] * b - grad.T @ a)
        return db, da  # BUG

    @staticmethod
    def example_inputs():
        return _point_sets()


class PairwiseSqDistEuclideanRule(torch.autograd.Function):
    bug = {"kind": "none", "input": "a",
           "note": "the backward of the Euclidean distance |a-b| (diff / dist) used for its square"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        diff = a[:, None, :] - b[None, :, :]
        dist = diff.norm(dim=-1, keepdim=True)
        per_pair = grad[..., None] * diff / dist  # BUG
        return per_pair.sum(1), -per_pair.sum(0)

    @staticmethod
    def example_inputs():
        return _point_sets()


def _points_angles():
    g = torch.Generator().manual_seed(72)
    return (torch.randn(5, 2, dtype=torch.float64, generator=g),
            torch.rand(5, dtype=torch.float64, generator=g) * 6 - 3)


class Rotate2d(torch.autograd.Function):
    """Rotate each point p_i by its own angle theta_i."""
    bug = None

    @staticmethod
    def forward(ctx, points, angle):
        c, s = angle.cos(), angle.sin()
        x, y = points.unbind(-1)
        ctx.save_for_backward(points, angle)
        return torch.stack([c * x - s * y, s * x + c * y], dim=-1)

    @staticmethod
    def backward(ctx, grad):
        points, angle = ctx.saved_tensors
        c, s = angle.cos(), angle.sin()
        x, y = points.unbind(-1)
        gx, gy = grad.unbind(-1)
        dpoints = torch.stack([c * gx + s * gy, -s * gx + c * gy], dim=-1)   # R^T g
        dangle = gx * (-s * x - c * y) + gy * (c * x - s * y)
        return dpoints, dangle

    @staticmethod
    def example_inputs():
        return _points_angles()


class Rotate2dAppliesForwardMatrix(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "points",
           "note": "dpoints rotates grad by R (the forward's matrix) instead of R^T"}

    @staticmethod
    def forward(ctx, points, angle):
        c, s = angle.cos(), angle.sin()
        x, y = points.unbind(-1)
        ctx.save_for_backward(points, angle)
        return torch.stack([c * x - s * y, s * x + c * y], dim=-1)

    @staticmethod
    def backward(ctx, grad):
        points, angle = ctx.saved_tensors
        c, s = angle.cos(), angle.sin()
        x, y = points.unbind(-1)
        gx, gy = grad.unbind(-1)
        dpoints = torch.stack([c * gx - s * gy, s * gx + c * gy], dim=-1)  # BUG
        dangle = gx * (-s * x - c * y) + gy * (c * x - s * y)
        return dpoints, dangle

    @staticmethod
    def example_inputs():
        return _points_angles()


def _rnn_inputs():
    g = torch.Generator().manual_seed(73)
    x = torch.randn(3, 4, dtype=torch.float64, generator=g)
    h = torch.randn(3, 5, dtype=torch.float64, generator=g)
    w_ih = torch.randn(4, 5, dtype=torch.float64, generator=g) * 0.5
    w_hh = torch.randn(5, 5, dtype=torch.float64, generator=g) * 0.5
    return x, h, w_ih, w_hh


class ElmanStep(torch.autograd.Function):
    """h' = tanh(x W_ih + h W_hh)."""
    bug = None

    @staticmethod
    def forward(ctx, x, h, w_ih, w_hh):
        h_new = torch.tanh(x @ w_ih + h @ w_hh)
        ctx.save_for_backward(x, h, w_ih, w_hh, h_new)
        return h_new

    @staticmethod
    def backward(ctx, grad):
        x, h, w_ih, w_hh, h_new = ctx.saved_tensors
        dpre = grad * (1 - h_new ** 2)
        return dpre @ w_ih.T, dpre @ w_hh.T, x.T @ dpre, h.T @ dpre

    @staticmethod
    def example_inputs():
        return _rnn_inputs()


class ElmanStepRecurrentUntransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "h",
           "note": "dh = dpre @ W_hh where dpre @ W_hh.T is needed (W_hh is square, so no error)"}

    @staticmethod
    def forward(ctx, x, h, w_ih, w_hh):
        h_new = torch.tanh(x @ w_ih + h @ w_hh)
        ctx.save_for_backward(x, h, w_ih, w_hh, h_new)
        return h_new

    @staticmethod
    def backward(ctx, grad):
        x, h, w_ih, w_hh, h_new = ctx.saved_tensors
        dpre = grad * (1 - h_new ** 2)
        dh = dpre @ w_hh  # BUG
        return dpre @ w_ih.T, dh, x.T @ dpre, h.T @ dpre

    @staticmethod
    def example_inputs():
        return _rnn_inputs()


class ElmanStepTanhOfPreactivation(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "tanh' is computed as 1 - pre^2 from the saved pre-activation, not from tanh(pre)"}

    @staticmethod
    def forward(ctx, x, h, w_ih, w_hh):
        pre = x @ w_ih + h @ w_hh
        ctx.save_for_backward(x, h, w_ih, w_hh, pre)
        return torch.tanh(pre)

    @staticmethod
    def backward(ctx, grad):
        x, h, w_ih, w_hh, pre = ctx.saved_tensors
        dpre = grad * (1 - pre ** 2)  # BUG
        return dpre @ w_ih.T, dpre @ w_hh.T, x.T @ dpre, h.T @ dpre

    @staticmethod
    def example_inputs():
        return _rnn_inputs()
