"""Normalisations: weight standardisation (per output row of a weight), ScaleNorm (a learned scalar
gain times x / ||x||) and a group norm written by viewing (N, C, L) as (N, G, C/G * L).
"""
import torch

EPS = 1e-5


# ------------------------------------------------------------- weight standardisation
def _standardise(ctx, w):
    mu = w.mean(1, keepdim=True)
    std = torch.sqrt(w.var(1, unbiased=False, keepdim=True) + EPS)
    w_hat = (w - mu) / std
    ctx.save_for_backward(w, w_hat, std)
    return w_hat


class ElsewhereWeightStd(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, w):
        return _standardise(ctx, w)

    @staticmethod
    def backward(ctx, grad):
        w, w_hat, std = ctx.saved_tensors
        return (grad - grad.mean(1, keepdim=True)
                - w_hat * (grad * w_hat).mean(1, keepdim=True)) / std


class ElsewhereWeightStdNoProjection(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "w",
           "note": "the term through the standard deviation, -w_hat * mean(grad * w_hat), is left out"}

    @staticmethod
    def forward(ctx, w):
        return _standardise(ctx, w)

    @staticmethod
    def backward(ctx, grad):
        w, w_hat, std = ctx.saved_tensors
        return (grad - grad.mean(1, keepdim=True)) / std  # BUG


class ElsewhereWeightStdColumnMean(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "w",
           "note": "the mean term of the backward is taken over output rows (dim 0) instead of each row's fan-in"}

    @staticmethod
    def forward(ctx, w):
        return _standardise(ctx, w)

    @staticmethod
    def backward(ctx, grad):
        w, w_hat, std = ctx.saved_tensors
        return (grad - grad.mean(0, keepdim=True)  # BUG
                - w_hat * (grad * w_hat).mean(1, keepdim=True)) / std


class ElsewhereWeightStdUnbiased(torch.autograd.Function):
    bug = {"kind": "scale", "input": "w",
           "note": "backward recomputes the std with torch.std's default unbiased estimate, off by sqrt(n / (n - 1))"}

    @staticmethod
    def forward(ctx, w):
        return _standardise(ctx, w)

    @staticmethod
    def backward(ctx, grad):
        w, w_hat, _ = ctx.saved_tensors
        std = w.std(1, keepdim=True)  # BUG
        return (grad - grad.mean(1, keepdim=True)
                - w_hat * (grad * w_hat).mean(1, keepdim=True)) / std


# ------------------------------------------------------------------------ ScaleNorm
def _scalenorm_inputs():
    gen = torch.Generator().manual_seed(61)
    return torch.randn(3, 4, generator=gen, dtype=torch.float64), torch.tensor(1.7, dtype=torch.float64)


def _scalenorm(ctx, x, g):
    norm = x.norm(dim=-1, keepdim=True).clamp_min(EPS)
    x_hat = x / norm
    ctx.save_for_backward(x_hat, norm, g)
    return g * x_hat


class ElsewhereScaleNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, g):
        return _scalenorm(ctx, x, g)

    @staticmethod
    def backward(ctx, grad_y):
        x_hat, norm, g = ctx.saved_tensors
        grad_x = g / norm * (grad_y - x_hat * (grad_y * x_hat).sum(-1, keepdim=True))
        grad_g = (grad_y * x_hat).sum()
        return grad_x, grad_g

    @staticmethod
    def example_inputs():
        return _scalenorm_inputs()


class ElsewhereScaleNormProjectionSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the radial projection x_hat * (g . x_hat) is added instead of removed"}

    @staticmethod
    def forward(ctx, x, g):
        return _scalenorm(ctx, x, g)

    @staticmethod
    def backward(ctx, grad_y):
        x_hat, norm, g = ctx.saved_tensors
        grad_x = g / norm * (grad_y + x_hat * (grad_y * x_hat).sum(-1, keepdim=True))  # BUG
        grad_g = (grad_y * x_hat).sum()
        return grad_x, grad_g

    @staticmethod
    def example_inputs():
        return _scalenorm_inputs()


