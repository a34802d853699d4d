"""CTC: the negative log-likelihood of one target sequence by the alpha recursion over the
blank-extended labels (logsumexp of stay / advance / skip), divided by the target length as
PyTorch's reduction='mean' does; its gradient by the beta recursion. One operation takes log
probabilities, the other logits (log_softmax inside)."""
import math

import torch

NEG = -math.inf


def _extended(targets, blank):
    ext = torch.full((2 * targets.shape[0] + 1,), blank, dtype=torch.int64)
    ext[1::2] = targets
    return ext


def _skip(ext, blank):
    """skip[s]: a path may jump from s - 2 to s (a label, not equal to the label two back)."""
    two_back = torch.cat([torch.full((2,), -1, dtype=torch.int64), ext[:-2]])
    return (ext != blank) & (ext != two_back)


def _alpha(em, skip):
    T, S = em.shape
    alpha = torch.full((T, S), NEG, dtype=em.dtype)
    alpha[0, :2] = em[0, :2]
    pad = torch.full((2,), NEG, dtype=em.dtype)
    for t in range(1, T):
        prev = alpha[t - 1]
        one = torch.cat([pad[:1], prev[:-1]])
        two = torch.cat([pad, prev[:-2]]).masked_fill(~skip, NEG)
        alpha[t] = torch.logsumexp(torch.stack([prev, one, two]), dim=0) + em[t]
    return alpha


def _beta(em, skip):
    T, S = em.shape
    beta = torch.full((T, S), NEG, dtype=em.dtype)
    beta[T - 1, S - 2:] = em[T - 1, S - 2:]
    skip_next = torch.cat([skip[2:], torch.zeros(2, dtype=torch.bool)])
    pad = torch.full((2,), NEG, dtype=em.dtype)
    for t in reversed(range(T - 1)):
        nxt = beta[t + 1]
        one = torch.cat([nxt[1:], pad[:1]])
        two = torch.cat([nxt[2:], pad]).masked_fill(~skip_next, NEG)
        beta[t] = torch.logsumexp(torch.stack([nxt, one, two]), dim=0) + em[t]
    return beta


def _ctc_inputs():
    gen = torch.Generator().manual_seed(21)
    log_probs = torch.log_softmax(torch.randn(6, 4, dtype=torch.float64, generator=gen), dim=1)
    targets = torch.tensor([1, 1, 2], dtype=torch.int64)  # a repeated label: the skip rule matters
    return log_probs, targets, 0


class WaywardCtcLoss(torch.autograd.Function):
    """CTC loss of log_probs (T, C) for targets (L,) with blank index `blank`, over L."""
    bug = None

    @staticmethod
    def forward(ctx, log_probs, targets, blank):
        ext = _extended(targets, blank)
        em = log_probs[:, ext]
        alpha = _alpha(em, _skip(ext, blank))
        logp = torch.logsumexp(alpha[-1, -2:], dim=0)
        ctx.save_for_backward(log_probs, targets, alpha, logp)
        ctx.blank = blank
        return -logp / targets.shape[0]

    @staticmethod
    def backward(ctx, grad_loss):
        log_probs, targets, alpha, logp = ctx.saved_tensors
        ext = _extended(targets, ctx.blank)
        em = log_probs[:, ext]
        beta = _beta(em, _skip(ext, ctx.blank))
        post = torch.exp(alpha + beta - em - logp)
        grad = torch.zeros_like(log_probs).index_add_(1, ext, post)
        return -grad_loss * grad / targets.shape[0], None, None

    example_inputs = staticmethod(_ctc_inputs)


