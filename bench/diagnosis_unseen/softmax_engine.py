"""Softmax-family Functions on gradcli's engine: softmax over dim 0, log-softmax, temperature
softmax, sparsemax.

Part of the blind corpus bench/diagnosis_unseen (see its README): score only, never design.
"""
import gradcli as torch


class ColumnSoftmax(torch.autograd.Function):
    """Softmax down each column (dim 0), as for attention over a sequence laid out (T, B)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        e = torch.exp(x - x.amax(0, keepdim=True))
        y = e / e.sum(0, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return y * (grad_out - (grad_out * y).sum(0, keepdim=True))


class ColumnSoftmaxRowReduction(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the Jacobian-vector correction sums over the last dim, copied from a row softmax"}

    @staticmethod
    def forward(ctx, x):
        e = torch.exp(x - x.amax(0, keepdim=True))
        y = e / e.sum(0, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return y * (grad_out - (grad_out * y).sum(-1, keepdim=True))  # BUG


class ColumnSoftmaxElementwise(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the elementwise sigmoid derivative y(1-y) written for a softmax"}

    @staticmethod
    def forward(ctx, x):
        e = torch.exp(x - x.amax(0, keepdim=True))
        y = e / e.sum(0, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return grad_out * y * (1 - y)  # BUG


class RowLogSoftmax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        out = x - torch.logsumexp(x, dim=1, keepdim=True)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        (out,) = ctx.saved_tensors
        return grad_out - out.exp() * grad_out.sum(dim=1, keepdim=True)


class RowLogSoftmaxLogProbsAsProbs(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the saved log-probabilities are used where their exp (the probabilities) is needed"}

    @staticmethod
    def forward(ctx, x):
        out = x - torch.logsumexp(x, dim=1, keepdim=True)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        (out,) = ctx.saved_tensors
        return grad_out - out * grad_out.sum(dim=1, keepdim=True)  # BUG


class RowLogSoftmaxPlusCorrection(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the softmax-weighted correction term is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x):
        out = x - torch.logsumexp(x, dim=1, keepdim=True)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        (out,) = ctx.saved_tensors
        probs = out.exp()
        correction = probs * grad_out.sum(dim=1, keepdim=True)
        return grad_out + correction  # BUG


def _tempered():
    g = torch.Generator().manual_seed(41)
    return torch.randn(3, 5, dtype=torch.float64, generator=g) * 2, 2.5


class TemperedSoftmax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, temperature):
        probs = torch.softmax(logits / temperature, dim=-1)
        ctx.save_for_backward(probs)
        ctx.temperature = temperature
        return probs

    @staticmethod
    def backward(ctx, grad_out):
        (probs,) = ctx.saved_tensors
        inner = probs * (grad_out - (probs * grad_out).sum(-1, keepdim=True))
        return inner / ctx.temperature, None

    @staticmethod
    def example_inputs():
        return _tempered()


class TemperedSoftmaxNoChainRule(torch.autograd.Function):
    bug = {"kind": "scale", "input": "logits",
           "note": "the 1/temperature of the inner division is not applied in backward"}

    @staticmethod
    def forward(ctx, logits, temperature):
        probs = torch.softmax(logits / temperature, dim=-1)
        ctx.save_for_backward(probs)
        ctx.temperature = temperature
        return probs

    @staticmethod
    def backward(ctx, grad_out):
        (probs,) = ctx.saved_tensors
        inner = probs * (grad_out - (probs * grad_out).sum(-1, keepdim=True))
        return inner, None  # BUG

    @staticmethod
    def example_inputs():
        return _tempered()


def sparsemax_rows(z):
    """Euclidean projection of each row onto the simplex (Martins & Astudillo, 2016)."""
    srt, _ = torch.sort(z, dim=1, descending=True)
    k = torch.arange(1, z.shape[1] + 1, dtype=z.dtype)
    cum = srt.cumsum(1)
    support = (1 + k * srt > cum).to(z.dtype)
    k_z = support.sum(1, keepdim=True)
    tau = ((srt * support).sum(1, keepdim=True) - 1) / k_z
    return torch.clamp(z - tau, min=0)


def _sparse_inputs():
    # rows whose supports hold 1, 2, 3 and 4 entries, every entry at least 0.05 from tau
    return (torch.tensor([[2.0, 0.1, -0.5, 0.3, -1.0],
                          [0.9, 1.1, -0.2, 0.0, 0.35],
                          [0.5, 0.6, 0.7, -0.8, 0.2],
                          [0.4, 0.3, 0.55, 0.45, -0.9]], dtype=torch.float64),)


class Sparsemax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, z):
        p = sparsemax_rows(z)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        s = (p > 0).to(p.dtype)
        v = (grad_out * s).sum(1, keepdim=True) / s.sum(1, keepdim=True)
        return s * (grad_out - v)

    @staticmethod
    def example_inputs():
        return _sparse_inputs()


class SparsemaxGradOffSupport(torch.autograd.Function):
    bug = {"kind": "region", "input": "z",
           "note": "the result is not masked by the support: zeroed outputs still pass grad_out - v"}

    @staticmethod
    def forward(ctx, z):
        p = sparsemax_rows(z)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        s = (p > 0).to(p.dtype)
        v = (grad_out * s).sum(1, keepdim=True) / s.sum(1, keepdim=True)
        return grad_out - v  # BUG

    @staticmethod
    def example_inputs():
        return _sparse_inputs()
