"""Embedding-style ops with hand-written backwards: lookup with a padding row, embedding bag (mean),
positional add, rotary position embedding, index_select with repeated indices, sparse segment mean
(sequestered corpus)."""
import torch

PAD = 0


def _table_ids(seed):
    gen = torch.Generator().manual_seed(seed)
    weight = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    ids = torch.tensor([[1, 0, 3], [3, 3, 4]])  # repeated ids and the padding id
    return weight, ids


# ---------------------------------------------------------------- lookup with a padding row
class SequesteredPaddedEmbeddingPadLearns(torch.autograd.Function):
    bug = {"kind": "region", "input": "weight",
           "note": "the forward returns zeros for the padding id; the backward still accumulates into the padding row"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids] * (ids != PAD)[..., None]

    @staticmethod
    def backward(ctx, grad_out):
        (ids,) = ctx.saved_tensors
        flat = ids.reshape(-1)
        g = grad_out.reshape(flat.numel(), -1)
        dweight = g.new_zeros(ctx.rows, g.shape[1]).index_add_(0, flat, g)  # BUG
        return dweight, None

    @staticmethod
    def example_inputs():
        return _table_ids(51)


class SequesteredMaskedEmbedding(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids] * (ids != PAD)[..., None]

    @staticmethod
    def backward(ctx, grad_out):
        (ids,) = ctx.saved_tensors
        keep = ids != PAD
        g = grad_out[keep]
        return g.new_zeros(ctx.rows, g.shape[1]).index_add_(0, ids[keep], g), None

    @staticmethod
    def example_inputs():
        return _table_ids(51)


