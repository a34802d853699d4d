"""Ranking and metric-learning losses with hand-written backwards: margin ranking, triplet,
contrastive (Hadsell), an ArcFace-style additive angular margin and the 1-Wasserstein distance
between sorted samples (BLIND corpus, see README.md)."""
import torch


# ------------------------------------------------------------------------------ margin ranking
def _ranking_inputs():
    x1 = torch.tensor([0.5, -0.2, 1.0, 0.1, -0.7, 0.3], dtype=torch.float64)
    x2 = torch.tensor([0.4, 0.6, 0.2, 0.25, -0.6, -0.5], dtype=torch.float64)
    y = torch.tensor([1, 1, -1, 1, -1, 1])
    return x1, x2, y, 0.3


class ForeignMarginRanking(torch.autograd.Function):
    """mean(max(0, -y (x1 - x2) + margin)), y = +1 when x1 should rank higher."""

    bug = None

    @staticmethod
    def forward(ctx, x1, x2, y, margin):
        sign = y.to(x1.dtype)
        hinge = margin - sign * (x1 - x2)
        ctx.save_for_backward(sign, hinge)
        return hinge.clamp(min=0).mean()

    @staticmethod
    def backward(ctx, grad):
        sign, hinge = ctx.saved_tensors
        active = (hinge > 0).to(sign.dtype)
        g = grad * active * sign / sign.numel()
        return -g, g, None, None

    @staticmethod
    def example_inputs():
        return _ranking_inputs()


class ForeignMarginRankingIgnoresMargin(torch.autograd.Function):
    bug = {"kind": "region", "input": "x1",
           "note": "the active set is taken as the mis-ordered pairs y (x1 - x2) < 0, forgetting "
                   "that pairs ordered by less than the margin are active too"}

    @staticmethod
    def forward(ctx, x1, x2, y, margin):
        sign = y.to(x1.dtype)
        ctx.save_for_backward(x1, x2, sign)
        return torch.relu(margin - sign * (x1 - x2)).mean()

    @staticmethod
    def backward(ctx, grad):
        x1, x2, sign = ctx.saved_tensors
        violated = sign * (x1 - x2) < 0  # BUG
        per_pair = torch.where(violated, -sign, torch.zeros_like(sign)) * (grad / x1.numel())
        return per_pair, -per_pair, None, None

    @staticmethod
    def example_inputs():
        return _ranking_inputs()


# ------------------------------------------------------------------------------------- triplet
def _triplet_inputs():
    gen = torch.Generator().manual_seed(41)
    anchor = torch.randn(4, 3, dtype=torch.float64, generator=gen)
    positive = anchor + 0.8 * torch.randn(4, 3, dtype=torch.float64, generator=gen)
    negative = anchor + 0.8 * torch.randn(4, 3, dtype=torch.float64, generator=gen)
    return anchor, positive, negative, 1.0


def _triplet_parts(anchor, positive, negative, margin):
    to_pos = anchor - positive
    to_neg = anchor - negative
    d_pos = to_pos.norm(dim=1)
    d_neg = to_neg.norm(dim=1)
    return to_pos, to_neg, d_pos, d_neg, d_pos - d_neg + margin


class ForeignTripletLoss(torch.autograd.Function):
    """mean(max(0, |a - p| - |a - n| + margin)) with Euclidean distances."""

    bug = None

    @staticmethod
    def forward(ctx, anchor, positive, negative, margin):
        to_pos, to_neg, d_pos, d_neg, slack = _triplet_parts(anchor, positive, negative, margin)
        ctx.save_for_backward(to_pos, to_neg, d_pos, d_neg, slack)
        return slack.clamp_min(0).mean()

    @staticmethod
    def backward(ctx, grad):
        to_pos, to_neg, d_pos, d_neg, slack = ctx.saved_tensors
        w = (grad * (slack > 0).to(grad.dtype) / slack.numel())[:, None]
        unit_pos = to_pos / d_pos[:, None]
        unit_neg = to_neg / d_neg[:, None]
        return w * (unit_pos - unit_neg), -w * unit_pos, w * unit_neg, None

    @staticmethod
    def example_inputs():
        return _triplet_inputs()


class ForeignTripletLossAnchorPullOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "anchor",
           "note": "the anchor appears in both distances but only the pull towards the positive "
                   "is kept; the push away from the negative is missing"}

    @staticmethod
    def forward(ctx, anchor, positive, negative, margin):
        to_pos, to_neg, d_pos, d_neg, slack = _triplet_parts(anchor, positive, negative, margin)
        ctx.save_for_backward(anchor, positive, negative)
        ctx.mask = slack > 0
        return slack.clamp_min(0).mean()

    @staticmethod
    def backward(ctx, grad):
        anchor, positive, negative = ctx.saved_tensors
        coef = grad * ctx.mask.to(anchor.dtype) / anchor.shape[0]
        pull = (anchor - positive) / (anchor - positive).norm(dim=1, keepdim=True)
        push = (anchor - negative) / (anchor - negative).norm(dim=1, keepdim=True)
        grad_anchor = coef[:, None] * pull  # BUG
        return grad_anchor, -coef[:, None] * pull, coef[:, None] * push, None

    @staticmethod
    def example_inputs():
        return _triplet_inputs()


