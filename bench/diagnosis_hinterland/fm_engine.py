import gradcli as torch

"""A factorization machine on raw features with a factor matrix, and a DCN-v2 cross layer
x0 * (x @ W.T + b) + x, on gradcli's numpy engine (runs without PyTorch)."""


# --------------------------------------------------------------- FM on raw features
def _fm_inputs():
    gen = torch.Generator().manual_seed(8801)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    V = torch.randn(4, 2, dtype=torch.float64, generator=gen)
    return x, V


def _fm_forward(ctx, x, V):
    xv = x @ V
    squares = (x * x) @ (V * V)
    ctx.save_for_backward(x, V, xv)
    return 0.5 * (xv * xv - squares).sum(1)


class HinterlandFMFeatures(torch.autograd.Function):
    """y_b = 0.5 * sum_f ((x_b . V_f)^2 - (x_b^2 . V_f^2))."""

    bug = None

    @staticmethod
    def forward(ctx, x, V):
        return _fm_forward(ctx, x, V)

    @staticmethod
    def backward(ctx, grad_out):
        x, V, xv = ctx.saved_tensors
        g = grad_out[:, None]
        grad_x = g * (xv @ V.mT - x * (V * V).sum(1))
        grad_V = x.mT @ (g * xv) - ((x * x).mT @ g) * V
        return grad_x, grad_V

    @staticmethod
    def example_inputs():
        return _fm_inputs()


class HinterlandFMFeaturesSelfTermSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the self-interaction correction x * sum(V^2) is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x, V):
        return _fm_forward(ctx, x, V)

    @staticmethod
    def backward(ctx, grad_out):
        x, V, xv = ctx.saved_tensors
        g = grad_out[:, None]
        grad_x = g * (xv @ V.mT + x * (V * V).sum(1))  # BUG
        grad_V = x.mT @ (g * xv) - ((x * x).mT @ g) * V
        return grad_x, grad_V

    @staticmethod
    def example_inputs():
        return _fm_inputs()


class HinterlandFMFeaturesUnsquaredX(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "V",
           "note": "the factor gradient's correction contracts with x instead of x squared"}

    @staticmethod
    def forward(ctx, x, V):
        return _fm_forward(ctx, x, V)

    @staticmethod
    def backward(ctx, grad_out):
        x, V, xv = ctx.saved_tensors
        g = grad_out[:, None]
        grad_x = g * (xv @ V.mT - x * (V * V).sum(1))
        grad_V = x.mT @ (g * xv) - (x.mT @ g) * V  # BUG
        return grad_x, grad_V

    @staticmethod
    def example_inputs():
        return _fm_inputs()


# ------------------------------------------------------------------ DCN-v2 cross layer
def _cross_inputs():
    gen = torch.Generator().manual_seed(8802)
    x0 = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    W = torch.randn(4, 4, dtype=torch.float64, generator=gen) * 0.5
    b = torch.randn(4, dtype=torch.float64, generator=gen)
    return x0, x, W, b


def _cross_forward(ctx, x0, x, W, b):
    u = x @ W.mT + b
    ctx.save_for_backward(x0, x, W, u)
    return x0 * u + x


class HinterlandCrossV2(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x0, x, W, b):
        return _cross_forward(ctx, x0, x, W, b)

    @staticmethod
    def backward(ctx, grad_out):
        x0, x, W, u = ctx.saved_tensors
        grad_u = grad_out * x0
        grad_x = grad_u @ W + grad_out
        return grad_out * u, grad_x, grad_u.mT @ x, grad_u.sum(0)

    @staticmethod
    def example_inputs():
        return _cross_inputs()


class HinterlandCrossV2InputTranspose(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "x",
           "note": "u = x @ W.T, so x's gradient is grad_u @ W; it is written grad_u @ W.T"}

    @staticmethod
    def forward(ctx, x0, x, W, b):
        return _cross_forward(ctx, x0, x, W, b)

    @staticmethod
    def backward(ctx, grad_out):
        x0, x, W, u = ctx.saved_tensors
        grad_u = grad_out * x0
        grad_x = grad_u @ W.mT + grad_out  # BUG
        return grad_out * u, grad_x, grad_u.mT @ x, grad_u.sum(0)

    @staticmethod
    def example_inputs():
        return _cross_inputs()


class HinterlandCrossV2BiasMean(torch.autograd.Function):
    bug = {"kind": "scale", "input": "b",
           "note": "the bias gradient averages over the batch instead of summing (off by 1/B)"}

    @staticmethod
    def forward(ctx, x0, x, W, b):
        return _cross_forward(ctx, x0, x, W, b)

    @staticmethod
    def backward(ctx, grad_out):
        x0, x, W, u = ctx.saved_tensors
        grad_u = grad_out * x0
        grad_x = grad_u @ W + grad_out
        grad_b = grad_u.mean(0)  # BUG
        return grad_out * u, grad_x, grad_u.mT @ x, grad_b

    @staticmethod
    def example_inputs():
        return _cross_inputs()
