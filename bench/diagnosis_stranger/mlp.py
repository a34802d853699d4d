"""Hand-written MLP pieces: a linear layer with bias by matmul, a bilinear layer, maxout, a highway
layer, a low-rank adapter x·A·B, and a gradient-reversal layer (a deliberate estimator)."""
import torch


def _seeded(seed):
    return torch.Generator().manual_seed(seed)


def _linear_inputs():
    gen = _seeded(101)
    return (torch.randn(3, 4, dtype=torch.float64, generator=gen),
            torch.randn(4, 4, dtype=torch.float64, generator=gen),
            torch.randn(4, dtype=torch.float64, generator=gen))


def _reduce_batch(grad):
    return grad.sum(dim=0)


class StrangerLinearBias(torch.autograd.Function):
    """y = x @ W + b, W stored (in_features, out_features)."""

    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return x @ weight + bias

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = grad_out @ weight.t()
        if ctx.needs_input_grad[1]:
            grad_w = x.t() @ grad_out
        if ctx.needs_input_grad[2]:
            grad_b = _reduce_batch(grad_out)
        return grad_x, grad_w, grad_b

    @staticmethod
    def example_inputs():
        return _linear_inputs()


class StrangerLinearBiasUntransposedWeight(torch.autograd.Function):
    """The same layer kept on ctx attributes, written with torch.matmul."""

    bug = {"kind": "transposed", "input": "x",
           "note": "the input gradient multiplies grad_out by W itself instead of W^T"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.inp = x
        ctx.weight = weight
        out = torch.matmul(x, weight)
        return out + bias.unsqueeze(0)

    @staticmethod
    def backward(ctx, grad_out):
        grad_input = torch.matmul(grad_out, ctx.weight)  # BUG
        grad_weight = torch.matmul(ctx.inp.transpose(0, 1), grad_out)
        grad_bias = grad_out.sum(0)
        return grad_input, grad_weight, grad_bias

    @staticmethod
    def example_inputs():
        return _linear_inputs()


def _bilinear_inputs():
    gen = _seeded(102)
    return (torch.randn(3, 4, dtype=torch.float64, generator=gen),
            torch.randn(3, 4, dtype=torch.float64, generator=gen),
            torch.randn(2, 4, 4, dtype=torch.float64, generator=gen),
            torch.randn(2, dtype=torch.float64, generator=gen))


class StrangerBilinear(torch.autograd.Function):
    """y[n, k] = x1[n] . A[k] . x2[n] + b[k] (nn.Bilinear by einsum)."""

    bug = None

    @staticmethod
    def forward(ctx, x1, x2, weight, bias):
        ctx.save_for_backward(x1, x2, weight)
        return torch.einsum("ni,kij,nj->nk", x1, weight, x2) + bias

    @staticmethod
    def backward(ctx, grad_out):
        x1, x2, weight = ctx.saved_tensors
        grad_x1 = torch.einsum("nk,kij,nj->ni", grad_out, weight, x2)
        grad_x2 = torch.einsum("nk,kij,ni->nj", grad_out, weight, x1)
        grad_weight = torch.einsum("nk,ni,nj->kij", grad_out, x1, x2)
        return grad_x1, grad_x2, grad_weight, grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _bilinear_inputs()


class StrangerBilinearLoopReturnsOutOfOrder(torch.autograd.Function):
    """The bilinear layer with a Python loop over output features."""

    bug = {"kind": "swapped", "input": "x1",
           "note": "both input gradients are right but returned in the order (x2, x1)"}

    @staticmethod
    def forward(ctx, x1, x2, weight, bias):
        ctx.save_for_backward(x1, x2, weight)
        out = torch.stack([((x1 @ weight[k]) * x2).sum(-1) for k in range(weight.shape[0])], dim=1)
        return out + bias

    @staticmethod
    def backward(ctx, grad_out):
        x1, x2, weight = ctx.saved_tensors
        gx1 = torch.zeros_like(x1)
        gx2 = torch.zeros_like(x2)
        gw = torch.empty_like(weight)
        for k in range(weight.shape[0]):
            gk = grad_out[:, k:k + 1]
            gx1 += gk * (x2 @ weight[k].T)
            gx2 += gk * (x1 @ weight[k])
            gw[k] = (gk * x1).T @ x2
        return gx2, gx1, gw, grad_out.sum(0)  # BUG

    @staticmethod
    def example_inputs():
        return _bilinear_inputs()


class StrangerMaxout(torch.autograd.Function):
    """Maxout: features grouped in pieces of PIECES, the max of each group."""

    bug = None
    PIECES = 2

    @staticmethod
    def forward(ctx, x):
        grouped = x.view(x.shape[0], -1, StrangerMaxout.PIECES)
        out, winner = grouped.max(dim=-1)
        ctx.save_for_backward(winner)
        ctx.in_shape = x.shape
        return out

    @staticmethod
    def backward(ctx, grad_out):
        (winner,) = ctx.saved_tensors
        grad = torch.zeros(grad_out.shape + (StrangerMaxout.PIECES,), dtype=grad_out.dtype)
        grad.scatter_(-1, winner.unsqueeze(-1), grad_out.unsqueeze(-1))
        return grad.view(ctx.in_shape)

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 6, dtype=torch.float64, generator=_seeded(103)),)


