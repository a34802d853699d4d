"""Forecasting: an AR(p) forecast over lags taken by unfold, an exponentially decaying weighting of
a loss over the forecast horizon, per-horizon linear heads over flattened features, a lead-lag
cross-asset regression written with einsum, and per-asset linear maps over a (batch, asset) panel."""
import torch


# -------------------------------------------------------------------------------- AR(p) forecast
def _ar_inputs():
    gen = torch.Generator().manual_seed(31)
    series = torch.randn(3, 8, dtype=torch.float64, generator=gen)
    phi = torch.tensor([0.5, -0.3, 0.15], dtype=torch.float64)  # phi[0]: the most recent lag
    return series, phi


def _lag_windows(series, p):
    length = series.shape[1] - p
    return series.unfold(1, p, 1)[:, :length]  # (N, L, p), oldest lag first


class AfieldARForecast(torch.autograd.Function):
    """One-step forecasts yhat_{t} = sum_k phi_k y_{t-k} for every date with p lags behind it."""

    bug = None

    @staticmethod
    def forward(ctx, series, phi):
        lags = _lag_windows(series, phi.shape[0])
        ctx.save_for_backward(lags, phi)
        ctx.length = series.shape[1]
        return lags @ phi.flip(0)

    @staticmethod
    def backward(ctx, grad_out):
        lags, phi = ctx.saved_tensors
        n, length, p = lags.shape
        grad_phi = torch.einsum("nl,nlk->k", grad_out, lags).flip(0)
        grad_lags = grad_out[..., None] * phi.flip(0)  # (N, L, p)
        where = torch.arange(p)[:, None] + torch.arange(length)[None, :]  # (p, L): date of lag k, window l
        grad_series = torch.zeros(n, ctx.length, dtype=grad_out.dtype)
        grad_series.index_add_(1, where.reshape(-1), grad_lags.permute(0, 2, 1).reshape(n, -1))
        return grad_series, grad_phi

    @staticmethod
    def example_inputs():
        return _ar_inputs()


class AfieldARForecastCoefficientOrder(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "phi",
           "note": "the forward flips phi to oldest-first, the coefficients' gradient is not flipped back"}

    @staticmethod
    def forward(ctx, series, phi):
        lags = _lag_windows(series, phi.shape[0])
        ctx.save_for_backward(lags, phi)
        ctx.length = series.shape[1]
        return lags @ phi.flip(0)

    @staticmethod
    def backward(ctx, grad_out):
        lags, phi = ctx.saved_tensors
        n, length, p = lags.shape
        grad_phi = torch.einsum("nl,nlk->k", grad_out, lags)  # BUG
        grad_lags = grad_out[..., None] * phi.flip(0)
        where = torch.arange(p)[:, None] + torch.arange(length)[None, :]
        grad_series = torch.zeros(n, ctx.length, dtype=grad_out.dtype)
        grad_series.index_add_(1, where.reshape(-1), grad_lags.permute(0, 2, 1).reshape(n, -1))
        return grad_series, grad_phi

    @staticmethod
    def example_inputs():
        return _ar_inputs()


class AfieldARForecastFoldLayout(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "series", "also": ["transposed"],
           "note": "the lag gradients (N, L, p) are flattened without moving p in front of L, so they do not line up with the (p, L) dates"}

    @staticmethod
    def forward(ctx, series, phi):
        lags = _lag_windows(series, phi.shape[0])
        ctx.save_for_backward(lags, phi)
        ctx.length = series.shape[1]
        return lags @ phi.flip(0)

    @staticmethod
    def backward(ctx, grad_out):
        lags, phi = ctx.saved_tensors
        n, length, p = lags.shape
        grad_phi = torch.einsum("nl,nlk->k", grad_out, lags).flip(0)
        grad_lags = grad_out[..., None] * phi.flip(0)
        where = torch.arange(p)[:, None] + torch.arange(length)[None, :]
        grad_series = torch.zeros(n, ctx.length, dtype=grad_out.dtype)
        grad_series.index_add_(1, where.reshape(-1), grad_lags.reshape(n, -1))  # BUG
        return grad_series, grad_phi

    @staticmethod
    def example_inputs():
        return _ar_inputs()


class AfieldARForecastFoldOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "series",
           "note": "the lag gradients are folded back with index_put_ (no accumulate), so a date used by several windows keeps one"}

    @staticmethod
    def forward(ctx, series, phi):
        lags = _lag_windows(series, phi.shape[0])
        ctx.save_for_backward(lags, phi)
        ctx.length = series.shape[1]
        return lags @ phi.flip(0)

    @staticmethod
    def backward(ctx, grad_out):
        lags, phi = ctx.saved_tensors
        n, length, p = lags.shape
        grad_phi = torch.einsum("nl,nlk->k", grad_out, lags).flip(0)
        grad_lags = grad_out[..., None] * phi.flip(0)
        where = torch.arange(p)[:, None] + torch.arange(length)[None, :]
        grad_series = torch.zeros(n, ctx.length, dtype=grad_out.dtype)
        rows = torch.arange(n)[:, None].expand(n, p * length)
        cols = where.reshape(1, -1).expand(n, -1)
        grad_series.index_put_((rows, cols), grad_lags.permute(0, 2, 1).reshape(n, -1))  # BUG
        return grad_series, grad_phi

    @staticmethod
    def example_inputs():
        return _ar_inputs()


# ---------------------------------------------------------------------- horizon-decayed loss
def _decay_inputs():
    gen = torch.Generator().manual_seed(32)
    pred = torch.randn(3, 5, dtype=torch.float64, generator=gen)
    target = torch.randn(3, 5, dtype=torch.float64, generator=gen)
    kappa = torch.tensor(0.4, dtype=torch.float64)
    return pred, target, kappa


class AfieldHorizonDecayLoss(torch.autograd.Function):
    """sum_h w_h mean_b (pred - target)^2 with w = softmax(-kappa h) over the horizon."""

    bug = None

    @staticmethod
    def forward(ctx, pred, target, kappa):
        h = torch.arange(pred.shape[1], dtype=pred.dtype)
        w = torch.softmax(-kappa * h, dim=0)
        err = pred - target
        ctx.save_for_backward(err, w, h)
        return (w * err ** 2).sum() / pred.shape[0]

    @staticmethod
    def backward(ctx, grad_out):
        err, w, h = ctx.saved_tensors
        b = err.shape[0]
        grad_pred = grad_out * 2 * w * err / b
        per_h = (err ** 2).sum(dim=0) / b
        grad_kappa = grad_out * (w * (-h + (w * h).sum()) * per_h).sum()
        return grad_pred, -grad_pred, grad_kappa

    @staticmethod
    def example_inputs():
        return _decay_inputs()


class AfieldHorizonDecayLossFixedDecay(torch.autograd.Function):
    bug = {"kind": "zero", "input": "kappa",
           "note": "the decay rate is treated as a constant and gets None although it is a learnable input"}

    @staticmethod
    def forward(ctx, pred, target, kappa):
        h = torch.arange(pred.shape[1], dtype=pred.dtype)
        w = torch.softmax(-kappa * h, dim=0)
        err = pred - target
        ctx.save_for_backward(err, w, h)
        return (w * err ** 2).sum() / pred.shape[0]

    @staticmethod
    def backward(ctx, grad_out):
        err, w, h = ctx.saved_tensors
        b = err.shape[0]
        grad_pred = grad_out * 2 * w * err / b
        return grad_pred, -grad_pred, None  # BUG

    @staticmethod
    def example_inputs():
        return _decay_inputs()


# --------------------------------------------------------------------- per-horizon linear heads
H, D = 3, 4


def _heads_inputs():
    gen = torch.Generator().manual_seed(33)
    features = torch.randn(3, H * D, dtype=torch.float64, generator=gen)
    weight = torch.randn(H, D, dtype=torch.float64, generator=gen)
    return features, weight


class AfieldHorizonHeads(torch.autograd.Function):
    """yhat[b, h] = <features[b, h*D:(h+1)*D], weight[h]>: one linear head per horizon."""

    bug = None

    @staticmethod
    def forward(ctx, features, weight):
        xv = features.view(features.shape[0], H, D)
        ctx.save_for_backward(xv, weight)
        return torch.einsum("bhd,hd->bh", xv, weight)

    @staticmethod
    def backward(ctx, grad_out):
        xv, weight = ctx.saved_tensors
        grad_x = (grad_out[..., None] * weight).reshape(xv.shape[0], H * D)
        grad_w = torch.einsum("bh,bhd->hd", grad_out, xv)
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _heads_inputs()


class AfieldHorizonHeadsUnflattened(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "features",
           "note": "the features' gradient is returned as (B, H, D), not flattened back to (B, H*D)"}

    @staticmethod
    def forward(ctx, features, weight):
        xv = features.view(features.shape[0], H, D)
        ctx.save_for_backward(xv, weight)
        return torch.einsum("bhd,hd->bh", xv, weight)

    @staticmethod
    def backward(ctx, grad_out):
        xv, weight = ctx.saved_tensors
        grad_x = grad_out[..., None] * weight  # BUG
        grad_w = torch.einsum("bh,bhd->hd", grad_out, xv)
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _heads_inputs()


