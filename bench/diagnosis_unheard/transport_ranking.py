"""Optimal transport and ranking: one Sinkhorn normalisation step (rows, then columns) of a
Gibbs kernel, a soft rank by pairwise sigmoids, and a top-k masked mean (plus a straight-through
top-k mask)."""
import torch

EPS = 0.5   # entropic temperature
TEMP = 0.5  # soft-rank temperature
K = 2       # top-k


def _sinkhorn_inputs():
    g = torch.Generator().manual_seed(31)
    return (torch.randn(4, 4, dtype=torch.float64, generator=g),)


# -------------------------------------------------------------------------------- Sinkhorn
class UnheardSinkhornStep(torch.autograd.Function):
    """P = col_normalise(row_normalise(exp(S / eps))): one Sinkhorn step on a score matrix."""

    bug = None

    @staticmethod
    def forward(ctx, scores):
        a = torch.softmax(scores / EPS, dim=1)
        col = a.sum(0, keepdim=True)
        p = a / col
        ctx.save_for_backward(a, col, p)
        return p

    @staticmethod
    def backward(ctx, grad_p):
        a, col, p = ctx.saved_tensors
        grad_a = (grad_p - (grad_p * p).sum(0, keepdim=True)) / col
        grad_s = a * (grad_a - (grad_a * a).sum(1, keepdim=True)) / EPS
        return grad_s


class UnheardSinkhornStepColumnsByRow(torch.autograd.Function):
    """Same step; backward of the two normalisations, last one first."""

    bug = {"kind": "wrong_axis", "input": "scores",
           "note": "the column normalisation's backward sums g * P over each row (dim=1) "
                   "instead of down each column"}

    @staticmethod
    def forward(ctx, scores):
        kernel = torch.exp(scores / EPS)
        a = kernel / kernel.sum(1, keepdim=True)
        p = a / a.sum(0, keepdim=True)
        ctx.save_for_backward(a, p)
        return p

    @staticmethod
    def backward(ctx, grad_p):
        a, p = ctx.saved_tensors
        col = a.sum(0, keepdim=True)
        inner = (grad_p * p).sum(1, keepdim=True)  # BUG
        grad_a = (grad_p - inner) / col
        row_dot = (grad_a * a).sum(1, keepdim=True)
        return a * (grad_a - row_dot) / EPS


class UnheardSinkhornStepLogDomain(torch.autograd.Function):
    """Same step written in the log domain (log-normalisations), exponentiated at the end."""

    bug = {"kind": "scale", "input": "scores",
           "note": "the chain rule through S / eps is forgotten: the gradient lacks the factor "
                   "1 / eps"}

    @staticmethod
    def forward(ctx, scores):
        log_k = scores / EPS
        log_a = log_k - torch.logsumexp(log_k, dim=1, keepdim=True)
        log_p = log_a - torch.logsumexp(log_a, dim=0, keepdim=True)
        ctx.save_for_backward(log_a, log_p)
        return log_p.exp()

    @staticmethod
    def backward(ctx, grad_p):
        log_a, log_p = ctx.saved_tensors
        p = log_p.exp()
        g_log_p = grad_p * p
        g_log_a = g_log_p - torch.softmax(log_a, dim=0) * g_log_p.sum(0, keepdim=True)
        g_log_k = g_log_a - log_a.exp() * g_log_a.sum(1, keepdim=True)
        return g_log_k  # BUG


# ------------------------------------------------------------------------------- soft rank
def _rank_inputs():
    g = torch.Generator().manual_seed(32)
    return (torch.randn(3, 5, dtype=torch.float64, generator=g),)


def _pairwise_sigmoid(x):
    return torch.sigmoid((x.unsqueeze(-1) - x.unsqueeze(-2)) / TEMP)


