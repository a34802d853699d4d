"""A mixture of K logistics as a likelihood for a scalar per row (x: (N,), component parameters:
(N, K)), once with separate parameter tensors and once with one packed tensor from a network head."""
import torch
import torch.nn.functional as F


def _mixture_inputs():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(3, dtype=torch.float64, generator=gen)
    logits = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    mu = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    log_s = 0.3 * torch.randn(3, 4, dtype=torch.float64, generator=gen)
    return x, logits, mu, log_s


def _mixture_forward(ctx, x, logits, mu, log_s):
    s = log_s.exp()
    z = (x[:, None] - mu) / s
    log_pk = -z - log_s - 2 * F.softplus(-z)  # the logistic log-density
    joint = torch.log_softmax(logits, dim=1) + log_pk
    ctx.save_for_backward(logits, z, s, torch.softmax(joint, dim=1))
    return torch.logsumexp(joint, dim=1)


class AbroadLogisticMixtureLL(torch.autograd.Function):
    """log sum_k pi_k Logistic(x; mu_k, s_k), pi = softmax(logits), s = exp(log_s)."""

    bug = None

    @staticmethod
    def forward(ctx, x, logits, mu, log_s):
        return _mixture_forward(ctx, x, logits, mu, log_s)

    @staticmethod
    def backward(ctx, g):
        logits, z, s, resp = ctx.saved_tensors
        prior = torch.softmax(logits, dim=1)
        gr = g[:, None] * resp
        th = torch.tanh(z / 2)  # -d log p_k / dz
        grad_x = (gr * (-th / s)).sum(dim=1)
        grad_logits = g[:, None] * (resp - prior)
        grad_mu = gr * th / s
        grad_log_s = gr * (z * th - 1)
        return grad_x, grad_logits, grad_mu, grad_log_s

    @staticmethod
    def example_inputs():
        return _mixture_inputs()


class AbroadLogisticMixturePriorNorm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "logits",
           "note": "the -softmax(logits) term from the log_softmax normaliser is left out: only the responsibilities"}

    @staticmethod
    def forward(ctx, x, logits, mu, log_s):
        return _mixture_forward(ctx, x, logits, mu, log_s)

    @staticmethod
    def backward(ctx, g):
        logits, z, s, resp = ctx.saved_tensors
        prior = torch.softmax(logits, dim=1)
        gr = g[:, None] * resp
        th = torch.tanh(z / 2)  # -d log p_k / dz
        grad_x = (gr * (-th / s)).sum(dim=1)
        grad_logits = g[:, None] * resp  # BUG
        grad_mu = gr * th / s
        grad_log_s = gr * (z * th - 1)
        return grad_x, grad_logits, grad_mu, grad_log_s

    @staticmethod
    def example_inputs():
        return _mixture_inputs()


class AbroadLogisticMixturePriorAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "logits",
           "note": "the mixture prior is re-normalised over the batch (dim=0) instead of the components"}

    @staticmethod
    def forward(ctx, x, logits, mu, log_s):
        return _mixture_forward(ctx, x, logits, mu, log_s)

    @staticmethod
    def backward(ctx, g):
        logits, z, s, resp = ctx.saved_tensors
        prior = torch.softmax(logits, dim=0)  # BUG
        gr = g[:, None] * resp
        th = torch.tanh(z / 2)  # -d log p_k / dz
        grad_x = (gr * (-th / s)).sum(dim=1)
        grad_logits = g[:, None] * (resp - prior)
        grad_mu = gr * th / s
        grad_log_s = gr * (z * th - 1)
        return grad_x, grad_logits, grad_mu, grad_log_s

    @staticmethod
    def example_inputs():
        return _mixture_inputs()


class AbroadLogisticMixturePriorWeights(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "mu",
           "note": "the mean gradient is weighted by the prior weights instead of the posterior responsibilities"}

    @staticmethod
    def forward(ctx, x, logits, mu, log_s):
        return _mixture_forward(ctx, x, logits, mu, log_s)

    @staticmethod
    def backward(ctx, g):
        logits, z, s, resp = ctx.saved_tensors
        prior = torch.softmax(logits, dim=1)
        gr = g[:, None] * resp
        th = torch.tanh(z / 2)  # -d log p_k / dz
        grad_x = (gr * (-th / s)).sum(dim=1)
        grad_logits = g[:, None] * (resp - prior)
        grad_mu = g[:, None] * prior * th / s  # BUG
        grad_log_s = gr * (z * th - 1)
        return grad_x, grad_logits, grad_mu, grad_log_s

    @staticmethod
    def example_inputs():
        return _mixture_inputs()


