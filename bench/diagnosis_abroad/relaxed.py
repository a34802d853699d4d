"""Relaxed (Concrete) Gumbel-softmax with fixed noise and a learned temperature, its embedding-table
variant, and three deliberate estimators: a straight-through Bernoulli sample, a gradient reversal
layer for domain-adversarial training, and a sigmoid surrogate for a thresholded count."""
import torch


def _gumbel(shape, seed):
    gen = torch.Generator().manual_seed(seed)
    u = torch.rand(*shape, dtype=torch.float64, generator=gen) * 0.9 + 0.05
    return -torch.log(-torch.log(u))


def _relaxed_inputs():
    gen = torch.Generator().manual_seed(31)
    logits = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    return logits, torch.tensor([-0.3], dtype=torch.float64), _gumbel((3, 4), 32)


def _relaxed_forward(ctx, logits, log_tau, gumbel):
    tau = log_tau.exp()
    a = logits + gumbel
    y = torch.softmax(a / tau, dim=-1)
    ctx.save_for_backward(a, y, tau)
    return y


# ----------------------------------------------------------------- relaxed Gumbel-softmax, learned tau
class AbroadGumbelSoftmaxRelaxed(torch.autograd.Function):
    """y = softmax((logits + gumbel) / exp(log_tau)), the Concrete relaxation (no straight-through)."""

    bug = None

    @staticmethod
    def forward(ctx, logits, log_tau, gumbel):
        return _relaxed_forward(ctx, logits, log_tau, gumbel)

    @staticmethod
    def backward(ctx, g):
        a, y, tau = ctx.saved_tensors
        v = y * (g - (g * y).sum(dim=-1, keepdim=True))  # softmax's vector-Jacobian product
        grad_logits = v / tau
        grad_log_tau = -(v * a / tau).sum().view_as(tau)
        return grad_logits, grad_log_tau, v / tau

    @staticmethod
    def example_inputs():
        return _relaxed_inputs()


class AbroadGumbelSoftmaxBatchAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "logits",
           "note": "the softmax VJP's inner sum runs over the batch (dim=0) instead of the categories"}

    @staticmethod
    def forward(ctx, logits, log_tau, gumbel):
        return _relaxed_forward(ctx, logits, log_tau, gumbel)

    @staticmethod
    def backward(ctx, g):
        a, y, tau = ctx.saved_tensors
        v = y * (g - (g * y).sum(dim=0, keepdim=True))  # BUG
        grad_logits = v / tau
        grad_log_tau = -(v * a / tau).sum().view_as(tau)
        return grad_logits, grad_log_tau, v / tau

    @staticmethod
    def example_inputs():
        return _relaxed_inputs()


class AbroadGumbelSoftmaxNoTemp(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits",
           "note": "the 1 / tau of the chain rule through (logits + gumbel) / tau is forgotten for the logits"}

    @staticmethod
    def forward(ctx, logits, log_tau, gumbel):
        return _relaxed_forward(ctx, logits, log_tau, gumbel)

    @staticmethod
    def backward(ctx, g):
        a, y, tau = ctx.saved_tensors
        v = y * (g - (g * y).sum(dim=-1, keepdim=True))
        grad_logits = v  # BUG
        grad_log_tau = -(v * a / tau).sum().view_as(tau)
        return grad_logits, grad_log_tau, v / tau

    @staticmethod
    def example_inputs():
        return _relaxed_inputs()


class AbroadGumbelSoftmaxAnnealedTau(torch.autograd.Function):
    bug = {"kind": "zero", "input": "log_tau",
           "note": "the temperature is treated as an annealed constant and gets None, though it is learned here"}

    @staticmethod
    def forward(ctx, logits, log_tau, gumbel):
        return _relaxed_forward(ctx, logits, log_tau, gumbel)

    @staticmethod
    def backward(ctx, g):
        a, y, tau = ctx.saved_tensors
        v = y * (g - (g * y).sum(dim=-1, keepdim=True))
        grad_logits = v / tau
        return grad_logits, None, v / tau  # BUG

    @staticmethod
    def example_inputs():
        return _relaxed_inputs()


class AbroadGumbelSoftmaxTauSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "log_tau",
           "note": "d(a / tau) / d log_tau = -a / tau is taken as +a / tau"}

    @staticmethod
    def forward(ctx, logits, log_tau, gumbel):
        return _relaxed_forward(ctx, logits, log_tau, gumbel)

    @staticmethod
    def backward(ctx, g):
        a, y, tau = ctx.saved_tensors
        v = y * (g - (g * y).sum(dim=-1, keepdim=True))
        grad_logits = v / tau
        grad_log_tau = (v * a / tau).sum().view_as(tau)  # BUG
        return grad_logits, grad_log_tau, v / tau

    @staticmethod
    def example_inputs():
        return _relaxed_inputs()


