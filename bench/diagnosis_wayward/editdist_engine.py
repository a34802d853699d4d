import gradcli as torch

"""A smoothed edit distance (soft Levenshtein) between a sequence of class probabilities and an
integer target: substitution cost 1 - probs[i, target[j]] (gathered, the target repeats classes),
a learned gap (insert/delete) cost, a gamma-smoothed min over the three moves, normalised by
N + M. Gradient by a reverse sweep of the table. Runs on gradcli's numpy engine."""
import math


def _softmin(values, gamma):
    m = min(values)
    return m - gamma * math.log(sum(math.exp(-(v - m) / gamma) for v in values))


def _edit_table(sub, gap, gamma):
    N, M = sub.shape
    g = float(gap)
    S = sub.tolist()
    R = [[0.0] * (M + 1) for _ in range(N + 1)]
    for i in range(N + 1):
        R[i][0] = i * g
    for j in range(M + 1):
        R[0][j] = j * g
    for i in range(1, N + 1):
        for j in range(1, M + 1):
            R[i][j] = _softmin([R[i - 1][j - 1] + S[i - 1][j - 1], R[i - 1][j] + g, R[i][j - 1] + g], gamma)
    return R


def _edit_inputs():
    gen = torch.Generator().manual_seed(101)
    probs = torch.softmax(torch.randn(4, 4, dtype=torch.float64, generator=gen) * 2, dim=1)
    target = torch.tensor([1, 3, 1, 0], dtype=torch.int64)
    return probs, target, torch.tensor(0.6, dtype=torch.float64), 0.5


class WaywardSoftEditDistance(torch.autograd.Function):
    """soft-Levenshtein(probs (N, V), target (M,)) / (N + M) with gap cost `gap` () and temperature gamma."""
    bug = None

    @staticmethod
    def forward(ctx, probs, target, gap, gamma):
        N, M = probs.shape[0], target.shape[0]
        sub = 1 - probs.gather(1, target.unsqueeze(0).expand(N, M))
        R = probs.new_tensor(_edit_table(sub, gap, gamma))
        ctx.save_for_backward(sub, target, gap)
        ctx.R, ctx.gamma, ctx.V = R, gamma, probs.shape[1]
        return R[N, M] / (N + M)

    @staticmethod
    def backward(ctx, grad_out):
        sub, target, gap = ctx.saved_tensors
        R, gamma, g = ctx.R.tolist(), ctx.gamma, float(gap)
        S = sub.tolist()
        N, M = len(S), len(S[0])
        E = [[0.0] * (M + 1) for _ in range(N + 1)]
        E[N][M] = 1.0 / (N + M)
        grad_sub = [[0.0] * M for _ in range(N)]
        grad_gap = 0.0
        for i in reversed(range(1, N + 1)):
            for j in reversed(range(1, M + 1)):
                e = E[i][j]
                moves = (R[i - 1][j - 1] + S[i - 1][j - 1], R[i - 1][j] + g, R[i][j - 1] + g)
                w = [math.exp((R[i][j] - v) / gamma) for v in moves]
                grad_sub[i - 1][j - 1] = e * w[0]
                E[i - 1][j - 1] += e * w[0]
                E[i - 1][j] += e * w[1]
                E[i][j - 1] += e * w[2]
                grad_gap += e * (w[1] + w[2])
        grad_gap += sum(i * E[i][0] for i in range(N + 1)) + sum(j * E[0][j] for j in range(M + 1))
        G = grad_out * sub.new_tensor(grad_sub)
        grad_probs = torch.zeros(N, ctx.V, dtype=sub.dtype).scatter_add_(1, target.unsqueeze(0).expand(N, M), -G)
        return grad_probs, None, grad_out * grad_gap, None

    example_inputs = staticmethod(_edit_inputs)


