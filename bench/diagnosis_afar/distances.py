"""Point-set distances by hand: pairwise Euclidean distances (like torch.cdist), the chamfer
distance through argmin matches, a k-nearest-neighbour weighted gather by integer neighbour ids,
and a straight-through hard nearest-prototype assignment."""
import torch


def _cdist_inputs():
    g = torch.Generator().manual_seed(401)
    return (torch.randn(4, 3, dtype=torch.float64, generator=g, requires_grad=True),
            torch.randn(4, 3, dtype=torch.float64, generator=g, requires_grad=True))


class AfarPairwiseDistance(torch.autograd.Function):
    """d[i, j] = |x[i] - y[j]|."""

    bug = None

    @staticmethod
    def forward(ctx, x, y):
        diff = x[:, None, :] - y[None, :, :]
        d = diff.pow(2).sum(dim=-1).sqrt()
        ctx.save_for_backward(diff, d)
        return d

    @staticmethod
    def backward(ctx, grad_out):
        diff, d = ctx.saved_tensors
        w = (grad_out / d)[..., None] * diff
        return w.sum(dim=1), -w.sum(dim=0)

    @staticmethod
    def example_inputs():
        return _cdist_inputs()


class AfarPairwiseDistanceRowSum(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "y",
           "note": "y's gradient sums the per-pair terms over dim=1 (the y index) instead of dim=0 (the x index)"}

    @staticmethod
    def forward(ctx, x, y):
        diff = x[:, None, :] - y[None, :, :]
        d = diff.pow(2).sum(dim=-1).sqrt()
        ctx.save_for_backward(diff, d)
        return d

    @staticmethod
    def backward(ctx, grad_out):
        diff, d = ctx.saved_tensors
        w = (grad_out / d)[..., None] * diff
        grad_y = -w.sum(dim=1)  # BUG
        return w.sum(dim=1), grad_y

    @staticmethod
    def example_inputs():
        return _cdist_inputs()


class AfarPairwiseDistanceSameSign(torch.autograd.Function):
    bug = {"kind": "sign", "input": "y",
           "note": "y enters as x - y but its gradient is returned without the minus"}

    @staticmethod
    def forward(ctx, x, y):
        diff = x[:, None, :] - y[None, :, :]
        d = diff.pow(2).sum(dim=-1).sqrt()
        ctx.save_for_backward(diff, d)
        return d

    @staticmethod
    def backward(ctx, grad_out):
        diff, d = ctx.saved_tensors
        w = (grad_out / d)[..., None] * diff
        grad_y = w.sum(dim=0)  # BUG
        return w.sum(dim=1), grad_y

    @staticmethod
    def example_inputs():
        return _cdist_inputs()


class AfarPairwiseDistanceUnitUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "the per-pair weight is 1 / d: grad_out is never multiplied in, as if every distance had upstream gradient 1"}

    @staticmethod
    def forward(ctx, x, y):
        diff = x[:, None, :] - y[None, :, :]
        d = diff.pow(2).sum(dim=-1).sqrt()
        ctx.save_for_backward(diff, d)
        return d

    @staticmethod
    def backward(ctx, grad_out):
        diff, d = ctx.saved_tensors
        w = (1.0 / d)[..., None] * diff  # BUG
        return w.sum(dim=1), -(grad_out / d)[..., None].mul(diff).sum(dim=0)

    @staticmethod
    def example_inputs():
        return _cdist_inputs()


# ------------------------------------------------------------------------------ chamfer
def _chamfer_inputs():
    g = torch.Generator().manual_seed(402)
    return (torch.randn(4, 2, dtype=torch.float64, generator=g, requires_grad=True),
            torch.randn(7, 2, dtype=torch.float64, generator=g, requires_grad=True))