class AfieldHorizonHeadsSumHorizons(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "weight",
           "note": "the heads' gradient sums over the horizons (dim 1) instead of over the batch"}

    @staticmethod
    def forward(ctx, features, weight):
        xv = features.view(features.shape[0], H, D)
        ctx.save_for_backward(xv, weight)
        return torch.einsum("bhd,hd->bh", xv, weight)

    @staticmethod
    def backward(ctx, grad_out):
        xv, weight = ctx.saved_tensors
        grad_x = (grad_out[..., None] * weight).reshape(xv.shape[0], H * D)
        grad_w = (grad_out[..., None] * xv).sum(dim=1)  # BUG
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _heads_inputs()


# ---------------------------------------------------------------------------------- lead-lag
def _leadlag_inputs():
    gen = torch.Generator().manual_seed(34)
    returns = torch.randn(6, 3, dtype=torch.float64, generator=gen)
    lead = torch.randn(3, 3, dtype=torch.float64, generator=gen)
    return returns, lead


class AfieldLeadLag(torch.autograd.Function):
    """rhat_t = A r_{t-1}: next-day returns of each asset from yesterday's returns of all assets."""

    bug = None

    @staticmethod
    def forward(ctx, returns, lead):
        ctx.save_for_backward(returns, lead)
        return torch.einsum("tj,ij->ti", returns[:-1], lead)

    @staticmethod
    def backward(ctx, grad_out):
        r, lead = ctx.saved_tensors
        grad_r = torch.zeros_like(r)
        grad_r[:-1] = grad_out @ lead
        grad_lead = grad_out.mT @ r[:-1]
        return grad_r, grad_lead

    @staticmethod
    def example_inputs():
        return _leadlag_inputs()


class AfieldLeadLagTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "lead",
           "note": "the lead-lag matrix's gradient is r' g instead of g' r"}

    @staticmethod
    def forward(ctx, returns, lead):
        ctx.save_for_backward(returns, lead)
        return torch.einsum("tj,ij->ti", returns[:-1], lead)

    @staticmethod
    def backward(ctx, grad_out):
        r, lead = ctx.saved_tensors
        grad_r = torch.zeros_like(r)
        grad_r[:-1] = grad_out @ lead
        grad_lead = r[:-1].mT @ grad_out  # BUG
        return grad_r, grad_lead

    @staticmethod
    def example_inputs():
        return _leadlag_inputs()


# ------------------------------------------------------------------------------ panel heads
def _panel_inputs():
    gen = torch.Generator().manual_seed(35)
    panel = torch.randn(3, 3, 2, dtype=torch.float64, generator=gen)  # (batch, asset, feature)
    maps = torch.randn(3, 2, 2, dtype=torch.float64, generator=gen)  # one map per asset
    return panel, maps


class AfieldPanelAssetMaps(torch.autograd.Function):
    """y[b, n] = x[b, n] @ M[n]: the panel is put asset-major for one bmm and put back."""

    bug = None

    @staticmethod
    def forward(ctx, panel, maps):
        xp = panel.permute(1, 0, 2)  # (N, B, D)
        ctx.save_for_backward(xp, maps)
        return torch.bmm(xp, maps).permute(1, 0, 2)

    @staticmethod
    def backward(ctx, grad_out):
        xp, maps = ctx.saved_tensors
        gp = grad_out.permute(1, 0, 2)
        grad_panel = torch.bmm(gp, maps.mT).permute(1, 0, 2)
        grad_maps = torch.bmm(xp.mT, gp)
        return grad_panel, grad_maps

    @staticmethod
    def example_inputs():
        return _panel_inputs()


class AfieldPanelAssetMapsAssetMajor(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "panel",
           "note": "the panel's gradient is left asset-major (N, B, D): the permute back to (B, N, D) is missing"}

    @staticmethod
    def forward(ctx, panel, maps):
        xp = panel.permute(1, 0, 2)
        ctx.save_for_backward(xp, maps)
        return torch.bmm(xp, maps).permute(1, 0, 2)

    @staticmethod
    def backward(ctx, grad_out):
        xp, maps = ctx.saved_tensors
        gp = grad_out.permute(1, 0, 2)
        grad_panel = torch.bmm(gp, maps.mT)  # BUG
        grad_maps = torch.bmm(xp.mT, gp)
        return grad_panel, grad_maps

    @staticmethod
    def example_inputs():
        return _panel_inputs()