class WaywardSoftEditDistanceSavedWeights(torch.autograd.Function):
    """The same distance with the move weights kept from the forward sweep (a second correct style)."""
    bug = None

    @staticmethod
    def forward(ctx, probs, target, gap, gamma):
        N, M = probs.shape[0], target.shape[0]
        sub = 1 - probs.gather(1, target.unsqueeze(0).expand(N, M))
        S, g = sub.tolist(), float(gap)
        R = [[0.0] * (M + 1) for _ in range(N + 1)]
        W = [[None] * (M + 1) for _ in range(N + 1)]
        for i in range(N + 1):
            R[i][0] = i * g
        for j in range(M + 1):
            R[0][j] = j * g
        for i in range(1, N + 1):
            for j in range(1, M + 1):
                moves = [R[i - 1][j - 1] + S[i - 1][j - 1], R[i - 1][j] + g, R[i][j - 1] + g]
                R[i][j] = _softmin(moves, gamma)
                W[i][j] = [math.exp((R[i][j] - v) / gamma) for v in moves]
        ctx.save_for_backward(target)
        ctx.W, ctx.shape, ctx.V = W, (N, M), probs.shape[1]
        return probs.new_tensor(R[N][M] / (N + M))

    @staticmethod
    def backward(ctx, grad_out):
        (target,) = ctx.saved_tensors
        W, (N, M) = ctx.W, ctx.shape
        E = [[0.0] * (M + 1) for _ in range(N + 1)]
        E[N][M] = 1.0 / (N + M)
        grad_sub = torch.zeros(N, M, dtype=grad_out.dtype)
        gap_moves = 0.0
        for i in reversed(range(1, N + 1)):
            for j in reversed(range(1, M + 1)):
                d, u, l = W[i][j]
                grad_sub[i - 1, j - 1] = E[i][j] * d
                E[i - 1][j - 1] += E[i][j] * d
                E[i - 1][j] += E[i][j] * u
                E[i][j - 1] += E[i][j] * l
                gap_moves += E[i][j] * (u + l)
        gap_moves += sum(i * E[i][0] for i in range(N + 1)) + sum(j * E[0][j] for j in range(M + 1))
        grad_probs = torch.zeros(N, ctx.V, dtype=grad_out.dtype).index_add_(1, target, -grad_out * grad_sub)
        return grad_probs, None, grad_out * gap_moves, None

    example_inputs = staticmethod(_edit_inputs)


class WaywardSoftEditDistanceNormalisedTable(torch.autograd.Function):
    """The distance; the table is normalised before its corner is returned."""
    bug = {"kind": "inplace", "input": "probs",
           "note": "R is kept on ctx, then R.div_(N + M) normalises it in place: backward's move weights exp((R - move) / gamma) read the scaled table; gap is wrong too"}

    @staticmethod
    def forward(ctx, probs, target, gap, gamma):
        N, M = probs.shape[0], target.shape[0]
        sub = 1 - probs.gather(1, target.unsqueeze(0).expand(N, M))
        R = probs.new_tensor(_edit_table(sub, gap, gamma))
        ctx.save_for_backward(sub, target, gap)
        ctx.R, ctx.gamma, ctx.V = R, gamma, probs.shape[1]
        R.div_(N + M)  # BUG
        return R[N, M].clone()

    @staticmethod
    def backward(ctx, grad_out):
        sub, target, gap = ctx.saved_tensors
        R, gamma, g = ctx.R.tolist(), ctx.gamma, float(gap)
        S = sub.tolist()
        N, M = len(S), len(S[0])
        E = [[0.0] * (M + 1) for _ in range(N + 1)]
        E[N][M] = 1.0 / (N + M)
        grad_sub = [[0.0] * M for _ in range(N)]
        grad_gap = 0.0
        for i in reversed(range(1, N + 1)):
            for j in reversed(range(1, M + 1)):
                e = E[i][j]
                moves = (R[i - 1][j - 1] + S[i - 1][j - 1], R[i - 1][j] + g, R[i][j - 1] + g)
                w = [math.exp((R[i][j] - v) / gamma) for v in moves]
                grad_sub[i - 1][j - 1] = e * w[0]
                E[i - 1][j - 1] += e * w[0]
                E[i - 1][j] += e * w[1]
                E[i][j - 1] += e * w[2]
                grad_gap += e * (w[1] + w[2])
        grad_gap += sum(i * E[i][0] for i in range(N + 1)) + sum(j * E[0][j] for j in range(M + 1))
        G = grad_out * sub.new_tensor(grad_sub)
        grad_probs = torch.zeros(N, ctx.V, dtype=sub.dtype).scatter_add_(1, target.unsqueeze(0).expand(N, M), -G)
        return grad_probs, None, grad_out * grad_gap, None

    example_inputs = staticmethod(_edit_inputs)


