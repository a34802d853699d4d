"""Embedding lookups, gathers and bags with hand-written backwards (index_add_, scatter_add_)."""
import torch


def _table_and_ids():
    g = torch.Generator().manual_seed(72)
    weight = torch.randn(6, 3, dtype=torch.float64, generator=g)
    ids = torch.tensor([[1, 4, 1], [0, 5, 4]])  # repeated ids and the padding id 0
    return weight, ids


class SealedEmbeddingLookup(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids]

    @staticmethod
    def backward(ctx, grad):
        (ids,) = ctx.saved_tensors
        flat = grad.reshape(-1, grad.shape[-1])
        dweight = flat.new_zeros(ctx.rows, flat.shape[1]).index_add_(0, ids.reshape(-1), flat)
        return dweight, None

    @staticmethod
    def example_inputs():
        return _table_and_ids()


class SealedEmbeddingLookupAssign(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "weight",
           "note": "rows are written with dweight[ids] = grad, so repeated ids keep only one gradient"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids]

    @staticmethod
    def backward(ctx, grad):
        (ids,) = ctx.saved_tensors
        dweight = grad.new_zeros(ctx.rows, grad.shape[-1])
        dweight[ids.reshape(-1)] = grad.reshape(-1, grad.shape[-1])  # BUG
        return dweight, None

    @staticmethod
    def example_inputs():
        return _table_and_ids()


def _gather_inputs():
    g = torch.Generator().manual_seed(73)
    x = torch.randn(3, 5, dtype=torch.float64, generator=g)
    idx = torch.tensor([[0, 2, 2, 4], [1, 1, 3, 0], [4, 4, 4, 2]])
    return x, idx


class SealedGatherColumns(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return x.gather(1, index)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return torch.zeros(ctx.shape, dtype=grad.dtype).scatter_add_(1, index, grad), None

    @staticmethod
    def example_inputs():
        return _gather_inputs()


class SealedGatherColumnsScatter(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "scatter_ instead of scatter_add_: a column gathered twice gets one gradient"}

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return x.gather(1, index)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        dx = torch.zeros(ctx.shape, dtype=grad.dtype).scatter_(1, index, grad)  # BUG
        return dx, None

    @staticmethod
    def example_inputs():
        return _gather_inputs()


class SealedEmbeddingBagMean(torch.autograd.Function):
    """Mean of each bag's rows: ids (B, L) -> (B, D)."""
    bug = None

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids].mean(1)

    @staticmethod
    def backward(ctx, grad):
        (ids,) = ctx.saved_tensors
        per_id = (grad / ids.shape[1]).unsqueeze(1).expand(-1, ids.shape[1], -1)
        dweight = grad.new_zeros(ctx.rows, grad.shape[1])
        dweight.index_add_(0, ids.flatten(), per_id.reshape(-1, grad.shape[1]))
        return dweight, None

    @staticmethod
    def example_inputs():
        return _table_and_ids()


class SealedEmbeddingBagMeanAsSum(torch.autograd.Function):
    bug = {"kind": "scale", "input": "weight",
           "note": "the bag's 1/L is dropped, the gradient of a sum bag is returned"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids].mean(1)

    @staticmethod
    def backward(ctx, grad):
        (ids,) = ctx.saved_tensors
        per_id = grad.unsqueeze(1).expand(-1, ids.shape[1], -1)  # BUG
        dweight = grad.new_zeros(ctx.rows, grad.shape[1])
        dweight.index_add_(0, ids.flatten(), per_id.reshape(-1, grad.shape[1]))
        return dweight, None

    @staticmethod
    def example_inputs():
        return _table_and_ids()


PAD = 0


class SealedPaddedEmbedding(torch.autograd.Function):
    """Lookup whose padding row never learns."""
    bug = None

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids] * (ids != PAD).unsqueeze(-1)

    @staticmethod
    def backward(ctx, grad):
        (ids,) = ctx.saved_tensors
        grad = grad.masked_fill((ids == PAD).unsqueeze(-1), 0.0)
        dweight = grad.new_zeros(ctx.rows, grad.shape[-1])
        return dweight.index_add_(0, ids.flatten(), grad.reshape(-1, grad.shape[-1])), None

    @staticmethod
    def example_inputs():
        return _table_and_ids()


class SealedPaddedEmbeddingKeepsPadOnly(torch.autograd.Function):
    bug = {"kind": "region", "input": "weight",
           "note": "the mask is inverted: only the padding positions keep their gradient"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids] * (ids != PAD).unsqueeze(-1)

    @staticmethod
    def backward(ctx, grad):
        (ids,) = ctx.saved_tensors
        grad = grad.masked_fill((ids != PAD).unsqueeze(-1), 0.0)  # BUG
        dweight = grad.new_zeros(ctx.rows, grad.shape[-1])
        return dweight.index_add_(0, ids.flatten(), grad.reshape(-1, grad.shape[-1])), None

    @staticmethod
    def example_inputs():
        return _table_and_ids()


class SealedGradReverse(torch.autograd.Function):
    """Domain-adversarial gradient reversal layer, a deliberate estimator."""
    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "identity forward, backward returns -lambda * grad on purpose"}

    @staticmethod
    def forward(ctx, x, lam):
        ctx.lam = lam
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad.neg() * ctx.lam, None  # BUG

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(74)
        return torch.randn(3, 4, dtype=torch.float64, generator=g), 0.7
