"""Losses with integer targets and regression losses, hand-written backwards: cross entropy,
NLL with ignore_index, label smoothing, binary focal loss, multi-class hinge, cosine-similarity
loss, Huber, KL divergence (sequestered corpus)."""
import torch

IGNORE = -100


def _logits_targets(seed, n=5, c=4):
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, c, dtype=torch.float64, generator=gen)
    target = torch.randint(0, c, (n,), generator=gen)
    return logits, target


# ----------------------------------------------------------------------------- cross entropy
class SequesteredCrossEntropy(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).mean()

    @staticmethod
    def backward(ctx, grad_out):
        logp, target = ctx.saved_tensors
        onehot = torch.zeros_like(logp).scatter_(1, target[:, None], 1.0)
        return grad_out * (logp.exp() - onehot) / logp.shape[0], None

    @staticmethod
    def example_inputs():
        return _logits_targets(41)


class SequesteredCrossEntropyBatchSum(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits",
           "note": "the forward averages over the batch but the backward forgets the 1/N"}

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).mean()

    @staticmethod
    def backward(ctx, grad_out):
        logp, target = ctx.saved_tensors
        onehot = torch.zeros_like(logp).scatter_(1, target[:, None], 1.0)
        return grad_out * (logp.exp() - onehot), None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_targets(41)


# ------------------------------------------------------------------ NLL with ignore_index
def _nll_inputs():
    gen = torch.Generator().manual_seed(42)
    logp = torch.log_softmax(torch.randn(6, 3, dtype=torch.float64, generator=gen), dim=1)
    target = torch.tensor([2, IGNORE, 0, 1, IGNORE, 0])
    return logp, target


class SequesteredNLLIgnoreIndex(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logp, target):
        keep = target != IGNORE
        safe = target.clamp(min=0)
        picked = logp.gather(1, safe[:, None]).squeeze(1)
        ctx.save_for_backward(safe, keep)
        ctx.shape = logp.shape
        return -(picked * keep).sum() / keep.sum()

    @staticmethod
    def backward(ctx, grad_out):
        safe, keep = ctx.saved_tensors
        weight = keep.to(grad_out.dtype) / keep.sum()
        grad = torch.zeros(ctx.shape, dtype=grad_out.dtype)
        grad.scatter_(1, safe[:, None], (-weight * grad_out)[:, None])
        return grad, None

    @staticmethod
    def example_inputs():
        return _nll_inputs()


class SequesteredNLLIgnoreIndexUnmasked(torch.autograd.Function):
    bug = {"kind": "region", "input": "logp",
           "note": "the ignored rows (clamped to class 0 for the gather) still receive a gradient"}

    @staticmethod
    def forward(ctx, logp, target):
        keep = target != IGNORE
        safe = target.clamp(min=0)
        picked = logp.gather(1, safe[:, None]).squeeze(1)
        ctx.save_for_backward(safe, keep)
        ctx.shape = logp.shape
        return -(picked * keep).sum() / keep.sum()

    @staticmethod
    def backward(ctx, grad_out):
        safe, keep = ctx.saved_tensors
        weight = torch.ones_like(safe, dtype=grad_out.dtype) / keep.sum()  # BUG
        grad = torch.zeros(ctx.shape, dtype=grad_out.dtype)
        grad.scatter_(1, safe[:, None], (-weight * grad_out)[:, None])
        return grad, None

    @staticmethod
    def example_inputs():
        return _nll_inputs()


# --------------------------------------------------------------------------- label smoothing
SMOOTH = 0.1


class SequesteredLabelSmoothingCE(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        c = logits.shape[1]
        q = torch.full_like(logits, SMOOTH / c).scatter_(1, target[:, None], 1 - SMOOTH + SMOOTH / c)
        logp = logits.log_softmax(1)
        ctx.save_for_backward(logp, q)
        return -(q * logp).sum(1).mean()

    @staticmethod
    def backward(ctx, grad_out):
        logp, q = ctx.saved_tensors
        return (logp.exp() - q) * (grad_out / logp.shape[0]), None

    @staticmethod
    def example_inputs():
        return _logits_targets(43)


class SequesteredLabelSmoothingCEHardTarget(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "logits",
           "note": "the backward subtracts the one-hot target and forgets the uniform SMOOTH / C part of the smoothed target"}

    @staticmethod
    def forward(ctx, logits, target):
        c = logits.shape[1]
        q = torch.full_like(logits, SMOOTH / c).scatter_(1, target[:, None], 1 - SMOOTH + SMOOTH / c)
        logp = logits.log_softmax(1)
        ctx.save_for_backward(logp, q, target)
        return -(q * logp).sum(1).mean()

    @staticmethod
    def backward(ctx, grad_out):
        logp, q, target = ctx.saved_tensors
        hard = torch.zeros_like(logp).scatter_(1, target[:, None], 1 - SMOOTH)
        return (logp.exp() - hard) * (grad_out / logp.shape[0]), None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_targets(43)


# --------------------------------------------------------------------------- binary focal loss
GAMMA = 2.0


def _focal_inputs():
    gen = torch.Generator().manual_seed(44)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    y = (torch.rand(3, 4, generator=gen) > 0.5).to(torch.float64)
    return x, y


class SequesteredFocalLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, y):
        p = torch.sigmoid(x)
        pt = torch.where(y > 0.5, p, 1 - p)
        ctx.save_for_backward(pt, y)
        return -((1 - pt) ** GAMMA * torch.log(pt)).sum()

    @staticmethod
    def backward(ctx, grad_out):
        pt, y = ctx.saved_tensors
        dl_dpt = GAMMA * (1 - pt) ** (GAMMA - 1) * torch.log(pt) - (1 - pt) ** GAMMA / pt
        dpt_dx = (2 * y - 1) * pt * (1 - pt)
        return grad_out * dl_dpt * dpt_dx, None

    @staticmethod
    def example_inputs():
        return _focal_inputs()


