"""Metric-learning losses by hand: the triplet margin loss, InfoNCE with a temperature (in-batch
negatives) and the center loss with integer class ids."""
import torch

MARGIN = 0.5
TAU = 0.2


def _triplet_inputs():
    g = torch.Generator().manual_seed(501)
    a = torch.randn(6, 3, dtype=torch.float64, generator=g)
    p = a + 0.6 * torch.randn(6, 3, dtype=torch.float64, generator=g)
    n = a + 0.9 * torch.randn(6, 3, dtype=torch.float64, generator=g)
    return a.requires_grad_(), p.requires_grad_(), n.requires_grad_()


class AfarTripletMargin(torch.autograd.Function):
    """mean of relu(|a - p| - |a - n| + margin)."""

    bug = None

    @staticmethod
    def forward(ctx, anchor, positive, negative):
        dp = (anchor - positive).norm(dim=1)
        dn = (anchor - negative).norm(dim=1)
        ctx.save_for_backward(anchor, positive, negative, dp, dn)
        return (dp - dn + MARGIN).clamp(min=0.0).mean()

    @staticmethod
    def backward(ctx, grad_out):
        anchor, positive, negative, dp, dn = ctx.saved_tensors
        active = ((dp - dn + MARGIN) > 0).to(dp.dtype)[:, None] * grad_out / anchor.shape[0]
        u_pos = (anchor - positive) / dp[:, None]
        u_neg = (anchor - negative) / dn[:, None]
        return active * (u_pos - u_neg), -active * u_pos, active * u_neg

    @staticmethod
    def example_inputs():
        return _triplet_inputs()


class AfarTripletMarginSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "positive",
           "note": "the positive's and the negative's gradients are returned in each other's places"}

    @staticmethod
    def forward(ctx, anchor, positive, negative):
        dp = (anchor - positive).norm(dim=1)
        dn = (anchor - negative).norm(dim=1)
        ctx.save_for_backward(anchor, positive, negative, dp, dn)
        return (dp - dn + MARGIN).clamp(min=0.0).mean()

    @staticmethod
    def backward(ctx, grad_out):
        anchor, positive, negative, dp, dn = ctx.saved_tensors
        active = ((dp - dn + MARGIN) > 0).to(dp.dtype)[:, None] * grad_out / anchor.shape[0]
        u_pos = (anchor - positive) / dp[:, None]
        u_neg = (anchor - negative) / dn[:, None]
        grad_pos, grad_neg = -active * u_pos, active * u_neg
        return active * (u_pos - u_neg), grad_neg, grad_pos  # BUG

    @staticmethod
    def example_inputs():
        return _triplet_inputs()


class AfarTripletMarginNoMarginMask(torch.autograd.Function):
    bug = {"kind": "region", "input": "anchor",
           "note": "the active triplets are taken as dp > dn, without the margin: triplets violating only the margin get no gradient"}

    @staticmethod
    def forward(ctx, anchor, positive, negative):
        dp = (anchor - positive).norm(dim=1)
        dn = (anchor - negative).norm(dim=1)
        ctx.save_for_backward(anchor, positive, negative, dp, dn)
        return (dp - dn + MARGIN).clamp(min=0.0).mean()

    @staticmethod
    def backward(ctx, grad_out):
        anchor, positive, negative, dp, dn = ctx.saved_tensors
        active = (dp > dn).to(dp.dtype)[:, None] * grad_out / anchor.shape[0]  # BUG
        u_pos = (anchor - positive) / dp[:, None]
        u_neg = (anchor - negative) / dn[:, None]
        return active * (u_pos - u_neg), -active * u_pos, active * u_neg

    @staticmethod
    def example_inputs():
        return _triplet_inputs()


# ------------------------------------------------------------------------------- InfoNCE
def _nce_inputs():
    g = torch.Generator().manual_seed(502)
    return (0.5 * torch.randn(4, 3, dtype=torch.float64, generator=g)).requires_grad_(), \
        (0.5 * torch.randn(4, 3, dtype=torch.float64, generator=g)).requires_grad_()


class AfarInfoNCE(torch.autograd.Function):
    """Cross-entropy of q @ k.T / tau against the diagonal (in-batch negatives)."""

    bug = None

    @staticmethod
    def forward(ctx, query, key):
        logits = query @ key.mT / TAU
        ctx.save_for_backward(query, key, logits)
        return (torch.logsumexp(logits, dim=1) - logits.diagonal()).mean()

    @staticmethod
    def backward(ctx, grad_out):
        query, key, logits = ctx.saved_tensors
        n = logits.shape[0]
        g = (torch.softmax(logits, dim=1) - torch.eye(n, dtype=logits.dtype)) * grad_out / n
        return g @ key / TAU, g.mT @ query / TAU

    @staticmethod
    def example_inputs():
        return _nce_inputs()


