"""Dropout with a saved mask, top-1 mixture-of-experts gating, centre loss, weight norm, a power
iteration step, 1-D max unpooling, and three deliberate estimators (Gumbel-softmax straight-through,
gradient reversal, a sigmoid surrogate for a step), with hand-written backwards (sequestered corpus)."""
import torch

P_DROP = 0.4


def _mask_like(x):
    gen = torch.Generator().manual_seed(61)  # the same mask on every call
    return (torch.rand(x.shape, generator=gen) >= P_DROP).to(x.dtype)


class SequesteredDropoutSavedMask(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        mask = _mask_like(x)
        ctx.save_for_backward(mask)
        return x * mask / (1 - P_DROP)

    @staticmethod
    def backward(ctx, grad_out):
        (mask,) = ctx.saved_tensors
        return grad_out * mask / (1 - P_DROP)


class SequesteredDropoutDroppedKept(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "the backward keeps the gradient where the mask dropped and zeroes it where it kept"}

    @staticmethod
    def forward(ctx, x):
        keep = _mask_like(x) > 0
        ctx.save_for_backward(keep)
        return x * keep / (1 - P_DROP)

    @staticmethod
    def backward(ctx, grad_out):
        (keep,) = ctx.saved_tensors
        return torch.where(keep, torch.zeros_like(grad_out), grad_out) / (1 - P_DROP)  # BUG


# --------------------------------------------------------------- top-1 mixture of experts
def _moe_inputs():
    gen = torch.Generator().manual_seed(62)
    return (torch.randn(4, 3, dtype=torch.float64, generator=gen),
            torch.randn(4, 3, 2, dtype=torch.float64, generator=gen))


def _moe_forward(ctx, logits, experts):
    p = torch.softmax(logits, dim=-1)
    top = p.argmax(dim=-1, keepdim=True)
    gate = p.gather(-1, top)
    chosen = experts.gather(1, top[:, :, None].expand(-1, -1, experts.shape[2])).squeeze(1)
    ctx.save_for_backward(p, top, gate, chosen)
    ctx.experts_shape = experts.shape
    return gate * chosen


class SequesteredTop1Experts(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, logits, experts):
        return _moe_forward(ctx, logits, experts)

    @staticmethod
    def backward(ctx, grad_out):
        p, top, gate, chosen = ctx.saved_tensors
        dgate = (grad_out * chosen).sum(-1, keepdim=True)
        onehot = torch.zeros_like(p).scatter_(-1, top, 1.0)
        dlogits = gate * (onehot - p) * dgate
        dexperts = grad_out.new_zeros(ctx.experts_shape)
        dexperts.scatter_(1, top[:, :, None].expand(-1, -1, grad_out.shape[1]), (gate * grad_out)[:, None, :])
        return dlogits, dexperts

    @staticmethod
    def example_inputs():
        return _moe_inputs()


class SequesteredTop1ExpertsGateFlipped(torch.autograd.Function):
    bug = {"kind": "sign", "input": "logits",
           "note": "the softmax derivative of the chosen gate is written p (p - onehot) instead of p (onehot - p)"}

    @staticmethod
    def forward(ctx, logits, experts):
        return _moe_forward(ctx, logits, experts)

    @staticmethod
    def backward(ctx, grad_out):
        p, top, gate, chosen = ctx.saved_tensors
        dgate = (grad_out * chosen).sum(-1, keepdim=True)
        onehot = torch.zeros_like(p).scatter_(-1, top, 1.0)
        dlogits = gate * (p - onehot) * dgate  # BUG
        dexperts = grad_out.new_zeros(ctx.experts_shape)
        dexperts.scatter_(1, top[:, :, None].expand(-1, -1, grad_out.shape[1]), (gate * grad_out)[:, None, :])
        return dlogits, dexperts

    @staticmethod
    def example_inputs():
        return _moe_inputs()


# ------------------------------------------------------------------------------- centre loss
def _centre_inputs():
    gen = torch.Generator().manual_seed(63)
    return (torch.randn(3, 2, dtype=torch.float64, generator=gen),
            torch.randn(3, 2, dtype=torch.float64, generator=gen),
            torch.tensor([0, 0, 2]))


class SequesteredCentreLoss(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, features, centres, labels):
        diff = features - centres[labels]
        ctx.save_for_backward(diff, labels)
        ctx.k = centres.shape[0]
        return 0.5 * (diff * diff).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        diff, labels = ctx.saved_tensors
        dfeat = grad_out[:, None] * diff
        dcentres = torch.zeros(ctx.k, diff.shape[1], dtype=diff.dtype).index_add_(0, labels, -dfeat)
        return dfeat, dcentres, None

    @staticmethod
    def example_inputs():
        return _centre_inputs()


class SequesteredCentreLossSwappedReturns(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "features",
           "note": "the features' and the centres' gradients are returned in each other's place"}

    @staticmethod
    def forward(ctx, features, centres, labels):
        diff = features - centres[labels]
        ctx.save_for_backward(diff, labels)
        ctx.k = centres.shape[0]
        return 0.5 * (diff * diff).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        diff, labels = ctx.saved_tensors
        dfeat = grad_out[:, None] * diff
        dcentres = torch.zeros(ctx.k, diff.shape[1], dtype=diff.dtype).index_add_(0, labels, -dfeat)
        return dcentres, dfeat, None  # BUG

    @staticmethod
    def example_inputs():
        return _centre_inputs()


# -------------------------------------------------------------------------------- weight norm
def _wn_inputs():
    gen = torch.Generator().manual_seed(64)
    return (torch.randn(3, 4, dtype=torch.float64, generator=gen),
            torch.rand(3, 1, dtype=torch.float64, generator=gen) + 0.5)


class SequesteredWeightNorm(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, v, g):
        norm = v.norm(dim=1, keepdim=True)
        ctx.save_for_backward(v, g, norm)
        return g * v / norm

    @staticmethod
    def backward(ctx, grad_out):
        v, g, norm = ctx.saved_tensors
        direction = v / norm
        along = (grad_out * direction).sum(dim=1, keepdim=True)
        dv = g / norm * (grad_out - direction * along) if ctx.needs_input_grad[0] else None
        dg = along if ctx.needs_input_grad[1] else None
        return dv, dg

    @staticmethod
    def example_inputs():
        return _wn_inputs()


class SequesteredWeightNormMagnitudeRaw(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "g",
           "note": "the magnitude's gradient projects on v instead of the unit direction v / |v|"}

    @staticmethod
    def forward(ctx, v, g):
        norm = v.norm(dim=1, keepdim=True)
        ctx.save_for_backward(v, g, norm)
        return g * v / norm

    @staticmethod
    def backward(ctx, grad_out):
        v, g, norm = ctx.saved_tensors
        direction = v / norm
        along = (grad_out * direction).sum(dim=1, keepdim=True)
        dv = g / norm * (grad_out - direction * along) if ctx.needs_input_grad[0] else None
        dg = (grad_out * v).sum(dim=1, keepdim=True) if ctx.needs_input_grad[1] else None  # BUG
        return dv, dg

    @staticmethod
    def example_inputs():
        return _wn_inputs()


# ------------------------------------------------------------------------ power iteration step
def _power_inputs():
    gen = torch.Generator().manual_seed(65)
    return (torch.randn(3, 3, dtype=torch.float64, generator=gen),
            torch.randn(3, dtype=torch.float64, generator=gen))


class SequesteredPowerStep(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, w, u):
        v = w.mT @ u
        norm = v.norm()
        out = v / norm
        ctx.save_for_backward(w, u, out, norm)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        w, u, out, norm = ctx.saved_tensors
        dv = (grad_out - out * (out @ grad_out)) / norm
        return torch.outer(u, dv), w @ dv

    @staticmethod
    def example_inputs():
        return _power_inputs()


class SequesteredPowerStepOuterReversed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "w",
           "note": "v = W^T u, so dW = u dv^T; the outer product is taken the other way round"}

    @staticmethod
    def forward(ctx, w, u):
        v = w.mT @ u
        norm = v.norm()
        out = v / norm
        ctx.save_for_backward(w, u, out, norm)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        w, u, out, norm = ctx.saved_tensors
        dv = (grad_out - out * (out @ grad_out)) / norm
        return torch.outer(dv, u), w @ dv  # BUG

    @staticmethod
    def example_inputs():
        return _power_inputs()


