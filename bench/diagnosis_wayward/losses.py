"""Classification losses of the structured-prediction toolbox: label-smoothing cross-entropy with an
ignore_index (mean over the kept rows), and a sampled softmax over the true class plus shared
sampled negatives with the log-Q correction and accidental hits masked."""
import math

import torch

IGNORE = -100


def _smoothing_inputs():
    gen = torch.Generator().manual_seed(51)
    logits = torch.randn(4, 5, dtype=torch.float64, generator=gen)
    target = torch.tensor([2, IGNORE, 0, 2], dtype=torch.int64)
    return logits, target, 0.2


class WaywardLabelSmoothingCE(torch.autograd.Function):
    """Cross-entropy against (1 - eps) one_hot + eps / C, rows with target == -100 left out."""
    bug = None

    @staticmethod
    def forward(ctx, logits, target, smoothing):
        valid = target != IGNORE
        safe = torch.where(valid, target, torch.zeros_like(target))
        logp = torch.log_softmax(logits, dim=1)
        onehot = torch.zeros_like(logp).scatter_(1, safe.unsqueeze(1), 1.0)
        q = onehot * (1 - smoothing) + smoothing / logits.shape[1]
        per_row = -(q * logp).sum(1)
        ctx.save_for_backward(logp, safe, valid)
        ctx.smoothing = smoothing
        return per_row.masked_fill(~valid, 0.0).sum() / valid.sum()

    @staticmethod
    def backward(ctx, grad_loss):
        logp, safe, valid = ctx.saved_tensors
        eps, C = ctx.smoothing, logp.shape[1]
        onehot = torch.zeros_like(logp).scatter_(1, safe.unsqueeze(1), 1.0)
        q = onehot * (1 - eps) + eps / C
        grad = (torch.exp(logp) - q) * valid.unsqueeze(1) / valid.sum()
        return grad_loss * grad, None, None

    example_inputs = staticmethod(_smoothing_inputs)


class WaywardLabelSmoothingCENoUniform(torch.autograd.Function):
    """Label smoothing; backward rebuilds the smoothed target."""
    bug = {"kind": "missing_term", "input": "logits",
           "note": "the smoothed target is rebuilt as (1 - eps) one_hot: its uniform eps / C part is left out"}

    @staticmethod
    def forward(ctx, logits, target, smoothing):
        valid = target != IGNORE
        safe = torch.where(valid, target, torch.zeros_like(target))
        logp = torch.log_softmax(logits, dim=1)
        onehot = torch.zeros_like(logp).scatter_(1, safe.unsqueeze(1), 1.0)
        q = onehot * (1 - smoothing) + smoothing / logits.shape[1]
        per_row = -(q * logp).sum(1)
        ctx.save_for_backward(logp, safe, valid)
        ctx.smoothing = smoothing
        return per_row.masked_fill(~valid, 0.0).sum() / valid.sum()

    @staticmethod
    def backward(ctx, grad_loss):
        logp, safe, valid = ctx.saved_tensors
        eps = ctx.smoothing
        onehot = torch.zeros_like(logp).scatter_(1, safe.unsqueeze(1), 1.0)
        q = onehot * (1 - eps)  # BUG
        grad = (torch.exp(logp) - q) * valid.unsqueeze(1) / valid.sum()
        return grad_loss * grad, None, None

    example_inputs = staticmethod(_smoothing_inputs)


class WaywardLabelSmoothingCEIgnoredRows(torch.autograd.Function):
    """Label smoothing; the ignored rows are dropped by the forward only."""
    bug = {"kind": "region", "input": "logits",
           "note": "the valid-row mask is not applied in backward: rows with target == -100 receive softmax - q"}

    @staticmethod
    def forward(ctx, logits, target, smoothing):
        valid = target != IGNORE
        safe = torch.where(valid, target, torch.zeros_like(target))
        logp = torch.log_softmax(logits, dim=1)
        onehot = torch.zeros_like(logp).scatter_(1, safe.unsqueeze(1), 1.0)
        q = onehot * (1 - smoothing) + smoothing / logits.shape[1]
        per_row = -(q * logp).sum(1)
        ctx.save_for_backward(logp, safe, valid)
        ctx.smoothing = smoothing
        return per_row.masked_fill(~valid, 0.0).sum() / valid.sum()

    @staticmethod
    def backward(ctx, grad_loss):
        logp, safe, valid = ctx.saved_tensors
        eps, C = ctx.smoothing, logp.shape[1]
        onehot = torch.zeros_like(logp).scatter_(1, safe.unsqueeze(1), 1.0)
        q = onehot * (1 - eps) + eps / C
        grad = (torch.exp(logp) - q) / valid.sum()  # BUG
        return grad_loss * grad, None, None

    example_inputs = staticmethod(_smoothing_inputs)