class ElsewhereScaleNormNoGain(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the learned scalar gain g is left out of the input's gradient"}

    @staticmethod
    def forward(ctx, x, g):
        return _scalenorm(ctx, x, g)

    @staticmethod
    def backward(ctx, grad_y):
        x_hat, norm, g = ctx.saved_tensors
        grad_x = (grad_y - x_hat * (grad_y * x_hat).sum(-1, keepdim=True)) / norm  # BUG
        grad_g = (grad_y * x_hat).sum()
        return grad_x, grad_g

    @staticmethod
    def example_inputs():
        return _scalenorm_inputs()


# --------------------------------------------------------------- group norm by view
GROUPS = 2


def _group_inputs():
    gen = torch.Generator().manual_seed(62)
    x = torch.randn(2, 4, 3, generator=gen, dtype=torch.float64)
    gamma = 1 + 0.5 * torch.randn(4, generator=gen, dtype=torch.float64)
    beta = torch.randn(4, generator=gen, dtype=torch.float64)
    return x, gamma, beta


def _group_norm(ctx, x, gamma, beta):
    n, c, length = x.shape
    xg = x.view(n, GROUPS, -1)
    mu = xg.mean(-1, keepdim=True)
    rstd = (xg.var(-1, unbiased=False, keepdim=True) + EPS).rsqrt()
    x_hat = ((xg - mu) * rstd).view(n, c, length)
    rstd_c = rstd.expand(-1, -1, xg.shape[2]).reshape(n, c, length)  # each element's group rstd
    ctx.save_for_backward(x_hat, rstd_c, gamma)
    return x_hat * gamma[:, None] + beta[:, None]


class ElsewhereGroupNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _group_norm(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_y):
        x_hat, rstd_c, gamma = ctx.saved_tensors
        n, c, length = grad_y.shape
        gx, xh = (grad_y * gamma[:, None]).view(n, GROUPS, -1), x_hat.view(n, GROUPS, -1)
        inner = gx - gx.mean(-1, keepdim=True) - xh * (gx * xh).mean(-1, keepdim=True)
        grad_x = rstd_c * inner.view(n, c, length)
        grad_gamma = (grad_y * x_hat).sum((0, 2))
        grad_beta = grad_y.sum((0, 2))
        return grad_x, grad_gamma, grad_beta

    @staticmethod
    def example_inputs():
        return _group_inputs()


class ElsewhereGroupNormPerChannelStats(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x",
           "note": "backward skips the view to (N, G, -1), so its means run over each channel instead of each group"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _group_norm(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_y):
        x_hat, rstd_c, gamma = ctx.saved_tensors
        n, c, length = grad_y.shape
        gx, xh = grad_y * gamma[:, None], x_hat  # BUG
        inner = gx - gx.mean(-1, keepdim=True) - xh * (gx * xh).mean(-1, keepdim=True)
        grad_x = rstd_c * inner.view(n, c, length)
        grad_gamma = (grad_y * x_hat).sum((0, 2))
        grad_beta = grad_y.sum((0, 2))
        return grad_x, grad_gamma, grad_beta

    @staticmethod
    def example_inputs():
        return _group_inputs()


class ElsewhereGroupNormBetaPerPosition(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "beta",
           "note": "the per-channel shift's gradient is summed over the batch only, left (C, L) instead of (C,)"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _group_norm(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_y):
        x_hat, rstd_c, gamma = ctx.saved_tensors
        n, c, length = grad_y.shape
        gx, xh = (grad_y * gamma[:, None]).view(n, GROUPS, -1), x_hat.view(n, GROUPS, -1)
        inner = gx - gx.mean(-1, keepdim=True) - xh * (gx * xh).mean(-1, keepdim=True)
        grad_x = rstd_c * inner.view(n, c, length)
        grad_gamma = (grad_y * x_hat).sum((0, 2))
        grad_beta = grad_y.sum(0)  # BUG
        return grad_x, grad_gamma, grad_beta

    @staticmethod
    def example_inputs():
        return _group_inputs()


class ElsewhereGroupNormAffineSwap(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "gamma",
           "note": "the scale's and the shift's gradients are returned in each other's places"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _group_norm(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_y):
        x_hat, rstd_c, gamma = ctx.saved_tensors
        n, c, length = grad_y.shape
        gx, xh = (grad_y * gamma[:, None]).view(n, GROUPS, -1), x_hat.view(n, GROUPS, -1)
        inner = gx - gx.mean(-1, keepdim=True) - xh * (gx * xh).mean(-1, keepdim=True)
        grad_x = rstd_c * inner.view(n, c, length)
        grad_gamma = (grad_y * x_hat).sum((0, 2))
        grad_beta = grad_y.sum((0, 2))
        return grad_x, grad_beta, grad_gamma  # BUG

    @staticmethod
    def example_inputs():
        return _group_inputs()
