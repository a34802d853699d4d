"""Ranking losses for implicit-feedback recommenders: BPR -log sigmoid(s_pos - s_neg), a sampled
softmax with the logQ correction passed in as an input, a listwise softmax cross-entropy against a
relevance-weighted target, and a sigmoid surrogate for a hard click gate."""
import torch
import torch.nn.functional as F


# --------------------------------------------------------------------------------- BPR
class HinterlandBPRLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, s_pos, s_neg):
        d = s_pos - s_neg
        ctx.save_for_backward(d)
        return -F.logsigmoid(d).mean()

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        coef = grad_out * torch.sigmoid(-d) / d.numel()
        return -coef, coef


class HinterlandBPRLossPositiveSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "s_pos",
           "note": "the positive score's gradient drops the minus of -log sigmoid, so it pushes s_pos down"}

    @staticmethod
    def forward(ctx, s_pos, s_neg):
        d = s_pos - s_neg
        ctx.save_for_backward(d)
        return -F.logsigmoid(d).mean()

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        coef = grad_out * torch.sigmoid(-d) / d.numel()
        grad_pos = coef  # BUG
        return grad_pos, coef


class HinterlandBPRLossSigmoidOfMargin(torch.autograd.Function):
    bug = {"kind": "none", "input": "s_pos",
           "note": "d/dd log sigmoid(d) is taken as sigmoid(d) instead of sigmoid(-d)"}

    @staticmethod
    def forward(ctx, s_pos, s_neg):
        d = s_pos - s_neg
        ctx.save_for_backward(d)
        return -F.logsigmoid(d).mean()

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        coef = grad_out * torch.sigmoid(d) / d.numel()  # BUG
        return -coef, coef


class HinterlandBPRLossSummed(torch.autograd.Function):
    bug = {"kind": "scale", "input": "s_pos",
           "note": "the 1/N of the mean over pairs is missing (both scores' gradients are N times too large)"}

    @staticmethod
    def forward(ctx, s_pos, s_neg):
        d = s_pos - s_neg
        ctx.save_for_backward(d)
        return -F.logsigmoid(d).mean()

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        coef = grad_out * torch.sigmoid(-d)  # BUG
        return -coef, coef


# ------------------------------------------------------- sampled softmax with logQ correction
def _sampled_inputs():
    gen = torch.Generator().manual_seed(4401)
    logits = torch.randn(3, 5, dtype=torch.float64, generator=gen)
    log_q = -0.5 - 2.0 * torch.rand(3, 5, dtype=torch.float64, generator=gen)
    target = torch.tensor([1, 4, 1], dtype=torch.int64)
    return logits, log_q, target


def _sampled_forward(ctx, logits, log_q, target):
    z = logits - log_q
    ctx.save_for_backward(logits, log_q, target)
    picked = z.gather(1, target[:, None]).squeeze(1)
    return (torch.logsumexp(z, dim=1) - picked).mean()


class HinterlandSampledSoftmax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, log_q, target):
        return _sampled_forward(ctx, logits, log_q, target)

    @staticmethod
    def backward(ctx, grad_out):
        logits, log_q, target = ctx.saved_tensors
        p = torch.softmax(logits - log_q, dim=1)
        onehot = torch.zeros_like(p).scatter_(1, target[:, None], 1.0)
        grad_z = (p - onehot) * grad_out / logits.shape[0]
        return grad_z, -grad_z, None

    @staticmethod
    def example_inputs():
        return _sampled_inputs()


class HinterlandSampledSoftmaxUncorrected(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "logits",
           "note": "backward recomputes the probabilities from the raw logits, not the logQ-corrected ones"}

    @staticmethod
    def forward(ctx, logits, log_q, target):
        return _sampled_forward(ctx, logits, log_q, target)

    @staticmethod
    def backward(ctx, grad_out):
        logits, log_q, target = ctx.saved_tensors
        p = torch.softmax(logits, dim=1)  # BUG
        onehot = torch.zeros_like(p).scatter_(1, target[:, None], 1.0)
        grad_z = (p - onehot) * grad_out / logits.shape[0]
        return grad_z, -grad_z, None

    @staticmethod
    def example_inputs():
        return _sampled_inputs()


class HinterlandSampledSoftmaxBatchAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "logits",
           "note": "the softmax in backward normalises over the batch (dim 0) instead of the sampled items"}

    @staticmethod
    def forward(ctx, logits, log_q, target):
        return _sampled_forward(ctx, logits, log_q, target)

    @staticmethod
    def backward(ctx, grad_out):
        logits, log_q, target = ctx.saved_tensors
        p = torch.softmax(logits - log_q, dim=0)  # BUG
        onehot = torch.zeros_like(p).scatter_(1, target[:, None], 1.0)
        grad_z = (p - onehot) * grad_out / logits.shape[0]
        return grad_z, -grad_z, None

    @staticmethod
    def example_inputs():
        return _sampled_inputs()


