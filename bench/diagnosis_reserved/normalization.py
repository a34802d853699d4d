"""Normalisation layers with hand-written backwards: LayerNorm, RMSNorm, BatchNorm (training), GroupNorm."""
import torch

EPS = 1e-5


def _standardise(x, dims):
    mu = x.mean(dim=dims, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=dims, keepdim=True)
    rstd = (var + EPS).rsqrt()
    return (x - mu) * rstd, rstd



class ReservedLayerNorm(torch.autograd.Function):
    """LayerNorm over the last dim with a weight and bias of shape (D,)."""
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _standardise(x, -1)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        g_xhat = grad_out * weight
        proj = (g_xhat * xhat).mean(dim=-1, keepdim=True)
        grad_x = rstd * (g_xhat - g_xhat.mean(dim=-1, keepdim=True) - xhat * proj)
        grad_w = (grad_out * xhat).sum(0)
        grad_b = grad_out.sum(0)
        return grad_x, grad_w, grad_b

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(11)
        return (torch.randn(3, 5, dtype=torch.float64, generator=g),
                torch.randn(5, dtype=torch.float64, generator=g) + 1.0,
                torch.randn(5, dtype=torch.float64, generator=g))


class ReservedLayerNormNoProjection(torch.autograd.Function):
    """LayerNorm over the last dim with a weight and bias of shape (D,)."""
    bug = {'kind': 'missing_term', 'input': 'x', 'note': 'drops the xhat * mean(g_xhat * xhat) term of the LayerNorm backward'}

    @staticmethod
    def forward(ctx, x, weight, bias):
        xhat, rstd = _standardise(x, -1)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        g_xhat = grad_out * weight
        proj = (g_xhat * xhat).mean(dim=-1, keepdim=True)
        grad_x = rstd * (g_xhat - g_xhat.mean(dim=-1, keepdim=True))  # BUG
        grad_w = (grad_out * xhat).sum(0)
        grad_b = grad_out.sum(0)
        return grad_x, grad_w, grad_b

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(11)
        return (torch.randn(3, 5, dtype=torch.float64, generator=g),
                torch.randn(5, dtype=torch.float64, generator=g) + 1.0,
                torch.randn(5, dtype=torch.float64, generator=g))


class ReservedLayerNormRecompute(torch.autograd.Function):
    """LayerNorm, library style: the input is saved, the statistics recomputed in backward."""
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        xhat, _ = _standardise(x, -1)
        return torch.addcmul(bias, xhat, weight)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        xhat, rstd = _standardise(x, -1)
        n = x.shape[-1]
        g = grad_out * weight
        grad_x = (n * g - g.sum(-1, keepdim=True) - xhat * (g * xhat).sum(-1, keepdim=True)) * rstd / n
        grad_weight = torch.einsum("nd,nd->d", grad_out, xhat)
        return grad_x, grad_weight, grad_out.sum(dim=0)

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(12)
        return (torch.randn(4, 6, dtype=torch.float64, generator=g) * 2 + 0.5,
                torch.rand(6, dtype=torch.float64, generator=g) + 0.5,
                torch.randn(6, dtype=torch.float64, generator=g))


