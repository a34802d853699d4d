"""Vision layers by hand: depthwise conv1d by unfold + einsum (input gradient as a full correlation by
F.conv1d), GroupNorm by reshape to (N, G, -1), and a squeeze-and-excitation gate."""
import torch
import torch.nn.functional as F


def _dw_inputs():
    gen = torch.Generator().manual_seed(21)
    return (torch.randn(2, 3, 7, dtype=torch.float64, generator=gen),
            torch.randn(3, 3, dtype=torch.float64, generator=gen))


class DistantDepthwiseConv(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        cols = x.unfold(2, weight.shape[1], 1)  # (N, C, T, K)
        ctx.save_for_backward(x, weight)
        return torch.einsum("nctk,ck->nct", cols, weight)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        k = weight.shape[1]
        cols = x.unfold(2, k, 1)
        grad_w = torch.einsum("nctk,nct->ck", cols, grad_out)
        padded = F.pad(grad_out, (k - 1, k - 1))
        grad_x = F.conv1d(padded, weight.flip(-1)[:, None, :], groups=x.shape[1])
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _dw_inputs()


class DistantDepthwiseConvKernelNotFlipped(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the input gradient is a full convolution with the flipped kernel; the kernel is used unflipped"}

    @staticmethod
    def forward(ctx, x, weight):
        cols = x.unfold(2, weight.shape[1], 1)
        ctx.save_for_backward(x, weight)
        return torch.einsum("nctk,ck->nct", cols, weight)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        k = weight.shape[1]
        cols = x.unfold(2, k, 1)
        grad_w = torch.einsum("nctk,nct->ck", cols, grad_out)
        padded = F.pad(grad_out, (k - 1, k - 1))
        grad_x = F.conv1d(padded, weight[:, None, :], groups=x.shape[1])  # BUG
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _dw_inputs()


def _gn_inputs():
    gen = torch.Generator().manual_seed(22)
    return (torch.randn(2, 4, 5, dtype=torch.float64, generator=gen),
            torch.rand(4, dtype=torch.float64, generator=gen) + 0.5,
            torch.randn(4, dtype=torch.float64, generator=gen))


def _gn_forward(ctx, x, gamma, beta, groups, eps):
    n, c, length = x.shape
    xr = x.reshape(n, groups, -1)
    mu = xr.mean(dim=-1, keepdim=True)
    var = xr.var(dim=-1, unbiased=False, keepdim=True)
    rstd = 1.0 / torch.sqrt(var + eps)
    xhat = (xr - mu) * rstd
    ctx.save_for_backward(xhat, rstd, gamma)
    ctx.groups = groups
    return xhat.reshape(n, c, length) * gamma[:, None] + beta[:, None]


class DistantGroupNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gamma, beta, groups=2, eps=1e-5):
        return _gn_forward(ctx, x, gamma, beta, groups, eps)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        n, c, length = grad_out.shape
        xhat_full = xhat.reshape(n, c, length)
        grad_gamma = (grad_out * xhat_full).sum(dim=(0, 2))
        grad_beta = grad_out.sum(dim=(0, 2))
        gxhat = (grad_out * gamma[:, None]).reshape(n, ctx.groups, -1)
        grad_x = rstd * (gxhat - gxhat.mean(-1, keepdim=True)
                         - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        return grad_x.reshape(n, c, length), grad_gamma, grad_beta, None, None

    @staticmethod
    def example_inputs():
        return _gn_inputs()


class DistantGroupNormMeanOverGroups(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the mean of the upstream gradient is taken over the groups (dim=1) instead of within each group"}

    @staticmethod
    def forward(ctx, x, gamma, beta, groups=2, eps=1e-5):
        return _gn_forward(ctx, x, gamma, beta, groups, eps)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        n, c, length = grad_out.shape
        xhat_full = xhat.reshape(n, c, length)
        grad_gamma = (grad_out * xhat_full).sum(dim=(0, 2))
        grad_beta = grad_out.sum(dim=(0, 2))
        gxhat = (grad_out * gamma[:, None]).reshape(n, ctx.groups, -1)
        grad_x = rstd * (gxhat - gxhat.mean(1, keepdim=True)  # BUG
                         - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        return grad_x.reshape(n, c, length), grad_gamma, grad_beta, None, None

    @staticmethod
    def example_inputs():
        return _gn_inputs()


class DistantGroupNormGammaRawInput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "gamma",
           "note": "gamma's gradient multiplies grad_out by the raw input instead of the normalised xhat"}

    @staticmethod
    def forward(ctx, x, gamma, beta, groups=2, eps=1e-5):
        out = _gn_forward(ctx, x, gamma, beta, groups, eps)
        ctx.x = x
        return out

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        n, c, length = grad_out.shape
        grad_gamma = (grad_out * ctx.x).sum(dim=(0, 2))  # BUG
        grad_beta = grad_out.sum(dim=(0, 2))
        gxhat = (grad_out * gamma[:, None]).reshape(n, ctx.groups, -1)
        grad_x = rstd * (gxhat - gxhat.mean(-1, keepdim=True)
                         - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        return grad_x.reshape(n, c, length), grad_gamma, grad_beta, None, None

    @staticmethod
    def example_inputs():
        return _gn_inputs()


class DistantGroupNormNoVarianceTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the term through the group variance, -xhat * mean(gxhat * xhat), is left out"}

    @staticmethod
    def forward(ctx, x, gamma, beta, groups=2, eps=1e-5):
        return _gn_forward(ctx, x, gamma, beta, groups, eps)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        n, c, length = grad_out.shape
        xhat_full = xhat.reshape(n, c, length)
        grad_gamma = (grad_out * xhat_full).sum(dim=(0, 2))
        grad_beta = grad_out.sum(dim=(0, 2))
        gxhat = (grad_out * gamma[:, None]).reshape(n, ctx.groups, -1)
        grad_x = rstd * (gxhat - gxhat.mean(-1, keepdim=True))  # BUG
        return grad_x.reshape(n, c, length), grad_gamma, grad_beta, None, None

    @staticmethod
    def example_inputs():
        return _gn_inputs()


class DistantGroupNormBetaNotReturned(torch.autograd.Function):
    bug = {"kind": "zero", "input": "beta",
           "note": "beta's gradient is computed under needs_input_grad[2] but the return tuple still has None in beta's place"}

    @staticmethod
    def forward(ctx, x, gamma, beta, groups=2, eps=1e-5):
        return _gn_forward(ctx, x, gamma, beta, groups, eps)

    @staticmethod
    def backward(ctx, grad_out):
        xhat, rstd, gamma = ctx.saved_tensors
        n, c, length = grad_out.shape
        grad_x = grad_gamma = grad_beta = None
        if ctx.needs_input_grad[1]:
            grad_gamma = (grad_out * xhat.reshape(n, c, length)).sum(dim=(0, 2))
        if ctx.needs_input_grad[2]:
            grad_beta = grad_out.sum(dim=(0, 2))
        if ctx.needs_input_grad[0]:
            gxhat = (grad_out * gamma[:, None]).reshape(n, ctx.groups, -1)
            grad_x = rstd * (gxhat - gxhat.mean(-1, keepdim=True)
                             - xhat * (gxhat * xhat).mean(-1, keepdim=True))
            grad_x = grad_x.reshape(n, c, length)
        return grad_x, grad_gamma, None, None, None  # BUG

    @staticmethod
    def example_inputs():
        return _gn_inputs()


def _se_inputs():
    gen = torch.Generator().manual_seed(23)
    return (torch.randn(3, 4, 5, dtype=torch.float64, generator=gen),
            torch.randn(2, 4, dtype=torch.float64, generator=gen),
            torch.randn(4, 2, dtype=torch.float64, generator=gen))


def _se_forward(ctx, x, w1, w2):
    s = x.mean(dim=2)
    pre = s @ w1.t()
    h = torch.relu(pre)
    a = torch.sigmoid(h @ w2.t())
    ctx.save_for_backward(x, w1, w2, s, pre, h, a)
    return x * a[:, :, None]


class DistantSqueezeExcite(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w1, w2):
        return _se_forward(ctx, x, w1, w2)

    @staticmethod
    def backward(ctx, grad_out):
        x, w1, w2, s, pre, h, a = ctx.saved_tensors
        grad_a = (grad_out * x).sum(dim=2)
        grad_z = grad_a * a * (1 - a)
        grad_w2 = grad_z.t() @ h
        grad_h = grad_z @ w2
        grad_pre = grad_h * (pre > 0)
        grad_w1 = grad_pre.t() @ s
        grad_s = grad_pre @ w1
        grad_x = grad_out * a[:, :, None] + grad_s[:, :, None] / x.shape[2]
        return grad_x, grad_w1, grad_w2

    @staticmethod
    def example_inputs():
        return _se_inputs()


class DistantSqueezeExciteReluMaskAfter(torch.autograd.Function):
    bug = {"kind": "region", "input": "w1",
           "note": "the ReLU mask is taken from the output h >= 0 (true everywhere) instead of the pre-activation > 0"}

    @staticmethod
    def forward(ctx, x, w1, w2):
        return _se_forward(ctx, x, w1, w2)

    @staticmethod
    def backward(ctx, grad_out):
        x, w1, w2, s, pre, h, a = ctx.saved_tensors
        grad_a = (grad_out * x).sum(dim=2)
        grad_z = grad_a * a * (1 - a)
        grad_w2 = grad_z.t() @ h
        grad_h = grad_z @ w2
        grad_pre = grad_h * (h >= 0)  # BUG
        grad_w1 = grad_pre.t() @ s
        grad_s = grad_pre @ w1
        grad_x = grad_out * a[:, :, None] + grad_s[:, :, None] / x.shape[2]
        return grad_x, grad_w1, grad_w2

    @staticmethod
    def example_inputs():
        return _se_inputs()


class DistantSqueezeExciteGateOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "x's gradient keeps only the direct path through the gate product, not the path through the squeezed mean"}

    @staticmethod
    def forward(ctx, x, w1, w2):
        return _se_forward(ctx, x, w1, w2)

    @staticmethod
    def backward(ctx, grad_out):
        x, w1, w2, s, pre, h, a = ctx.saved_tensors
        grad_a = (grad_out * x).sum(dim=2)
        grad_z = grad_a * a * (1 - a)
        grad_w2 = grad_z.t() @ h
        grad_pre = (grad_z @ w2) * (pre > 0)
        grad_w1 = grad_pre.t() @ s
        grad_x = grad_out * a[:, :, None]  # BUG
        return grad_x, grad_w1, grad_w2

    @staticmethod
    def example_inputs():
        return _se_inputs()


class DistantSqueezeExciteTanhGate(torch.autograd.Function):
    bug = {"kind": "none", "input": "w2",
           "note": "the gate's derivative is written as tanh's, 1 - a**2, for a sigmoid gate: a different function's derivative"}

    @staticmethod
    def forward(ctx, x, w1, w2):
        return _se_forward(ctx, x, w1, w2)

    @staticmethod
    def backward(ctx, grad_out):
        x, w1, w2, s, pre, h, a = ctx.saved_tensors
        grad_a = (grad_out * x).sum(dim=2)
        grad_z = grad_a * (1 - a * a)  # BUG
        grad_w2 = grad_z.t() @ h
        grad_pre = (grad_z @ w2) * (pre > 0)
        grad_w1 = grad_pre.t() @ s
        grad_s = grad_pre @ w1
        grad_x = grad_out * a[:, :, None] + grad_s[:, :, None] / x.shape[2]
        return grad_x, grad_w1, grad_w2

    @staticmethod
    def example_inputs():
        return _se_inputs()
