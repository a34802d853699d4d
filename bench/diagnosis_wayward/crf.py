"""Linear-chain CRF pieces: the log-partition by the forward algorithm (logsumexp over tag
transitions) with its forward-backward gradient, the score of a gold tag path, and the linear
emission projection that feeds them."""
import torch


def _alphas(emissions, transitions, start):
    """log alpha[b, t, k]: all prefixes ending in tag k at step t."""
    alpha = [start + emissions[:, 0]]
    for t in range(1, emissions.shape[1]):
        alpha.append(torch.logsumexp(alpha[-1].unsqueeze(2) + transitions, dim=1) + emissions[:, t])
    return torch.stack(alpha, dim=1)


def _betas(emissions, transitions):
    """log beta[b, t, k]: all suffixes after tag k at step t."""
    B, T, K = emissions.shape
    beta = [torch.zeros(B, K, dtype=emissions.dtype)]
    for t in range(T - 2, -1, -1):
        beta.append(torch.logsumexp(transitions + (emissions[:, t + 1] + beta[-1]).unsqueeze(1), dim=2))
    return torch.stack(beta[::-1], dim=1)


def _crf_inputs():
    gen = torch.Generator().manual_seed(11)
    emissions = torch.randn(2, 4, 3, dtype=torch.float64, generator=gen)
    transitions = torch.randn(3, 3, dtype=torch.float64, generator=gen)
    start = torch.randn(3, dtype=torch.float64, generator=gen)
    return emissions, transitions, start


class WaywardCrfLogPartition(torch.autograd.Function):
    """log Z[b] of a linear-chain CRF: emissions (B, T, K), transitions (K, K) [prev, next], start (K,)."""
    bug = None

    @staticmethod
    def forward(ctx, emissions, transitions, start):
        alpha = _alphas(emissions, transitions, start)
        logz = torch.logsumexp(alpha[:, -1], dim=1)
        ctx.save_for_backward(emissions, transitions, alpha, logz)
        return logz

    @staticmethod
    def backward(ctx, grad_logz):
        emissions, transitions, alpha, logz = ctx.saved_tensors
        beta = _betas(emissions, transitions)
        node = torch.exp(alpha + beta - logz[:, None, None])
        grad_emissions = grad_logz[:, None, None] * node
        pair = (alpha[:, :-1].unsqueeze(3) + transitions
                + (emissions[:, 1:] + beta[:, 1:]).unsqueeze(2) - logz[:, None, None, None])
        grad_transitions = torch.einsum("b,btij->ij", grad_logz, torch.exp(pair))
        grad_start = grad_logz[:, None] * node[:, 0]
        return grad_emissions, grad_transitions, grad_start

    example_inputs = staticmethod(_crf_inputs)


class WaywardCrfLogPartitionScaled(torch.autograd.Function):
    """The same log Z by the scaled forward algorithm in probability space (a second correct style)."""
    bug = None

    @staticmethod
    def forward(ctx, emissions, transitions, start):
        B, T, K = emissions.shape
        trans = torch.exp(transitions)
        a = torch.exp(start + emissions[:, 0])
        scales = [a.sum(1, keepdim=True)]
        alphas = [a / scales[0]]
        for t in range(1, T):
            a = (alphas[-1] @ trans) * torch.exp(emissions[:, t])
            scales.append(a.sum(1, keepdim=True))
            alphas.append(a / scales[-1])
        ctx.save_for_backward(emissions, transitions, torch.stack(alphas, 1), torch.cat(scales, 1))
        return torch.log(torch.cat(scales, 1)).sum(1)

    @staticmethod
    def backward(ctx, grad_logz):
        emissions, transitions, alphas, scales = ctx.saved_tensors
        B, T, K = emissions.shape
        trans = torch.exp(transitions)
        betas = [torch.ones(B, K, dtype=emissions.dtype)]
        for t in reversed(range(1, T)):
            betas.insert(0, (betas[0] * torch.exp(emissions[:, t])) @ trans.T / scales[:, t:t + 1])
        beta = torch.stack(betas, 1)
        node = alphas * beta
        grad_emissions = grad_logz[:, None, None] * node
        grad_transitions = torch.zeros_like(transitions)
        for t in range(1, T):
            nxt = beta[:, t] * torch.exp(emissions[:, t]) / scales[:, t:t + 1]
            pair = alphas[:, t - 1].unsqueeze(2) * trans * nxt.unsqueeze(1)
            grad_transitions += (grad_logz[:, None, None] * pair).sum(0)
        return grad_emissions, grad_transitions, grad_logz[:, None] * node[:, 0]

    example_inputs = staticmethod(_crf_inputs)


