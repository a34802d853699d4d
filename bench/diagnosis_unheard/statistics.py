"""Statistics: a Pearson correlation loss, the covariance of a batch, whitening by the batch
std, a soft histogram with Gaussian kernels and a log-sum-exp smooth maximum with a temperature."""
import torch

EPS = 1e-5
SIGMA = 0.5  # histogram kernel width


def _pearson_inputs():
    g = torch.Generator().manual_seed(21)
    x = torch.randn(3, 5, dtype=torch.float64, generator=g)
    y = 0.5 * x + torch.randn(3, 5, dtype=torch.float64, generator=g)
    return x, y


def _centred(t):
    tc = t - t.mean(-1, keepdim=True)
    return tc, tc.norm(dim=-1, keepdim=True)


# -------------------------------------------------------------------------------- Pearson
class UnheardPearsonLoss(torch.autograd.Function):
    """Per-row loss 1 - corr(x, y)."""

    bug = None

    @staticmethod
    def forward(ctx, x, y):
        xc, nx = _centred(x)
        yc, ny = _centred(y)
        r = (xc * yc).sum(-1, keepdim=True) / (nx * ny)
        ctx.save_for_backward(xc, yc, nx, ny, r)
        return 1.0 - r.squeeze(-1)

    @staticmethod
    def backward(ctx, grad_loss):
        xc, yc, nx, ny, r = ctx.saved_tensors
        g = grad_loss.unsqueeze(-1)
        dr_dx = yc / (nx * ny) - r * xc / nx ** 2
        dr_dy = xc / (nx * ny) - r * yc / ny ** 2
        return -g * dr_dx, -g * dr_dy

    example_inputs = staticmethod(_pearson_inputs)


class UnheardPearsonLossFrozenNorms(torch.autograd.Function):
    """Same loss, backward as the author derived it on paper: r = <xc, yc> / (|xc| |yc|)."""

    bug = {"kind": "missing_term", "input": "x",
           "note": "|xc| is treated as a constant: the term -r xc / |xc|^2 from differentiating "
                   "the norm is missing"}

    @staticmethod
    def forward(ctx, x, y):
        xc, nx = _centred(x)
        yc, ny = _centred(y)
        r = (xc * yc).sum(-1, keepdim=True) / (nx * ny)
        ctx.save_for_backward(x, y)
        return 1.0 - r.squeeze(-1)

    @staticmethod
    def backward(ctx, grad_loss):
        x, y = ctx.saved_tensors
        xc, nx = _centred(x)
        yc, ny = _centred(y)
        denom = nx * ny
        r = (xc * yc).sum(-1, keepdim=True) / denom
        grad_x = -grad_loss[:, None] * yc / denom  # BUG
        grad_y = -grad_loss[:, None] * (xc / denom - r * yc / ny.square())
        return grad_x, grad_y

    example_inputs = staticmethod(_pearson_inputs)


class UnheardPearsonLossUnweighted(torch.autograd.Function):
    """Same loss; the author kept the row statistics on ctx."""

    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "the x gradient is dr/dx of each row without multiplying by that row's "
                   "incoming gradient"}

    @staticmethod
    def forward(ctx, x, y):
        ctx.xc, ctx.nx = _centred(x)
        ctx.yc, ctx.ny = _centred(y)
        ctx.r = (ctx.xc * ctx.yc).sum(-1, keepdim=True) / (ctx.nx * ctx.ny)
        return 1.0 - ctx.r.squeeze(-1)

    @staticmethod
    def backward(ctx, grad_loss):
        inv = 1.0 / (ctx.nx * ctx.ny)
        grad_x = -(ctx.yc * inv - ctx.r * ctx.xc / ctx.nx ** 2)  # BUG
        grad_y = -grad_loss.unsqueeze(1) * (ctx.xc * inv - ctx.r * ctx.yc / ctx.ny ** 2)
        return grad_x, grad_y

    example_inputs = staticmethod(_pearson_inputs)


# ------------------------------------------------------------------------------ covariance
def _cov_inputs():
    g = torch.Generator().manual_seed(22)
    return (torch.randn(5, 3, dtype=torch.float64, generator=g),)


