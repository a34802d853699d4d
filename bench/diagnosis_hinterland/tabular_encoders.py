"""Encoders of numeric and categorical columns for tabular deep learning: a piecewise-linear
encoding at fixed bin edges, a smoothed per-category mean (target-encoding-like) by index_add_ with
counts, and a per-feature batch standardiser with an affine."""
import torch

EDGES = (-1.5, -0.75, 0.0, 0.75)  # three bins of width 0.75
WIDTH = 0.75
SMOOTHING = 2.0
EPS = 1e-5


# ------------------------------------------------------------ piecewise-linear encoding
def _ple_inputs():
    x = torch.tensor([[-1.2, 0.3, 1.1], [0.5, -0.4, -1.9], [-0.2, 1.4, 0.35], [0.9, -1.05, 0.6]],
                     dtype=torch.float64)  # (B, F) with F = 3 columns, none near an edge
    return (x,)


def _ple_forward(ctx, x):
    lower = torch.tensor(EDGES[:-1], dtype=x.dtype)
    z = (x[..., None] - lower) / WIDTH  # (B, F, bins)
    ctx.save_for_backward(z)
    return z.clamp(0.0, 1.0)


class HinterlandPiecewiseLinearEncoding(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _ple_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        inside = ((z > 0) & (z < 1)).to(grad_out.dtype)
        return (grad_out * inside / WIDTH).sum(-1)

    @staticmethod
    def example_inputs():
        return _ple_inputs()


class HinterlandPiecewiseLinearEncodingOpenTop(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the bin mask forgets the upper clamp, so saturated bins (z >= 1) still pass gradient"}

    @staticmethod
    def forward(ctx, x):
        return _ple_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        inside = (z > 0).to(grad_out.dtype)  # BUG
        return (grad_out * inside / WIDTH).sum(-1)

    @staticmethod
    def example_inputs():
        return _ple_inputs()


class HinterlandPiecewiseLinearEncodingColumnSum(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the bins' contributions are summed over the column dim (1) instead of the bin dim (-1)"}

    @staticmethod
    def forward(ctx, x):
        return _ple_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        inside = ((z > 0) & (z < 1)).to(grad_out.dtype)
        return (grad_out * inside / WIDTH).sum(1)  # BUG

    @staticmethod
    def example_inputs():
        return _ple_inputs()


class HinterlandPiecewiseLinearEncodingNoWidth(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the 1/width of the bin's linear ramp is left out of the chain rule"}

    @staticmethod
    def forward(ctx, x):
        return _ple_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        inside = ((z > 0) & (z < 1)).to(grad_out.dtype)
        return (grad_out * inside).sum(-1)  # BUG

    @staticmethod
    def example_inputs():
        return _ple_inputs()


# ------------------------------------------------------------ smoothed per-category mean
def _target_inputs():
    gen = torch.Generator().manual_seed(5501)
    y = torch.randn(8, dtype=torch.float64, generator=gen)
    cat = torch.tensor([0, 2, 1, 0, 2, 2, 3, 0], dtype=torch.int64)
    prior = torch.randn(4, dtype=torch.float64, generator=gen)
    return y, cat, prior


def _target_forward(ctx, y, cat, prior):
    K = prior.numel()
    counts = torch.zeros(K, dtype=y.dtype).index_add_(0, cat, torch.ones_like(y))
    sums = torch.zeros(K, dtype=y.dtype).index_add_(0, cat, y)
    enc = (sums + SMOOTHING * prior) / (counts + SMOOTHING)
    ctx.save_for_backward(counts)
    ctx.cat = cat
    return enc[cat]


class HinterlandSmoothedCategoryMean(torch.autograd.Function):
    """Each row gets its category's smoothed mean (sum_y + a * prior) / (count + a)."""

    bug = None

    @staticmethod
    def forward(ctx, y, cat, prior):
        return _target_forward(ctx, y, cat, prior)

    @staticmethod
    def backward(ctx, grad_out):
        (counts,) = ctx.saved_tensors
        grad_enc = torch.zeros_like(counts).index_add_(0, ctx.cat, grad_out)
        grad_y = grad_prior = None
        if ctx.needs_input_grad[0]:
            grad_y = (grad_enc / (counts + SMOOTHING))[ctx.cat]
        if ctx.needs_input_grad[2]:
            grad_prior = grad_enc * SMOOTHING / (counts + SMOOTHING)
        return grad_y, None, grad_prior

    @staticmethod
    def example_inputs():
        return _target_inputs()


class HinterlandSmoothedCategoryMeanScatter(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "y",
           "note": "the rows' upstream gradients are gathered per category with scatter_, which keeps one row per category"}

    @staticmethod
    def forward(ctx, y, cat, prior):
        return _target_forward(ctx, y, cat, prior)

    @staticmethod
    def backward(ctx, grad_out):
        (counts,) = ctx.saved_tensors
        grad_enc = torch.zeros_like(counts).scatter_(0, ctx.cat, grad_out)  # BUG
        grad_y = grad_prior = None
        if ctx.needs_input_grad[0]:
            grad_y = (grad_enc / (counts + SMOOTHING))[ctx.cat]
        if ctx.needs_input_grad[2]:
            grad_prior = grad_enc * SMOOTHING / (counts + SMOOTHING)
        return grad_y, None, grad_prior

    @staticmethod
    def example_inputs():
        return _target_inputs()


class HinterlandSmoothedCategoryMeanPriorFlag(torch.autograd.Function):
    bug = {"kind": "zero", "input": "prior",
           "note": "the prior's gradient is guarded by needs_input_grad[1] (the integer categories), so it is always None"}

    @staticmethod
    def forward(ctx, y, cat, prior):
        return _target_forward(ctx, y, cat, prior)

    @staticmethod
    def backward(ctx, grad_out):
        (counts,) = ctx.saved_tensors
        grad_enc = torch.zeros_like(counts).index_add_(0, ctx.cat, grad_out)
        grad_y = grad_prior = None
        if ctx.needs_input_grad[0]:
            grad_y = (grad_enc / (counts + SMOOTHING))[ctx.cat]
        if ctx.needs_input_grad[1]:  # BUG
            grad_prior = grad_enc * SMOOTHING / (counts + SMOOTHING)
        return grad_y, None, grad_prior

    @staticmethod
    def example_inputs():
        return _target_inputs()


# ---------------------------------------------------------------- batch standardiser
def _standardize_inputs():
    gen = torch.Generator().manual_seed(5502)
    x = torch.randn(5, 3, dtype=torch.float64, generator=gen) * 2.0 + 1.0
    gamma = torch.rand(3, dtype=torch.float64, generator=gen) + 0.5
    beta = torch.randn(3, dtype=torch.float64, generator=gen)
    return x, gamma, beta


def _standardize_forward(ctx, x, gamma, beta):
    mu = x.mean(0)
    rstd = torch.rsqrt(x.var(0, unbiased=False) + EPS)
    xhat = (x - mu) * rstd
    ctx.save_for_backward(x, xhat, rstd, gamma)
    return gamma * xhat + beta


class HinterlandBatchStandardize(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _standardize_forward(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, rstd, gamma = ctx.saved_tensors
        g = grad_out * gamma
        grad_x = rstd * (g - g.mean(0) - xhat * (g * xhat).mean(0))
        return grad_x, (grad_out * xhat).sum(0), grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _standardize_inputs()


class HinterlandBatchStandardizeNoMeanTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "the term from the batch mean (-mean of the upstream gradient) is left out"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _standardize_forward(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, rstd, gamma = ctx.saved_tensors
        g = grad_out * gamma
        grad_x = rstd * (g - xhat * (g * xhat).mean(0))  # BUG
        return grad_x, (grad_out * xhat).sum(0), grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _standardize_inputs()


class HinterlandBatchStandardizeRawGamma(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "gamma",
           "note": "gamma's gradient uses the raw column x instead of the standardised x-hat"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _standardize_forward(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, rstd, gamma = ctx.saved_tensors
        g = grad_out * gamma
        grad_x = rstd * (g - g.mean(0) - xhat * (g * xhat).mean(0))
        grad_gamma = (grad_out * x).sum(0)  # BUG
        return grad_x, grad_gamma, grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _standardize_inputs()


class HinterlandBatchStandardizeRowMeans(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the backward's means are taken over each row's features (layer-norm style) instead of over the batch"}

    @staticmethod
    def forward(ctx, x, gamma, beta):
        return _standardize_forward(ctx, x, gamma, beta)

    @staticmethod
    def backward(ctx, grad_out):
        x, xhat, rstd, gamma = ctx.saved_tensors
        g = grad_out * gamma
        grad_x = rstd * (g - g.mean(1, keepdim=True) - xhat * (g * xhat).mean(1, keepdim=True))  # BUG
        return grad_x, (grad_out * xhat).sum(0), grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _standardize_inputs()