class WaywardCrfTransitionsNextPrev(torch.autograd.Function):
    """log Z; the edge marginals are built in (next, prev) layout."""
    bug = {"kind": "transposed", "input": "transitions",
           "note": "edge marginals built as [next, prev] and summed without swapping back to [prev, next]"}

    @staticmethod
    def forward(ctx, emissions, transitions, start):
        alpha = _alphas(emissions, transitions, start)
        logz = torch.logsumexp(alpha[:, -1], dim=1)
        ctx.save_for_backward(emissions, transitions, alpha, logz)
        return logz

    @staticmethod
    def backward(ctx, grad_logz):
        emissions, transitions, alpha, logz = ctx.saved_tensors
        beta = _betas(emissions, transitions)
        node = torch.exp(alpha + beta - logz[:, None, None])
        grad_emissions = grad_logz[:, None, None] * node
        pair = (alpha[:, :-1].unsqueeze(2) + transitions.T
                + (emissions[:, 1:] + beta[:, 1:]).unsqueeze(3) - logz[:, None, None, None])
        grad_transitions = torch.einsum("b,btij->ij", grad_logz, torch.exp(pair))  # BUG
        grad_start = grad_logz[:, None] * node[:, 0]
        return grad_emissions, grad_transitions, grad_start

    example_inputs = staticmethod(_crf_inputs)


class WaywardCrfBetaWrongAxis(torch.autograd.Function):
    """log Z with the backward recursion written inline."""
    bug = {"kind": "wrong_axis", "input": "emissions",
           "note": "beta's logsumexp runs over the prev axis (dim=1) instead of next (dim=2); all three gradients are wrong"}

    @staticmethod
    def forward(ctx, emissions, transitions, start):
        alpha = _alphas(emissions, transitions, start)
        logz = torch.logsumexp(alpha[:, -1], dim=1)
        ctx.save_for_backward(emissions, transitions, alpha, logz)
        return logz

    @staticmethod
    def backward(ctx, grad_logz):
        emissions, transitions, alpha, logz = ctx.saved_tensors
        B, T, K = emissions.shape
        betas = [torch.zeros(B, K, dtype=emissions.dtype)]
        for t in range(T - 2, -1, -1):
            betas.append(torch.logsumexp(transitions + (emissions[:, t + 1] + betas[-1]).unsqueeze(1), dim=1))  # BUG
        beta = torch.stack(betas[::-1], dim=1)
        node = torch.exp(alpha + beta - logz[:, None, None])
        grad_emissions = grad_logz[:, None, None] * node
        pair = (alpha[:, :-1].unsqueeze(3) + transitions
                + (emissions[:, 1:] + beta[:, 1:]).unsqueeze(2) - logz[:, None, None, None])
        grad_transitions = torch.einsum("b,btij->ij", grad_logz, torch.exp(pair))
        grad_start = grad_logz[:, None] * node[:, 0]
        return grad_emissions, grad_transitions, grad_start

    example_inputs = staticmethod(_crf_inputs)


