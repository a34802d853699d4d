"""Ranking surrogates: soft ranks by pairwise sigmoids with a temperature, and the ListMLE
(Plackett-Luce) loss of scores under a given order, by a reversed log-cumsum-exp."""
import torch


def _rank_inputs():
    gen = torch.Generator().manual_seed(61)
    return torch.randn(2, 5, dtype=torch.float64, generator=gen), 0.5


class WaywardSoftRank(torch.autograd.Function):
    """rank[b, i] = 0.5 + sum_j sigmoid((x_i - x_j) / tau), a differentiable rank of scores (B, N)."""
    bug = None

    @staticmethod
    def forward(ctx, scores, tau):
        sig = torch.sigmoid((scores.unsqueeze(2) - scores.unsqueeze(1)) / tau)
        ctx.save_for_backward(sig)
        ctx.tau = tau
        return sig.sum(dim=2) + 0.5

    @staticmethod
    def backward(ctx, grad_rank):
        (sig,) = ctx.saved_tensors
        slope = sig * (1 - sig)
        grad = grad_rank * slope.sum(dim=2) - (grad_rank.unsqueeze(2) * slope).sum(dim=1)
        return grad / ctx.tau, None

    example_inputs = staticmethod(_rank_inputs)


class WaywardSoftRankOtherSign(torch.autograd.Function):
    """Soft ranks; the gradient through x_j of each pair."""
    bug = {"kind": "term_sign", "input": "scores",
           "note": "the x_j side of sigmoid((x_i - x_j) / tau) enters with + instead of -"}

    @staticmethod
    def forward(ctx, scores, tau):
        sig = torch.sigmoid((scores.unsqueeze(2) - scores.unsqueeze(1)) / tau)
        ctx.save_for_backward(sig)
        ctx.tau = tau
        return sig.sum(dim=2) + 0.5

    @staticmethod
    def backward(ctx, grad_rank):
        (sig,) = ctx.saved_tensors
        slope = sig * (1 - sig)
        grad = grad_rank * slope.sum(dim=2) + (grad_rank.unsqueeze(2) * slope).sum(dim=1)  # BUG
        return grad / ctx.tau, None

    example_inputs = staticmethod(_rank_inputs)


def _listmle_inputs():
    gen = torch.Generator().manual_seed(62)
    scores = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    order = torch.tensor([[2, 0, 3, 1], [0, 1, 2, 3], [3, 2, 1, 0]], dtype=torch.int64)
    return scores, order


class WaywardListMLE(torch.autograd.Function):
    """loss[b] = sum_i [logsumexp_{j >= i} u_j - u_i] with u = scores gathered in the true order."""
    bug = None

    @staticmethod
    def forward(ctx, scores, order):
        u = scores.gather(1, order)
        tail = torch.flip(torch.logcumsumexp(torch.flip(u, dims=[1]), dim=1), dims=[1])
        ctx.save_for_backward(u, tail, order)
        return (tail - u).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_loss):
        u, tail, order = ctx.saved_tensors
        grad_u = torch.exp(u) * torch.cumsum(torch.exp(-tail), dim=1) - 1
        grad_u = grad_loss.unsqueeze(1) * grad_u
        return torch.zeros_like(u).scatter_(1, order, grad_u), None

    example_inputs = staticmethod(_listmle_inputs)


class WaywardListMLEUnweighted(torch.autograd.Function):
    """ListMLE; one loss per list."""
    bug = {"kind": "ignores_grad_output", "input": "scores",
           "note": "grad_u is scattered back without the per-list grad_loss[b] factor"}

    @staticmethod
    def forward(ctx, scores, order):
        u = scores.gather(1, order)
        tail = torch.flip(torch.logcumsumexp(torch.flip(u, dims=[1]), dim=1), dims=[1])
        ctx.save_for_backward(u, tail, order)
        return (tail - u).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_loss):
        u, tail, order = ctx.saved_tensors
        grad_u = torch.exp(u) * torch.cumsum(torch.exp(-tail), dim=1) - 1  # BUG
        return torch.zeros_like(u).scatter_(1, order, grad_u), None

    example_inputs = staticmethod(_listmle_inputs)


class WaywardListMLEUnsortedExp(torch.autograd.Function):
    """ListMLE; the softmax numerator of each position."""
    bug = {"kind": "wrong_variable", "input": "scores",
           "note": "exp(scores) in the input order where exp(u), the scores gathered in the true order, belongs"}

    @staticmethod
    def forward(ctx, scores, order):
        u = scores.gather(1, order)
        tail = torch.flip(torch.logcumsumexp(torch.flip(u, dims=[1]), dim=1), dims=[1])
        ctx.save_for_backward(scores, u, tail, order)
        return (tail - u).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_loss):
        scores, u, tail, order = ctx.saved_tensors
        grad_u = torch.exp(scores) * torch.cumsum(torch.exp(-tail), dim=1) - 1  # BUG
        grad_u = grad_loss.unsqueeze(1) * grad_u
        return torch.zeros_like(u).scatter_(1, order, grad_u), None

    example_inputs = staticmethod(_listmle_inputs)


class WaywardListMLEBatchCumsum(torch.autograd.Function):
    """ListMLE; the prefix sum over positions."""
    bug = {"kind": "wrong_axis", "input": "scores",
           "note": "torch.cumsum(..., dim=0) runs down the batch; the prefix over positions i <= k is dim=1"}

    @staticmethod
    def forward(ctx, scores, order):
        u = scores.gather(1, order)
        tail = torch.flip(torch.logcumsumexp(torch.flip(u, dims=[1]), dim=1), dims=[1])
        ctx.save_for_backward(u, tail, order)
        return (tail - u).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_loss):
        u, tail, order = ctx.saved_tensors
        grad_u = torch.exp(u) * torch.cumsum(torch.exp(-tail), dim=0) - 1  # BUG
        grad_u = grad_loss.unsqueeze(1) * grad_u
        return torch.zeros_like(u).scatter_(1, order, grad_u), None

    example_inputs = staticmethod(_listmle_inputs)


class WaywardSoftRankEinsum(torch.autograd.Function):
    """Soft ranks with the pair slopes contracted by einsum (a second correct style)."""
    bug = None

    @staticmethod
    def forward(ctx, scores, tau):
        diff = (scores.unsqueeze(2) - scores.unsqueeze(1)) / tau
        ctx.save_for_backward(diff)
        ctx.tau = tau
        return torch.sigmoid(diff).sum(dim=2, keepdim=True).squeeze(2) + 0.5

    @staticmethod
    def backward(ctx, grad_rank):
        (diff,) = ctx.saved_tensors
        slope = torch.sigmoid(diff) * torch.sigmoid(-diff) / ctx.tau
        return torch.einsum("bi,bij->bi", grad_rank, slope) - torch.einsum("bi,bij->bj", grad_rank, slope), None

    example_inputs = staticmethod(_rank_inputs)
