"""Mixture-of-experts pieces: top-k gating with gather/scatter and renormalised weights, a dispatch
that sorts tokens by expert id, per-expert linear layers picked by integer ids (with repeats), and
a gradient-reversal layer in front of the router.
"""
import torch


# ------------------------------------------------------------------------ top-2 combine
def _topk_inputs():
    gen = torch.Generator().manual_seed(31)
    logits = torch.randn(4, 4, generator=gen, dtype=torch.float64) * 2
    experts = torch.randn(4, 4, 3, generator=gen, dtype=torch.float64)
    return logits, experts


def _topk_forward(ctx, logits, experts):
    top, idx = logits.topk(2, dim=1)
    gates = torch.softmax(top, dim=1)  # renormalised over the selected experts
    index = idx[:, :, None].expand(-1, -1, experts.shape[2])
    chosen = experts.gather(1, index)
    ctx.save_for_backward(logits, gates, idx, chosen)
    ctx.experts_shape = experts.shape
    return (gates[:, :, None] * chosen).sum(1)


class ElsewhereTopKCombine(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, experts):
        return _topk_forward(ctx, logits, experts)

    @staticmethod
    def backward(ctx, grad_y):
        logits, gates, idx, chosen = ctx.saved_tensors
        grad_gates = (chosen * grad_y[:, None, :]).sum(2)
        grad_top = gates * (grad_gates - (gates * grad_gates).sum(1, keepdim=True))
        grad_logits = torch.zeros_like(logits).scatter_(1, idx, grad_top)
        index = idx[:, :, None].expand(-1, -1, ctx.experts_shape[2])
        grad_chosen = gates[:, :, None] * grad_y[:, None, :]
        grad_experts = grad_y.new_zeros(ctx.experts_shape).scatter_(1, index, grad_chosen)
        return grad_logits, grad_experts

    @staticmethod
    def example_inputs():
        return _topk_inputs()


class ElsewhereTopKFullSoftmax(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "logits",
           "note": "the softmax backward uses the full softmax's probabilities of the chosen experts, not the renormalised gates"}

    @staticmethod
    def forward(ctx, logits, experts):
        return _topk_forward(ctx, logits, experts)

    @staticmethod
    def backward(ctx, grad_y):
        logits, gates, idx, chosen = ctx.saved_tensors
        probs = torch.softmax(logits, dim=1).gather(1, idx)
        grad_gates = (chosen * grad_y[:, None, :]).sum(2)
        grad_top = probs * (grad_gates - (probs * grad_gates).sum(1, keepdim=True))  # BUG
        grad_logits = torch.zeros_like(logits).scatter_(1, idx, grad_top)
        index = idx[:, :, None].expand(-1, -1, ctx.experts_shape[2])
        grad_chosen = gates[:, :, None] * grad_y[:, None, :]
        grad_experts = grad_y.new_zeros(ctx.experts_shape).scatter_(1, index, grad_chosen)
        return grad_logits, grad_experts

    @staticmethod
    def example_inputs():
        return _topk_inputs()


class ElsewhereTopKNoCentring(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "logits",
           "note": "the renormalising softmax's backward drops the -gates * sum(gates * dL/dgates) term"}

    @staticmethod
    def forward(ctx, logits, experts):
        return _topk_forward(ctx, logits, experts)

    @staticmethod
    def backward(ctx, grad_y):
        logits, gates, idx, chosen = ctx.saved_tensors
        grad_gates = (chosen * grad_y[:, None, :]).sum(2)
        grad_top = gates * grad_gates  # BUG
        grad_logits = torch.zeros_like(logits).scatter_(1, idx, grad_top)
        index = idx[:, :, None].expand(-1, -1, ctx.experts_shape[2])
        grad_chosen = gates[:, :, None] * grad_y[:, None, :]
        grad_experts = grad_y.new_zeros(ctx.experts_shape).scatter_(1, index, grad_chosen)
        return grad_logits, grad_experts

    @staticmethod
    def example_inputs():
        return _topk_inputs()


class ElsewhereTopKCentreAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "logits",
           "note": "the softmax backward's inner sum runs over the batch (dim 0) instead of the k chosen experts"}

    @staticmethod
    def forward(ctx, logits, experts):
        return _topk_forward(ctx, logits, experts)

    @staticmethod
    def backward(ctx, grad_y):
        logits, gates, idx, chosen = ctx.saved_tensors
        grad_gates = (chosen * grad_y[:, None, :]).sum(2)
        grad_top = gates * (grad_gates - (gates * grad_gates).sum(0, keepdim=True))  # BUG
        grad_logits = torch.zeros_like(logits).scatter_(1, idx, grad_top)
        index = idx[:, :, None].expand(-1, -1, ctx.experts_shape[2])
        grad_chosen = gates[:, :, None] * grad_y[:, None, :]
        grad_experts = grad_y.new_zeros(ctx.experts_shape).scatter_(1, index, grad_chosen)
        return grad_logits, grad_experts

    @staticmethod
    def example_inputs():
        return _topk_inputs()


