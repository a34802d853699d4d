"""Capture-recapture likelihoods and three deliberate estimators from ecological pipelines.

A closed-population model M_t conditioned on being caught at least once: capture histories
(M animals x K occasions, bool) and per-occasion capture logits, NLL =
-sum y log p + (1 - y) log(1 - p) + M log(1 - prod_j (1 - p_j)). A site-level detection model with
an int64 site per animal (repeats) and a caught count out of K occasions. Then a straight-through
abundance rounding, a smooth surrogate for a hard detection threshold and a gradient reversal layer
(site-invariant features for a species distribution model).
"""
import torch
import torch.nn.functional as F


def _closed_inputs():
    logit_p = torch.tensor([-0.4, 0.3, -1.0, 0.8, 0.1], dtype=torch.float64, requires_grad=True)
    histories = torch.tensor([[True, False, False, True, False],
                              [False, True, False, True, True],
                              [True, True, False, False, False],
                              [False, False, True, True, False],
                              [False, True, False, False, True]])
    return logit_p, histories


def _closed_nll(logit_p, histories):
    caught = histories.to(logit_p.dtype)
    log_p, log_q = F.logsigmoid(logit_p), F.logsigmoid(-logit_p)
    unconditional = -(caught * log_p + (1 - caught) * log_q).sum()
    never_caught = log_q.sum()                  # log prod_j (1 - p_j)
    return unconditional + caught.shape[0] * torch.log(-torch.expm1(never_caught))


class UnchartedClosedCaptureNLL(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logit_p, histories):
        ctx.save_for_backward(logit_p, histories)
        return _closed_nll(logit_p, histories)

    @staticmethod
    def backward(ctx, grad):
        logit_p, histories = ctx.saved_tensors
        caught = histories.to(logit_p.dtype)
        animals = caught.shape[0]
        p = torch.sigmoid(logit_p)
        missed_all = torch.exp(F.logsigmoid(-logit_p).sum())
        per_occasion = caught.sum(dim=0)
        conditioning = animals * missed_all * p / (1 - missed_all)
        return grad * (animals * p - per_occasion + conditioning), None

    @staticmethod
    def example_inputs():
        return _closed_inputs()


class UnchartedClosedCaptureConditioningSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "logit_p",
           "note": "the term from conditioning on capture, M Q p / (1 - Q), is subtracted instead "
                   "of added"}

    @staticmethod
    def forward(ctx, logit_p, histories):
        ctx.save_for_backward(logit_p, histories)
        return _closed_nll(logit_p, histories)

    @staticmethod
    def backward(ctx, grad):
        logit_p, histories = ctx.saved_tensors
        caught = histories.to(logit_p.dtype)
        animals = caught.shape[0]
        p = torch.sigmoid(logit_p)
        missed_all = torch.exp(F.logsigmoid(-logit_p).sum())
        per_occasion = caught.sum(dim=0)
        conditioning = animals * missed_all * p / (1 - missed_all)
        return grad * (animals * p - per_occasion - conditioning), None  # BUG

    @staticmethod
    def example_inputs():
        return _closed_inputs()


class UnchartedClosedCapturePerAnimalCounts(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "logit_p",
           "note": "the captures per occasion are summed over occasions (dim 1, captures per "
                   "animal) instead of over animals (dim 0); M = K so it runs"}

    @staticmethod
    def forward(ctx, logit_p, histories):
        ctx.save_for_backward(logit_p, histories)
        return _closed_nll(logit_p, histories)

    @staticmethod
    def backward(ctx, grad):
        logit_p, histories = ctx.saved_tensors
        caught = histories.to(logit_p.dtype)
        animals = caught.shape[0]
        p = torch.sigmoid(logit_p)
        missed_all = torch.exp(F.logsigmoid(-logit_p).sum())
        per_occasion = caught.sum(dim=1)  # BUG
        conditioning = animals * missed_all * p / (1 - missed_all)
        return grad * (animals * p - per_occasion + conditioning), None

    @staticmethod
    def example_inputs():
        return _closed_inputs()


class UnchartedClosedCaptureProbabilityScale(torch.autograd.Function):
    bug = {"kind": "none", "input": "logit_p",
           "note": "the binomial score with respect to p, (M - Y)/(1 - p) - Y/p, returned for the "
                   "logits (no chain rule through the sigmoid) and without the conditioning term"}

    @staticmethod
    def forward(ctx, logit_p, histories):
        ctx.save_for_backward(logit_p, histories)
        return _closed_nll(logit_p, histories)

    @staticmethod
    def backward(ctx, grad):
        logit_p, histories = ctx.saved_tensors
        caught = histories.to(logit_p.dtype)
        animals = caught.shape[0]
        p = torch.sigmoid(logit_p)
        per_occasion = caught.sum(dim=0)
        return grad * ((animals - per_occasion) / (1 - p) - per_occasion / p), None  # BUG

    @staticmethod
    def example_inputs():
        return _closed_inputs()


