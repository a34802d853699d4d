"""Ragged and sequence reductions on gradcli's engine: a fixed-length segment mean, a segment sum
by index_add (and by a one-hot einsum), a discounted return computed by a loop."""
import gradcli as torch

GAMMA = 0.7


def _seg_inputs():
    gen = torch.Generator().manual_seed(51)
    values = torch.randn(6, 4, generator=gen, dtype=torch.float64)
    seg = torch.tensor([0, 0, 1, 1, 2, 2], dtype=torch.int64)
    return values.requires_grad_(), seg


def _ragged_inputs():
    gen = torch.Generator().manual_seed(52)
    values = torch.randn(7, 3, generator=gen, dtype=torch.float64)
    seg = torch.tensor([0, 0, 0, 1, 2, 2, 3], dtype=torch.int64)
    return values.requires_grad_(), seg


class SegmentMeanPairs(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, values, seg):
        n = int(seg.max().item()) + 1
        counts = torch.zeros(n, dtype=values.dtype).index_add_(0, seg, torch.ones(seg.shape[0], dtype=values.dtype))
        ctx.save_for_backward(seg, counts)
        total = torch.zeros(n, values.shape[1], dtype=values.dtype).index_add_(0, seg, values)
        return total / counts[:, None]

    @staticmethod
    def backward(ctx, grad):
        seg, counts = ctx.saved_tensors
        return (grad / counts[:, None])[seg], None

    @staticmethod
    def example_inputs():
        return _seg_inputs()


class SegmentMeanPairsNoCountDivide(torch.autograd.Function):
    bug = {"kind": "scale", "input": "values", "note": "backward of the sum, not the mean: every segment has 2 rows"}

    @staticmethod
    def forward(ctx, values, seg):
        n = int(seg.max().item()) + 1
        counts = torch.zeros(n, dtype=values.dtype).index_add_(0, seg, torch.ones(seg.shape[0], dtype=values.dtype))
        ctx.save_for_backward(seg, counts)
        total = torch.zeros(n, values.shape[1], dtype=values.dtype).index_add_(0, seg, values)
        return total / counts[:, None]

    @staticmethod
    def backward(ctx, grad):
        seg, counts = ctx.saved_tensors
        return grad[seg], None  # BUG

    @staticmethod
    def example_inputs():
        return _seg_inputs()


class RaggedSegmentSum(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, values, seg):
        ctx.save_for_backward(values, seg)
        n = int(seg.max().item()) + 1
        return torch.zeros(n, values.shape[1], dtype=values.dtype).index_add_(0, seg, values)

    @staticmethod
    def backward(ctx, grad):
        values, seg = ctx.saved_tensors
        return grad.index_select(0, seg), None

    @staticmethod
    def example_inputs():
        return _ragged_inputs()


class RaggedSegmentSumReluMaskPasted(torch.autograd.Function):
    bug = {"kind": "region", "input": "values", "note": "a mask values > 0 pasted from an activation's backward"}

    @staticmethod
    def forward(ctx, values, seg):
        ctx.save_for_backward(values, seg)
        n = int(seg.max().item()) + 1
        return torch.zeros(n, values.shape[1], dtype=values.dtype).index_add_(0, seg, values)

    @staticmethod
    def backward(ctx, grad):
        values, seg = ctx.saved_tensors
        return grad.index_select(0, seg) * (values > 0).to(grad.dtype), None  # BUG

    @staticmethod
    def example_inputs():
        return _ragged_inputs()


class RaggedSegmentSumOneHot(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, values, seg):
        n = int(seg.max().item()) + 1
        onehot = (seg[:, None] == torch.arange(n)[None, :]).to(values.dtype)
        ctx.save_for_backward(onehot)
        return torch.einsum("rs,rd->sd", onehot, values)

    @staticmethod
    def backward(ctx, grad):
        (onehot,) = ctx.saved_tensors
        return torch.einsum("rs,sd->rd", onehot, grad), None

    @staticmethod
    def example_inputs():
        return _ragged_inputs()


class DiscountedReturn(torch.autograd.Function):
    """y[:, t] = sum_{k >= t} GAMMA^(k - t) r[:, k], by a backwards loop."""
    bug = None

    @staticmethod
    def forward(ctx, r):
        out = torch.zeros_like(r)
        acc = torch.zeros_like(r[:, 0])
        for t in range(r.shape[1] - 1, -1, -1):
            acc = r[:, t] + GAMMA * acc
            out[:, t] = acc
        return out

    @staticmethod
    def backward(ctx, grad):
        g = torch.zeros_like(grad)
        acc = torch.zeros_like(grad[:, 0])
        for t in range(grad.shape[1]):
            acc = grad[:, t] + GAMMA * acc
            g[:, t] = acc
        return g


class DiscountedReturnLoopSameDirection(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "r", "note": "backward's loop runs backwards like forward's, not forwards"}

    @staticmethod
    def forward(ctx, r):
        out = torch.zeros_like(r)
        acc = torch.zeros_like(r[:, 0])
        for t in range(r.shape[1] - 1, -1, -1):
            acc = r[:, t] + GAMMA * acc
            out[:, t] = acc
        return out

    @staticmethod
    def backward(ctx, grad):
        g = torch.zeros_like(grad)
        acc = torch.zeros_like(grad[:, 0])
        for t in range(grad.shape[1] - 1, -1, -1):  # BUG
            acc = grad[:, t] + GAMMA * acc
            g[:, t] = acc
        return g
