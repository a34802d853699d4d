"""Linear layers, batched matmul, einsum and a conv2d by im2col (F.unfold), plain torch.

Blind corpus: see README.md.
"""
import torch
import torch.nn.functional as F


def _randn(*shape, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


# -------------------------------------------------------------------------------- linear
def _linear_inputs():
    return _randn(3, 4, seed=31), _randn(4, 4, seed=32), _randn(4, seed=33)


class Linear(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return x @ weight.t() + bias

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        return grad_out @ weight, grad_out.t() @ x, grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _linear_inputs()


class LinearWeightGradTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "weight",
           "note": "dW = xᵀ g is the transpose of gᵀ x; the square weight hides the shape error"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return x @ weight.t() + bias

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        grad_weight = x.t() @ grad_out  # BUG
        return grad_out @ weight, grad_weight, grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _linear_inputs()


class LinearBiasGradAveraged(torch.autograd.Function):
    bug = {"kind": "scale", "input": "bias",
           "note": "the bias gradient is the batch mean of grad_out instead of its sum (1/N too small)"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return x @ weight.t() + bias

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        grad_bias = grad_out.mean(0)  # BUG
        return grad_out @ weight, grad_out.t() @ x, grad_bias

    @staticmethod
    def example_inputs():
        return _linear_inputs()


# ------------------------------------------------------------------------------ bmm
def _bmm_inputs():
    return _randn(2, 3, 3, seed=34), _randn(2, 3, 3, seed=35)


class BatchedMatmul(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.bmm(a, b)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        grad_a = torch.bmm(grad_out, b.transpose(1, 2))
        grad_b = torch.bmm(a.transpose(1, 2), grad_out)
        return grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _bmm_inputs()


class BatchedMatmulGradsSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "a",
           "note": "the two gradients are returned in the wrong order (same shapes, no error)"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.bmm(a, b)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        grad_a = torch.bmm(grad_out, b.transpose(1, 2))
        grad_b = torch.bmm(a.transpose(1, 2), grad_out)
        return grad_b, grad_a  # BUG

    @staticmethod
    def example_inputs():
        return _bmm_inputs()


# ------------------------------------------------------------------- einsum: xᵀ W x per row
def _quadratic_inputs():
    return _randn(3, 4, seed=36), _randn(4, 4, seed=37)


class QuadraticForm(torch.autograd.Function):
    """q_b = x_bᵀ W x_b for each row of x."""
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return torch.einsum("bi,ij,bj->b", x, weight, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        grad_x = torch.einsum("b,ij,bj->bi", grad_out, weight, x) \
            + torch.einsum("b,bi,ij->bj", grad_out, x, weight)
        grad_w = torch.einsum("b,bi,bj->ij", grad_out, x, x)
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _quadratic_inputs()


class QuadraticFormOneSideOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "x appears twice; the product rule's second term (Wᵀx) is dropped, which is "
                   "only right for a symmetric W"}

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return torch.einsum("bi,ij,bj->b", x, weight, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        grad_x = torch.einsum("b,ij,bj->bi", grad_out, weight, x)  # BUG
        grad_w = torch.einsum("b,bi,bj->ij", grad_out, x, x)
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _quadratic_inputs()


# ---------------------------------------------------------------------- conv2d by im2col
KERNEL = 2


def _conv_inputs():
    return _randn(2, 2, 4, 4, seed=38), _randn(3, 2, KERNEL, KERNEL, seed=39), _randn(3, seed=40)


def _conv_forward(ctx, x, weight, bias):
    n, _, h, w = x.shape
    cols = F.unfold(x, KERNEL)                                # (n, c*k*k, L)
    out = weight.reshape(weight.shape[0], -1) @ cols + bias[:, None]
    ctx.save_for_backward(cols, weight)
    ctx.hw = (h, w)
    return out.reshape(n, weight.shape[0], h - KERNEL + 1, w - KERNEL + 1)


class Conv2dIm2col(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _conv_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        cols, weight = ctx.saved_tensors
        g = grad_out.reshape(grad_out.shape[0], grad_out.shape[1], -1)   # (n, out, L)
        grad_w = (g @ cols.transpose(1, 2)).sum(0).reshape(weight.shape)
        grad_cols = weight.reshape(weight.shape[0], -1).t() @ g
        grad_x = F.fold(grad_cols, ctx.hw, KERNEL)
        return grad_x, grad_w, g.sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        return _conv_inputs()


class Conv2dIm2colBiasOverBatchOnly(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "bias",
           "note": "the bias gradient is summed over the batch but not over the output positions: "
                   "an (out, L) gradient for an (out,) bias"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _conv_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        cols, weight = ctx.saved_tensors
        g = grad_out.reshape(grad_out.shape[0], grad_out.shape[1], -1)
        grad_w = (g @ cols.transpose(1, 2)).sum(0).reshape(weight.shape)
        grad_cols = weight.reshape(weight.shape[0], -1).t() @ g
        grad_x = F.fold(grad_cols, ctx.hw, KERNEL)
        grad_b = g.sum(0)  # BUG
        return grad_x, grad_w, grad_b

    @staticmethod
    def example_inputs():
        return _conv_inputs()


class Conv2dIm2colWeightGradAveraged(torch.autograd.Function):
    bug = {"kind": "scale", "input": "weight",
           "note": "the weight gradient is averaged over the L output positions instead of summed"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        return _conv_forward(ctx, x, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        cols, weight = ctx.saved_tensors
        g = grad_out.reshape(grad_out.shape[0], grad_out.shape[1], -1)
        grad_w = (g @ cols.transpose(1, 2)).sum(0).reshape(weight.shape) / g.shape[-1]  # BUG
        grad_cols = weight.reshape(weight.shape[0], -1).t() @ g
        grad_x = F.fold(grad_cols, ctx.hw, KERNEL)
        return grad_x, grad_w, g.sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        return _conv_inputs()


# ------------------------------------------------- pointwise (1x1) conv as a channels-last linear
def _pointwise_inputs():
    return _randn(2, 3, 4, seed=41), _randn(5, 3, seed=42)


class PointwiseConv(torch.autograd.Function):
    """(n, c, length) -> (n, out, length): a linear map over channels, done channels-last."""
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return (x.permute(0, 2, 1) @ weight.t()).permute(0, 2, 1)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        g = grad_out.permute(0, 2, 1)                      # (n, length, out)
        grad_x = (g @ weight).permute(0, 2, 1)
        grad_w = (g.reshape(-1, g.shape[-1]).t() @ x.permute(0, 2, 1).reshape(-1, x.shape[1]))
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _pointwise_inputs()


class PointwiseConvReshapeForPermute(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x",
           "note": "the (n, length, c) input gradient is reshaped to (n, c, length) instead of "
                   "permuted back: the right numbers in the wrong places"}

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return (x.permute(0, 2, 1) @ weight.t()).permute(0, 2, 1)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        g = grad_out.permute(0, 2, 1)
        grad_x = (g @ weight).reshape(x.shape)  # BUG
        grad_w = (g.reshape(-1, g.shape[-1]).t() @ x.permute(0, 2, 1).reshape(-1, x.shape[1]))
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _pointwise_inputs()
