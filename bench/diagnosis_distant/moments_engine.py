"""Statistics on gradcli's engine: standardised moments (skewness, kurtosis), a weighted variance,
a z-score and a per-position weighted mean."""
import math

import gradcli as torch


def _rows(seed, shape=(3, 6)):
    torch.manual_seed(seed)
    return (torch.randn(*shape, dtype=torch.float64),)


def _centred(x):
    n = x.shape[1]
    d = x - x.mean(dim=1, keepdim=True)
    m2 = (d * d).sum(dim=1, keepdim=True) / n
    return n, d, m2


class DistantSkewness(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        n, d, m2 = _centred(x)
        m3 = (d ** 3).sum(dim=1, keepdim=True) / n
        ctx.save_for_backward(d, m2, m3)
        return (m3 / m2 ** 1.5)[:, 0]

    @staticmethod
    def backward(ctx, grad_out):
        d, m2, m3 = ctx.saved_tensors
        n = d.shape[1]
        dm2 = 2 * d / n
        dm3 = (3 * d * d - 3 * m2) / n
        grad = dm3 / m2 ** 1.5 - 1.5 * m3 / m2 ** 2.5 * dm2
        return grad * grad_out[:, None]

    @staticmethod
    def example_inputs():
        return _rows(81)


class DistantSkewnessMeanPathDropped(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the third moment's derivative leaves out -3*m2/n, the path through the mean"}

    @staticmethod
    def forward(ctx, x):
        n, d, m2 = _centred(x)
        m3 = (d ** 3).sum(dim=1, keepdim=True) / n
        ctx.save_for_backward(d, m2, m3)
        return (m3 / m2 ** 1.5)[:, 0]

    @staticmethod
    def backward(ctx, grad_out):
        d, m2, m3 = ctx.saved_tensors
        n = d.shape[1]
        dm2 = 2 * d / n
        dm3 = 3 * d * d / n  # BUG
        grad = dm3 / m2 ** 1.5 - 1.5 * m3 / m2 ** 2.5 * dm2
        return grad * grad_out[:, None]

    @staticmethod
    def example_inputs():
        return _rows(81)


class DistantKurtosis(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        n, d, m2 = _centred(x)
        m3 = (d ** 3).sum(dim=1, keepdim=True) / n
        m4 = (d ** 4).sum(dim=1, keepdim=True) / n
        ctx.save_for_backward(d, m2, m3, m4)
        return (m4 / (m2 * m2) - 3.0)[:, 0]

    @staticmethod
    def backward(ctx, grad_out):
        d, m2, m3, m4 = ctx.saved_tensors
        n = d.shape[1]
        dm2 = 2 * d / n
        dm4 = 4 * (d ** 3 - m3) / n
        grad = dm4 / m2 ** 2 - 2 * m4 / m2 ** 3 * dm2
        return grad * grad_out[:, None]

    @staticmethod
    def example_inputs():
        return _rows(82)


class DistantKurtosisRatioOfFirstPower(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "differentiates m4 / m2 (the quotient rule for the first power of m2) instead of m4 / m2**2"}

    @staticmethod
    def forward(ctx, x):
        n, d, m2 = _centred(x)
        m3 = (d ** 3).sum(dim=1, keepdim=True) / n
        m4 = (d ** 4).sum(dim=1, keepdim=True) / n
        ctx.save_for_backward(d, m2, m3, m4)
        return (m4 / (m2 * m2) - 3.0)[:, 0]

    @staticmethod
    def backward(ctx, grad_out):
        d, m2, m3, m4 = ctx.saved_tensors
        n = d.shape[1]
        dm2 = 2 * d / n
        dm4 = 4 * (d ** 3 - m3) / n
        grad = (dm4 * m2 - m4 * dm2) / (m2 * m2)  # BUG
        return grad * grad_out[:, None]

    @staticmethod
    def example_inputs():
        return _rows(82)


def _wvar_inputs():
    torch.manual_seed(83)
    return torch.randn(3, 5, dtype=torch.float64), torch.rand(5, dtype=torch.float64) + 0.5


def _wvar_forward(ctx, x, w):
    total = w.sum()
    mu = (x * w).sum(dim=1, keepdim=True) / total
    d = x - mu
    var = (w * d * d).sum(dim=1, keepdim=True) / total
    ctx.save_for_backward(w, d, var)
    ctx.total = total
    return var[:, 0]


class DistantWeightedVariance(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        return _wvar_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        w, d, var = ctx.saved_tensors
        g = grad_out[:, None]
        grad_x = g * 2 * w * d / ctx.total
        grad_w = (g * (d * d - var)).sum(dim=0) / ctx.total
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _wvar_inputs()


class DistantWeightedVarianceNormaliserDropped(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "w",
           "note": "the weights' gradient leaves out -var/W, the term through the normaliser sum(w)"}

    @staticmethod
    def forward(ctx, x, w):
        return _wvar_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        w, d, var = ctx.saved_tensors
        g = grad_out[:, None]
        grad_x = g * 2 * w * d / ctx.total
        grad_w = (g * d * d).sum(dim=0) / ctx.total  # BUG
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _wvar_inputs()


class DistantZScore(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        d = x - x.mean(dim=1, keepdim=True)
        sd = torch.sqrt((d * d).mean(dim=1, keepdim=True))
        ctx.save_for_backward(d, sd)
        return d / sd

    @staticmethod
    def backward(ctx, grad_out):
        d, sd = ctx.saved_tensors
        z = d / sd
        gm = grad_out.mean(dim=1, keepdim=True)
        gz = (grad_out * z).mean(dim=1, keepdim=True)
        return (grad_out - gm - z * gz) / sd

    @staticmethod
    def example_inputs():
        return _rows(84, (4, 5))


class DistantZScoreDividedInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "forward saves the centred d and then divides it by sd in place to make the output; backward divides it again"}

    @staticmethod
    def forward(ctx, x):
        d = x - x.mean(dim=1, keepdim=True)
        sd = torch.sqrt((d * d).mean(dim=1, keepdim=True))
        ctx.save_for_backward(d, sd)
        d.div_(sd)  # BUG
        return d.clone()

    @staticmethod
    def backward(ctx, grad_out):
        d, sd = ctx.saved_tensors
        z = d / sd
        gm = grad_out.mean(dim=1, keepdim=True)
        gz = (grad_out * z).mean(dim=1, keepdim=True)
        return (grad_out - gm - z * gz) / sd

    @staticmethod
    def example_inputs():
        return _rows(84, (4, 5))


def _wmean_inputs():
    torch.manual_seed(85)
    return torch.randn(2, 4, 3, dtype=torch.float64), torch.rand(4, dtype=torch.float64) + 0.5


def _wmean_forward(ctx, x, w):
    total = w.sum()
    out = (x * w[None, :, None]).sum(dim=1) / total  # (B, D)
    ctx.save_for_backward(x, w, out)
    ctx.total = total
    return out


class DistantPositionWeightedMean(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        return _wmean_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        x, w, out = ctx.saved_tensors
        g = grad_out[:, None, :]
        grad_x = g * w[None, :, None] / ctx.total
        grad_w = (g * (x - out[:, None, :])).sum(dim=(0, 2)) / ctx.total
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _wmean_inputs()


class DistantPositionWeightedMeanFeaturesKept(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "w",
           "note": "the weights' gradient is summed over the batch only, not over the feature dim w was broadcast along"}

    @staticmethod
    def forward(ctx, x, w):
        return _wmean_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        x, w, out = ctx.saved_tensors
        g = grad_out[:, None, :]
        grad_x = g * w[None, :, None] / ctx.total
        grad_w = (g * (x - out[:, None, :])).sum(dim=0) / ctx.total  # BUG
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _wmean_inputs()
