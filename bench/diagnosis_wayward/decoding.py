"""Decoding: Viterbi (max-sum) with a straight-through one-hot path and the Viterbi score with its
path gradient, semi-Markov segment sums by unfold, a gradient reversal layer for adversarial
sequence features, and a sigmoid surrogate for a hard error count."""
import torch


def _viterbi(emissions, transitions):
    """The best tag path of emissions (T, K) under transitions [prev, next], and its score."""
    score = emissions[0]
    back = []
    for t in range(1, emissions.shape[0]):
        score, idx = (score.unsqueeze(1) + transitions).max(dim=0)
        score = score + emissions[t]
        back.append(idx)
    best = [int(score.argmax())]
    for idx in reversed(back):
        best.append(int(idx[best[-1]]))
    return torch.tensor(best[::-1], dtype=torch.int64), score.max()


def _viterbi_inputs():
    gen = torch.Generator().manual_seed(71)
    return (torch.randn(5, 3, dtype=torch.float64, generator=gen) * 2,
            torch.randn(3, 3, dtype=torch.float64, generator=gen))


class WaywardViterbiStraightThrough(torch.autograd.Function):
    """The one-hot Viterbi path (T, K); backward passes the gradient straight through to the emissions."""
    bug = {"kind": "straight_through", "input": "emissions",
           "note": "deliberate straight-through estimator: the one-hot argmax path is piecewise constant, its exact gradient is zero"}

    @staticmethod
    def forward(ctx, emissions, transitions):
        path, _ = _viterbi(emissions, transitions)
        return torch.zeros_like(emissions).scatter_(1, path.unsqueeze(1), 1.0)

    @staticmethod
    def backward(ctx, grad_path):
        grad_emissions = grad_path.clone()  # BUG
        return grad_emissions, None

    example_inputs = staticmethod(_viterbi_inputs)


class WaywardViterbiScore(torch.autograd.Function):
    """max over tag paths of sum_t emissions[t, y_t] + sum_t transitions[y_{t-1}, y_t]."""
    bug = None

    @staticmethod
    def forward(ctx, emissions, transitions):
        path, score = _viterbi(emissions, transitions)
        ctx.save_for_backward(path)
        ctx.shapes = emissions.shape, transitions.shape
        return score

    @staticmethod
    def backward(ctx, grad_score):
        (path,) = ctx.saved_tensors
        em_shape, tr_shape = ctx.shapes
        grad_emissions = grad_score.new_zeros(em_shape).scatter_(1, path.unsqueeze(1), grad_score.expand(em_shape[0], 1))
        grad_transitions = grad_score.new_zeros(tr_shape).index_put_(
            (path[:-1], path[1:]), grad_score.expand(path.shape[0] - 1), accumulate=True)
        return grad_emissions, grad_transitions

    example_inputs = staticmethod(_viterbi_inputs)


class WaywardViterbiScoreNoTransitions(torch.autograd.Function):
    """The Viterbi score; the transitions are treated as not differentiable through the argmax."""
    bug = {"kind": "zero", "input": "transitions",
           "note": "grad_transitions is zero, but the score is linear in the transitions the best path uses"}

    @staticmethod
    def forward(ctx, emissions, transitions):
        path, score = _viterbi(emissions, transitions)
        ctx.save_for_backward(path)
        ctx.shapes = emissions.shape, transitions.shape
        return score

    @staticmethod
    def backward(ctx, grad_score):
        (path,) = ctx.saved_tensors
        em_shape, tr_shape = ctx.shapes
        grad_emissions = grad_score.new_zeros(em_shape).scatter_(1, path.unsqueeze(1), grad_score.expand(em_shape[0], 1))
        grad_transitions = grad_score.new_zeros(tr_shape)  # BUG
        return grad_emissions, grad_transitions

    example_inputs = staticmethod(_viterbi_inputs)


def _segment_inputs():
    gen = torch.Generator().manual_seed(72)
    return torch.randn(6, 3, dtype=torch.float64, generator=gen), 2


