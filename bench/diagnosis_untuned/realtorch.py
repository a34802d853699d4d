"""The same styles written against real PyTorch (``import torch``), checked on the torch backend
(skipped where torch is not installed). ``bug = None`` marks a correct twin.
"""
import torch
import torch.nn.functional as F

DOUBLE = torch.float64


def _randn(*shape):
    return torch.randn(*shape, dtype=DOUBLE, requires_grad=True)


# --------------------------------------------------------------------------------- LayerNorm
def _layer_norm_forward(ctx, x, weight, bias, eps):
    mu = x.mean(-1, keepdim=True)
    rstd = torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + eps)
    xhat = (x - mu) * rstd
    ctx.save_for_backward(xhat, rstd, weight)
    return xhat * weight + bias


def _layer_norm_inputs():
    return (_randn(3, 4), (torch.rand(4, dtype=DOUBLE) + 0.5).requires_grad_(), _randn(4))


class TorchLayerNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias, eps=1e-5):
        return _layer_norm_forward(ctx, x, weight, bias, eps)

    @staticmethod
    def backward(ctx, grad_output):
        xhat, rstd, weight = ctx.saved_tensors
        n = xhat.shape[-1]
        gxhat = grad_output * weight
        grad_x = rstd / n * (n * gxhat - gxhat.sum(-1, keepdim=True)
                             - xhat * (gxhat * xhat).sum(-1, keepdim=True))
        return grad_x, (grad_output * xhat).sum(0), grad_output.sum(0), None

    @staticmethod
    def example_inputs():
        return _layer_norm_inputs()


class TorchLayerNormTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the xhat * sum(gxhat * xhat) term is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x, weight, bias, eps=1e-5):
        return _layer_norm_forward(ctx, x, weight, bias, eps)

    @staticmethod
    def backward(ctx, grad_output):
        xhat, rstd, weight = ctx.saved_tensors
        n = xhat.shape[-1]
        gxhat = grad_output * weight
        grad_x = rstd / n * (n * gxhat - gxhat.sum(-1, keepdim=True)
                             + xhat * (gxhat * xhat).sum(-1, keepdim=True))  # BUG
        return grad_x, (grad_output * xhat).sum(0), grad_output.sum(0), None

    @staticmethod
    def example_inputs():
        return _layer_norm_inputs()


# ------------------------------------------------------------------- conv2d with F.unfold/fold
def _conv_inputs():
    return (_randn(1, 2, 4, 4), _randn(3, 2, 2, 2))


class TorchConv2dUnfold(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        o, c, kh, kw = weight.shape
        cols = F.unfold(x, (kh, kw))  # (N, C*kh*kw, L)
        ctx.save_for_backward(cols, weight)
        ctx.sizes = (x.shape[-2:], x.shape[-2] - kh + 1, x.shape[-1] - kw + 1)
        return (weight.reshape(o, -1) @ cols).reshape(x.shape[0], o, *ctx.sizes[1:])

    @staticmethod
    def backward(ctx, grad_output):
        cols, weight = ctx.saved_tensors
        o, c, kh, kw = weight.shape
        hw, ho, wo = ctx.sizes
        g = grad_output.reshape(grad_output.shape[0], o, ho * wo)
        grad_weight = (g @ cols.transpose(1, 2)).sum(0).reshape(weight.shape)
        dcols = weight.reshape(o, -1).t() @ g
        grad_x = F.fold(dcols, hw, (kh, kw))
        return grad_x, grad_weight

    @staticmethod
    def example_inputs():
        return _conv_inputs()


class TorchConv2dMissingTranspose(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x", "also": ["transposed"],
           "note": "the column gradients are computed as gᵀ @ W, (N, L, C*kh*kw), and reshaped to "
                   "(N, C*kh*kw, L) without the transpose"}

    @staticmethod
    def forward(ctx, x, weight):
        o, c, kh, kw = weight.shape
        cols = F.unfold(x, (kh, kw))
        ctx.save_for_backward(cols, weight)
        ctx.sizes = (x.shape[-2:], x.shape[-2] - kh + 1, x.shape[-1] - kw + 1)
        return (weight.reshape(o, -1) @ cols).reshape(x.shape[0], o, *ctx.sizes[1:])

    @staticmethod
    def backward(ctx, grad_output):
        cols, weight = ctx.saved_tensors
        o, c, kh, kw = weight.shape
        hw, ho, wo = ctx.sizes
        n = grad_output.shape[0]
        g = grad_output.reshape(n, o, ho * wo)
        grad_weight = (g @ cols.transpose(1, 2)).sum(0).reshape(weight.shape)
        dcols = (g.transpose(1, 2) @ weight.reshape(o, -1)).reshape(n, c * kh * kw, ho * wo)  # BUG
        grad_x = F.fold(dcols, hw, (kh, kw))
        return grad_x, grad_weight

    @staticmethod
    def example_inputs():
        return _conv_inputs()


# ------------------------------------------------------------------------------ the others
class TorchEmbeddingIndexCopy(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "weight",
           "note": "index_copy_ keeps one row per repeated index; index_add_ is needed"}

    @staticmethod
    def forward(ctx, weight, indices):
        ctx.save_for_backward(indices)
        ctx.rows = weight.shape[0]
        return weight.index_select(0, indices)

    @staticmethod
    def backward(ctx, grad_output):
        (indices,) = ctx.saved_tensors
        grad_weight = grad_output.new_zeros(ctx.rows, grad_output.shape[1])
        grad_weight.index_copy_(0, indices, grad_output)  # BUG
        return grad_weight, None

    @staticmethod
    def example_inputs():
        return (_randn(5, 3), torch.tensor([2, 0, 2, 4, 2, 1]))


class TorchScaledTanhSavedThenScaled(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "saves tanh(x) and then scales it in place to 2 tanh(x): backward reads the "
                   "scaled tensor as tanh(x) (torch raises nothing here)"}

    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y.mul_(2.0)  # BUG

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * 2.0 * (1 - y * y)

    @staticmethod
    def example_inputs():
        return (_randn(3, 4),)


class TorchLogCumSumExpMissingFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the sum over later positions j >= i is computed as a forward cumsum"}

    @staticmethod
    def forward(ctx, x):
        y = torch.logcumsumexp(x, dim=-1)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return torch.exp(x) * (grad_output * torch.exp(-y)).cumsum(-1)  # BUG

    @staticmethod
    def example_inputs():
        return (_randn(3, 4),)