class ForeignTripletLossNegativePulled(torch.autograd.Function):
    bug = {"kind": "sign", "input": "negative",
           "note": "the negative's gradient is written like the positive's, -(a - n)/|a - n|, "
                   "although -|a - n| enters the loss with a minus"}

    @staticmethod
    def forward(ctx, anchor, positive, negative, margin):
        to_pos, to_neg, d_pos, d_neg, slack = _triplet_parts(anchor, positive, negative, margin)
        ctx.save_for_backward(to_pos, to_neg, d_pos, d_neg, slack)
        return slack.clamp_min(0).mean()

    @staticmethod
    def backward(ctx, grad):
        to_pos, to_neg, d_pos, d_neg, slack = ctx.saved_tensors
        n = slack.shape[0]
        grads = []
        for sign, vec, dist in ((1.0, to_pos, d_pos), (-1.0, to_neg, d_neg)):
            grads.append(sign * vec / dist.unsqueeze(1))
        active = (slack > 0).unsqueeze(1) * (grad / n)
        grad_anchor = active * (grads[0] + grads[1])
        grad_positive = -active * grads[0]
        grad_negative = active * grads[1]  # BUG
        return grad_anchor, grad_positive, grad_negative, None

    @staticmethod
    def example_inputs():
        return _triplet_inputs()


# --------------------------------------------------------------------------------- contrastive
def _contrastive_inputs():
    gen = torch.Generator().manual_seed(42)
    x1 = torch.randn(6, 2, dtype=torch.float64, generator=gen)
    x2 = torch.randn(6, 2, dtype=torch.float64, generator=gen)
    same = torch.tensor([1, 0, 0, 1, 0, 0])
    return x1, x2, same, 2.0


class ForeignContrastiveLoss(torch.autograd.Function):
    """0.5 * mean(y d^2 + (1 - y) max(0, m - d)^2), d = |x1 - x2|, y = 1 for similar pairs."""

    bug = None

    @staticmethod
    def forward(ctx, x1, x2, same, margin):
        diff = x1 - x2
        dist = diff.norm(dim=1)
        y = same.to(x1.dtype)
        gap = (margin - dist).clamp(min=0)
        ctx.save_for_backward(diff, dist, y, gap)
        return 0.5 * (y * dist ** 2 + (1 - y) * gap ** 2).mean()

    @staticmethod
    def backward(ctx, grad):
        diff, dist, y, gap = ctx.saved_tensors
        coef = (y - (1 - y) * gap / dist) * grad / dist.numel()
        g = coef[:, None] * diff
        grad_x1 = g if ctx.needs_input_grad[0] else None
        grad_x2 = -g if ctx.needs_input_grad[1] else None
        return grad_x1, grad_x2, None, None

    @staticmethod
    def example_inputs():
        return _contrastive_inputs()


class ForeignContrastiveLossGuardIndex(torch.autograd.Function):
    bug = {"kind": "zero", "input": "x2",
           "note": "x2's gradient is guarded by ctx.needs_input_grad[2] (the integer labels), "
                   "so it is never computed and comes back as None (zero)"}

    @staticmethod
    def forward(ctx, x1, x2, same, margin):
        diff = x1 - x2
        dist = diff.norm(dim=1)
        y = same.to(x1.dtype)
        gap = (margin - dist).clamp(min=0)
        ctx.save_for_backward(diff, dist, y, gap)
        return 0.5 * (y * dist ** 2 + (1 - y) * gap ** 2).mean()

    @staticmethod
    def backward(ctx, grad):
        diff, dist, y, gap = ctx.saved_tensors
        n = dist.shape[0]
        similar = y[:, None] * diff
        dissimilar = -((1 - y) * gap / dist)[:, None] * diff
        g = (similar + dissimilar) * grad / n
        grad_x1 = grad_x2 = None
        if ctx.needs_input_grad[0]:
            grad_x1 = g
        if ctx.needs_input_grad[2]:  # BUG
            grad_x2 = -g
        return grad_x1, grad_x2, None, None

    @staticmethod
    def example_inputs():
        return _contrastive_inputs()


