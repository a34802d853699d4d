"""Embedding bags and hashed embeddings for sparse recommender features: a weighted sum bag with
offsets and per-sample weights, a mean bag over a padded 2-D id tensor, a hashing-trick embedding
whose bucket ids are computed in forward (ids modulo the bucket count), a field-major layout of it,
and a straight-through binary code for retrieval hashing."""
import torch

# ------------------------------------------------------------ sum bag with per-sample weights
def _bag_inputs():
    gen = torch.Generator().manual_seed(2201)
    weight = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    ids = torch.tensor([0, 2, 2, 1, 0, 3, 2], dtype=torch.int64)
    offsets = torch.tensor([0, 3, 5], dtype=torch.int64)
    per_sample_weights = torch.rand(7, dtype=torch.float64, generator=gen) + 0.5
    return weight, ids, offsets, per_sample_weights


def _bag_forward(ctx, weight, ids, offsets, per_sample_weights):
    lengths = torch.diff(offsets, append=torch.tensor([ids.numel()]))
    bag = torch.repeat_interleave(torch.arange(offsets.numel()), lengths)
    out = torch.zeros(offsets.numel(), weight.shape[1], dtype=weight.dtype)
    out.index_add_(0, bag, weight[ids] * per_sample_weights[:, None])
    ctx.save_for_backward(weight, per_sample_weights)
    ctx.ids, ctx.bag = ids, bag
    return out


class HinterlandEmbeddingBagSum(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, ids, offsets, per_sample_weights):
        return _bag_forward(ctx, weight, ids, offsets, per_sample_weights)

    @staticmethod
    def backward(ctx, grad_out):
        weight, psw = ctx.saved_tensors
        grad_rows = grad_out[ctx.bag]
        grad_weight = grad_psw = None
        if ctx.needs_input_grad[0]:
            grad_weight = torch.zeros_like(weight).index_add_(0, ctx.ids, grad_rows * psw[:, None])
        if ctx.needs_input_grad[3]:
            grad_psw = (grad_rows * weight[ctx.ids]).sum(1)
        return grad_weight, None, None, grad_psw

    @staticmethod
    def example_inputs():
        return _bag_inputs()


class HinterlandEmbeddingBagSumIndexPut(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "weight",
           "note": "index_put_ without accumulate=True keeps one of the rows of a repeated id"}

    @staticmethod
    def forward(ctx, weight, ids, offsets, per_sample_weights):
        return _bag_forward(ctx, weight, ids, offsets, per_sample_weights)

    @staticmethod
    def backward(ctx, grad_out):
        weight, psw = ctx.saved_tensors
        grad_rows = grad_out[ctx.bag]
        grad_weight = grad_psw = None
        if ctx.needs_input_grad[0]:
            grad_weight = torch.zeros_like(weight).index_put_((ctx.ids,), grad_rows * psw[:, None])  # BUG
        if ctx.needs_input_grad[3]:
            grad_psw = (grad_rows * weight[ctx.ids]).sum(1)
        return grad_weight, None, None, grad_psw

    @staticmethod
    def example_inputs():
        return _bag_inputs()


class HinterlandEmbeddingBagSumWeightsNoUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "per_sample_weights",
           "note": "the per-sample weights' gradient is the looked-up row summed, never multiplied by the bag's grad_output"}

    @staticmethod
    def forward(ctx, weight, ids, offsets, per_sample_weights):
        return _bag_forward(ctx, weight, ids, offsets, per_sample_weights)

    @staticmethod
    def backward(ctx, grad_out):
        weight, psw = ctx.saved_tensors
        grad_rows = grad_out[ctx.bag]
        grad_weight = grad_psw = None
        if ctx.needs_input_grad[0]:
            grad_weight = torch.zeros_like(weight).index_add_(0, ctx.ids, grad_rows * psw[:, None])
        if ctx.needs_input_grad[3]:
            grad_psw = weight[ctx.ids].sum(1)  # BUG
        return grad_weight, None, None, grad_psw

    @staticmethod
    def example_inputs():
        return _bag_inputs()