class SequesteredFocalLossAsBCE(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the plain binary cross-entropy gradient sigmoid(x) - y is returned for the focal loss"}

    @staticmethod
    def forward(ctx, x, y):
        p = torch.sigmoid(x)
        pt = torch.where(y > 0.5, p, 1 - p)
        ctx.save_for_backward(x, pt, y)
        return -((1 - pt) ** GAMMA * torch.log(pt)).sum()

    @staticmethod
    def backward(ctx, grad_out):
        x, pt, y = ctx.saved_tensors
        return grad_out * (torch.sigmoid(x) - y), None  # BUG

    @staticmethod
    def example_inputs():
        return _focal_inputs()


# ------------------------------------------------------------------------ multi-class hinge
def _hinge_inputs():
    gen = torch.Generator().manual_seed(45)
    scores = torch.randn(5, 4, dtype=torch.float64, generator=gen) * 0.6
    target = torch.tensor([0, 3, 1, 1, 2])
    return scores, target


def _hinge_forward(ctx, scores, target):
    right = scores.gather(1, target[:, None])
    margins = (1 + scores - right).clamp(min=0).scatter(1, target[:, None], 0.0)
    ctx.save_for_backward(scores, target)
    return margins.sum() / scores.shape[0]


class SequesteredMultiMarginLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, scores, target):
        return _hinge_forward(ctx, scores, target)

    @staticmethod
    def backward(ctx, grad_out):
        scores, target = ctx.saved_tensors
        raw = 1 + scores - scores.gather(1, target[:, None])
        is_target = torch.zeros_like(raw, dtype=torch.bool).scatter_(1, target[:, None], True)
        active = ((raw > 0) & ~is_target).to(scores.dtype)
        grad = active.clone()
        grad.scatter_(1, target[:, None], -active.sum(1, keepdim=True))
        return grad * grad_out / active.shape[0], None

    @staticmethod
    def example_inputs():
        return _hinge_inputs()


class SequesteredMultiMarginLossTargetCounted(torch.autograd.Function):
    bug = {"kind": "region", "input": "scores",
           "note": "the active mask forgets to exclude the target column, whose margin is always 1 > 0"}

    @staticmethod
    def forward(ctx, scores, target):
        return _hinge_forward(ctx, scores, target)

    @staticmethod
    def backward(ctx, grad_out):
        scores, target = ctx.saved_tensors
        raw = 1 + scores - scores.gather(1, target[:, None])
        active = (raw > 0).to(scores.dtype)  # BUG
        grad = active.clone()
        grad.scatter_(1, target[:, None], -active.sum(1, keepdim=True))
        return grad * grad_out / active.shape[0], None

    @staticmethod
    def example_inputs():
        return _hinge_inputs()


# ------------------------------------------------------------------ cosine-similarity loss
class SequesteredCosineLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        na, nb = a.norm(dim=1, keepdim=True), b.norm(dim=1, keepdim=True)
        cos = (a * b).sum(1, keepdim=True) / (na * nb)
        ctx.save_for_backward(a, b, na, nb, cos)
        return (1 - cos).squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        a, b, na, nb, cos = ctx.saved_tensors
        g = -grad_out[:, None]
        da = g * (b / (na * nb) - cos * a / na ** 2)
        db = g * (a / (na * nb) - cos * b / nb ** 2)
        return da, db


