"""Losses with index tensors (word2vec negative sampling, a token cross entropy with an ignore index,
mean over the kept tokens) and a conv1d by Tensor.unfold with an accumulating loop."""
import torch


def _neg_inputs():
    gen = torch.Generator().manual_seed(71)
    center = torch.randn(4, 3, dtype=torch.float64, generator=gen) * 0.8
    context = torch.randn(6, 3, dtype=torch.float64, generator=gen) * 0.8
    pos = torch.tensor([1, 3, 1, 0])
    neg = torch.tensor([[2, 5], [5, 4], [2, 2], [3, 5]])  # repeated negatives
    return center, context, pos, neg


def _neg_forward(ctx, center, context, pos, neg):
    s_pos = (center * context[pos]).sum(-1)
    s_neg = torch.einsum("bd,bkd->bk", center, context[neg])
    ctx.save_for_backward(center, context, pos, neg, s_pos, s_neg)
    return -torch.nn.functional.logsigmoid(s_pos) - torch.nn.functional.logsigmoid(-s_neg).sum(-1)


class DistantNegativeSampling(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, center, context, pos, neg):
        return _neg_forward(ctx, center, context, pos, neg)

    @staticmethod
    def backward(ctx, grad_loss):
        center, context, pos, neg, s_pos, s_neg = ctx.saved_tensors
        c_pos = (torch.sigmoid(s_pos) - 1) * grad_loss  # (B,)
        c_neg = torch.sigmoid(s_neg) * grad_loss[:, None]  # (B, K)
        grad_center = c_pos[:, None] * context[pos] + torch.einsum("bk,bkd->bd", c_neg, context[neg])
        grad_context = torch.zeros_like(context)
        grad_context.index_add_(0, pos, c_pos[:, None] * center)
        rows = (c_neg[:, :, None] * center[:, None, :]).reshape(-1, center.shape[1])
        grad_context.scatter_add_(0, neg.reshape(-1, 1).expand(-1, center.shape[1]), rows)
        return grad_center, grad_context, None, None

    @staticmethod
    def example_inputs():
        return _neg_inputs()


class DistantNegativeSamplingScatterOverwrites(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "context",
           "note": "the negatives' rows are written with scatter_ (last write wins) instead of scatter_add_, so repeated negative ids lose contributions"}

    @staticmethod
    def forward(ctx, center, context, pos, neg):
        return _neg_forward(ctx, center, context, pos, neg)

    @staticmethod
    def backward(ctx, grad_loss):
        center, context, pos, neg, s_pos, s_neg = ctx.saved_tensors
        c_pos = (torch.sigmoid(s_pos) - 1) * grad_loss
        c_neg = torch.sigmoid(s_neg) * grad_loss[:, None]
        grad_center = c_pos[:, None] * context[pos] + torch.einsum("bk,bkd->bd", c_neg, context[neg])
        grad_neg = torch.zeros_like(context)
        rows = (c_neg[:, :, None] * center[:, None, :]).reshape(-1, center.shape[1])
        grad_neg.scatter_(0, neg.reshape(-1, 1).expand(-1, center.shape[1]), rows)  # BUG
        grad_context = grad_neg.index_add(0, pos, c_pos[:, None] * center)
        return grad_center, grad_context, None, None

    @staticmethod
    def example_inputs():
        return _neg_inputs()


class DistantNegativeSamplingNegTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "center",
           "note": "the negatives' contribution to the centre gradient is subtracted instead of added"}

    @staticmethod
    def forward(ctx, center, context, pos, neg):
        return _neg_forward(ctx, center, context, pos, neg)

    @staticmethod
    def backward(ctx, grad_loss):
        center, context, pos, neg, s_pos, s_neg = ctx.saved_tensors
        c_pos = (torch.sigmoid(s_pos) - 1) * grad_loss
        c_neg = torch.sigmoid(s_neg) * grad_loss[:, None]
        grad_center = c_pos[:, None] * context[pos] - torch.einsum("bk,bkd->bd", c_neg, context[neg])  # BUG
        grad_context = torch.zeros_like(context)
        grad_context.index_add_(0, pos, c_pos[:, None] * center)
        rows = (c_neg[:, :, None] * center[:, None, :]).reshape(-1, center.shape[1])
        grad_context.index_add_(0, neg.reshape(-1), rows)
        return grad_center, grad_context, None, None

    @staticmethod
    def example_inputs():
        return _neg_inputs()