class WaywardCtcLossAssignBlanks(torch.autograd.Function):
    """CTC loss; the posteriors of the extended positions are written into their classes."""
    bug = {"kind": "not_accumulated", "input": "log_probs",
           "note": "grad[:, ext] = post assigns: the blank (and the repeated label) occur several times in ext and only the last write survives"}

    @staticmethod
    def forward(ctx, log_probs, targets, blank):
        ext = _extended(targets, blank)
        em = log_probs[:, ext]
        alpha = _alpha(em, _skip(ext, blank))
        logp = torch.logsumexp(alpha[-1, -2:], dim=0)
        ctx.save_for_backward(log_probs, targets, alpha, logp)
        ctx.blank = blank
        return -logp / targets.shape[0]

    @staticmethod
    def backward(ctx, grad_loss):
        log_probs, targets, alpha, logp = ctx.saved_tensors
        ext = _extended(targets, ctx.blank)
        em = log_probs[:, ext]
        beta = _beta(em, _skip(ext, ctx.blank))
        post = torch.exp(alpha + beta - em - logp)
        grad = torch.zeros_like(log_probs)
        grad[:, ext] = post  # BUG
        return -grad_loss * grad / targets.shape[0], None, None

    example_inputs = staticmethod(_ctc_inputs)


class WaywardCtcLossBetaForwardLoop(torch.autograd.Function):
    """CTC loss with the beta recursion written inline."""
    bug = {"kind": "missing_flip", "input": "log_probs",
           "note": "the beta recursion runs t = 0 .. T-2 forwards, reading beta[t + 1] before it is computed; it must run reversed"}

    @staticmethod
    def forward(ctx, log_probs, targets, blank):
        ext = _extended(targets, blank)
        em = log_probs[:, ext]
        alpha = _alpha(em, _skip(ext, blank))
        logp = torch.logsumexp(alpha[-1, -2:], dim=0)
        ctx.save_for_backward(log_probs, targets, alpha, logp)
        ctx.blank = blank
        return -logp / targets.shape[0]

    @staticmethod
    def backward(ctx, grad_loss):
        log_probs, targets, alpha, logp = ctx.saved_tensors
        ext = _extended(targets, ctx.blank)
        em = log_probs[:, ext]
        skip = _skip(ext, ctx.blank)
        T, S = em.shape
        beta = torch.full((T, S), NEG, dtype=em.dtype)
        beta[T - 1, S - 2:] = em[T - 1, S - 2:]
        skip_next = torch.cat([skip[2:], torch.zeros(2, dtype=torch.bool)])
        pad = torch.full((2,), NEG, dtype=em.dtype)
        for t in range(T - 1):  # BUG
            nxt = beta[t + 1]
            one = torch.cat([nxt[1:], pad[:1]])
            two = torch.cat([nxt[2:], pad]).masked_fill(~skip_next, NEG)
            beta[t] = torch.logsumexp(torch.stack([nxt, one, two]), dim=0) + em[t]
        post = torch.exp(alpha + beta - em - logp)
        grad = torch.zeros_like(log_probs).index_add_(1, ext, post)
        return -grad_loss * grad / targets.shape[0], None, None

    example_inputs = staticmethod(_ctc_inputs)


class WaywardCtcLossSkipEveryLabel(torch.autograd.Function):
    """CTC loss; backward rebuilds the skip mask itself."""
    bug = {"kind": "region", "input": "log_probs",
           "note": "backward's skip mask is ext != blank only: it lets beta jump between two equal consecutive labels, which the forward forbids"}

    @staticmethod
    def forward(ctx, log_probs, targets, blank):
        ext = _extended(targets, blank)
        em = log_probs[:, ext]
        alpha = _alpha(em, _skip(ext, blank))
        logp = torch.logsumexp(alpha[-1, -2:], dim=0)
        ctx.save_for_backward(log_probs, targets, alpha, logp)
        ctx.blank = blank
        return -logp / targets.shape[0]

    @staticmethod
    def backward(ctx, grad_loss):
        log_probs, targets, alpha, logp = ctx.saved_tensors
        ext = _extended(targets, ctx.blank)
        em = log_probs[:, ext]
        skip = ext != ctx.blank  # BUG
        beta = _beta(em, skip)
        post = torch.exp(alpha + beta - em - logp)
        grad = torch.zeros_like(log_probs).index_add_(1, ext, post)
        return -grad_loss * grad / targets.shape[0], None, None

    example_inputs = staticmethod(_ctc_inputs)


