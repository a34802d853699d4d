"""Linear algebra with hand-written backwards: a linear layer with bias, matmul chains, bmm, outer
products, a per-token linear layer and head splitting (bench/diagnosis_hidden)."""
import torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0):
    return torch.randn(*shape, dtype=torch.float64, generator=_gen(seed))


class HiddenLinearBias(torch.autograd.Function):
    """Column layout: y = W @ x + b[:, None], x [in, batch], bias [out] broadcast over columns."""

    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return weight @ x + bias[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        return weight.t() @ grad_out, grad_out @ x.t(), grad_out.sum(1)

    @staticmethod
    def example_inputs():
        return _randn(4, 3, seed=1), _randn(4, 4, seed=2), _randn(4, seed=3)


class HiddenLinearBiasKeepsBatch(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "bias",
           "note": "the bias gradient keeps the batch columns instead of summing them"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return weight @ x + bias[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        grad_bias = grad_out.clone()  # BUG
        return weight.t() @ grad_out, grad_out @ x.t(), grad_bias

    @staticmethod
    def example_inputs():
        return _randn(4, 3, seed=1), _randn(4, 4, seed=2), _randn(4, seed=3)


class HiddenLinearWeightGradFlipped(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "weight",
           "note": "weight gradient computed as x @ g^T, the transpose of g @ x^T"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return weight @ x + bias[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        grad_weight = x @ grad_out.t()  # BUG
        return weight.t() @ grad_out, grad_weight, grad_out.sum(1)

    @staticmethod
    def example_inputs():
        return _randn(4, 3, seed=1), _randn(4, 4, seed=2), _randn(4, seed=3)


class HiddenMatmulChain(torch.autograd.Function):
    """A @ B @ C for square 4x4 matrices."""

    bug = None

    @staticmethod
    def forward(ctx, a, b, c):
        ctx.save_for_backward(a, b, c)
        return a.mm(b).mm(c)

    @staticmethod
    def backward(ctx, grad_out):
        a, b, c = ctx.saved_tensors
        grad_a = grad_out.mm(b.mm(c).t())
        grad_b = a.t().mm(grad_out).mm(c.t())
        grad_c = a.mm(b).t().mm(grad_out)
        return grad_a, grad_b, grad_c

    @staticmethod
    def example_inputs():
        return _randn(4, 4, seed=4), _randn(4, 4, seed=5), _randn(4, 4, seed=6)


class HiddenMatmulChainMiddle(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "b",
           "note": "the middle factor's gradient multiplies by C instead of C^T"}

    @staticmethod
    def forward(ctx, a, b, c):
        ctx.save_for_backward(a, b, c)
        return a.mm(b).mm(c)

    @staticmethod
    def backward(ctx, grad_out):
        a, b, c = ctx.saved_tensors
        grad_a = grad_out.mm(b.mm(c).t())
        grad_b = a.t().mm(grad_out).mm(c)  # BUG
        grad_c = a.mm(b).t().mm(grad_out)
        return grad_a, grad_b, grad_c

    @staticmethod
    def example_inputs():
        return _randn(4, 4, seed=4), _randn(4, 4, seed=5), _randn(4, 4, seed=6)


class HiddenBatchedMatmul(torch.autograd.Function):
    """torch.bmm of two [2, 3, 3] batches."""

    bug = None

    @staticmethod
    def forward(ctx, left, right):
        ctx.save_for_backward(left, right)
        return torch.bmm(left, right)

    @staticmethod
    def backward(ctx, grad_out):
        left, right = ctx.saved_tensors
        grad_left = torch.bmm(grad_out, right.transpose(1, 2))
        grad_right = torch.bmm(left.transpose(1, 2), grad_out)
        return grad_left, grad_right

    @staticmethod
    def example_inputs():
        return _randn(2, 3, 3, seed=7), _randn(2, 3, 3, seed=8)


class HiddenBatchedMatmulOrder(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "left",
           "note": "returns the two gradients in the wrong order (right's first)"}

    @staticmethod
    def forward(ctx, left, right):
        ctx.save_for_backward(left, right)
        return torch.bmm(left, right)

    @staticmethod
    def backward(ctx, grad_out):
        left, right = ctx.saved_tensors
        grad_left = torch.bmm(grad_out, right.transpose(1, 2))
        grad_right = torch.bmm(left.transpose(1, 2), grad_out)
        return grad_right, grad_left  # BUG

    @staticmethod
    def example_inputs():
        return _randn(2, 3, 3, seed=7), _randn(2, 3, 3, seed=8)


class HiddenOuter(torch.autograd.Function):
    """Outer product u v^T of two length-4 vectors."""

    bug = None

    @staticmethod
    def forward(ctx, u, v):
        ctx.save_for_backward(u, v)
        return u[:, None] * v[None, :]

    @staticmethod
    def backward(ctx, grad_out):
        u, v = ctx.saved_tensors
        return (grad_out * v).sum(1), (grad_out * u[:, None]).sum(0)

    @staticmethod
    def example_inputs():
        return _randn(4, seed=9), _randn(4, seed=10)


class HiddenOuterRowSum(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "u",
           "note": "u's gradient sums g * v over rows (dim 0) instead of over columns"}

    @staticmethod
    def forward(ctx, u, v):
        ctx.save_for_backward(u, v)
        return u[:, None] * v[None, :]

    @staticmethod
    def backward(ctx, grad_out):
        u, v = ctx.saved_tensors
        grad_u = (grad_out * v).sum(0)  # BUG
        return grad_u, (grad_out * u[:, None]).sum(0)

    @staticmethod
    def example_inputs():
        return _randn(4, seed=9), _randn(4, seed=10)


class HiddenTokenLinear(torch.autograd.Function):
    """A linear layer with bias applied to every token of [2, 3, 4] by flattening to [6, 4]."""

    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        flat = x.reshape(-1, x.shape[-1])
        ctx.save_for_backward(flat, weight)
        ctx.in_shape = x.shape
        return (flat @ weight.t() + bias).reshape(x.shape[0], x.shape[1], -1)

    @staticmethod
    def backward(ctx, grad_out):
        flat, weight = ctx.saved_tensors
        g = grad_out.reshape(-1, grad_out.shape[-1])
        return (g @ weight).reshape(ctx.in_shape), g.t() @ flat, g.sum(0)

    @staticmethod
    def example_inputs():
        return _randn(2, 3, 4, seed=18), _randn(5, 4, seed=19), _randn(5, seed=20)


class HiddenTokenLinearFlatGrad(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x",
           "note": "x's gradient is left flat [6, 4] instead of reshaped back to [2, 3, 4]"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        flat = x.reshape(-1, x.shape[-1])
        ctx.save_for_backward(flat, weight)
        ctx.in_shape = x.shape
        return (flat @ weight.t() + bias).reshape(x.shape[0], x.shape[1], -1)

    @staticmethod
    def backward(ctx, grad_out):
        flat, weight = ctx.saved_tensors
        g = grad_out.reshape(-1, grad_out.shape[-1])
        grad_x = g @ weight  # BUG
        return grad_x, g.t() @ flat, g.sum(0)

    @staticmethod
    def example_inputs():
        return _randn(2, 3, 4, seed=18), _randn(5, 4, seed=19), _randn(5, seed=20)


class HiddenSplitHeads(torch.autograd.Function):
    """[T, H*D] -> per-head [H, T, D] (view + transpose), scaled by a per-head weight."""

    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        heads = x.view(x.shape[0], 2, -1).transpose(0, 1)
        ctx.save_for_backward(heads, weight)
        return heads * weight

    @staticmethod
    def backward(ctx, grad_out):
        heads, weight = ctx.saved_tensors
        grad_heads = grad_out * weight
        grad_x = grad_heads.transpose(0, 1).reshape(grad_out.shape[1], -1)
        return grad_x, grad_out * heads

    @staticmethod
    def example_inputs():
        return _randn(3, 6, seed=21), _randn(2, 3, 3, seed=22)


class HiddenSplitHeadsMerge(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x", "also": ["transposed"],
           "note": "merges the heads back by a plain reshape without swapping heads and time"}

    @staticmethod
    def forward(ctx, x, weight):
        heads = x.view(x.shape[0], 2, -1).transpose(0, 1)
        ctx.save_for_backward(heads, weight)
        return heads * weight

    @staticmethod
    def backward(ctx, grad_out):
        heads, weight = ctx.saved_tensors
        grad_heads = grad_out * weight
        grad_x = grad_heads.reshape(grad_out.shape[1], -1)  # BUG
        return grad_x, grad_out * heads

    @staticmethod
    def example_inputs():
        return _randn(3, 6, seed=21), _randn(2, 3, 3, seed=22)
