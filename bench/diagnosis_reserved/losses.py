"""Losses with integer targets and robust regression losses, hand-written backwards."""
import torch

SMOOTH = 0.1
QUANTILE = 0.3


def _logits_and_targets(seed, n=4, c=5):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, c, dtype=torch.float64, generator=g),
            torch.randint(0, c, (n,), generator=g))



class ReservedCrossEntropy(torch.autograd.Function):
    """Mean cross entropy of logits (N, C) against integer targets."""
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).mean()

    @staticmethod
    def backward(ctx, grad_out):
        logp, target = ctx.saved_tensors
        grad = logp.exp()
        grad[torch.arange(len(target)), target] -= 1
        return grad * grad_out / len(target), None

    @staticmethod
    def example_inputs():
        return _logits_and_targets(41)


class ReservedCrossEntropyNotAveraged(torch.autograd.Function):
    """Mean cross entropy of logits (N, C) against integer targets."""
    bug = {'kind': 'scale', 'input': 'logits', 'note': 'forgets to divide by the batch size of the mean reduction'}

    @staticmethod
    def forward(ctx, logits, target):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp, target)
        return -logp.gather(1, target[:, None]).mean()

    @staticmethod
    def backward(ctx, grad_out):
        logp, target = ctx.saved_tensors
        grad = logp.exp()
        grad[torch.arange(len(target)), target] -= 1
        return grad * grad_out, None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_and_targets(41)


class ReservedNLLIgnoreIndex(torch.autograd.Function):
    """NLL loss on log-probabilities with ignore_index=-1, averaged over the kept rows."""
    bug = None

    @staticmethod
    def forward(ctx, logp, target):
        keep = target != -1
        safe = target.clamp(min=0)
        picked = logp.gather(1, safe[:, None]).squeeze(1)
        ctx.save_for_backward(safe, keep)
        ctx.shape = logp.shape
        return -(picked * keep).sum() / keep.sum()

    @staticmethod
    def backward(ctx, grad_out):
        safe, keep = ctx.saved_tensors
        weight = -keep.to(grad_out.dtype) / keep.sum()
        grad = torch.zeros(ctx.shape, dtype=grad_out.dtype)
        grad.scatter_(1, safe[:, None], weight[:, None])
        return grad * grad_out, None

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(42)
        return (torch.randn(5, 4, dtype=torch.float64, generator=g).log_softmax(1),
                torch.tensor([2, -1, 0, 3, -1]))


class ReservedNLLIgnoreIndexIgnoredRowsKept(torch.autograd.Function):
    """NLL loss on log-probabilities with ignore_index=-1, averaged over the kept rows."""
    bug = {'kind': 'region', 'input': 'logp', 'note': 'the ignored rows (target -1, clamped to class 0) still receive a gradient'}

    @staticmethod
    def forward(ctx, logp, target):
        keep = target != -1
        safe = target.clamp(min=0)
        picked = logp.gather(1, safe[:, None]).squeeze(1)
        ctx.save_for_backward(safe, keep)
        ctx.shape = logp.shape
        return -(picked * keep).sum() / keep.sum()

    @staticmethod
    def backward(ctx, grad_out):
        safe, keep = ctx.saved_tensors
        weight = -torch.ones(len(safe), dtype=grad_out.dtype) / keep.sum()  # BUG
        grad = torch.zeros(ctx.shape, dtype=grad_out.dtype)
        grad.scatter_(1, safe[:, None], weight[:, None])
        return grad * grad_out, None

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(42)
        return (torch.randn(5, 4, dtype=torch.float64, generator=g).log_softmax(1),
                torch.tensor([2, -1, 0, 3, -1]))


class ReservedLabelSmoothing(torch.autograd.Function):
    """Per-sample cross entropy with label smoothing 0.1 (reduction='none')."""
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        c = logits.shape[1]
        q = torch.full_like(logits, SMOOTH / c)
        q.scatter_add_(1, target[:, None], torch.full_like(logits[:, :1], 1 - SMOOTH))
        logp = logits.log_softmax(1)
        ctx.save_for_backward(logp, target)
        return -(q * logp).sum(1)

    @staticmethod
    def backward(ctx, grad_out):
        logp, target = ctx.saved_tensors
        c = logp.shape[1]
        q = torch.nn.functional.one_hot(target, c).to(logp.dtype) * (1 - SMOOTH) + SMOOTH / c
        return (logp.exp() - q) * grad_out[:, None], None

    @staticmethod
    def example_inputs():
        return _logits_and_targets(43)