class WaywardLabelSmoothingCEBatchMean(torch.autograd.Function):
    """Label smoothing; the mean is taken over the batch in backward."""
    bug = {"kind": "scale", "input": "logits",
           "note": "divides by the batch size B; the forward's mean is over the valid rows only (3 of 4)"}

    @staticmethod
    def forward(ctx, logits, target, smoothing):
        valid = target != IGNORE
        safe = torch.where(valid, target, torch.zeros_like(target))
        logp = torch.log_softmax(logits, dim=1)
        onehot = torch.zeros_like(logp).scatter_(1, safe.unsqueeze(1), 1.0)
        q = onehot * (1 - smoothing) + smoothing / logits.shape[1]
        per_row = -(q * logp).sum(1)
        ctx.save_for_backward(logp, safe, valid)
        ctx.smoothing = smoothing
        return per_row.masked_fill(~valid, 0.0).sum() / valid.sum()

    @staticmethod
    def backward(ctx, grad_loss):
        logp, safe, valid = ctx.saved_tensors
        eps, C = ctx.smoothing, logp.shape[1]
        onehot = torch.zeros_like(logp).scatter_(1, safe.unsqueeze(1), 1.0)
        q = onehot * (1 - eps) + eps / C
        grad = (torch.exp(logp) - q) * valid.unsqueeze(1) / logp.shape[0]  # BUG
        return grad_loss * grad, None, None

    example_inputs = staticmethod(_smoothing_inputs)


class WaywardLabelSmoothingCEWeightedInPlace(torch.autograd.Function):
    """Label smoothing; the weighted log-probabilities are formed in the saved buffer."""
    bug = {"kind": "inplace", "input": "logits",
           "note": "logp is kept on ctx, then logp.mul_(q) turns it into q * logp in place: backward's exp(logp) is no longer the softmax"}

    @staticmethod
    def forward(ctx, logits, target, smoothing):
        valid = target != IGNORE
        safe = torch.where(valid, target, torch.zeros_like(target))
        logp = torch.log_softmax(logits, dim=1)
        onehot = torch.zeros_like(logp).scatter_(1, safe.unsqueeze(1), 1.0)
        q = onehot * (1 - smoothing) + smoothing / logits.shape[1]
        ctx.logp, ctx.safe, ctx.valid = logp, safe, valid
        ctx.smoothing = smoothing
        per_row = -logp.mul_(q).sum(1)  # BUG
        return per_row.masked_fill(~valid, 0.0).sum() / valid.sum()

    @staticmethod
    def backward(ctx, grad_loss):
        logp, safe, valid = ctx.logp, ctx.safe, ctx.valid
        eps, C = ctx.smoothing, logp.shape[1]
        onehot = torch.zeros_like(logp).scatter_(1, safe.unsqueeze(1), 1.0)
        q = onehot * (1 - eps) + eps / C
        grad = (torch.exp(logp) - q) * valid.unsqueeze(1) / valid.sum()
        return grad_loss * grad, None, None

    example_inputs = staticmethod(_smoothing_inputs)


def _sampled_inputs():
    gen = torch.Generator().manual_seed(52)
    hidden = torch.randn(3, 4, dtype=torch.float64, generator=gen).requires_grad_()
    weight = torch.randn(6, 4, dtype=torch.float64, generator=gen).requires_grad_()
    targets = torch.tensor([1, 3, 1], dtype=torch.int64)
    sampled = torch.tensor([0, 1, 2, 3, 1], dtype=torch.int64)  # drawn with replacement: repeats, accidental hits
    log_q = torch.log(torch.rand(3, 6, dtype=torch.float64, generator=gen) * 0.2 + 0.05)
    return hidden, weight, targets, sampled, log_q


