import gradcli as torch
import gradcli.nn.functional as F
import math

# Mixtures over components on gradcli's engine: a log-sum-exp Gaussian mixture likelihood with
# learned means and mixing logits, the same likelihood with known (integer) component assignments,
# and stick-breaking mixing weights built by an exclusive cumsum of log(1 - v).


def _lse_inputs():
    gen = torch.Generator().manual_seed(61)
    x = 1.5 * torch.randn(4, dtype=torch.float64, generator=gen)
    mu = torch.randn(4, dtype=torch.float64, generator=gen)
    logits = torch.randn(4, dtype=torch.float64, generator=gen)
    return x, mu, logits


def _lse_forward(ctx, x, mu, logits):
    d = x[:, None] - mu[None, :]  # (N, K)
    joint = torch.log_softmax(logits, dim=0)[None, :] - 0.5 * d * d - 0.5 * math.log(2 * math.pi)
    ctx.save_for_backward(d, torch.softmax(joint, dim=1), torch.softmax(logits, dim=0))
    return torch.logsumexp(joint, dim=1)


class AbroadGaussMixtureLSE(torch.autograd.Function):
    """log sum_k pi_k N(x_n; mu_k, 1) for every x_n, pi = softmax(logits)."""

    bug = None

    @staticmethod
    def forward(ctx, x, mu, logits):
        return _lse_forward(ctx, x, mu, logits)

    @staticmethod
    def backward(ctx, g):
        d, resp, prior = ctx.saved_tensors
        gr = g[:, None] * resp
        grad_x = -(gr * d).sum(dim=1)
        grad_mu = (gr * d).sum(dim=0)
        grad_logits = (g[:, None] * (resp - prior[None, :])).sum(dim=0)
        return grad_x, grad_mu, grad_logits

    @staticmethod
    def example_inputs():
        return _lse_inputs()


class AbroadGaussMixtureLSEComponentAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "mu",
           "note": "the component means' gradient is summed over the components (dim=1) instead of the data (dim=0)"}

    @staticmethod
    def forward(ctx, x, mu, logits):
        return _lse_forward(ctx, x, mu, logits)

    @staticmethod
    def backward(ctx, g):
        d, resp, prior = ctx.saved_tensors
        gr = g[:, None] * resp
        grad_x = -(gr * d).sum(dim=1)
        grad_mu = (gr * d).sum(dim=1)  # BUG
        grad_logits = (g[:, None] * (resp - prior[None, :])).sum(dim=0)
        return grad_x, grad_mu, grad_logits

    @staticmethod
    def example_inputs():
        return _lse_inputs()


class AbroadGaussMixtureLSEDropsUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "logits",
           "note": "the mixing logits' gradient sums responsibilities minus prior over the data without weighting by grad_output"}

    @staticmethod
    def forward(ctx, x, mu, logits):
        return _lse_forward(ctx, x, mu, logits)

    @staticmethod
    def backward(ctx, g):
        d, resp, prior = ctx.saved_tensors
        gr = g[:, None] * resp
        grad_x = -(gr * d).sum(dim=1)
        grad_mu = (gr * d).sum(dim=0)
        grad_logits = (resp - prior[None, :]).sum(dim=0)  # BUG
        return grad_x, grad_mu, grad_logits

    @staticmethod
    def example_inputs():
        return _lse_inputs()


# ----------------------------------------------------------------- known component assignments
def _assigned_inputs():
    gen = torch.Generator().manual_seed(62)
    x = torch.randn(6, dtype=torch.float64, generator=gen)
    mu = torch.randn(3, dtype=torch.float64, generator=gen)
    z_ids = torch.tensor([2, 0, 2, 1, 2, 0], dtype=torch.int64)
    return x, mu, z_ids


class AbroadAssignedComponentLL(torch.autograd.Function):
    """log N(x_n; mu[z_n], 1) with the component z_n of each point known (complete-data likelihood)."""

    bug = None

    @staticmethod
    def forward(ctx, x, mu, z_ids):
        d = x - mu[z_ids]
        ctx.save_for_backward(d, z_ids)
        ctx.k = mu.shape[0]
        return -0.5 * d * d - 0.5 * math.log(2 * math.pi)

    @staticmethod
    def backward(ctx, g):
        d, z_ids = ctx.saved_tensors
        grad_mu = torch.zeros(ctx.k, dtype=d.dtype).index_add_(0, z_ids, g * d)
        return -g * d, grad_mu, None

    @staticmethod
    def example_inputs():
        return _assigned_inputs()


class AbroadAssignedComponentLLOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "mu",
           "note": "the means' gradient is written by index_put_ without accumulate, so points sharing a component overwrite"}

    @staticmethod
    def forward(ctx, x, mu, z_ids):
        d = x - mu[z_ids]
        ctx.save_for_backward(d, z_ids)
        ctx.k = mu.shape[0]
        return -0.5 * d * d - 0.5 * math.log(2 * math.pi)

    @staticmethod
    def backward(ctx, g):
        d, z_ids = ctx.saved_tensors
        grad_mu = torch.zeros(ctx.k, dtype=d.dtype)
        grad_mu.index_put_((z_ids,), g * d)  # BUG
        return -g * d, grad_mu, None

    @staticmethod
    def example_inputs():
        return _assigned_inputs()


# ----------------------------------------------------------------- stick-breaking mixing weights
class AbroadStickBreakingLogWeights(torch.autograd.Function):
    """log w_k = log sigmoid(a_k) + sum_{j < k} log sigmoid(-a_j) along dim 1 (stick-breaking)."""

    bug = None

    @staticmethod
    def forward(ctx, v_logit):
        rest = F.logsigmoid(-v_logit)
        ctx.save_for_backward(torch.sigmoid(v_logit))
        return F.logsigmoid(v_logit) + torch.cumsum(rest, dim=1) - rest

    @staticmethod
    def backward(ctx, g):
        (v,) = ctx.saved_tensors
        later = torch.flip(torch.cumsum(torch.flip(g, [1]), dim=1), [1]) - g  # sum over k > j
        return g * (1 - v) - later * v


class AbroadStickBreakingNoFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "v_logit",
           "note": "the exclusive cumsum's adjoint is taken as a forward cumsum of g, not a reversed one"}

    @staticmethod
    def forward(ctx, v_logit):
        rest = F.logsigmoid(-v_logit)
        ctx.save_for_backward(torch.sigmoid(v_logit))
        return F.logsigmoid(v_logit) + torch.cumsum(rest, dim=1) - rest

    @staticmethod
    def backward(ctx, g):
        (v,) = ctx.saved_tensors
        later = torch.cumsum(g, dim=1) - g  # BUG
        return g * (1 - v) - later * v
