"""Cox proportional hazards: the partial likelihood with risk sets (Breslow, no ties).

Subjects are sorted by follow-up time, longest first, so the risk set of subject i (everyone still
under observation when i fails) is the prefix 0..i and its denominator is a cumsum of exp scores.
The adjoint of that prefix sum is a suffix sum (a reversed cumsum). ``event`` is a bool censoring
mask (True: the failure was observed).
"""
import torch


def _cox_inputs(n=8, seed=3):
    gen = torch.Generator().manual_seed(seed)
    eta = (0.7 * torch.randn(n, dtype=torch.float64, generator=gen)).requires_grad_()
    event = torch.tensor([True, False, True, True, False, True, False, True])[:n]
    return eta, event


def _suffix_sum(values):
    return torch.flip(torch.cumsum(torch.flip(values, dims=(0,)), dim=0), dims=(0,))


class UnchartedCoxPartialLikelihood(torch.autograd.Function):
    """Negative Cox log partial likelihood of linear predictors ``eta`` (N,), a scalar."""

    bug = None

    @staticmethod
    def forward(ctx, eta, event):
        risk = torch.cumsum(torch.exp(eta), dim=0)
        ctx.save_for_backward(eta, event, risk)
        return -torch.where(event, eta - torch.log(risk), torch.zeros_like(eta)).sum()

    @staticmethod
    def backward(ctx, grad):
        eta, event, risk = ctx.saved_tensors
        share = torch.where(event, 1.0 / risk, torch.zeros_like(risk))
        grad_eta = grad * (torch.exp(eta) * _suffix_sum(share) - event.to(eta.dtype))
        return grad_eta, None

    @staticmethod
    def example_inputs():
        return _cox_inputs()


class UnchartedCoxPartialLikelihoodStable(torch.autograd.Function):
    """The same likelihood with the max score shifted out of the exponentials (as in lifelines)."""

    bug = None

    @staticmethod
    def forward(ctx, eta, event):
        shift = eta.max()
        weights = torch.exp(eta - shift)
        risk = torch.cumsum(weights, dim=0)
        ctx.save_for_backward(weights, risk, event)
        log_risk = torch.log(risk) + shift
        return -(event.to(eta.dtype) * (eta - log_risk)).sum()

    @staticmethod
    def backward(ctx, grad):
        weights, risk, event = ctx.saved_tensors
        failed = event.to(weights.dtype)
        tail = torch.flip(torch.cumsum(torch.flip(failed / risk, dims=(0,)), dim=0), dims=(0,))
        return grad * (weights * tail - failed), None

    @staticmethod
    def example_inputs():
        return _cox_inputs(seed=4)


class UnchartedCoxRiskSetNoFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "eta",
           "note": "the adjoint of the prefix-sum risk set is a suffix sum over later failures; "
                   "written as a plain cumsum (no flips), so each subject collects the earlier failures"}

    @staticmethod
    def forward(ctx, eta, event):
        risk = torch.cumsum(torch.exp(eta), dim=0)
        ctx.save_for_backward(eta, event, risk)
        return -torch.where(event, eta - torch.log(risk), torch.zeros_like(eta)).sum()

    @staticmethod
    def backward(ctx, grad):
        eta, event, risk = ctx.saved_tensors
        share = torch.where(event, 1.0 / risk, torch.zeros_like(risk))
        tail = torch.cumsum(share, dim=0)  # BUG
        grad_eta = grad * (torch.exp(eta) * tail - event.to(eta.dtype))
        return grad_eta, None

    @staticmethod
    def example_inputs():
        return _cox_inputs()


class UnchartedCoxDropsEventTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "eta",
           "note": "only the risk-set (denominator) part is differentiated; the -event term from the "
                   "numerator eta_i of each observed failure is left out"}

    @staticmethod
    def forward(ctx, eta, event):
        risk = torch.cumsum(torch.exp(eta), dim=0)
        ctx.save_for_backward(eta, event, risk)
        return -torch.where(event, eta - torch.log(risk), torch.zeros_like(eta)).sum()

    @staticmethod
    def backward(ctx, grad):
        eta, event, risk = ctx.saved_tensors
        share = torch.where(event, 1.0 / risk, torch.zeros_like(risk))
        grad_eta = grad * torch.exp(eta) * _suffix_sum(share)  # BUG
        return grad_eta, None

    @staticmethod
    def example_inputs():
        return _cox_inputs()


class UnchartedCoxEventTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "eta",
           "note": "the numerator's event term is added instead of subtracted (the sign of the "
                   "likelihood and of the loss mixed up for one term only)"}

    @staticmethod
    def forward(ctx, eta, event):
        risk = torch.cumsum(torch.exp(eta), dim=0)
        ctx.save_for_backward(eta, event, risk)
        return -torch.where(event, eta - torch.log(risk), torch.zeros_like(eta)).sum()

    @staticmethod
    def backward(ctx, grad):
        eta, event, risk = ctx.saved_tensors
        share = torch.where(event, 1.0 / risk, torch.zeros_like(risk))
        grad_eta = grad * (torch.exp(eta) * _suffix_sum(share) + event.to(eta.dtype))  # BUG
        return grad_eta, None

    @staticmethod
    def example_inputs():
        return _cox_inputs()