class AfarChamferDistance(torch.autograd.Function):
    """mean_i min_j |x_i - y_j|^2 + mean_j min_i |x_i - y_j|^2 (matches by argmin)."""

    bug = None

    @staticmethod
    def forward(ctx, x, y):
        sq = (x[:, None, :] - y[None, :, :]).pow(2).sum(dim=-1)
        i = sq.argmin(dim=1)  # nearest y of each x
        j = sq.argmin(dim=0)  # nearest x of each y (repeats: several y share an x)
        ctx.save_for_backward(x, y, i, j)
        return sq.gather(1, i[:, None]).mean() + sq.gather(0, j[None, :]).mean()

    @staticmethod
    def backward(ctx, grad_out):
        x, y, i, j = ctx.saved_tensors
        n, m = x.shape[0], y.shape[0]
        fwd = 2 * (x - y[i]) / n
        bwd = 2 * (x[j] - y) / m
        grad_x = fwd.index_add(0, j, bwd)
        grad_y = torch.zeros_like(y).index_add_(0, i, -fwd) - bwd
        return grad_out * grad_x, grad_out * grad_y

    @staticmethod
    def example_inputs():
        return _chamfer_inputs()


class AfarChamferDistanceFancyAdd(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "grad_x[j] += ... with repeated matches j keeps only one of the y points matched to the same x"}

    @staticmethod
    def forward(ctx, x, y):
        sq = (x[:, None, :] - y[None, :, :]).pow(2).sum(dim=-1)
        i = sq.argmin(dim=1)
        j = sq.argmin(dim=0)
        ctx.save_for_backward(x, y, i, j)
        return sq.gather(1, i[:, None]).mean() + sq.gather(0, j[None, :]).mean()

    @staticmethod
    def backward(ctx, grad_out):
        x, y, i, j = ctx.saved_tensors
        n, m = x.shape[0], y.shape[0]
        fwd = 2 * (x - y[i]) / n
        bwd = 2 * (x[j] - y) / m
        grad_x = fwd.clone()
        grad_x[j] += bwd  # BUG
        grad_y = torch.zeros_like(y).index_add_(0, i, -fwd) - bwd
        return grad_out * grad_x, grad_out * grad_y

    @staticmethod
    def example_inputs():
        return _chamfer_inputs()


class AfarChamferDistanceOneWay(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "x's gradient keeps only the x-to-y term and drops what the y-to-x matches contribute"}

    @staticmethod
    def forward(ctx, x, y):
        sq = (x[:, None, :] - y[None, :, :]).pow(2).sum(dim=-1)
        i = sq.argmin(dim=1)
        j = sq.argmin(dim=0)
        ctx.save_for_backward(x, y, i, j)
        return sq.gather(1, i[:, None]).mean() + sq.gather(0, j[None, :]).mean()

    @staticmethod
    def backward(ctx, grad_out):
        x, y, i, j = ctx.saved_tensors
        n, m = x.shape[0], y.shape[0]
        fwd = 2 * (x - y[i]) / n
        bwd = 2 * (x[j] - y) / m
        grad_x = fwd  # BUG
        grad_y = torch.zeros_like(y).index_add_(0, i, -fwd) - bwd
        return grad_out * grad_x, grad_out * grad_y

    @staticmethod
    def example_inputs():
        return _chamfer_inputs()


# -------------------------------------------------------------------------- kNN gather
def _knn_inputs():
    g = torch.Generator().manual_seed(403)
    feats = torch.randn(6, 2, dtype=torch.float64, generator=g, requires_grad=True)
    weights = torch.rand(6, 3, dtype=torch.float64, generator=g).requires_grad_()
    idx = torch.tensor([[1, 2, 3], [0, 2, 5], [1, 3, 4], [2, 4, 5], [3, 5, 0], [0, 4, 2]], dtype=torch.int64)
    valid = torch.tensor([[True, True, True], [True, True, False], [True, True, True],
                          [True, False, False], [True, True, True], [True, True, False]])
    return feats, weights, idx, valid


