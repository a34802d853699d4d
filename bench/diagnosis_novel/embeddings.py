"""Embeddings by hand: lookup with repeated ids, embedding bag (mean, weighted sum), positional add, RoPE."""
import torch


def _table_ids(seed, v=5, d=3, shape=(6,)):
    gen = torch.Generator().manual_seed(seed)
    weight = torch.randn(v, d, dtype=torch.float64, generator=gen)
    ids = torch.tensor([1, 3, 1, 0, 3, 1, 2, 4, 1, 0, 2, 3][:int(torch.tensor(shape).prod())]).view(shape)
    return weight, ids


class NovelEmbedding(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids]

    @staticmethod
    def backward(ctx, g):
        (ids,) = ctx.saved_tensors
        grad = g.new_zeros(ctx.rows, g.shape[-1])
        grad.index_add_(0, ids.reshape(-1), g.reshape(-1, g.shape[-1]))
        return grad, None

    @staticmethod
    def example_inputs():
        return _table_ids(40)


class NovelEmbeddingAssigns(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "weight",
           "note": "grad[ids] = g assigns, so a row looked up several times keeps one gradient, not their sum"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids]

    @staticmethod
    def backward(ctx, g):
        (ids,) = ctx.saved_tensors
        grad = g.new_zeros(ctx.rows, g.shape[-1])
        grad[ids] = g  # BUG
        return grad, None

    @staticmethod
    def example_inputs():
        return _table_ids(41)


class NovelEmbeddingBagMean(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids].mean(dim=1)

    @staticmethod
    def backward(ctx, g):
        (ids,) = ctx.saved_tensors
        b, length = ids.shape
        spread = (g / length).unsqueeze(1).expand(b, length, g.shape[1])
        grad = g.new_zeros(ctx.rows, g.shape[1]).index_add_(0, ids.flatten(), spread.reshape(-1, g.shape[1]))
        return grad, None

    @staticmethod
    def example_inputs():
        return _table_ids(42, shape=(4, 3))


class NovelEmbeddingBagMeanAsSum(torch.autograd.Function):
    bug = {"kind": "scale", "input": "weight",
           "note": "the bag's mean is back-propagated like a sum: the 1/L is forgotten"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids].mean(dim=1)

    @staticmethod
    def backward(ctx, g):
        (ids,) = ctx.saved_tensors
        b, length = ids.shape
        spread = g.unsqueeze(1).expand(b, length, g.shape[1])  # BUG
        grad = g.new_zeros(ctx.rows, g.shape[1]).index_add_(0, ids.flatten(), spread.reshape(-1, g.shape[1]))
        return grad, None

    @staticmethod
    def example_inputs():
        return _table_ids(43, shape=(4, 3))


def _bag_inputs(seed):
    weight, ids = _table_ids(seed, v=5, d=4, shape=(3, 4))
    gen = torch.Generator().manual_seed(seed + 100)
    return weight, ids, torch.rand(3, 4, dtype=torch.float64, generator=gen) + 0.5


class NovelEmbeddingBagWeightedSum(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, ids, per_sample):
        rows = weight[ids]  # (B, L, D)
        ctx.save_for_backward(rows, ids, per_sample)
        ctx.rows = weight.shape[0]
        return (rows * per_sample[..., None]).sum(dim=1)

    @staticmethod
    def backward(ctx, g):
        rows, ids, per_sample = ctx.saved_tensors
        contrib = g[:, None, :] * per_sample[..., None]
        index = ids.reshape(-1, 1).expand(-1, g.shape[1])
        gweight = g.new_zeros(ctx.rows, g.shape[1]).scatter_add_(0, index, contrib.reshape(-1, g.shape[1]))
        gps = (g[:, None, :] * rows).sum(dim=2)
        return gweight, None, gps

    @staticmethod
    def example_inputs():
        return _bag_inputs(44)


class NovelEmbeddingBagWeightedSumWrongDim(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "per_sample",
           "note": "the per-sample weights' gradient sums over the bag positions (dim 1) instead of the features (dim 2)"}

    @staticmethod
    def forward(ctx, weight, ids, per_sample):
        rows = weight[ids]
        ctx.save_for_backward(rows, ids, per_sample)
        ctx.rows = weight.shape[0]
        return (rows * per_sample[..., None]).sum(dim=1)

    @staticmethod
    def backward(ctx, g):
        rows, ids, per_sample = ctx.saved_tensors
        contrib = g[:, None, :] * per_sample[..., None]
        index = ids.reshape(-1, 1).expand(-1, g.shape[1])
        gweight = g.new_zeros(ctx.rows, g.shape[1]).scatter_add_(0, index, contrib.reshape(-1, g.shape[1]))
        gps = (g[:, None, :] * rows).sum(dim=1)  # BUG
        return gweight, None, gps

    @staticmethod
    def example_inputs():
        return _bag_inputs(45)


def _positional_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    # time-major activations (T, B, D) and a learned table (T, D)
    return (torch.randn(3, 2, 4, dtype=torch.float64, generator=gen),
            torch.randn(3, 4, dtype=torch.float64, generator=gen))


class NovelPositionalAdd(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, table):
        return x + table[:, None, :]

    @staticmethod
    def backward(ctx, g):
        return g, g.sum(dim=1)

    @staticmethod
    def example_inputs():
        return _positional_inputs(46)


class NovelPositionalAddPerSample(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "table",
           "note": "the table's gradient is g itself, not summed over the batch dim 1 (fails by raising)"}

    @staticmethod
    def forward(ctx, x, table):
        return x + table[:, None, :]

    @staticmethod
    def backward(ctx, g):
        gtable = g  # BUG
        return g, gtable

    @staticmethod
    def example_inputs():
        return _positional_inputs(47)


def _rope_tables(t, d):
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    angles = torch.arange(t, dtype=torch.float64)[:, None] * inv[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def _rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)


def _rotate_half_t(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat([b, -a], dim=-1)


class NovelRoPE(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        cos, sin = _rope_tables(x.shape[0], x.shape[1])
        ctx.save_for_backward(cos, sin)
        return x * cos + _rotate_half(x) * sin

    @staticmethod
    def backward(ctx, g):
        cos, sin = ctx.saved_tensors
        return g * cos + _rotate_half_t(g * sin)

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(48)
        return (torch.randn(5, 4, dtype=torch.float64, generator=gen),)


class NovelRoPEForwardRotation(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x", "also": ["term_sign"],
           "note": "the backward applies the rotation itself (rotate_half) where its transpose is needed"}

    @staticmethod
    def forward(ctx, x):
        cos, sin = _rope_tables(x.shape[0], x.shape[1])
        ctx.save_for_backward(cos, sin)
        return x * cos + _rotate_half(x) * sin

    @staticmethod
    def backward(ctx, g):
        cos, sin = ctx.saved_tensors
        return g * cos + _rotate_half(g * sin)  # BUG

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(49)
        return (torch.randn(5, 4, dtype=torch.float64, generator=gen),)
