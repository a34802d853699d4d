"""Discrete-time survival: per-interval hazards, logistic and complementary log-log.

Subject i is observed through interval ``last[i]`` (int64, repeats allowed) and either fails there
(``event[i]`` True) or is censored at its end. The per-subject negative log-likelihood is
sum_{j < last} -log(1 - h_ij) + (event ? -log h_i,last : -log(1 - h_i,last)).
"""
import torch
import torch.nn.functional as F


def _logistic_inputs(seed=11):
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(4, 4, dtype=torch.float64, generator=gen).requires_grad_()
    last = torch.tensor([2, 0, 3, 2], dtype=torch.int64)
    event = torch.tensor([True, False, True, False])
    return logits, last, event


def _logistic_nll(logits, last, event):
    intervals = torch.arange(logits.shape[1])
    before = intervals[None, :] < last[:, None]
    survive = -F.softplus(logits)          # log(1 - sigmoid(z))
    fail = -F.softplus(-logits)            # log sigmoid(z)
    at_last = torch.where(event, fail.gather(1, last[:, None]).squeeze(1),
                          survive.gather(1, last[:, None]).squeeze(1))
    return -((survive * before).sum(dim=1) + at_last)


class UnchartedDiscreteHazardNLL(torch.autograd.Function):
    """Per-subject NLL (N,) of logistic hazards ``logits`` (N, J)."""

    bug = None

    @staticmethod
    def forward(ctx, logits, last, event):
        ctx.save_for_backward(logits, last, event)
        return _logistic_nll(logits, last, event)

    @staticmethod
    def backward(ctx, grad):
        logits, last, event = ctx.saved_tensors
        hazard = torch.sigmoid(logits)
        upto = torch.arange(logits.shape[1])[None, :] <= last[:, None]
        local = torch.where(upto, hazard, torch.zeros_like(hazard))
        local.scatter_add_(1, last[:, None], -event.to(logits.dtype)[:, None])
        return grad[:, None] * local, None, None

    @staticmethod
    def example_inputs():
        return _logistic_inputs()


class UnchartedDiscreteHazardNLLOneHot(torch.autograd.Function):
    """The same NLL with the failure term placed by an equality mask instead of scatter_add_."""

    bug = None

    @staticmethod
    def forward(ctx, logits, last, event):
        ctx.save_for_backward(logits, last, event)
        return _logistic_nll(logits, last, event)

    @staticmethod
    def backward(ctx, grad):
        logits, last, event = ctx.saved_tensors
        intervals = torch.arange(logits.shape[1]).view(1, -1)
        exit_at = last.view(-1, 1)
        hazard = torch.sigmoid(logits)
        failed_here = (intervals == exit_at) & event.view(-1, 1)
        local = hazard * (intervals <= exit_at).to(logits.dtype) - failed_here.to(logits.dtype)
        return grad.view(-1, 1) * local, None, None

    @staticmethod
    def example_inputs():
        return _logistic_inputs(seed=12)


class UnchartedHazardExitIntervalDropped(torch.autograd.Function):
    bug = {"kind": "region", "input": "logits",
           "note": "the at-risk mask is j < last, so the exit interval's own hazard term is zeroed "
                   "(it belongs to both censored and failed subjects: j <= last)"}

    @staticmethod
    def forward(ctx, logits, last, event):
        ctx.save_for_backward(logits, last, event)
        return _logistic_nll(logits, last, event)

    @staticmethod
    def backward(ctx, grad):
        logits, last, event = ctx.saved_tensors
        hazard = torch.sigmoid(logits)
        upto = torch.arange(logits.shape[1])[None, :] < last[:, None]  # BUG
        local = torch.where(upto, hazard, torch.zeros_like(hazard))
        local.scatter_add_(1, last[:, None], -event.to(logits.dtype)[:, None])
        return grad[:, None] * local, None, None

    @staticmethod
    def example_inputs():
        return _logistic_inputs()


class UnchartedHazardPastExit(torch.autograd.Function):
    bug = {"kind": "region", "input": "logits",
           "note": "no at-risk mask at all: intervals after the subject left the study get the "
                   "hazard term too, though they are not in the likelihood"}

    @staticmethod
    def forward(ctx, logits, last, event):
        ctx.save_for_backward(logits, last, event)
        return _logistic_nll(logits, last, event)

    @staticmethod
    def backward(ctx, grad):
        logits, last, event = ctx.saved_tensors
        local = torch.sigmoid(logits)  # BUG
        local.scatter_add_(1, last[:, None], -event.to(logits.dtype)[:, None])
        return grad[:, None] * local, None, None

    @staticmethod
    def example_inputs():
        return _logistic_inputs()