class WaywardCrfMarginalsUnweighted(torch.autograd.Function):
    """log Z; the emission gradient is the node marginals."""
    bug = {"kind": "ignores_grad_output", "input": "emissions",
           "note": "grad_emissions is the node marginals themselves, not weighted by grad_logz per sequence"}

    @staticmethod
    def forward(ctx, emissions, transitions, start):
        alpha = _alphas(emissions, transitions, start)
        logz = torch.logsumexp(alpha[:, -1], dim=1)
        ctx.save_for_backward(emissions, transitions, alpha, logz)
        return logz

    @staticmethod
    def backward(ctx, grad_logz):
        emissions, transitions, alpha, logz = ctx.saved_tensors
        beta = _betas(emissions, transitions)
        node = torch.exp(alpha + beta - logz[:, None, None])
        grad_emissions = node  # BUG
        pair = (alpha[:, :-1].unsqueeze(3) + transitions
                + (emissions[:, 1:] + beta[:, 1:]).unsqueeze(2) - logz[:, None, None, None])
        grad_transitions = torch.einsum("b,btij->ij", grad_logz, torch.exp(pair))
        grad_start = grad_logz[:, None] * node[:, 0]
        return grad_emissions, grad_transitions, grad_start

    example_inputs = staticmethod(_crf_inputs)


class WaywardCrfPairNoEmission(torch.autograd.Function):
    """log Z; the edge potential of step t leaves out that step's emission."""
    bug = {"kind": "missing_term", "input": "transitions",
           "note": "the edge marginal's log-potential omits emissions[:, t] of the next tag"}

    @staticmethod
    def forward(ctx, emissions, transitions, start):
        alpha = _alphas(emissions, transitions, start)
        logz = torch.logsumexp(alpha[:, -1], dim=1)
        ctx.save_for_backward(emissions, transitions, alpha, logz)
        return logz

    @staticmethod
    def backward(ctx, grad_logz):
        emissions, transitions, alpha, logz = ctx.saved_tensors
        beta = _betas(emissions, transitions)
        node = torch.exp(alpha + beta - logz[:, None, None])
        grad_emissions = grad_logz[:, None, None] * node
        pair = alpha[:, :-1].unsqueeze(3) + transitions + beta[:, 1:].unsqueeze(2) - logz[:, None, None, None]  # BUG
        grad_transitions = torch.einsum("b,btij->ij", grad_logz, torch.exp(pair))
        grad_start = grad_logz[:, None] * node[:, 0]
        return grad_emissions, grad_transitions, grad_start

    example_inputs = staticmethod(_crf_inputs)


class WaywardCrfPairAlphaForBeta(torch.autograd.Function):
    """log Z; the edge marginal reads the suffix scores."""
    bug = {"kind": "wrong_variable", "input": "transitions",
           "note": "the edge marginal uses alpha[:, 1:] where the suffix scores beta[:, 1:] belong"}

    @staticmethod
    def forward(ctx, emissions, transitions, start):
        alpha = _alphas(emissions, transitions, start)
        logz = torch.logsumexp(alpha[:, -1], dim=1)
        ctx.save_for_backward(emissions, transitions, alpha, logz)
        return logz

    @staticmethod
    def backward(ctx, grad_logz):
        emissions, transitions, alpha, logz = ctx.saved_tensors
        beta = _betas(emissions, transitions)
        node = torch.exp(alpha + beta - logz[:, None, None])
        grad_emissions = grad_logz[:, None, None] * node
        pair = (alpha[:, :-1].unsqueeze(3) + transitions
                + (emissions[:, 1:] + alpha[:, 1:]).unsqueeze(2) - logz[:, None, None, None])  # BUG
        grad_transitions = torch.einsum("b,btij->ij", grad_logz, torch.exp(pair))
        grad_start = grad_logz[:, None] * node[:, 0]
        return grad_emissions, grad_transitions, grad_start

    example_inputs = staticmethod(_crf_inputs)


