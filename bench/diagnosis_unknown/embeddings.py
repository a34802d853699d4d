"""Embedding layers: lookup with repeated ids, a weighted embedding bag, hashed ids, a learned
positional table added to a sequence-first batch, and rotary position embeddings (RoPE).

Integer id tensors are non-differentiable inputs; every example repeats ids, so the table's
gradient must accumulate.
"""
import torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _table_ids(seed, vocab=6, dim=3):
    g = _gen(seed)
    weight = torch.randn(vocab, dim, dtype=torch.float64, generator=g)
    ids = torch.tensor([[0, 2, 2, 5], [1, 2, 0, 0]])
    return weight, ids


class UnknownEmbeddingLookup(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.vocab = weight.shape[0]
        return weight[ids]

    @staticmethod
    def backward(ctx, dy):
        (ids,) = ctx.saved_tensors
        dweight = dy.new_zeros(ctx.vocab, dy.shape[-1])
        dweight.index_add_(0, ids.reshape(-1), dy.reshape(-1, dy.shape[-1]))
        return dweight, None

    @staticmethod
    def example_inputs():
        return _table_ids(1)


class UnknownEmbeddingLookupAssign(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "weight",
           "note": "rows of the table gradient are assigned with dW[ids] = dy, so repeated ids keep one row"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.vocab = weight.shape[0]
        return weight[ids]

    @staticmethod
    def backward(ctx, dy):
        (ids,) = ctx.saved_tensors
        dweight = dy.new_zeros(ctx.vocab, dy.shape[-1])
        dweight[ids.reshape(-1)] = dy.reshape(-1, dy.shape[-1])  # BUG
        return dweight, None

    @staticmethod
    def example_inputs():
        return _table_ids(2)


def _bag_inputs(seed):
    weight, ids = _table_ids(seed)
    per_sample = torch.rand(ids.shape, dtype=torch.float64, generator=_gen(seed + 100)) + 0.5
    return weight, per_sample, ids


class UnknownWeightedEmbeddingBag(torch.autograd.Function):
    """sum over the bag of per_sample_weights[b, l] * weight[ids[b, l]] (mode='sum')."""

    bug = None

    @staticmethod
    def forward(ctx, weight, per_sample, ids):
        rows = weight[ids]  # (b, l, d)
        ctx.save_for_backward(rows, per_sample, ids)
        ctx.vocab = weight.shape[0]
        return (per_sample.unsqueeze(-1) * rows).sum(1)

    @staticmethod
    def backward(ctx, dy):
        rows, per_sample, ids = ctx.saved_tensors
        d = dy.shape[-1]
        contrib = per_sample.unsqueeze(-1) * dy.unsqueeze(1)  # (b, l, d)
        dweight = dy.new_zeros(ctx.vocab, d).index_add_(0, ids.flatten(), contrib.reshape(-1, d))
        dper_sample = (rows * dy.unsqueeze(1)).sum(-1)
        return dweight, dper_sample, None

    @staticmethod
    def example_inputs():
        return _bag_inputs(3)


class UnknownWeightedEmbeddingBagPooledGrad(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "per_sample",
           "note": "the per-sample weight gradient dots dy with the pooled bag output instead of each looked-up row"}

    @staticmethod
    def forward(ctx, weight, per_sample, ids):
        rows = weight[ids]
        out = (per_sample.unsqueeze(-1) * rows).sum(1)
        ctx.save_for_backward(rows, out, per_sample, ids)
        ctx.vocab = weight.shape[0]
        return out

    @staticmethod
    def backward(ctx, dy):
        rows, out, per_sample, ids = ctx.saved_tensors
        d = dy.shape[-1]
        contrib = per_sample.unsqueeze(-1) * dy.unsqueeze(1)
        dweight = dy.new_zeros(ctx.vocab, d).index_add_(0, ids.flatten(), contrib.reshape(-1, d))
        dper_sample = (out * dy).sum(-1, keepdim=True).expand_as(per_sample)  # BUG
        return dweight, dper_sample, None

    @staticmethod
    def example_inputs():
        return _bag_inputs(4)


PRIME, BUCKETS = 7919, 5


class UnknownHashedEmbedding(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, ids):
        buckets = (ids * PRIME) % weight.shape[0]
        ctx.save_for_backward(buckets)
        ctx.shape = weight.shape
        return weight.index_select(0, buckets.flatten()).view(*ids.shape, -1)

    @staticmethod
    def backward(ctx, dy):
        (buckets,) = ctx.saved_tensors
        flat = dy.reshape(-1, ctx.shape[1])
        index = buckets.flatten()[:, None].expand_as(flat)
        return dy.new_zeros(ctx.shape).scatter_add_(0, index, flat), None

    @staticmethod
    def example_inputs():
        g = _gen(5)
        return (torch.randn(BUCKETS, 3, dtype=torch.float64, generator=g),
                torch.tensor([[3, 11, 8], [4, 3, 1]]))


class UnknownHashedEmbeddingRawIds(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "weight",
           "note": "the gradient is scattered to the raw ids (mod the table size) instead of their hashed buckets"}

    @staticmethod
    def forward(ctx, weight, ids):
        buckets = (ids * PRIME) % weight.shape[0]
        ctx.save_for_backward(ids, buckets)
        ctx.shape = weight.shape
        return weight.index_select(0, buckets.flatten()).view(*ids.shape, -1)

    @staticmethod
    def backward(ctx, dy):
        ids, buckets = ctx.saved_tensors
        flat = dy.reshape(-1, ctx.shape[1])
        index = (ids.flatten() % ctx.shape[0])[:, None].expand_as(flat)  # BUG
        return dy.new_zeros(ctx.shape).scatter_add_(0, index, flat), None

    @staticmethod
    def example_inputs():
        g = _gen(6)
        return (torch.randn(BUCKETS, 3, dtype=torch.float64, generator=g),
                torch.tensor([[3, 11, 8], [4, 3, 1]]))


def _seq_first_inputs(seed):
    g = _gen(seed)
    # (time, batch, dim) with time == batch so a sum over the wrong axis still has the table's shape
    return (torch.randn(3, 3, 4, dtype=torch.float64, generator=g),
            torch.randn(3, 4, dtype=torch.float64, generator=g))


class UnknownPositionalAddSeqFirst(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, pos):
        return x + pos[: x.shape[0], None, :]

    @staticmethod
    def backward(ctx, dy):
        return dy, dy.sum(dim=1)

    @staticmethod
    def example_inputs():
        return _seq_first_inputs(7)


class UnknownPositionalAddSeqFirstBatchAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "pos",
           "note": "the positional table's gradient sums over dim 0 (time) instead of the batch axis, dim 1"}

    @staticmethod
    def forward(ctx, x, pos):
        return x + pos[: x.shape[0], None, :]

    @staticmethod
    def backward(ctx, dy):
        dpos = dy.sum(dim=0)  # BUG
        return dy, dpos

    @staticmethod
    def example_inputs():
        return _seq_first_inputs(8)


def _rope_angles(t, d, base=10000.0):
    inv = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    theta = torch.arange(t, dtype=torch.float64)[:, None] * inv[None, :]
    return theta.cos(), theta.sin()


def _rope_forward(ctx, x):
    cos, sin = _rope_angles(x.shape[1], x.shape[2])
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = x1 * cos - x2 * sin
    out[..., 1::2] = x1 * sin + x2 * cos
    ctx.save_for_backward(cos, sin)
    return out


def _rope_input(seed):
    return (torch.randn(2, 4, 6, dtype=torch.float64, generator=_gen(seed)),)


class UnknownRotaryEmbedding(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        return _rope_forward(ctx, x)

    @staticmethod
    def backward(ctx, dy):
        cos, sin = ctx.saved_tensors
        d1, d2 = dy[..., 0::2], dy[..., 1::2]
        dx = torch.empty_like(dy)
        dx[..., 0::2] = d1 * cos + d2 * sin
        dx[..., 1::2] = -d1 * sin + d2 * cos
        return dx

    @staticmethod
    def example_inputs():
        return _rope_input(9)


class UnknownRotaryEmbeddingSameRotation(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x", "also": ["term_sign"],
           "note": "the backward applies the forward rotation R instead of its transpose R^T (the inverse rotation)"}

    @staticmethod
    def forward(ctx, x):
        return _rope_forward(ctx, x)

    @staticmethod
    def backward(ctx, dy):
        cos, sin = ctx.saved_tensors
        d1, d2 = dy[..., 0::2], dy[..., 1::2]
        rotated = torch.stack((d1 * cos - d2 * sin, d1 * sin + d2 * cos), dim=-1)  # BUG
        return rotated.flatten(-2)

    @staticmethod
    def example_inputs():
        return _rope_input(10)
