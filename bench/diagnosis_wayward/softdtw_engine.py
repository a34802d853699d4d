import gradcli as torch

"""Soft-DTW between two sequences with a Sakoe-Chiba band (a gamma-smoothed min over the three
predecessor cells, squared Euclidean local costs), its gradient by Cuturi and Blondel's reverse
recursion of the expected alignment E; and the smoothed min of three tensors on its own. The
tables are Python lists of floats, as in the usual numpy ports. Runs on gradcli's numpy engine."""
import math

INF = math.inf


def _softmin(values, gamma):
    m = min(values)
    return m - gamma * math.log(sum(math.exp(-(v - m) / gamma) for v in values))


def _soft_dtw_table(D, gamma, band):
    N, M = len(D), len(D[0])
    R = [[INF] * (M + 2) for _ in range(N + 2)]
    R[0][0] = 0.0
    for i in range(1, N + 1):
        for j in range(1, M + 1):
            if abs(i - j) > band:
                continue
            R[i][j] = D[i - 1][j - 1] + _softmin([R[i - 1][j - 1], R[i - 1][j], R[i][j - 1]], gamma)
    return R


def _sq_cost(x, y):
    return ((x.unsqueeze(1) - y.unsqueeze(0)) ** 2).sum(2)


def _dtw_inputs():
    gen = torch.Generator().manual_seed(91)
    return (torch.randn(4, 2, dtype=torch.float64, generator=gen),
            torch.randn(4, 2, dtype=torch.float64, generator=gen), 0.5, 1)


class WaywardSoftDTW(torch.autograd.Function):
    """soft-DTW_gamma(x (N, d), y (M, d)) within |i - j| <= band."""
    bug = None

    @staticmethod
    def forward(ctx, x, y, gamma, band):
        D = _sq_cost(x, y).tolist()
        R = _soft_dtw_table(D, gamma, band)
        ctx.save_for_backward(x, y)
        ctx.D, ctx.R, ctx.gamma, ctx.band = D, R, gamma, band
        return x.new_tensor(R[len(D)][len(D[0])])

    @staticmethod
    def backward(ctx, grad_value):
        x, y = ctx.saved_tensors
        D, R, gamma, band = ctx.D, ctx.R, ctx.gamma, ctx.band
        N, M = len(D), len(D[0])
        E = [[0.0] * (M + 2) for _ in range(N + 2)]
        E[N][M] = 1.0
        for i in reversed(range(1, N + 1)):
            for j in reversed(range(1, M + 1)):
                if abs(i - j) > band:
                    continue
                soft = R[i][j] - D[i - 1][j - 1]
                preds = ((i - 1, j - 1), (i - 1, j), (i, j - 1))
                for pi, pj in preds:
                    if R[pi][pj] < INF:
                        E[pi][pj] += E[i][j] * math.exp((soft - R[pi][pj]) / gamma)
        G = grad_value * x.new_tensor([row[1:M + 1] for row in E[1:N + 1]])
        diff = x.unsqueeze(1) - y.unsqueeze(0)
        grad_x = 2 * (G.unsqueeze(2) * diff).sum(1)
        grad_y = -2 * (G.unsqueeze(2) * diff).sum(0)
        return grad_x, grad_y, None, None

    example_inputs = staticmethod(_dtw_inputs)