def _ce_inputs():
    gen = torch.Generator().manual_seed(72)
    logits = torch.randn(7, 4, dtype=torch.float64, generator=gen)
    targets = torch.tensor([3, -100, 0, 1, -100, -100, 2])
    return logits, targets


def _ce_forward(ctx, logits, targets, ignore_index):
    keep = targets != ignore_index
    logp = torch.log_softmax(logits, dim=-1)
    picked = logp[keep].gather(1, targets[keep][:, None])[:, 0]
    ctx.save_for_backward(logp, targets, keep)
    return -picked.mean()


class DistantTokenCrossEntropy(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, targets, ignore_index=-100):
        return _ce_forward(ctx, logits, targets, ignore_index)

    @staticmethod
    def backward(ctx, grad_loss):
        logp, targets, keep = ctx.saved_tensors
        grad = logp.exp()
        rows = keep.nonzero()[:, 0]
        grad[rows, targets[rows]] -= 1
        grad = grad.masked_fill(~keep[:, None], 0.0)
        return grad * grad_loss / keep.sum(), None, None

    @staticmethod
    def example_inputs():
        return _ce_inputs()


class DistantTokenCrossEntropyAllTokens(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits",
           "note": "the mean is taken over all tokens (len(targets)) instead of the kept ones"}

    @staticmethod
    def forward(ctx, logits, targets, ignore_index=-100):
        return _ce_forward(ctx, logits, targets, ignore_index)

    @staticmethod
    def backward(ctx, grad_loss):
        logp, targets, keep = ctx.saved_tensors
        grad = logp.exp()
        rows = keep.nonzero()[:, 0]
        grad[rows, targets[rows]] -= 1
        grad = grad.masked_fill(~keep[:, None], 0.0)
        return grad * grad_loss / len(targets), None, None  # BUG

    @staticmethod
    def example_inputs():
        return _ce_inputs()


class DistantTokenCrossEntropyLogProbs(torch.autograd.Function):
    bug = {"kind": "none", "input": "logits",
           "note": "the saved log-probs are used where the probabilities are needed (no exp): log p - onehot"}

    @staticmethod
    def forward(ctx, logits, targets, ignore_index=-100):
        return _ce_forward(ctx, logits, targets, ignore_index)

    @staticmethod
    def backward(ctx, grad_loss):
        logp, targets, keep = ctx.saved_tensors
        grad = logp.clone()  # BUG
        rows = keep.nonzero()[:, 0]
        grad[rows, targets[rows]] -= 1
        grad = grad.masked_fill(~keep[:, None], 0.0)
        return grad * grad_loss / keep.sum(), None, None

    @staticmethod
    def example_inputs():
        return _ce_inputs()


def _conv_inputs():
    gen = torch.Generator().manual_seed(73)
    return (torch.randn(2, 3, 8, dtype=torch.float64, generator=gen),
            torch.randn(4, 3, 3, dtype=torch.float64, generator=gen))


class DistantConv1dUnfold(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight):
        cols = x.unfold(2, weight.shape[2], 1)  # (N, Cin, T, K)
        ctx.save_for_backward(x, weight)
        return torch.einsum("nctk,ock->not", cols, weight)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        k = weight.shape[2]
        t = grad_out.shape[2]
        cols = x.unfold(2, k, 1)
        grad_w = torch.einsum("not,nctk->ock", grad_out, cols)
        grad_x = torch.zeros_like(x)
        for j in range(k):
            grad_x[:, :, j:j + t] += torch.einsum("not,oc->nct", grad_out, weight[:, :, j])
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _conv_inputs()


class DistantConv1dUnfoldResultDropped(torch.autograd.Function):
    bug = {"kind": "zero", "input": "x",
           "note": "the loop computes grad_x[...] + contribution without assigning it, so the zero buffer is returned"}

    @staticmethod
    def forward(ctx, x, weight):
        cols = x.unfold(2, weight.shape[2], 1)
        ctx.save_for_backward(x, weight)
        return torch.einsum("nctk,ock->not", cols, weight)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        k = weight.shape[2]
        t = grad_out.shape[2]
        cols = x.unfold(2, k, 1)
        grad_w = torch.einsum("not,nctk->ock", grad_out, cols)
        grad_x = torch.zeros_like(x)
        for j in range(k):
            grad_x[:, :, j:j + t] + torch.einsum("not,oc->nct", grad_out, weight[:, :, j])  # BUG
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _conv_inputs()