class UnheardBatchCovariance(torch.autograd.Function):
    """Unbiased covariance (D, D) of a batch (N, D)."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        n = x.shape[0]
        xc = x - x.mean(0, keepdim=True)
        ctx.save_for_backward(xc)
        return xc.T @ xc / (n - 1)

    @staticmethod
    def backward(ctx, grad_cov):
        (xc,) = ctx.saved_tensors
        return xc @ (grad_cov + grad_cov.T) / (xc.shape[0] - 1)

    example_inputs = staticmethod(_cov_inputs)


class UnheardBatchCovarianceRowCentred(torch.autograd.Function):
    """Same covariance (forward by torch.cov); backward re-centres the saved batch itself."""

    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the batch is re-centred over the feature axis (dim=1) instead of the batch "
                   "axis it was centred over in forward"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.cov(x.T)

    @staticmethod
    def backward(ctx, grad_cov):
        (x,) = ctx.saved_tensors
        n = x.shape[0]
        xc = x - x.mean(dim=1, keepdim=True)  # BUG
        sym = grad_cov + grad_cov.transpose(0, 1)
        return torch.mm(xc, sym) / (n - 1)

    example_inputs = staticmethod(_cov_inputs)


class UnheardBatchCovarianceBiasedBackward(torch.autograd.Function):
    """Same covariance (forward by torch.cov, unbiased); backward written from the 1/N formula."""

    bug = {"kind": "scale", "input": "x",
           "note": "backward divides by N while torch.cov's forward divides by N - 1"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x - x.mean(0))
        return torch.cov(x.T)

    @staticmethod
    def backward(ctx, grad_cov):
        (xc,) = ctx.saved_tensors
        n = xc.shape[0]
        grad = torch.einsum("nd,de->ne", xc, grad_cov) + torch.einsum("nd,ed->ne", xc, grad_cov)
        return grad / n  # BUG

    example_inputs = staticmethod(_cov_inputs)


# ------------------------------------------------------------------------------- whitening
def _whiten_inputs():
    g = torch.Generator().manual_seed(23)
    return (torch.randn(6, 3, dtype=torch.float64, generator=g) * 2 + 1,)


class UnheardBatchWhiten(torch.autograd.Function):
    """(x - batch mean) / batch std, per feature, population variance."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        mu = x.mean(0, keepdim=True)
        std = torch.sqrt(x.var(0, unbiased=False, keepdim=True) + EPS)
        y = (x - mu) / std
        ctx.save_for_backward(y, std)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        y, std = ctx.saved_tensors
        mean_g = grad_y.mean(0, keepdim=True)
        mean_gy = (grad_y * y).mean(0, keepdim=True)
        return (grad_y - mean_g - y * mean_gy) / std

    example_inputs = staticmethod(_whiten_inputs)


class UnheardBatchWhitenFeatureMeans(torch.autograd.Function):
    """Same whitening; backward projections written with a small helper."""

    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the two projections average over the features (dim=1) instead of over the "
                   "batch (dim=0)"}

    @staticmethod
    def forward(ctx, x):
        mu = x.mean(0, keepdim=True)
        var = ((x - mu) ** 2).mean(0, keepdim=True)
        inv_std = (var + EPS).rsqrt()
        ctx.save_for_backward((x - mu) * inv_std, inv_std)
        return (x - mu) * inv_std

    @staticmethod
    def backward(ctx, grad_y):
        y, inv_std = ctx.saved_tensors

        def project(g, dim):
            return g - g.mean(dim, keepdim=True) - y * (g * y).mean(dim, keepdim=True)

        return project(grad_y, 1) * inv_std  # BUG

    example_inputs = staticmethod(_whiten_inputs)


class UnheardBatchWhitenReusedBuffer(torch.autograd.Function):
    """Same whitening; forward divides the centred batch in place to save a buffer."""

    bug = {"kind": "inplace", "input": "x",
           "note": "the centred batch kept on ctx is divided by std in place after being "
                   "stored, so backward's y = xc / std divides twice"}

    @staticmethod
    def forward(ctx, x):
        xc = x - x.mean(0, keepdim=True)
        std = (xc.pow(2).mean(0, keepdim=True) + EPS).sqrt()
        ctx.xc, ctx.std = xc, std
        return xc.div_(std)  # BUG

    @staticmethod
    def backward(ctx, grad_y):
        y = ctx.xc / ctx.std
        g = grad_y - grad_y.mean(0, keepdim=True)
        g = g - y * (grad_y * y).mean(0, keepdim=True)
        return g / ctx.std

    example_inputs = staticmethod(_whiten_inputs)


# --------------------------------------------------------------------------- soft histogram
def _hist_inputs():
    g = torch.Generator().manual_seed(24)
    x = torch.rand(5, dtype=torch.float64, generator=g) * 2 - 1
    centers = torch.linspace(-1, 1, 5, dtype=torch.float64) + 0.1 * torch.randn(
        5, dtype=torch.float64, generator=g)
    return x, centers


def _kernel(x, centers):
    diff = x[:, None] - centers[None, :]
    return diff, torch.exp(-diff ** 2 / (2 * SIGMA ** 2))


class UnheardSoftHistogram(torch.autograd.Function):
    """h_k = sum_i exp(-(x_i - c_k)^2 / (2 sigma^2)): a differentiable histogram of x."""

    bug = None

    @staticmethod
    def forward(ctx, x, centers):
        _, w = _kernel(x, centers)
        ctx.save_for_backward(x, centers)
        return w.sum(0)

    @staticmethod
    def backward(ctx, grad_h):
        x, centers = ctx.saved_tensors
        diff, w = _kernel(x, centers)
        dw = grad_h[None, :] * w * diff / SIGMA ** 2  # d/dc of each kernel, times g_k
        return -dw.sum(1), dw.sum(0)

    example_inputs = staticmethod(_hist_inputs)


