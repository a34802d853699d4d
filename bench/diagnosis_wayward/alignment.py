"""Soft global alignment (a soft Needleman-Wunsch score: a gamma-smoothed max over match / gap /
gap moves, gradient = the expected alignment by a reverse sweep of the table), and the
feature-weighted squared-distance cost matrix that a soft-DTW or alignment layer consumes."""
import torch


def _soft_nw(scores, gap, gamma):
    """The table's corner and, per cell, the softmax weights of its (diag, up, left) moves."""
    N, M = scores.shape
    g = float(gap)
    V = torch.zeros(N + 1, M + 1, dtype=scores.dtype)
    V[:, 0] = -g * torch.arange(N + 1, dtype=scores.dtype)
    V[0, :] = -g * torch.arange(M + 1, dtype=scores.dtype)
    W = torch.zeros(N + 1, M + 1, 3, dtype=scores.dtype)
    for i in range(1, N + 1):
        for j in range(1, M + 1):
            moves = torch.stack([V[i - 1, j - 1] + scores[i - 1, j - 1], V[i - 1, j] - g, V[i, j - 1] - g])
            V[i, j] = gamma * torch.logsumexp(moves / gamma, dim=0)
            W[i, j] = torch.softmax(moves / gamma, dim=0)
    return V[N, M], W


def _nw_inputs():
    gen = torch.Generator().manual_seed(31)
    return torch.randn(4, 4, dtype=torch.float64, generator=gen), torch.tensor(0.7, dtype=torch.float64), 0.5


class WaywardSoftNeedlemanWunsch(torch.autograd.Function):
    """Soft global alignment score of a (N, M) match-score matrix with a linear gap penalty."""
    bug = None

    @staticmethod
    def forward(ctx, scores, gap, gamma):
        value, weights = _soft_nw(scores, gap, gamma)
        ctx.weights, ctx.gamma = weights, gamma
        return value

    @staticmethod
    def backward(ctx, grad_value):
        W = ctx.weights
        N, M = W.shape[0] - 1, W.shape[1] - 1
        E = torch.zeros(N + 1, M + 1, dtype=W.dtype)
        E[N, M] = grad_value
        grad_scores = torch.zeros(N, M, dtype=W.dtype)
        for i in reversed(range(1, N + 1)):
            for j in reversed(range(1, M + 1)):
                e = E[i, j]
                grad_scores[i - 1, j - 1] = e * W[i, j, 0]
                E[i - 1, j - 1] += e * W[i, j, 0]
                E[i - 1, j] += e * W[i, j, 1]
                E[i, j - 1] += e * W[i, j, 2]
        interior = (E[1:, 1:] * (W[1:, 1:, 1] + W[1:, 1:, 2])).sum()
        border = (torch.arange(N + 1, dtype=W.dtype) * E[:, 0]).sum() + (torch.arange(M + 1, dtype=W.dtype) * E[0, :]).sum()
        grad_gap = -(interior + border)
        return grad_scores, grad_gap, None

    example_inputs = staticmethod(_nw_inputs)


class WaywardSoftNeedlemanWunschNoBorder(torch.autograd.Function):
    """Soft global alignment; the gap gradient counts the interior gap moves."""
    bug = {"kind": "missing_term", "input": "gap",
           "note": "the border cells V[i, 0] = -i gap and V[0, j] = -j gap also depend on gap; their term is left out"}

    @staticmethod
    def forward(ctx, scores, gap, gamma):
        value, weights = _soft_nw(scores, gap, gamma)
        ctx.weights, ctx.gamma = weights, gamma
        return value

    @staticmethod
    def backward(ctx, grad_value):
        W = ctx.weights
        N, M = W.shape[0] - 1, W.shape[1] - 1
        E = torch.zeros(N + 1, M + 1, dtype=W.dtype)
        E[N, M] = grad_value
        grad_scores = torch.zeros(N, M, dtype=W.dtype)
        for i in reversed(range(1, N + 1)):
            for j in reversed(range(1, M + 1)):
                e = E[i, j]
                grad_scores[i - 1, j - 1] = e * W[i, j, 0]
                E[i - 1, j - 1] += e * W[i, j, 0]
                E[i - 1, j] += e * W[i, j, 1]
                E[i, j - 1] += e * W[i, j, 2]
        interior = (E[1:, 1:] * (W[1:, 1:, 1] + W[1:, 1:, 2])).sum()
        grad_gap = -interior  # BUG
        return grad_scores, grad_gap, None

    example_inputs = staticmethod(_nw_inputs)