class WaywardSoftDTWWeightsWithCost(torch.autograd.Function):
    """soft-DTW; the predecessor weights compare each cell's value with its predecessors'."""
    bug = {"kind": "missing_term", "input": "x",
           "note": "the weight exponent uses R[i][j] - R[pred] and leaves out the - D[i-1][j-1] (the cell's own cost); y is wrong too"}

    @staticmethod
    def forward(ctx, x, y, gamma, band):
        D = _sq_cost(x, y).tolist()
        R = _soft_dtw_table(D, gamma, band)
        ctx.save_for_backward(x, y)
        ctx.D, ctx.R, ctx.gamma, ctx.band = D, R, gamma, band
        return x.new_tensor(R[len(D)][len(D[0])])

    @staticmethod
    def backward(ctx, grad_value):
        x, y = ctx.saved_tensors
        D, R, gamma, band = ctx.D, ctx.R, ctx.gamma, ctx.band
        N, M = len(D), len(D[0])
        E = [[0.0] * (M + 2) for _ in range(N + 2)]
        E[N][M] = 1.0
        for i in reversed(range(1, N + 1)):
            for j in reversed(range(1, M + 1)):
                if abs(i - j) > band:
                    continue
                soft = R[i][j]  # BUG
                preds = ((i - 1, j - 1), (i - 1, j), (i, j - 1))
                for pi, pj in preds:
                    if R[pi][pj] < INF:
                        E[pi][pj] += E[i][j] * math.exp((soft - R[pi][pj]) / gamma)
        G = grad_value * x.new_tensor([row[1:M + 1] for row in E[1:N + 1]])
        diff = x.unsqueeze(1) - y.unsqueeze(0)
        grad_x = 2 * (G.unsqueeze(2) * diff).sum(1)
        grad_y = -2 * (G.unsqueeze(2) * diff).sum(0)
        return grad_x, grad_y, None, None

    example_inputs = staticmethod(_dtw_inputs)


class WaywardSoftDTWNoSquareFactor(torch.autograd.Function):
    """soft-DTW; the local cost's derivative."""
    bug = {"kind": "scale", "input": "x",
           "note": "d|x - y|^2/dx taken as (x - y): the factor 2 is missing"}

    @staticmethod
    def forward(ctx, x, y, gamma, band):
        D = _sq_cost(x, y).tolist()
        R = _soft_dtw_table(D, gamma, band)
        ctx.save_for_backward(x, y)
        ctx.D, ctx.R, ctx.gamma, ctx.band = D, R, gamma, band
        return x.new_tensor(R[len(D)][len(D[0])])

    @staticmethod
    def backward(ctx, grad_value):
        x, y = ctx.saved_tensors
        D, R, gamma, band = ctx.D, ctx.R, ctx.gamma, ctx.band
        N, M = len(D), len(D[0])
        E = [[0.0] * (M + 2) for _ in range(N + 2)]
        E[N][M] = 1.0
        for i in reversed(range(1, N + 1)):
            for j in reversed(range(1, M + 1)):
                if abs(i - j) > band:
                    continue
                soft = R[i][j] - D[i - 1][j - 1]
                preds = ((i - 1, j - 1), (i - 1, j), (i, j - 1))
                for pi, pj in preds:
                    if R[pi][pj] < INF:
                        E[pi][pj] += E[i][j] * math.exp((soft - R[pi][pj]) / gamma)
        G = grad_value * x.new_tensor([row[1:M + 1] for row in E[1:N + 1]])
        diff = x.unsqueeze(1) - y.unsqueeze(0)
        grad_x = (G.unsqueeze(2) * diff).sum(1)  # BUG
        grad_y = -2 * (G.unsqueeze(2) * diff).sum(0)
        return grad_x, grad_y, None, None

    example_inputs = staticmethod(_dtw_inputs)