class ReservedLabelSmoothingNoUpstream(torch.autograd.Function):
    """Per-sample cross entropy with label smoothing 0.1 (reduction='none')."""
    bug = {'kind': 'ignores_grad_output', 'input': 'logits', 'note': 'returns the local gradient without multiplying by grad_out'}

    @staticmethod
    def forward(ctx, logits, target):
        c = logits.shape[1]
        q = torch.full_like(logits, SMOOTH / c)
        q.scatter_add_(1, target[:, None], torch.full_like(logits[:, :1], 1 - SMOOTH))
        logp = logits.log_softmax(1)
        ctx.save_for_backward(logp, target)
        return -(q * logp).sum(1)

    @staticmethod
    def backward(ctx, grad_out):
        logp, target = ctx.saved_tensors
        c = logp.shape[1]
        q = torch.nn.functional.one_hot(target, c).to(logp.dtype) * (1 - SMOOTH) + SMOOTH / c
        return logp.exp() - q, None  # BUG

    @staticmethod
    def example_inputs():
        return _logits_and_targets(43)


class ReservedLabelSmoothingNoUniformPart(torch.autograd.Function):
    """Per-sample cross entropy with label smoothing 0.1 (reduction='none')."""
    bug = {'kind': 'missing_term', 'input': 'logits', 'note': 'the smoothed target forgets the uniform eps / C part'}

    @staticmethod
    def forward(ctx, logits, target):
        c = logits.shape[1]
        q = torch.full_like(logits, SMOOTH / c)
        q.scatter_add_(1, target[:, None], torch.full_like(logits[:, :1], 1 - SMOOTH))
        logp = logits.log_softmax(1)
        ctx.save_for_backward(logp, target)
        return -(q * logp).sum(1)

    @staticmethod
    def backward(ctx, grad_out):
        logp, target = ctx.saved_tensors
        c = logp.shape[1]
        q = torch.nn.functional.one_hot(target, c).to(logp.dtype) * (1 - SMOOTH)  # BUG
        return (logp.exp() - q) * grad_out[:, None], None

    @staticmethod
    def example_inputs():
        return _logits_and_targets(43)


class ReservedFocalLoss(torch.autograd.Function):
    """Multi-class focal loss per sample, gamma = 2: -(1 - p_t)^2 log p_t."""
    bug = None

    @staticmethod
    def forward(ctx, logits, target):
        p = logits.softmax(1)
        pt = p.gather(1, target[:, None]).squeeze(1)
        ctx.save_for_backward(p, pt, target)
        return -(1 - pt) ** 2 * pt.log()

    @staticmethod
    def backward(ctx, grad_out):
        p, pt, target = ctx.saved_tensors
        dl_dpt = 2 * (1 - pt) * pt.log() - (1 - pt) ** 2 / pt
        onehot = torch.zeros_like(p).scatter_(1, target[:, None], 1.0)
        grad = (dl_dpt * pt * grad_out)[:, None] * (onehot - p)
        return grad, None

    @staticmethod
    def example_inputs():
        return _logits_and_targets(44)


class ReservedFocalLossCrossEntropyGradient(torch.autograd.Function):
    """Multi-class focal loss per sample, gamma = 2: -(1 - p_t)^2 log p_t."""
    bug = {'kind': 'none', 'input': 'logits', 'note': 'uses the plain cross-entropy gradient p - onehot for the focal loss'}

    @staticmethod
    def forward(ctx, logits, target):
        p = logits.softmax(1)
        pt = p.gather(1, target[:, None]).squeeze(1)
        ctx.save_for_backward(p, pt, target)
        return -(1 - pt) ** 2 * pt.log()

    @staticmethod
    def backward(ctx, grad_out):
        p, pt, target = ctx.saved_tensors
        dl_dpt = 2 * (1 - pt) * pt.log() - (1 - pt) ** 2 / pt
        onehot = torch.zeros_like(p).scatter_(1, target[:, None], 1.0)
        grad = grad_out[:, None] * (p - onehot)  # BUG
        return grad, None

    @staticmethod
    def example_inputs():
        return _logits_and_targets(44)