class ForeignContrastiveLossSquaredDistance(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x1",
           "note": "the hinge term's unit direction divides diff by the saved squared distance "
                   "instead of the distance"}

    @staticmethod
    def forward(ctx, x1, x2, same, margin):
        diff = x1 - x2
        dist_sq = (diff * diff).sum(1)
        dist = dist_sq.sqrt()
        y = same.to(x1.dtype)
        ctx.save_for_backward(diff, dist, dist_sq, y)
        ctx.margin = margin
        return 0.5 * (y * dist_sq + (1 - y) * torch.relu(margin - dist) ** 2).mean()

    @staticmethod
    def backward(ctx, grad):
        diff, dist, dist_sq, y, = ctx.saved_tensors
        scale = grad / y.shape[0]
        hinge = torch.relu(ctx.margin - dist)
        push = (1 - y) * hinge / dist_sq  # BUG
        g = scale * (y - push)[:, None] * diff
        return g, -g, None, None

    @staticmethod
    def example_inputs():
        return _contrastive_inputs()


# ------------------------------------------------------------------------- ArcFace-style margin
def _arcface_inputs():
    gen = torch.Generator().manual_seed(43)
    cosine = torch.rand(4, 5, dtype=torch.float64, generator=gen) * 1.6 - 0.8
    target = torch.tensor([1, 3, 3, 0])
    return cosine, target, 8.0, 0.3


class ForeignArcFaceLogits(torch.autograd.Function):
    """s * cos(theta + m) at the target class, s * cos(theta) elsewhere (theta = acos(cosine))."""

    bug = None

    @staticmethod
    def forward(ctx, cosine, target, s, m):
        theta = torch.acos(cosine)
        onehot = torch.zeros_like(cosine).scatter_(1, target[:, None], 1.0)
        logits = s * torch.where(onehot.bool(), torch.cos(theta + m), cosine)
        ctx.save_for_backward(theta, onehot)
        ctx.s, ctx.m = s, m
        return logits

    @staticmethod
    def backward(ctx, grad):
        theta, onehot = ctx.saved_tensors
        margin_slope = torch.sin(theta + ctx.m) / torch.sin(theta)
        slope = onehot * margin_slope + (1 - onehot)
        return ctx.s * grad * slope, None, None, None

    @staticmethod
    def example_inputs():
        return _arcface_inputs()


class ForeignArcFaceLogitsMarginEverywhere(torch.autograd.Function):
    bug = {"kind": "region", "input": "cosine",
           "note": "the margin's slope sin(theta + m) / sin(theta) is applied to every class, not "
                   "only at the target where the margin was added"}

    @staticmethod
    def forward(ctx, cosine, target, s, m):
        theta = cosine.acos()
        rows = torch.arange(cosine.shape[0])
        logits = cosine.clone()
        logits[rows, target] = torch.cos(theta[rows, target] + m)
        ctx.save_for_backward(theta)
        ctx.s, ctx.m = s, m
        return s * logits

    @staticmethod
    def backward(ctx, grad):
        (theta,) = ctx.saved_tensors
        slope = torch.sin(theta + ctx.m) / torch.sin(theta)  # BUG
        return grad * slope * ctx.s, None, None, None

    @staticmethod
    def example_inputs():
        return _arcface_inputs()


# ----------------------------------------------------------------- Wasserstein, sorted samples
def _wasserstein_inputs():
    gen = torch.Generator().manual_seed(44)
    return (torch.randn(6, dtype=torch.float64, generator=gen),
            torch.randn(6, dtype=torch.float64, generator=gen) + 0.3)


class ForeignWasserstein1D(torch.autograd.Function):
    """W1 between two equal-size empirical samples: mean |sort(x) - sort(y)|."""

    bug = None

    @staticmethod
    def forward(ctx, x, y):
        xs, ix = torch.sort(x)
        ys, iy = torch.sort(y)
        ctx.save_for_backward(xs - ys, ix, iy)
        return (xs - ys).abs().mean()

    @staticmethod
    def backward(ctx, grad):
        gap, ix, iy = ctx.saved_tensors
        d = grad * torch.sign(gap) / gap.numel()
        grad_x = torch.empty_like(d)
        grad_y = torch.empty_like(d)
        grad_x[ix] = d
        grad_y[iy] = -d
        return grad_x, grad_y

    @staticmethod
    def example_inputs():
        return _wasserstein_inputs()


class ForeignWasserstein1DOtherPermutation(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "x's sorted-order gradient is scattered back with y's sort permutation"}

    @staticmethod
    def forward(ctx, x, y):
        xs, ix = x.sort()
        ys, iy = y.sort()
        ctx.save_for_backward(xs, ys, ix, iy)
        return (xs - ys).abs().mean()

    @staticmethod
    def backward(ctx, grad):
        xs, ys, ix, iy = ctx.saved_tensors
        per_rank = (xs - ys).sign() * (grad / xs.shape[0])
        grad_x = torch.zeros_like(xs).scatter_(0, iy, per_rank)  # BUG
        grad_y = torch.zeros_like(ys).scatter_(0, iy, -per_rank)
        return grad_x, grad_y

    @staticmethod
    def example_inputs():
        return _wasserstein_inputs()
