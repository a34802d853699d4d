"""A fused linear + cross-entropy that never materialises all logits: rows in chunks (blind corpus yonder)."""
import torch


def _ce_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(6, 4, dtype=torch.float64, generator=g)
    weight = torch.randn(4, 4, dtype=torch.float64, generator=g)  # (V, D), V == D
    bias = torch.randn(4, dtype=torch.float64, generator=g)
    target = torch.tensor([0, 3, 1, 3, 2, 0])
    return h, weight, bias, target, 2


def _ce_forward(ctx, h, weight, bias, target, chunk):
    total = h.new_zeros(())
    for start in range(0, h.shape[0], chunk):
        logits = h[start:start + chunk] @ weight.t() + bias
        t = target[start:start + chunk]
        total = total + (torch.logsumexp(logits, dim=1) - logits.gather(1, t[:, None])[:, 0]).sum()
    ctx.chunk = chunk
    ctx.save_for_backward(h, weight, bias, target)
    return total / h.shape[0]


def _chunk_probs(h_c, weight, bias, t):
    p = torch.softmax(torch.matmul(h_c, weight.t()) + bias, dim=1)
    p[torch.arange(len(t)), t] -= 1.0
    return p


class YonderChunkedLinearCE(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, h, weight, bias, target, chunk: int = 2):
        return _ce_forward(ctx, h, weight, bias, target, chunk)

    @staticmethod
    def backward(ctx, grad_loss):
        h, weight, bias, target = ctx.saved_tensors
        n = h.shape[0]
        grad_h = torch.empty_like(h)
        grad_w = torch.zeros_like(weight)
        grad_b = torch.zeros_like(bias)
        for start in range(0, n, ctx.chunk):
            h_c = h[start:start + ctx.chunk]
            p = _chunk_probs(h_c, weight, bias, target[start:start + ctx.chunk]) * (grad_loss / n)
            grad_h[start:start + ctx.chunk] = p @ weight
            grad_w += p.t() @ h_c
            grad_b += p.sum(0)
        return grad_h, grad_w, grad_b, None, None

    @staticmethod
    def example_inputs():
        return _ce_inputs(0)


class YonderChunkedLinearCEWeightOverwritten(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "weight",
           "note": "the weight gradient assigned per chunk instead of accumulated: only the last chunk survives"}

    @staticmethod
    def forward(ctx, h, weight, bias, target, chunk: int = 2):
        return _ce_forward(ctx, h, weight, bias, target, chunk)

    @staticmethod
    def backward(ctx, grad_loss):
        h, weight, bias, target = ctx.saved_tensors
        n = h.shape[0]
        grad_h = torch.empty_like(h)
        grad_b = torch.zeros_like(bias)
        for start in range(0, n, ctx.chunk):
            h_c = h[start:start + ctx.chunk]
            p = _chunk_probs(h_c, weight, bias, target[start:start + ctx.chunk]) * (grad_loss / n)
            grad_h[start:start + ctx.chunk] = p @ weight
            grad_w = p.t() @ h_c  # BUG
            grad_b += p.sum(0)
        return grad_h, grad_w, grad_b, None, None

    @staticmethod
    def example_inputs():
        return _ce_inputs(1)


class YonderChunkedLinearCENoMean(torch.autograd.Function):
    bug = {"kind": "scale", "input": "h",
           "note": "the 1/N of the mean reduction forgotten in backward (factor 6)"}

    @staticmethod
    def forward(ctx, h, weight, bias, target, chunk: int = 2):
        return _ce_forward(ctx, h, weight, bias, target, chunk)

    @staticmethod
    def backward(ctx, grad_loss):
        h, weight, bias, target = ctx.saved_tensors
        n = h.shape[0]
        grad_h = torch.empty_like(h)
        grad_w = torch.zeros_like(weight)
        grad_b = torch.zeros_like(bias)
        for start in range(0, n, ctx.chunk):
            h_c = h[start:start + ctx.chunk]
            p = _chunk_probs(h_c, weight, bias, target[start:start + ctx.chunk]) * grad_loss  # BUG
            grad_h[start:start + ctx.chunk] = p @ weight
            grad_w += p.t() @ h_c
            grad_b += p.sum(0)
        return grad_h, grad_w, grad_b, None, None

    @staticmethod
    def example_inputs():
        return _ce_inputs(2)


class YonderChunkedLinearCEWeightTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "weight",
           "note": "the weight gradient accumulated as h_c.T @ p, (D, V), for a weight stored (V, D)"}

    @staticmethod
    def forward(ctx, h, weight, bias, target, chunk: int = 2):
        return _ce_forward(ctx, h, weight, bias, target, chunk)

    @staticmethod
    def backward(ctx, grad_loss):
        h, weight, bias, target = ctx.saved_tensors
        n = h.shape[0]
        grad_h = torch.empty_like(h)
        grad_w = torch.zeros_like(weight)
        grad_b = torch.zeros_like(bias)
        for start in range(0, n, ctx.chunk):
            h_c = h[start:start + ctx.chunk]
            p = _chunk_probs(h_c, weight, bias, target[start:start + ctx.chunk]) * (grad_loss / n)
            grad_h[start:start + ctx.chunk] = p @ weight
            grad_w += h_c.t() @ p  # BUG
            grad_b += p.sum(0)
        return grad_h, grad_w, grad_b, None, None

    @staticmethod
    def example_inputs():
        return _ce_inputs(3)


class YonderChunkedLinearCEOneHotSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "h",
           "note": "the one-hot of the target added to softmax instead of subtracted (p + y instead of p - y)"}

    @staticmethod
    def forward(ctx, h, weight, bias, target, chunk: int = 2):
        return _ce_forward(ctx, h, weight, bias, target, chunk)

    @staticmethod
    def backward(ctx, grad_loss):
        h, weight, bias, target = ctx.saved_tensors
        n = h.shape[0]
        grad_h = torch.empty_like(h)
        grad_w = torch.zeros_like(weight)
        grad_b = torch.zeros_like(bias)
        for start in range(0, n, ctx.chunk):
            h_c = h[start:start + ctx.chunk]
            t = target[start:start + ctx.chunk]
            p = torch.softmax(h_c @ weight.t() + bias, dim=1)
            p[torch.arange(len(t)), t] += 1.0  # BUG
            p = p * (grad_loss / n)
            grad_h[start:start + ctx.chunk] = p @ weight
            grad_w += p.t() @ h_c
            grad_b += p.sum(0)
        return grad_h, grad_w, grad_b, None, None

    @staticmethod
    def example_inputs():
        return _ce_inputs(4)


class YonderChunkedLinearCEIgnoresGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "h",
           "note": "the incoming grad_loss never multiplied in (backward assumes the loss is the graph's root)"}

    @staticmethod
    def forward(ctx, h, weight, bias, target, chunk: int = 2):
        return _ce_forward(ctx, h, weight, bias, target, chunk)

    @staticmethod
    def backward(ctx, grad_loss):
        h, weight, bias, target = ctx.saved_tensors
        n = h.shape[0]
        grad_h = torch.empty_like(h)
        grad_w = torch.zeros_like(weight)
        grad_b = torch.zeros_like(bias)
        for start in range(0, n, ctx.chunk):
            h_c = h[start:start + ctx.chunk]
            p = _chunk_probs(h_c, weight, bias, target[start:start + ctx.chunk]) / n  # BUG
            grad_h[start:start + ctx.chunk] = p @ weight
            grad_w += p.t() @ h_c
            grad_b += p.sum(0)
        return grad_h, grad_w, grad_b, None, None

    @staticmethod
    def example_inputs():
        return _ce_inputs(5)


class YonderChunkedLinearCEByEinsum(torch.autograd.Function):
    """The same loss, backward over all rows at once with einsum (a second twin)."""
    bug = None

    @staticmethod
    def forward(ctx, h, weight, bias, target, chunk: int = 2):
        return _ce_forward(ctx, h, weight, bias, target, chunk)

    @staticmethod
    def backward(ctx, grad_loss):
        h, weight, bias, target = ctx.saved_tensors
        p = _chunk_probs(h, weight, bias, target) * (grad_loss / h.shape[0])
        return (torch.einsum("nv,vd->nd", p, weight), torch.einsum("nv,nd->vd", p, h),
                p.sum(0), None, None)

    @staticmethod
    def example_inputs():
        return _ce_inputs(6)
