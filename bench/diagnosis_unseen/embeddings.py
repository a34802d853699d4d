"""Embedding lookups, gathers and bags with hand-written backwards (index_add_, scatter_add_).

Part of the blind corpus bench/diagnosis_unseen (see its README): score only, never design.
"""
import torch


def _table_ids():
    g = torch.Generator().manual_seed(21)
    weight = torch.randn(6, 3, dtype=torch.float64, generator=g)
    ids = torch.tensor([4, 1, 4, 0, 2, 4, 1])        # duplicates: 4 three times, 1 twice
    return weight, ids


class EmbeddingLookup(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids]

    @staticmethod
    def backward(ctx, grad_out):
        (ids,) = ctx.saved_tensors
        dweight = grad_out.new_zeros(ctx.rows, grad_out.shape[1])
        dweight.index_add_(0, ids, grad_out)
        return dweight, None

    @staticmethod
    def example_inputs():
        return _table_ids()


class EmbeddingLookupOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "weight",
           "note": "dweight[ids] = grad_out keeps one row per repeated id instead of summing them"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids]

    @staticmethod
    def backward(ctx, grad_out):
        (ids,) = ctx.saved_tensors
        dweight = grad_out.new_zeros(ctx.rows, grad_out.shape[1])
        dweight[ids] = grad_out  # BUG
        return dweight, None

    @staticmethod
    def example_inputs():
        return _table_ids()


def _gather_inputs():
    g = torch.Generator().manual_seed(22)
    x = torch.randn(5, 5, dtype=torch.float64, generator=g)
    idx = torch.tensor([[0, 3, 3], [4, 1, 0], [2, 2, 2], [1, 4, 3], [0, 0, 4]])
    return x, idx


class GatherAlongColumns(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, idx):
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return torch.gather(x, 1, idx)

    @staticmethod
    def backward(ctx, grad_out):
        (idx,) = ctx.saved_tensors
        return grad_out.new_zeros(ctx.shape).scatter_add_(1, idx, grad_out), None

    @staticmethod
    def example_inputs():
        return _gather_inputs()


class GatherColumnsScatterRows(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the gradient is scatter-added along dim 0 while forward gathered along dim 1"}

    @staticmethod
    def forward(ctx, x, idx):
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return torch.gather(x, 1, idx)

    @staticmethod
    def backward(ctx, grad_out):
        (idx,) = ctx.saved_tensors
        return grad_out.new_zeros(ctx.shape).scatter_add_(0, idx, grad_out), None  # BUG

    @staticmethod
    def example_inputs():
        return _gather_inputs()


def _bag_inputs():
    g = torch.Generator().manual_seed(23)
    weight = torch.randn(5, 4, dtype=torch.float64, generator=g)
    bags = torch.tensor([[0, 2, 2], [4, 1, 0], [3, 3, 1]])
    return weight, bags


class MeanBagEmbedding(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, bags):
        ctx.save_for_backward(bags)
        ctx.rows = weight.shape[0]
        return weight[bags].mean(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        (bags,) = ctx.saved_tensors
        b, length = bags.shape
        per_slot = (grad_out / length).unsqueeze(1).expand(b, length, grad_out.shape[-1])
        dweight = torch.zeros(ctx.rows, grad_out.shape[-1], dtype=grad_out.dtype)
        dweight.index_add_(0, bags.reshape(-1), per_slot.reshape(-1, grad_out.shape[-1]))
        return dweight, None

    @staticmethod
    def example_inputs():
        return _bag_inputs()


class EmbeddingBagMeanSummed(torch.autograd.Function):
    bug = {"kind": "scale", "input": "weight",
           "note": "backward spreads grad_out to every slot as for a sum bag, missing the 1/L"}

    @staticmethod
    def forward(ctx, weight, bags):
        ctx.save_for_backward(bags)
        ctx.rows = weight.shape[0]
        return weight[bags].mean(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        (bags,) = ctx.saved_tensors
        b, length = bags.shape
        per_slot = grad_out.unsqueeze(1).expand(b, length, grad_out.shape[-1])  # BUG
        dweight = torch.zeros(ctx.rows, grad_out.shape[-1], dtype=grad_out.dtype)
        dweight.index_add_(0, bags.reshape(-1), per_slot.reshape(-1, grad_out.shape[-1]))
        return dweight, None

    @staticmethod
    def example_inputs():
        return _bag_inputs()


PAD = 0


def _padded_inputs():
    g = torch.Generator().manual_seed(24)
    weight = torch.randn(5, 3, dtype=torch.float64, generator=g)
    ids = torch.tensor([[3, 1, 0, 0], [2, 4, 4, 0], [1, 0, 0, 0]])
    return weight, ids


class PadMaskedEmbedding(torch.autograd.Function):
    """Lookup where id 0 is padding: its rows come out as zeros and the pad row gets no gradient."""
    bug = None

    @staticmethod
    def forward(ctx, weight, ids):
        keep = (ids != PAD).unsqueeze(-1).to(weight.dtype)
        ctx.save_for_backward(ids, keep)
        ctx.rows = weight.shape[0]
        return weight[ids] * keep

    @staticmethod
    def backward(ctx, grad_out):
        ids, keep = ctx.saved_tensors
        d = grad_out.shape[-1]
        dweight = grad_out.new_zeros(ctx.rows, d)
        dweight.index_add_(0, ids.flatten(), (grad_out * keep).reshape(-1, d))
        return dweight, None

    @staticmethod
    def example_inputs():
        return _padded_inputs()


class PaddedEmbeddingPadRowLearns(torch.autograd.Function):
    bug = {"kind": "region", "input": "weight",
           "note": "the padding mask is not applied in backward, so the pad row 0 collects gradient"}

    @staticmethod
    def forward(ctx, weight, ids):
        keep = (ids != PAD).unsqueeze(-1).to(weight.dtype)
        ctx.save_for_backward(ids, keep)
        ctx.rows = weight.shape[0]
        return weight[ids] * keep

    @staticmethod
    def backward(ctx, grad_out):
        ids, keep = ctx.saved_tensors
        d = grad_out.shape[-1]
        dweight = grad_out.new_zeros(ctx.rows, d)
        dweight.index_add_(0, ids.flatten(), grad_out.reshape(-1, d))  # BUG
        return dweight, None

    @staticmethod
    def example_inputs():
        return _padded_inputs()


class ReverseGradient(torch.autograd.Function):
    """Domain-adversarial gradient reversal: identity forward, -lambda * grad backward (deliberate)."""
    bug = {"kind": "gradient_reversal", "input": "features",
           "note": "deliberate estimator: forward is the identity, backward returns -0.5 * grad_out"}
    strength = 0.5

    @staticmethod
    def forward(ctx, features):
        return features.view_as(features)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.neg() * ReverseGradient.strength  # BUG
