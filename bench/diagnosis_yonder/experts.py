"""Mixture-of-experts and ragged ops: a grouped linear by bmm over experts with a routing index, a segment
mean by index_add_ over an offsets input (blind corpus yonder)."""
import torch


def _moe_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(6, 3, dtype=torch.float64, generator=g)
    weight = torch.randn(2, 3, 3, dtype=torch.float64, generator=g)  # (E, D_in, D_out)
    expert_idx = torch.tensor([1, 0, 1, 1, 0, 1])
    return x, weight, expert_idx


class YonderGroupedExpertLinear(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, expert_idx):
        w_tok = weight[expert_idx]  # (N, D_in, D_out)
        ctx.save_for_backward(x, weight, expert_idx)
        return torch.bmm(x.unsqueeze(1), w_tok).squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, expert_idx = ctx.saved_tensors
        w_tok = weight[expert_idx]
        grad_x = torch.bmm(grad_out.unsqueeze(1), w_tok.transpose(1, 2)).squeeze(1)
        per_token = torch.bmm(x.unsqueeze(2), grad_out.unsqueeze(1))
        grad_w = torch.zeros_like(weight).index_add_(0, expert_idx, per_token)
        return grad_x, grad_w, None

    @staticmethod
    def example_inputs():
        return _moe_inputs(0)


class YonderGroupedExpertLinearIndexPut(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "weight",
           "note": "per-token weight gradients written with grad_w[idx] = ...: tokens routed to the same expert overwrite each other"}

    @staticmethod
    def forward(ctx, x, weight, expert_idx):
        w_tok = weight[expert_idx]
        ctx.save_for_backward(x, weight, expert_idx)
        return torch.bmm(x.unsqueeze(1), w_tok).squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, expert_idx = ctx.saved_tensors
        w_tok = weight[expert_idx]
        grad_x = torch.bmm(grad_out.unsqueeze(1), w_tok.transpose(1, 2)).squeeze(1)
        per_token = torch.bmm(x.unsqueeze(2), grad_out.unsqueeze(1))
        grad_w = torch.zeros_like(weight)
        grad_w[expert_idx] = per_token  # BUG
        return grad_x, grad_w, None

    @staticmethod
    def example_inputs():
        return _moe_inputs(1)


class YonderGroupedExpertLinearNoTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "the input gradient multiplies by the expert weight itself instead of its transpose"}

    @staticmethod
    def forward(ctx, x, weight, expert_idx):
        w_tok = weight[expert_idx]
        ctx.save_for_backward(x, weight, expert_idx)
        return torch.bmm(x.unsqueeze(1), w_tok).squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, expert_idx = ctx.saved_tensors
        w_tok = weight[expert_idx]
        grad_x = torch.bmm(grad_out.unsqueeze(1), w_tok).squeeze(1)  # BUG
        per_token = torch.bmm(x.unsqueeze(2), grad_out.unsqueeze(1))
        grad_w = torch.zeros_like(weight).index_add_(0, expert_idx, per_token)
        return grad_x, grad_w, None

    @staticmethod
    def example_inputs():
        return _moe_inputs(2)


def _seg_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    values = torch.randn(9, 3, dtype=torch.float64, generator=g)
    offsets = torch.tensor([0, 2, 5, 9])  # three segments of lengths 2, 3, 4
    return values, offsets


def _segment_ids(offsets):
    lengths = offsets[1:] - offsets[:-1]
    return torch.repeat_interleave(torch.arange(len(lengths)), lengths), lengths


class YonderSegmentMean(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, values, offsets):
        ids, lengths = _segment_ids(offsets)
        ctx.save_for_backward(offsets)
        total = values.new_zeros(len(lengths), values.shape[1]).index_add_(0, ids, values)
        return total / lengths[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        (offsets,) = ctx.saved_tensors
        ids, lengths = _segment_ids(offsets)
        return (grad_out / lengths[:, None]).index_select(0, ids), None

    @staticmethod
    def example_inputs():
        return _seg_inputs(3)


class YonderSegmentMeanDividesByEnd(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "values",
           "note": "backward divides by the saved end offsets offsets[1:] instead of the segment lengths"}

    @staticmethod
    def forward(ctx, values, offsets):
        ids, lengths = _segment_ids(offsets)
        ctx.save_for_backward(offsets)
        total = values.new_zeros(len(lengths), values.shape[1]).index_add_(0, ids, values)
        return total / lengths[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        (offsets,) = ctx.saved_tensors
        ids, _ = _segment_ids(offsets)
        scaled = grad_out / offsets[1:, None]  # BUG
        return scaled[ids], None

    @staticmethod
    def example_inputs():
        return _seg_inputs(4)


class YonderSegmentMeanLoop(torch.autograd.Function):
    """The same segment mean, backward by a Python loop over segments (a second twin)."""
    bug = None

    @staticmethod
    def forward(ctx, values, offsets):
        ids, lengths = _segment_ids(offsets)
        ctx.offsets = offsets.tolist()
        total = values.new_zeros(len(lengths), values.shape[1]).index_add_(0, ids, values)
        return total / lengths[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        bounds = ctx.offsets
        grad = grad_out.new_zeros(bounds[-1], grad_out.shape[1])
        for s in range(len(bounds) - 1):
            start, end = bounds[s], bounds[s + 1]
            grad[start:end] = grad_out[s] / (end - start)
        return grad, None

    @staticmethod
    def example_inputs():
        return _seg_inputs(5)


class YonderSegmentMeanLoopSkipsLast(torch.autograd.Function):
    bug = {"kind": "region", "input": "values",
           "note": "the segment loop stops one segment early: the rows of the last segment get no gradient"}

    @staticmethod
    def forward(ctx, values, offsets):
        ids, lengths = _segment_ids(offsets)
        ctx.offsets = offsets.tolist()
        total = values.new_zeros(len(lengths), values.shape[1]).index_add_(0, ids, values)
        return total / lengths[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        bounds = ctx.offsets
        grad = grad_out.new_zeros(bounds[-1], grad_out.shape[1])
        for s in range(len(bounds) - 2):  # BUG
            start, end = bounds[s], bounds[s + 1]
            grad[start:end] = grad_out[s] / (end - start)
        return grad, None

    @staticmethod
    def example_inputs():
        return _seg_inputs(6)