class WaywardSampledSoftmax(torch.autograd.Function):
    """loss[b] over the true class and shared sampled negatives, logits h . w_c - log Q(c), hits masked."""
    bug = None

    @staticmethod
    def forward(ctx, hidden, weight, targets, sampled, log_q):
        B, S = hidden.shape[0], sampled.shape[0]
        cand = torch.cat([targets.unsqueeze(1), sampled.unsqueeze(0).expand(B, S)], dim=1)
        hit = cand == cand[:, :1]
        hit[:, 0] = False
        raw = torch.einsum("bd,bsd->bs", hidden, weight[cand]) - log_q
        logits = raw.masked_fill(hit, -math.inf)
        ctx.save_for_backward(hidden, weight, cand, raw)
        return torch.logsumexp(logits, dim=1) - logits[:, 0]

    @staticmethod
    def backward(ctx, grad_loss):
        hidden, weight, cand, raw = ctx.saved_tensors
        hit = cand == cand[:, :1]
        hit[:, 0] = False
        P = torch.softmax(raw.masked_fill(hit, -math.inf), dim=1)
        P[:, 0] -= 1
        G = grad_loss.unsqueeze(1) * P
        grad_hidden = torch.einsum("bs,bsd->bd", G, weight[cand])
        grad_weight = torch.zeros_like(weight).index_add_(
            0, cand.reshape(-1), (G.unsqueeze(2) * hidden.unsqueeze(1)).reshape(-1, hidden.shape[1]))
        grad_log_q = -G if ctx.needs_input_grad[4] else None
        return grad_hidden, grad_weight, None, None, grad_log_q

    example_inputs = staticmethod(_sampled_inputs)


class WaywardSampledSoftmaxAssignRows(torch.autograd.Function):
    """Sampled softmax; the class-embedding gradient is written per candidate."""
    bug = {"kind": "not_accumulated", "input": "weight",
           "note": "grad_weight[cand] = rows assigns: a class drawn twice, or true and drawn, keeps one row's gradient"}

    @staticmethod
    def forward(ctx, hidden, weight, targets, sampled, log_q):
        B, S = hidden.shape[0], sampled.shape[0]
        cand = torch.cat([targets.unsqueeze(1), sampled.unsqueeze(0).expand(B, S)], dim=1)
        hit = cand == cand[:, :1]
        hit[:, 0] = False
        raw = torch.einsum("bd,bsd->bs", hidden, weight[cand]) - log_q
        logits = raw.masked_fill(hit, -math.inf)
        ctx.save_for_backward(hidden, weight, cand, raw)
        return torch.logsumexp(logits, dim=1) - logits[:, 0]

    @staticmethod
    def backward(ctx, grad_loss):
        hidden, weight, cand, raw = ctx.saved_tensors
        hit = cand == cand[:, :1]
        hit[:, 0] = False
        P = torch.softmax(raw.masked_fill(hit, -math.inf), dim=1)
        P[:, 0] -= 1
        G = grad_loss.unsqueeze(1) * P
        grad_hidden = torch.einsum("bs,bsd->bd", G, weight[cand])
        grad_weight = torch.zeros_like(weight)
        grad_weight[cand.reshape(-1)] = (G.unsqueeze(2) * hidden.unsqueeze(1)).reshape(-1, hidden.shape[1])  # BUG
        grad_log_q = -G if ctx.needs_input_grad[4] else None
        return grad_hidden, grad_weight, None, None, grad_log_q

    example_inputs = staticmethod(_sampled_inputs)


class WaywardSampledSoftmaxUnweighted(torch.autograd.Function):
    """Sampled softmax; the per-row losses' gradient."""
    bug = {"kind": "ignores_grad_output", "input": "hidden",
           "note": "G = softmax - onehot is never multiplied by grad_loss[b]; weight (and log_q) are wrong too"}

    @staticmethod
    def forward(ctx, hidden, weight, targets, sampled, log_q):
        B, S = hidden.shape[0], sampled.shape[0]
        cand = torch.cat([targets.unsqueeze(1), sampled.unsqueeze(0).expand(B, S)], dim=1)
        hit = cand == cand[:, :1]
        hit[:, 0] = False
        raw = torch.einsum("bd,bsd->bs", hidden, weight[cand]) - log_q
        logits = raw.masked_fill(hit, -math.inf)
        ctx.save_for_backward(hidden, weight, cand, raw)
        return torch.logsumexp(logits, dim=1) - logits[:, 0]

    @staticmethod
    def backward(ctx, grad_loss):
        hidden, weight, cand, raw = ctx.saved_tensors
        hit = cand == cand[:, :1]
        hit[:, 0] = False
        P = torch.softmax(raw.masked_fill(hit, -math.inf), dim=1)
        P[:, 0] -= 1
        G = P  # BUG
        grad_hidden = torch.einsum("bs,bsd->bd", G, weight[cand])
        grad_weight = torch.zeros_like(weight).index_add_(
            0, cand.reshape(-1), (G.unsqueeze(2) * hidden.unsqueeze(1)).reshape(-1, hidden.shape[1]))
        grad_log_q = -G if ctx.needs_input_grad[4] else None
        return grad_hidden, grad_weight, None, None, grad_log_q

    example_inputs = staticmethod(_sampled_inputs)


