"""An ELBO made of pieces: a Gaussian reconstruction term minus a beta-weighted KL to N(0, 1)
(beta-VAE), the importance-weighted bound over samples, and local (per-datapoint) variational
means looked up from a table by datapoint id."""
import math

import torch

BETA = 4.0


def _elbo_forward(ctx, x, x_mu, mu, logvar):
    var = logvar.exp()
    ctx.save_for_backward(x, x_mu, mu, var)
    recon = -0.5 * ((x - x_mu) ** 2).sum(dim=1)
    kl = 0.5 * (mu * mu + var - 1 - logvar).sum(dim=1)
    return recon - BETA * kl


class AbroadBetaElbo(torch.autograd.Function):
    """-0.5 |x - x_mu|^2 - beta * KL(N(mu, exp(logvar)) || N(0, 1)), one value per row."""

    bug = None

    @staticmethod
    def forward(ctx, x, x_mu, mu, logvar):
        return _elbo_forward(ctx, x, x_mu, mu, logvar)

    @staticmethod
    def backward(ctx, g):
        x, x_mu, mu, var = ctx.saved_tensors
        g = g[:, None]
        r = x - x_mu
        grad_mu = -BETA * g * mu
        grad_logvar = -BETA * 0.5 * g * (var - 1)
        return -g * r, g * r, grad_mu, grad_logvar


class AbroadBetaElboUnweightedKL(torch.autograd.Function):
    bug = {"kind": "scale", "input": "mu",
           "note": "the beta weighting of the KL is applied in forward but forgotten in the mu gradient"}

    @staticmethod
    def forward(ctx, x, x_mu, mu, logvar):
        return _elbo_forward(ctx, x, x_mu, mu, logvar)

    @staticmethod
    def backward(ctx, g):
        x, x_mu, mu, var = ctx.saved_tensors
        g = g[:, None]
        r = x - x_mu
        grad_mu = -g * mu  # BUG
        grad_logvar = -BETA * 0.5 * g * (var - 1)
        return -g * r, g * r, grad_mu, grad_logvar


class AbroadBetaElboSwapMuLogvar(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "mu",
           "note": "the mu and logvar gradients are returned in each other's positions"}

    @staticmethod
    def forward(ctx, x, x_mu, mu, logvar):
        return _elbo_forward(ctx, x, x_mu, mu, logvar)

    @staticmethod
    def backward(ctx, g):
        x, x_mu, mu, var = ctx.saved_tensors
        g = g[:, None]
        r = x - x_mu
        grad_mu = -BETA * g * mu
        grad_logvar = -BETA * 0.5 * g * (var - 1)
        return -g * r, g * r, grad_logvar, grad_mu  # BUG


class AbroadBetaElboLogvarTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "logvar",
           "note": "the -1 from differentiating -logvar in the KL is written +1"}

    @staticmethod
    def forward(ctx, x, x_mu, mu, logvar):
        return _elbo_forward(ctx, x, x_mu, mu, logvar)

    @staticmethod
    def backward(ctx, g):
        x, x_mu, mu, var = ctx.saved_tensors
        g = g[:, None]
        r = x - x_mu
        grad_mu = -BETA * g * mu
        grad_logvar = -BETA * 0.5 * g * (var + 1)  # BUG
        return -g * r, g * r, grad_mu, grad_logvar


class AbroadBetaElboVarInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "logvar",
           "note": "exp(logvar) is saved, then reused in place to build the KL terms, so backward reads var - 1 - logvar + mu^2"}

    @staticmethod
    def forward(ctx, x, x_mu, mu, logvar):
        var = logvar.exp()
        ctx.save_for_backward(x, x_mu, mu, var)
        recon = -0.5 * ((x - x_mu) ** 2).sum(dim=1)
        kl_terms = var.sub_(1).sub_(logvar).add_(mu * mu)  # BUG
        return recon - BETA * 0.5 * kl_terms.sum(dim=1)

    @staticmethod
    def backward(ctx, g):
        x, x_mu, mu, var = ctx.saved_tensors
        g = g[:, None]
        r = x - x_mu
        grad_mu = -BETA * g * mu
        grad_logvar = -BETA * 0.5 * g * (var - 1)
        return -g * r, g * r, grad_mu, grad_logvar


# ----------------------------------------------------------------- importance-weighted bound
class AbroadIwaeBound(torch.autograd.Function):
    """log (1/S) sum_s exp(log_w[n, s]); the weights come batch-first (N, S) and are moved to (S, N)."""

    bug = None

    @staticmethod
    def forward(ctx, log_w):
        lw = log_w.transpose(0, 1)  # (S, N): samples first, as in the bound's sum
        ctx.save_for_backward(torch.softmax(lw, dim=0))
        return torch.logsumexp(lw, dim=0) - math.log(lw.shape[0])

    @staticmethod
    def backward(ctx, g):
        (weights,) = ctx.saved_tensors
        grad = weights * g[None, :]
        return grad.transpose(0, 1)


class AbroadIwaeBoundFlatBack(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "log_w", "also": ["transposed"],
           "note": "the (S, N) gradient is reshaped to (N, S) instead of transposed back, scrambling samples and rows"}

    @staticmethod
    def forward(ctx, log_w):
        lw = log_w.transpose(0, 1)
        ctx.save_for_backward(torch.softmax(lw, dim=0))
        return torch.logsumexp(lw, dim=0) - math.log(lw.shape[0])

    @staticmethod
    def backward(ctx, g):
        (weights,) = ctx.saved_tensors
        grad = weights * g[None, :]
        return grad.reshape(grad.shape[1], grad.shape[0])  # BUG