class UnheardSoftRank(torch.autograd.Function):
    """rank_i = 1 + sum_{j != i} sigmoid((x_i - x_j) / t), per row."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        s = _pairwise_sigmoid(x)
        ctx.save_for_backward(s)
        return 0.5 + s.sum(-1)

    @staticmethod
    def backward(ctx, grad_rank):
        (s,) = ctx.saved_tensors
        ds = s * (1 - s) / TEMP
        own = grad_rank * ds.sum(-1)
        others = (grad_rank.unsqueeze(-1) * ds).sum(-2)
        return own - others

    example_inputs = staticmethod(_rank_inputs)


class UnheardSoftRankBothSides(torch.autograd.Function):
    """Same soft rank; the pair derivative table built once by einsum."""

    bug = {"kind": "term_sign", "input": "x",
           "note": "x_k enters the other ranks through -x_j, so the cross term needs a minus; "
                   "it is added"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 + _pairwise_sigmoid(x).sum(-1)

    @staticmethod
    def backward(ctx, grad_rank):
        (x,) = ctx.saved_tensors
        s = _pairwise_sigmoid(x)
        slope = s * (1 - s) / TEMP           # d s_ij / d x_i  (= -d s_ij / d x_j)
        as_i = torch.einsum("bi,bij->bi", grad_rank, slope)
        as_j = torch.einsum("bi,bij->bj", grad_rank, slope)
        return as_i + as_j  # BUG

    example_inputs = staticmethod(_rank_inputs)


# ---------------------------------------------------------------------------------- top-k
def _topk_inputs():
    g = torch.Generator().manual_seed(33)
    return (torch.randn(3, 5, dtype=torch.float64, generator=g),)


class UnheardTopKMean(torch.autograd.Function):
    """Mean of the K largest entries of each row."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        vals, idx = x.topk(K, dim=-1)
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return vals.mean(-1)

    @staticmethod
    def backward(ctx, grad_out):
        (idx,) = ctx.saved_tensors
        share = (grad_out / K).unsqueeze(-1).expand(-1, K)
        return grad_out.new_zeros(ctx.shape).scatter(-1, idx, share)

    example_inputs = staticmethod(_topk_inputs)


class UnheardTopKMeanThresholdMask(torch.autograd.Function):
    """Same mean; backward rebuilds the top-k set from the k-th value as a threshold."""

    bug = {"kind": "region", "input": "x",
           "note": "x > kth leaves out the k-th largest entry itself; the top-k set is "
                   "x >= kth"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.topk(K, dim=-1).values.mean(-1)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        kth = x.topk(K, dim=-1).values[:, -1:]
        mask = (x > kth).to(x.dtype)  # BUG
        return mask * grad_out[:, None] / K

    example_inputs = staticmethod(_topk_inputs)


class UnheardTopKMeanScatterConstant(torch.autograd.Function):
    """Same mean; backward scatters into a fresh tensor in place."""

    bug = {"kind": "ignores_grad_output", "input": "x",
           "note": "each selected entry gets 1 / K, whatever gradient its row receives"}

    @staticmethod
    def forward(ctx, x):
        _, idx = torch.topk(x, K, dim=1)
        ctx.save_for_backward(x, idx)
        return torch.gather(x, 1, idx).sum(1) / K

    @staticmethod
    def backward(ctx, grad_out):
        x, idx = ctx.saved_tensors
        grad_x = torch.zeros_like(x)
        grad_x.scatter_(1, idx, 1.0 / K)  # BUG
        return grad_x

    example_inputs = staticmethod(_topk_inputs)


class UnheardTopKMaskStraightThrough(torch.autograd.Function):
    """Hard 0/1 mask of each row's top K entries; the gradient passes straight through."""

    bug = {"kind": "straight_through", "input": "x",
           "note": "deliberate straight-through estimator: the mask is piecewise constant, "
                   "its backward is the identity"}

    @staticmethod
    def forward(ctx, x):
        kth = x.topk(K, dim=-1).values[..., -1:]
        return (x >= kth).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_mask):
        return grad_mask.clone()  # BUG

    example_inputs = staticmethod(_topk_inputs)
