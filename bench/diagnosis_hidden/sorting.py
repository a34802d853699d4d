"""Sorting and selection with hand-written backwards: sort along rows, top-k with its indices,
max pooling over windows of 2 returning the argmax, sparsemax (Euclidean projection onto the
simplex) and a running maximum (cummax) (bench/diagnosis_hidden)."""
import torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0):
    return torch.randn(*shape, dtype=torch.float64, generator=_gen(seed))


class HiddenSortRows(torch.autograd.Function):
    """Each row sorted ascending; the gradient is routed back through the permutation."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        values, order = x.sort(dim=1)
        ctx.save_for_backward(order)
        return values

    @staticmethod
    def backward(ctx, grad_out):
        (order,) = ctx.saved_tensors
        return torch.zeros_like(grad_out).scatter_(1, order, grad_out)


class HiddenSortRowsGathered(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "gathers through the permutation instead of scattering (applies P, not P^T)"}

    @staticmethod
    def forward(ctx, x):
        values, order = x.sort(dim=1)
        ctx.save_for_backward(order)
        return values

    @staticmethod
    def backward(ctx, grad_out):
        (order,) = ctx.saved_tensors
        return grad_out.gather(1, order)  # BUG


class HiddenTopK(torch.autograd.Function):
    """The 2 largest entries of each row and their (non-differentiable) indices."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        values, indices = x.topk(2, dim=1)
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        ctx.in_shape = x.shape
        return values, indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        (indices,) = ctx.saved_tensors
        grad = grad_values.new_zeros(ctx.in_shape)
        return grad.scatter_(1, indices, grad_values)

    @staticmethod
    def example_inputs():
        return (_randn(5, 5, seed=70),)


class HiddenTopKScatterDim(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "scatters the selected values' gradient along dim 0 instead of along the rows"}

    @staticmethod
    def forward(ctx, x):
        values, indices = x.topk(2, dim=1)
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        ctx.in_shape = x.shape
        return values, indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        (indices,) = ctx.saved_tensors
        grad = grad_values.new_zeros(ctx.in_shape)
        return grad.scatter_(0, indices, grad_values)  # BUG

    @staticmethod
    def example_inputs():
        return (_randn(5, 5, seed=70),)


def _pool_forward(ctx, x):
    windows = x.view(x.shape[0], -1, 2)
    values, arg = windows.max(dim=2)
    ctx.mark_non_differentiable(arg)
    ctx.save_for_backward(arg)
    return values, arg


class HiddenMaxPoolPairs(torch.autograd.Function):
    """Max over non-overlapping windows of 2 along dim 1: [3, 4] -> [3, 2], plus the argmax."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        return _pool_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_values, grad_arg):
        (arg,) = ctx.saved_tensors
        grad = grad_values.new_zeros(arg.shape[0], arg.shape[1], 2)
        grad.scatter_(2, arg.unsqueeze(2), grad_values.unsqueeze(2))
        return grad.view(arg.shape[0], -1)


class HiddenMaxPoolPairsMask(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "scatters ones at the argmax (the mask) instead of the incoming gradient"}

    @staticmethod
    def forward(ctx, x):
        return _pool_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_values, grad_arg):
        (arg,) = ctx.saved_tensors
        grad = grad_values.new_zeros(arg.shape[0], arg.shape[1], 2)
        grad.scatter_(2, arg.unsqueeze(2), torch.ones_like(grad_values).unsqueeze(2))  # BUG
        return grad.view(arg.shape[0], -1)


def _sparsemax(z):
    ranked, _ = z.sort(dim=1, descending=True)
    k = torch.arange(1, z.shape[1] + 1, dtype=z.dtype)
    cumulative = ranked.cumsum(1)
    in_support = 1 + k * ranked > cumulative
    size = in_support.sum(1, keepdim=True)
    tau = (cumulative.gather(1, size - 1) - 1) / size.to(z.dtype)
    return (z - tau).clamp(min=0)


def _sparsemax_inputs():
    # rows with supports of 1, 2, 3 and 5 entries, every entry far from the threshold
    return (torch.tensor([[2.0, 0.1, -0.5, 0.3, -1.0],
                          [0.9, 0.7, -0.4, 0.0, -0.8],
                          [0.5, 0.45, 0.3, -0.6, -0.2],
                          [0.2, 0.25, 0.1, 0.15, 0.3]], dtype=torch.float64),)


class HiddenSparsemax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, z):
        p = _sparsemax(z)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        support = (p > 0).to(grad_out.dtype)
        mean = (grad_out * support).sum(1, keepdim=True) / support.sum(1, keepdim=True)
        return support * (grad_out - mean)

    @staticmethod
    def example_inputs():
        return _sparsemax_inputs()


class HiddenSparsemaxSupport(torch.autograd.Function):
    bug = {"kind": "region", "input": "z",
           "note": "the support is p >= 0, which counts every zeroed entry as in the support"}

    @staticmethod
    def forward(ctx, z):
        p = _sparsemax(z)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        support = (p >= 0).to(grad_out.dtype)  # BUG
        mean = (grad_out * support).sum(1, keepdim=True) / support.sum(1, keepdim=True)
        return support * (grad_out - mean)

    @staticmethod
    def example_inputs():
        return _sparsemax_inputs()


class HiddenSparsemaxSoftmaxGrad(torch.autograd.Function):
    bug = {"kind": "none", "input": "z",
           "note": "the backward of softmax, p * (g - sum p g), used for sparsemax"}

    @staticmethod
    def forward(ctx, z):
        p = _sparsemax(z)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        return p * (grad_out - (p * grad_out).sum(1, keepdim=True))  # BUG

    @staticmethod
    def example_inputs():
        return _sparsemax_inputs()


def _cummax_inputs():
    # early row maxima, so several outputs share one argmax
    return (torch.tensor([[1.5, 0.2, -0.3, 0.9, 2.1],
                          [-0.4, 0.8, 0.1, 0.5, -1.2],
                          [2.6, -0.7, 1.1, 0.3, 0.0]], dtype=torch.float64),)


class HiddenRunningMax(torch.autograd.Function):
    """Running maximum along each row (torch.cummax)."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        values, arg = torch.cummax(x, dim=1)
        ctx.save_for_backward(arg)
        return values

    @staticmethod
    def backward(ctx, grad_out):
        (arg,) = ctx.saved_tensors
        return torch.zeros_like(grad_out).scatter_add_(1, arg, grad_out)

    @staticmethod
    def example_inputs():
        return _cummax_inputs()


class HiddenRunningMaxScatter(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "scatter_ keeps one of the gradients sent to a shared argmax, not their sum"}

    @staticmethod
    def forward(ctx, x):
        values, arg = torch.cummax(x, dim=1)
        ctx.save_for_backward(arg)
        return values

    @staticmethod
    def backward(ctx, grad_out):
        (arg,) = ctx.saved_tensors
        return torch.zeros_like(grad_out).scatter_(1, arg, grad_out)  # BUG

    @staticmethod
    def example_inputs():
        return _cummax_inputs()