class ReservedDistillKL(torch.autograd.Function):
    """Distillation: T^2 * mean over rows of KL(softmax(teacher/T) || softmax(student/T)), T = 2."""
    bug = None
    T = 2.0

    @staticmethod
    def forward(ctx, student, teacher):
        t = ReservedDistillKL.T
        log_ps, log_pt = (student / t).log_softmax(-1), (teacher / t).log_softmax(-1)
        ctx.save_for_backward(log_ps, log_pt)
        return t * t * (log_pt.exp() * (log_pt - log_ps)).sum(-1).mean()

    @staticmethod
    def backward(ctx, grad_out):
        log_ps, log_pt = ctx.saved_tensors
        t, n = ReservedDistillKL.T, log_ps.shape[0]
        ps, pt = log_ps.exp(), log_pt.exp()
        grad_student = t / n * (ps - pt)
        diff = log_pt - log_ps
        grad_teacher = t / n * pt * (diff - (pt * diff).sum(-1, keepdim=True))
        return grad_out * grad_student, grad_out * grad_teacher


class ReservedDistillKLTeacherWeightStudent(torch.autograd.Function):
    """Distillation: T^2 * mean over rows of KL(softmax(teacher/T) || softmax(student/T)), T = 2."""
    bug = {'kind': 'wrong_variable', 'input': 'teacher', 'note': "weights the teacher gradient by the student's probabilities instead of the teacher's"}
    T = 2.0

    @staticmethod
    def forward(ctx, student, teacher):
        t = ReservedDistillKLTeacherWeightStudent.T
        log_ps, log_pt = (student / t).log_softmax(-1), (teacher / t).log_softmax(-1)
        ctx.save_for_backward(log_ps, log_pt)
        return t * t * (log_pt.exp() * (log_pt - log_ps)).sum(-1).mean()

    @staticmethod
    def backward(ctx, grad_out):
        log_ps, log_pt = ctx.saved_tensors
        t, n = ReservedDistillKLTeacherWeightStudent.T, log_ps.shape[0]
        ps, pt = log_ps.exp(), log_pt.exp()
        grad_student = t / n * (ps - pt)
        diff = log_pt - log_ps
        grad_teacher = t / n * ps * (diff - (pt * diff).sum(-1, keepdim=True))  # BUG
        return grad_out * grad_student, grad_out * grad_teacher


class ReservedGaussianNLL(torch.autograd.Function):
    """Gaussian negative log-likelihood with learned log-variance, elementwise."""
    bug = None

    @staticmethod
    def forward(ctx, mean, log_var, target):
        ctx.save_for_backward(mean, log_var, target)
        return 0.5 * (log_var + (target - mean) ** 2 * torch.exp(-log_var))

    @staticmethod
    def backward(ctx, grad_out):
        mean, log_var, target = ctx.saved_tensors
        inv_var = torch.exp(-log_var)
        r = target - mean
        g_mean = -grad_out * r * inv_var
        g_log_var = 0.5 * grad_out * (1 - r * r * inv_var)
        return g_mean, g_log_var, -g_mean


class ReservedGaussianNLLVarianceSign(torch.autograd.Function):
    """Gaussian negative log-likelihood with learned log-variance, elementwise."""
    bug = {'kind': 'term_sign', 'input': 'log_var', 'note': 'the squared-residual term of the log-variance gradient has a plus sign'}

    @staticmethod
    def forward(ctx, mean, log_var, target):
        ctx.save_for_backward(mean, log_var, target)
        return 0.5 * (log_var + (target - mean) ** 2 * torch.exp(-log_var))

    @staticmethod
    def backward(ctx, grad_out):
        mean, log_var, target = ctx.saved_tensors
        inv_var = torch.exp(-log_var)
        r = target - mean
        g_mean = -grad_out * r * inv_var
        g_log_var = 0.5 * grad_out * (1 + r * r * inv_var)  # BUG
        return g_mean, g_log_var, -g_mean