class UnchartedHazardFailureScatteredOverSubjects(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "logits",
           "note": "the -event term is scattered along dim 0 (subjects) instead of dim 1 "
                   "(intervals); runs because N = J"}

    @staticmethod
    def forward(ctx, logits, last, event):
        ctx.save_for_backward(logits, last, event)
        return _logistic_nll(logits, last, event)

    @staticmethod
    def backward(ctx, grad):
        logits, last, event = ctx.saved_tensors
        hazard = torch.sigmoid(logits)
        upto = torch.arange(logits.shape[1])[None, :] <= last[:, None]
        local = torch.where(upto, hazard, torch.zeros_like(hazard))
        local.scatter_add_(0, last[:, None], -event.to(logits.dtype)[:, None])  # BUG
        return grad[:, None] * local, None, None

    @staticmethod
    def example_inputs():
        return _logistic_inputs()


class UnchartedHazardIgnoresSubjectWeights(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "logits",
           "note": "returns the local derivative of each subject's NLL without multiplying by the "
                   "incoming per-subject gradient (as if the NLLs were always summed)"}

    @staticmethod
    def forward(ctx, logits, last, event):
        ctx.save_for_backward(logits, last, event)
        return _logistic_nll(logits, last, event)

    @staticmethod
    def backward(ctx, grad):
        logits, last, event = ctx.saved_tensors
        hazard = torch.sigmoid(logits)
        upto = torch.arange(logits.shape[1])[None, :] <= last[:, None]
        local = torch.where(upto, hazard, torch.zeros_like(hazard))
        local.scatter_add_(1, last[:, None], -event.to(logits.dtype)[:, None])
        return local, None, None  # BUG

    @staticmethod
    def example_inputs():
        return _logistic_inputs()


class UnchartedHazardGradRowBroadcast(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "logits",
           "note": "the per-subject gradient (N,) multiplies the (N, J) table without [:, None], so "
                   "it broadcasts along intervals (runs because N = J)"}

    @staticmethod
    def forward(ctx, logits, last, event):
        ctx.save_for_backward(logits, last, event)
        return _logistic_nll(logits, last, event)

    @staticmethod
    def backward(ctx, grad):
        logits, last, event = ctx.saved_tensors
        hazard = torch.sigmoid(logits)
        upto = torch.arange(logits.shape[1])[None, :] <= last[:, None]
        local = torch.where(upto, hazard, torch.zeros_like(hazard))
        local.scatter_add_(1, last[:, None], -event.to(logits.dtype)[:, None])
        return grad * local, None, None  # BUG

    @staticmethod
    def example_inputs():
        return _logistic_inputs()


# ---------------------------------------------------------------- grouped proportional hazards
def _cloglog_inputs(n=5, j=4, seed=21):
    gen = torch.Generator().manual_seed(seed)
    alpha = (0.4 * torch.randn(j, dtype=torch.float64, generator=gen) - 1.0).requires_grad_()
    eta = (0.5 * torch.randn(n, dtype=torch.float64, generator=gen)).requires_grad_()
    last = torch.tensor([1, 3, 0, 2, 3], dtype=torch.int64)[:n]
    event = torch.tensor([True, False, True, True, False])[:n]
    return alpha, eta, last, event


def _cloglog_masks(last, event, j):
    intervals = torch.arange(j)[None, :]
    at = intervals == last[:, None]
    survived = (intervals < last[:, None]) | (at & ~event[:, None])
    return survived, at & event[:, None]


class UnchartedClogLogHazardNLL(torch.autograd.Function):
    """h_ij = 1 - exp(-exp(alpha_j + eta_i)): baseline ``alpha`` (J,), risk scores ``eta`` (N,)."""

    bug = None

    @staticmethod
    def forward(ctx, alpha, eta, last, event):
        cum = torch.exp(alpha[None, :] + eta[:, None])
        survived, failed = _cloglog_masks(last, event, alpha.shape[0])
        ctx.save_for_backward(cum, survived, failed)
        zero = torch.zeros_like(cum)
        return (torch.where(survived, cum, zero)
                - torch.where(failed, torch.log(-torch.expm1(-cum)), zero)).sum(dim=1)

    @staticmethod
    def backward(ctx, grad):
        cum, survived, failed = ctx.saved_tensors
        zero = torch.zeros_like(cum)
        local = torch.where(survived, cum, zero) - torch.where(failed, cum / torch.expm1(cum), zero)
        table = grad[:, None] * local
        return table.sum(dim=0), table.sum(dim=1), None, None

    @staticmethod
    def example_inputs():
        return _cloglog_inputs()


