"""Likelihood losses and divergences: Gaussian NLL (mean, log-variance), Poisson NLL with a
log-rate, row-wise KL between two softmaxes, row cosine similarity."""
import torch


def _gauss_parts(mu, log_var, target):
    inv = torch.exp(-log_var)
    r = target - mu
    return inv, r


class GaussianNLL(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, mu, log_var, target):
        inv, r = _gauss_parts(mu, log_var, target)
        ctx.save_for_backward(inv, r)
        return 0.5 * (log_var + r * r * inv)

    @staticmethod
    def backward(ctx, grad):
        inv, r = ctx.saved_tensors
        g_mu = -grad * r * inv
        g_lv = 0.5 * grad * (1 - r * r * inv)
        g_t = grad * r * inv
        return g_mu, g_lv, g_t


class GaussianNLLResidualSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "mu", "note": "d/dmu of (target - mu)^2 written without the minus of the inner derivative"}

    @staticmethod
    def forward(ctx, mu, log_var, target):
        inv, r = _gauss_parts(mu, log_var, target)
        ctx.save_for_backward(inv, r)
        return 0.5 * (log_var + r * r * inv)

    @staticmethod
    def backward(ctx, grad):
        inv, r = ctx.saved_tensors
        g_mu = grad * r * inv  # BUG
        g_lv = 0.5 * grad * (1 - r * r * inv)
        g_t = grad * r * inv
        return g_mu, g_lv, g_t


class GaussianNLLLogVarNoConstant(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "log_var", "note": "d/dlog_var of log_var (the 1) is dropped"}

    @staticmethod
    def forward(ctx, mu, log_var, target):
        inv, r = _gauss_parts(mu, log_var, target)
        ctx.save_for_backward(inv, r)
        return 0.5 * (log_var + r * r * inv)

    @staticmethod
    def backward(ctx, grad):
        inv, r = ctx.saved_tensors
        g_mu = -grad * r * inv
        g_lv = -0.5 * grad * r * r * inv  # BUG
        g_t = grad * r * inv
        return g_mu, g_lv, g_t


class GaussianNLLTargetTreatedConstant(torch.autograd.Function):
    bug = {"kind": "zero", "input": "target", "note": "the target is assumed constant; here it requires grad"}

    @staticmethod
    def forward(ctx, mu, log_var, target):
        inv, r = _gauss_parts(mu, log_var, target)
        ctx.save_for_backward(inv, r)
        return 0.5 * (log_var + r * r * inv)

    @staticmethod
    def backward(ctx, grad):
        inv, r = ctx.saved_tensors
        g_mu = -grad * r * inv
        g_lv = 0.5 * grad * (1 - r * r * inv)
        return g_mu, g_lv, None  # BUG


def _counts():
    gen = torch.Generator().manual_seed(11)
    log_rate = torch.randn(3, 4, dtype=torch.float64, generator=gen).requires_grad_()
    counts = torch.randint(0, 5, (3, 4), generator=gen).to(torch.float64)
    return log_rate, counts


class PoissonNLLLogRate(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, log_rate, counts):
        ctx.save_for_backward(log_rate, counts)
        return (torch.exp(log_rate) - counts * log_rate).sum()

    @staticmethod
    def backward(ctx, grad):
        log_rate, counts = ctx.saved_tensors
        return grad * (log_rate.exp() - counts), None

    @staticmethod
    def example_inputs():
        return _counts()


class PoissonNLLLogRateNotExponentiated(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "log_rate", "note": "the saved log-rate is used where the rate exp(log_rate) is needed"}

    @staticmethod
    def forward(ctx, log_rate, counts):
        ctx.save_for_backward(log_rate, counts)
        return (torch.exp(log_rate) - counts * log_rate).sum()

    @staticmethod
    def backward(ctx, grad):
        log_rate, counts = ctx.saved_tensors
        return grad * (log_rate - counts), None  # BUG

    @staticmethod
    def example_inputs():
        return _counts()


class RowKLDivergence(torch.autograd.Function):
    """KL(softmax(p) || softmax(q)) per row."""
    bug = None

    @staticmethod
    def forward(ctx, p_logits, q_logits):
        lp = torch.log_softmax(p_logits, 1)
        lq = torch.log_softmax(q_logits, 1)
        ctx.save_for_backward(lp, lq)
        return (lp.exp() * (lp - lq)).sum(1)

    @staticmethod
    def backward(ctx, grad):
        lp, lq = ctx.saved_tensors
        P, Q = lp.exp(), lq.exp()
        d = lp - lq
        g = grad[:, None]
        g_p = g * P * (d - (P * d).sum(1, keepdim=True))
        g_q = g * (Q - P)
        return g_p, g_q


class RowKLDivergenceCentredOverBatch(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "p_logits", "note": "the softmax centring term is summed over rows instead of classes"}

    @staticmethod
    def forward(ctx, p_logits, q_logits):
        lp = torch.log_softmax(p_logits, 1)
        lq = torch.log_softmax(q_logits, 1)
        ctx.save_for_backward(lp, lq)
        return (lp.exp() * (lp - lq)).sum(1)

    @staticmethod
    def backward(ctx, grad):
        lp, lq = ctx.saved_tensors
        P, Q = lp.exp(), lq.exp()
        d = lp - lq
        g = grad[:, None]
        g_p = g * P * (d - (P * d).sum(0, keepdim=True))  # BUG
        g_q = g * (Q - P)
        return g_p, g_q


class RowCosineSimilarityByNorms(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        na = a.norm(dim=1, keepdim=True)
        nb = b.norm(dim=1, keepdim=True)
        cos = (a * b).sum(1, keepdim=True) / (na * nb)
        ctx.save_for_backward(a, b, na, nb, cos)
        return cos.squeeze(1)

    @staticmethod
    def backward(ctx, grad):
        a, b, na, nb, cos = ctx.saved_tensors
        g = grad.unsqueeze(1)
        g_a = g * (b / (na * nb) - cos * a / na ** 2)
        g_b = g * (a / (na * nb) - cos * b / nb ** 2)
        return g_a, g_b


class RowCosineSimilarityByNormsSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "a", "note": "the two gradients are returned in the wrong order"}

    @staticmethod
    def forward(ctx, a, b):
        na = a.norm(dim=1, keepdim=True)
        nb = b.norm(dim=1, keepdim=True)
        cos = (a * b).sum(1, keepdim=True) / (na * nb)
        ctx.save_for_backward(a, b, na, nb, cos)
        return cos.squeeze(1)

    @staticmethod
    def backward(ctx, grad):
        a, b, na, nb, cos = ctx.saved_tensors
        g = grad.unsqueeze(1)
        g_a = g * (b / (na * nb) - cos * a / na ** 2)
        g_b = g * (a / (na * nb) - cos * b / nb ** 2)
        return g_b, g_a  # BUG