class AfarKnnWeightedGather(torch.autograd.Function):
    """out[n] = sum over the valid k of weights[n, k] * feats[idx[n, k]] (padded neighbours masked)."""

    bug = None

    @staticmethod
    def forward(ctx, feats, weights, idx, valid):
        c = feats.shape[1]
        nbr = feats.gather(0, idx.reshape(-1, 1).expand(-1, c)).view(*idx.shape, c)
        w = weights.masked_fill(~valid, 0.0)
        ctx.save_for_backward(feats, w, idx, valid)
        return (w[..., None] * nbr).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        feats, w, idx, valid = ctx.saved_tensors
        c = feats.shape[1]
        grad_feats = grad_weights = None
        if ctx.needs_input_grad[0]:
            contrib = (w[..., None] * grad_out[:, None, :]).reshape(-1, c)
            grad_feats = torch.zeros_like(feats).index_add_(0, idx.reshape(-1), contrib)
        if ctx.needs_input_grad[1]:
            grad_weights = (feats[idx] * grad_out[:, None, :]).sum(dim=-1).masked_fill(~valid, 0.0)
        return grad_feats, grad_weights, None, None

    @staticmethod
    def example_inputs():
        return _knn_inputs()


class AfarKnnWeightedGatherFlagIndex(torch.autograd.Function):
    bug = {"kind": "zero", "input": "weights",
           "note": "the weights' gradient is guarded by needs_input_grad[2] (the integer ids, always False), so it is never computed"}

    @staticmethod
    def forward(ctx, feats, weights, idx, valid):
        c = feats.shape[1]
        nbr = feats.gather(0, idx.reshape(-1, 1).expand(-1, c)).view(*idx.shape, c)
        w = weights.masked_fill(~valid, 0.0)
        ctx.save_for_backward(feats, w, idx, valid)
        return (w[..., None] * nbr).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        feats, w, idx, valid = ctx.saved_tensors
        c = feats.shape[1]
        grad_feats = grad_weights = None
        if ctx.needs_input_grad[0]:
            contrib = (w[..., None] * grad_out[:, None, :]).reshape(-1, c)
            grad_feats = torch.zeros_like(feats).index_add_(0, idx.reshape(-1), contrib)
        if ctx.needs_input_grad[2]:  # BUG
            grad_weights = (feats[idx] * grad_out[:, None, :]).sum(dim=-1).masked_fill(~valid, 0.0)
        return grad_feats, grad_weights, None, None

    @staticmethod
    def example_inputs():
        return _knn_inputs()


class AfarKnnWeightedGatherPaddedWeights(torch.autograd.Function):
    bug = {"kind": "region", "input": "weights",
           "note": "the weights' gradient is not masked, so padded neighbour slots (valid False) get a gradient"}

    @staticmethod
    def forward(ctx, feats, weights, idx, valid):
        c = feats.shape[1]
        nbr = feats.gather(0, idx.reshape(-1, 1).expand(-1, c)).view(*idx.shape, c)
        w = weights.masked_fill(~valid, 0.0)
        ctx.save_for_backward(feats, w, idx, valid)
        return (w[..., None] * nbr).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        feats, w, idx, valid = ctx.saved_tensors
        c = feats.shape[1]
        grad_feats = grad_weights = None
        if ctx.needs_input_grad[0]:
            contrib = (w[..., None] * grad_out[:, None, :]).reshape(-1, c)
            grad_feats = torch.zeros_like(feats).index_add_(0, idx.reshape(-1), contrib)
        if ctx.needs_input_grad[1]:
            grad_weights = (feats[idx] * grad_out[:, None, :]).sum(dim=-1)  # BUG
        return grad_feats, grad_weights, None, None

    @staticmethod
    def example_inputs():
        return _knn_inputs()


# ------------------------------------------------------------- hard assignment estimator
class AfarHardNearestAssign(torch.autograd.Function):
    """One-hot of the best-scoring prototype per row; the gradient passes straight through."""

    bug = {"kind": "straight_through", "input": "logits",
           "note": "deliberate straight-through estimator: the one-hot argmax is treated as identity in backward"}

    @staticmethod
    def forward(ctx, logits):
        return torch.zeros_like(logits).scatter_(1, logits.argmax(dim=1, keepdim=True), 1.0)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.clone()  # BUG
