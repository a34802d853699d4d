"""The softmax family on gradcli's engine: softmax over dim 0, log-softmax, temperature, sparsemax."""
import gradcli as torch


class LatestSoftmaxDim0(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        s = torch.softmax(x, 0)
        ctx.save_for_backward(s)
        return s

    @staticmethod
    def backward(ctx, g):
        (s,) = ctx.saved_tensors
        return s * (g - (g * s).sum(0, keepdim=True))


class LatestSoftmaxDim0RowDot(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "x", "note": "the dot product <g, s> is taken over dim 1"}

    @staticmethod
    def forward(ctx, x):
        s = torch.softmax(x, 0)
        ctx.save_for_backward(s)
        return s

    @staticmethod
    def backward(ctx, g):
        (s,) = ctx.saved_tensors
        return s * (g - (g * s).sum(1, keepdim=True))  # BUG


class LatestLogSoftmax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        out = x - x.logsumexp(-1, keepdim=True)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g - out.exp() * g.sum(-1, keepdim=True)


class LatestLogSoftmaxPlus(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x", "note": "the softmax-weighted sum of g is added, not subtracted"}

    @staticmethod
    def forward(ctx, x):
        out = x - x.logsumexp(-1, keepdim=True)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g + out.exp() * g.sum(-1, keepdim=True)  # BUG


class LatestLogSoftmaxSoftmaxBackward(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "applies softmax's backward s * (g - <g, s>) to a log-softmax"}

    @staticmethod
    def forward(ctx, x):
        out = x - x.logsumexp(-1, keepdim=True)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        s = out.exp()
        return s * (g - (g * s).sum(-1, keepdim=True))  # BUG


def _temperature_inputs():
    gen = torch.Generator().manual_seed(81)
    return torch.randn(3, 4, dtype=torch.float64, generator=gen), 0.5


class LatestTemperatureSoftmax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, tau):
        s = torch.softmax(x / tau, -1)
        ctx.save_for_backward(s)
        ctx.tau = tau
        return s

    @staticmethod
    def backward(ctx, g):
        (s,) = ctx.saved_tensors
        return s * (g - (g * s).sum(-1, keepdim=True)) / ctx.tau, None

    example_inputs = staticmethod(_temperature_inputs)


class LatestTemperatureSoftmaxNoChainTau(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x", "note": "forgets the chain-rule factor 1/tau"}

    @staticmethod
    def forward(ctx, x, tau):
        s = torch.softmax(x / tau, -1)
        ctx.save_for_backward(s)
        return s

    @staticmethod
    def backward(ctx, g):
        (s,) = ctx.saved_tensors
        return s * (g - (g * s).sum(-1, keepdim=True)), None  # BUG

    example_inputs = staticmethod(_temperature_inputs)


def _sparsemax(z):
    zs = torch.sort(z, dim=-1, descending=True)[0]
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype)
    support = (1 + k * zs > zs.cumsum(-1)).to(z.dtype)
    size = support.sum(-1, keepdim=True)
    tau = ((zs * support).sum(-1, keepdim=True) - 1) / size
    return (z - tau).clamp_min(0.0)


def _sparse_inputs():
    z = torch.tensor([[2.0, 0.1, -1.0, 0.3],
                      [0.5, 0.4, 0.45, 0.2],
                      [0.1, 0.15, 0.05, 0.12]], dtype=torch.float64)
    return (z,)


class LatestSparsemax(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, z):
        p = _sparsemax(z)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        on = (p > 0).to(g.dtype)
        mean = (g * on).sum(-1, keepdim=True) / on.sum(-1, keepdim=True)
        return on * (g - mean)

    example_inputs = staticmethod(_sparse_inputs)


class LatestSparsemaxWholeRow(torch.autograd.Function):
    bug = {"kind": "region", "input": "z",
           "note": "the support is taken as p >= 0, every entry, instead of p > 0"}

    @staticmethod
    def forward(ctx, z):
        p = _sparsemax(z)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        on = (p >= 0).to(g.dtype)  # BUG
        mean = (g * on).sum(-1, keepdim=True) / on.sum(-1, keepdim=True)
        return on * (g - mean)

    example_inputs = staticmethod(_sparse_inputs)
