"""Differentiable trees and sparse attention for tabular models: a depth-2 soft decision tree
(sigmoid routing at three inner nodes, four leaf values mixed by path probabilities) and a
sparsemax over a small last dim."""
import torch


# ----------------------------------------------------------------- depth-2 soft tree
def _tree_inputs():
    gen = torch.Generator().manual_seed(6601)
    x = torch.randn(4, 3, dtype=torch.float64, generator=gen)
    w = torch.randn(3, 3, dtype=torch.float64, generator=gen)  # one row per inner node
    b = torch.randn(3, dtype=torch.float64, generator=gen) * 0.5
    leaves = torch.randn(4, dtype=torch.float64, generator=gen)
    return x, w, b, leaves


def _tree_forward(ctx, x, w, b, leaves):
    z = x @ w.mT + b
    p = torch.sigmoid(z)
    p0, p1, p2 = p.unbind(1)
    paths = torch.stack([p0 * p1, p0 * (1 - p1), (1 - p0) * p2, (1 - p0) * (1 - p2)], dim=1)
    ctx.save_for_backward(x, w, z, paths, leaves)
    return paths @ leaves


class HinterlandSoftTree(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w, b, leaves):
        return _tree_forward(ctx, x, w, b, leaves)

    @staticmethod
    def backward(ctx, grad_out):
        x, w, z, paths, leaves = ctx.saved_tensors
        p = torch.sigmoid(z)
        p0, p1, p2 = p.unbind(1)
        gP = grad_out[:, None] * leaves
        gp0 = gP[:, 0] * p1 + gP[:, 1] * (1 - p1) - gP[:, 2] * p2 - gP[:, 3] * (1 - p2)
        gp1 = p0 * (gP[:, 0] - gP[:, 1])
        gp2 = (1 - p0) * (gP[:, 2] - gP[:, 3])
        gz = torch.stack([gp0, gp1, gp2], dim=1) * p * (1 - p)
        return gz @ w, gz.mT @ x, gz.sum(0), paths.mT @ grad_out

    @staticmethod
    def example_inputs():
        return _tree_inputs()


class HinterlandSoftTreeRightSubtreeSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the root's gradient adds the first right-subtree path's term (p0 routes away from it) instead of subtracting it"}

    @staticmethod
    def forward(ctx, x, w, b, leaves):
        return _tree_forward(ctx, x, w, b, leaves)

    @staticmethod
    def backward(ctx, grad_out):
        x, w, z, paths, leaves = ctx.saved_tensors
        p = torch.sigmoid(z)
        p0, p1, p2 = p.unbind(1)
        gP = grad_out[:, None] * leaves
        gp0 = gP[:, 0] * p1 + gP[:, 1] * (1 - p1) + gP[:, 2] * p2 - gP[:, 3] * (1 - p2)  # BUG
        gp1 = p0 * (gP[:, 0] - gP[:, 1])
        gp2 = (1 - p0) * (gP[:, 2] - gP[:, 3])
        gz = torch.stack([gp0, gp1, gp2], dim=1) * p * (1 - p)
        return gz @ w, gz.mT @ x, gz.sum(0), paths.mT @ grad_out

    @staticmethod
    def example_inputs():
        return _tree_inputs()


class HinterlandSoftTreeNodeWeightsTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "the routing logits are x @ w.T, so x's gradient needs gz @ w, not gz @ w.T"}

    @staticmethod
    def forward(ctx, x, w, b, leaves):
        return _tree_forward(ctx, x, w, b, leaves)

    @staticmethod
    def backward(ctx, grad_out):
        x, w, z, paths, leaves = ctx.saved_tensors
        p = torch.sigmoid(z)
        p0, p1, p2 = p.unbind(1)
        gP = grad_out[:, None] * leaves
        gp0 = gP[:, 0] * p1 + gP[:, 1] * (1 - p1) - gP[:, 2] * p2 - gP[:, 3] * (1 - p2)
        gp1 = p0 * (gP[:, 0] - gP[:, 1])
        gp2 = (1 - p0) * (gP[:, 2] - gP[:, 3])
        gz = torch.stack([gp0, gp1, gp2], dim=1) * p * (1 - p)
        grad_x = gz @ w.mT  # BUG
        return grad_x, gz.mT @ x, gz.sum(0), paths.mT @ grad_out

    @staticmethod
    def example_inputs():
        return _tree_inputs()


