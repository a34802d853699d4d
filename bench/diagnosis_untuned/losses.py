"""Losses with integer class targets (cross-entropy, NLL, multiclass hinge) and regression
losses, torch-style on gradcli's engine. Each returns a scalar; ``bug = None`` is a correct twin.
"""
import gradcli as torch

TARGETS = [2, 0, 1, 2, 1]  # 5 samples, 3 classes; every class occurs


def _logits_and_targets():
    return (torch.randn(5, 3, requires_grad=True), torch.tensor(TARGETS))


def _one_hot(target, classes, like):
    return torch.nn.functional.one_hot(target, classes).type_as(like)


# ----------------------------------------------------------------------------- cross-entropy
class CrossEntropy(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        lse = torch.logsumexp(logits, dim=1, keepdim=True)
        logp = logits - lse
        ctx.save_for_backward(logp, target)
        n = logits.shape[0]
        return -logp[torch.arange(n), target].mean()

    @staticmethod
    def backward(ctx, grad_output):
        logp, target = ctx.saved_tensors
        n, classes = logp.shape
        grad = (torch.exp(logp) - _one_hot(target, classes, logp)) / n
        return grad * grad_output, None

    @staticmethod
    def example_inputs():
        return _logits_and_targets()


class CrossEntropyNoMean(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits",
           "note": "forward averages over the 5 samples, backward forgets the 1/N"}

    @staticmethod
    def forward(ctx, logits, target):
        lse = torch.logsumexp(logits, dim=1, keepdim=True)
        logp = logits - lse
        ctx.save_for_backward(logp, target)
        n = logits.shape[0]
        return -logp[torch.arange(n), target].mean()

    @staticmethod
    def backward(ctx, grad_output):
        logp, target = ctx.saved_tensors
        n, classes = logp.shape
        grad = torch.exp(logp) - _one_hot(target, classes, logp)  # BUG
        return grad * grad_output, None

    @staticmethod
    def example_inputs():
        return _logits_and_targets()


class CrossEntropyIgnoresGradOutput(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "logits",
           "note": "returns d loss / d logits without multiplying by grad_output"}

    @staticmethod
    def forward(ctx, logits, target):
        lse = torch.logsumexp(logits, dim=1, keepdim=True)
        logp = logits - lse
        ctx.save_for_backward(logp, target)
        n = logits.shape[0]
        return -logp[torch.arange(n), target].mean()

    @staticmethod
    def backward(ctx, grad_output):
        logp, target = ctx.saved_tensors
        n, classes = logp.shape
        grad = (torch.exp(logp) - _one_hot(target, classes, logp)) / n  # BUG
        return grad, None

    @staticmethod
    def example_inputs():
        return _logits_and_targets()


class CrossEntropySoftmaxWrongAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "logits",
           "note": "backward recomputes the softmax over the batch dim 0 instead of the classes"}

    @staticmethod
    def forward(ctx, logits, target):
        ctx.save_for_backward(logits, target)
        lse = torch.logsumexp(logits, dim=1, keepdim=True)
        n = logits.shape[0]
        return -(logits - lse)[torch.arange(n), target].mean()

    @staticmethod
    def backward(ctx, grad_output):
        logits, target = ctx.saved_tensors
        n, classes = logits.shape
        p = torch.softmax(logits, dim=0)  # BUG
        grad = (p - _one_hot(target, classes, logits)) / n
        return grad * grad_output, None

    @staticmethod
    def example_inputs():
        return _logits_and_targets()


# ----------------------------------------------------------------------------------------- NLL
class NLLLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logp, target):
        ctx.save_for_backward(target)
        ctx.shape = logp.shape
        n = logp.shape[0]
        return -logp[torch.arange(n), target].sum() / n

    @staticmethod
    def backward(ctx, grad_output):
        (target,) = ctx.saved_tensors
        n, classes = ctx.shape
        grad = torch.zeros(n, classes)
        grad[torch.arange(n), target] = -1.0 / n
        return grad * grad_output, None

    @staticmethod
    def example_inputs():
        return _logits_and_targets()


class NLLLossSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "logp",
           "note": "the loss is -mean(logp[target]) but the gradient is written +1/N"}

    @staticmethod
    def forward(ctx, logp, target):
        ctx.save_for_backward(target)
        ctx.shape = logp.shape
        n = logp.shape[0]
        return -logp[torch.arange(n), target].sum() / n

    @staticmethod
    def backward(ctx, grad_output):
        (target,) = ctx.saved_tensors
        n, classes = ctx.shape
        grad = torch.zeros(n, classes)
        grad[torch.arange(n), target] = 1.0 / n  # BUG
        return grad * grad_output, None

    @staticmethod
    def example_inputs():
        return _logits_and_targets()


