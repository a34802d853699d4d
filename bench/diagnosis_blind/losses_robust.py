"""Losses with hand-written backwards: Huber (delta), soft Dice, multi-class focal loss and
label-smoothed cross-entropy with integer targets (repeated classes, ignore_index), Poisson NLL on
log-rates (mean and per element).

BLIND corpus: see README.md. Never tune gradcli's diagnosis on these Functions.
"""
import torch

IGNORE_INDEX = -100
SMOOTHING = 0.1
GAMMA = 2.0


def _huber_inputs():
    torch.manual_seed(41)
    pred = torch.randn(3, 4, dtype=torch.float64)
    diff = torch.tensor([[0.1, -0.3, 0.9, -1.4], [0.2, 1.1, -0.15, -0.8],
                         [0.35, -2.0, 0.6, 0.05]], dtype=torch.float64)  # away from |d| = delta
    return pred, pred - diff, 0.5


def _huber(ctx, pred, target, delta):
    d = pred - target
    loss = torch.where(d.abs() <= delta, 0.5 * d * d, delta * (d.abs() - 0.5 * delta))
    ctx.save_for_backward(d)
    ctx.delta = delta
    return loss.mean()


class HuberLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, pred, target, delta):
        return _huber(ctx, pred, target, delta)

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        g = torch.where(d.abs() <= ctx.delta, d, ctx.delta * d.sign()) * (grad_out / d.numel())
        return g, -g, None

    @staticmethod
    def example_inputs():
        return _huber_inputs()


class HuberLossTargetSameSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "target",
           "note": "the target gets the prediction's gradient, not its negative"}

    @staticmethod
    def forward(ctx, pred, target, delta):
        return _huber(ctx, pred, target, delta)

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        g = torch.where(d.abs() <= ctx.delta, d, ctx.delta * d.sign()) * (grad_out / d.numel())
        return g, g, None  # BUG -- -g for target

    @staticmethod
    def example_inputs():
        return _huber_inputs()


class HuberLossLinearBranchNoDelta(torch.autograd.Function):
    bug = {"kind": "region", "input": "pred",
           "note": "in the linear branch (|d| > delta) the gradient is sign(d), not delta * sign(d)"}

    @staticmethod
    def forward(ctx, pred, target, delta):
        return _huber(ctx, pred, target, delta)

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        g = torch.where(d.abs() <= ctx.delta, d, d.sign()) * (grad_out / d.numel())  # BUG -- delta
        return g, -g, None

    @staticmethod
    def example_inputs():
        return _huber_inputs()


def _dice_inputs():
    torch.manual_seed(42)
    prob = (0.05 + 0.9 * torch.rand(3, 4, dtype=torch.float64)).requires_grad_()
    target = (torch.rand(3, 4, dtype=torch.float64) > 0.5).to(torch.float64)
    return prob, target


def _dice(ctx, prob, target):
    smooth = 1.0
    num = 2 * (prob * target).sum() + smooth
    den = prob.sum() + target.sum() + smooth
    ctx.save_for_backward(target)
    ctx.num, ctx.den = num, den
    return 1 - num / den


class SoftDiceLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, prob, target):
        return _dice(ctx, prob, target)

    @staticmethod
    def backward(ctx, grad_out):
        (target,) = ctx.saved_tensors
        num, den = ctx.num, ctx.den
        return -(2 * target * den - num) / den ** 2 * grad_out, None

    @staticmethod
    def example_inputs():
        return _dice_inputs()


class SoftDiceLossQuotientSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "prob",
           "note": "quotient rule with + for the denominator's term: -(2t*den + num)/den^2"}

    @staticmethod
    def forward(ctx, prob, target):
        return _dice(ctx, prob, target)

    @staticmethod
    def backward(ctx, grad_out):
        (target,) = ctx.saved_tensors
        num, den = ctx.num, ctx.den
        return -(2 * target * den + num) / den ** 2 * grad_out, None  # BUG -- - num

    @staticmethod
    def example_inputs():
        return _dice_inputs()


def _class_inputs():
    torch.manual_seed(43)
    logits = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    return logits, torch.tensor([0, 2, 2, 1, 2])


def _focal(ctx, logits, target):
    logp = logits.log_softmax(-1)
    logpt = logp.gather(1, target[:, None])[:, 0]
    pt = logpt.exp()
    ctx.save_for_backward(logp, target)
    return (-(1 - pt) ** GAMMA * logpt).mean()


class FocalLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        return _focal(ctx, logits, target)

    @staticmethod
    def backward(ctx, grad_out):
        logp, target = ctx.saved_tensors
        p = logp.exp()
        logpt = logp.gather(1, target[:, None])
        pt = logpt.exp()
        dloss_dpt = GAMMA * (1 - pt) ** (GAMMA - 1) * logpt - (1 - pt) ** GAMMA / pt
        onehot = torch.zeros_like(p).scatter_(1, target[:, None], 1.0)
        return dloss_dpt * pt * (onehot - p) / target.shape[0] * grad_out, None

    @staticmethod
    def example_inputs():
        return _class_inputs()