class HinterlandSoftTreeLogitDerivative(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "the sigmoid derivative is written with the saved logits z instead of the routing probabilities p"}

    @staticmethod
    def forward(ctx, x, w, b, leaves):
        return _tree_forward(ctx, x, w, b, leaves)

    @staticmethod
    def backward(ctx, grad_out):
        x, w, z, paths, leaves = ctx.saved_tensors
        p = torch.sigmoid(z)
        p0, p1, p2 = p.unbind(1)
        gP = grad_out[:, None] * leaves
        gp0 = gP[:, 0] * p1 + gP[:, 1] * (1 - p1) - gP[:, 2] * p2 - gP[:, 3] * (1 - p2)
        gp1 = p0 * (gP[:, 0] - gP[:, 1])
        gp2 = (1 - p0) * (gP[:, 2] - gP[:, 3])
        gz = torch.stack([gp0, gp1, gp2], dim=1) * z * (1 - z)  # BUG
        return gz @ w, gz.mT @ x, gz.sum(0), paths.mT @ grad_out

    @staticmethod
    def example_inputs():
        return _tree_inputs()


# -------------------------------------------------------------------------- sparsemax
def _sparsemax_inputs():
    z = torch.tensor([[1.3, 0.2, 0.9, -0.8, 1.1],
                      [0.1, -0.5, 2.4, 0.3, -1.2],
                      [0.45, 0.6, -0.1, 0.8, 0.05]], dtype=torch.float64)
    return (z,)


def _sparsemax_forward(ctx, z):
    n = z.shape[-1]
    zs, _ = torch.sort(z, dim=-1, descending=True)
    k = torch.arange(1, n + 1, dtype=z.dtype)
    cumulative = zs.cumsum(-1)
    support = (1 + k * zs > cumulative).to(torch.int64)
    k_z = support.sum(-1, keepdim=True)
    tau = (cumulative.gather(-1, k_z - 1) - 1) / k_z.to(z.dtype)
    p = torch.clamp(z - tau, min=0)
    ctx.save_for_backward(p)
    return p


class HinterlandSparsemax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, z):
        return _sparsemax_forward(ctx, z)

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        S = (p > 0).to(grad_out.dtype)
        v = (grad_out * S).sum(-1, keepdim=True) / S.sum(-1, keepdim=True)
        return S * (grad_out - v)

    @staticmethod
    def example_inputs():
        return _sparsemax_inputs()


class HinterlandSparsemaxNoCentering(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "z",
           "note": "the support's mean of the upstream gradient (from the threshold tau) is not subtracted"}

    @staticmethod
    def forward(ctx, z):
        return _sparsemax_forward(ctx, z)

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        S = (p > 0).to(grad_out.dtype)
        return S * grad_out  # BUG

    @staticmethod
    def example_inputs():
        return _sparsemax_inputs()


class HinterlandSparsemaxSupportInclusive(torch.autograd.Function):
    bug = {"kind": "region", "input": "z",
           "note": "the support is p >= 0, which is every entry, so zeroed entries get the support's gradient"}

    @staticmethod
    def forward(ctx, z):
        return _sparsemax_forward(ctx, z)

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        S = (p >= 0).to(grad_out.dtype)  # BUG
        v = (grad_out * S).sum(-1, keepdim=True) / S.sum(-1, keepdim=True)
        return S * (grad_out - v)

    @staticmethod
    def example_inputs():
        return _sparsemax_inputs()


class HinterlandSparsemaxSoftmaxJacobian(torch.autograd.Function):
    bug = {"kind": "none", "input": "z",
           "note": "softmax's backward p * (g - sum(g * p)) is pasted in for sparsemax's"}

    @staticmethod
    def forward(ctx, z):
        return _sparsemax_forward(ctx, z)

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved_tensors
        return p * (grad_out - (grad_out * p).sum(-1, keepdim=True))  # BUG

    @staticmethod
    def example_inputs():
        return _sparsemax_inputs()