class WaywardCrfLocalSoftmaxGuess(torch.autograd.Function):
    """log Z; the emission gradient is taken from independent per-step softmaxes."""
    bug = {"kind": "none", "input": "emissions",
           "note": "grad_emissions written as softmax(emissions + mean incoming transition) per step: independent per-step softmaxes, no forward-backward"}

    @staticmethod
    def forward(ctx, emissions, transitions, start):
        alpha = _alphas(emissions, transitions, start)
        logz = torch.logsumexp(alpha[:, -1], dim=1)
        ctx.save_for_backward(emissions, transitions, alpha, logz)
        return logz

    @staticmethod
    def backward(ctx, grad_logz):
        emissions, transitions, alpha, logz = ctx.saved_tensors
        beta = _betas(emissions, transitions)
        node = torch.exp(alpha + beta - logz[:, None, None])
        grad_emissions = grad_logz[:, None, None] * torch.softmax(emissions + transitions.mean(0), dim=2)  # BUG
        pair = (alpha[:, :-1].unsqueeze(3) + transitions
                + (emissions[:, 1:] + beta[:, 1:]).unsqueeze(2) - logz[:, None, None, None])
        grad_transitions = torch.einsum("b,btij->ij", grad_logz, torch.exp(pair))
        grad_start = grad_logz[:, None] * node[:, 0]
        return grad_emissions, grad_transitions, grad_start

    example_inputs = staticmethod(_crf_inputs)


def _gold_inputs():
    gen = torch.Generator().manual_seed(12)
    emissions = torch.randn(2, 5, 3, dtype=torch.float64, generator=gen)
    transitions = torch.randn(3, 3, dtype=torch.float64, generator=gen)
    tags = torch.tensor([[0, 1, 0, 1, 2], [2, 2, 2, 0, 1]], dtype=torch.int64)  # (0,1) and (2,2) repeat
    return emissions, transitions, tags


class WaywardCrfGoldScore(torch.autograd.Function):
    """score[b] of the gold tag path: sum_t emissions[b, t, tags] + sum_t transitions[tags[t-1], tags[t]]."""
    bug = None

    @staticmethod
    def forward(ctx, emissions, transitions, tags):
        ctx.save_for_backward(tags)
        ctx.shapes = (emissions.shape, transitions.shape)
        em = emissions.gather(2, tags.unsqueeze(2)).squeeze(2).sum(1)
        return em + transitions[tags[:, :-1], tags[:, 1:]].sum(1)

    @staticmethod
    def backward(ctx, grad_score):
        (tags,) = ctx.saved_tensors
        em_shape, tr_shape = ctx.shapes
        B, T, K = em_shape
        grad_emissions = grad_score.new_zeros(em_shape).scatter_(
            2, tags.unsqueeze(2), grad_score.view(B, 1, 1).expand(B, T, 1))
        grad_transitions = grad_score.new_zeros(tr_shape)
        grad_transitions.index_put_((tags[:, :-1].reshape(-1), tags[:, 1:].reshape(-1)),
                                    grad_score[:, None].expand(B, T - 1).reshape(-1), accumulate=True)
        return grad_emissions, grad_transitions, None

    example_inputs = staticmethod(_gold_inputs)


class WaywardCrfGoldScoreOverwrite(torch.autograd.Function):
    """The gold path score; transitions taken twice are written, not added."""
    bug = {"kind": "not_accumulated", "input": "transitions",
           "note": "index_put_ without accumulate=True: a transition used twice on a path counts once"}

    @staticmethod
    def forward(ctx, emissions, transitions, tags):
        ctx.save_for_backward(tags)
        ctx.shapes = (emissions.shape, transitions.shape)
        em = emissions.gather(2, tags.unsqueeze(2)).squeeze(2).sum(1)
        return em + transitions[tags[:, :-1], tags[:, 1:]].sum(1)

    @staticmethod
    def backward(ctx, grad_score):
        (tags,) = ctx.saved_tensors
        em_shape, tr_shape = ctx.shapes
        B, T, K = em_shape
        grad_emissions = grad_score.new_zeros(em_shape).scatter_(
            2, tags.unsqueeze(2), grad_score.view(B, 1, 1).expand(B, T, 1))
        grad_transitions = grad_score.new_zeros(tr_shape)
        grad_transitions.index_put_((tags[:, :-1].reshape(-1), tags[:, 1:].reshape(-1)),  # BUG
                                    grad_score[:, None].expand(B, T - 1).reshape(-1))
        return grad_emissions, grad_transitions, None

    example_inputs = staticmethod(_gold_inputs)