# ---------------------------------------------------------- mean bag over padded 2-D ids
def _mean_bag_inputs():
    gen = torch.Generator().manual_seed(2202)
    weight = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    ids = torch.tensor([[1, 3, 3, 0], [2, 0, 0, 0], [4, 1, 3, 2]], dtype=torch.int64)  # 0 pads
    valid = torch.tensor([[True, True, True, False], [True, False, False, False], [True, True, True, True]])
    return weight, ids, valid


def _mean_bag_forward(ctx, weight, ids, valid):
    counts = valid.sum(1, keepdim=True).to(weight.dtype).clamp_min(1.0)
    rows = weight[ids].masked_fill(~valid[..., None], 0.0)
    ctx.save_for_backward(counts)
    ctx.ids, ctx.valid = ids, valid
    ctx.num_rows = weight.shape[0]
    return rows.sum(1) / counts


class HinterlandEmbeddingBagMean(torch.autograd.Function):
    """Mean of the valid slots' embeddings per row of a padded (B, L) id tensor."""

    bug = None

    @staticmethod
    def forward(ctx, weight, ids, valid):
        return _mean_bag_forward(ctx, weight, ids, valid)

    @staticmethod
    def backward(ctx, grad_out):
        (counts,) = ctx.saved_tensors
        B, L = ctx.ids.shape
        D = grad_out.shape[1]
        grad_slots = (grad_out / counts)[:, None, :].expand(B, L, D).masked_fill(~ctx.valid[..., None], 0.0)
        grad_weight = torch.zeros(ctx.num_rows, D, dtype=grad_out.dtype)
        grad_weight.index_add_(0, ctx.ids.view(B * L), grad_slots.contiguous().view(B * L, D))
        return grad_weight, None, None

    @staticmethod
    def example_inputs():
        return _mean_bag_inputs()


class HinterlandEmbeddingBagMeanPadRow(torch.autograd.Function):
    bug = {"kind": "region", "input": "weight",
           "note": "the padding slots are not masked in backward, so the padding row receives gradient"}

    @staticmethod
    def forward(ctx, weight, ids, valid):
        return _mean_bag_forward(ctx, weight, ids, valid)

    @staticmethod
    def backward(ctx, grad_out):
        (counts,) = ctx.saved_tensors
        B, L = ctx.ids.shape
        D = grad_out.shape[1]
        grad_slots = (grad_out / counts)[:, None, :].expand(B, L, D)  # BUG
        grad_weight = torch.zeros(ctx.num_rows, D, dtype=grad_out.dtype)
        grad_weight.index_add_(0, ctx.ids.view(B * L), grad_slots.contiguous().view(B * L, D))
        return grad_weight, None, None

    @staticmethod
    def example_inputs():
        return _mean_bag_inputs()


# ------------------------------------------------------------- hashing-trick embedding
def _hash_inputs():
    gen = torch.Generator().manual_seed(2203)
    table = torch.randn(5, 2, dtype=torch.float64, generator=gen)
    raw_ids = torch.tensor([[1031, 77, 2050], [9, 1036, 513], [46, 3002, 88], [71, 20, 1041]],
                           dtype=torch.int64)  # buckets mod 5: [[1,2,0],[4,1,3],[1,2,3],[1,0,1]]
    return table, raw_ids