class WaywardCtcLossNoLengthMean(torch.autograd.Function):
    """CTC loss; the forward divides by the target length."""
    bug = {"kind": "scale", "input": "log_probs",
           "note": "the 1 / len(targets) of the forward's mean is left out of the gradient"}

    @staticmethod
    def forward(ctx, log_probs, targets, blank):
        ext = _extended(targets, blank)
        em = log_probs[:, ext]
        alpha = _alpha(em, _skip(ext, blank))
        logp = torch.logsumexp(alpha[-1, -2:], dim=0)
        ctx.save_for_backward(log_probs, targets, alpha, logp)
        ctx.blank = blank
        return -logp / targets.shape[0]

    @staticmethod
    def backward(ctx, grad_loss):
        log_probs, targets, alpha, logp = ctx.saved_tensors
        ext = _extended(targets, ctx.blank)
        em = log_probs[:, ext]
        beta = _beta(em, _skip(ext, ctx.blank))
        post = torch.exp(alpha + beta - em - logp)
        grad = torch.zeros_like(log_probs).index_add_(1, ext, post)
        return -grad_loss * grad, None, None  # BUG

    example_inputs = staticmethod(_ctc_inputs)


class WaywardCtcLossLikelihoodSign(torch.autograd.Function):
    """CTC loss; the posterior is the gradient of log p, the loss is minus it."""
    bug = {"kind": "sign", "input": "log_probs",
           "note": "returns the gradient of +log p / L: the minus of the negative log-likelihood is dropped"}

    @staticmethod
    def forward(ctx, log_probs, targets, blank):
        ext = _extended(targets, blank)
        em = log_probs[:, ext]
        alpha = _alpha(em, _skip(ext, blank))
        logp = torch.logsumexp(alpha[-1, -2:], dim=0)
        ctx.save_for_backward(log_probs, targets, alpha, logp)
        ctx.blank = blank
        return -logp / targets.shape[0]

    @staticmethod
    def backward(ctx, grad_loss):
        log_probs, targets, alpha, logp = ctx.saved_tensors
        ext = _extended(targets, ctx.blank)
        em = log_probs[:, ext]
        beta = _beta(em, _skip(ext, ctx.blank))
        post = torch.exp(alpha + beta - em - logp)
        grad = torch.zeros_like(log_probs).index_add_(1, ext, post)
        return grad_loss * grad / targets.shape[0], None, None  # BUG

    example_inputs = staticmethod(_ctc_inputs)


def _logit_inputs():
    gen = torch.Generator().manual_seed(22)
    return torch.randn(6, 4, dtype=torch.float64, generator=gen), torch.tensor([2, 3, 3], dtype=torch.int64), 0


class WaywardCtcFromLogits(torch.autograd.Function):
    """CTC loss of log_softmax(logits) (T, C), over the target length."""
    bug = None

    @staticmethod
    def forward(ctx, logits, targets, blank):
        log_probs = torch.log_softmax(logits, dim=1)
        ext = _extended(targets, blank)
        em = log_probs[:, ext]
        alpha = _alpha(em, _skip(ext, blank))
        logp = torch.logsumexp(alpha[-1, -2:], dim=0)
        ctx.save_for_backward(log_probs, targets, alpha, logp)
        ctx.blank = blank
        return -logp / targets.shape[0]

    @staticmethod
    def backward(ctx, grad_loss):
        log_probs, targets, alpha, logp = ctx.saved_tensors
        ext = _extended(targets, ctx.blank)
        em = log_probs[:, ext]
        beta = _beta(em, _skip(ext, ctx.blank))
        post = torch.exp(alpha + beta - em - logp)
        grad_lp = -torch.zeros_like(log_probs).index_add_(1, ext, post) / targets.shape[0]
        grad_logits = grad_lp - torch.exp(log_probs) * grad_lp.sum(1, keepdim=True)
        return grad_loss * grad_logits, None, None

    example_inputs = staticmethod(_logit_inputs)