class WaywardCrfGoldScoreNextPrev(torch.autograd.Function):
    """The gold path score; the transition gradient is indexed [next, prev]."""
    bug = {"kind": "swapped", "input": "transitions", "also": ["transposed"],
           "note": "the prev and next tag index tensors are swapped in index_put_, so the transition gradient lands transposed"}

    @staticmethod
    def forward(ctx, emissions, transitions, tags):
        ctx.save_for_backward(tags)
        ctx.shapes = (emissions.shape, transitions.shape)
        em = emissions.gather(2, tags.unsqueeze(2)).squeeze(2).sum(1)
        return em + transitions[tags[:, :-1], tags[:, 1:]].sum(1)

    @staticmethod
    def backward(ctx, grad_score):
        (tags,) = ctx.saved_tensors
        em_shape, tr_shape = ctx.shapes
        B, T, K = em_shape
        grad_emissions = grad_score.new_zeros(em_shape).scatter_(
            2, tags.unsqueeze(2), grad_score.view(B, 1, 1).expand(B, T, 1))
        grad_transitions = grad_score.new_zeros(tr_shape)
        grad_transitions.index_put_((tags[:, 1:].reshape(-1), tags[:, :-1].reshape(-1)),  # BUG
                                    grad_score[:, None].expand(B, T - 1).reshape(-1), accumulate=True)
        return grad_emissions, grad_transitions, None

    example_inputs = staticmethod(_gold_inputs)


def _projection_inputs():
    gen = torch.Generator().manual_seed(13)
    return (torch.randn(4, 4, dtype=torch.float64, generator=gen),
            torch.randn(4, 4, dtype=torch.float64, generator=gen),
            torch.randn(4, dtype=torch.float64, generator=gen))


class WaywardEmissionProjection(torch.autograd.Function):
    """emissions = features (T, D) @ weight (D, K) + bias (K,), the CRF's emission layer."""
    bug = None

    @staticmethod
    def forward(ctx, features, weight, bias):
        ctx.save_for_backward(features, weight)
        return features @ weight + bias

    @staticmethod
    def backward(ctx, grad_em):
        features, weight = ctx.saved_tensors
        grad_features = grad_em @ weight.T if ctx.needs_input_grad[0] else None
        grad_weight = features.T @ grad_em if ctx.needs_input_grad[1] else None
        grad_bias = grad_em.sum(0) if ctx.needs_input_grad[2] else None
        return grad_features, grad_weight, grad_bias

    example_inputs = staticmethod(_projection_inputs)


class WaywardEmissionProjectionWeightT(torch.autograd.Function):
    """The emission layer; the weight gradient is formed the other way round."""
    bug = {"kind": "transposed", "input": "weight",
           "note": "grad_weight = grad_em.T @ features, (K, D), the transpose of features.T @ grad_em (square here so it runs)"}

    @staticmethod
    def forward(ctx, features, weight, bias):
        ctx.save_for_backward(features, weight)
        return features @ weight + bias

    @staticmethod
    def backward(ctx, grad_em):
        features, weight = ctx.saved_tensors
        grad_features = grad_em @ weight.T if ctx.needs_input_grad[0] else None
        grad_weight = grad_em.T @ features if ctx.needs_input_grad[1] else None  # BUG
        grad_bias = grad_em.sum(0) if ctx.needs_input_grad[2] else None
        return grad_features, grad_weight, grad_bias

    example_inputs = staticmethod(_projection_inputs)
