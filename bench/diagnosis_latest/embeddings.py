"""Embedding lookups and index ops: index_add_, gather / scatter_add_, a mean bag, a padding id."""
import torch


def _lookup_inputs():
    gen = torch.Generator().manual_seed(51)
    return (torch.randn(5, 3, dtype=torch.float64, generator=gen),
            torch.tensor([4, 1, 4, 0, 1, 4]))


class LatestEmbeddingLookup(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight.index_select(0, ids)

    @staticmethod
    def backward(ctx, g):
        (ids,) = ctx.saved_tensors
        grad = g.new_zeros(ctx.rows, g.shape[1])
        grad.index_add_(0, ids, g)
        return grad, None

    example_inputs = staticmethod(_lookup_inputs)


class LatestEmbeddingLookupAssign(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "weight",
           "note": "grad[ids] = g keeps only one of the repeated ids' rows"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight.index_select(0, ids)

    @staticmethod
    def backward(ctx, g):
        (ids,) = ctx.saved_tensors
        grad = g.new_zeros(ctx.rows, g.shape[1])
        grad[ids] = g  # BUG
        return grad, None

    example_inputs = staticmethod(_lookup_inputs)


def _gather_inputs():
    gen = torch.Generator().manual_seed(52)
    return (torch.randn(3, 4, dtype=torch.float64, generator=gen),
            torch.tensor([[0, 0, 2], [3, 1, 3], [2, 2, 2]]))


class LatestGatherColumns(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return x.gather(1, index)

    @staticmethod
    def backward(ctx, g):
        (index,) = ctx.saved_tensors
        return torch.zeros(ctx.shape, dtype=g.dtype).scatter_add_(1, index, g), None

    example_inputs = staticmethod(_gather_inputs)


class LatestGatherColumnsScatter(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "scatter_ instead of scatter_add_: duplicate indices overwrite each other"}

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return x.gather(1, index)

    @staticmethod
    def backward(ctx, g):
        (index,) = ctx.saved_tensors
        return torch.zeros(ctx.shape, dtype=g.dtype).scatter_(1, index, g), None  # BUG

    example_inputs = staticmethod(_gather_inputs)


def _bag_inputs():
    gen = torch.Generator().manual_seed(53)
    return (torch.randn(6, 3, dtype=torch.float64, generator=gen),
            torch.tensor([[0, 2, 5], [1, 1, 4]]))


class LatestEmbeddingBagMean(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, bags):
        ctx.save_for_backward(bags)
        ctx.rows = weight.shape[0]
        return weight[bags].mean(1)

    @staticmethod
    def backward(ctx, g):
        (bags,) = ctx.saved_tensors
        per_id = (g[:, None, :] / bags.shape[1]).expand(*bags.shape, g.shape[1])
        grad = g.new_zeros(ctx.rows, g.shape[1])
        grad.index_add_(0, bags.reshape(-1), per_id.reshape(-1, g.shape[1]))
        return grad, None

    example_inputs = staticmethod(_bag_inputs)


class LatestEmbeddingBagMeanAsSum(torch.autograd.Function):
    bug = {"kind": "scale", "input": "weight", "note": "spreads g to each id without dividing by the bag size"}

    @staticmethod
    def forward(ctx, weight, bags):
        ctx.save_for_backward(bags)
        ctx.rows = weight.shape[0]
        return weight[bags].mean(1)

    @staticmethod
    def backward(ctx, g):
        (bags,) = ctx.saved_tensors
        per_id = g[:, None, :].expand(*bags.shape, g.shape[1])  # BUG
        grad = g.new_zeros(ctx.rows, g.shape[1])
        grad.index_add_(0, bags.reshape(-1), per_id.reshape(-1, g.shape[1]))
        return grad, None

    example_inputs = staticmethod(_bag_inputs)


def _padding_inputs():
    gen = torch.Generator().manual_seed(54)
    return (torch.randn(4, 3, dtype=torch.float64, generator=gen),
            torch.tensor([2, 0, 3, 0, 1]))


class LatestEmbeddingPadding(torch.autograd.Function):
    """Lookup whose padding id 0 always reads a zero vector."""
    bug = None

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        out = weight[ids]
        out[ids == 0] = 0.0
        return out

    @staticmethod
    def backward(ctx, g):
        (ids,) = ctx.saved_tensors
        g = g.masked_fill((ids == 0)[:, None], 0.0)
        return g.new_zeros(ctx.rows, g.shape[1]).index_add_(0, ids, g), None

    example_inputs = staticmethod(_padding_inputs)


class LatestEmbeddingPaddingLeaks(torch.autograd.Function):
    bug = {"kind": "region", "input": "weight",
           "note": "backward forgets to mask the padding positions, so row 0 gets a gradient"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        out = weight[ids]
        out[ids == 0] = 0.0
        return out

    @staticmethod
    def backward(ctx, g):
        (ids,) = ctx.saved_tensors
        grad = g.new_zeros(ctx.rows, g.shape[1]).index_add_(0, ids, g)  # BUG
        return grad, None

    example_inputs = staticmethod(_padding_inputs)


class LatestGradientReversal(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "deliberate: identity forward, backward -lam * g (domain-adversarial training)"}

    @staticmethod
    def forward(ctx, x, lam):
        ctx.lam = lam
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g.neg() * ctx.lam, None  # BUG

    @staticmethod
    def example_inputs():
        return torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(55)), 0.5
