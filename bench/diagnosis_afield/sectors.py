"""Index bookkeeping of a book of trades: sector-neutral weights by integer sector ids, per-trade
asset embeddings looked up by integer asset ids (repeated), and holdings after trades net of a fee
(scatter_add / gather)."""
import torch


# ----------------------------------------------------------------------------- sector neutral
def _sector_inputs():
    weights = torch.tensor([0.3, -0.2, 0.5, 0.1, 0.4, -0.6], dtype=torch.float64)
    sector = torch.tensor([0, 1, 0, 2, 1, 0], dtype=torch.int64)
    return weights, sector


class AfieldSectorNeutral(torch.autograd.Function):
    """w_i - mean of w over i's sector."""

    bug = None

    @staticmethod
    def forward(ctx, weights, sector):
        n_sectors = int(sector.max()) + 1
        count = torch.zeros(n_sectors, dtype=weights.dtype).index_add_(0, sector, torch.ones_like(weights))
        mean = torch.zeros(n_sectors, dtype=weights.dtype).index_add_(0, sector, weights) / count
        ctx.save_for_backward(sector, count)
        return weights - mean[sector]

    @staticmethod
    def backward(ctx, grad_out):
        sector, count = ctx.saved_tensors
        per_sector = torch.zeros_like(count).index_add_(0, sector, grad_out)
        return grad_out - (per_sector / count)[sector], None

    @staticmethod
    def example_inputs():
        return _sector_inputs()


class AfieldSectorNeutralAssign(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "weights",
           "note": "the per-sector sum of the cotangent is built by assignment, so each sector keeps one member's value"}

    @staticmethod
    def forward(ctx, weights, sector):
        n_sectors = int(sector.max()) + 1
        count = torch.zeros(n_sectors, dtype=weights.dtype).index_add_(0, sector, torch.ones_like(weights))
        mean = torch.zeros(n_sectors, dtype=weights.dtype).index_add_(0, sector, weights) / count
        ctx.save_for_backward(sector, count)
        return weights - mean[sector]

    @staticmethod
    def backward(ctx, grad_out):
        sector, count = ctx.saved_tensors
        per_sector = torch.zeros_like(count)
        per_sector[sector] = grad_out  # BUG
        return grad_out - (per_sector / count)[sector], None

    @staticmethod
    def example_inputs():
        return _sector_inputs()


# ------------------------------------------------------------------------------ trade lookup
def _trade_inputs():
    gen = torch.Generator().manual_seed(51)
    embedding = torch.randn(5, 4, dtype=torch.float64, generator=gen)
    asset = torch.tensor([2, 0, 2, 4], dtype=torch.int64)
    size = torch.tensor([1.5, -0.7, 0.9, 2.1], dtype=torch.float64)
    return embedding, asset, size


class AfieldTradeEmbedding(torch.autograd.Function):
    """Each trade's feature: its size times the embedding of the asset it trades."""

    bug = None

    @staticmethod
    def forward(ctx, embedding, asset, size):
        rows = embedding[asset]
        ctx.save_for_backward(rows, asset, size)
        ctx.n_assets = embedding.shape[0]
        return size[:, None] * rows

    @staticmethod
    def backward(ctx, grad_out):
        rows, asset, size = ctx.saved_tensors
        grad_emb = torch.zeros(ctx.n_assets, rows.shape[1], dtype=rows.dtype)
        grad_emb.index_put_((asset,), grad_out * size[:, None], accumulate=True)
        grad_size = (grad_out * rows).sum(dim=1)
        return grad_emb, None, grad_size

    @staticmethod
    def example_inputs():
        return _trade_inputs()


