"""Segmentation losses and a Gaussian KL with hand-written backwards: soft Dice (integer masks),
soft IoU (soft targets, both differentiable), Tversky (integer masks), KL(N(mu, exp(logvar)) || N(0, 1)).
Every loss is per sample, so grad_out matters.

BLIND corpus bench/diagnosis_outside (see README.md): used only to score gradcli's diagnosis.
"""
import torch

EPS = 1e-3


def _probs(seed, shape=(3, 5)):
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=gen, dtype=torch.float64) * 0.8 + 0.1


def _mask_int():
    return torch.tensor([[1, 0, 1, 1, 0], [0, 0, 1, 0, 0], [1, 1, 0, 1, 1]], dtype=torch.int64)


# ------------------------------------------------------------------------------ soft Dice
class OutsideSoftDice(torch.autograd.Function):
    """1 - (2 sum p t + eps) / (sum p + sum t + eps) per sample; t is an integer 0/1 mask."""

    bug = None

    @staticmethod
    def forward(ctx, p, t):
        tf = t.to(p.dtype)
        num = 2.0 * (p * tf).sum(1) + EPS
        den = p.sum(1) + tf.sum(1) + EPS
        ctx.save_for_backward(tf, num, den)
        return 1.0 - num / den

    @staticmethod
    def backward(ctx, grad_out):
        tf, num, den = ctx.saved_tensors
        num, den = num.unsqueeze(1), den.unsqueeze(1)
        grad_p = -(2.0 * tf * den - num) / den.pow(2)
        return grad_out.unsqueeze(1) * grad_p, None

    @staticmethod
    def example_inputs():
        return _probs(41), _mask_int()


class OutsideSoftDiceQuotient(torch.autograd.Function):
    """Soft Dice per sample, the quotient rule written out as u'v and uv'."""

    bug = {"kind": "term_sign", "input": "p",
           "note": "quotient rule with + : (u' v + u v') / v^2 instead of (u' v - u v') / v^2"}

    @staticmethod
    def forward(ctx, p, t):
        tf = t.to(p.dtype)
        ctx.save_for_backward(p, tf)
        inter = (p * tf).sum(dim=1)
        return 1.0 - (2.0 * inter + EPS) / (p.sum(dim=1) + tf.sum(dim=1) + EPS)

    @staticmethod
    def backward(ctx, grad_out):
        p, tf = ctx.saved_tensors
        u = (2.0 * (p * tf).sum(dim=1) + EPS)[:, None]
        v = (p.sum(dim=1) + tf.sum(dim=1) + EPS)[:, None]
        du = 2.0 * tf
        dv = torch.ones_like(p)
        d_ratio = (du * v + u * dv) / (v * v)  # BUG
        return -grad_out[:, None] * d_ratio, None

    @staticmethod
    def example_inputs():
        return _probs(41), _mask_int()


# ------------------------------------------------------------------------------- soft IoU
def _iou_partial(other, inter, union):
    """d(1 - I/U)/d(this) where dI/d(this) = other and dU/d(this) = 1 - other."""
    return -(other * union - inter * (1.0 - other)) / union.pow(2)


class OutsideSoftIoU(torch.autograd.Function):
    """1 - I/U with I = sum p t, U = sum p + sum t - I; soft targets are differentiable too."""

    bug = None

    @staticmethod
    def forward(ctx, p, t):
        inter = (p * t).sum(-1, keepdim=True)
        union = p.sum(-1, keepdim=True) + t.sum(-1, keepdim=True) - inter
        ctx.save_for_backward(p, t, inter, union)
        return 1.0 - (inter / union).squeeze(-1)

    @staticmethod
    def backward(ctx, grad_out):
        p, t, inter, union = ctx.saved_tensors
        g = grad_out.unsqueeze(-1)
        return g * _iou_partial(t, inter, union), g * _iou_partial(p, inter, union)

    @staticmethod
    def example_inputs():
        return _probs(42), _probs(43)


