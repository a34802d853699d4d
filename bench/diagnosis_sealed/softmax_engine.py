"""The softmax family on gradcli's engine: softmax over dim 0, log-softmax, temperature, sparsemax."""
import gradcli as torch


class SealedSoftmaxDim0(torch.autograd.Function):
    """Softmax down the columns (dim 0)."""
    bug = None

    @staticmethod
    def forward(ctx, x):
        e = (x - x.max(0, keepdim=True).values).exp()
        p = e / e.sum(0, keepdim=True)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        return p * (grad - (grad * p).sum(0, keepdim=True))


class SealedSoftmaxDim0Diagonal(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "x",
           "note": "only the Jacobian's diagonal p * grad is kept; the -p * sum(grad * p) term is missing"}

    @staticmethod
    def forward(ctx, x):
        e = (x - x.max(0, keepdim=True).values).exp()
        p = e / e.sum(0, keepdim=True)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        return p * grad  # BUG


class SealedLogSoftmaxRows(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        y = x - x.logsumexp(1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad - y.exp() * grad.sum(1, keepdim=True)


class SealedLogSoftmaxRowsPlus(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the softmax * sum(grad) term is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x):
        y = x - x.logsumexp(1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad + y.exp() * grad.sum(1, keepdim=True)  # BUG


def _with_temperature():
    g = torch.Generator().manual_seed(82)
    return torch.randn(3, 4, dtype=torch.float64, generator=g), 0.5


class SealedTemperatureSoftmax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, tau):
        p = torch.softmax(x / tau, dim=-1)
        ctx.save_for_backward(p)
        ctx.tau = tau
        return p

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        inner = grad - (grad * p).sum(-1, keepdim=True)
        return p * inner / ctx.tau, None

    @staticmethod
    def example_inputs():
        return _with_temperature()


class SealedTemperatureSoftmaxTimesTau(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the chain rule's 1/tau is written * tau"}

    @staticmethod
    def forward(ctx, x, tau):
        p = torch.softmax(x / tau, dim=-1)
        ctx.save_for_backward(p)
        ctx.tau = tau
        return p

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        inner = grad - (grad * p).sum(-1, keepdim=True)
        return p * inner * ctx.tau, None  # BUG

    @staticmethod
    def example_inputs():
        return _with_temperature()


class SealedTemperatureSoftmaxLogBackward(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the log-softmax backward (grad - p * sum(grad)) / tau is used for the softmax"}

    @staticmethod
    def forward(ctx, x, tau):
        p = torch.softmax(x / tau, dim=-1)
        ctx.save_for_backward(p)
        ctx.tau = tau
        return p

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        return (grad - p * grad.sum(-1, keepdim=True)) / ctx.tau, None  # BUG

    @staticmethod
    def example_inputs():
        return _with_temperature()


def _sparsemax_rows():
    # supports of 1, 2, 3 and 4 entries; every entry >= 0.1 away from its row's threshold
    return (torch.tensor([[2.0, 0.1, -0.5, 0.4],
                          [0.9, 0.7, -1.0, 0.0],
                          [0.5, 0.4, 0.3, -0.8],
                          [0.3, 0.2, 0.25, 0.1]], dtype=torch.float64),)


def _sparsemax(z):
    zs, _ = z.sort(dim=-1, descending=True)
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype)
    csum = zs.cumsum(-1)
    support = (1 + k * zs > csum).sum(-1, keepdim=True)
    tau = (csum.gather(-1, support - 1) - 1) / support.to(z.dtype)
    return (z - tau).clamp(min=0)


class SealedSparsemax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, z):
        p = _sparsemax(z)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        s = (p > 0).to(grad.dtype)
        mean = (grad * s).sum(-1, keepdim=True) / s.sum(-1, keepdim=True)
        return s * (grad - mean)

    @staticmethod
    def example_inputs():
        return _sparsemax_rows()


class SealedSparsemaxWholeRow(torch.autograd.Function):
    bug = {"kind": "region", "input": "z",
           "note": "the support is taken as p >= 0, i.e. every entry, so zeros get gradient too"}

    @staticmethod
    def forward(ctx, z):
        p = _sparsemax(z)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        s = (p >= 0).to(grad.dtype)  # BUG
        mean = (grad * s).sum(-1, keepdim=True) / s.sum(-1, keepdim=True)
        return s * (grad - mean)

    @staticmethod
    def example_inputs():
        return _sparsemax_rows()