class WaywardSoftDTWPredecessorOrder(torch.autograd.Function):
    """soft-DTW; the predecessor cells are listed for the weight loop."""
    bug = {"kind": "swapped", "input": "x",
           "note": "the up (i-1, j) and left (i, j-1) predecessors are listed in swapped order, so each receives the other's share of E; y is wrong too"}

    @staticmethod
    def forward(ctx, x, y, gamma, band):
        D = _sq_cost(x, y).tolist()
        R = _soft_dtw_table(D, gamma, band)
        ctx.save_for_backward(x, y)
        ctx.D, ctx.R, ctx.gamma, ctx.band = D, R, gamma, band
        return x.new_tensor(R[len(D)][len(D[0])])

    @staticmethod
    def backward(ctx, grad_value):
        x, y = ctx.saved_tensors
        D, R, gamma, band = ctx.D, ctx.R, ctx.gamma, ctx.band
        N, M = len(D), len(D[0])
        E = [[0.0] * (M + 2) for _ in range(N + 2)]
        E[N][M] = 1.0
        for i in reversed(range(1, N + 1)):
            for j in reversed(range(1, M + 1)):
                if abs(i - j) > band:
                    continue
                soft = R[i][j] - D[i - 1][j - 1]
                values = (R[i - 1][j - 1], R[i - 1][j], R[i][j - 1])
                preds = ((i - 1, j - 1), (i, j - 1), (i - 1, j))  # BUG
                for (pi, pj), value in zip(preds, values):
                    if value < INF:
                        E[pi][pj] += E[i][j] * math.exp((soft - value) / gamma)
        G = grad_value * x.new_tensor([row[1:M + 1] for row in E[1:N + 1]])
        diff = x.unsqueeze(1) - y.unsqueeze(0)
        grad_x = 2 * (G.unsqueeze(2) * diff).sum(1)
        grad_y = -2 * (G.unsqueeze(2) * diff).sum(0)
        return grad_x, grad_y, None, None

    example_inputs = staticmethod(_dtw_inputs)


class WaywardSoftDTWBandEdge(torch.autograd.Function):
    """soft-DTW; the reverse recursion re-applies the band."""
    bug = {"kind": "region", "input": "x",
           "note": "backward skips cells with |i - j| >= band, the forward only |i - j| > band: the band's edge cells pass no adjoint on; y is wrong too"}

    @staticmethod
    def forward(ctx, x, y, gamma, band):
        D = _sq_cost(x, y).tolist()
        R = _soft_dtw_table(D, gamma, band)
        ctx.save_for_backward(x, y)
        ctx.D, ctx.R, ctx.gamma, ctx.band = D, R, gamma, band
        return x.new_tensor(R[len(D)][len(D[0])])

    @staticmethod
    def backward(ctx, grad_value):
        x, y = ctx.saved_tensors
        D, R, gamma, band = ctx.D, ctx.R, ctx.gamma, ctx.band
        N, M = len(D), len(D[0])
        E = [[0.0] * (M + 2) for _ in range(N + 2)]
        E[N][M] = 1.0
        for i in reversed(range(1, N + 1)):
            for j in reversed(range(1, M + 1)):
                if abs(i - j) >= band:  # BUG
                    continue
                soft = R[i][j] - D[i - 1][j - 1]
                preds = ((i - 1, j - 1), (i - 1, j), (i, j - 1))
                for pi, pj in preds:
                    if R[pi][pj] < INF:
                        E[pi][pj] += E[i][j] * math.exp((soft - R[pi][pj]) / gamma)
        G = grad_value * x.new_tensor([row[1:M + 1] for row in E[1:N + 1]])
        diff = x.unsqueeze(1) - y.unsqueeze(0)
        grad_x = 2 * (G.unsqueeze(2) * diff).sum(1)
        grad_y = -2 * (G.unsqueeze(2) * diff).sum(0)
        return grad_x, grad_y, None, None

    example_inputs = staticmethod(_dtw_inputs)


