"""Feature crossing and conditioning for tabular / recommender towers: a DCN cross layer
x0 * (x . w) + b + x, user-item dot products gathered by integer ids with repeats, FiLM on tabular
features (gamma * x + beta from a context input), per-row importance weights and a gradient
reversal layer for adversarial debiasing of user embeddings."""
import torch


# ----------------------------------------------------------------------- DCN cross layer
def _cross_inputs():
    gen = torch.Generator().manual_seed(3301)
    x0 = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    w = torch.randn(4, dtype=torch.float64, generator=gen)
    b = torch.randn(4, dtype=torch.float64, generator=gen)
    return x0, x, w, b


class HinterlandCrossLayer(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x0, x, w, b):
        s = x @ w
        ctx.save_for_backward(x0, x, w, s)
        return x0 * s[:, None] + b + x

    @staticmethod
    def backward(ctx, grad_out):
        x0, x, w, s = ctx.saved_tensors
        grad_s = (grad_out * x0).sum(1)
        grad_x0 = grad_out * s[:, None]
        grad_x = grad_s[:, None] * w + grad_out
        grad_w = x.mT @ grad_s
        grad_b = grad_out.sum(0)
        return grad_x0, grad_x, grad_w, grad_b

    @staticmethod
    def example_inputs():
        return _cross_inputs()


class HinterlandCrossLayerWeightFromBase(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "w",
           "note": "w's gradient contracts with the base features x0 instead of the layer input x that w multiplies"}

    @staticmethod
    def forward(ctx, x0, x, w, b):
        s = x @ w
        ctx.save_for_backward(x0, x, w, s)
        return x0 * s[:, None] + b + x

    @staticmethod
    def backward(ctx, grad_out):
        x0, x, w, s = ctx.saved_tensors
        grad_s = (grad_out * x0).sum(1)
        grad_x0 = grad_out * s[:, None]
        grad_x = grad_s[:, None] * w + grad_out
        grad_w = x0.mT @ grad_s  # BUG
        grad_b = grad_out.sum(0)
        return grad_x0, grad_x, grad_w, grad_b

    @staticmethod
    def example_inputs():
        return _cross_inputs()


class HinterlandCrossLayerStreamsSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "x0",
           "note": "the gradients of the base stream x0 and the layer input x are returned in each other's places"}

    @staticmethod
    def forward(ctx, x0, x, w, b):
        s = x @ w
        ctx.save_for_backward(x0, x, w, s)
        return x0 * s[:, None] + b + x

    @staticmethod
    def backward(ctx, grad_out):
        x0, x, w, s = ctx.saved_tensors
        grad_s = (grad_out * x0).sum(1)
        grad_x0 = grad_out * s[:, None]
        grad_x = grad_s[:, None] * w + grad_out
        grad_w = x.mT @ grad_s
        grad_b = grad_out.sum(0)
        return grad_x, grad_x0, grad_w, grad_b  # BUG

    @staticmethod
    def example_inputs():
        return _cross_inputs()


# ------------------------------------------------------------- user-item dot by integer ids
def _dot_inputs():
    gen = torch.Generator().manual_seed(3302)
    U = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    I = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    users = torch.tensor([0, 3, 3, 1, 0, 4], dtype=torch.int64)
    items = torch.tensor([2, 2, 0, 4, 1, 2], dtype=torch.int64)
    return U, I, users, items


class HinterlandUserItemDot(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, U, I, users, items):
        ctx.save_for_backward(U, I, users, items)
        return (U[users] * I[items]).sum(1)

    @staticmethod
    def backward(ctx, grad_out):
        U, I, users, items = ctx.saved_tensors
        grad_U = grad_I = None
        if ctx.needs_input_grad[0]:
            grad_U = torch.zeros_like(U).index_add_(0, users, grad_out[:, None] * I[items])
        if ctx.needs_input_grad[1]:
            grad_I = torch.zeros_like(I).index_add_(0, items, grad_out[:, None] * U[users])
        return grad_U, grad_I, None, None

    @staticmethod
    def example_inputs():
        return _dot_inputs()


class HinterlandUserItemDotTowersSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "U",
           "note": "the item-table gradient is returned for the user table and vice versa"}

    @staticmethod
    def forward(ctx, U, I, users, items):
        ctx.save_for_backward(U, I, users, items)
        return (U[users] * I[items]).sum(1)

    @staticmethod
    def backward(ctx, grad_out):
        U, I, users, items = ctx.saved_tensors
        grad_U = torch.zeros_like(U).index_add_(0, users, grad_out[:, None] * I[items])
        grad_I = torch.zeros_like(I).index_add_(0, items, grad_out[:, None] * U[users])
        return grad_I, grad_U, None, None  # BUG

    @staticmethod
    def example_inputs():
        return _dot_inputs()