class ElsewhereTopKScatterDropped(torch.autograd.Function):
    bug = {"kind": "zero", "input": "experts",
           "note": "out-of-place scatter's result is discarded, so the experts' gradient stays all zeros"}

    @staticmethod
    def forward(ctx, logits, experts):
        return _topk_forward(ctx, logits, experts)

    @staticmethod
    def backward(ctx, grad_y):
        logits, gates, idx, chosen = ctx.saved_tensors
        grad_gates = (chosen * grad_y[:, None, :]).sum(2)
        grad_top = gates * (grad_gates - (gates * grad_gates).sum(1, keepdim=True))
        grad_logits = torch.zeros_like(logits).scatter_(1, idx, grad_top)
        index = idx[:, :, None].expand(-1, -1, ctx.experts_shape[2])
        grad_chosen = gates[:, :, None] * grad_y[:, None, :]
        grad_experts = grad_y.new_zeros(ctx.experts_shape)
        grad_experts.scatter(1, index, grad_chosen)  # BUG
        return grad_logits, grad_experts

    @staticmethod
    def example_inputs():
        return _topk_inputs()


class ElsewhereTopKGateOnly(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "experts",
           "note": "each chosen expert's gradient is its gate broadcast over features, never multiplied by grad_y"}

    @staticmethod
    def forward(ctx, logits, experts):
        return _topk_forward(ctx, logits, experts)

    @staticmethod
    def backward(ctx, grad_y):
        logits, gates, idx, chosen = ctx.saved_tensors
        grad_gates = (chosen * grad_y[:, None, :]).sum(2)
        grad_top = gates * (grad_gates - (gates * grad_gates).sum(1, keepdim=True))
        grad_logits = torch.zeros_like(logits).scatter_(1, idx, grad_top)
        index = idx[:, :, None].expand(-1, -1, ctx.experts_shape[2])
        grad_chosen = gates[:, :, None].expand(-1, -1, ctx.experts_shape[2])  # BUG
        grad_experts = grad_y.new_zeros(ctx.experts_shape).scatter_(1, index, grad_chosen)
        return grad_logits, grad_experts

    @staticmethod
    def example_inputs():
        return _topk_inputs()


# ------------------------------------------------------- dispatch sorted by expert id
def _dispatch_inputs():
    gen = torch.Generator().manual_seed(32)
    x = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    scale = torch.randn(3, 3, generator=gen, dtype=torch.float64)
    expert_id = torch.tensor([2, 0, 1, 0, 2, 0], dtype=torch.int64)
    return x, scale, expert_id


def _dispatch_forward(ctx, x, scale, expert_id):
    order = torch.argsort(expert_id, stable=True)
    xs = x[order]
    es = expert_id[order]
    ys = xs * scale[es]
    y = torch.empty_like(x)
    y[order] = ys
    ctx.save_for_backward(xs, scale, es, order)
    return y


class ElsewhereSortedDispatch(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, scale, expert_id):
        return _dispatch_forward(ctx, x, scale, expert_id)

    @staticmethod
    def backward(ctx, grad_y):
        xs, scale, es, order = ctx.saved_tensors
        gs = grad_y[order]
        grad_xs = gs * scale[es]
        grad_x = torch.empty_like(grad_xs)
        grad_x[order] = grad_xs
        grad_scale = torch.zeros_like(scale).index_add_(0, es, gs * xs)
        return grad_x, grad_scale, None

    @staticmethod
    def example_inputs():
        return _dispatch_inputs()


class ElsewhereSortedDispatchNoUnsort(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x",
           "note": "the token gradient is left in expert-sorted order, the permutation back to token order is missing"}

    @staticmethod
    def forward(ctx, x, scale, expert_id):
        return _dispatch_forward(ctx, x, scale, expert_id)

    @staticmethod
    def backward(ctx, grad_y):
        xs, scale, es, order = ctx.saved_tensors
        gs = grad_y[order]
        grad_x = gs * scale[es]  # BUG
        grad_scale = torch.zeros_like(scale).index_add_(0, es, gs * xs)
        return grad_x, grad_scale, None

    @staticmethod
    def example_inputs():
        return _dispatch_inputs()