class StrangerMaxoutMaskOverUnits(torch.autograd.Function):
    """Maxout whose backward rebuilds the winner mask from the saved input."""

    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the winner mask compares each entry with the max over units (dim 1), not over "
                   "the pieces of its group (dim -1)"}

    @staticmethod
    def forward(ctx, x):
        n, width = x.shape
        grouped = x.reshape(n, width // 2, 2)
        ctx.save_for_backward(grouped)
        return grouped.amax(dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        (grouped,) = ctx.saved_tensors
        mask = grouped == grouped.amax(dim=1, keepdim=True)  # BUG
        grad = mask.to(grad_out.dtype) * grad_out.unsqueeze(-1)
        return grad.reshape(grouped.shape[0], -1)

    @staticmethod
    def example_inputs():
        return (torch.randn(3, 6, dtype=torch.float64, generator=_seeded(103)),)


def _highway_inputs():
    gen = _seeded(104)
    return (torch.randn(3, 4, dtype=torch.float64, generator=gen),
            torch.randn(4, 4, dtype=torch.float64, generator=gen) * 0.7,
            torch.randn(4, 4, dtype=torch.float64, generator=gen) * 0.7,
            torch.randn(4, dtype=torch.float64, generator=gen))


def _through_tanh(grad, h):
    return grad * (1 - h * h)


def _through_sigmoid(grad, t):
    return grad * t * (1 - t)


class StrangerHighway(torch.autograd.Function):
    """Highway layer: y = t * tanh(x Wh) + (1 - t) * x, t = sigmoid(x Wt + bt)."""

    bug = None

    @staticmethod
    def forward(ctx, x, w_h, w_t, b_t):
        h = torch.tanh(x @ w_h)
        t = torch.sigmoid(x @ w_t + b_t)
        ctx.save_for_backward(x, w_h, w_t, h, t)
        return t * h + (1 - t) * x

    @staticmethod
    def backward(ctx, grad_out):
        x, w_h, w_t, h, t = ctx.saved_tensors
        d_pre_h = _through_tanh(grad_out * t, h)
        d_pre_t = _through_sigmoid(grad_out * (h - x), t)
        grad_x = d_pre_h @ w_h.T + d_pre_t @ w_t.T + grad_out * (1 - t)
        return grad_x, x.T @ d_pre_h, x.T @ d_pre_t, d_pre_t.sum(0)

    @staticmethod
    def example_inputs():
        return _highway_inputs()


class StrangerHighwayTransformPathUntransposed(torch.autograd.Function):
    """Highway layer, backward written path by path."""

    bug = {"kind": "transposed", "input": "x",
           "note": "the transform path's contribution to grad_x uses Wh instead of Wh^T"}

    @staticmethod
    def forward(ctx, x, w_h, w_t, b_t):
        h = torch.tanh(x @ w_h)
        t = torch.sigmoid(x @ w_t + b_t)
        ctx.save_for_backward(x, w_h, w_t, h, t)
        return t * h + (1 - t) * x

    @staticmethod
    def backward(ctx, grad_out):
        x, w_h, w_t, h, t = ctx.saved_tensors
        # transform path
        d_pre_h = _through_tanh(grad_out * t, h)
        via_transform = d_pre_h @ w_h  # BUG
        # gate path
        d_pre_t = _through_sigmoid(grad_out * (h - x), t)
        via_gate = d_pre_t @ w_t.T
        # carry path
        via_carry = grad_out * (1 - t)
        grad_x = via_transform + via_gate + via_carry
        return grad_x, x.T @ d_pre_h, x.T @ d_pre_t, d_pre_t.sum(0)

    @staticmethod
    def example_inputs():
        return _highway_inputs()


class StrangerHighwayGateCarrySign(torch.autograd.Function):
    """Highway layer whose gate gradient is derived from y = x + t * (h - x) by hand."""

    bug = {"kind": "term_sign", "input": "w_t",
           "note": "dy/dt is h - x; the carry's -x term is added with a plus sign (h + x)"}

    @staticmethod
    def forward(ctx, x, w_h, w_t, b_t):
        h = torch.tanh(x @ w_h)
        t = torch.sigmoid(x @ w_t + b_t)
        ctx.save_for_backward(x, w_h, w_t, h, t)
        return x + t * (h - x)

    @staticmethod
    def backward(ctx, grad_out):
        x, w_h, w_t, h, t = ctx.saved_tensors
        grad_gate = grad_out * (h + x)  # BUG
        d_pre_t = grad_gate * t * (1.0 - t)
        d_pre_h = grad_out * t * (1.0 - h ** 2)
        grad_x = grad_out * (1.0 - t) + d_pre_h @ w_h.T + d_pre_t @ w_t.T
        grad_w_h = torch.einsum("ni,nj->ij", x, d_pre_h)
        grad_w_t = torch.einsum("ni,nj->ij", x, d_pre_t)
        return grad_x, grad_w_h, grad_w_t, d_pre_t.sum(0)

    @staticmethod
    def example_inputs():
        return _highway_inputs()


def _lora_inputs():
    gen = _seeded(105)
    return (torch.randn(3, 4, dtype=torch.float64, generator=gen),
            torch.randn(4, 2, dtype=torch.float64, generator=gen),
            torch.randn(2, 4, dtype=torch.float64, generator=gen))


class StrangerLowRankAdapter(torch.autograd.Function):
    """LoRA update: y = (alpha / r) * x @ A @ B with alpha = 4, r = 2."""

    bug = None
    SCALING = 4.0 / 2

    @staticmethod
    def forward(ctx, x, lora_a, lora_b):
        hidden = x @ lora_a
        ctx.save_for_backward(x, lora_a, lora_b, hidden)
        return StrangerLowRankAdapter.SCALING * (hidden @ lora_b)

    @staticmethod
    def backward(ctx, grad_out):
        x, lora_a, lora_b, hidden = ctx.saved_tensors
        scaled = grad_out * StrangerLowRankAdapter.SCALING
        grad_hidden = scaled @ lora_b.T
        return grad_hidden @ lora_a.T, x.T @ grad_hidden, hidden.T @ scaled

    @staticmethod
    def example_inputs():
        return _lora_inputs()


class StrangerLowRankAdapterUnscaledB(torch.autograd.Function):
    """LoRA update whose scaling is folded into the hidden activations in backward."""

    bug = {"kind": "scale", "input": "lora_b",
           "note": "B's gradient forgets the alpha / r scaling the forward applies"}

    @staticmethod
    def forward(ctx, x, lora_a, lora_b):
        ctx.scaling = 2.0
        ctx.save_for_backward(x, lora_a, lora_b)
        return ctx.scaling * (x @ lora_a @ lora_b)

    @staticmethod
    def backward(ctx, grad_out):
        x, lora_a, lora_b = ctx.saved_tensors
        hidden = x @ lora_a
        grad_b = hidden.T @ grad_out  # BUG
        grad_hidden = ctx.scaling * (grad_out @ lora_b.T)
        grad_a = x.T @ grad_hidden
        grad_x = grad_hidden @ lora_a.T
        return grad_x, grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _lora_inputs()


class StrangerLowRankAdapterFrozenInput(torch.autograd.Function):
    """LoRA update whose author thought only the adapter weights need gradients."""

    bug = {"kind": "zero", "input": "x",
           "note": "returns None for x (treated as frozen activations) though x needs a gradient"}

    @staticmethod
    def forward(ctx, x, lora_a, lora_b):
        ctx.save_for_backward(x, lora_a, lora_b)
        return 2.0 * torch.matmul(torch.matmul(x, lora_a), lora_b)

    @staticmethod
    def backward(ctx, grad_out):
        x, lora_a, lora_b = ctx.saved_tensors
        g = 2.0 * grad_out
        grad_a = grad_b = None
        if ctx.needs_input_grad[1]:
            grad_a = x.t() @ (g @ lora_b.t())
        if ctx.needs_input_grad[2]:
            grad_b = (x @ lora_a).t() @ g
        grad_x = None  # BUG
        return grad_x, grad_a, grad_b

    @staticmethod
    def example_inputs():
        return _lora_inputs()


class StrangerDomainGradientReversal(torch.autograd.Function):
    """Gradient reversal layer of domain-adversarial training (identity forward)."""

    bug = {"kind": "gradient_reversal", "input": "features",
           "note": "deliberate: backward returns -lambda * grad_out for an identity forward"}
    LAMBDA = 0.3

    @staticmethod
    def forward(ctx, features):
        return features.view_as(features)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.neg() * StrangerDomainGradientReversal.LAMBDA  # BUG