class WaywardSoftDTWNearestGuess(torch.autograd.Function):
    """soft-DTW; x's gradient pulls each frame towards its soft nearest neighbours in y."""
    bug = {"kind": "none", "input": "x",
           "note": "grad_x_i = 2 sum_j softmax_j(-D_ij / gamma) (x_i - y_j): a per-frame soft nearest neighbour, no alignment recursion at all"}

    @staticmethod
    def forward(ctx, x, y, gamma, band):
        D = _sq_cost(x, y).tolist()
        R = _soft_dtw_table(D, gamma, band)
        ctx.save_for_backward(x, y)
        ctx.D, ctx.R, ctx.gamma, ctx.band = D, R, gamma, band
        return x.new_tensor(R[len(D)][len(D[0])])

    @staticmethod
    def backward(ctx, grad_value):
        x, y = ctx.saved_tensors
        D, R, gamma, band = ctx.D, ctx.R, ctx.gamma, ctx.band
        N, M = len(D), len(D[0])
        E = [[0.0] * (M + 2) for _ in range(N + 2)]
        E[N][M] = 1.0
        for i in reversed(range(1, N + 1)):
            for j in reversed(range(1, M + 1)):
                if abs(i - j) > band:
                    continue
                soft = R[i][j] - D[i - 1][j - 1]
                preds = ((i - 1, j - 1), (i - 1, j), (i, j - 1))
                for pi, pj in preds:
                    if R[pi][pj] < INF:
                        E[pi][pj] += E[i][j] * math.exp((soft - R[pi][pj]) / gamma)
        G = grad_value * x.new_tensor([row[1:M + 1] for row in E[1:N + 1]])
        diff = x.unsqueeze(1) - y.unsqueeze(0)
        near = torch.softmax(-x.new_tensor(D) / gamma, dim=1)
        grad_x = 2 * grad_value * (near.unsqueeze(2) * diff).sum(1)  # BUG
        grad_y = -2 * (G.unsqueeze(2) * diff).sum(0)
        return grad_x, grad_y, None, None

    example_inputs = staticmethod(_dtw_inputs)


def _softmin_inputs():
    gen = torch.Generator().manual_seed(92)
    a, b, c = (torch.randn(2, 3, dtype=torch.float64, generator=gen) for _ in range(3))
    return a, b, c, 0.7


class WaywardSoftMin3(torch.autograd.Function):
    """-gamma log(exp(-a / gamma) + exp(-b / gamma) + exp(-c / gamma)), elementwise."""
    bug = None

    @staticmethod
    def forward(ctx, a, b, c, gamma):
        stacked = torch.stack([a, b, c])
        ctx.save_for_backward(stacked)
        ctx.gamma = gamma
        return -gamma * torch.logsumexp(-stacked / gamma, dim=0)

    @staticmethod
    def backward(ctx, grad):
        (stacked,) = ctx.saved_tensors
        w = torch.softmax(-stacked / ctx.gamma, dim=0)
        return grad * w[0], grad * w[1], grad * w[2], None

    example_inputs = staticmethod(_softmin_inputs)


class WaywardSoftMin3Sign(torch.autograd.Function):
    """The smoothed min; the chain rule through the two minus signs."""
    bug = {"kind": "sign", "input": "a",
           "note": "weights taken as -softmax(-x / gamma): only one of the two minus signs (outer -gamma, inner -x / gamma) is applied; b and c are wrong too"}

    @staticmethod
    def forward(ctx, a, b, c, gamma):
        stacked = torch.stack([a, b, c])
        ctx.save_for_backward(stacked)
        ctx.gamma = gamma
        return -gamma * torch.logsumexp(-stacked / gamma, dim=0)

    @staticmethod
    def backward(ctx, grad):
        (stacked,) = ctx.saved_tensors
        w = -torch.softmax(-stacked / ctx.gamma, dim=0)  # BUG
        return grad * w[0], grad * w[1], grad * w[2], None

    example_inputs = staticmethod(_softmin_inputs)


class WaywardSoftMin3NeedsGrad(torch.autograd.Function):
    """The smoothed min, weights by exp(softmin - x) / gamma form and ctx.needs_input_grad (a second correct style)."""
    bug = None

    @staticmethod
    def forward(ctx, a, b, c, gamma):
        out = -gamma * torch.logsumexp(torch.stack([a, b, c]) / -gamma, dim=0)
        ctx.save_for_backward(a, b, c, out)
        ctx.gamma = gamma
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b, c, out = ctx.saved_tensors
        grads = [grad * torch.exp((out - v) / ctx.gamma) if ctx.needs_input_grad[k] else None
                 for k, v in enumerate((a, b, c))]
        return grads[0], grads[1], grads[2], None

    example_inputs = staticmethod(_softmin_inputs)
