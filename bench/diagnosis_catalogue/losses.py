"""Losses with integer targets (issue 17 catalogue: the rules' own tuning corpus)."""
import torch
from torch.autograd import Function


def _logits_and_targets(seed):
    torch.manual_seed(seed)
    return torch.randn(4, 3, dtype=torch.float64), torch.tensor([0, 2, 1, 2])


class CrossEntropyMissingMean(Function):
    bug = {"kind": "scale", "input": "logits", "note": "forgets /N of the mean reduction"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp.exp(), target)
        return -logp[torch.arange(len(target)), target].mean()

    @staticmethod
    def backward(ctx, grad_output):
        p, target = ctx.saved_tensors
        grad = p.clone()
        grad[torch.arange(len(target)), target] -= 1
        return grad * grad_output, None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_and_targets(41)


class CrossEntropyIgnoresGradOutput(Function):
    bug = {"kind": "ignores_grad_output", "input": "logits", "note": "never multiplies by grad_output"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp.exp(), target)
        return -logp[torch.arange(len(target)), target].mean()

    @staticmethod
    def backward(ctx, grad_output):
        p, target = ctx.saved_tensors
        onehot = torch.zeros_like(p).scatter_(1, target[:, None], 1.0)
        return (p - onehot) / len(target), None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_and_targets(42)


class CrossEntropyOnehotSign(Function):
    bug = {"kind": "term_sign", "input": "logits", "note": "p + onehot"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp.exp(), target)
        return -logp[torch.arange(len(target)), target].sum()

    @staticmethod
    def backward(ctx, grad_output):
        p, target = ctx.saved_tensors
        onehot = torch.nn.functional.one_hot(target, p.shape[1]).to(p.dtype)
        return grad_output * (p + onehot), None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_and_targets(43)


class NLLLossWrongRowsScale(Function):
    bug = {"kind": "scale", "input": "logp", "note": "-1 at the targets without /N"}

    @staticmethod
    def forward(ctx, logp, target):
        ctx.save_for_backward(target)
        ctx.shape = logp.shape
        return -logp[torch.arange(len(target)), target].mean()

    @staticmethod
    def backward(ctx, grad_output):
        (target,) = ctx.saved_tensors
        grad = torch.zeros(ctx.shape, dtype=grad_output.dtype)
        grad[torch.arange(len(target)), target] = -1.0  # BUG
        return grad * grad_output, None

    @staticmethod
    def example_inputs():
        return _logits_and_targets(44)


class SmoothL1WrongSignForTarget(Function):
    bug = {"kind": "sign", "input": "target", "note": "target's gradient should be -g"}

    @staticmethod
    def forward(ctx, x, target, beta: float = 1.0):
        d = x - target
        ctx.save_for_backward(d)
        ctx.beta = beta
        small = d.abs() < beta
        return torch.where(small, 0.5 * d * d / beta, d.abs() - 0.5 * beta)

    @staticmethod
    def backward(ctx, grad_output):
        (d,) = ctx.saved_tensors
        if ctx.beta == 0:
            g = d.sign() * grad_output
            return g, -g, None
        g = torch.where(d.abs() < ctx.beta, d / ctx.beta, d.sign()) * grad_output
        return g, g, None  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(45)
        return torch.randn(3, 4, dtype=torch.float64) * 2, torch.randn(3, 4, dtype=torch.float64), 1.0


class SmoothL1QuadraticBranchMissingBeta(Function):
    bug = {"kind": "region", "input": "x", "note": "quadratic branch forgets /beta"}

    @staticmethod
    def forward(ctx, x, target, beta: float = 0.5):
        d = x - target
        ctx.save_for_backward(d)
        ctx.beta = beta
        return torch.where(d.abs() < beta, 0.5 * d * d / beta, d.abs() - 0.5 * beta)

    @staticmethod
    def backward(ctx, grad_output):
        (d,) = ctx.saved_tensors
        g = torch.where(d.abs() < ctx.beta, d, d.sign()) * grad_output  # BUG
        return g, -g, None

    @staticmethod
    def example_inputs():
        torch.manual_seed(46)
        return torch.randn(4, 4, dtype=torch.float64), torch.randn(4, 4, dtype=torch.float64) * 0.3, 0.5


class MSEMissingMean(Function):
    bug = {"kind": "scale", "input": "pred", "note": "2(x-y) without /N"}

    @staticmethod
    def forward(ctx, pred, target):
        ctx.save_for_backward(pred, target)
        return ((pred - target) ** 2).mean()

    @staticmethod
    def backward(ctx, g):
        pred, target = ctx.saved_tensors
        d = 2 * (pred - target) * g  # BUG
        return d, -d

    @staticmethod
    def example_inputs():
        torch.manual_seed(47)
        return torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)


class HingeWrongMargin(Function):
    bug = {"kind": "region", "input": "scores", "note": "mask uses y*s < 0 instead of < 1"}

    @staticmethod
    def forward(ctx, scores, labels):
        margin = 1 - labels * scores
        ctx.save_for_backward(scores, labels)
        return margin.clamp(min=0).sum()

    @staticmethod
    def backward(ctx, g):
        scores, labels = ctx.saved_tensors
        active = (labels * scores < 0).to(scores.dtype)  # BUG
        return -labels * active * g, None

    @staticmethod
    def example_inputs():
        torch.manual_seed(48)
        s = torch.tensor([[-1.3, 0.4, 2.2, -0.2], [0.7, -2.5, 0.1, 1.6], [-0.6, 1.2, -1.8, 0.3]],
                         dtype=torch.float64)
        return s, torch.tensor([[1, 1, -1, -1], [1, -1, -1, 1], [1, 1, -1, 1]])


class BCEWithLogitsUsesLogits(Function):
    bug = {"kind": "wrong_variable", "input": "x", "note": "uses x where sigmoid(x) is needed"}

    @staticmethod
    def forward(ctx, x, t):
        ctx.save_for_backward(x, t)
        return (torch.clamp(x, min=0) - x * t + torch.log1p(torch.exp(-x.abs()))).sum()

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        return (x - t) * g, None  # BUG

    @staticmethod
    def example_inputs():
        torch.manual_seed(49)
        return torch.randn(3, 4, dtype=torch.float64), (torch.rand(3, 4) > 0.5).to(torch.int64)


class CrossEntropyOk(Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp.exp(), target)
        return -logp[torch.arange(len(target)), target].mean()

    @staticmethod
    def backward(ctx, grad_output):
        p, target = ctx.saved_tensors
        grad = p.clone()
        grad[torch.arange(len(target)), target] -= 1
        return grad * grad_output / len(target), None

    @staticmethod
    def example_inputs():
        return _logits_and_targets(50)