class WaywardSampledSoftmaxOuterWithGrad(torch.autograd.Function):
    """Sampled softmax; the class-embedding gradient's outer product."""
    bug = {"kind": "wrong_variable", "input": "weight",
           "note": "the outer product takes grad_hidden where hidden belongs: G[b, s] * grad_hidden[b]"}

    @staticmethod
    def forward(ctx, hidden, weight, targets, sampled, log_q):
        B, S = hidden.shape[0], sampled.shape[0]
        cand = torch.cat([targets.unsqueeze(1), sampled.unsqueeze(0).expand(B, S)], dim=1)
        hit = cand == cand[:, :1]
        hit[:, 0] = False
        raw = torch.einsum("bd,bsd->bs", hidden, weight[cand]) - log_q
        logits = raw.masked_fill(hit, -math.inf)
        ctx.save_for_backward(hidden, weight, cand, raw)
        return torch.logsumexp(logits, dim=1) - logits[:, 0]

    @staticmethod
    def backward(ctx, grad_loss):
        hidden, weight, cand, raw = ctx.saved_tensors
        hit = cand == cand[:, :1]
        hit[:, 0] = False
        P = torch.softmax(raw.masked_fill(hit, -math.inf), dim=1)
        P[:, 0] -= 1
        G = grad_loss.unsqueeze(1) * P
        grad_hidden = torch.einsum("bs,bsd->bd", G, weight[cand])
        grad_weight = torch.zeros_like(weight).index_add_(
            0, cand.reshape(-1), (G.unsqueeze(2) * grad_hidden.unsqueeze(1)).reshape(-1, hidden.shape[1]))  # BUG
        grad_log_q = -G if ctx.needs_input_grad[4] else None
        return grad_hidden, grad_weight, None, None, grad_log_q

    example_inputs = staticmethod(_sampled_inputs)


class WaywardSampledSoftmaxMasksTrueClass(torch.autograd.Function):
    """Sampled softmax; backward rebuilds the accidental-hit mask."""
    bug = {"kind": "region", "input": "hidden",
           "note": "the rebuilt hit mask keeps column 0 (the true class itself), so the true logit's softmax share is dropped; weight is wrong too"}

    @staticmethod
    def forward(ctx, hidden, weight, targets, sampled, log_q):
        B, S = hidden.shape[0], sampled.shape[0]
        cand = torch.cat([targets.unsqueeze(1), sampled.unsqueeze(0).expand(B, S)], dim=1)
        hit = cand == cand[:, :1]
        hit[:, 0] = False
        raw = torch.einsum("bd,bsd->bs", hidden, weight[cand]) - log_q
        logits = raw.masked_fill(hit, -math.inf)
        ctx.save_for_backward(hidden, weight, cand, raw)
        return torch.logsumexp(logits, dim=1) - logits[:, 0]

    @staticmethod
    def backward(ctx, grad_loss):
        hidden, weight, cand, raw = ctx.saved_tensors
        hit = cand == cand[:, :1]  # BUG
        P = torch.softmax(raw.masked_fill(hit, -math.inf), dim=1)
        P[:, 0] -= 1
        G = grad_loss.unsqueeze(1) * P
        grad_hidden = torch.einsum("bs,bsd->bd", G, weight[cand])
        grad_weight = torch.zeros_like(weight).index_add_(
            0, cand.reshape(-1), (G.unsqueeze(2) * hidden.unsqueeze(1)).reshape(-1, hidden.shape[1]))
        grad_log_q = -G if ctx.needs_input_grad[4] else None
        return grad_hidden, grad_weight, None, None, grad_log_q

    example_inputs = staticmethod(_sampled_inputs)