class WaywardSoftNeedlemanWunschBorderSign(torch.autograd.Function):
    """Soft global alignment; the border's gap term is added with its own sign."""
    bug = {"kind": "term_sign", "input": "gap",
           "note": "grad_gap = -interior + border: the border cells' term needs the same minus as the interior's"}

    @staticmethod
    def forward(ctx, scores, gap, gamma):
        value, weights = _soft_nw(scores, gap, gamma)
        ctx.weights, ctx.gamma = weights, gamma
        return value

    @staticmethod
    def backward(ctx, grad_value):
        W = ctx.weights
        N, M = W.shape[0] - 1, W.shape[1] - 1
        E = torch.zeros(N + 1, M + 1, dtype=W.dtype)
        E[N, M] = grad_value
        grad_scores = torch.zeros(N, M, dtype=W.dtype)
        for i in reversed(range(1, N + 1)):
            for j in reversed(range(1, M + 1)):
                e = E[i, j]
                grad_scores[i - 1, j - 1] = e * W[i, j, 0]
                E[i - 1, j - 1] += e * W[i, j, 0]
                E[i - 1, j] += e * W[i, j, 1]
                E[i, j - 1] += e * W[i, j, 2]
        interior = (E[1:, 1:] * (W[1:, 1:, 1] + W[1:, 1:, 2])).sum()
        border = (torch.arange(N + 1, dtype=W.dtype) * E[:, 0]).sum() + (torch.arange(M + 1, dtype=W.dtype) * E[0, :]).sum()
        grad_gap = -interior + border  # BUG
        return grad_scores, grad_gap, None

    example_inputs = staticmethod(_nw_inputs)


class WaywardSoftNeedlemanWunschRowsForward(torch.autograd.Function):
    """Soft global alignment; the reverse sweep visits the rows top to bottom."""
    bug = {"kind": "missing_flip", "input": "scores",
           "note": "the outer sweep runs i = 1 .. N forwards, so a cell passes on its adjoint before its successors below have added theirs; gap is wrong too"}

    @staticmethod
    def forward(ctx, scores, gap, gamma):
        value, weights = _soft_nw(scores, gap, gamma)
        ctx.weights, ctx.gamma = weights, gamma
        return value

    @staticmethod
    def backward(ctx, grad_value):
        W = ctx.weights
        N, M = W.shape[0] - 1, W.shape[1] - 1
        E = torch.zeros(N + 1, M + 1, dtype=W.dtype)
        E[N, M] = grad_value
        grad_scores = torch.zeros(N, M, dtype=W.dtype)
        for i in range(1, N + 1):  # BUG
            for j in reversed(range(1, M + 1)):
                e = E[i, j]
                grad_scores[i - 1, j - 1] = e * W[i, j, 0]
                E[i - 1, j - 1] += e * W[i, j, 0]
                E[i - 1, j] += e * W[i, j, 1]
                E[i, j - 1] += e * W[i, j, 2]
        interior = (E[1:, 1:] * (W[1:, 1:, 1] + W[1:, 1:, 2])).sum()
        border = (torch.arange(N + 1, dtype=W.dtype) * E[:, 0]).sum() + (torch.arange(M + 1, dtype=W.dtype) * E[0, :]).sum()
        grad_gap = -(interior + border)
        return grad_scores, grad_gap, None

    example_inputs = staticmethod(_nw_inputs)


class WaywardSoftNeedlemanWunschUpWeight(torch.autograd.Function):
    """Soft global alignment; the match score's gradient reads a move weight."""
    bug = {"kind": "wrong_variable", "input": "scores",
           "note": "grad_scores takes the up-move weight W[i, j, 1] instead of the diagonal (match) weight W[i, j, 0]"}

    @staticmethod
    def forward(ctx, scores, gap, gamma):
        value, weights = _soft_nw(scores, gap, gamma)
        ctx.weights, ctx.gamma = weights, gamma
        return value

    @staticmethod
    def backward(ctx, grad_value):
        W = ctx.weights
        N, M = W.shape[0] - 1, W.shape[1] - 1
        E = torch.zeros(N + 1, M + 1, dtype=W.dtype)
        E[N, M] = grad_value
        grad_scores = torch.zeros(N, M, dtype=W.dtype)
        for i in reversed(range(1, N + 1)):
            for j in reversed(range(1, M + 1)):
                e = E[i, j]
                grad_scores[i - 1, j - 1] = e * W[i, j, 1]  # BUG
                E[i - 1, j - 1] += e * W[i, j, 0]
                E[i - 1, j] += e * W[i, j, 1]
                E[i, j - 1] += e * W[i, j, 2]
        interior = (E[1:, 1:] * (W[1:, 1:, 1] + W[1:, 1:, 2])).sum()
        border = (torch.arange(N + 1, dtype=W.dtype) * E[:, 0]).sum() + (torch.arange(M + 1, dtype=W.dtype) * E[0, :]).sum()
        grad_gap = -(interior + border)
        return grad_scores, grad_gap, None

    example_inputs = staticmethod(_nw_inputs)