class HinterlandHashEmbedding(torch.autograd.Function):
    """Sum of hashed-bucket embeddings per row: table[raw_ids % n_buckets].sum(1)."""

    bug = None

    @staticmethod
    def forward(ctx, table, raw_ids):
        bucket = torch.remainder(raw_ids, table.shape[0])
        ctx.bucket = bucket
        ctx.table_shape = table.shape
        return table[bucket].sum(1)

    @staticmethod
    def backward(ctx, grad_out):
        B, L = ctx.bucket.shape
        grad_slots = grad_out[:, None, :].expand(B, L, grad_out.shape[1]).reshape(B * L, -1)
        grad_table = torch.zeros(ctx.table_shape, dtype=grad_out.dtype)
        grad_table.index_add_(0, ctx.bucket.reshape(-1), grad_slots)
        return grad_table, None

    @staticmethod
    def example_inputs():
        return _hash_inputs()


class HinterlandHashEmbeddingAssign(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "table",
           "note": "the slot gradients are assigned into the table by advanced indexing, so colliding buckets keep only one"}

    @staticmethod
    def forward(ctx, table, raw_ids):
        bucket = torch.remainder(raw_ids, table.shape[0])
        ctx.bucket = bucket
        ctx.table_shape = table.shape
        return table[bucket].sum(1)

    @staticmethod
    def backward(ctx, grad_out):
        B, L = ctx.bucket.shape
        grad_slots = grad_out[:, None, :].expand(B, L, grad_out.shape[1]).reshape(B * L, -1)
        grad_table = torch.zeros(ctx.table_shape, dtype=grad_out.dtype)
        grad_table[ctx.bucket.reshape(-1)] = grad_slots  # BUG
        return grad_table, None

    @staticmethod
    def example_inputs():
        return _hash_inputs()


class HinterlandHashEmbeddingFieldMajor(torch.autograd.Function):
    """The hashed embeddings laid out field-major, (L, B, D), for per-field towers."""

    bug = None

    @staticmethod
    def forward(ctx, table, raw_ids):
        bucket = torch.remainder(raw_ids, table.shape[0])
        ctx.bucket = bucket
        ctx.table_shape = table.shape
        return table[bucket].permute(1, 0, 2).contiguous()

    @staticmethod
    def backward(ctx, grad_out):
        D = grad_out.shape[2]
        grad_slots = grad_out.permute(1, 0, 2).reshape(-1, D)
        grad_table = torch.zeros(ctx.table_shape, dtype=grad_out.dtype)
        grad_table.index_add_(0, ctx.bucket.reshape(-1), grad_slots)
        return grad_table, None

    @staticmethod
    def example_inputs():
        return _hash_inputs()


class HinterlandHashEmbeddingFieldMajorFlat(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "table", "also": ["transposed"],
           "note": "the (L, B, D) gradient is flattened without permuting back to (B, L, D), so slots pair with the wrong bucket ids"}

    @staticmethod
    def forward(ctx, table, raw_ids):
        bucket = torch.remainder(raw_ids, table.shape[0])
        ctx.bucket = bucket
        ctx.table_shape = table.shape
        return table[bucket].permute(1, 0, 2).contiguous()

    @staticmethod
    def backward(ctx, grad_out):
        D = grad_out.shape[2]
        grad_slots = grad_out.reshape(-1, D)  # BUG
        grad_table = torch.zeros(ctx.table_shape, dtype=grad_out.dtype)
        grad_table.index_add_(0, ctx.bucket.reshape(-1), grad_slots)
        return grad_table, None

    @staticmethod
    def example_inputs():
        return _hash_inputs()


# ----------------------------------------------------------------- binary codes (estimator)
class HinterlandBinaryCodeSTE(torch.autograd.Function):
    """sign() codes of item embeddings for Hamming retrieval, trained with a clipped straight-through estimator."""

    bug = {"kind": "straight_through", "input": "x",
           "note": "the gradient of sign() is passed through unchanged inside |x| <= 1, by design"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * (x.abs() <= 1).to(grad_out.dtype)  # BUG

    @staticmethod
    def example_inputs():
        return (torch.tensor([[0.4, -0.7, 0.2, -0.3], [0.9, 0.5, -0.6, 0.35], [-0.25, 0.8, -0.45, 0.6]],
                             dtype=torch.float64),)
