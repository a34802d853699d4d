"""Metric-learning losses: triplet margin (L2), contrastive (Hadsell et al.) with a 0/1 "same"
label, InfoNCE over a batch of pairs with temperature, and row-wise cosine similarity.

BLIND corpus: see README.md. Never tune gradcli's diagnosis on these Functions.
"""
import torch

MARGIN = 1.0
CONTRAST_MARGIN = 2.0
TAU = 0.5


def _triplets():
    torch.manual_seed(51)
    anchor = torch.randn(6, 3, dtype=torch.float64)
    positive = anchor + 0.4 * torch.randn(6, 3, dtype=torch.float64)
    negative = anchor + 1.0 * torch.randn(6, 3, dtype=torch.float64)
    return anchor, positive, negative


def _triplet(ctx, anchor, positive, negative):
    d_ap = (anchor - positive).norm(dim=1)
    d_an = (anchor - negative).norm(dim=1)
    hinge = d_ap - d_an + MARGIN
    ctx.save_for_backward(anchor, positive, negative, d_ap, d_an, hinge > 0)
    return hinge.clamp(min=0).mean()


class TripletMarginLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, anchor, positive, negative):
        return _triplet(ctx, anchor, positive, negative)

    @staticmethod
    def backward(ctx, grad_out):
        a, p, n, d_ap, d_an, active = ctx.saved_tensors
        w = active.to(a.dtype)[:, None] * grad_out / a.shape[0]
        u = (a - p) / d_ap[:, None]
        r = (a - n) / d_an[:, None]
        return w * (u - r), -w * u, w * r

    @staticmethod
    def example_inputs():
        return _triplets()


class TripletMarginLossAnchorPullOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "anchor",
           "note": "the anchor's gradient keeps the pull towards the positive and forgets the "
                   "push from the negative (- r)"}

    @staticmethod
    def forward(ctx, anchor, positive, negative):
        return _triplet(ctx, anchor, positive, negative)

    @staticmethod
    def backward(ctx, grad_out):
        a, p, n, d_ap, d_an, active = ctx.saved_tensors
        w = active.to(a.dtype)[:, None] * grad_out / a.shape[0]
        u = (a - p) / d_ap[:, None]
        r = (a - n) / d_an[:, None]
        grad_anchor = w * u  # BUG -- w * (u - r)
        return grad_anchor, -w * u, w * r

    @staticmethod
    def example_inputs():
        return _triplets()


class TripletMarginLossReturnOrder(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "positive",
           "note": "the positive's and the negative's gradients are returned in each other's place"}

    @staticmethod
    def forward(ctx, anchor, positive, negative):
        return _triplet(ctx, anchor, positive, negative)

    @staticmethod
    def backward(ctx, grad_out):
        a, p, n, d_ap, d_an, active = ctx.saved_tensors
        w = active.to(a.dtype)[:, None] * grad_out / a.shape[0]
        u = (a - p) / d_ap[:, None]
        r = (a - n) / d_an[:, None]
        return w * (u - r), w * r, -w * u  # BUG -- (positive, negative) order

    @staticmethod
    def example_inputs():
        return _triplets()


def _pairs():
    torch.manual_seed(52)
    x1 = torch.randn(6, 3, dtype=torch.float64)
    x2 = x1 + torch.tensor([[0.3], [1.5], [0.8], [1.2], [3.0], [0.6]],
                           dtype=torch.float64) * torch.randn(6, 3, dtype=torch.float64)
    same = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    return x1.requires_grad_(), x2.requires_grad_(), same


def _contrastive(ctx, x1, x2, same):
    diff = x1 - x2
    d = diff.norm(dim=1)
    hinge = (CONTRAST_MARGIN - d).clamp(min=0)
    ctx.save_for_backward(diff, d, hinge, same)
    return (same * d ** 2 + (1 - same) * hinge ** 2).mean() / 2


class ContrastiveLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x1, x2, same):
        return _contrastive(ctx, x1, x2, same)

    @staticmethod
    def backward(ctx, grad_out):
        diff, d, hinge, same = ctx.saved_tensors
        coef = (same - (1 - same) * hinge / d) / d.shape[0] * grad_out
        g = coef[:, None] * diff
        return g, -g, None

    @staticmethod
    def example_inputs():
        return _pairs()


class ContrastiveLossHingeSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x1",
           "note": "the dissimilar pairs' hinge term is added: it pulls them together"}

    @staticmethod
    def forward(ctx, x1, x2, same):
        return _contrastive(ctx, x1, x2, same)

    @staticmethod
    def backward(ctx, grad_out):
        diff, d, hinge, same = ctx.saved_tensors
        coef = (same + (1 - same) * hinge / d) / d.shape[0] * grad_out  # BUG -- - (1 - same) ...
        g = coef[:, None] * diff
        return g, -g, None

    @staticmethod
    def example_inputs():
        return _pairs()


def _embeddings():
    torch.manual_seed(53)
    return (torch.randn(4, 3, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64))


def _info_nce(ctx, z1, z2):
    logp = (z1 @ z2.t() / TAU).log_softmax(dim=1)
    ctx.save_for_backward(z1, z2, logp)
    return -logp.diagonal().mean()


class InfoNCELoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, z1, z2):
        return _info_nce(ctx, z1, z2)

    @staticmethod
    def backward(ctx, grad_out):
        z1, z2, logp = ctx.saved_tensors
        n = z1.shape[0]
        g = (logp.exp() - torch.eye(n, dtype=logp.dtype)) / (n * TAU) * grad_out
        return g @ z2, g.t() @ z1

    @staticmethod
    def example_inputs():
        return _embeddings()


class InfoNCELossKeysNotTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "z2",
           "note": "z2's gradient uses the logits' gradient untransposed (g @ z1, not g.t() @ z1)"}

    @staticmethod
    def forward(ctx, z1, z2):
        return _info_nce(ctx, z1, z2)

    @staticmethod
    def backward(ctx, grad_out):
        z1, z2, logp = ctx.saved_tensors
        n = z1.shape[0]
        g = (logp.exp() - torch.eye(n, dtype=logp.dtype)) / (n * TAU) * grad_out
        return g @ z2, g @ z1  # BUG -- g.t() @ z1

    @staticmethod
    def example_inputs():
        return _embeddings()


class InfoNCELossForgotTemperature(torch.autograd.Function):
    bug = {"kind": "scale", "input": "z1",
           "note": "the logits' gradient lacks the 1/tau of logits = z1 z2^T / tau (a factor "
                   "tau = 0.5 on both inputs)"}

    @staticmethod
    def forward(ctx, z1, z2):
        return _info_nce(ctx, z1, z2)

    @staticmethod
    def backward(ctx, grad_out):
        z1, z2, logp = ctx.saved_tensors
        n = z1.shape[0]
        g = (logp.exp() - torch.eye(n, dtype=logp.dtype)) / n * grad_out  # BUG -- / (n * TAU)
        return g @ z2, g.t() @ z1

    @staticmethod
    def example_inputs():
        return _embeddings()


def _cosine(ctx, x, y):
    nx = x.norm(dim=1, keepdim=True)
    ny = y.norm(dim=1, keepdim=True)
    s = (x * y).sum(1, keepdim=True) / (nx * ny)
    ctx.save_for_backward(x, y, nx, ny, s)
    return s[:, 0]


class RowCosineSimilarity(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, y):
        return _cosine(ctx, x, y)

    @staticmethod
    def backward(ctx, grad_out):
        x, y, nx, ny, s = ctx.saved_tensors
        g = grad_out[:, None]
        return g * (y / (nx * ny) - s * x / nx ** 2), g * (x / (nx * ny) - s * y / ny ** 2)


class RowCosineSimilarityWrongNorm(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "copy-paste: x's projection term divides by nx * ny where nx ** 2 is needed"}

    @staticmethod
    def forward(ctx, x, y):
        return _cosine(ctx, x, y)

    @staticmethod
    def backward(ctx, grad_out):
        x, y, nx, ny, s = ctx.saved_tensors
        g = grad_out[:, None]
        grad_x = g * (y / (nx * ny) - s * x / (nx * ny))  # BUG -- s * x / nx ** 2
        return grad_x, g * (x / (nx * ny) - s * y / ny ** 2)