class WaywardSoftNeedlemanWunschOverGamma(torch.autograd.Function):
    """Soft global alignment; the smoothing temperature is chained in once too often."""
    bug = {"kind": "scale", "input": "scores",
           "note": "grad_scores divided by gamma: gamma * logsumexp(x / gamma) has softmax weights as its derivative, the 1/gamma cancels the outer gamma"}

    @staticmethod
    def forward(ctx, scores, gap, gamma):
        value, weights = _soft_nw(scores, gap, gamma)
        ctx.weights, ctx.gamma = weights, gamma
        return value

    @staticmethod
    def backward(ctx, grad_value):
        W = ctx.weights
        N, M = W.shape[0] - 1, W.shape[1] - 1
        E = torch.zeros(N + 1, M + 1, dtype=W.dtype)
        E[N, M] = grad_value
        grad_scores = torch.zeros(N, M, dtype=W.dtype)
        for i in reversed(range(1, N + 1)):
            for j in reversed(range(1, M + 1)):
                e = E[i, j]
                grad_scores[i - 1, j - 1] = e * W[i, j, 0] / ctx.gamma  # BUG
                E[i - 1, j - 1] += e * W[i, j, 0]
                E[i - 1, j] += e * W[i, j, 1]
                E[i, j - 1] += e * W[i, j, 2]
        interior = (E[1:, 1:] * (W[1:, 1:, 1] + W[1:, 1:, 2])).sum()
        border = (torch.arange(N + 1, dtype=W.dtype) * E[:, 0]).sum() + (torch.arange(M + 1, dtype=W.dtype) * E[0, :]).sum()
        grad_gap = -(interior + border)
        return grad_scores, grad_gap, None

    example_inputs = staticmethod(_nw_inputs)


def _cost_inputs():
    gen = torch.Generator().manual_seed(32)
    x = torch.randn(4, 3, dtype=torch.float64, generator=gen)
    y = torch.randn(4, 3, dtype=torch.float64, generator=gen)
    weight = torch.rand(3, dtype=torch.float64, generator=gen) + 0.5
    return x, y, weight


class WaywardWeightedSqCost(torch.autograd.Function):
    """cost[n, m] = sum_d weight[d] (x[n, d] - y[m, d])^2, with the differences kept feature-first (D, N, M)."""
    bug = None

    @staticmethod
    def forward(ctx, x, y, weight):
        ctx.save_for_backward(x, y, weight)
        diff = (x.unsqueeze(1) - y.unsqueeze(0)).permute(2, 0, 1)
        return torch.einsum("d,dnm->nm", weight, diff ** 2)

    @staticmethod
    def backward(ctx, grad_cost):
        x, y, weight = ctx.saved_tensors
        diff = (x.unsqueeze(1) - y.unsqueeze(0)).permute(2, 0, 1)
        weighted = grad_cost.unsqueeze(0) * diff
        grad_x = 2 * torch.einsum("d,dnm->nd", weight, weighted)
        grad_y = -2 * torch.einsum("d,dnm->md", weight, weighted)
        grad_weight = (grad_cost * diff ** 2).sum(dim=(1, 2))
        return grad_x, grad_y, grad_weight

    example_inputs = staticmethod(_cost_inputs)