class ElsewhereSortedDispatchScatter(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "scale",
           "note": "scatter_ instead of scatter_add_: tokens routed to the same expert overwrite each other's gradient"}

    @staticmethod
    def forward(ctx, x, scale, expert_id):
        return _dispatch_forward(ctx, x, scale, expert_id)

    @staticmethod
    def backward(ctx, grad_y):
        xs, scale, es, order = ctx.saved_tensors
        gs = grad_y[order]
        grad_xs = gs * scale[es]
        grad_x = torch.empty_like(grad_xs)
        grad_x[order] = grad_xs
        index = es[:, None].expand(-1, scale.shape[1])
        grad_scale = torch.zeros_like(scale).scatter_(0, index, gs * xs)  # BUG
        return grad_x, grad_scale, None

    @staticmethod
    def example_inputs():
        return _dispatch_inputs()


# -------------------------------------------------------------- per-expert linear layers
def _linear_inputs():
    gen = torch.Generator().manual_seed(33)
    x = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    weight = torch.randn(2, 3, 3, generator=gen, dtype=torch.float64)
    expert_id = torch.tensor([1, 0, 1, 1, 0], dtype=torch.int64)
    return x, weight, expert_id


class ElsewhereExpertLinear(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, weight, expert_id):
        w = weight[expert_id]  # (N, in, out)
        ctx.save_for_backward(x, weight, expert_id)
        return (x[:, None, :] @ w).squeeze(1)

    @staticmethod
    def backward(ctx, grad_y):
        x, weight, expert_id = ctx.saved_tensors
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = (grad_y[:, None, :] @ weight[expert_id].mT).squeeze(1)
        if ctx.needs_input_grad[1]:
            per_token = torch.einsum("ni,no->nio", x, grad_y)
            grad_w = torch.zeros_like(weight).index_add_(0, expert_id, per_token)
        return grad_x, grad_w, None

    @staticmethod
    def example_inputs():
        return _linear_inputs()


class ElsewhereExpertLinearNoTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "the input gradient multiplies grad_y by the expert's W instead of W^T (square experts hide the shape)"}

    @staticmethod
    def forward(ctx, x, weight, expert_id):
        w = weight[expert_id]
        ctx.save_for_backward(x, weight, expert_id)
        return (x[:, None, :] @ w).squeeze(1)

    @staticmethod
    def backward(ctx, grad_y):
        x, weight, expert_id = ctx.saved_tensors
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = (grad_y[:, None, :] @ weight[expert_id]).squeeze(1)  # BUG
        if ctx.needs_input_grad[1]:
            per_token = torch.einsum("ni,no->nio", x, grad_y)
            grad_w = torch.zeros_like(weight).index_add_(0, expert_id, per_token)
        return grad_x, grad_w, None

    @staticmethod
    def example_inputs():
        return _linear_inputs()


class ElsewhereExpertLinearAssign(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "weight",
           "note": "per-token weight gradients are written by indexed assignment, so the last token of each expert wins"}

    @staticmethod
    def forward(ctx, x, weight, expert_id):
        w = weight[expert_id]
        ctx.save_for_backward(x, weight, expert_id)
        return (x[:, None, :] @ w).squeeze(1)

    @staticmethod
    def backward(ctx, grad_y):
        x, weight, expert_id = ctx.saved_tensors
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = (grad_y[:, None, :] @ weight[expert_id].mT).squeeze(1)
        if ctx.needs_input_grad[1]:
            grad_w = torch.zeros_like(weight)
            grad_w[expert_id] = torch.einsum("ni,no->nio", x, grad_y)  # BUG
        return grad_x, grad_w, None

    @staticmethod
    def example_inputs():
        return _linear_inputs()


# ------------------------------------------------------------------ gradient reversal
class ElsewhereRouterGradReverse(torch.autograd.Function):
    """Identity forward; backward flips the gradient so the features learn to confuse an
    expert-id classifier (domain-adversarial training in front of the router)."""

    bug = {"kind": "gradient_reversal", "input": "features",
           "note": "deliberate: the backward negates and scales the identity's gradient"}

    @staticmethod
    def forward(ctx, features, strength):
        ctx.strength = strength
        return features.view_as(features)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.neg() * ctx.strength, None  # BUG

    @staticmethod
    def example_inputs():
        gen = torch.Generator().manual_seed(34)
        return torch.randn(3, 4, generator=gen, dtype=torch.float64), 0.5