class FocalLossModulatorTreatedAsConstant(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "logits",
           "note": "(1 - pt)^gamma is treated as a constant: the gamma (1-pt)^(gamma-1) log pt "
                   "term of d loss / d pt is missing"}

    @staticmethod
    def forward(ctx, logits, target):
        return _focal(ctx, logits, target)

    @staticmethod
    def backward(ctx, grad_out):
        logp, target = ctx.saved_tensors
        p = logp.exp()
        logpt = logp.gather(1, target[:, None])
        pt = logpt.exp()
        dloss_dpt = -(1 - pt) ** GAMMA / pt  # BUG -- + GAMMA * (1 - pt) ** (GAMMA - 1) * logpt
        onehot = torch.zeros_like(p).scatter_(1, target[:, None], 1.0)
        return dloss_dpt * pt * (onehot - p) / target.shape[0] * grad_out, None

    @staticmethod
    def example_inputs():
        return _class_inputs()


def _smoothing_inputs():
    torch.manual_seed(44)
    logits = torch.randn(6, 5, dtype=torch.float64, requires_grad=True)
    return logits, torch.tensor([1, IGNORE_INDEX, 3, 3, IGNORE_INDEX, 0])


def _smoothed_ce(ctx, logits, target):
    valid = target != IGNORE_INDEX
    k = logits.shape[-1]
    logp = logits.log_softmax(-1)
    q = torch.full_like(logp, SMOOTHING / k)
    q.scatter_(1, target.clamp(min=0)[:, None], 1 - SMOOTHING + SMOOTHING / k)
    per_row = -(q * logp).sum(-1)
    n_valid = int(valid.sum())
    ctx.save_for_backward(logp, q, valid)
    ctx.n_valid = n_valid
    return (per_row * valid).sum() / n_valid


class LabelSmoothingCrossEntropy(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        return _smoothed_ce(ctx, logits, target)

    @staticmethod
    def backward(ctx, grad_out):
        logp, q, valid = ctx.saved_tensors
        grad = (logp.exp() - q) * valid[:, None] / ctx.n_valid
        return grad * grad_out, None

    @staticmethod
    def example_inputs():
        return _smoothing_inputs()


class LabelSmoothingDividesByBatch(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits",
           "note": "backward averages over all 6 rows, forward over the 4 rows not ignored "
                   "(a factor 4/6)"}

    @staticmethod
    def forward(ctx, logits, target):
        return _smoothed_ce(ctx, logits, target)

    @staticmethod
    def backward(ctx, grad_out):
        logp, q, valid = ctx.saved_tensors
        grad = (logp.exp() - q) * valid[:, None] / logp.shape[0]  # BUG -- / ctx.n_valid
        return grad * grad_out, None

    @staticmethod
    def example_inputs():
        return _smoothing_inputs()


def _poisson_inputs():
    torch.manual_seed(45)
    log_rate = (0.5 * torch.randn(3, 4, dtype=torch.float64)).requires_grad_()
    counts = torch.tensor([[0, 1, 3, 2], [1, 0, 0, 4], [2, 2, 1, 0]], dtype=torch.float64)
    return log_rate, counts


class PoissonNLLLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, log_rate, counts):
        ctx.save_for_backward(log_rate, counts)
        return (log_rate.exp() - counts * log_rate).mean()

    @staticmethod
    def backward(ctx, grad_out):
        log_rate, counts = ctx.saved_tensors
        return (log_rate.exp() - counts) / log_rate.numel() * grad_out, None

    @staticmethod
    def example_inputs():
        return _poisson_inputs()


class PoissonNLLLossRateDerivative(torch.autograd.Function):
    bug = {"kind": "none", "input": "log_rate",
           "note": "the derivative with respect to the rate (1 - k/rate), not the log-rate: "
                   "a wrong formula"}

    @staticmethod
    def forward(ctx, log_rate, counts):
        ctx.save_for_backward(log_rate, counts)
        return (log_rate.exp() - counts * log_rate).mean()

    @staticmethod
    def backward(ctx, grad_out):
        log_rate, counts = ctx.saved_tensors
        return (1 - counts / log_rate.exp()) / log_rate.numel() * grad_out, None  # BUG

    @staticmethod
    def example_inputs():
        return _poisson_inputs()


class PoissonNLLPerElement(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, log_rate, counts):
        ctx.save_for_backward(log_rate, counts)
        return log_rate.exp() - counts * log_rate

    @staticmethod
    def backward(ctx, grad_out):
        log_rate, counts = ctx.saved_tensors
        return grad_out * (log_rate.exp() - counts), None

    @staticmethod
    def example_inputs():
        return _poisson_inputs()


class PoissonNLLPerElementNoGradOutput(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "log_rate",
           "note": "the per-element loss's backward returns the local derivative, never "
                   "multiplied by grad_out"}

    @staticmethod
    def forward(ctx, log_rate, counts):
        ctx.save_for_backward(log_rate, counts)
        return log_rate.exp() - counts * log_rate

    @staticmethod
    def backward(ctx, grad_out):
        log_rate, counts = ctx.saved_tensors
        return log_rate.exp() - counts, None  # BUG -- grad_out * (...)

    @staticmethod
    def example_inputs():
        return _poisson_inputs()