# ------------------------------------------------------------------------- embedding bag mean
class SequesteredEmbeddingBagMean(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids].mean(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        (ids,) = ctx.saved_tensors
        bag = ids.shape[1]
        per_id = (grad_out / bag).repeat_interleave(bag, dim=0)
        out = torch.zeros(ctx.rows, grad_out.shape[1], dtype=grad_out.dtype)
        out.index_add_(0, ids.flatten(), per_id)
        return out, None

    @staticmethod
    def example_inputs():
        return _table_ids(52)


class SequesteredEmbeddingBagMeanAsSum(torch.autograd.Function):
    bug = {"kind": "scale", "input": "weight",
           "note": "the bag's gradient is handed to each of its 3 ids without dividing by the bag size"}

    @staticmethod
    def forward(ctx, weight, ids):
        ctx.save_for_backward(ids)
        ctx.rows = weight.shape[0]
        return weight[ids].mean(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        (ids,) = ctx.saved_tensors
        bag = ids.shape[1]
        per_id = grad_out.repeat_interleave(bag, dim=0)  # BUG
        out = torch.zeros(ctx.rows, grad_out.shape[1], dtype=grad_out.dtype)
        out.index_add_(0, ids.flatten(), per_id)
        return out, None

    @staticmethod
    def example_inputs():
        return _table_ids(52)


# ----------------------------------------------------------------------------- positional add
def _pos_inputs():
    gen = torch.Generator().manual_seed(53)
    return (torch.randn(3, 3, 2, dtype=torch.float64, generator=gen),
            torch.randn(3, 2, dtype=torch.float64, generator=gen))


class SequesteredPositionalAdd(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, tokens, pos):
        return tokens + pos  # (B, T, D) + (T, D)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out, grad_out.sum(dim=0)

    @staticmethod
    def example_inputs():
        return _pos_inputs()


class SequesteredPositionalAddTimeSum(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "pos",
           "note": "the position table's gradient is summed over time instead of over the batch"}

    @staticmethod
    def forward(ctx, tokens, pos):
        return tokens + pos

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out, grad_out.sum(dim=1)  # BUG

    @staticmethod
    def example_inputs():
        return _pos_inputs()


# --------------------------------------------------------------------------------------- RoPE
def _angles(t, d):
    inv = 1.0 / (10.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    theta = torch.arange(t, dtype=torch.float64)[:, None] * inv[None, :]
    return theta.cos(), theta.sin()


class SequesteredRotary(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        cos, sin = _angles(*x.shape)
        x1, x2 = x[:, 0::2], x[:, 1::2]
        out = torch.empty_like(x)
        out[:, 0::2] = x1 * cos - x2 * sin
        out[:, 1::2] = x1 * sin + x2 * cos
        return out

    @staticmethod
    def backward(ctx, grad_out):
        cos, sin = _angles(*grad_out.shape)
        g1, g2 = grad_out[:, 0::2], grad_out[:, 1::2]
        dx = torch.empty_like(grad_out)
        dx[:, 0::2] = g1 * cos + g2 * sin
        dx[:, 1::2] = -g1 * sin + g2 * cos
        return dx


class SequesteredRotaryForwardRotation(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "the backward rotates the gradient by +theta (R g) instead of by -theta (R^T g)"}

    @staticmethod
    def forward(ctx, x):
        cos, sin = _angles(*x.shape)
        x1, x2 = x[:, 0::2], x[:, 1::2]
        out = torch.empty_like(x)
        out[:, 0::2] = x1 * cos - x2 * sin
        out[:, 1::2] = x1 * sin + x2 * cos
        return out

    @staticmethod
    def backward(ctx, grad_out):
        cos, sin = _angles(*grad_out.shape)
        g1, g2 = grad_out[:, 0::2], grad_out[:, 1::2]
        rotated = torch.stack([g1 * cos - g2 * sin, g1 * sin + g2 * cos], dim=-1)  # BUG
        return rotated.reshape(grad_out.shape)


# ------------------------------------------------------------- index_select, repeated indices
def _select_inputs():
    gen = torch.Generator().manual_seed(54)
    return torch.randn(3, 4, dtype=torch.float64, generator=gen), torch.tensor([2, 0, 2, 3, 2])


class SequesteredIndexSelectColumns(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return torch.index_select(x, dim=1, index=index)

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        dx = grad_out.new_zeros(ctx.shape)
        dx.index_add_(1, index, grad_out)
        return dx, None

    @staticmethod
    def example_inputs():
        return _select_inputs()


class SequesteredIndexSelectColumnsAssigned(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "dx[:, index] = grad_out keeps only the last copy of a repeated column"}

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.shape = x.shape
        return torch.index_select(x, dim=1, index=index)

    @staticmethod
    def backward(ctx, grad_out):
        (index,) = ctx.saved_tensors
        dx = grad_out.new_zeros(ctx.shape)
        dx[:, index] = grad_out  # BUG
        return dx, None

    @staticmethod
    def example_inputs():
        return _select_inputs()


# -------------------------------------------------------------------- sparse segment mean
def _segment_inputs():
    gen = torch.Generator().manual_seed(55)
    values = torch.randn(6, 2, dtype=torch.float64, generator=gen)
    segments = torch.tensor([0, 0, 0, 1, 2, 2])
    return values, segments


def _segment_counts(segments):
    return torch.bincount(segments).to(torch.float64)


class SequesteredSegmentMean(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, values, segments):
        counts = _segment_counts(segments)
        total = values.new_zeros(counts.numel(), values.shape[1]).index_add_(0, segments, values)
        ctx.save_for_backward(segments, counts)
        return total / counts[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        segments, counts = ctx.saved_tensors
        return (grad_out / counts[:, None])[segments], None

    @staticmethod
    def example_inputs():
        return _segment_inputs()


class SequesteredSegmentMeanWeightsOnly(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "values",
           "note": "each row gets 1 / its segment's count, the mean's weight, never multiplied by grad_out"}

    @staticmethod
    def forward(ctx, values, segments):
        counts = _segment_counts(segments)
        total = values.new_zeros(counts.numel(), values.shape[1]).index_add_(0, segments, values)
        ctx.save_for_backward(segments, counts)
        return total / counts[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        segments, counts = ctx.saved_tensors
        weight = torch.ones(segments.numel(), grad_out.shape[1], dtype=grad_out.dtype)
        return weight / counts[segments][:, None], None  # BUG

    @staticmethod
    def example_inputs():
        return _segment_inputs()