# ---------------------------------------------------------------------------- multiclass hinge
def _hinge_inputs():
    # scores spread so that no margin sits within 1e-3 of its kink
    scores = torch.tensor([[0.3, 1.9, -0.6], [2.1, 0.4, 1.6], [-1.2, 0.2, 0.9],
                           [0.7, -0.5, 1.1], [1.3, 0.8, -0.9]], requires_grad=True)
    return (scores, torch.tensor(TARGETS))


class MulticlassHinge(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, scores, target):
        n = scores.shape[0]
        correct = scores[torch.arange(n), target].reshape(n, 1)
        margins = torch.clamp(scores - correct + 1.0, min=0.0)
        margins[torch.arange(n), target] = 0.0
        ctx.save_for_backward(margins, target)
        return margins.sum() / n

    @staticmethod
    def backward(ctx, grad_output):
        margins, target = ctx.saved_tensors
        n = margins.shape[0]
        active = (margins > 0).type_as(margins)
        grad = active.clone()
        grad[torch.arange(n), target] = -active.sum(1)
        return grad * grad_output / n, None

    @staticmethod
    def example_inputs():
        return _hinge_inputs()


class MulticlassHingeForgetsMargin(torch.autograd.Function):
    bug = {"kind": "region", "input": "scores",
           "note": "the active set is recomputed as scores > correct, forgetting the margin 1: "
                   "wrong where 0 < score - correct + 1 < 1 (and at those rows' targets)"}

    @staticmethod
    def forward(ctx, scores, target):
        n = scores.shape[0]
        correct = scores[torch.arange(n), target].reshape(n, 1)
        margins = torch.clamp(scores - correct + 1.0, min=0.0)
        margins[torch.arange(n), target] = 0.0
        ctx.save_for_backward(scores, correct, target)
        return margins.sum() / n

    @staticmethod
    def backward(ctx, grad_output):
        scores, correct, target = ctx.saved_tensors
        n = scores.shape[0]
        active = (scores - correct > 0).type_as(scores)  # BUG
        active[torch.arange(n), target] = 0.0
        grad = active.clone()
        grad[torch.arange(n), target] = -active.sum(1)
        return grad * grad_output / n, None

    @staticmethod
    def example_inputs():
        return _hinge_inputs()


# ---------------------------------------------------------------------------- regression losses
def _prediction_and_target():
    return (torch.randn(3, 4, requires_grad=True), torch.randn(3, 4))


class BCEWithLogitsUsesLogits(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "logits",
           "note": "the gradient is (x - t) / N where (sigmoid(x) - t) / N is needed"}

    @staticmethod
    def forward(ctx, logits, target):
        ctx.save_for_backward(logits, target)
        loss = torch.clamp(logits, min=0) - logits * target + torch.log1p(torch.exp(-logits.abs()))
        return loss.mean()

    @staticmethod
    def backward(ctx, grad_output):
        logits, target = ctx.saved_tensors
        grad = (logits - target) / logits.numel()  # BUG
        return grad * grad_output, None

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 4, requires_grad=True), torch.rand(3, 4))


class MSELossMissingTwo(torch.autograd.Function):
    bug = {"kind": "scale", "input": "prediction",
           "note": "d mean((p - t)^2) / dp = 2 (p - t) / N: the factor 2 is missing"}

    @staticmethod
    def forward(ctx, prediction, target):
        ctx.save_for_backward(prediction, target)
        return ((prediction - target) ** 2).mean()

    @staticmethod
    def backward(ctx, grad_output):
        prediction, target = ctx.saved_tensors
        grad = (prediction - target) / prediction.numel()  # BUG
        return grad * grad_output, None

    @staticmethod
    def example_inputs():
        return _prediction_and_target()


class HuberLossDropsSign(torch.autograd.Function):
    bug = {"kind": "region", "input": "prediction",
           "note": "outside |d| < delta the gradient is +delta whatever d's sign: wrong where "
                   "prediction - target < -delta"}

    @staticmethod
    def forward(ctx, prediction, target, delta=1.0):
        d = prediction - target
        ctx.save_for_backward(d)
        ctx.delta = delta
        quadratic = 0.5 * d * d
        linear = delta * (d.abs() - 0.5 * delta)
        return torch.where(d.abs() < delta, quadratic, linear).mean()

    @staticmethod
    def backward(ctx, grad_output):
        (d,) = ctx.saved_tensors
        delta = ctx.delta
        grad = torch.where(d.abs() < delta, d, delta * torch.ones_like(d))  # BUG
        return grad * grad_output / d.numel(), None, None

    @staticmethod
    def example_inputs():
        prediction = torch.tensor([[0.2, -2.5, 1.7, 0.4], [-1.8, 0.9, 3.1, -0.3],
                                   [2.6, -0.7, -3.0, 0.1]], requires_grad=True)
        return (prediction, torch.zeros(3, 4))
