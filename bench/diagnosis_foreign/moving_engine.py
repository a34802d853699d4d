import gradcli as torch

# Sequential and triangular ops on gradcli's engine (runs without PyTorch): an exponential moving
# average and a running (cumulative) mean by Python loops over time, and a lower-triangular
# matrix product with tril (BLIND corpus, see README.md).


def _series(seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(6, 3, dtype=torch.float64, generator=gen)


# ------------------------------------------------------------------ exponential moving average
class ForeignEMA(torch.autograd.Function):
    """s_t = beta s_{t-1} + (1 - beta) x_t over time (dim 0), s_{-1} = 0; returns every s_t."""

    bug = None

    @staticmethod
    def forward(ctx, x, beta):
        ctx.beta = beta
        state = torch.zeros_like(x[0])
        out = []
        for t in range(x.shape[0]):
            state = beta * state + (1 - beta) * x[t]
            out.append(state)
        return torch.stack(out)

    @staticmethod
    def backward(ctx, grad):
        beta = ctx.beta
        carry = torch.zeros_like(grad[0])
        rows = [None] * grad.shape[0]
        for t in reversed(range(grad.shape[0])):
            carry = grad[t] + beta * carry
            rows[t] = (1 - beta) * carry
        return torch.stack(rows), None

    @staticmethod
    def example_inputs():
        return _series(101), 0.7


class ForeignEMAForwardAdjoint(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the adjoint is accumulated from t = 0 upwards, like the forward, instead of "
                   "from the last step back"}

    @staticmethod
    def forward(ctx, x, beta):
        ctx.beta = beta
        out = torch.zeros_like(x)
        state = torch.zeros_like(x[0])
        for t in range(x.shape[0]):
            state = beta * state + (1 - beta) * x[t]
            out[t] = state
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_x = torch.zeros_like(grad)
        acc = torch.zeros_like(grad[0])
        for t in range(grad.shape[0]):  # BUG
            acc = ctx.beta * acc + grad[t]
            grad_x[t] = acc * (1 - ctx.beta)
        return grad_x, None

    @staticmethod
    def example_inputs():
        return _series(101), 0.7


# -------------------------------------------------------------------------- running mean
class ForeignRunningMean(torch.autograd.Function):
    """m_t = m_{t-1} + (x_t - m_{t-1}) / (t + 1): the mean of x_0..x_t, by a loop."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        means = []
        m = torch.zeros_like(x[0])
        for t in range(x.shape[0]):
            m = m + (x[t] - m) / (t + 1)
            means.append(m)
        ctx.steps = x.shape[0]
        return torch.stack(means)

    @staticmethod
    def backward(ctx, grad):
        acc = torch.zeros_like(grad[0])
        out = []
        for t in range(ctx.steps - 1, -1, -1):
            acc = acc + grad[t] / (t + 1)
            out.append(acc)
        return torch.stack(out[::-1])

    @staticmethod
    def example_inputs():
        return (_series(102),)


class ForeignRunningMeanNoSuffixSum(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "x_t feeds every later mean, but the reverse loop overwrites the running sum "
                   "with the current step's grad / (t + 1) instead of adding to it"}

    @staticmethod
    def forward(ctx, x):
        means = []
        m = torch.zeros_like(x[0])
        for t in range(x.shape[0]):
            m = m + (x[t] - m) / (t + 1)
            means.append(m)
        ctx.steps = x.shape[0]
        return torch.stack(means)

    @staticmethod
    def backward(ctx, grad):
        grad_x = torch.zeros_like(grad)
        running = torch.zeros_like(grad[0])
        for t in range(ctx.steps - 1, -1, -1):
            running = grad[t] / (t + 1)  # BUG
            grad_x[t] = running
        return grad_x

    @staticmethod
    def example_inputs():
        return (_series(102),)


# ---------------------------------------------------------------- lower-triangular matmul
def _tril_inputs():
    gen = torch.Generator().manual_seed(103)
    return (torch.randn(4, 4, dtype=torch.float64, generator=gen),
            torch.randn(4, 3, dtype=torch.float64, generator=gen))


class ForeignTrilMatmul(torch.autograd.Function):
    """tril(A) @ B: only A's lower triangle (diagonal included) is used."""

    bug = None

    @staticmethod
    def forward(ctx, A, B):
        L = torch.tril(A)
        ctx.save_for_backward(L, B)
        return L @ B

    @staticmethod
    def backward(ctx, grad):
        L, B = ctx.saved_tensors
        return torch.tril(grad @ B.T), L.T @ grad

    @staticmethod
    def example_inputs():
        return _tril_inputs()


class ForeignTrilMatmulUnmasked(torch.autograd.Function):
    bug = {"kind": "region", "input": "A",
           "note": "A's gradient is the full grad @ B^T; the strictly upper triangle, which the "
                   "forward never read, is not masked out"}

    @staticmethod
    def forward(ctx, A, B):
        ctx.save_for_backward(A, B)
        return torch.matmul(torch.tril(A), B)

    @staticmethod
    def backward(ctx, grad):
        A, B = ctx.saved_tensors
        grad_A = torch.matmul(grad, B.mT)  # BUG
        grad_B = torch.matmul(torch.tril(A).mT, grad)
        return grad_A, grad_B

    @staticmethod
    def example_inputs():
        return _tril_inputs()


class ForeignTrilMatmulRightUntransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "B",
           "note": "B's gradient multiplies by tril(A), not by its transpose: an upper-triangular "
                   "matrix is what carries the gradient back to B"}

    @staticmethod
    def forward(ctx, A, B):
        lower = torch.tril(A)
        ctx.lower = lower
        ctx.save_for_backward(B)
        return lower @ B

    @staticmethod
    def backward(ctx, grad):
        (B,) = ctx.saved_tensors
        upper_mask = torch.triu(torch.ones_like(ctx.lower), diagonal=1)
        grad_A = (grad @ B.t()) * (1 - upper_mask)
        grad_B = ctx.lower @ grad  # BUG
        return grad_A, grad_B

    @staticmethod
    def example_inputs():
        return _tril_inputs()