class UnchartedClogLogScoresNotReduced(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "eta",
           "note": "the (N, J) table is returned for eta (N,) without summing over intervals; "
                   "torch refuses it (N != J), so this one fails by raising"}

    @staticmethod
    def forward(ctx, alpha, eta, last, event):
        cum = torch.exp(alpha[None, :] + eta[:, None])
        survived, failed = _cloglog_masks(last, event, alpha.shape[0])
        ctx.save_for_backward(cum, survived, failed)
        zero = torch.zeros_like(cum)
        return (torch.where(survived, cum, zero)
                - torch.where(failed, torch.log(-torch.expm1(-cum)), zero)).sum(dim=1)

    @staticmethod
    def backward(ctx, grad):
        cum, survived, failed = ctx.saved_tensors
        zero = torch.zeros_like(cum)
        local = torch.where(survived, cum, zero) - torch.where(failed, cum / torch.expm1(cum), zero)
        table = grad[:, None] * local
        return table.sum(dim=0), table, None, None  # BUG

    @staticmethod
    def example_inputs():
        return _cloglog_inputs()


class UnchartedClogLogBaselineWrongAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "alpha",
           "note": "the baseline's gradient sums the table over intervals (dim 1) instead of over "
                   "subjects (dim 0); N = J here so it runs"}

    @staticmethod
    def forward(ctx, alpha, eta, last, event):
        cum = torch.exp(alpha[None, :] + eta[:, None])
        survived, failed = _cloglog_masks(last, event, alpha.shape[0])
        ctx.save_for_backward(cum, survived, failed)
        zero = torch.zeros_like(cum)
        return (torch.where(survived, cum, zero)
                - torch.where(failed, torch.log(-torch.expm1(-cum)), zero)).sum(dim=1)

    @staticmethod
    def backward(ctx, grad):
        cum, survived, failed = ctx.saved_tensors
        zero = torch.zeros_like(cum)
        local = torch.where(survived, cum, zero) - torch.where(failed, cum / torch.expm1(cum), zero)
        table = grad[:, None] * local
        return table.sum(dim=1), table.sum(dim=1), None, None  # BUG

    @staticmethod
    def example_inputs():
        return _cloglog_inputs(n=4, j=4)


class UnchartedClogLogNoFailureTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "alpha",
           "note": "only the survival part exp(z) is differentiated; the observed failures' "
                   "-exp(z)/expm1(exp(z)) term is left out (both inputs' gradients are wrong)"}

    @staticmethod
    def forward(ctx, alpha, eta, last, event):
        cum = torch.exp(alpha[None, :] + eta[:, None])
        survived, failed = _cloglog_masks(last, event, alpha.shape[0])
        ctx.save_for_backward(cum, survived, failed)
        zero = torch.zeros_like(cum)
        return (torch.where(survived, cum, zero)
                - torch.where(failed, torch.log(-torch.expm1(-cum)), zero)).sum(dim=1)

    @staticmethod
    def backward(ctx, grad):
        cum, survived, failed = ctx.saved_tensors
        zero = torch.zeros_like(cum)
        local = torch.where(survived, cum, zero)  # BUG
        table = grad[:, None] * local
        return table.sum(dim=0), table.sum(dim=1), None, None

    @staticmethod
    def example_inputs():
        return _cloglog_inputs()


class UnchartedClogLogBaselineAveraged(torch.autograd.Function):
    bug = {"kind": "scale", "input": "alpha",
           "note": "the baseline's gradient is averaged over subjects (divided by N) although the "
                   "per-subject NLLs are not averaged in forward"}

    @staticmethod
    def forward(ctx, alpha, eta, last, event):
        cum = torch.exp(alpha[None, :] + eta[:, None])
        survived, failed = _cloglog_masks(last, event, alpha.shape[0])
        ctx.save_for_backward(cum, survived, failed)
        zero = torch.zeros_like(cum)
        return (torch.where(survived, cum, zero)
                - torch.where(failed, torch.log(-torch.expm1(-cum)), zero)).sum(dim=1)

    @staticmethod
    def backward(ctx, grad):
        cum, survived, failed = ctx.saved_tensors
        zero = torch.zeros_like(cum)
        local = torch.where(survived, cum, zero) - torch.where(failed, cum / torch.expm1(cum), zero)
        table = grad[:, None] * local
        grad_alpha = table.sum(dim=0) / table.shape[0]  # BUG
        return grad_alpha, table.sum(dim=1), None, None

    @staticmethod
    def example_inputs():
        return _cloglog_inputs()