class OutsideSoftIoUSwapped(torch.autograd.Function):
    """Soft IoU, each partial derivative named after the tensor it is taken with respect to."""

    bug = {"kind": "swapped", "input": "p",
           "note": "the two gradients are returned in the wrong order (t's for p and p's for t)"}

    @staticmethod
    def forward(ctx, p, t):
        inter = (p * t).sum(-1, keepdim=True)
        union = p.sum(-1, keepdim=True) + t.sum(-1, keepdim=True) - inter
        ctx.save_for_backward(p, t, inter, union)
        return 1.0 - (inter / union).squeeze(-1)

    @staticmethod
    def backward(ctx, grad_out):
        p, t, inter, union = ctx.saved_tensors
        g = grad_out.unsqueeze(-1)
        grad_p = g * _iou_partial(t, inter, union)
        grad_t = g * _iou_partial(p, inter, union)
        return grad_t, grad_p  # BUG

    @staticmethod
    def example_inputs():
        return _probs(42), _probs(43)


class OutsideSoftIoUUnionSign(torch.autograd.Function):
    """Soft IoU with the gradient of p written inline."""

    bug = {"kind": "term_sign", "input": "p",
           "note": "dU/dp = 1 + t: the -I term of the union is differentiated with the wrong sign"}

    @staticmethod
    def forward(ctx, p, t):
        inter = (p * t).sum(-1, keepdim=True)
        union = p.sum(-1, keepdim=True) + t.sum(-1, keepdim=True) - inter
        ctx.save_for_backward(p, t, inter, union)
        return 1.0 - (inter / union).squeeze(-1)

    @staticmethod
    def backward(ctx, grad_out):
        p, t, inter, union = ctx.saved_tensors
        g = grad_out.unsqueeze(-1)
        d_union = 1.0 + t  # BUG
        grad_p = -g * (t * union - inter * d_union) / union ** 2
        grad_t = g * _iou_partial(p, inter, union)
        return grad_p, grad_t

    @staticmethod
    def example_inputs():
        return _probs(42), _probs(43)


# ------------------------------------------------------------------------------- Tversky
class OutsideTversky(torch.autograd.Function):
    """1 - TP / (TP + a FP + b FN) per sample, a = 0.7, b = 0.3; t an integer 0/1 mask."""

    bug = None
    ALPHA, BETA = 0.7, 0.3

    @staticmethod
    def forward(ctx, p, t):
        a, b = OutsideTversky.ALPHA, OutsideTversky.BETA
        tf = t.to(p.dtype)
        tp = (p * tf).sum(1)
        fp = (p * (1 - tf)).sum(1)
        fn = ((1 - p) * tf).sum(1)
        den = tp + a * fp + b * fn + EPS
        ctx.save_for_backward(p, tf, tp, den)
        return 1.0 - tp / den

    @staticmethod
    def backward(ctx, grad_out):
        p, tf, tp, den = ctx.saved_tensors
        a, b = OutsideTversky.ALPHA, OutsideTversky.BETA
        d_den = tf + a * (1 - tf) - b * tf
        d_index = (tf * den[:, None] - tp[:, None] * d_den) / den[:, None] ** 2
        return -grad_out[:, None] * d_index, None

    @staticmethod
    def example_inputs():
        return _probs(44), _mask_int()