# ----------------------------------------------------------------- local variational means by id
def _local_inputs():
    gen = torch.Generator().manual_seed(41)
    table = torch.randn(4, 3, dtype=torch.float64, generator=gen)
    ids = torch.tensor([2, 0, 2, 3, 2, 0], dtype=torch.int64)
    x = torch.randn(6, 3, dtype=torch.float64, generator=gen)
    return table, ids, x


class AbroadLocalElbo(torch.autograd.Function):
    """-0.5 |x - m|^2 - 0.5 |m|^2 per row, m = table[ids] (unit variances): a non-amortised ELBO."""

    bug = None

    @staticmethod
    def forward(ctx, table, ids, x):
        m = table[ids]
        ctx.save_for_backward(m, ids, x)
        ctx.rows = table.shape[0]
        return -0.5 * ((x - m) ** 2).sum(dim=1) - 0.5 * (m * m).sum(dim=1)

    @staticmethod
    def backward(ctx, g):
        m, ids, x = ctx.saved_tensors
        contrib = g[:, None] * (x - 2 * m)
        grad_table = m.new_zeros(ctx.rows, m.shape[1])
        grad_table.index_put_((ids,), contrib, accumulate=True)
        return grad_table, None, -g[:, None] * (x - m)

    @staticmethod
    def example_inputs():
        return _local_inputs()


class AbroadLocalElboOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "table",
           "note": "the per-row gradients are assigned with grad_table[ids] = ..., so repeated ids overwrite each other"}

    @staticmethod
    def forward(ctx, table, ids, x):
        m = table[ids]
        ctx.save_for_backward(m, ids, x)
        ctx.rows = table.shape[0]
        return -0.5 * ((x - m) ** 2).sum(dim=1) - 0.5 * (m * m).sum(dim=1)

    @staticmethod
    def backward(ctx, g):
        m, ids, x = ctx.saved_tensors
        contrib = g[:, None] * (x - 2 * m)
        grad_table = m.new_zeros(ctx.rows, m.shape[1])
        grad_table[ids] = contrib  # BUG
        return grad_table, None, -g[:, None] * (x - m)

    @staticmethod
    def example_inputs():
        return _local_inputs()


# ----------------------------------------------------------------- masked reconstruction, padded sequences
def _masked_inputs():
    gen = torch.Generator().manual_seed(43)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    mu = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    mask = torch.tensor([[True, True, True, False], [True, True, False, False],
                         [True, True, True, True]])
    return x, mu, mask


class AbroadMaskedGaussRecon(torch.autograd.Function):
    """Per-sequence mean of 0.5 (x_t - mu_t)^2 over the valid (unpadded) steps given by a bool mask."""

    bug = None

    @staticmethod
    def forward(ctx, x, mu, mask):
        r = x - mu
        lengths = mask.sum(dim=1).to(x.dtype)
        ctx.save_for_backward(r, mask, lengths)
        return (0.5 * r * r).masked_fill(~mask, 0.0).sum(dim=1) / lengths

    @staticmethod
    def backward(ctx, g):
        r, mask, lengths = ctx.saved_tensors
        grad = (g / lengths)[:, None] * r.masked_fill(~mask, 0.0)
        return grad, -grad, None

    @staticmethod
    def example_inputs():
        return _masked_inputs()


class AbroadMaskedGaussReconPadLeak(torch.autograd.Function):
    bug = {"kind": "region", "input": "mu",
           "note": "the mean's gradient forgets the padding mask, so padded steps get a non-zero gradient"}

    @staticmethod
    def forward(ctx, x, mu, mask):
        r = x - mu
        lengths = mask.sum(dim=1).to(x.dtype)
        ctx.save_for_backward(r, mask, lengths)
        return (0.5 * r * r).masked_fill(~mask, 0.0).sum(dim=1) / lengths

    @staticmethod
    def backward(ctx, g):
        r, mask, lengths = ctx.saved_tensors
        grad = (g / lengths)[:, None] * r.masked_fill(~mask, 0.0)
        grad_mu = -(g / lengths)[:, None] * r  # BUG
        return grad, grad_mu, None

    @staticmethod
    def example_inputs():
        return _masked_inputs()


# ----------------------------------------------------------------- categorical reconstruction by gather
def _categorical_inputs():
    gen = torch.Generator().manual_seed(44)
    logits = torch.randn(5, 4, dtype=torch.float64, generator=gen)
    return logits, torch.tensor([2, 0, 3, 3, 1], dtype=torch.int64)


class AbroadCategoricalRecon(torch.autograd.Function):
    """log softmax(logits)[n, ids[n]]: the reconstruction term of a VAE with categorical outputs."""

    bug = None

    @staticmethod
    def forward(ctx, logits, ids):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp, ids)
        return logp.gather(1, ids[:, None]).squeeze(1)

    @staticmethod
    def backward(ctx, g):
        logp, ids = ctx.saved_tensors
        grad = -logp.exp() * g[:, None]
        grad.scatter_add_(1, ids[:, None], g[:, None])
        return grad, None

    @staticmethod
    def example_inputs():
        return _categorical_inputs()


class AbroadCategoricalReconSoftmaxSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "logits",
           "note": "the softmax term of d log_softmax is added instead of subtracted; the one-hot term is right"}

    @staticmethod
    def forward(ctx, logits, ids):
        logp = torch.log_softmax(logits, dim=1)
        ctx.save_for_backward(logp, ids)
        return logp.gather(1, ids[:, None]).squeeze(1)

    @staticmethod
    def backward(ctx, g):
        logp, ids = ctx.saved_tensors
        grad = logp.exp() * g[:, None]  # BUG
        grad.scatter_add_(1, ids[:, None], g[:, None])
        return grad, None

    @staticmethod
    def example_inputs():
        return _categorical_inputs()