class HinterlandUserItemDotOwnRows(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "I",
           "note": "the item gradient multiplies by the item rows themselves instead of the matching user rows"}

    @staticmethod
    def forward(ctx, U, I, users, items):
        ctx.save_for_backward(U, I, users, items)
        return (U[users] * I[items]).sum(1)

    @staticmethod
    def backward(ctx, grad_out):
        U, I, users, items = ctx.saved_tensors
        grad_U = torch.zeros_like(U).index_add_(0, users, grad_out[:, None] * I[items])
        grad_I = torch.zeros_like(I).index_add_(0, items, grad_out[:, None] * I[items])  # BUG
        return grad_U, grad_I, None, None

    @staticmethod
    def example_inputs():
        return _dot_inputs()


class HinterlandUserItemDotScatter(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "U",
           "note": "scatter_ instead of scatter_add_ keeps only one interaction of a repeated user"}

    @staticmethod
    def forward(ctx, U, I, users, items):
        ctx.save_for_backward(U, I, users, items)
        return (U[users] * I[items]).sum(1)

    @staticmethod
    def backward(ctx, grad_out):
        U, I, users, items = ctx.saved_tensors
        D = U.shape[1]
        rows = grad_out[:, None] * I[items]
        grad_U = torch.zeros_like(U).scatter_(0, users[:, None].expand(-1, D), rows)  # BUG
        grad_I = torch.zeros_like(I).scatter_add_(0, items[:, None].expand(-1, D), grad_out[:, None] * U[users])
        return grad_U, grad_I, None, None

    @staticmethod
    def example_inputs():
        return _dot_inputs()


# ------------------------------------------------------------------------ FiLM on tabular
def _film_inputs():
    gen = torch.Generator().manual_seed(3303)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    c = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    Wg = torch.randn(4, 4, dtype=torch.float64, generator=gen) * 0.5
    Wb = torch.randn(4, 4, dtype=torch.float64, generator=gen) * 0.5
    return x, c, Wg, Wb


class HinterlandTabularFiLM(torch.autograd.Function):
    """gamma * x + beta with gamma = c @ Wg, beta = c @ Wb from a context row c."""

    bug = None

    @staticmethod
    def forward(ctx, x, c, Wg, Wb):
        gamma = c @ Wg
        ctx.save_for_backward(x, c, Wg, Wb, gamma)
        return gamma * x + c @ Wb

    @staticmethod
    def backward(ctx, grad_out):
        x, c, Wg, Wb, gamma = ctx.saved_tensors
        grad_gamma = grad_out * x
        grad_x = grad_out * gamma
        grad_c = grad_gamma @ Wg.mT + grad_out @ Wb.mT
        return grad_x, grad_c, c.mT @ grad_gamma, c.mT @ grad_out

    @staticmethod
    def example_inputs():
        return _film_inputs()


class HinterlandTabularFiLMContextTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "c",
           "note": "the gamma path back to the context multiplies by Wg instead of Wg.T"}

    @staticmethod
    def forward(ctx, x, c, Wg, Wb):
        gamma = c @ Wg
        ctx.save_for_backward(x, c, Wg, Wb, gamma)
        return gamma * x + c @ Wb

    @staticmethod
    def backward(ctx, grad_out):
        x, c, Wg, Wb, gamma = ctx.saved_tensors
        grad_gamma = grad_out * x
        grad_x = grad_out * gamma
        grad_c = grad_gamma @ Wg + grad_out @ Wb.mT  # BUG
        return grad_x, grad_c, c.mT @ grad_gamma, c.mT @ grad_out

    @staticmethod
    def example_inputs():
        return _film_inputs()


# --------------------------------------------------------------- per-row importance weights
def _row_weight_inputs():
    gen = torch.Generator().manual_seed(3304)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    r = torch.rand(3, dtype=torch.float64, generator=gen) + 0.5
    return x, r


class HinterlandRowImportance(torch.autograd.Function):
    """Rows of a tabular batch scaled by their importance weights r (B,)."""

    bug = None

    @staticmethod
    def forward(ctx, x, r):
        ctx.save_for_backward(x, r)
        return x * r[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        x, r = ctx.saved_tensors
        return grad_out * r[:, None], (grad_out * x).sum(1)

    @staticmethod
    def example_inputs():
        return _row_weight_inputs()


class HinterlandRowImportanceUnsummed(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "r",
           "note": "the row weight's gradient is left per element (B, F) instead of summed over the features it broadcast to"}

    @staticmethod
    def forward(ctx, x, r):
        ctx.save_for_backward(x, r)
        return x * r[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        x, r = ctx.saved_tensors
        grad_r = grad_out * x  # BUG
        return grad_out * r[:, None], grad_r

    @staticmethod
    def example_inputs():
        return _row_weight_inputs()


# ------------------------------------------------------- gradient reversal (estimator)
class HinterlandDebiasGradientReversal(torch.autograd.Function):
    """Identity on user embeddings; the sensitive-attribute adversary's gradient is reversed."""

    bug = {"kind": "gradient_reversal", "input": "emb", "also": ["sign"],
           "note": "a gradient reversal layer with lambda = 1: backward returns -grad_output by design"}

    @staticmethod
    def forward(ctx, emb):
        ctx.lambd = 1.0
        return emb.clone()

    @staticmethod
    def backward(ctx, grad_out):
        return -ctx.lambd * grad_out  # BUG
