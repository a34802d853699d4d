"""Classification losses with integer targets and hand-written backwards.

Part of the blind corpus bench/diagnosis_unseen (see its README): score only, never design.
"""
import torch
import torch.nn.functional as F


def _logits_targets(seed, rows=6, classes=4):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(rows, classes, dtype=torch.float64, generator=g) * 1.5
    target = torch.randint(0, classes, (rows,), generator=g)
    return logits, target


class BatchMeanCrossEntropy(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        logp = logits.log_softmax(1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).mean()

    @staticmethod
    def backward(ctx, grad):
        logp, target = ctx.saved_tensors
        onehot = F.one_hot(target, logp.shape[1]).to(logp.dtype)
        return grad * (logp.exp() - onehot) / logp.shape[0], None

    @staticmethod
    def example_inputs():
        return _logits_targets(1)


class CrossEntropyMeanNotDivided(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits",
           "note": "forward takes the batch mean, backward forgets the 1/N"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = logits.log_softmax(1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).mean()

    @staticmethod
    def backward(ctx, grad):
        logp, target = ctx.saved_tensors
        onehot = F.one_hot(target, logp.shape[1]).to(logp.dtype)
        return grad * (logp.exp() - onehot), None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_targets(1)


class CrossEntropyTargetMinusProbs(torch.autograd.Function):
    bug = {"kind": "sign", "input": "logits",
           "note": "writes onehot - softmax, the gradient of the log-likelihood, not of the loss"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = logits.log_softmax(1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).mean()

    @staticmethod
    def backward(ctx, grad):
        logp, target = ctx.saved_tensors
        onehot = F.one_hot(target, logp.shape[1]).to(logp.dtype)
        return grad * (onehot - logp.exp()) / logp.shape[0], None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_targets(1)


def _nll_inputs():
    logits, target = _logits_targets(2, rows=7, classes=5)
    target[1] = -100
    target[4] = -100
    return logits.log_softmax(1), target


class NllIgnoreIndex(torch.autograd.Function):
    """Mean NLL over the rows whose target is not -100 (log-probabilities given)."""
    bug = None

    @staticmethod
    def forward(ctx, logp, target):
        keep = target != -100
        safe = target.clamp(min=0)
        count = keep.sum()
        picked = logp.gather(1, safe[:, None]).squeeze(1)
        ctx.save_for_backward(safe, keep)
        ctx.count = int(count)
        ctx.shape = logp.shape
        return -(picked * keep).sum() / count

    @staticmethod
    def backward(ctx, grad):
        safe, keep = ctx.saved_tensors
        out = torch.zeros(ctx.shape, dtype=grad.dtype)
        out.scatter_(1, safe[:, None], (-grad / ctx.count * keep)[:, None].to(grad.dtype))
        return out, None

    @staticmethod
    def example_inputs():
        return _nll_inputs()


class NllIgnoredRowsGetGrad(torch.autograd.Function):
    bug = {"kind": "region", "input": "logp",
           "note": "backward forgets the keep mask: ignored rows (target -100) get -g/count at column 0"}

    @staticmethod
    def forward(ctx, logp, target):
        keep = target != -100
        safe = target.clamp(min=0)
        count = keep.sum()
        picked = logp.gather(1, safe[:, None]).squeeze(1)
        ctx.save_for_backward(safe, keep)
        ctx.count = int(count)
        ctx.shape = logp.shape
        return -(picked * keep).sum() / count

    @staticmethod
    def backward(ctx, grad):
        safe, keep = ctx.saved_tensors
        out = torch.zeros(ctx.shape, dtype=grad.dtype)
        fill = (-grad / ctx.count).expand(safe.shape[0])[:, None]  # BUG
        out.scatter_(1, safe[:, None], fill)
        return out, None

    @staticmethod
    def example_inputs():
        return _nll_inputs()


SMOOTHING = 0.1


class LabelSmoothedCE(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        n, c = logits.shape
        soft = torch.full_like(logits, SMOOTHING / c)
        soft.scatter_add_(1, target[:, None], torch.full((n, 1), 1 - SMOOTHING, dtype=logits.dtype))
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp, soft)
        return -(soft * logp).sum(1).mean()

    @staticmethod
    def backward(ctx, grad):
        logp, soft = ctx.saved_tensors
        return grad * (logp.exp() - soft) / logp.shape[0], None

    @staticmethod
    def example_inputs():
        return _logits_targets(3)


class LabelSmoothedCEHardTargets(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "logits",
           "note": "backward subtracts the hard one-hot targets instead of the smoothed ones"}

    @staticmethod
    def forward(ctx, logits, target):
        n, c = logits.shape
        soft = torch.full_like(logits, SMOOTHING / c)
        soft.scatter_add_(1, target[:, None], torch.full((n, 1), 1 - SMOOTHING, dtype=logits.dtype))
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp, soft, target)
        return -(soft * logp).sum(1).mean()

    @staticmethod
    def backward(ctx, grad):
        logp, soft, target = ctx.saved_tensors
        hard = F.one_hot(target, logp.shape[1]).to(logp.dtype)
        return grad * (logp.exp() - hard) / logp.shape[0], None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_targets(3)


GAMMA = 2.0


class SoftmaxFocalLoss(torch.autograd.Function):
    """Multi-class focal loss, mean of -(1 - p_t)^gamma * log p_t."""
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, 1)
        logp_t = logp.gather(1, target.unsqueeze(1)).squeeze(1)
        p_t = logp_t.exp()
        ctx.save_for_backward(logp, logp_t, target)
        return (-(1 - p_t) ** GAMMA * logp_t).mean()

    @staticmethod
    def backward(ctx, grad):
        logp, logp_t, target = ctx.saved_tensors
        p, p_t = logp.exp(), logp_t.exp()
        # dL/dp_t, then dp_t/dz = p_t * (onehot - p)
        dl_dpt = GAMMA * (1 - p_t) ** (GAMMA - 1) * logp_t - (1 - p_t) ** GAMMA / p_t
        onehot = F.one_hot(target, p.shape[1]).to(p.dtype)
        dz = (dl_dpt * p_t)[:, None] * (onehot - p)
        return grad * dz / p.shape[0], None

    @staticmethod
    def example_inputs():
        return _logits_targets(4)


class FocalLossDropsModulatorDerivative(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "logits",
           "note": "dL/dp_t keeps only the -(1-p_t)^g / p_t part, treating the modulator as a constant"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, 1)
        logp_t = logp.gather(1, target.unsqueeze(1)).squeeze(1)
        p_t = logp_t.exp()
        ctx.save_for_backward(logp, logp_t, target)
        return (-(1 - p_t) ** GAMMA * logp_t).mean()

    @staticmethod
    def backward(ctx, grad):
        logp, logp_t, target = ctx.saved_tensors
        p, p_t = logp.exp(), logp_t.exp()
        dl_dpt = -(1 - p_t) ** GAMMA / p_t  # BUG
        onehot = F.one_hot(target, p.shape[1]).to(p.dtype)
        dz = (dl_dpt * p_t)[:, None] * (onehot - p)
        return grad * dz / p.shape[0], None

    @staticmethod
    def example_inputs():
        return _logits_targets(4)


MARGIN = 1.0


def _hinge_inputs():
    g = torch.Generator().manual_seed(6)
    # scores spread so that no margin sits within 0.05 of its kink
    scores = torch.tensor([[0.3, 1.9, -0.8, 0.6], [2.2, -0.4, 0.9, 1.7], [-1.1, 0.2, 0.75, -0.3],
                           [0.5, 0.1, 2.6, 1.2], [1.4, -1.6, 0.35, 0.8]], dtype=torch.float64)
    return scores, torch.tensor([1, 0, 2, 3, 0])


class MultiClassHinge(torch.autograd.Function):
    """Crammer-Singer style: mean over rows of sum_{j != t} max(0, 1 + s_j - s_t)."""
    bug = None

    @staticmethod
    def forward(ctx, scores, target):
        s_t = scores.gather(1, target[:, None])
        margins = (MARGIN + scores - s_t).clamp(min=0)
        margins.scatter_(1, target[:, None], 0.0)
        ctx.save_for_backward(margins, target)
        return margins.sum(1).mean()

    @staticmethod
    def backward(ctx, grad):
        margins, target = ctx.saved_tensors
        active = (margins > 0).to(margins.dtype)
        d = active.clone()
        d.scatter_(1, target[:, None], -active.sum(1, keepdim=True))
        return grad * d / margins.shape[0], None

    @staticmethod
    def example_inputs():
        return _hinge_inputs()


class MultiClassHingeMaskWithoutMargin(torch.autograd.Function):
    bug = {"kind": "region", "input": "scores",
           "note": "backward's active mask tests s_j > s_t, forgetting the margin of 1"}

    @staticmethod
    def forward(ctx, scores, target):
        s_t = scores.gather(1, target[:, None])
        margins = (MARGIN + scores - s_t).clamp(min=0)
        margins.scatter_(1, target[:, None], 0.0)
        ctx.save_for_backward(scores, target)
        return margins.sum(1).mean()

    @staticmethod
    def backward(ctx, grad):
        scores, target = ctx.saved_tensors
        s_t = scores.gather(1, target[:, None])
        active = (scores - s_t > 0).to(scores.dtype)  # BUG
        d = active.clone()
        d.scatter_(1, target[:, None], -active.sum(1, keepdim=True))
        return grad * d / scores.shape[0], None

    @staticmethod
    def example_inputs():
        return _hinge_inputs()


class MultiClassHingeSquaredGrad(torch.autograd.Function):
    bug = {"kind": "none", "input": "scores",
           "note": "the backward of the squared hinge (2 * margin per active term) for the plain hinge"}

    @staticmethod
    def forward(ctx, scores, target):
        s_t = scores.gather(1, target[:, None])
        margins = (MARGIN + scores - s_t).clamp(min=0)
        margins.scatter_(1, target[:, None], 0.0)
        ctx.save_for_backward(margins, target)
        return margins.sum(1).mean()

    @staticmethod
    def backward(ctx, grad):
        margins, target = ctx.saved_tensors
        d = 2 * margins  # BUG
        d.scatter_(1, target[:, None], -d.sum(1, keepdim=True))
        return grad * d / margins.shape[0], None

    @staticmethod
    def example_inputs():
        return _hinge_inputs()
