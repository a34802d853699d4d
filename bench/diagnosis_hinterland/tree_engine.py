import gradcli as torch

"""A soft decision stump (sigmoid routing between two leaf values, learned threshold) and a
GLU-style feature gate for tabular inputs, on gradcli's numpy engine (runs without PyTorch)."""


# ------------------------------------------------------------------------ soft stump
def _stump_inputs():
    gen = torch.Generator().manual_seed(1101)
    x = torch.randn(4, 3, dtype=torch.float64, generator=gen)
    w = torch.randn(3, dtype=torch.float64, generator=gen)
    thr = torch.tensor([0.3], dtype=torch.float64)
    leaves = torch.tensor([1.5, -0.8], dtype=torch.float64)
    return x, w, thr, leaves


class HinterlandSoftStump(torch.autograd.Function):
    """p = sigmoid(x @ w - thr); y = p * leaves[0] + (1 - p) * leaves[1]."""

    bug = None

    @staticmethod
    def forward(ctx, x, w, thr, leaves):
        p = torch.sigmoid(x @ w - thr)
        ctx.save_for_backward(x, w, p, leaves)
        return p * leaves[0] + (1 - p) * leaves[1]

    @staticmethod
    def backward(ctx, grad_out):
        x, w, p, leaves = ctx.saved_tensors
        grad_p = grad_out * (leaves[0] - leaves[1])
        grad_z = grad_p * p * (1 - p)
        grad_leaves = torch.stack([(grad_out * p).sum(), (grad_out * (1 - p)).sum()])
        return grad_z[:, None] * w, x.mT @ grad_z, -grad_z.sum(0, keepdim=True), grad_leaves

    @staticmethod
    def example_inputs():
        return _stump_inputs()


class HinterlandSoftStumpLeafSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the right leaf's term enters d y / d p with + instead of - (d(1 - p)/dp = -1)"}

    @staticmethod
    def forward(ctx, x, w, thr, leaves):
        p = torch.sigmoid(x @ w - thr)
        ctx.save_for_backward(x, w, p, leaves)
        return p * leaves[0] + (1 - p) * leaves[1]

    @staticmethod
    def backward(ctx, grad_out):
        x, w, p, leaves = ctx.saved_tensors
        grad_p = grad_out * (leaves[0] + leaves[1])  # BUG
        grad_z = grad_p * p * (1 - p)
        grad_leaves = torch.stack([(grad_out * p).sum(), (grad_out * (1 - p)).sum()])
        return grad_z[:, None] * w, x.mT @ grad_z, -grad_z.sum(0, keepdim=True), grad_leaves

    @staticmethod
    def example_inputs():
        return _stump_inputs()


class HinterlandSoftStumpFrozenThreshold(torch.autograd.Function):
    bug = {"kind": "zero", "input": "thr",
           "note": "the threshold is treated as fixed and gets a zero gradient although it is learned"}

    @staticmethod
    def forward(ctx, x, w, thr, leaves):
        p = torch.sigmoid(x @ w - thr)
        ctx.save_for_backward(x, w, p, leaves, thr)
        return p * leaves[0] + (1 - p) * leaves[1]

    @staticmethod
    def backward(ctx, grad_out):
        x, w, p, leaves, thr = ctx.saved_tensors
        grad_p = grad_out * (leaves[0] - leaves[1])
        grad_z = grad_p * p * (1 - p)
        grad_leaves = torch.stack([(grad_out * p).sum(), (grad_out * (1 - p)).sum()])
        grad_thr = torch.zeros_like(thr)  # BUG
        return grad_z[:, None] * w, x.mT @ grad_z, grad_thr, grad_leaves

    @staticmethod
    def example_inputs():
        return _stump_inputs()


class HinterlandSoftStumpRoutingInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "the routing probability kept on ctx is turned into the output in place, so backward reads y for p"}

    @staticmethod
    def forward(ctx, x, w, thr, leaves):
        p = torch.sigmoid(x @ w - thr)
        ctx.x, ctx.w, ctx.p, ctx.leaves = x, w, p, leaves
        out = p.mul_(leaves[0] - leaves[1]).add_(leaves[1])  # BUG
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, w, p, leaves = ctx.x, ctx.w, ctx.p, ctx.leaves
        grad_p = grad_out * (leaves[0] - leaves[1])
        grad_z = grad_p * p * (1 - p)
        grad_leaves = torch.stack([(grad_out * p).sum(), (grad_out * (1 - p)).sum()])
        return grad_z[:, None] * w, x.mT @ grad_z, -grad_z.sum(0, keepdim=True), grad_leaves

    @staticmethod
    def example_inputs():
        return _stump_inputs()


class HinterlandSoftStumpTanhDerivative(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the tanh derivative 1 - p^2 is used for the sigmoid's p * (1 - p)"}

    @staticmethod
    def forward(ctx, x, w, thr, leaves):
        p = torch.sigmoid(x @ w - thr)
        ctx.save_for_backward(x, w, p, leaves)
        return p * leaves[0] + (1 - p) * leaves[1]

    @staticmethod
    def backward(ctx, grad_out):
        x, w, p, leaves = ctx.saved_tensors
        grad_p = grad_out * (leaves[0] - leaves[1])
        grad_z = grad_p * (1 - p * p)  # BUG
        grad_leaves = torch.stack([(grad_out * p).sum(), (grad_out * (1 - p)).sum()])
        return grad_z[:, None] * w, x.mT @ grad_z, -grad_z.sum(0, keepdim=True), grad_leaves

    @staticmethod
    def example_inputs():
        return _stump_inputs()


# ------------------------------------------------------------------ GLU-style feature gate
def _gate_inputs():
    gen = torch.Generator().manual_seed(1102)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    Wg = torch.randn(4, 4, dtype=torch.float64, generator=gen) * 0.5
    return x, Wg


class HinterlandFeatureGate(torch.autograd.Function):
    """y = x * sigmoid(x @ Wg): each feature is gated by a sigmoid of all features."""

    bug = None

    @staticmethod
    def forward(ctx, x, Wg):
        gate = torch.sigmoid(x @ Wg)
        ctx.save_for_backward(x, Wg, gate)
        return x * gate

    @staticmethod
    def backward(ctx, grad_out):
        x, Wg, gate = ctx.saved_tensors
        grad_a = grad_out * x * gate * (1 - gate)
        grad_x = grad_out * gate + grad_a @ Wg.mT
        return grad_x, x.mT @ grad_a

    @staticmethod
    def example_inputs():
        return _gate_inputs()


class HinterlandFeatureGateNoGatePath(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "x's gradient keeps the direct path grad * gate and drops the path through the gate's logits"}

    @staticmethod
    def forward(ctx, x, Wg):
        gate = torch.sigmoid(x @ Wg)
        ctx.save_for_backward(x, Wg, gate)
        return x * gate

    @staticmethod
    def backward(ctx, grad_out):
        x, Wg, gate = ctx.saved_tensors
        grad_a = grad_out * x * gate * (1 - gate)
        grad_x = grad_out * gate  # BUG
        return grad_x, x.mT @ grad_a

    @staticmethod
    def example_inputs():
        return _gate_inputs()
