"""1-d pooling along the last dim, and Functions with two outputs.

Written against gradcli's engine (`import gradcli as torch`), which speaks the
torch.autograd.Function API, so this file runs without PyTorch. Blind corpus: see README.md.
"""
import gradcli as torch

WINDOW = 2


def _distinct(seed, rows=3, cols=8):
    """Values with no near-ties, so max pooling has no kink at the inputs."""
    torch.manual_seed(seed)
    base = torch.randn(rows, cols) * 0.01
    return base + torch.arange(rows * cols).reshape(rows, cols)[:, torch.randperm(cols)] * 0.37


# ---------------------------------------------------------------------- average pooling
class AvgPool1d(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        n, length = x.shape
        return x.reshape(n, length // WINDOW, WINDOW).mean(-1)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.repeat_interleave(WINDOW, dim=1) / WINDOW


class AvgPool1dMissingDivide(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "spreads grad_out over the window without dividing by the window size"}

    @staticmethod
    def forward(ctx, x):
        n, length = x.shape
        return x.reshape(n, length // WINDOW, WINDOW).mean(-1)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.repeat_interleave(WINDOW, dim=1)  # BUG


# -------------------------------------------------------------------- max pooling, k = s
class MaxPool1d(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        n, length = x.shape
        values, where = x.reshape(n, length // WINDOW, WINDOW).max(dim=-1)
        ctx.save_for_backward(where)
        ctx.length = length
        return values

    @staticmethod
    def backward(ctx, grad_out):
        (where,) = ctx.saved_tensors
        n, windows = grad_out.shape
        positions = where + torch.arange(windows) * WINDOW
        return torch.zeros(n, ctx.length).scatter_add(1, positions, grad_out)

    @staticmethod
    def example_inputs():
        return (_distinct(81),)


class MaxPool1dGradToWholeWindow(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "sends grad_out to every element of the window, as average pooling without "
                   "the 1/k: a wrong formula, no simple pattern"}

    @staticmethod
    def forward(ctx, x):
        n, length = x.shape
        values, where = x.reshape(n, length // WINDOW, WINDOW).max(dim=-1)
        ctx.save_for_backward(where)
        ctx.length = length
        return values

    @staticmethod
    def backward(ctx, grad_out):
        (where,) = ctx.saved_tensors
        return grad_out.repeat_interleave(WINDOW, dim=1)  # BUG

    @staticmethod
    def example_inputs():
        return (_distinct(81),)


# ----------------------------------------------------- overlapping max pooling, k=3, s=1
def _windows(x):
    span = x.shape[1] - 2
    return torch.stack([x[:, 0:span], x[:, 1:span + 1], x[:, 2:span + 2]], dim=-1)


class OverlappingMaxPool(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        values, where = _windows(x).max(dim=-1)
        ctx.save_for_backward(where)
        ctx.length = x.shape[1]
        return values

    @staticmethod
    def backward(ctx, grad_out):
        (where,) = ctx.saved_tensors
        positions = where + torch.arange(grad_out.shape[1])
        return torch.zeros(grad_out.shape[0], ctx.length).scatter_add(1, positions, grad_out)

    @staticmethod
    def example_inputs():
        return (_distinct(82),)


class OverlappingMaxPoolScatterOverwrites(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "an element that is the maximum of several overlapping windows gets only one "
                   "window's gradient (scatter, not scatter_add)"}

    @staticmethod
    def forward(ctx, x):
        values, where = _windows(x).max(dim=-1)
        ctx.save_for_backward(where)
        ctx.length = x.shape[1]
        return values

    @staticmethod
    def backward(ctx, grad_out):
        (where,) = ctx.saved_tensors
        positions = where + torch.arange(grad_out.shape[1])
        return torch.zeros(grad_out.shape[0], ctx.length).scatter(1, positions, grad_out)  # BUG

    @staticmethod
    def example_inputs():
        return (_distinct(82),)


# ------------------------------------------------------------------------ two outputs
class SinCos(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x), torch.cos(x)

    @staticmethod
    def backward(ctx, grad_sin, grad_cos):
        (x,) = ctx.saved_tensors
        return grad_sin * torch.cos(x) - grad_cos * torch.sin(x)


class SinCosCosineTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "d cos = -sin, but the cosine output's term is added"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x), torch.cos(x)

    @staticmethod
    def backward(ctx, grad_sin, grad_cos):
        (x,) = ctx.saved_tensors
        return grad_sin * torch.cos(x) + grad_cos * torch.sin(x)  # BUG


class MeanAndCentred(torch.autograd.Function):
    """(row mean, x - row mean)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        mean = x.mean(dim=1, keepdim=True)
        return mean, x - mean

    @staticmethod
    def backward(ctx, grad_mean, grad_centred):
        n = grad_centred.shape[1]
        return grad_mean / n + grad_centred - grad_centred.mean(dim=1, keepdim=True)


class MeanAndCentredDropsMeanOutput(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "only the centred output's gradient is propagated; the mean output's "
                   "contribution grad_mean / n is dropped"}

    @staticmethod
    def forward(ctx, x):
        mean = x.mean(dim=1, keepdim=True)
        return mean, x - mean

    @staticmethod
    def backward(ctx, grad_mean, grad_centred):
        return grad_centred - grad_centred.mean(dim=1, keepdim=True)  # BUG


def _polar_inputs():
    torch.manual_seed(83)
    return torch.rand(3, 4) + 0.5, torch.randn(3, 4)


class CartesianToPolar(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, px, py):
        r = torch.sqrt(px * px + py * py)
        ctx.save_for_backward(px, py, r)
        return r, torch.atan2(py, px)

    @staticmethod
    def backward(ctx, grad_r, grad_theta):
        px, py, r = ctx.saved_tensors
        r2 = r * r
        grad_px = grad_r * px / r - grad_theta * py / r2
        grad_py = grad_r * py / r + grad_theta * px / r2
        return grad_px, grad_py

    @staticmethod
    def example_inputs():
        return _polar_inputs()


class CartesianToPolarGradsSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "px",
           "note": "the gradients of the two coordinates are returned in each other's place"}

    @staticmethod
    def forward(ctx, px, py):
        r = torch.sqrt(px * px + py * py)
        ctx.save_for_backward(px, py, r)
        return r, torch.atan2(py, px)

    @staticmethod
    def backward(ctx, grad_r, grad_theta):
        px, py, r = ctx.saved_tensors
        r2 = r * r
        grad_px = grad_r * px / r - grad_theta * py / r2
        grad_py = grad_r * py / r + grad_theta * px / r2
        return grad_py, grad_px  # BUG

    @staticmethod
    def example_inputs():
        return _polar_inputs()
