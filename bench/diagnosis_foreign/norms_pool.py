"""Normalisations and poolings with hand-written backwards: InstanceNorm (affine), ScaleNorm,
power mean, logsumexp pooling and attention pooling (BLIND corpus, see README.md)."""
import torch


# ------------------------------------------------------------------------------- InstanceNorm
def _instance_inputs():
    gen = torch.Generator().manual_seed(51)
    x = torch.randn(2, 3, 3, dtype=torch.float64, generator=gen) * 2 + 0.5
    gamma = torch.rand(3, dtype=torch.float64, generator=gen) + 0.5
    beta = torch.randn(3, dtype=torch.float64, generator=gen)
    return x, gamma, beta, 1e-5


def _instance_stats(x, eps):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, unbiased=False, keepdim=True)
    rstd = torch.rsqrt(var + eps)
    return (x - mean) * rstd, rstd


class ForeignInstanceNorm(torch.autograd.Function):
    """(N, C, L) normalised over L per (sample, channel), then gamma * xhat + beta per channel."""

    bug = None

    @staticmethod
    def forward(ctx, x, gamma, beta, eps):
        xhat, rstd = _instance_stats(x, eps)
        ctx.save_for_backward(xhat, rstd, gamma)
        return xhat * gamma.view(1, -1, 1) + beta.view(1, -1, 1)

    @staticmethod
    def backward(ctx, grad):
        xhat, rstd, gamma = ctx.saved_tensors
        gxhat = grad * gamma.view(1, -1, 1)
        mean_g = gxhat.mean(-1, keepdim=True)
        mean_gx = (gxhat * xhat).mean(-1, keepdim=True)
        grad_x = rstd * (gxhat - mean_g - xhat * mean_gx)
        grad_gamma = (grad * xhat).sum(dim=(0, 2))
        grad_beta = grad.sum(dim=(0, 2))
        return grad_x, grad_gamma, grad_beta, None

    @staticmethod
    def example_inputs():
        return _instance_inputs()


class ForeignInstanceNormAffineInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "xhat is kept on ctx and then scaled and shifted in place to make the output, "
                   "so backward reads gamma * xhat + beta as xhat"}

    @staticmethod
    def forward(ctx, x, gamma, beta, eps):
        xhat, rstd = _instance_stats(x, eps)
        ctx.xhat, ctx.rstd, ctx.gamma = xhat, rstd, gamma
        out = xhat.mul_(gamma[:, None]).add_(beta[:, None])  # BUG
        return out

    @staticmethod
    def backward(ctx, grad):
        xhat, rstd, gamma = ctx.xhat, ctx.rstd, ctx.gamma
        gxhat = grad * gamma[:, None]
        L = xhat.shape[-1]
        grad_x = rstd / L * (L * gxhat - gxhat.sum(-1, keepdim=True)
                             - xhat * (gxhat * xhat).sum(-1, keepdim=True))
        return grad_x, (grad * xhat).sum((0, 2)), grad.sum((0, 2)), None

    @staticmethod
    def example_inputs():
        return _instance_inputs()


class ForeignInstanceNormGammaBatchOnly(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "gamma",
           "note": "gamma's gradient is summed over the batch only; the length dim L is left "
                   "unreduced, (C, L) instead of (C,)"}

    @staticmethod
    def forward(ctx, x, gamma, beta, eps):
        xhat, rstd = _instance_stats(x, eps)
        ctx.save_for_backward(xhat, rstd, gamma)
        return xhat * gamma.view(1, -1, 1) + beta.view(1, -1, 1)

    @staticmethod
    def backward(ctx, grad):
        xhat, rstd, gamma = ctx.saved_tensors
        gxhat = grad * gamma.view(1, -1, 1)
        centred = gxhat - gxhat.mean(-1, keepdim=True)
        grad_x = rstd * (centred - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        grad_gamma = (grad * xhat).sum(0)  # BUG
        grad_beta = grad.sum(2).sum(0)
        return grad_x, grad_gamma, grad_beta, None

    @staticmethod
    def example_inputs():
        return _instance_inputs()


class ForeignInstanceNormNoVarianceTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the input gradient subtracts the mean of the upstream gradient but not the "
                   "xhat * mean(g * xhat) term that comes through the variance"}

    @staticmethod
    def forward(ctx, x, gamma, beta, eps):
        xhat, rstd = _instance_stats(x, eps)
        ctx.save_for_backward(xhat, rstd, gamma)
        return xhat * gamma.view(1, -1, 1) + beta.view(1, -1, 1)

    @staticmethod
    def backward(ctx, grad):
        xhat, rstd, gamma = ctx.saved_tensors
        n, c, length = grad.shape
        flat = (grad * gamma.view(1, c, 1)).reshape(n * c, length)
        flat = flat - flat.mean(1, keepdim=True)  # BUG
        grad_x = flat.view(n, c, length) * rstd
        return grad_x, torch.einsum("ncl,ncl->c", grad, xhat), grad.sum(dim=(0, 2)), None

    @staticmethod
    def example_inputs():
        return _instance_inputs()


