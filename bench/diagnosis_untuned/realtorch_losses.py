"""Classification losses written against real PyTorch (``import torch``): ignore_index, label
smoothing, a focal-style weighting. Skipped where torch is not installed; ``bug = None`` marks a
correct twin.
"""
import torch

DOUBLE = torch.float64
IGNORE = -100


def _logits_and_targets():
    logits = torch.randn(5, 4, dtype=DOUBLE, requires_grad=True)
    return (logits, torch.tensor([3, IGNORE, 0, 2, 1]))


def _kept(target):
    return (target != IGNORE).to(DOUBLE)


class TorchCrossEntropyIgnoreIndex(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        kept = _kept(target)
        logp = torch.log_softmax(logits, dim=1)
        safe = target.clamp(min=0)
        picked = logp.gather(1, safe[:, None])[:, 0]
        count = kept.sum()
        ctx.save_for_backward(logp, safe, kept)
        return -(picked * kept).sum() / count

    @staticmethod
    def backward(ctx, grad_output):
        logp, safe, kept = ctx.saved_tensors
        onehot = torch.zeros_like(logp).scatter(1, safe[:, None], 1.0)
        grad = (logp.exp() - onehot) * kept[:, None] / kept.sum()
        return grad * grad_output, None

    @staticmethod
    def example_inputs():
        return _logits_and_targets()


class TorchCrossEntropyIgnoredRowsLeak(torch.autograd.Function):
    bug = {"kind": "region", "input": "logits",
           "note": "the ignored sample's row gets softmax - onehot too: the mask is applied in "
                   "forward but forgotten in backward (wrong on row 1 only)"}

    @staticmethod
    def forward(ctx, logits, target):
        kept = _kept(target)
        logp = torch.log_softmax(logits, dim=1)
        safe = target.clamp(min=0)
        picked = logp.gather(1, safe[:, None])[:, 0]
        count = kept.sum()
        ctx.save_for_backward(logp, safe, kept)
        return -(picked * kept).sum() / count

    @staticmethod
    def backward(ctx, grad_output):
        logp, safe, kept = ctx.saved_tensors
        onehot = torch.zeros_like(logp).scatter(1, safe[:, None], 1.0)
        grad = (logp.exp() - onehot) / kept.sum()  # BUG
        return grad * grad_output, None

    @staticmethod
    def example_inputs():
        return _logits_and_targets()


class TorchLabelSmoothingUsesHardTargets(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "logits",
           "note": "forward smooths the targets (1 - eps) onehot + eps / C; backward subtracts "
                   "the hard onehot, missing eps * (onehot - 1/C) / N"}

    @staticmethod
    def forward(ctx, logits, target, eps=0.1):
        n, classes = logits.shape
        logp = torch.log_softmax(logits, dim=1)
        onehot = torch.nn.functional.one_hot(target, classes).to(logits.dtype)
        smooth = onehot * (1 - eps) + eps / classes
        ctx.save_for_backward(logp, onehot)
        return -(smooth * logp).sum() / n

    @staticmethod
    def backward(ctx, grad_output):
        logp, onehot = ctx.saved_tensors
        n = logp.shape[0]
        grad = (logp.exp() - onehot) / n  # BUG
        return grad * grad_output, None, None

    @staticmethod
    def example_inputs():
        return (torch.randn(5, 4, dtype=DOUBLE, requires_grad=True), torch.tensor([3, 1, 0, 2, 1]))


class TorchFocalWeightDetached(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "logits",
           "note": "focal loss -(1 - p_t)^2 log p_t: backward treats the weight (1 - p_t)^2 as a "
                   "constant, dropping the term from its derivative"}

    @staticmethod
    def forward(ctx, logits, target):
        n = logits.shape[0]
        logp = torch.log_softmax(logits, dim=1)
        logp_t = logp.gather(1, target[:, None])[:, 0]
        weight = (1 - logp_t.exp()) ** 2
        ctx.save_for_backward(logp, target, weight)
        return -(weight * logp_t).sum() / n

    @staticmethod
    def backward(ctx, grad_output):
        logp, target, weight = ctx.saved_tensors
        n = logp.shape[0]
        onehot = torch.zeros_like(logp).scatter(1, target[:, None], 1.0)
        grad = weight[:, None] * (logp.exp() - onehot) / n  # BUG
        return grad * grad_output, None

    @staticmethod
    def example_inputs():
        return (torch.randn(5, 4, dtype=DOUBLE, requires_grad=True), torch.tensor([3, 1, 0, 2, 1]))
