"""Masked reductions over padded sequences on gradcli's engine: rows of x [3, 5] hold 4, 2 and 3
valid steps. A masked mean, a masked softmax (padding filled with -inf) and a masked logsumexp."""
import gradcli as torch

LENGTHS = [4, 2, 3]


def _valid(x):
    steps = torch.arange(x.shape[1]).unsqueeze(0)
    return steps < torch.tensor(LENGTHS).unsqueeze(1)


def _padded_inputs():
    gen = torch.Generator().manual_seed(41)
    return (torch.randn(3, 5, dtype=torch.float64, generator=gen).requires_grad_(),)


class WithheldMaskedMean(torch.autograd.Function):
    """Mean over each row's valid steps -> [3]."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        valid = _valid(x).to(x.dtype)
        count = valid.sum(dim=1)
        ctx.save_for_backward(valid, count)
        return (x * valid).sum(dim=1) / count

    @staticmethod
    def backward(ctx, grad_out):
        valid, count = ctx.saved_tensors
        return grad_out.unsqueeze(1) * valid / count.unsqueeze(1)

    @staticmethod
    def example_inputs():
        return _padded_inputs()


class WithheldMaskedMeanOffByOne(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the backward rebuilds the mask with <= length, so the first padding step gets gradient"}

    @staticmethod
    def forward(ctx, x):
        valid = _valid(x).to(x.dtype)
        count = valid.sum(dim=1)
        ctx.save_for_backward(valid, count)
        return (x * valid).sum(dim=1) / count

    @staticmethod
    def backward(ctx, grad_out):
        valid, count = ctx.saved_tensors
        steps = torch.arange(valid.shape[1]).unsqueeze(0)
        reach = (steps <= torch.tensor(LENGTHS).unsqueeze(1)).to(valid.dtype)  # BUG
        return grad_out.unsqueeze(1) * reach / count.unsqueeze(1)

    @staticmethod
    def example_inputs():
        return _padded_inputs()


class WithheldMaskedMeanPaddedWidth(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the backward divides by the padded width 5 instead of the row's valid count"}

    @staticmethod
    def forward(ctx, x):
        valid = _valid(x).to(x.dtype)
        count = valid.sum(dim=1)
        ctx.save_for_backward(valid, count)
        return (x * valid).sum(dim=1) / count

    @staticmethod
    def backward(ctx, grad_out):
        valid, count = ctx.saved_tensors
        return grad_out.unsqueeze(1) * valid / valid.shape[1]  # BUG

    @staticmethod
    def example_inputs():
        return _padded_inputs()


def _masked_softmax(x):
    z = x.masked_fill(_valid(x).logical_not(), float("-inf"))
    e = torch.exp(z - z.amax(dim=1, keepdim=True))
    return e / e.sum(dim=1, keepdim=True)


class WithheldMaskedSoftmax(torch.autograd.Function):
    """Softmax over dim 1 with the padding filled with -inf (so its probability is 0)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = _masked_softmax(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return y * (grad_out - (grad_out * y).sum(dim=1, keepdim=True))

    @staticmethod
    def example_inputs():
        return _padded_inputs()


class WithheldMaskedSoftmaxColumnSum(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the backward's inner product sum(g * y) runs down the columns (dim 0)"}

    @staticmethod
    def forward(ctx, x):
        y = _masked_softmax(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return y * (grad_out - (grad_out * y).sum(dim=0, keepdim=True))  # BUG

    @staticmethod
    def example_inputs():
        return _padded_inputs()


class WithheldMaskedSoftmaxDiagonalOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "keeps only the Jacobian's diagonal y * g, dropping - y * sum(g * y)"}

    @staticmethod
    def forward(ctx, x):
        y = _masked_softmax(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return y * grad_out  # BUG

    @staticmethod
    def example_inputs():
        return _padded_inputs()


class WithheldMaskedSoftmaxLogSoftmaxBackward(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the backward is log-softmax's, g - y * sum(g), used for the softmax"}

    @staticmethod
    def forward(ctx, x):
        y = _masked_softmax(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return grad_out - y * grad_out.sum(dim=1, keepdim=True)  # BUG

    @staticmethod
    def example_inputs():
        return _padded_inputs()


class WithheldMaskedLogSumExp(torch.autograd.Function):
    """log sum over valid steps of exp(x) -> [3]; gradient: the masked softmax weights."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        valid = _valid(x)
        z = x.masked_fill(valid.logical_not(), float("-inf"))
        top = z.amax(dim=1, keepdim=True)
        lse = top + torch.log(torch.exp(z - top).sum(dim=1, keepdim=True))
        ctx.save_for_backward(torch.exp(z - lse), valid)
        return lse.squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        weights, valid = ctx.saved_tensors
        return torch.where(valid, grad_out.unsqueeze(1) * weights, torch.zeros_like(weights))

    @staticmethod
    def example_inputs():
        return _padded_inputs()


class WithheldMaskedLogSumExpInvertedMask(torch.autograd.Function):
    bug = {"kind": "zero", "input": "x",
           "note": "the where() keeps the padding instead of the valid steps, whose weights are 0: all zero"}

    @staticmethod
    def forward(ctx, x):
        valid = _valid(x)
        z = x.masked_fill(valid.logical_not(), float("-inf"))
        top = z.amax(dim=1, keepdim=True)
        lse = top + torch.log(torch.exp(z - top).sum(dim=1, keepdim=True))
        ctx.save_for_backward(torch.exp(z - lse), valid)
        return lse.squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        weights, valid = ctx.saved_tensors
        return torch.where(valid.logical_not(), grad_out.unsqueeze(1) * weights,  # BUG
                           torch.zeros_like(weights))

    @staticmethod
    def example_inputs():
        return _padded_inputs()
