"""Softmax, log-softmax and scaled dot-product attention softmax(q kᵀ / √d) v, torch-style on
gradcli's engine. ``bug`` is each class's true bug; ``bug = None`` marks a correct twin.
"""
import math

import gradcli as torch


# ----------------------------------------------------------------------------------- softmax
class Softmax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        e = torch.exp(x - x.amax(-1, keepdim=True))
        y = e / e.sum(-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return y * (grad_output - (grad_output * y).sum(-1, keepdim=True))


class SoftmaxWrongAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the Jacobian's dot product sums over dim 0, softmax is over the last dim"}

    @staticmethod
    def forward(ctx, x):
        e = torch.exp(x - x.amax(-1, keepdim=True))
        y = e / e.sum(-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return y * (grad_output - (grad_output * y).sum(0, keepdim=True))  # BUG


class SoftmaxUsesInput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "backward uses the input x where the softmax output y is needed"}

    @staticmethod
    def forward(ctx, x):
        e = torch.exp(x - x.amax(-1, keepdim=True))
        y = e / e.sum(-1, keepdim=True)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return x * (grad_output - (grad_output * x).sum(-1, keepdim=True))  # BUG


class SoftmaxDiagonalOnly(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "uses the elementwise sigmoid-style y(1-y): only the Jacobian's diagonal"}

    @staticmethod
    def forward(ctx, x):
        e = torch.exp(x - x.amax(-1, keepdim=True))
        y = e / e.sum(-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y * (1 - y)  # BUG


# ------------------------------------------------------------------------------- log-softmax
class LogSoftmax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = x - torch.logsumexp(x, dim=-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output - torch.exp(y) * grad_output.sum(-1, keepdim=True)


class LogSoftmaxMissingTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "returns grad_output alone: the -softmax * sum(grad_output) term is missing"}

    @staticmethod
    def forward(ctx, x):
        y = x - torch.logsumexp(x, dim=-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        grad_x = grad_output.clone()  # BUG
        return grad_x


class LogSoftmaxTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the softmax term is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x):
        y = x - torch.logsumexp(x, dim=-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output + torch.exp(y) * grad_output.sum(-1, keepdim=True)  # BUG


class LogSoftmaxUsesLogProbs(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "multiplies by the output log p where the probabilities p = exp(y) are needed"}

    @staticmethod
    def forward(ctx, x):
        y = x - torch.logsumexp(x, dim=-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output - y * grad_output.sum(-1, keepdim=True)  # BUG


# --------------------------------------------------------------------------------- attention
def _attention_inputs(nq=3, nk=5, d=4, dv=2):
    q = torch.randn(nq, d, requires_grad=True)
    k = torch.randn(nk, d, requires_grad=True)
    v = torch.randn(nk, dv, requires_grad=True)
    return (q, k, v)


def _attention_forward(ctx, q, k, v):
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = q @ k.t() * scale
    e = torch.exp(s - s.amax(-1, keepdim=True))
    p = e / e.sum(-1, keepdim=True)
    ctx.save_for_backward(q, k, v, p)
    ctx.scale = scale
    return p @ v


class Attention(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, q, k, v):
        return _attention_forward(ctx, q, k, v)

    @staticmethod
    def backward(ctx, grad_output):
        q, k, v, p = ctx.saved_tensors
        dp = grad_output @ v.t()
        dv = p.t() @ grad_output
        ds = p * (dp - (dp * p).sum(-1, keepdim=True))
        dq = ds @ k * ctx.scale
        dk = ds.t() @ q * ctx.scale
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _attention_inputs()


class AttentionMissingScale(torch.autograd.Function):
    bug = {"kind": "scale", "input": "q",
           "note": "dq forgets the 1/sqrt(d) of the scores (2x too large at d = 4)"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _attention_forward(ctx, q, k, v)

    @staticmethod
    def backward(ctx, grad_output):
        q, k, v, p = ctx.saved_tensors
        dp = grad_output @ v.t()
        dv = p.t() @ grad_output
        ds = p * (dp - (dp * p).sum(-1, keepdim=True))
        dq = ds @ k  # BUG
        dk = ds.t() @ q * ctx.scale
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _attention_inputs()


class AttentionKeyTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "k",
           "note": "dk = ds @ q where dsᵀ @ q is needed (square scores, so shapes agree)"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _attention_forward(ctx, q, k, v)

    @staticmethod
    def backward(ctx, grad_output):
        q, k, v, p = ctx.saved_tensors
        dp = grad_output @ v.t()
        dv = p.t() @ grad_output
        ds = p * (dp - (dp * p).sum(-1, keepdim=True))
        dq = ds @ k * ctx.scale
        dk = ds @ q * ctx.scale  # BUG
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _attention_inputs(nq=4, nk=4, d=4, dv=3)


class AttentionSkipsSoftmaxBackward(torch.autograd.Function):
    bug = {"kind": "none", "input": "q",
           "note": "the scores' gradient is taken as dp itself: the softmax backward is skipped"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _attention_forward(ctx, q, k, v)

    @staticmethod
    def backward(ctx, grad_output):
        q, k, v, p = ctx.saved_tensors
        dp = grad_output @ v.t()
        dv = p.t() @ grad_output
        ds = dp  # BUG
        dq = ds @ k * ctx.scale
        dk = ds.t() @ q * ctx.scale
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _attention_inputs()


class AttentionSoftmaxWrongAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "q",
           "note": "the softmax backward sums dp * p over the query dim 0 instead of the key dim"}

    @staticmethod
    def forward(ctx, q, k, v):
        return _attention_forward(ctx, q, k, v)

    @staticmethod
    def backward(ctx, grad_output):
        q, k, v, p = ctx.saved_tensors
        dp = grad_output @ v.t()
        dv = p.t() @ grad_output
        ds = p * (dp - (dp * p).sum(0, keepdim=True))  # BUG
        dq = ds @ k * ctx.scale
        dk = ds.t() @ q * ctx.scale
        return dq, dk, dv

    @staticmethod
    def example_inputs():
        return _attention_inputs()