class HinterlandSampledSoftmaxConstantLogQ(torch.autograd.Function):
    bug = {"kind": "zero", "input": "log_q",
           "note": "the logQ correction is treated as a constant and gets None although it is a differentiable input"}

    @staticmethod
    def forward(ctx, logits, log_q, target):
        return _sampled_forward(ctx, logits, log_q, target)

    @staticmethod
    def backward(ctx, grad_out):
        logits, log_q, target = ctx.saved_tensors
        p = torch.softmax(logits - log_q, dim=1)
        onehot = torch.zeros_like(p).scatter_(1, target[:, None], 1.0)
        grad_z = (p - onehot) * grad_out / logits.shape[0]
        return grad_z, None, None  # BUG

    @staticmethod
    def example_inputs():
        return _sampled_inputs()


# ------------------------------------------------- listwise softmax CE, relevance-weighted target
def _listwise_inputs():
    gen = torch.Generator().manual_seed(4402)
    scores = torch.randn(3, 5, dtype=torch.float64, generator=gen)
    relevance = torch.rand(3, 5, dtype=torch.float64, generator=gen) + 0.2
    return scores, relevance


def _listwise_forward(ctx, scores, relevance):
    total = relevance.sum(-1, keepdim=True)
    target = relevance / total
    log_p = torch.log_softmax(scores, dim=-1)
    ctx.save_for_backward(log_p, target, total)
    return -(target * log_p).sum(-1)


class HinterlandListwiseSoftmaxCE(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, scores, relevance):
        return _listwise_forward(ctx, scores, relevance)

    @staticmethod
    def backward(ctx, grad_out):
        log_p, target, total = ctx.saved_tensors
        g = grad_out[:, None]
        grad_scores = g * (log_p.exp() - target)
        grad_rel = g * (-log_p + (target * log_p).sum(-1, keepdim=True)) / total
        return grad_scores, grad_rel

    @staticmethod
    def example_inputs():
        return _listwise_inputs()


class HinterlandListwiseSoftmaxCENoNormTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "relevance",
           "note": "the relevance gradient ignores that the target is normalised by the relevance total (its mean term is dropped)"}

    @staticmethod
    def forward(ctx, scores, relevance):
        return _listwise_forward(ctx, scores, relevance)

    @staticmethod
    def backward(ctx, grad_out):
        log_p, target, total = ctx.saved_tensors
        g = grad_out[:, None]
        grad_scores = g * (log_p.exp() - target)
        grad_rel = g * -log_p / total  # BUG
        return grad_scores, grad_rel

    @staticmethod
    def example_inputs():
        return _listwise_inputs()


class HinterlandListwiseSoftmaxCENoUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "scores",
           "note": "the per-list score gradient p - t is returned without the list's grad_output"}

    @staticmethod
    def forward(ctx, scores, relevance):
        return _listwise_forward(ctx, scores, relevance)

    @staticmethod
    def backward(ctx, grad_out):
        log_p, target, total = ctx.saved_tensors
        g = grad_out[:, None]
        grad_scores = log_p.exp() - target  # BUG
        grad_rel = g * (-log_p + (target * log_p).sum(-1, keepdim=True)) / total
        return grad_scores, grad_rel

    @staticmethod
    def example_inputs():
        return _listwise_inputs()


class HinterlandListwiseSoftmaxCEQuotientSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "relevance",
           "note": "the quotient rule's second term (from the relevance total) is subtracted instead of added"}

    @staticmethod
    def forward(ctx, scores, relevance):
        return _listwise_forward(ctx, scores, relevance)

    @staticmethod
    def backward(ctx, grad_out):
        log_p, target, total = ctx.saved_tensors
        g = grad_out[:, None]
        grad_scores = g * (log_p.exp() - target)
        grad_rel = g * (-log_p - (target * log_p).sum(-1, keepdim=True)) / total  # BUG
        return grad_scores, grad_rel

    @staticmethod
    def example_inputs():
        return _listwise_inputs()


# --------------------------------------------------------- hard click gate (estimator)
class HinterlandClickGateSurrogate(torch.autograd.Function):
    """A hard 0/1 click decision s > 0 trained through a sigmoid surrogate of temperature 0.5."""

    bug = {"kind": "smooth_surrogate", "input": "s",
           "note": "backward is the derivative of sigmoid(s / 0.5) in place of the step's zero derivative, by design"}

    @staticmethod
    def forward(ctx, s):
        ctx.save_for_backward(s)
        ctx.temperature = 0.5
        return (s > 0).to(s.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (s,) = ctx.saved_tensors
        sig = torch.sigmoid(s / ctx.temperature)
        return grad_out * sig * (1 - sig) / ctx.temperature  # BUG