# ---------------------------------------------------------------------------------- ScaleNorm
def _scalenorm_inputs():
    gen = torch.Generator().manual_seed(52)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    return x, torch.tensor([1.7], dtype=torch.float64)


class ForeignScaleNorm(torch.autograd.Function):
    """g * x / |x| per row, one learned scalar gain g (shape (1,))."""

    bug = None

    @staticmethod
    def forward(ctx, x, g):
        norm = x.norm(dim=1, keepdim=True)
        unit = x / norm
        ctx.save_for_backward(unit, norm, g)
        return g * unit

    @staticmethod
    def backward(ctx, grad):
        unit, norm, g = ctx.saved_tensors
        along = (grad * unit).sum(1, keepdim=True)
        grad_x = g * (grad - along * unit) / norm
        grad_g = (grad * unit).sum().reshape(1)
        return grad_x, grad_g

    @staticmethod
    def example_inputs():
        return _scalenorm_inputs()


class ForeignScaleNormGainNoUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "g",
           "note": "the gain's gradient sums the unit vectors themselves, not grad * unit"}

    @staticmethod
    def forward(ctx, x, g):
        norm = x.norm(dim=1, keepdim=True)
        ctx.save_for_backward(x, norm, g)
        return g * x / norm

    @staticmethod
    def backward(ctx, grad):
        x, norm, g = ctx.saved_tensors
        unit = x / norm
        grad_x = None
        if ctx.needs_input_grad[0]:
            grad_x = g / norm * (grad - unit * (unit * grad).sum(1, keepdim=True))
        grad_g = unit.sum().view(1)  # BUG
        return grad_x, grad_g

    @staticmethod
    def example_inputs():
        return _scalenorm_inputs()


# --------------------------------------------------------------------------------- power mean
def _powermean_inputs():
    gen = torch.Generator().manual_seed(53)
    return torch.rand(3, 4, dtype=torch.float64, generator=gen) * 2 + 0.3, 3.0


class ForeignPowerMean(torch.autograd.Function):
    """(mean_i x_i^p)^(1/p) over the last dim, positive x, fixed float p."""

    bug = None

    @staticmethod
    def forward(ctx, x, p):
        m = x.pow(p).mean(-1).pow(1.0 / p)
        ctx.save_for_backward(x, m)
        ctx.p = p
        return m

    @staticmethod
    def backward(ctx, grad):
        x, m = ctx.saved_tensors
        p = ctx.p
        n = x.shape[-1]
        weight = x.pow(p - 1) * m.unsqueeze(-1).pow(1 - p) / n
        return grad.unsqueeze(-1) * weight, None

    @staticmethod
    def example_inputs():
        return _powermean_inputs()