class WaywardSegmentSums(torch.autograd.Function):
    """seg[s, k] = sum_{t = s}^{s + width - 1} emissions[t, k], by unfold (the semi-Markov segment scores)."""
    bug = None

    @staticmethod
    def forward(ctx, emissions, width):
        ctx.shape, ctx.width = emissions.shape, width
        return emissions.unfold(0, width, 1).sum(dim=-1)

    @staticmethod
    def backward(ctx, grad_seg):
        (T, K), w = ctx.shape, ctx.width
        n = T - w + 1
        idx = (torch.arange(n).unsqueeze(1) + torch.arange(w).unsqueeze(0)).reshape(-1)
        cols = grad_seg.unsqueeze(-1).expand(n, K, w)
        grad = grad_seg.new_zeros(T, K).index_add_(0, idx, cols.permute(0, 2, 1).reshape(n * w, K))
        return grad, None

    example_inputs = staticmethod(_segment_inputs)


class WaywardSegmentSumsUnfoldLayout(torch.autograd.Function):
    """Segment sums; the gradient columns are laid out as unfold's (n, K, width) block."""
    bug = {"kind": "missing_reshape", "input": "emissions", "also": ["transposed"],
           "note": "the (n, K, w) columns are reshaped to (n * w, K) without moving w before K (a permute(0, 2, 1) is missing)"}

    @staticmethod
    def forward(ctx, emissions, width):
        ctx.shape, ctx.width = emissions.shape, width
        return emissions.unfold(0, width, 1).sum(dim=-1)

    @staticmethod
    def backward(ctx, grad_seg):
        (T, K), w = ctx.shape, ctx.width
        n = T - w + 1
        idx = (torch.arange(n).unsqueeze(1) + torch.arange(w).unsqueeze(0)).reshape(-1)
        cols = grad_seg.unsqueeze(-1).expand(n, K, w)
        grad = grad_seg.new_zeros(T, K).index_add_(0, idx, cols.reshape(n * w, K))  # BUG
        return grad, None

    example_inputs = staticmethod(_segment_inputs)


class WaywardSequenceGradReversal(torch.autograd.Function):
    """Identity forward; backward multiplies by -lambd (domain-adversarial sequence features)."""
    bug = {"kind": "gradient_reversal", "input": "features",
           "note": "deliberate gradient reversal layer with lambd = 0.3: the identity's gradient is replaced by -0.3 g"}

    @staticmethod
    def forward(ctx, features, lambd):
        ctx.lambd = lambd
        return features.clone()

    @staticmethod
    def backward(ctx, grad_out):
        return -ctx.lambd * grad_out, None  # BUG

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(73)
        return torch.randn(3, 4, dtype=torch.float64, generator=gen), 0.3


class WaywardErrorCountSurrogate(torch.autograd.Function):
    """count[b] = number of positions with margin < 0; backward uses sigmoid(-margin / tau)."""
    bug = {"kind": "smooth_surrogate", "input": "margins",
           "note": "deliberate surrogate: the step count's exact gradient is zero, backward uses d/dm sigmoid(-m / tau)"}

    @staticmethod
    def forward(ctx, margins, tau):
        ctx.save_for_backward(margins)
        ctx.tau = tau
        return (margins < 0).to(margins.dtype).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_count):
        (margins,) = ctx.saved_tensors
        s = torch.sigmoid(-margins / ctx.tau)
        grad = -grad_count.unsqueeze(1) * s * (1 - s) / ctx.tau  # BUG
        return grad, None

    @staticmethod
    def example_inputs():
        return torch.tensor([[0.8, -1.2, 0.4, -0.6], [1.5, 0.3, -0.9, 2.0]], dtype=torch.float64), 0.5


class WaywardSegmentSumsLoop(torch.autograd.Function):
    """Segment sums, backward by one slice-add per offset in the window (a second correct style)."""
    bug = None

    @staticmethod
    def forward(ctx, emissions, width):
        ctx.shape, ctx.width = emissions.shape, width
        return emissions.unfold(0, width, 1).sum(dim=-1)

    @staticmethod
    def backward(ctx, grad_seg):
        (T, K), w = ctx.shape, ctx.width
        n = T - w + 1
        grad = grad_seg.new_zeros(T, K)
        for t in range(w):
            grad[t:t + n] += grad_seg
        return grad, None

    example_inputs = staticmethod(_segment_inputs)