# --------------------------------------------------------------------- site-level detection
def _site_inputs():
    site_logit = torch.tensor([0.2, -0.7, 1.1, -0.3], dtype=torch.float64, requires_grad=True)
    site = torch.tensor([0, 2, 2, 1, 3, 0, 2, 1], dtype=torch.int64)
    caught = torch.tensor([2.0, 4.0, 3.0, 0.0, 1.0, 3.0, 5.0, 1.0], dtype=torch.float64)
    return site_logit, site, caught, 5


def _site_nll(site_logit, site, caught, occasions):
    z = site_logit.gather(0, site)
    return -(caught * F.logsigmoid(z) + (occasions - caught) * F.logsigmoid(-z))


class UnchartedSiteDetectionNLL(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, site_logit, site, caught, occasions):
        ctx.save_for_backward(site_logit, site, caught)
        ctx.occasions = occasions
        return _site_nll(site_logit, site, caught, occasions)

    @staticmethod
    def backward(ctx, grad):
        site_logit, site, caught = ctx.saved_tensors
        p = torch.sigmoid(site_logit.gather(0, site))
        per_animal = grad * (ctx.occasions * p - caught)
        return torch.zeros_like(site_logit).scatter_add_(0, site, per_animal), None, None, None

    @staticmethod
    def example_inputs():
        return _site_inputs()


class UnchartedSiteDetectionIndexAdd(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, site_logit, site, caught, occasions):
        ctx.save_for_backward(site_logit, site, caught)
        ctx.occasions = occasions
        return _site_nll(site_logit, site, caught, occasions)

    @staticmethod
    def backward(ctx, grad):
        site_logit, site, caught = ctx.saved_tensors
        p = torch.sigmoid(site_logit[site])
        missed = ctx.occasions - caught
        per_animal = grad * (missed * p - caught * (1 - p))
        return torch.zeros_like(site_logit).index_add_(0, site, per_animal), None, None, None

    @staticmethod
    def example_inputs():
        return _site_inputs()


class UnchartedSiteDetectionScatterOverwrites(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "site_logit",
           "note": "scatter_ instead of scatter_add_: animals from the same site overwrite each "
                   "other's gradient instead of summing"}

    @staticmethod
    def forward(ctx, site_logit, site, caught, occasions):
        ctx.save_for_backward(site_logit, site, caught)
        ctx.occasions = occasions
        return _site_nll(site_logit, site, caught, occasions)

    @staticmethod
    def backward(ctx, grad):
        site_logit, site, caught = ctx.saved_tensors
        p = torch.sigmoid(site_logit.gather(0, site))
        per_animal = grad * (ctx.occasions * p - caught)
        grad_site = torch.zeros_like(site_logit).scatter_(0, site, per_animal)  # BUG
        return grad_site, None, None, None

    @staticmethod
    def example_inputs():
        return _site_inputs()


# ------------------------------------------------------------------- deliberate estimators
class UnchartedAbundanceRoundingSTE(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "expected",
           "note": "abundance rounded to whole animals in forward, the gradient passed straight "
                   "through as if forward were the identity (a deliberate estimator)"}

    @staticmethod
    def forward(ctx, expected):
        return torch.round(expected)

    @staticmethod
    def backward(ctx, grad):
        return grad.clone()  # BUG

    @staticmethod
    def example_inputs():
        expected = torch.tensor([[3.2, 7.7, 1.1, 12.4], [0.3, 5.6, 9.2, 2.8], [4.1, 6.3, 8.8, 10.2]],
                                dtype=torch.float64, requires_grad=True)
        return (expected,)


class UnchartedDetectionThresholdSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "signal",
           "note": "a hard detection step (signal > threshold) in forward, the derivative of a "
                   "sigmoid of temperature 0.5 in backward (a deliberate surrogate)"}

    @staticmethod
    def forward(ctx, signal, threshold):
        ctx.save_for_backward(signal, threshold)
        return (signal > threshold).to(signal.dtype)

    @staticmethod
    def backward(ctx, grad):
        signal, threshold = ctx.saved_tensors
        soft = torch.sigmoid((signal - threshold) / 0.5)
        slope = grad * soft * (1 - soft) / 0.5  # BUG
        return slope, -slope.sum()

    @staticmethod
    def example_inputs():
        signal = torch.tensor([0.1, 0.9, 1.4, 0.35, 2.2, 0.7], dtype=torch.float64, requires_grad=True)
        threshold = torch.tensor(0.8, dtype=torch.float64, requires_grad=True)
        return signal, threshold


class UnchartedSiteGradientReversal(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "features", "also": ["sign"],
           "note": "identity forward, negated gradient backward (lambda = 1): a deliberate gradient "
                   "reversal layer for a site discriminator"}

    @staticmethod
    def forward(ctx, features):
        return features.view_as(features).clone()

    @staticmethod
    def backward(ctx, grad):
        return -grad  # BUG