# ----------------------------------------------------------------- Gumbel-softmax over looked-up logits
TAU = 0.7


def _table_inputs():
    gen = torch.Generator().manual_seed(33)
    table = torch.randn(5, 4, dtype=torch.float64, generator=gen)
    ids = torch.tensor([1, 3, 1, 0, 3, 1], dtype=torch.int64)
    return table, ids, _gumbel((6, 4), 34)


class AbroadGumbelSoftmaxTable(torch.autograd.Function):
    """softmax((table[ids] + gumbel) / TAU): per-token category logits from a table, ids repeat."""

    bug = None

    @staticmethod
    def forward(ctx, table, ids, gumbel):
        y = torch.softmax((table[ids] + gumbel) / TAU, dim=-1)
        ctx.save_for_backward(ids, y)
        ctx.rows = table.shape[0]
        return y

    @staticmethod
    def backward(ctx, g):
        ids, y = ctx.saved_tensors
        v = y * (g - (g * y).sum(dim=-1, keepdim=True)) / TAU
        grad_table = v.new_zeros(ctx.rows, v.shape[1]).index_add_(0, ids, v)
        return grad_table, None, v

    @staticmethod
    def example_inputs():
        return _table_inputs()


class AbroadGumbelSoftmaxTableOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "table",
           "note": "the rows' gradients are written with scatter_, so a repeated id keeps only its last row"}

    @staticmethod
    def forward(ctx, table, ids, gumbel):
        y = torch.softmax((table[ids] + gumbel) / TAU, dim=-1)
        ctx.save_for_backward(ids, y)
        ctx.rows = table.shape[0]
        return y

    @staticmethod
    def backward(ctx, g):
        ids, y = ctx.saved_tensors
        v = y * (g - (g * y).sum(dim=-1, keepdim=True)) / TAU
        index = ids[:, None].expand(-1, v.shape[1])
        grad_table = v.new_zeros(ctx.rows, v.shape[1]).scatter_(0, index, v)  # BUG
        return grad_table, None, v

    @staticmethod
    def example_inputs():
        return _table_inputs()


# ----------------------------------------------------------------- deliberate estimators (no twins)
class AbroadStraightThroughBernoulli(torch.autograd.Function):
    """A hard Bernoulli sample 1[u < sigmoid(logits)] whose backward passes the sigmoid's derivative."""

    bug = {"kind": "straight_through", "input": "logits",
           "note": "deliberate straight-through estimator: the sample is piecewise constant, backward uses sigmoid'"}

    @staticmethod
    def forward(ctx, logits, u):
        p = torch.sigmoid(logits)
        ctx.save_for_backward(p)
        return (u < p).to(logits.dtype)

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        return g * p * (1 - p), None  # BUG

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(35)
        logits = torch.randn(3, 4, dtype=torch.float64, generator=gen)
        u = torch.tensor([[0.1, 0.9, 0.3, 0.7], [0.5, 0.2, 0.8, 0.4], [0.6, 0.05, 0.95, 0.35]],
                         dtype=torch.float64)
        return logits, u


GRL_LAMBDA = 0.5


class AbroadGradReverseDomain(torch.autograd.Function):
    """Identity forward; backward multiplies by -lambda (domain-adversarial gradient reversal)."""

    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "deliberate gradient reversal layer: the identity's gradient is returned as -lambda * g"}

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return -GRL_LAMBDA * g  # BUG


SURROGATE_T = 0.5


class AbroadSurrogateThresholdCount(torch.autograd.Function):
    """How many scores per row exceed the row's threshold; backward uses a sigmoid's slope instead."""

    bug = {"kind": "smooth_surrogate", "input": "scores",
           "note": "deliberate surrogate gradient: the count's exact derivative is 0, backward uses sigmoid'((s - t) / T) / T"}

    @staticmethod
    def forward(ctx, scores, threshold):
        ctx.save_for_backward(scores, threshold)
        return (scores > threshold[:, None]).sum(dim=1).to(scores.dtype)

    @staticmethod
    def backward(ctx, g):
        scores, threshold = ctx.saved_tensors
        sig = torch.sigmoid((scores - threshold[:, None]) / SURROGATE_T)
        slope = g[:, None] * sig * (1 - sig) / SURROGATE_T  # BUG
        return slope, -slope.sum(dim=1)

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(36)
        scores = torch.randn(3, 4, dtype=torch.float64, generator=gen)
        return scores, torch.tensor([0.13, -0.41, 0.27], dtype=torch.float64)
