"""Factorization-machine interactions: the pairwise term by the square-of-sum trick on field
embeddings, and a field-aware interaction whose partner embeddings are picked by an integer field
index with repeats."""
import torch


def _field_embeddings():
    gen = torch.Generator().manual_seed(1701)
    return (torch.randn(3, 4, 2, dtype=torch.float64, generator=gen),)


# ------------------------------------------------------------------ FM pairwise interaction
class HinterlandFMPairwise(torch.autograd.Function):
    """y_b = 0.5 * sum_k ((sum_f v_bfk)^2 - sum_f v_bfk^2), v: (B, F, K)."""

    bug = None

    @staticmethod
    def forward(ctx, v):
        s = v.sum(1)
        ctx.save_for_backward(v, s)
        return 0.5 * (s * s - (v * v).sum(1)).sum(-1)

    @staticmethod
    def backward(ctx, grad_out):
        v, s = ctx.saved_tensors
        return grad_out[:, None, None] * (s[:, None, :] - v)

    @staticmethod
    def example_inputs():
        return _field_embeddings()


class HinterlandFMPairwiseHalfKept(torch.autograd.Function):
    bug = {"kind": "scale", "input": "v",
           "note": "the 0.5 of the square-of-sum trick is kept although the derivative's 2 cancels it"}

    @staticmethod
    def forward(ctx, v):
        s = v.sum(1)
        ctx.save_for_backward(v, s)
        return 0.5 * (s * s - (v * v).sum(1)).sum(-1)

    @staticmethod
    def backward(ctx, grad_out):
        v, s = ctx.saved_tensors
        return 0.5 * grad_out[:, None, None] * (s[:, None, :] - v)  # BUG

    @staticmethod
    def example_inputs():
        return _field_embeddings()


class HinterlandFMPairwiseNoSelfTerm(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "v",
           "note": "the derivative of the subtracted sum of squares (-v) is left out"}

    @staticmethod
    def forward(ctx, v):
        s = v.sum(1)
        ctx.save_for_backward(v, s)
        return 0.5 * (s * s - (v * v).sum(1)).sum(-1)

    @staticmethod
    def backward(ctx, grad_out):
        v, s = ctx.saved_tensors
        grad_v = grad_out[:, None, None] * s[:, None, :].expand_as(v)  # BUG
        return grad_v

    @staticmethod
    def example_inputs():
        return _field_embeddings()


class HinterlandFMPairwiseRecomputedSum(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "v",
           "note": "backward recomputes the field sum over the factor dim (-1) instead of the field dim (1)"}

    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        s = v.sum(1)
        return 0.5 * (s * s - (v * v).sum(1)).sum(-1)

    @staticmethod
    def backward(ctx, grad_out):
        (v,) = ctx.saved_tensors
        s = v.sum(-1, keepdim=True)  # BUG
        return grad_out[:, None, None] * (s - v)

    @staticmethod
    def example_inputs():
        return _field_embeddings()


class HinterlandFMPairwiseSquaredInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "v",
           "note": "the field sum kept on ctx is squared in place in forward, so backward reads s^2 for s"}

    @staticmethod
    def forward(ctx, v):
        s = v.sum(1)
        ctx.v = v
        ctx.s = s
        square_of_sum = s.pow_(2)  # BUG
        return 0.5 * (square_of_sum - (v * v).sum(1)).sum(-1)

    @staticmethod
    def backward(ctx, grad_out):
        v, s = ctx.v, ctx.s
        return grad_out[:, None, None] * (s[:, None, :] - v)

    @staticmethod
    def example_inputs():
        return _field_embeddings()


# --------------------------------------------------------------- field-aware interaction
def _ffm_inputs():
    gen = torch.Generator().manual_seed(1702)
    x = torch.randn(2, 4, dtype=torch.float64, generator=gen)
    V = torch.randn(4, 3, 2, dtype=torch.float64, generator=gen)  # (feature, field, factor)
    field = torch.tensor([0, 2, 0, 1], dtype=torch.int64)  # field 0 twice
    return x, V, field


