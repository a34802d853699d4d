"""Ranking losses by hand: a pairwise hinge with a margin over integer relevance labels, ListNet's
softmax cross-entropy, discounted cumulative gain at every cut-off, and a sigmoid-surrogate rank."""
import math

import torch

MARGIN = 1.0


def _hinge_inputs():
    scores = torch.tensor([0.4, 1.7, -0.3, 0.9, 2.6, -1.2], dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([1, 2, 0, 2, 1, 0], dtype=torch.int64)
    return scores, labels


class AfarPairwiseHinge(torch.autograd.Function):
    """mean over pairs (i, j) with labels[i] > labels[j] of relu(margin - (s_i - s_j))."""

    bug = None

    @staticmethod
    def forward(ctx, scores, labels):
        pair = labels[:, None] > labels[None, :]
        diff = scores[:, None] - scores[None, :]
        loss = (MARGIN - diff).clamp(min=0.0).masked_fill(~pair, 0.0).sum() / pair.sum()
        ctx.save_for_backward(diff, pair)
        return loss

    @staticmethod
    def backward(ctx, grad_out):
        diff, pair = ctx.saved_tensors
        active = (pair & (diff < MARGIN)).to(diff.dtype)
        grad = (active.sum(dim=0) - active.sum(dim=1)) * grad_out / pair.sum()
        return grad, None

    @staticmethod
    def example_inputs():
        return _hinge_inputs()


class AfarPairwiseHingeNoMargin(torch.autograd.Function):
    bug = {"kind": "region", "input": "scores",
           "note": "the active pairs are recomputed as diff < 0, forgetting the margin: correctly ordered pairs inside the margin get no gradient"}

    @staticmethod
    def forward(ctx, scores, labels):
        pair = labels[:, None] > labels[None, :]
        diff = scores[:, None] - scores[None, :]
        loss = (MARGIN - diff).clamp(min=0.0).masked_fill(~pair, 0.0).sum() / pair.sum()
        ctx.save_for_backward(diff, pair)
        return loss

    @staticmethod
    def backward(ctx, grad_out):
        diff, pair = ctx.saved_tensors
        active = (pair & (diff < 0)).to(diff.dtype)  # BUG
        grad = (active.sum(dim=0) - active.sum(dim=1)) * grad_out / pair.sum()
        return grad, None

    @staticmethod
    def example_inputs():
        return _hinge_inputs()


class AfarPairwiseHingeLowerSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "scores",
           "note": "the term for the lower-ranked item of each pair (s_j enters as -s_j) is given the same sign as the higher one's"}

    @staticmethod
    def forward(ctx, scores, labels):
        pair = labels[:, None] > labels[None, :]
        diff = scores[:, None] - scores[None, :]
        loss = (MARGIN - diff).clamp(min=0.0).masked_fill(~pair, 0.0).sum() / pair.sum()
        ctx.save_for_backward(diff, pair)
        return loss

    @staticmethod
    def backward(ctx, grad_out):
        diff, pair = ctx.saved_tensors
        active = (pair & (diff < MARGIN)).to(diff.dtype)
        grad = (-active.sum(dim=0) - active.sum(dim=1)) * grad_out / pair.sum()  # BUG
        return grad, None

    @staticmethod
    def example_inputs():
        return _hinge_inputs()


class AfarPairwiseHingeItemMean(torch.autograd.Function):
    bug = {"kind": "scale", "input": "scores",
           "note": "the backward divides by the number of items instead of the number of pairs the forward averaged over"}

    @staticmethod
    def forward(ctx, scores, labels):
        pair = labels[:, None] > labels[None, :]
        diff = scores[:, None] - scores[None, :]
        loss = (MARGIN - diff).clamp(min=0.0).masked_fill(~pair, 0.0).sum() / pair.sum()
        ctx.save_for_backward(diff, pair)
        return loss

    @staticmethod
    def backward(ctx, grad_out):
        diff, pair = ctx.saved_tensors
        active = (pair & (diff < MARGIN)).to(diff.dtype)
        grad = (active.sum(dim=0) - active.sum(dim=1)) * grad_out / diff.shape[0]  # BUG
        return grad, None

    @staticmethod
    def example_inputs():
        return _hinge_inputs()