class WaywardCtcFromLogitsNoSoftmaxTerm(torch.autograd.Function):
    """CTC loss of logits; the log_softmax is differentiated as if it were the identity."""
    bug = {"kind": "missing_term", "input": "logits",
           "note": "the softmax term -p * sum(grad_lp) of log_softmax's Jacobian is left out (the y - posterior form loses its y)"}

    @staticmethod
    def forward(ctx, logits, targets, blank):
        log_probs = torch.log_softmax(logits, dim=1)
        ext = _extended(targets, blank)
        em = log_probs[:, ext]
        alpha = _alpha(em, _skip(ext, blank))
        logp = torch.logsumexp(alpha[-1, -2:], dim=0)
        ctx.save_for_backward(log_probs, targets, alpha, logp)
        ctx.blank = blank
        return -logp / targets.shape[0]

    @staticmethod
    def backward(ctx, grad_loss):
        log_probs, targets, alpha, logp = ctx.saved_tensors
        ext = _extended(targets, ctx.blank)
        em = log_probs[:, ext]
        beta = _beta(em, _skip(ext, ctx.blank))
        post = torch.exp(alpha + beta - em - logp)
        grad_lp = -torch.zeros_like(log_probs).index_add_(1, ext, post) / targets.shape[0]
        grad_logits = grad_lp  # BUG
        return grad_loss * grad_logits, None, None

    example_inputs = staticmethod(_logit_inputs)


class WaywardCtcLossPerState(torch.autograd.Function):
    """The CTC loss with both recursions written per extended state (a second correct style)."""
    bug = None

    @staticmethod
    def forward(ctx, log_probs, targets, blank):
        ext = _extended(targets, blank).tolist()
        T, S = log_probs.shape[0], len(ext)
        lp = log_probs.tolist()
        alpha = [[NEG] * S for _ in range(T)]
        alpha[0][0], alpha[0][1] = lp[0][ext[0]], lp[0][ext[1]]
        for t in range(1, T):
            for s in range(S):
                terms = [alpha[t - 1][s]] + ([alpha[t - 1][s - 1]] if s >= 1 else [])
                if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                    terms.append(alpha[t - 1][s - 2])
                m = max(terms)
                alpha[t][s] = NEG if m == NEG else m + math.log(sum(math.exp(v - m) for v in terms)) + lp[t][ext[s]]
        a, b = alpha[T - 1][S - 1], alpha[T - 1][S - 2]
        logp = max(a, b) + math.log1p(math.exp(-abs(a - b)))
        ctx.save_for_backward(log_probs, targets)
        ctx.alpha, ctx.logp, ctx.ext, ctx.blank = alpha, logp, ext, blank
        return log_probs.new_tensor(-logp / len(targets))

    @staticmethod
    def backward(ctx, grad_loss):
        log_probs, targets = ctx.saved_tensors
        alpha, logp, ext, blank = ctx.alpha, ctx.logp, ctx.ext, ctx.blank
        T, S = log_probs.shape[0], len(ext)
        lp = log_probs.tolist()
        beta = [[NEG] * S for _ in range(T)]
        beta[T - 1][S - 1], beta[T - 1][S - 2] = lp[T - 1][ext[S - 1]], lp[T - 1][ext[S - 2]]
        for t in reversed(range(T - 1)):
            for s in range(S):
                terms = [beta[t + 1][s]] + ([beta[t + 1][s + 1]] if s + 1 < S else [])
                if s + 2 < S and ext[s + 2] != blank and ext[s + 2] != ext[s]:
                    terms.append(beta[t + 1][s + 2])
                m = max(terms)
                beta[t][s] = NEG if m == NEG else m + math.log(sum(math.exp(v - m) for v in terms)) + lp[t][ext[s]]
        grad = torch.zeros_like(log_probs)
        for t in range(T):
            for s in range(S):
                if alpha[t][s] > NEG and beta[t][s] > NEG:
                    grad[t, ext[s]] += math.exp(alpha[t][s] + beta[t][s] - lp[t][ext[s]] - logp)
        return -grad_loss * grad / len(targets), None, None

    example_inputs = staticmethod(_ctc_inputs)
