"""Sparse maps and shrinkage with hand-written backwards: sparsemax, soft-thresholding with a learned
threshold per column, group (row-wise) shrinkage, and three deliberate estimators: a learned-step
quantiser (LSQ), a gradient reversal layer and a sigmoid surrogate for a hard step.

BLIND corpus bench/diagnosis_outside (see README.md): used only to score gradcli's diagnosis.
"""
import torch


def _seeded(*shape, seed, scale=1.0, shift=0.0, uniform=False):
    gen = torch.Generator().manual_seed(seed)
    make = torch.rand if uniform else torch.randn
    return make(*shape, generator=gen, dtype=torch.float64) * scale + shift


def _sparsemax(z):
    """Projection of each row onto the simplex (Martins & Astudillo, 2016)."""
    n = z.shape[-1]
    z_sorted, _ = torch.sort(z, dim=-1, descending=True)
    ks = torch.arange(1, n + 1, dtype=z.dtype)
    cumulative = z_sorted.cumsum(dim=-1) - 1.0
    in_support = ks * z_sorted > cumulative
    k = in_support.sum(dim=-1, keepdim=True)
    tau = cumulative.gather(-1, k - 1) / k.to(z.dtype)
    return torch.clamp(z - tau, min=0.0)


def _sparsemax_input():
    return (_seeded(3, 5, seed=61, scale=1.5),)


# -------------------------------------------------------------------------------- sparsemax
class OutsideSparsemax(torch.autograd.Function):
    """sparsemax over the last axis; its Jacobian is diag(s) - s s^T / |s| on the support s."""

    bug = None

    @staticmethod
    def forward(ctx, z):
        p = _sparsemax(z)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        support = (p > 0).to(grad_out.dtype)
        mean_on = (grad_out * support).sum(-1, keepdim=True) / support.sum(-1, keepdim=True)
        return support * (grad_out - mean_on)

    @staticmethod
    def example_inputs():
        return _sparsemax_input()


class OutsideSparsemaxUnmasked(torch.autograd.Function):
    """sparsemax; backward subtracts the mean of grad_out over the support."""

    bug = {"kind": "region", "input": "z",
           "note": "grad_out - mean is not masked to the support: entries with p = 0 get a gradient"}

    @staticmethod
    def forward(ctx, z):
        p = _sparsemax(z)
        ctx.support = p > 0
        return p

    @staticmethod
    def backward(ctx, grad_out):
        on = ctx.support
        size = on.sum(dim=1, keepdim=True).to(grad_out.dtype)
        mean_on = grad_out.masked_fill(~on, 0.0).sum(dim=1, keepdim=True) / size
        grad_z = grad_out - mean_on  # BUG
        return grad_z

    @staticmethod
    def example_inputs():
        return _sparsemax_input()


class OutsideSparsemaxBatchMean(torch.autograd.Function):
    """sparsemax; backward counts the support and averages grad_out over it."""

    bug = {"kind": "wrong_axis", "input": "z",
           "note": "the support size and the support mean of grad_out are taken over the batch (dim 0), not per row"}

    @staticmethod
    def forward(ctx, z):
        p = _sparsemax(z)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        on = p.gt(0).to(grad_out.dtype)
        count = on.sum(0, keepdim=True).clamp(min=1.0)
        mean_on = (on * grad_out).sum(0, keepdim=True) / count  # BUG
        return on * (grad_out - mean_on)

    @staticmethod
    def example_inputs():
        return _sparsemax_input()


# ----------------------------------------------------------------------------- soft threshold
def _threshold_inputs():
    return _seeded(3, 4, seed=62, scale=1.5), _seeded(4, seed=63, scale=0.4, shift=0.3, uniform=True)


class OutsideSoftThreshold(torch.autograd.Function):
    """sign(x) * max(|x| - lam, 0) with a learned threshold lam per column."""

    bug = None

    @staticmethod
    def forward(ctx, x, lam):
        ctx.save_for_backward(x, lam)
        return torch.sign(x) * torch.relu(x.abs() - lam)

    @staticmethod
    def backward(ctx, grad_out):
        x, lam = ctx.saved_tensors
        active = (x.abs() > lam).to(grad_out.dtype)
        grad_x = grad_out * active
        grad_lam = -(grad_out * torch.sign(x) * active).sum(dim=0)
        return grad_x, grad_lam

    @staticmethod
    def example_inputs():
        return _threshold_inputs()


class OutsideSoftThresholdPositiveSide(torch.autograd.Function):
    """Soft-thresholding; the pass-through mask of x written from the positive branch."""

    bug = {"kind": "region", "input": "x",
           "note": "the mask x > lam keeps only the positive branch; x < -lam must pass the gradient too"}

    @staticmethod
    def forward(ctx, x, lam):
        shrunk = torch.clamp(x.abs() - lam, min=0.0)
        ctx.save_for_backward(x, lam)
        return shrunk * x.sign()

    @staticmethod
    def backward(ctx, grad_out):
        x, lam = ctx.saved_tensors
        grad_x = grad_out * (x > lam)  # BUG
        both_sides = x.abs() > lam
        grad_lam = -torch.where(both_sides, grad_out * x.sign(), torch.zeros_like(x)).sum(0)
        return grad_x, grad_lam

    @staticmethod
    def example_inputs():
        return _threshold_inputs()