# ------------------------------------------------------------------------------- ListNet
class AfarListNet(torch.autograd.Function):
    """mean over queries of -sum softmax(target) * log_softmax(scores); scores, target: (Q, L)."""

    bug = None

    @staticmethod
    def forward(ctx, scores, target):
        p = torch.softmax(target, dim=-1)
        log_q = torch.log_softmax(scores, dim=-1)
        ctx.save_for_backward(scores, p, log_q)
        return -(p * log_q).sum(dim=-1).mean()

    @staticmethod
    def backward(ctx, grad_out):
        scores, p, log_q = ctx.saved_tensors
        nq = scores.shape[0]
        grad_scores = grad_out * (torch.softmax(scores, dim=-1) - p) / nq
        centred = log_q - (p * log_q).sum(dim=-1, keepdim=True)
        grad_target = -grad_out * p * centred / nq
        return grad_scores, grad_target


class AfarListNetColumnSoftmax(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "scores",
           "note": "the predicted distribution is recomputed with softmax over dim=0 (the queries) instead of over each list"}

    @staticmethod
    def forward(ctx, scores, target):
        p = torch.softmax(target, dim=-1)
        log_q = torch.log_softmax(scores, dim=-1)
        ctx.save_for_backward(scores, p, log_q)
        return -(p * log_q).sum(dim=-1).mean()

    @staticmethod
    def backward(ctx, grad_out):
        scores, p, log_q = ctx.saved_tensors
        nq = scores.shape[0]
        grad_scores = grad_out * (torch.softmax(scores, dim=0) - p) / nq  # BUG
        centred = log_q - (p * log_q).sum(dim=-1, keepdim=True)
        grad_target = -grad_out * p * centred / nq
        return grad_scores, grad_target


class AfarListNetMirroredTarget(torch.autograd.Function):
    bug = {"kind": "none", "input": "target",
           "note": "the target's gradient is written as the mirror of the scores' one, (p - q) / Q, which is not the derivative through softmax(target) at all"}

    @staticmethod
    def forward(ctx, scores, target):
        p = torch.softmax(target, dim=-1)
        log_q = torch.log_softmax(scores, dim=-1)
        ctx.save_for_backward(scores, p, log_q)
        return -(p * log_q).sum(dim=-1).mean()

    @staticmethod
    def backward(ctx, grad_out):
        scores, p, log_q = ctx.saved_tensors
        nq = scores.shape[0]
        q = torch.softmax(scores, dim=-1)
        grad_scores = grad_out * (q - p) / nq
        grad_target = grad_out * (p - q) / nq  # BUG
        return grad_scores, grad_target


# ----------------------------------------------------------------- cumulative gain (DCG@k)
def _discount(n, dtype):
    return 1.0 / torch.log2(torch.arange(n, dtype=dtype) + 2.0)


class AfarCumulativeGain(torch.autograd.Function):
    """DCG at every cut-off k: cumsum over the list of gains / log2(rank + 1)."""

    bug = None

    @staticmethod
    def forward(ctx, gains):
        disc = _discount(gains.shape[-1], gains.dtype)
        ctx.save_for_backward(disc)
        return (gains * disc).cumsum(dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        (disc,) = ctx.saved_tensors
        return grad_out.flip(-1).cumsum(dim=-1).flip(-1) * disc


class AfarCumulativeGainForwardCumsum(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "gains",
           "note": "the adjoint of a cumsum is a reversed cumsum, but grad_out is cumsummed forwards"}

    @staticmethod
    def forward(ctx, gains):
        disc = _discount(gains.shape[-1], gains.dtype)
        ctx.save_for_backward(disc)
        return (gains * disc).cumsum(dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        (disc,) = ctx.saved_tensors
        return grad_out.cumsum(dim=-1) * disc  # BUG


# -------------------------------------------------------------------- surrogate rank
class AfarSigmoidRankSurrogate(torch.autograd.Function):
    """Hard rank 1 + #{j: s_j > s_i} per row; backward uses the sigmoid relaxation with temperature tau."""

    bug = {"kind": "smooth_surrogate", "input": "scores",
           "note": "deliberate smooth surrogate: the step in the hard rank is replaced by sigmoid((s_j - s_i) / tau) in backward"}

    @staticmethod
    def forward(ctx, scores):
        ctx.save_for_backward(scores)
        ctx.tau = 0.5
        above = scores[..., None, :] > scores[..., :, None]
        return 1.0 + above.to(scores.dtype).sum(dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        (scores,) = ctx.saved_tensors
        sg = torch.sigmoid((scores[..., None, :] - scores[..., :, None]) / ctx.tau)
        slope = sg * (1 - sg) / ctx.tau
        return torch.einsum("bi,bij->bj", grad_out, slope) - grad_out * slope.sum(dim=-1)  # BUG