class ForeignPowerMeanSumNotMean(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the 1/n of the mean inside the power is forgotten in the derivative"}

    @staticmethod
    def forward(ctx, x, p):
        m = x.pow(p).mean(-1).pow(1.0 / p)
        ctx.save_for_backward(x, m)
        ctx.p = p
        return m

    @staticmethod
    def backward(ctx, grad):
        x, m = ctx.saved_tensors
        p = ctx.p
        # d/dx_i (S/n)^(1/p) = (1/p) (S/n)^(1/p - 1) * p x_i^(p-1) / n
        ratio = (x / m[:, None]) ** (p - 1)  # BUG
        return grad[:, None] * ratio, None

    @staticmethod
    def example_inputs():
        return _powermean_inputs()


# ---------------------------------------------------------------------------- logsumexp pooling
def _lse_inputs():
    gen = torch.Generator().manual_seed(54)
    return torch.randn(3, 4, dtype=torch.float64, generator=gen), 2.0


class ForeignLogSumExpPool(torch.autograd.Function):
    """(1/r) log mean exp(r x) over the last dim: a soft max pooling with sharpness r."""

    bug = None

    @staticmethod
    def forward(ctx, x, r):
        rx = r * x
        top = rx.max(dim=-1, keepdim=True).values
        pooled = (top + torch.log(torch.exp(rx - top).mean(-1, keepdim=True))) / r
        ctx.save_for_backward(rx)
        return pooled.squeeze(-1)

    @staticmethod
    def backward(ctx, grad):
        (rx,) = ctx.saved_tensors
        return torch.softmax(rx, dim=-1) * grad[:, None], None

    @staticmethod
    def example_inputs():
        return _lse_inputs()


class ForeignLogSumExpPoolSoftmaxOverRows(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the pooling weights are a softmax over dim 0 (the rows) instead of the "
                   "pooled last dim"}

    @staticmethod
    def forward(ctx, x, r):
        ctx.r = r
        ctx.save_for_backward(x)
        return (torch.logsumexp(r * x, dim=1) - torch.log(torch.tensor(float(x.shape[1])))) / r

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        e = torch.exp(ctx.r * x - (ctx.r * x).max())
        weights = e / e.sum(dim=0, keepdim=True)  # BUG
        return weights * grad.unsqueeze(1), None

    @staticmethod
    def example_inputs():
        return _lse_inputs()


# -------------------------------------------------------------------------- attention pooling
def _attnpool_inputs():
    gen = torch.Generator().manual_seed(55)
    return (torch.randn(2, 3, 4, dtype=torch.float64, generator=gen),
            torch.randn(4, dtype=torch.float64, generator=gen))


class ForeignAttentionPool(torch.autograd.Function):
    """softmax_t(x_t . w) weighted sum of x_t: (N, T, D), (D,) -> (N, D)."""

    bug = None

    @staticmethod
    def forward(ctx, x, w):
        attn = torch.softmax(x @ w, dim=1)
        ctx.save_for_backward(x, w, attn)
        return torch.einsum("nt,ntd->nd", attn, x)

    @staticmethod
    def backward(ctx, grad):
        x, w, attn = ctx.saved_tensors
        d_attn = torch.einsum("nd,ntd->nt", grad, x)
        d_score = attn * (d_attn - (attn * d_attn).sum(1, keepdim=True))
        grad_x = attn[:, :, None] * grad[:, None, :] + d_score[:, :, None] * w
        grad_w = torch.einsum("nt,ntd->d", d_score, x)
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _attnpool_inputs()


class ForeignAttentionPoolValuesOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "x is both the value and the key; its gradient keeps the value path attn * g "
                   "and drops the path through the scores x . w"}

    @staticmethod
    def forward(ctx, x, w):
        scores = torch.matmul(x, w)
        attn = torch.softmax(scores, dim=-1)
        ctx.save_for_backward(x, w, attn)
        return (attn.unsqueeze(-1) * x).sum(1)

    @staticmethod
    def backward(ctx, grad):
        x, w, attn = ctx.saved_tensors
        d_attn = (x * grad.unsqueeze(1)).sum(-1)
        centred = d_attn - (attn * d_attn).sum(-1, keepdim=True)
        d_score = attn * centred
        grad_w = (d_score.unsqueeze(-1) * x).sum(dim=(0, 1))
        grad_x = attn.unsqueeze(-1) * grad.unsqueeze(1)  # BUG
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _attnpool_inputs()


class ForeignAttentionPoolSoftmaxPlus(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "w",
           "note": "the softmax Jacobian is applied as attn * (d + sum(attn * d)) instead of "
                   "attn * (d - sum(attn * d))"}

    @staticmethod
    def forward(ctx, x, w):
        attn = torch.softmax(x @ w, dim=1)
        ctx.save_for_backward(x, w, attn)
        return torch.einsum("nt,ntd->nd", attn, x)

    @staticmethod
    def backward(ctx, grad):
        x, w, attn = ctx.saved_tensors
        xt = x.permute(0, 2, 1)                            # (N, D, T)
        d_attn = torch.bmm(grad.unsqueeze(1), xt).squeeze(1)  # (N, T)
        d_score = attn * (d_attn + (attn * d_attn).sum(1, keepdim=True))  # BUG
        grad_w = torch.bmm(xt, d_score.unsqueeze(-1)).squeeze(-1).sum(0)
        grad_x = attn.unsqueeze(2) * grad.unsqueeze(1) + d_score.unsqueeze(2) * w.view(1, 1, -1)
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _attnpool_inputs()