class WaywardSoftEditDistanceScatterRows(torch.autograd.Function):
    """The distance; the substitution gradient is scattered back to the gathered classes."""
    bug = {"kind": "wrong_axis", "input": "probs",
           "note": "scatter_add_ along dim 0 (rows) although the gather picked classes along dim 1 (N = V = M so it runs)"}

    @staticmethod
    def forward(ctx, probs, target, gap, gamma):
        N, M = probs.shape[0], target.shape[0]
        sub = 1 - probs.gather(1, target.unsqueeze(0).expand(N, M))
        R = probs.new_tensor(_edit_table(sub, gap, gamma))
        ctx.save_for_backward(sub, target, gap)
        ctx.R, ctx.gamma, ctx.V = R, gamma, probs.shape[1]
        return R[N, M] / (N + M)

    @staticmethod
    def backward(ctx, grad_out):
        sub, target, gap = ctx.saved_tensors
        R, gamma, g = ctx.R.tolist(), ctx.gamma, float(gap)
        S = sub.tolist()
        N, M = len(S), len(S[0])
        E = [[0.0] * (M + 1) for _ in range(N + 1)]
        E[N][M] = 1.0 / (N + M)
        grad_sub = [[0.0] * M for _ in range(N)]
        grad_gap = 0.0
        for i in reversed(range(1, N + 1)):
            for j in reversed(range(1, M + 1)):
                e = E[i][j]
                moves = (R[i - 1][j - 1] + S[i - 1][j - 1], R[i - 1][j] + g, R[i][j - 1] + g)
                w = [math.exp((R[i][j] - v) / gamma) for v in moves]
                grad_sub[i - 1][j - 1] = e * w[0]
                E[i - 1][j - 1] += e * w[0]
                E[i - 1][j] += e * w[1]
                E[i][j - 1] += e * w[2]
                grad_gap += e * (w[1] + w[2])
        grad_gap += sum(i * E[i][0] for i in range(N + 1)) + sum(j * E[0][j] for j in range(M + 1))
        G = grad_out * sub.new_tensor(grad_sub)
        grad_probs = torch.zeros(N, ctx.V, dtype=sub.dtype).scatter_add_(0, target.unsqueeze(0).expand(N, M), -G)  # BUG
        return grad_probs, None, grad_out * grad_gap, None

    example_inputs = staticmethod(_edit_inputs)


class WaywardSoftEditDistanceGapGuess(torch.autograd.Function):
    """The distance; the gap gradient as the share of non-match moves."""
    bug = {"kind": "none", "input": "gap",
           "note": "grad_gap = grad * (1 - mean of the cells' match weights): an average over cells, no adjoint, no border, no normalisation"}

    @staticmethod
    def forward(ctx, probs, target, gap, gamma):
        N, M = probs.shape[0], target.shape[0]
        sub = 1 - probs.gather(1, target.unsqueeze(0).expand(N, M))
        R = probs.new_tensor(_edit_table(sub, gap, gamma))
        ctx.save_for_backward(sub, target, gap)
        ctx.R, ctx.gamma, ctx.V = R, gamma, probs.shape[1]
        return R[N, M] / (N + M)

    @staticmethod
    def backward(ctx, grad_out):
        sub, target, gap = ctx.saved_tensors
        R, gamma, g = ctx.R.tolist(), ctx.gamma, float(gap)
        S = sub.tolist()
        N, M = len(S), len(S[0])
        E = [[0.0] * (M + 1) for _ in range(N + 1)]
        E[N][M] = 1.0 / (N + M)
        grad_sub = [[0.0] * M for _ in range(N)]
        match_share = 0.0
        for i in reversed(range(1, N + 1)):
            for j in reversed(range(1, M + 1)):
                e = E[i][j]
                moves = (R[i - 1][j - 1] + S[i - 1][j - 1], R[i - 1][j] + g, R[i][j - 1] + g)
                w = [math.exp((R[i][j] - v) / gamma) for v in moves]
                grad_sub[i - 1][j - 1] = e * w[0]
                E[i - 1][j - 1] += e * w[0]
                E[i - 1][j] += e * w[1]
                E[i][j - 1] += e * w[2]
                match_share += w[0] / (N * M)
        grad_gap = 1.0 - match_share  # BUG
        G = grad_out * sub.new_tensor(grad_sub)
        grad_probs = torch.zeros(N, ctx.V, dtype=sub.dtype).scatter_add_(1, target.unsqueeze(0).expand(N, M), -G)
        return grad_probs, None, grad_out * grad_gap, None

    example_inputs = staticmethod(_edit_inputs)
