"""A weighted geometric mean and a per-channel leaky gate on gradcli's engine (blind corpus yonder).
Runs without PyTorch."""
import math

import gradcli as torch


def _gm_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(3, 4, dtype=torch.float64, generator=g) + 0.5,
            torch.rand(4, dtype=torch.float64, generator=g) + 0.5)


def _gm_forward(ctx, x, w):
    total = w.sum()
    out = torch.exp((torch.log(x) * (w / total)).sum(dim=1))
    ctx.save_for_backward(x, w, out)
    ctx.total = total
    return out


class YonderWeightedGeoMean(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        return _gm_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        x, w, out = ctx.saved_tensors
        go = (grad_out * out)[:, None]
        grad_x = go * (w / ctx.total) / x
        grad_w = (go * (torch.log(x) - torch.log(out)[:, None])).sum(dim=0) / ctx.total
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _gm_inputs(0)


class YonderWeightedGeoMeanHelpers(torch.autograd.Function):
    """The same mean, backward through static helpers (a second twin)."""
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        return _gm_forward(ctx, x, w)

    @staticmethod
    def _grad_x(go, x, wn):
        return go * wn / x

    @staticmethod
    def _grad_w(go, x, out, total):
        return (go * (torch.log(x) - torch.log(out).unsqueeze(1))).sum(0) / total

    @staticmethod
    def backward(ctx, grad_out):
        x, w, out = ctx.saved_tensors
        go = (grad_out * out).unsqueeze(1)
        return (YonderWeightedGeoMeanHelpers._grad_x(go, x, w / w.sum()),
                YonderWeightedGeoMeanHelpers._grad_w(go, x, out, ctx.total))

    @staticmethod
    def example_inputs():
        return _gm_inputs(1)


class YonderWeightedGeoMeanNoNormaliserTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "w",
           "note": "the weight normalisation ignored in the weight gradient: the -log(out) term is left out"}

    @staticmethod
    def forward(ctx, x, w):
        return _gm_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        x, w, out = ctx.saved_tensors
        go = (grad_out * out)[:, None]
        grad_x = go * (w / ctx.total) / x
        grad_w = (go * torch.log(x)).sum(dim=0) / ctx.total  # BUG
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _gm_inputs(2)


class YonderWeightedGeoMeanArithmetic(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the input gradient of a weighted arithmetic mean (grad * w / sum w) used for the geometric mean"}

    @staticmethod
    def forward(ctx, x, w):
        return _gm_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        x, w, out = ctx.saved_tensors
        go = (grad_out * out)[:, None]
        grad_x = grad_out[:, None] * (w / ctx.total) * torch.ones_like(x)  # BUG
        grad_w = (go * (torch.log(x) - torch.log(out)[:, None])).sum(dim=0) / ctx.total
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _gm_inputs(3)


def _gate_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 4, dtype=torch.float64, generator=g),
            torch.rand(4, dtype=torch.float64, generator=g) * 0.5 + 0.1)


class YonderChannelLeakyGate(torch.autograd.Function):
    """A PReLU with one slope per column: x if x > 0 else slope * x."""
    bug = None

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, slope * x)

    @staticmethod
    def backward(ctx, grad_out):
        x, slope = ctx.saved_tensors
        negative = x <= 0
        grad_x = torch.where(negative, grad_out * slope, grad_out)
        grad_slope = (grad_out * x * negative).sum(dim=0)
        return grad_x, grad_slope

    @staticmethod
    def example_inputs():
        return _gate_inputs(4)


class YonderChannelLeakyGateInvertedMask(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the two sides of the gate exchanged: slope applied where x > 0, identity where x <= 0"}

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, slope * x)

    @staticmethod
    def backward(ctx, grad_out):
        x, slope = ctx.saved_tensors
        negative = x <= 0
        grad_x = torch.where(x > 0, grad_out * slope, grad_out)  # BUG
        grad_slope = (grad_out * x * negative).sum(dim=0)
        return grad_x, grad_slope

    @staticmethod
    def example_inputs():
        return _gate_inputs(5)


class YonderChannelLeakyGateRowSum(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "slope",
           "note": "the per-column slope gradient summed over columns (dim 1) instead of rows (dim 0)"}

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, slope * x)

    @staticmethod
    def backward(ctx, grad_out):
        x, slope = ctx.saved_tensors
        grad_x = torch.where(x <= 0, grad_out * slope, grad_out)
        grad_slope = (grad_out * x * (x <= 0)).sum(dim=1)  # BUG
        return grad_x, grad_slope

    @staticmethod
    def example_inputs():
        return _gate_inputs(6)