class OutsideTverskyPredictionInFP(torch.autograd.Function):
    """Tversky per sample; backward differentiates TP, FP and FN one at a time."""

    bug = {"kind": "wrong_variable", "input": "p",
           "note": "dFP/dp is written 1 - p (the prediction) where it is 1 - t (the target)"}
    ALPHA, BETA = 0.7, 0.3

    @staticmethod
    def forward(ctx, p, t):
        cls = OutsideTverskyPredictionInFP
        tf = t.to(p.dtype)
        tp = (p * tf).sum(1)
        fp = (p * (1 - tf)).sum(1)
        fn = ((1 - p) * tf).sum(1)
        ctx.save_for_backward(p, tf)
        ctx.tp, ctx.den = tp, tp + cls.ALPHA * fp + cls.BETA * fn + EPS
        return 1.0 - tp / ctx.den

    @staticmethod
    def backward(ctx, grad_out):
        cls = OutsideTverskyPredictionInFP
        p, tf = ctx.saved_tensors
        d_tp = tf
        d_fp = 1 - p  # BUG
        d_fn = -tf
        d_den = d_tp + cls.ALPHA * d_fp + cls.BETA * d_fn
        den = ctx.den.unsqueeze(1)
        grad_p = -(d_tp * den - ctx.tp.unsqueeze(1) * d_den) / den.square()
        return grad_out.unsqueeze(1) * grad_p, None

    @staticmethod
    def example_inputs():
        return _probs(44), _mask_int()


# ----------------------------------------------------------------- Gaussian KL to N(0, 1)
class OutsideGaussianKL(torch.autograd.Function):
    """0.5 sum_d (exp(logvar) + mu^2 - 1 - logvar) per sample."""

    bug = None

    @staticmethod
    def forward(ctx, mu, logvar):
        ctx.save_for_backward(mu, logvar)
        return 0.5 * (logvar.exp() + mu.pow(2) - 1.0 - logvar).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        mu, logvar = ctx.saved_tensors
        g = grad_out[:, None]
        return g * mu, 0.5 * g * (logvar.exp() - 1.0)


class OutsideGaussianKLMeanFactor(torch.autograd.Function):
    """Gaussian KL per sample, backward term by term."""

    bug = {"kind": "scale", "input": "mu",
           "note": "d(mu^2) = 2 mu is written but the 0.5 in front of the sum is forgotten: twice the gradient"}

    @staticmethod
    def forward(ctx, mu, logvar):
        ctx.save_for_backward(mu, logvar)
        var = torch.exp(logvar)
        return 0.5 * torch.sum(var + mu * mu - 1.0 - logvar, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        mu, logvar = ctx.saved_tensors
        g = grad_out.unsqueeze(1)
        grad_mu = g * 2.0 * mu  # BUG
        grad_logvar = g * 0.5 * (torch.exp(logvar) - 1.0)
        return grad_mu, grad_logvar


class OutsideGaussianKLLogvarNoGrad(torch.autograd.Function):
    """Gaussian KL per sample; the log-variance gradient is computed once, up front."""

    bug = {"kind": "ignores_grad_output", "input": "logvar",
           "note": "the log-variance gradient 0.5 (exp(logvar) - 1) is returned without grad_out"}

    @staticmethod
    def forward(ctx, mu, logvar):
        ctx.save_for_backward(mu, logvar)
        ctx.d_logvar = 0.5 * (logvar.exp() - 1.0)
        return 0.5 * (logvar.exp() + mu.pow(2) - 1.0 - logvar).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        mu, logvar = ctx.saved_tensors
        grad_mu = grad_out[:, None] * mu if ctx.needs_input_grad[0] else None
        grad_logvar = ctx.d_logvar.clone()  # BUG
        return grad_mu, grad_logvar


class OutsideGaussianKLVarianceDerivative(torch.autograd.Function):
    """Gaussian KL per sample, the log-variance derivative taken from the variance form."""

    bug = {"kind": "none", "input": "logvar",
           "note": "returns dKL/dvar = 0.5 (1 - 1/var) instead of dKL/dlogvar = 0.5 (var - 1): the chain "
                   "factor var is missing, a different formula"}

    @staticmethod
    def forward(ctx, mu, logvar):
        var = logvar.exp()
        ctx.save_for_backward(mu, var)
        return 0.5 * (var + mu.pow(2) - 1.0 - logvar).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        mu, var = ctx.saved_tensors
        g = grad_out[:, None]
        grad_logvar = 0.5 * g * (1.0 - 1.0 / var)  # BUG
        return g * mu, grad_logvar