# -------------------------------------------------------------------------------- 1-D unpool
def _unpool_inputs():
    gen = torch.Generator().manual_seed(66)
    values = torch.randn(3, 2, dtype=torch.float64, generator=gen)
    where = torch.tensor([[0, 3], [1, 2], [1, 3]])  # argmax positions from a pool of width 2
    return values, where


class SequesteredMaxUnpool1d(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, values, where):
        ctx.save_for_backward(where)
        return values.new_zeros(values.shape[0], 2 * values.shape[1]).scatter(1, where, values)

    @staticmethod
    def backward(ctx, grad_out):
        (where,) = ctx.saved_tensors
        return grad_out.gather(1, where), None

    @staticmethod
    def example_inputs():
        return _unpool_inputs()


class SequesteredMaxUnpool1dDiscardedAdd(torch.autograd.Function):
    bug = {"kind": "zero", "input": "values",
           "note": "dvalues.add(...) returns a new tensor that is dropped, so the zeros are returned"}

    @staticmethod
    def forward(ctx, values, where):
        ctx.save_for_backward(where)
        ctx.shape = (values.shape[0], values.shape[1])
        return values.new_zeros(values.shape[0], 2 * values.shape[1]).scatter(1, where, values)

    @staticmethod
    def backward(ctx, grad_out):
        (where,) = ctx.saved_tensors
        dvalues = grad_out.new_zeros(ctx.shape)
        dvalues.add(grad_out.gather(1, where))  # BUG
        return dvalues, None

    @staticmethod
    def example_inputs():
        return _unpool_inputs()


# ---------------------------------------------------------------------- deliberate estimators
TAU = 0.5


class SequesteredGumbelSoftmaxST(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "logits",
           "note": "hard one-hot sample forward, the tempered softmax's Jacobian backward (deliberate)"}

    @staticmethod
    def forward(ctx, logits):
        gen = torch.Generator().manual_seed(67)
        u = torch.rand(logits.shape, generator=gen, dtype=logits.dtype).clamp(1e-6, 1 - 1e-6)
        soft = torch.softmax((logits - torch.log(-torch.log(u))) / TAU, dim=-1)
        ctx.save_for_backward(soft)
        return torch.zeros_like(soft).scatter_(-1, soft.argmax(-1, keepdim=True), 1.0)

    @staticmethod
    def backward(ctx, grad_out):
        (soft,) = ctx.saved_tensors
        return soft * (grad_out - (grad_out * soft).sum(-1, keepdim=True)) / TAU  # BUG


class SequesteredGradientReversal(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "identity forward, -0.3 times the gradient backward (a domain-adversarial layer, deliberate)"}

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad_out):
        return -0.3 * grad_out  # BUG


class SequesteredStepSigmoidSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "x",
           "note": "a Heaviside step forward, the derivative of sigmoid(5x) backward (a spiking surrogate, deliberate)"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x > 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(5 * x)
        return grad_out * 5 * s * (1 - s)  # BUG