class ReservedPinballLoss(torch.autograd.Function):
    """Pinball (quantile) loss at q = 0.3, elementwise."""
    bug = None

    @staticmethod
    def forward(ctx, pred, target):
        diff = target - pred
        ctx.save_for_backward(diff)
        return torch.maximum(QUANTILE * diff, (QUANTILE - 1) * diff)

    @staticmethod
    def backward(ctx, grad_out):
        (diff,) = ctx.saved_tensors
        slope = torch.where(diff > 0, QUANTILE, QUANTILE - 1)
        return -grad_out * slope, grad_out * slope


class ReservedPinballLossBranchesExchanged(torch.autograd.Function):
    """Pinball (quantile) loss at q = 0.3, elementwise."""
    bug = {'kind': 'region', 'input': 'pred', 'note': 'exchanges the two slopes: q where the residual is negative and q - 1 where positive'}

    @staticmethod
    def forward(ctx, pred, target):
        diff = target - pred
        ctx.save_for_backward(diff)
        return torch.maximum(QUANTILE * diff, (QUANTILE - 1) * diff)

    @staticmethod
    def backward(ctx, grad_out):
        (diff,) = ctx.saved_tensors
        slope = torch.where(diff > 0, QUANTILE - 1, QUANTILE)  # BUG
        return -grad_out * slope, grad_out * slope


class ReservedCharbonnier(torch.autograd.Function):
    """Charbonnier loss sqrt((x - y)^2 + eps^2), elementwise."""
    bug = None
    eps = 1e-2

    @staticmethod
    def forward(ctx, x, y):
        d = x - y
        out = torch.sqrt(d * d + ReservedCharbonnier.eps ** 2)
        ctx.save_for_backward(d, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        d, out = ctx.saved_tensors
        g = grad_out * d / out
        return g, -g


class ReservedCharbonnierTargetSign(torch.autograd.Function):
    """Charbonnier loss sqrt((x - y)^2 + eps^2), elementwise."""
    bug = {'kind': 'sign', 'input': 'y', 'note': "the target's gradient is returned with the input's sign"}
    eps = 1e-2

    @staticmethod
    def forward(ctx, x, y):
        d = x - y
        out = torch.sqrt(d * d + ReservedCharbonnierTargetSign.eps ** 2)
        ctx.save_for_backward(d, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        d, out = ctx.saved_tensors
        g = grad_out * d / out
        return g, g  # BUG


class ReservedTukeyLoss(torch.autograd.Function):
    """Tukey biweight loss of a residual, c = 1.5: flat beyond |r| > c."""
    bug = None
    c = 1.5

    @staticmethod
    def forward(ctx, r):
        c = ReservedTukeyLoss.c
        inside = r.abs() <= c
        u = 1 - (r / c) ** 2
        ctx.save_for_backward(r, inside)
        return torch.where(inside, c * c / 6 * (1 - u ** 3), torch.full_like(r, c * c / 6))

    @staticmethod
    def backward(ctx, grad_out):
        r, inside = ctx.saved_tensors
        psi = torch.where(inside, r * (1 - (r / ReservedTukeyLoss.c) ** 2) ** 2, torch.zeros_like(r))
        return grad_out * psi


class ReservedTukeyLossHuberPsi(torch.autograd.Function):
    """Tukey biweight loss of a residual, c = 1.5: flat beyond |r| > c."""
    bug = {'kind': 'none', 'input': 'r', 'note': "uses Huber's psi (the clamped residual) instead of Tukey's redescending one"}
    c = 1.5

    @staticmethod
    def forward(ctx, r):
        c = ReservedTukeyLossHuberPsi.c
        inside = r.abs() <= c
        u = 1 - (r / c) ** 2
        ctx.save_for_backward(r, inside)
        return torch.where(inside, c * c / 6 * (1 - u ** 3), torch.full_like(r, c * c / 6))

    @staticmethod
    def backward(ctx, grad_out):
        r, inside = ctx.saved_tensors
        psi = r.clamp(-ReservedTukeyLossHuberPsi.c, ReservedTukeyLossHuberPsi.c)  # BUG
        return grad_out * psi