class OutsideSoftThresholdLambdaSign(torch.autograd.Function):
    """Soft-thresholding; the threshold's gradient reduced over the rows."""

    bug = {"kind": "sign", "input": "lam",
           "note": "d(|x| - lam)/dlam = -1 is taken as +1: the threshold gradient has the wrong sign"}

    @staticmethod
    def forward(ctx, x, lam):
        ctx.save_for_backward(x, lam)
        return torch.sign(x) * torch.relu(x.abs() - lam)

    @staticmethod
    def backward(ctx, grad_out):
        x, lam = ctx.saved_tensors
        active = x.abs() > lam
        grad_x = grad_out.masked_fill(~active, 0.0)
        grad_lam = (grad_x * torch.sign(x)).sum(dim=0)  # BUG
        return grad_x, grad_lam

    @staticmethod
    def example_inputs():
        return _threshold_inputs()


# ------------------------------------------------------------------------- group shrinkage
def _group_inputs():
    x = torch.tensor([[0.3, -0.2, 0.4, 0.1],
                      [1.2, -0.7, 0.5, 0.9],
                      [-1.5, 2.0, 0.8, -0.6]], dtype=torch.float64)
    return x, torch.tensor(1.1, dtype=torch.float64)


class OutsideGroupShrink(torch.autograd.Function):
    """x_b * max(0, 1 - lam / |x_b|): block soft-thresholding of each row, lam a learned scalar."""

    bug = None

    @staticmethod
    def forward(ctx, x, lam):
        radius = x.norm(dim=1, keepdim=True)
        ctx.save_for_backward(x, radius, lam)
        return x * torch.relu(1.0 - lam / radius)

    @staticmethod
    def backward(ctx, grad_out):
        x, radius, lam = ctx.saved_tensors
        active = (radius > lam).to(x.dtype)
        unit = x / radius
        along = (unit * grad_out).sum(dim=1, keepdim=True)
        grad_x = active * (grad_out - lam / radius * (grad_out - unit * along))
        grad_lam = -(active * along).sum()
        return grad_x, grad_lam

    @staticmethod
    def example_inputs():
        return _group_inputs()


class OutsideGroupShrinkIsotropic(torch.autograd.Function):
    """Row-wise group shrinkage, backward treating the shrink factor's radius as fixed."""

    bug = {"kind": "missing_term", "input": "x",
           "note": "d(x/|x|) keeps I/|x| and drops the radial term -x x^T/|x|^3"}

    @staticmethod
    def forward(ctx, x, lam):
        radius = x.norm(dim=1, keepdim=True)
        factor = (1.0 - lam / radius).clamp(min=0.0)
        ctx.save_for_backward(x, radius, lam, factor)
        return x * factor

    @staticmethod
    def backward(ctx, grad_out):
        x, radius, lam, factor = ctx.saved_tensors
        active = factor > 0
        grad_x = torch.where(active, grad_out - lam * grad_out / radius, torch.zeros_like(x))  # BUG
        grad_lam = -(active * (grad_out * x / radius)).sum()
        return grad_x, grad_lam

    @staticmethod
    def example_inputs():
        return _group_inputs()


# ------------------------------------------------------------------------------ estimators
class OutsideLSQQuantizer(torch.autograd.Function):
    """Learned step size quantisation (Esser et al.): round(clamp(x/s, -4, 3)) * s.

    Deliberate estimator: x gets the straight-through gradient inside the range, the step gets the
    LSQ gradient (round(v) - v inside, the clip level outside) times 1/sqrt(N * Qp)."""

    bug = {"kind": "straight_through", "input": "x",
           "note": "deliberate: rounding passes grad_out through unchanged inside the clip range"}
    QN, QP = -4.0, 3.0

    @staticmethod
    def forward(ctx, x, step):
        cls = OutsideLSQQuantizer
        v = (x / step).clamp(cls.QN, cls.QP)
        ctx.save_for_backward(x, step)
        return torch.round(v) * step

    @staticmethod
    def backward(ctx, grad_out):
        cls = OutsideLSQQuantizer
        x, step = ctx.saved_tensors
        v = x / step
        inside = (v > cls.QN) & (v < cls.QP)
        grad_x = grad_out * inside  # BUG
        level = torch.where(inside, torch.round(v) - v, v.clamp(cls.QN, cls.QP))
        scale = 1.0 / (x.numel() * cls.QP) ** 0.5
        grad_step = (grad_out * level).sum().reshape(step.shape) * scale
        return grad_x, grad_step

    @staticmethod
    def example_inputs():
        return _seeded(3, 4, seed=64, scale=1.2), torch.tensor([0.37], dtype=torch.float64)


class OutsideGradientReversal(torch.autograd.Function):
    """Identity forward, -lambda * grad backward (domain-adversarial training). Deliberate."""

    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "deliberate: the gradient is reversed and scaled by lambda = 0.5"}
    LAMBDA = 0.5

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.neg() * OutsideGradientReversal.LAMBDA  # BUG


class OutsideHardStepSurrogate(torch.autograd.Function):
    """Heaviside step forward, the derivative of sigmoid(4 x) backward. Deliberate surrogate."""

    bug = {"kind": "smooth_surrogate", "input": "x",
           "note": "deliberate: the step's zero derivative is replaced by a sigmoid's"}
    SHARPNESS = 4.0

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x > 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        beta = OutsideHardStepSurrogate.SHARPNESS
        s = torch.sigmoid(beta * x)
        return grad_out * beta * s * (1.0 - s)  # BUG
