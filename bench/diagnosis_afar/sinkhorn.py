"""A few unrolled Sinkhorn iterations by hand: P = exp(-cost / eps), then alternately rows and
columns normalised; backward replays the normalisations in reverse (for t in reversed(range(T)))."""
import torch

EPS = 0.5
ITERS = 3


def _normalise(p, dim):
    s = p.sum(dim=dim, keepdim=True)
    return p / s, s


class AfarSinkhorn(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, cost):
        p = torch.exp(-cost / EPS)
        ctx.kernel = p
        ctx.rows, ctx.cols = [], []
        for _ in range(ITERS):
            p, s = _normalise(p, 1)
            ctx.rows.append((p, s))
            p, s = _normalise(p, 0)
            ctx.cols.append((p, s))
        return p

    @staticmethod
    def backward(ctx, grad_out):
        g = grad_out
        for t in reversed(range(ITERS)):
            y, s = ctx.cols[t]
            g = (g - (g * y).sum(dim=0, keepdim=True)) / s
            y, s = ctx.rows[t]
            g = (g - (g * y).sum(dim=1, keepdim=True)) / s
        return -g * ctx.kernel / EPS


class AfarSinkhornColumnAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "cost",
           "note": "the column normalisation's backward sums g * y over dim=1 (copied from the row step) instead of dim=0"}

    @staticmethod
    def forward(ctx, cost):
        p = torch.exp(-cost / EPS)
        ctx.kernel = p
        ctx.rows, ctx.cols = [], []
        for _ in range(ITERS):
            p, s = _normalise(p, 1)
            ctx.rows.append((p, s))
            p, s = _normalise(p, 0)
            ctx.cols.append((p, s))
        return p

    @staticmethod
    def backward(ctx, grad_out):
        g = grad_out
        for t in reversed(range(ITERS)):
            y, s = ctx.cols[t]
            g = (g - (g * y).sum(dim=1, keepdim=True)) / s  # BUG
            y, s = ctx.rows[t]
            g = (g - (g * y).sum(dim=1, keepdim=True)) / s
        return -g * ctx.kernel / EPS


class AfarSinkhornRowNoCentre(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "cost",
           "note": "the row normalisation's backward only divides by the row sum and drops the -sum(g * y) term"}

    @staticmethod
    def forward(ctx, cost):
        p = torch.exp(-cost / EPS)
        ctx.kernel = p
        ctx.rows, ctx.cols = [], []
        for _ in range(ITERS):
            p, s = _normalise(p, 1)
            ctx.rows.append((p, s))
            p, s = _normalise(p, 0)
            ctx.cols.append((p, s))
        return p

    @staticmethod
    def backward(ctx, grad_out):
        g = grad_out
        for t in reversed(range(ITERS)):
            y, s = ctx.cols[t]
            g = (g - (g * y).sum(dim=0, keepdim=True)) / s
            y, s = ctx.rows[t]
            g = g / s  # BUG
        return -g * ctx.kernel / EPS


class AfarSinkhornInPlaceColumns(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "cost",
           "note": "the column step divides in place, overwriting the row step's output that was kept for backward"}

    @staticmethod
    def forward(ctx, cost):
        p = torch.exp(-cost / EPS)
        ctx.kernel = p
        ctx.rows, ctx.cols = [], []
        for _ in range(ITERS):
            p, s = _normalise(p, 1)
            ctx.rows.append((p, s))
            s = p.sum(dim=0, keepdim=True)
            p.div_(s)  # BUG
            ctx.cols.append((p, s))
        return p

    @staticmethod
    def backward(ctx, grad_out):
        g = grad_out
        for t in reversed(range(ITERS)):
            y, s = ctx.cols[t]
            g = (g - (g * y).sum(dim=0, keepdim=True)) / s
            y, s = ctx.rows[t]
            g = (g - (g * y).sum(dim=1, keepdim=True)) / s
        return -g * ctx.kernel / EPS


class AfarSinkhornOneSoftmax(torch.autograd.Function):
    bug = {"kind": "none", "input": "cost",
           "note": "the backward treats the whole plan as a single row softmax of -cost / eps and ignores the iterations"}

    @staticmethod
    def forward(ctx, cost):
        p = torch.exp(-cost / EPS)
        ctx.kernel = p
        ctx.rows, ctx.cols = [], []
        for _ in range(ITERS):
            p, s = _normalise(p, 1)
            ctx.rows.append((p, s))
            p, s = _normalise(p, 0)
            ctx.cols.append((p, s))
        ctx.plan = p
        return p

    @staticmethod
    def backward(ctx, grad_out):
        p = ctx.plan
        return -p * (grad_out - (grad_out * p).sum(dim=1, keepdim=True)) / EPS  # BUG
