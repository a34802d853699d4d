"""Language-model pieces with index tensors: tied input/output embeddings, a sampled softmax over
candidate ids (the true id in column 0), and a perplexity from token log-probs with an ignore index."""
import torch


def _tied_inputs():
    gen = torch.Generator().manual_seed(31)
    emb = torch.randn(6, 3, dtype=torch.float64, generator=gen)
    hidden = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    ids = torch.tensor([2, 0, 2, 5, 2])  # repeated ids
    return emb, hidden, ids


class DistantTiedEmbeddingLogits(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, emb, hidden, ids):
        z = emb[ids] + hidden
        ctx.save_for_backward(emb, z, ids)
        return z @ emb.t()

    @staticmethod
    def backward(ctx, grad_logits):
        emb, z, ids = ctx.saved_tensors
        grad_z = grad_logits @ emb
        grad_emb = grad_logits.t() @ z
        grad_emb = grad_emb.index_add(0, ids, grad_z)
        return grad_emb, grad_z, None

    @staticmethod
    def example_inputs():
        return _tied_inputs()


class DistantTiedEmbeddingOutputSideOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "emb",
           "note": "the tied matrix gets only the output-projection gradient; the input-lookup contribution is left out"}

    @staticmethod
    def forward(ctx, emb, hidden, ids):
        z = emb[ids] + hidden
        ctx.save_for_backward(emb, z, ids)
        return z @ emb.t()

    @staticmethod
    def backward(ctx, grad_logits):
        emb, z, ids = ctx.saved_tensors
        grad_z = grad_logits @ emb
        grad_emb = grad_logits.t() @ z  # BUG
        return grad_emb, grad_z, None

    @staticmethod
    def example_inputs():
        return _tied_inputs()


class DistantTiedEmbeddingIndexedAdd(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "emb",
           "note": "grad_emb[ids] += grad_z keeps one row per repeated id instead of summing them (use index_add_)"}

    @staticmethod
    def forward(ctx, emb, hidden, ids):
        z = emb[ids] + hidden
        ctx.save_for_backward(emb, z, ids)
        return z @ emb.t()

    @staticmethod
    def backward(ctx, grad_logits):
        emb, z, ids = ctx.saved_tensors
        grad_z = grad_logits @ emb
        grad_emb = grad_logits.t() @ z
        grad_emb[ids] += grad_z  # BUG
        return grad_emb, grad_z, None

    @staticmethod
    def example_inputs():
        return _tied_inputs()


def _sampled_inputs():
    gen = torch.Generator().manual_seed(32)
    hidden = torch.randn(4, 3, dtype=torch.float64, generator=gen)
    weight = torch.randn(7, 3, dtype=torch.float64, generator=gen)
    cand = torch.tensor([[1, 4, 6], [3, 1, 0], [1, 2, 4], [5, 4, 1]])  # column 0: the true id
    return hidden, weight, cand


def _sampled_forward(ctx, hidden, weight, cand):
    w = weight[cand]  # (B, S, D)
    logits = torch.einsum("bd,bsd->bs", hidden, w)
    loss = torch.logsumexp(logits, dim=1) - logits[:, 0]
    ctx.save_for_backward(hidden, weight, cand, logits)
    return loss


class DistantSampledSoftmax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, hidden, weight, cand):
        return _sampled_forward(ctx, hidden, weight, cand)

    @staticmethod
    def backward(ctx, grad_loss):
        hidden, weight, cand, logits = ctx.saved_tensors
        p = torch.softmax(logits, dim=1)
        p[:, 0] -= 1
        grad_logits = p * grad_loss[:, None]
        grad_hidden = torch.einsum("bs,bsd->bd", grad_logits, weight[cand])
        rows = (grad_logits[:, :, None] * hidden[:, None, :]).reshape(-1, hidden.shape[1])
        grad_weight = torch.zeros_like(weight).index_add_(0, cand.reshape(-1), rows)
        return grad_hidden, grad_weight, None

    @staticmethod
    def example_inputs():
        return _sampled_inputs()