class UnchartedCoxSoftmaxGuess(torch.autograd.Function):
    bug = {"kind": "none", "input": "eta",
           "note": "the gradient of a single multinomial logit over all subjects, "
                   "softmax(eta) * number of failures - event, ignoring the risk sets altogether"}

    @staticmethod
    def forward(ctx, eta, event):
        risk = torch.cumsum(torch.exp(eta), dim=0)
        ctx.save_for_backward(eta, event, risk)
        return -torch.where(event, eta - torch.log(risk), torch.zeros_like(eta)).sum()

    @staticmethod
    def backward(ctx, grad):
        eta, event, risk = ctx.saved_tensors
        failed = event.to(eta.dtype)
        grad_eta = grad * (torch.softmax(eta, dim=0) * failed.sum() - failed)  # BUG
        return grad_eta, None

    @staticmethod
    def example_inputs():
        return _cox_inputs()


def _linear_inputs(seed=5):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(5, 5, dtype=torch.float64, generator=gen).requires_grad_()
    beta = (0.5 * torch.randn(5, dtype=torch.float64, generator=gen)).requires_grad_()
    event = torch.tensor([True, True, False, True, False])
    return x, beta, event


class UnchartedCoxLinearScores(torch.autograd.Function):
    """The Cox loss of eta = x @ beta: covariates x (N, D) and coefficients beta (D,)."""

    bug = None

    @staticmethod
    def forward(ctx, x, beta, event):
        eta = x @ beta
        weights = torch.exp(eta)
        risk = torch.cumsum(weights, dim=0)
        ctx.save_for_backward(x, beta, weights, risk, event)
        return -torch.where(event, eta - torch.log(risk), torch.zeros_like(eta)).sum()

    @staticmethod
    def backward(ctx, grad):
        x, beta, weights, risk, event = ctx.saved_tensors
        share = torch.where(event, 1.0 / risk, torch.zeros_like(risk))
        grad_eta = grad * (weights * _suffix_sum(share) - event.to(x.dtype))
        grad_x = grad_beta = None
        if ctx.needs_input_grad[0]:
            grad_x = torch.outer(grad_eta, beta)
        if ctx.needs_input_grad[1]:
            grad_beta = x.mT @ grad_eta
        return grad_x, grad_beta, None

    @staticmethod
    def example_inputs():
        return _linear_inputs()


class UnchartedCoxLinearNoTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "beta",
           "note": "the coefficients' gradient is x @ grad_eta instead of x.T @ grad_eta "
                   "(runs because N = D)"}

    @staticmethod
    def forward(ctx, x, beta, event):
        eta = x @ beta
        weights = torch.exp(eta)
        risk = torch.cumsum(weights, dim=0)
        ctx.save_for_backward(x, beta, weights, risk, event)
        return -torch.where(event, eta - torch.log(risk), torch.zeros_like(eta)).sum()

    @staticmethod
    def backward(ctx, grad):
        x, beta, weights, risk, event = ctx.saved_tensors
        share = torch.where(event, 1.0 / risk, torch.zeros_like(risk))
        grad_eta = grad * (weights * _suffix_sum(share) - event.to(x.dtype))
        grad_x = grad_beta = None
        if ctx.needs_input_grad[0]:
            grad_x = torch.outer(grad_eta, beta)
        if ctx.needs_input_grad[1]:
            grad_beta = x @ grad_eta  # BUG
        return grad_x, grad_beta, None

    @staticmethod
    def example_inputs():
        return _linear_inputs()


class UnchartedCoxLinearCovariateWeights(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the covariates' gradient is the outer product of grad_eta with the saved risk "
                   "weights exp(eta) instead of with beta (the wrong saved tensor; N = D so it runs)"}

    @staticmethod
    def forward(ctx, x, beta, event):
        eta = x @ beta
        weights = torch.exp(eta)
        risk = torch.cumsum(weights, dim=0)
        ctx.save_for_backward(x, beta, weights, risk, event)
        return -torch.where(event, eta - torch.log(risk), torch.zeros_like(eta)).sum()

    @staticmethod
    def backward(ctx, grad):
        x, beta, weights, risk, event = ctx.saved_tensors
        share = torch.where(event, 1.0 / risk, torch.zeros_like(risk))
        grad_eta = grad * (weights * _suffix_sum(share) - event.to(x.dtype))
        grad_x = grad_beta = None
        if ctx.needs_input_grad[0]:
            grad_x = torch.outer(grad_eta, weights)  # BUG
        if ctx.needs_input_grad[1]:
            grad_beta = x.mT @ grad_eta
        return grad_x, grad_beta, None

    @staticmethod
    def example_inputs():
        return _linear_inputs()
