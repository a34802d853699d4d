"""Classification losses with integer targets, fused with their softmax as training code does.

Cross entropy (mean), NLL on log-probabilities with ignore_index, label smoothing, focal loss and
the multi-class hinge (multi-margin) loss. Inputs mix float logits with int64 targets.
"""
import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

IGNORE = -100


def _logits_targets(seed, n=5, c=4, ignore=()):
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, c, dtype=torch.float64, generator=gen)
    target = torch.randint(0, c, (n,), generator=gen)
    for i in ignore:
        target[i] = IGNORE
    return logits, target


def _softmax_xent_fwd(logits, target):
    lse = torch.logsumexp(logits, dim=1)
    picked = logits.gather(1, target[:, None]).squeeze(1)
    return (lse - picked).mean(), torch.softmax(logits, dim=1)


class UnknownSoftmaxCrossEntropy(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        loss, prob = _softmax_xent_fwd(logits, target)
        ctx.save_for_backward(prob, target)
        return loss

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        prob, target = ctx.saved_tensors
        onehot = F.one_hot(target, prob.shape[1]).to(prob.dtype)
        return grad * (prob - onehot) / prob.shape[0], None

    @staticmethod
    def example_inputs():
        return _logits_targets(1)


class UnknownSoftmaxCrossEntropySummed(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits",
           "note": "the loss is a batch mean but the backward forgets to divide by the batch size"}

    @staticmethod
    def forward(ctx, logits, target):
        loss, prob = _softmax_xent_fwd(logits, target)
        ctx.save_for_backward(prob, target)
        return loss

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        prob, target = ctx.saved_tensors
        dlogits = prob.clone()
        dlogits[torch.arange(prob.shape[0]), target] -= 1.0
        return grad * dlogits, None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_targets(2)


class UnknownSoftmaxCrossEntropySigmoidGrad(torch.autograd.Function):
    bug = {"kind": "none", "input": "logits",
           "note": "the backward is binary cross entropy's, sigmoid(z) - onehot, for a softmax loss"}

    @staticmethod
    def forward(ctx, logits, target):
        loss, _ = _softmax_xent_fwd(logits, target)
        ctx.save_for_backward(logits, target)
        return loss

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        logits, target = ctx.saved_tensors
        onehot = F.one_hot(target, logits.shape[1]).to(logits.dtype)
        return grad * (torch.sigmoid(logits) - onehot) / logits.shape[0], None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_targets(3)


def _nll_fwd(ctx, logp, target):
    valid = target != IGNORE
    safe = target.clamp(min=0)
    picked = logp.gather(1, safe[:, None]).squeeze(1)
    count = valid.sum()
    ctx.save_for_backward(target, valid)
    ctx.count = int(count)
    ctx.classes = logp.shape[1]
    return -(picked * valid).sum() / count


class UnknownNLLIgnoreIndex(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logp, target):
        return _nll_fwd(ctx, logp, target)

    @staticmethod
    def backward(ctx, grad):
        target, valid = ctx.saved_tensors
        dlogp = grad.new_zeros(target.shape[0], ctx.classes)
        rows = valid.nonzero().squeeze(1)
        dlogp[rows, target[rows]] = -grad / ctx.count
        return dlogp, None

    @staticmethod
    def example_inputs():
        return _logits_targets(4, n=6, ignore=(1, 4))


class UnknownNLLIgnoreIndexLeaks(torch.autograd.Function):
    bug = {"kind": "region", "input": "logp",
           "note": "ignored rows (target == ignore_index) still get a gradient, at the clamped class 0"}

    @staticmethod
    def forward(ctx, logp, target):
        return _nll_fwd(ctx, logp, target)

    @staticmethod
    def backward(ctx, grad):
        target, valid = ctx.saved_tensors
        dlogp = grad.new_zeros(target.shape[0], ctx.classes)
        dlogp.scatter_(1, target.clamp(min=0)[:, None], (-grad / ctx.count).expand(target.shape[0], 1))  # BUG
        return dlogp, None

    @staticmethod
    def example_inputs():
        return _logits_targets(5, n=6, ignore=(0, 3))


SMOOTHING = 0.1


def _smoothed_fwd(ctx, logits, target):
    logp = torch.log_softmax(logits, dim=-1)
    c = logits.shape[-1]
    q = torch.full_like(logp, SMOOTHING / c)
    q.scatter_add_(1, target[:, None], torch.full_like(logp[:, :1], 1.0 - SMOOTHING))
    ctx.save_for_backward(logp, q)
    return -(q * logp).sum(-1).mean()


class UnknownLabelSmoothingCE(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        return _smoothed_fwd(ctx, logits, target)

    @staticmethod
    def backward(ctx, grad):
        logp, q = ctx.saved_tensors
        return grad * (logp.exp() - q) / logp.shape[0], None

    @staticmethod
    def example_inputs():
        return _logits_targets(6)


class UnknownLabelSmoothingCEUniformSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "logits",
           "note": "the smoothed target is built as (1-eps) onehot - eps/C: the uniform part enters with a flipped sign"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=-1)
        c = logits.shape[-1]
        q = torch.full_like(logp, SMOOTHING / c)
        q.scatter_add_(1, target[:, None], torch.full_like(logp[:, :1], 1.0 - SMOOTHING))
        ctx.save_for_backward(logp, target)
        return -(q * logp).sum(-1).mean()

    @staticmethod
    def backward(ctx, grad):
        logp, target = ctx.saved_tensors
        n, c = logp.shape
        onehot = F.one_hot(target, c).to(logp.dtype)
        q = (1.0 - SMOOTHING) * onehot - SMOOTHING / c  # BUG
        return grad * (logp.exp() - q) / n, None

    @staticmethod
    def example_inputs():
        return _logits_targets(7)


GAMMA = 2.0


def _focal_fwd(ctx, logits, target):
    prob = logits.softmax(dim=1)
    pt = prob.gather(1, target[:, None])
    ctx.save_for_backward(prob, pt, target)
    return (-(1 - pt) ** GAMMA * pt.log()).mean()


class UnknownFocalLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        return _focal_fwd(ctx, logits, target)

    @staticmethod
    def backward(ctx, grad):
        prob, pt, target = ctx.saved_tensors
        d_pt = GAMMA * (1 - pt) ** (GAMMA - 1) * pt.log() - (1 - pt) ** GAMMA / pt
        onehot = F.one_hot(target, prob.shape[1]).to(prob.dtype)
        dlogits = d_pt * pt * (onehot - prob)
        return grad * dlogits / prob.shape[0], None

    @staticmethod
    def example_inputs():
        return _logits_targets(8)


class UnknownFocalLossFrozenModulator(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "logits",
           "note": "the derivative of the modulating factor (1 - p_t)^gamma is left out: only the log term is differentiated"}

    @staticmethod
    def forward(ctx, logits, target):
        return _focal_fwd(ctx, logits, target)

    @staticmethod
    def backward(ctx, grad):
        prob, pt, target = ctx.saved_tensors
        d_pt = -(1 - pt) ** GAMMA / pt  # BUG
        onehot = F.one_hot(target, prob.shape[1]).to(prob.dtype)
        dlogits = d_pt * pt * (onehot - prob)
        return grad * dlogits / prob.shape[0], None

    @staticmethod
    def example_inputs():
        return _logits_targets(9)


MARGIN = 1.0


def _hinge_fwd(ctx, scores, target):
    n, c = scores.shape
    true = scores.gather(1, target[:, None])
    margins = (MARGIN - true + scores).clamp(min=0)
    margins = margins.scatter(1, target[:, None], 0.0)
    ctx.save_for_backward(margins > 0, target)
    ctx.c = c
    return margins.sum() / (n * c)


class UnknownMultiMarginHinge(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, scores, target):
        return _hinge_fwd(ctx, scores, target)

    @staticmethod
    def backward(ctx, grad):
        active, target = ctx.saved_tensors
        n, c = active.shape
        dscores = active.to(grad.dtype) * grad / (n * c)
        rows, cols = active.nonzero(as_tuple=True)
        dscores.index_put_((rows, target[rows]), -grad / (n * c) * torch.ones_like(rows, dtype=grad.dtype),
                           accumulate=True)
        return dscores, None

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(10)
        return 0.5 * torch.randn(4, 5, dtype=torch.float64, generator=gen), torch.tensor([0, 3, 3, 1])


class UnknownMultiMarginHingeTrueClassOnce(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "scores",
           "note": "the true class should get -1 per active margin; index_put_ without accumulate keeps just one"}

    @staticmethod
    def forward(ctx, scores, target):
        return _hinge_fwd(ctx, scores, target)

    @staticmethod
    def backward(ctx, grad):
        active, target = ctx.saved_tensors
        n, c = active.shape
        dscores = active.to(grad.dtype) * grad / (n * c)
        rows, cols = active.nonzero(as_tuple=True)
        dscores.index_put_((rows, target[rows]), -grad / (n * c) * torch.ones_like(rows, dtype=grad.dtype))  # BUG
        return dscores, None

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(11)
        return 0.5 * torch.randn(4, 5, dtype=torch.float64, generator=gen), torch.tensor([2, 0, 4, 2])