class AfarInfoNCENoTemperature(torch.autograd.Function):
    bug = {"kind": "scale", "input": "query",
           "note": "the query gradient forgets the 1 / tau of the logits"}

    @staticmethod
    def forward(ctx, query, key):
        logits = query @ key.mT / TAU
        ctx.save_for_backward(query, key, logits)
        return (torch.logsumexp(logits, dim=1) - logits.diagonal()).mean()

    @staticmethod
    def backward(ctx, grad_out):
        query, key, logits = ctx.saved_tensors
        n = logits.shape[0]
        g = (torch.softmax(logits, dim=1) - torch.eye(n, dtype=logits.dtype)) * grad_out / n
        grad_query = g @ key  # BUG
        return grad_query, g.mT @ query / TAU

    @staticmethod
    def example_inputs():
        return _nce_inputs()


class AfarInfoNCEKeyNoTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "key",
           "note": "the key gradient uses g @ query instead of g.T @ query"}

    @staticmethod
    def forward(ctx, query, key):
        logits = query @ key.mT / TAU
        ctx.save_for_backward(query, key, logits)
        return (torch.logsumexp(logits, dim=1) - logits.diagonal()).mean()

    @staticmethod
    def backward(ctx, grad_out):
        query, key, logits = ctx.saved_tensors
        n = logits.shape[0]
        g = (torch.softmax(logits, dim=1) - torch.eye(n, dtype=logits.dtype)) * grad_out / n
        grad_key = g @ query / TAU  # BUG
        return g @ key / TAU, grad_key

    @staticmethod
    def example_inputs():
        return _nce_inputs()


# ---------------------------------------------------------------------------- center loss
def _center_inputs():
    g = torch.Generator().manual_seed(503)
    feats = torch.randn(6, 3, dtype=torch.float64, generator=g, requires_grad=True)
    centers = torch.randn(3, 3, dtype=torch.float64, generator=g, requires_grad=True)
    labels = torch.tensor([0, 2, 0, 1, 2, 0], dtype=torch.int64)
    return feats, centers, labels


class AfarCenterLoss(torch.autograd.Function):
    """0.5 * sum |feats - centers[labels]|^2 / N."""

    bug = None

    @staticmethod
    def forward(ctx, feats, centers, labels):
        diff = feats - centers[labels]
        ctx.save_for_backward(diff, labels)
        ctx.num_centers = centers.shape[0]
        return 0.5 * (diff * diff).sum() / feats.shape[0]

    @staticmethod
    def backward(ctx, grad_out):
        diff, labels = ctx.saved_tensors
        n = diff.shape[0]
        grad_feats = grad_out * diff / n
        per_center = torch.zeros(ctx.num_centers, diff.shape[1], dtype=diff.dtype).index_add_(0, labels, diff)
        return grad_feats, -grad_out * per_center / n, None

    @staticmethod
    def example_inputs():
        return _center_inputs()


class AfarCenterLossCenterSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "centers",
           "note": "the centers enter as feats - centers but their gradient is accumulated without the minus"}

    @staticmethod
    def forward(ctx, feats, centers, labels):
        diff = feats - centers[labels]
        ctx.save_for_backward(diff, labels)
        ctx.num_centers = centers.shape[0]
        return 0.5 * (diff * diff).sum() / feats.shape[0]

    @staticmethod
    def backward(ctx, grad_out):
        diff, labels = ctx.saved_tensors
        n = diff.shape[0]
        grad_feats = grad_out * diff / n
        per_center = torch.zeros(ctx.num_centers, diff.shape[1], dtype=diff.dtype).index_add_(0, labels, diff)
        grad_centers = grad_out * per_center / n  # BUG
        return grad_feats, grad_centers, None

    @staticmethod
    def example_inputs():
        return _center_inputs()


class AfarCenterLossSquaredInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "feats",
           "note": "the saved residual is squared in place with pow_ to compute the loss, so backward reads diff**2 instead of diff"}

    @staticmethod
    def forward(ctx, feats, centers, labels):
        diff = feats - centers[labels]
        ctx.save_for_backward(diff, labels)
        ctx.num_centers = centers.shape[0]
        return 0.5 * diff.pow_(2).sum() / feats.shape[0]  # BUG

    @staticmethod
    def backward(ctx, grad_out):
        diff, labels = ctx.saved_tensors
        n = diff.shape[0]
        grad_feats = grad_out * diff / n
        per_center = torch.zeros(ctx.num_centers, diff.shape[1], dtype=diff.dtype).index_add_(0, labels, diff)
        return grad_feats, -grad_out * per_center / n, None

    @staticmethod
    def example_inputs():
        return _center_inputs()