class UnheardSoftHistogramCentreOffset(torch.autograd.Function):
    """Same histogram; each gradient written with its own offset."""

    bug = {"kind": "sign", "input": "centers",
           "note": "d/dc_k exp(-(x - c_k)^2 / 2s^2) is (x - c_k)/s^2 times the kernel; (c_k - x) "
                   "is used, flipping the whole centre gradient"}

    @staticmethod
    def forward(ctx, x, centers):
        _, w = _kernel(x, centers)
        ctx.save_for_backward(x, centers, w)
        return w.sum(0)

    @staticmethod
    def backward(ctx, grad_h):
        x, centers, w = ctx.saved_tensors
        weighted = w * grad_h.unsqueeze(0) / SIGMA ** 2
        grad_x = (weighted * (centers[None, :] - x[:, None])).sum(1)
        grad_c = (weighted * (centers[None, :] - x[:, None])).sum(0)  # BUG
        return grad_x, grad_c

    example_inputs = staticmethod(_hist_inputs)


class UnheardSoftHistogramPerBin(torch.autograd.Function):
    """Same histogram; the x gradient kept per (sample, bin)."""

    bug = {"kind": "not_reduced", "input": "x",
           "note": "the x gradient is left as the (sample, bin) table; it must be summed over "
                   "the bins"}

    @staticmethod
    def forward(ctx, x, centers):
        _, w = _kernel(x, centers)
        ctx.save_for_backward(x, centers)
        return w.sum(0)

    @staticmethod
    def backward(ctx, grad_h):
        x, centers = ctx.saved_tensors
        diff, w = _kernel(x, centers)
        grad_x = -grad_h * w * diff / SIGMA ** 2  # BUG
        grad_c = (grad_h * w * diff / SIGMA ** 2).sum(0)
        return grad_x, grad_c

    example_inputs = staticmethod(_hist_inputs)


class UnheardSoftHistogramKernelAsSlope(torch.autograd.Function):
    """Same histogram; the sample gradient written from a mistaken derivation."""

    bug = {"kind": "none", "input": "x",
           "note": "the x gradient is the kernel itself summed against g, not its derivative: "
                   "an entirely wrong formula"}

    @staticmethod
    def forward(ctx, x, centers):
        _, w = _kernel(x, centers)
        ctx.save_for_backward(x, centers)
        return w.sum(0)

    @staticmethod
    def backward(ctx, grad_h):
        x, centers = ctx.saved_tensors
        diff, w = _kernel(x, centers)
        grad_x = w @ grad_h  # BUG
        grad_c = w.mul(diff).mul(grad_h).sum(0) / SIGMA ** 2
        return grad_x, grad_c

    example_inputs = staticmethod(_hist_inputs)


# ------------------------------------------------------------------------------ smooth max
def _smoothmax_inputs():
    g = torch.Generator().manual_seed(25)
    return (torch.randn(3, 4, dtype=torch.float64, generator=g),
            torch.tensor([0.7], dtype=torch.float64))


class UnheardSmoothMax(torch.autograd.Function):
    """tau * logsumexp(x / tau) over the last axis: a smooth row maximum."""

    bug = None

    @staticmethod
    def forward(ctx, x, tau):
        lse = torch.logsumexp(x / tau, dim=-1)
        ctx.save_for_backward(x, tau, lse)
        return tau * lse

    @staticmethod
    def backward(ctx, grad_m):
        x, tau, lse = ctx.saved_tensors
        p = torch.softmax(x / tau, dim=-1)
        grad_x = grad_m[:, None] * p
        grad_tau = (grad_m * (lse - (p * x).sum(-1) / tau)).sum().reshape(1)
        return grad_x, grad_tau

    example_inputs = staticmethod(_smoothmax_inputs)


class UnheardSmoothMaxColumnWeights(torch.autograd.Function):
    """Same smooth max; the softmax weights computed by hand, max-shifted."""

    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the softmax weights are normalised over the rows (dim=0) instead of over "
                   "the reduced last axis"}

    @staticmethod
    def forward(ctx, x, tau):
        ctx.save_for_backward(x, tau)
        return tau * torch.logsumexp(x / tau, dim=-1)

    @staticmethod
    def backward(ctx, grad_m):
        x, tau = ctx.saved_tensors
        z = x / tau
        z = z - z.max(dim=-1, keepdim=True).values
        e = z.exp()
        p = e / e.sum(dim=0, keepdim=True)  # BUG
        lse = torch.logsumexp(x / tau, dim=-1)
        grad_tau = (grad_m * (lse - (torch.softmax(x / tau, -1) * x).sum(-1) / tau)).sum()
        return grad_m.unsqueeze(-1) * p, grad_tau.reshape(1)

    example_inputs = staticmethod(_smoothmax_inputs)