class SequesteredCosineLossNormTermAdded(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "a",
           "note": "d cos / d a = b/(|a||b|) - cos a/|a|^2: the second term is added"}

    @staticmethod
    def forward(ctx, a, b):
        na, nb = a.norm(dim=1, keepdim=True), b.norm(dim=1, keepdim=True)
        cos = (a * b).sum(1, keepdim=True) / (na * nb)
        ctx.save_for_backward(a, b, na, nb, cos)
        return (1 - cos).squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        a, b, na, nb, cos = ctx.saved_tensors
        g = -grad_out[:, None]
        da = g * (b / (na * nb) + cos * a / na ** 2)  # BUG
        db = g * (a / (na * nb) - cos * b / nb ** 2)
        return da, db


# ------------------------------------------------------------------------------------ Huber
DELTA = 0.8


class SequesteredHuber(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        d = pred - target
        ctx.save_for_backward(d)
        small = d.abs() < DELTA
        return torch.where(small, 0.5 * d * d, DELTA * (d.abs() - 0.5 * DELTA))

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        slope = d.clamp(-DELTA, DELTA) * grad_out
        return slope, -slope


class SequesteredHuberTargetSameSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "target",
           "note": "the target's gradient is returned as the prediction's, without the minus of d = pred - target"}

    @staticmethod
    def forward(ctx, pred, target):
        d = pred - target
        ctx.save_for_backward(d)
        small = d.abs() < DELTA
        return torch.where(small, 0.5 * d * d, DELTA * (d.abs() - 0.5 * DELTA))

    @staticmethod
    def backward(ctx, grad_out):
        (d,) = ctx.saved_tensors
        slope = d.clamp(-DELTA, DELTA) * grad_out
        return slope, slope  # BUG


# --------------------------------------------------------------------------- KL divergence
def _kl_inputs():
    gen = torch.Generator().manual_seed(46)
    logp = torch.log_softmax(torch.randn(3, 4, dtype=torch.float64, generator=gen), 1)
    q = torch.softmax(torch.randn(3, 4, dtype=torch.float64, generator=gen), 1)
    return logp, q


class SequesteredKLDiv(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logp, q):
        ctx.save_for_backward(logp, q)
        return (q * (q.log() - logp)).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        logp, q = ctx.saved_tensors
        g = grad_out.unsqueeze(1)
        return -q * g, (q.log() - logp + 1) * g

    @staticmethod
    def example_inputs():
        return _kl_inputs()


class SequesteredKLDivTargetNoEntropyOne(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "q",
           "note": "d/dq of q log q is log q + 1: the + 1 is forgotten"}

    @staticmethod
    def forward(ctx, logp, q):
        ctx.save_for_backward(logp, q)
        return (q * (q.log() - logp)).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        logp, q = ctx.saved_tensors
        g = grad_out.unsqueeze(1)
        dq = (q.log() - logp) * g  # BUG
        return -q * g, dq

    @staticmethod
    def example_inputs():
        return _kl_inputs()


# --------------------------------------------------------- InfoNCE with a learnable temperature
def _nce_inputs():
    gen = torch.Generator().manual_seed(47)
    return (torch.randn(4, 3, dtype=torch.float64, generator=gen),
            torch.randn(4, 3, dtype=torch.float64, generator=gen),
            torch.tensor(0.8, dtype=torch.float64))


def _nce_forward(ctx, anchors, positives, temperature):
    sim = anchors @ positives.mT
    logp = torch.log_softmax(sim / temperature, dim=1)
    ctx.save_for_backward(anchors, positives, temperature, sim, logp)
    return -logp.diagonal().mean()


class SequesteredInfoNCE(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, anchors, positives, temperature):
        return _nce_forward(ctx, anchors, positives, temperature)

    @staticmethod
    def backward(ctx, grad_out):
        anchors, positives, temperature, sim, logp = ctx.saved_tensors
        n = sim.shape[0]
        dz = (logp.exp() - torch.eye(n, dtype=sim.dtype)) * grad_out / n
        da = dz @ positives / temperature
        dp = dz.mT @ anchors / temperature
        dt = -(dz * sim).sum() / temperature ** 2
        return da, dp, dt

    @staticmethod
    def example_inputs():
        return _nce_inputs()


class SequesteredInfoNCEPositivesUntransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "positives",
           "note": "sim = A P^T, so dP = dZ^T A; the backward uses dZ A"}

    @staticmethod
    def forward(ctx, anchors, positives, temperature):
        return _nce_forward(ctx, anchors, positives, temperature)

    @staticmethod
    def backward(ctx, grad_out):
        anchors, positives, temperature, sim, logp = ctx.saved_tensors
        n = sim.shape[0]
        dz = (logp.exp() - torch.eye(n, dtype=sim.dtype)) * grad_out / n
        da = dz @ positives / temperature
        dp = dz @ anchors / temperature  # BUG
        dt = -(dz * sim).sum() / temperature ** 2
        return da, dp, dt

    @staticmethod
    def example_inputs():
        return _nce_inputs()