class AfieldTradeEmbeddingNoAccumulate(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "embedding",
           "note": "index_put_ without accumulate=True: two trades of the same asset overwrite each other's gradient"}

    @staticmethod
    def forward(ctx, embedding, asset, size):
        rows = embedding[asset]
        ctx.save_for_backward(rows, asset, size)
        ctx.n_assets = embedding.shape[0]
        return size[:, None] * rows

    @staticmethod
    def backward(ctx, grad_out):
        rows, asset, size = ctx.saved_tensors
        grad_emb = torch.zeros(ctx.n_assets, rows.shape[1], dtype=rows.dtype)
        grad_emb.index_put_((asset,), grad_out * size[:, None])  # BUG
        grad_size = (grad_out * rows).sum(dim=1)
        return grad_emb, None, grad_size

    @staticmethod
    def example_inputs():
        return _trade_inputs()


class AfieldTradeEmbeddingSizeAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "size",
           "note": "the sizes' gradient sums over the trades (dim 0) instead of over the embedding features"}

    @staticmethod
    def forward(ctx, embedding, asset, size):
        rows = embedding[asset]
        ctx.save_for_backward(rows, asset, size)
        ctx.n_assets = embedding.shape[0]
        return size[:, None] * rows

    @staticmethod
    def backward(ctx, grad_out):
        rows, asset, size = ctx.saved_tensors
        grad_emb = torch.zeros(ctx.n_assets, rows.shape[1], dtype=rows.dtype)
        grad_emb.index_put_((asset,), grad_out * size[:, None], accumulate=True)
        grad_size = (grad_out * rows).sum(dim=0)  # BUG
        return grad_emb, None, grad_size

    @staticmethod
    def example_inputs():
        return _trade_inputs()


class AfieldTradeEmbeddingSizeNoCotangent(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "size",
           "note": "the sizes' gradient sums the looked-up rows without multiplying them by grad_out"}

    @staticmethod
    def forward(ctx, embedding, asset, size):
        rows = embedding[asset]
        ctx.save_for_backward(rows, asset, size)
        ctx.n_assets = embedding.shape[0]
        return size[:, None] * rows

    @staticmethod
    def backward(ctx, grad_out):
        rows, asset, size = ctx.saved_tensors
        grad_emb = torch.zeros(ctx.n_assets, rows.shape[1], dtype=rows.dtype)
        grad_emb.index_put_((asset,), grad_out * size[:, None], accumulate=True)
        grad_size = rows.sum(dim=1)  # BUG
        return grad_emb, None, grad_size

    @staticmethod
    def example_inputs():
        return _trade_inputs()


# -------------------------------------------------------------------------- holdings after fee
FEE = 0.1


def _rebalance_inputs():
    holdings = torch.tensor([1.0, 0.5, -0.3, 2.0, 0.8], dtype=torch.float64)
    asset = torch.tensor([1, 3, 1, 0], dtype=torch.int64)
    amount = torch.tensor([0.4, -1.2, 0.7, 0.25], dtype=torch.float64)
    return holdings, asset, amount


class AfieldHoldingsAfterFee(torch.autograd.Function):
    """Holdings plus each trade's amount net of a proportional fee, added to its asset."""

    bug = None

    @staticmethod
    def forward(ctx, holdings, asset, amount):
        ctx.save_for_backward(asset)
        return holdings.scatter_add(0, asset, amount * (1 - FEE))

    @staticmethod
    def backward(ctx, grad_out):
        (asset,) = ctx.saved_tensors
        return grad_out, None, grad_out.gather(0, asset) * (1 - FEE)

    @staticmethod
    def example_inputs():
        return _rebalance_inputs()


class AfieldHoldingsAfterFeeGross(torch.autograd.Function):
    bug = {"kind": "scale", "input": "amount",
           "note": "the trades' gradient forgets the (1 - fee) factor the forward applied"}

    @staticmethod
    def forward(ctx, holdings, asset, amount):
        ctx.save_for_backward(asset)
        return holdings.scatter_add(0, asset, amount * (1 - FEE))

    @staticmethod
    def backward(ctx, grad_out):
        (asset,) = ctx.saved_tensors
        grad_amount = grad_out.gather(0, asset)  # BUG
        return grad_out, None, grad_amount

    @staticmethod
    def example_inputs():
        return _rebalance_inputs()