def _ffm_forward(ctx, x, V, field):
    n = x.shape[1]
    W = V[:, field, :]  # W[i, j] = V[i, field[j]], the embedding feature i uses against j
    P = torch.einsum("ijk,jik->ij", W, W)
    mask = torch.triu(torch.ones(n, n, dtype=x.dtype), diagonal=1)
    ctx.save_for_backward(x, W, P, mask)
    ctx.field = field
    ctx.n_fields = V.shape[1]
    return torch.einsum("bi,bj,ij->b", x, x, P * mask)


class HinterlandFieldAwareFM(torch.autograd.Function):
    """y_b = sum_{i<j} <V[i, f_j], V[j, f_i]> x_bi x_bj with an integer field per feature."""

    bug = None

    @staticmethod
    def forward(ctx, x, V, field):
        return _ffm_forward(ctx, x, V, field)

    @staticmethod
    def backward(ctx, grad_out):
        x, W, P, mask = ctx.saved_tensors
        Pm = P * mask
        grad_x = grad_out[:, None] * (x @ (Pm + Pm.mT))
        G = torch.einsum("b,bi,bj->ij", grad_out, x, x) * mask
        grad_W = (G + G.mT)[:, :, None] * W.transpose(0, 1)
        grad_V = torch.zeros(W.shape[0], ctx.n_fields, W.shape[2], dtype=W.dtype)
        grad_V.index_add_(1, ctx.field, grad_W)
        return grad_x, grad_V, None

    @staticmethod
    def example_inputs():
        return _ffm_inputs()


class HinterlandFieldAwareFMOverwrite(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "V",
           "note": "the per-partner gradients are written into V's field slots by assignment, so two features of one field overwrite each other"}

    @staticmethod
    def forward(ctx, x, V, field):
        return _ffm_forward(ctx, x, V, field)

    @staticmethod
    def backward(ctx, grad_out):
        x, W, P, mask = ctx.saved_tensors
        Pm = P * mask
        grad_x = grad_out[:, None] * (x @ (Pm + Pm.mT))
        G = torch.einsum("b,bi,bj->ij", grad_out, x, x) * mask
        grad_W = (G + G.mT)[:, :, None] * W.transpose(0, 1)
        grad_V = torch.zeros(W.shape[0], ctx.n_fields, W.shape[2], dtype=W.dtype)
        grad_V[:, ctx.field, :] = grad_W  # BUG
        return grad_x, grad_V, None

    @staticmethod
    def example_inputs():
        return _ffm_inputs()


class HinterlandFieldAwareFMOwnPartner(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "V",
           "note": "the partner embedding is W[i, j] instead of W[j, i]: the (feature, partner) axes are not swapped"}

    @staticmethod
    def forward(ctx, x, V, field):
        return _ffm_forward(ctx, x, V, field)

    @staticmethod
    def backward(ctx, grad_out):
        x, W, P, mask = ctx.saved_tensors
        Pm = P * mask
        grad_x = grad_out[:, None] * (x @ (Pm + Pm.mT))
        G = torch.einsum("b,bi,bj->ij", grad_out, x, x) * mask
        grad_W = (G + G.mT)[:, :, None] * W  # BUG
        grad_V = torch.zeros(W.shape[0], ctx.n_fields, W.shape[2], dtype=W.dtype)
        grad_V.index_add_(1, ctx.field, grad_W)
        return grad_x, grad_V, None

    @staticmethod
    def example_inputs():
        return _ffm_inputs()


class HinterlandFieldAwareFMUpperOnly(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "x's gradient uses only the upper-triangular pair weights, dropping the x_j-side term of each pair"}

    @staticmethod
    def forward(ctx, x, V, field):
        return _ffm_forward(ctx, x, V, field)

    @staticmethod
    def backward(ctx, grad_out):
        x, W, P, mask = ctx.saved_tensors
        Pm = P * mask
        grad_x = grad_out[:, None] * (x @ Pm)  # BUG
        G = torch.einsum("b,bi,bj->ij", grad_out, x, x) * mask
        grad_W = (G + G.mT)[:, :, None] * W.transpose(0, 1)
        grad_V = torch.zeros(W.shape[0], ctx.n_fields, W.shape[2], dtype=W.dtype)
        grad_V.index_add_(1, ctx.field, grad_W)
        return grad_x, grad_V, None

    @staticmethod
    def example_inputs():
        return _ffm_inputs()