class DistantSampledSoftmaxNoUpstream(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "hidden",
           "note": "the per-row loss gradient grad_loss is never multiplied in (softmax minus one-hot used as is)"}

    @staticmethod
    def forward(ctx, hidden, weight, cand):
        return _sampled_forward(ctx, hidden, weight, cand)

    @staticmethod
    def backward(ctx, grad_loss):
        hidden, weight, cand, logits = ctx.saved_tensors
        p = torch.softmax(logits, dim=1)
        p[:, 0] -= 1
        grad_logits = p  # BUG
        grad_hidden = torch.einsum("bs,bsd->bd", grad_logits, weight[cand])
        rows = (grad_logits[:, :, None] * hidden[:, None, :]).reshape(-1, hidden.shape[1])
        grad_weight = torch.zeros_like(weight).index_add_(0, cand.reshape(-1), rows)
        return grad_hidden, grad_weight, None

    @staticmethod
    def example_inputs():
        return _sampled_inputs()


class DistantSampledSoftmaxWeightNegated(torch.autograd.Function):
    bug = {"kind": "sign", "input": "weight",
           "note": "the candidate rows' gradient is subtracted into grad_weight (written as a descent step)"}

    @staticmethod
    def forward(ctx, hidden, weight, cand):
        return _sampled_forward(ctx, hidden, weight, cand)

    @staticmethod
    def backward(ctx, grad_loss):
        hidden, weight, cand, logits = ctx.saved_tensors
        p = torch.softmax(logits, dim=1)
        p[:, 0] -= 1
        grad_logits = p * grad_loss[:, None]
        grad_hidden = torch.einsum("bs,bsd->bd", grad_logits, weight[cand])
        rows = (grad_logits[:, :, None] * hidden[:, None, :]).reshape(-1, hidden.shape[1])
        grad_weight = torch.zeros_like(weight).index_add_(0, cand.reshape(-1), -rows)  # BUG
        return grad_hidden, grad_weight, None

    @staticmethod
    def example_inputs():
        return _sampled_inputs()


def _ppl_inputs():
    gen = torch.Generator().manual_seed(33)
    logits = torch.randn(6, 5, dtype=torch.float64, generator=gen)
    targets = torch.tensor([1, -100, 4, 0, -100, 2])
    return logits, targets


def _ppl_forward(ctx, logits, targets, ignore_index):
    valid = targets != ignore_index
    safe = targets.clamp(min=0)
    logp = torch.log_softmax(logits, dim=1)
    nll = -logp.gather(1, safe[:, None])[:, 0]
    count = valid.sum()
    ppl = torch.exp((nll * valid).sum() / count)
    ctx.save_for_backward(logp, safe, valid, ppl)
    ctx.count = int(count)
    return ppl


class DistantPerplexity(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, targets, ignore_index=-100):
        return _ppl_forward(ctx, logits, targets, ignore_index)

    @staticmethod
    def backward(ctx, grad_ppl):
        logp, safe, valid, ppl = ctx.saved_tensors
        grad = logp.exp()
        grad[torch.arange(len(safe)), safe] -= 1
        grad = grad * valid[:, None]
        return grad * (grad_ppl * ppl / ctx.count), None, None

    @staticmethod
    def example_inputs():
        return _ppl_inputs()


class DistantPerplexityIgnoredRowsKept(torch.autograd.Function):
    bug = {"kind": "region", "input": "logits",
           "note": "the rows whose target is ignore_index are not masked out of the gradient"}

    @staticmethod
    def forward(ctx, logits, targets, ignore_index=-100):
        return _ppl_forward(ctx, logits, targets, ignore_index)

    @staticmethod
    def backward(ctx, grad_ppl):
        logp, safe, valid, ppl = ctx.saved_tensors
        grad = logp.exp()
        grad[torch.arange(len(safe)), safe] -= 1
        return grad * (grad_ppl * ppl / ctx.count), None, None  # BUG

    @staticmethod
    def example_inputs():
        return _ppl_inputs()


class DistantPerplexityNoExpFactor(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits",
           "note": "the chain factor of exp, the perplexity itself (a scalar), is forgotten: the mean-NLL gradient is returned"}

    @staticmethod
    def forward(ctx, logits, targets, ignore_index=-100):
        return _ppl_forward(ctx, logits, targets, ignore_index)

    @staticmethod
    def backward(ctx, grad_ppl):
        logp, safe, valid, ppl = ctx.saved_tensors
        grad = logp.exp()
        grad[torch.arange(len(safe)), safe] -= 1
        grad = grad * valid[:, None]
        return grad * (grad_ppl / ctx.count), None, None  # BUG

    @staticmethod
    def example_inputs():
        return _ppl_inputs()