class WaywardWeightedSqCostWeightMap(torch.autograd.Function):
    """The weighted cost matrix; the weight gradient is left as a per-pair map."""
    bug = {"kind": "not_reduced", "input": "weight",
           "note": "grad_weight is the (D, N, M) map grad * diff^2, never summed over the N, M pairs (torch refuses the shape: it raises)"}

    @staticmethod
    def forward(ctx, x, y, weight):
        ctx.save_for_backward(x, y, weight)
        diff = (x.unsqueeze(1) - y.unsqueeze(0)).permute(2, 0, 1)
        return torch.einsum("d,dnm->nm", weight, diff ** 2)

    @staticmethod
    def backward(ctx, grad_cost):
        x, y, weight = ctx.saved_tensors
        diff = (x.unsqueeze(1) - y.unsqueeze(0)).permute(2, 0, 1)
        weighted = grad_cost.unsqueeze(0) * diff
        grad_x = 2 * torch.einsum("d,dnm->nd", weight, weighted)
        grad_y = -2 * torch.einsum("d,dnm->md", weight, weighted)
        grad_weight = grad_cost * diff ** 2  # BUG
        return grad_x, grad_y, grad_weight

    example_inputs = staticmethod(_cost_inputs)


class WaywardWeightedSqCostTargetSign(torch.autograd.Function):
    """The weighted cost matrix; y's gradient copies x's."""
    bug = {"kind": "sign", "input": "y",
           "note": "grad_y = +2 w (x - y) g: d/dy (x - y)^2 carries a minus"}

    @staticmethod
    def forward(ctx, x, y, weight):
        ctx.save_for_backward(x, y, weight)
        diff = (x.unsqueeze(1) - y.unsqueeze(0)).permute(2, 0, 1)
        return torch.einsum("d,dnm->nm", weight, diff ** 2)

    @staticmethod
    def backward(ctx, grad_cost):
        x, y, weight = ctx.saved_tensors
        diff = (x.unsqueeze(1) - y.unsqueeze(0)).permute(2, 0, 1)
        weighted = grad_cost.unsqueeze(0) * diff
        grad_x = 2 * torch.einsum("d,dnm->nd", weight, weighted)
        grad_y = 2 * torch.einsum("d,dnm->md", weight, weighted)  # BUG
        grad_weight = (grad_cost * diff ** 2).sum(dim=(1, 2))
        return grad_x, grad_y, grad_weight

    example_inputs = staticmethod(_cost_inputs)


class WaywardWeightedSqCostReturnOrder(torch.autograd.Function):
    """The weighted cost matrix; the two sequences' gradients are returned."""
    bug = {"kind": "swapped", "input": "x",
           "note": "returns (grad_y, grad_x, ...): the two sequences' gradients in the wrong order (N = M so it runs); y is wrong too"}

    @staticmethod
    def forward(ctx, x, y, weight):
        ctx.save_for_backward(x, y, weight)
        diff = (x.unsqueeze(1) - y.unsqueeze(0)).permute(2, 0, 1)
        return torch.einsum("d,dnm->nm", weight, diff ** 2)

    @staticmethod
    def backward(ctx, grad_cost):
        x, y, weight = ctx.saved_tensors
        diff = (x.unsqueeze(1) - y.unsqueeze(0)).permute(2, 0, 1)
        weighted = grad_cost.unsqueeze(0) * diff
        grad_x = 2 * torch.einsum("d,dnm->nd", weight, weighted)
        grad_y = -2 * torch.einsum("d,dnm->md", weight, weighted)
        grad_weight = (grad_cost * diff ** 2).sum(dim=(1, 2))
        return grad_y, grad_x, grad_weight  # BUG

    example_inputs = staticmethod(_cost_inputs)


class WaywardWeightedSqCostBroadcast(torch.autograd.Function):
    """The weighted cost matrix with the differences kept (N, M, D) and reduced by keepdim sums (a second correct style)."""
    bug = None

    @staticmethod
    def forward(ctx, x, y, weight):
        diff = x.unsqueeze(1) - y.unsqueeze(0)
        ctx.save_for_backward(diff, weight)
        return (weight * diff ** 2).sum(dim=2)

    @staticmethod
    def backward(ctx, grad_cost):
        diff, weight = ctx.saved_tensors
        weighted = 2 * grad_cost.unsqueeze(2) * weight * diff
        grad_x = weighted.sum(dim=1, keepdim=True).squeeze(1)
        grad_y = -weighted.sum(dim=0, keepdim=True).squeeze(0)
        grad_weight = (grad_cost.unsqueeze(2) * diff ** 2).sum(dim=(0, 1))
        return grad_x, grad_y, grad_weight

    example_inputs = staticmethod(_cost_inputs)