class AbroadLogisticMixtureXUnsummed(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "x",
           "note": "x is broadcast over the K components but its gradient is not summed back over them"}

    @staticmethod
    def forward(ctx, x, logits, mu, log_s):
        return _mixture_forward(ctx, x, logits, mu, log_s)

    @staticmethod
    def backward(ctx, g):
        logits, z, s, resp = ctx.saved_tensors
        prior = torch.softmax(logits, dim=1)
        gr = g[:, None] * resp
        th = torch.tanh(z / 2)  # -d log p_k / dz
        grad_x = gr * (-th / s)  # BUG
        grad_logits = g[:, None] * (resp - prior)
        grad_mu = gr * th / s
        grad_log_s = gr * (z * th - 1)
        return grad_x, grad_logits, grad_mu, grad_log_s

    @staticmethod
    def example_inputs():
        return _mixture_inputs()


class AbroadLogisticMixtureScaleNoUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "log_s",
           "note": "the log-scale gradient uses the responsibilities without multiplying by grad_output"}

    @staticmethod
    def forward(ctx, x, logits, mu, log_s):
        return _mixture_forward(ctx, x, logits, mu, log_s)

    @staticmethod
    def backward(ctx, g):
        logits, z, s, resp = ctx.saved_tensors
        prior = torch.softmax(logits, dim=1)
        gr = g[:, None] * resp
        th = torch.tanh(z / 2)  # -d log p_k / dz
        grad_x = (gr * (-th / s)).sum(dim=1)
        grad_logits = g[:, None] * (resp - prior)
        grad_mu = gr * th / s
        grad_log_s = resp * (z * th - 1)  # BUG
        return grad_x, grad_logits, grad_mu, grad_log_s

    @staticmethod
    def example_inputs():
        return _mixture_inputs()


class AbroadLogisticMixtureGaussScale(torch.autograd.Function):
    bug = {"kind": "none", "input": "log_s",
           "note": "the log-scale gradient is the Gaussian one, z^2 - 1, not the logistic z tanh(z / 2) - 1"}

    @staticmethod
    def forward(ctx, x, logits, mu, log_s):
        return _mixture_forward(ctx, x, logits, mu, log_s)

    @staticmethod
    def backward(ctx, g):
        logits, z, s, resp = ctx.saved_tensors
        prior = torch.softmax(logits, dim=1)
        gr = g[:, None] * resp
        th = torch.tanh(z / 2)  # -d log p_k / dz
        grad_x = (gr * (-th / s)).sum(dim=1)
        grad_logits = g[:, None] * (resp - prior)
        grad_mu = gr * th / s
        grad_log_s = gr * (z * z - 1)  # BUG
        return grad_x, grad_logits, grad_mu, grad_log_s

    @staticmethod
    def example_inputs():
        return _mixture_inputs()


# ----------------------------------------------------------------- one packed parameter tensor
def _packed_inputs():
    x, logits, mu, log_s = _mixture_inputs()
    return x, torch.stack([logits, mu, log_s], dim=-1).reshape(3, 12)  # (N, K, 3) flattened


class AbroadLogisticMixturePacked(torch.autograd.Function):
    """The same likelihood, its parameters packed per component as (N, K * 3) by a network head."""

    bug = None

    @staticmethod
    def forward(ctx, x, params):
        n = params.shape[0]
        logits, mu, log_s = params.view(n, -1, 3).permute(2, 0, 1)
        return _mixture_forward(ctx, x, logits, mu, log_s)

    @staticmethod
    def backward(ctx, g):
        logits, z, s, resp = ctx.saved_tensors
        gr = g[:, None] * resp
        th = torch.tanh(z / 2)
        grad_x = (gr * (-th / s)).sum(dim=1)
        grads = torch.stack([gr - g[:, None] * torch.softmax(logits, dim=1), gr * th / s,
                             gr * (z * th - 1)], dim=-1)
        return grad_x, grads.reshape(logits.shape[0], -1)

    @staticmethod
    def example_inputs():
        return _packed_inputs()


class AbroadLogisticMixturePackedLayout(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "params",
           "note": "the three gradients are stacked in unpacking order (3, N, K) and flattened without permuting back to (N, K, 3)"}

    @staticmethod
    def forward(ctx, x, params):
        n = params.shape[0]
        logits, mu, log_s = params.view(n, -1, 3).permute(2, 0, 1)
        return _mixture_forward(ctx, x, logits, mu, log_s)

    @staticmethod
    def backward(ctx, g):
        logits, z, s, resp = ctx.saved_tensors
        gr = g[:, None] * resp
        th = torch.tanh(z / 2)
        grad_x = (gr * (-th / s)).sum(dim=1)
        grads = torch.stack([gr - g[:, None] * torch.softmax(logits, dim=1), gr * th / s,
                             gr * (z * th - 1)], dim=0)
        return grad_x, grads.reshape(logits.shape[0], -1)  # BUG

    @staticmethod
    def example_inputs():
        return _packed_inputs()