class ReservedLayerNormRecomputeWeightFromRawInput(torch.autograd.Function):
    """LayerNorm, library style: the input is saved, the statistics recomputed in backward."""
    bug = {'kind': 'wrong_variable', 'input': 'weight', 'note': "the weight's gradient uses the raw input x where the normalised xhat is needed"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        xhat, _ = _standardise(x, -1)
        return torch.addcmul(bias, xhat, weight)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        xhat, rstd = _standardise(x, -1)
        n = x.shape[-1]
        g = grad_out * weight
        grad_x = (n * g - g.sum(-1, keepdim=True) - xhat * (g * xhat).sum(-1, keepdim=True)) * rstd / n
        grad_weight = torch.einsum("nd,nd->d", grad_out, x)  # BUG
        return grad_x, grad_weight, grad_out.sum(dim=0)

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(12)
        return (torch.randn(4, 6, dtype=torch.float64, generator=g) * 2 + 0.5,
                torch.rand(6, dtype=torch.float64, generator=g) + 0.5,
                torch.randn(6, dtype=torch.float64, generator=g))


class ReservedRMSNorm(torch.autograd.Function):
    """RMSNorm: x / sqrt(mean(x^2) + eps) * weight."""
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        r = (x.pow(2).mean(-1, keepdim=True) + EPS).rsqrt()
        ctx.save_for_backward(x, weight, r)
        return x * r * weight

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, r = ctx.saved_tensors
        gw_x = grad_out * weight
        dot = (gw_x * x).mean(-1, keepdim=True)
        grad_x = r * gw_x - r.pow(3) * x * dot
        grad_weight = (grad_out * x * r).sum(0)
        return grad_x, grad_weight

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(13)
        return (torch.randn(3, 4, dtype=torch.float64, generator=g),
                torch.rand(4, dtype=torch.float64, generator=g) + 0.5)


class ReservedRMSNormPlusTerm(torch.autograd.Function):
    """RMSNorm: x / sqrt(mean(x^2) + eps) * weight."""
    bug = {'kind': 'term_sign', 'input': 'x', 'note': 'the term through the root-mean-square is added instead of subtracted'}

    @staticmethod
    def forward(ctx, x, weight):
        r = (x.pow(2).mean(-1, keepdim=True) + EPS).rsqrt()
        ctx.save_for_backward(x, weight, r)
        return x * r * weight

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, r = ctx.saved_tensors
        gw_x = grad_out * weight
        dot = (gw_x * x).mean(-1, keepdim=True)
        grad_x = r * gw_x + r.pow(3) * x * dot  # BUG
        grad_weight = (grad_out * x * r).sum(0)
        return grad_x, grad_weight

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(13)
        return (torch.randn(3, 4, dtype=torch.float64, generator=g),
                torch.rand(4, dtype=torch.float64, generator=g) + 0.5)


class ReservedBatchNormTrain(torch.autograd.Function):
    """BatchNorm1d in training mode on (N, C, L): batch statistics over dims 0 and 2."""
    bug = None

    @staticmethod
    def forward(ctx, x, gamma, beta):
        xhat, rstd = _standardise(x, (0, 2))
        ctx.save_for_backward(xhat, rstd, gamma)
        return xhat * gamma[:, None] + beta[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        gx = grad_out * gamma[:, None]
        mean_g = gx.mean(dim=(0, 2), keepdim=True)
        mean_gx = (gx * xhat).mean(dim=(0, 2), keepdim=True)
        grad_x = (gx - mean_g - xhat * mean_gx) * rstd
        grad_gamma = (grad_out * xhat).sum(dim=(0, 2))
        grad_beta = grad_out.sum(dim=(0, 2))
        return grad_x, grad_gamma, grad_beta

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(14)
        return (torch.randn(4, 3, 5, dtype=torch.float64, generator=g),
                torch.rand(3, dtype=torch.float64, generator=g) + 0.5,
                torch.randn(3, dtype=torch.float64, generator=g))


class ReservedBatchNormTrainStatsOverLength(torch.autograd.Function):
    """BatchNorm1d in training mode on (N, C, L): batch statistics over dims 0 and 2."""
    bug = {'kind': 'wrong_axis', 'input': 'x', 'note': 'the mean of the incoming gradient is taken over the length only, not over batch and length'}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        xhat, rstd = _standardise(x, (0, 2))
        ctx.save_for_backward(xhat, rstd, gamma)
        return xhat * gamma[:, None] + beta[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        gx = grad_out * gamma[:, None]
        mean_g = gx.mean(dim=2, keepdim=True)  # BUG
        mean_gx = (gx * xhat).mean(dim=(0, 2), keepdim=True)
        grad_x = (gx - mean_g - xhat * mean_gx) * rstd
        grad_gamma = (grad_out * xhat).sum(dim=(0, 2))
        grad_beta = grad_out.sum(dim=(0, 2))
        return grad_x, grad_gamma, grad_beta

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(14)
        return (torch.randn(4, 3, 5, dtype=torch.float64, generator=g),
                torch.rand(3, dtype=torch.float64, generator=g) + 0.5,
                torch.randn(3, dtype=torch.float64, generator=g))


class ReservedBatchNormTrainGammaPerPosition(torch.autograd.Function):
    """BatchNorm1d in training mode on (N, C, L): batch statistics over dims 0 and 2."""
    bug = {'kind': 'not_reduced', 'input': 'gamma', 'note': 'the gamma gradient is summed over the batch but not over the length'}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        xhat, rstd = _standardise(x, (0, 2))
        ctx.save_for_backward(xhat, rstd, gamma)
        return xhat * gamma[:, None] + beta[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        gx = grad_out * gamma[:, None]
        mean_g = gx.mean(dim=(0, 2), keepdim=True)
        mean_gx = (gx * xhat).mean(dim=(0, 2), keepdim=True)
        grad_x = (gx - mean_g - xhat * mean_gx) * rstd
        grad_gamma = (grad_out * xhat).sum(dim=0)  # BUG
        grad_beta = grad_out.sum(dim=(0, 2))
        return grad_x, grad_gamma, grad_beta

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(14)
        return (torch.randn(4, 3, 5, dtype=torch.float64, generator=g),
                torch.rand(3, dtype=torch.float64, generator=g) + 0.5,
                torch.randn(3, dtype=torch.float64, generator=g))


class ReservedGroupNorm(torch.autograd.Function):
    """GroupNorm on (N, C, L) with 2 groups and a per-channel affine."""
    bug = None
    groups = 2

    @staticmethod
    def forward(ctx, x, weight, bias):
        n, c, l = x.shape
        xg = x.reshape(n, ReservedGroupNorm.groups, -1)
        xhat, rstd = _standardise(xg, -1)
        xhat = xhat.reshape(n, c, l)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight[:, None] + bias[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        n, c, l = xhat.shape
        g = (grad_out * weight[:, None]).reshape(n, ReservedGroupNorm.groups, -1)
        xh = xhat.reshape(n, ReservedGroupNorm.groups, -1)
        gx = rstd * (g - g.mean(-1, keepdim=True) - xh * (g * xh).mean(-1, keepdim=True))
        return (gx.reshape(n, c, l), (grad_out * xhat).sum((0, 2)), grad_out.sum((0, 2)))

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(15)
        return (torch.randn(2, 4, 3, dtype=torch.float64, generator=g),
                torch.rand(4, dtype=torch.float64, generator=g) + 0.5,
                torch.randn(4, dtype=torch.float64, generator=g))


class ReservedGroupNormAffineInPlace(torch.autograd.Function):
    """GroupNorm on (N, C, L) with 2 groups and a per-channel affine."""
    bug = {'kind': 'inplace', 'input': 'x', 'note': 'the saved xhat buffer is scaled and shifted in place to make the output, so backward reads the affine output instead of xhat'}
    groups = 2

    @staticmethod
    def forward(ctx, x, weight, bias):
        n, c, l = x.shape
        xg = x.reshape(n, ReservedGroupNormAffineInPlace.groups, -1)
        xhat, rstd = _standardise(xg, -1)
        xhat = xhat.reshape(n, c, l)
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat.mul_(weight[:, None]).add_(bias[:, None])  # BUG

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, weight = ctx.saved_tensors
        n, c, l = xhat.shape
        g = (grad_out * weight[:, None]).reshape(n, ReservedGroupNormAffineInPlace.groups, -1)
        xh = xhat.reshape(n, ReservedGroupNormAffineInPlace.groups, -1)
        gx = rstd * (g - g.mean(-1, keepdim=True) - xh * (g * xh).mean(-1, keepdim=True))
        return (gx.reshape(n, c, l), (grad_out * xhat).sum((0, 2)), grad_out.sum((0, 2)))

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(15)
        return (torch.randn(2, 4, 3, dtype=torch.float64, generator=g),
                torch.rand(4, dtype=torch.float64, generator=g) + 0.5,
                torch.randn(4, dtype=torch.float64, generator=g))
