"""Everyday hand-written layers: conv1d by unfold, per-row and per-channel scales, hardtanh, a gather,
log-sigmoid, a channels-last projection, and three deliberate estimators (blind corpus yonder)."""
import torch
import torch.nn.functional as F


def _gen(seed):
    return torch.Generator().manual_seed(seed)


class YonderStraightThroughQuantise(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x",
           "note": "deliberate: round to a 1/4 grid in forward, identity gradient in backward"}

    @staticmethod
    def forward(ctx, x):
        return torch.round(x * 4) / 4

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out  # BUG


class YonderGradientReversal(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "deliberate: the domain-adversarial layer, identity forward, -lambda * grad backward"}

    @staticmethod
    def forward(ctx, x, lam: float = 0.5):
        ctx.lam = lam
        return x.view_as(x).clone()

    @staticmethod
    def backward(ctx, grad_out):
        return -ctx.lam * grad_out, None  # BUG


class YonderSpikeSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "x",
           "note": "deliberate: a Heaviside spike in forward, the derivative of sigmoid(4x) in backward"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x > 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(4 * x)
        return grad_out * 4 * s * (1 - s)  # BUG


def _conv_inputs(seed):
    g = _gen(seed)
    return (torch.randn(2, 3, 8, dtype=torch.float64, generator=g),
            torch.randn(4, 3, 3, dtype=torch.float64, generator=g))


def _conv_forward(ctx, x, w):
    cols = x.unfold(2, w.shape[-1], 1)  # (N, C, L_out, K)
    ctx.save_for_backward(x, w)
    return torch.einsum("nclk,ock->nol", cols, w)


class YonderConv1dUnfold(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        return _conv_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        x, w = ctx.saved_tensors
        k = w.shape[-1]
        grad_x = F.conv1d(F.pad(grad_out, (k - 1, k - 1)), w.transpose(0, 1).flip(-1))
        grad_w = torch.einsum("nol,nclk->ock", grad_out, x.unfold(2, k, 1))
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _conv_inputs(0)


class YonderConv1dUnfoldNoKernelFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the input gradient as a full correlation with the kernel not flipped along its taps"}

    @staticmethod
    def forward(ctx, x, w):
        return _conv_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        x, w = ctx.saved_tensors
        k = w.shape[-1]
        grad_x = F.conv1d(F.pad(grad_out, (k - 1, k - 1)), w.transpose(0, 1))  # BUG
        grad_w = torch.einsum("nol,nclk->ock", grad_out, x.unfold(2, k, 1))
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _conv_inputs(1)


class YonderConv1dUnfoldTapLoop(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "x",
           "note": "the per-tap contributions to the input gradient assigned into the shifted window instead of added: overlaps lost"}

    @staticmethod
    def forward(ctx, x, w):
        return _conv_forward(ctx, x, w)

    @staticmethod
    def backward(ctx, grad_out):
        x, w = ctx.saved_tensors
        k = w.shape[-1]
        l_out = grad_out.shape[-1]
        grad_x = torch.zeros_like(x)
        for tap in range(k):
            grad_x[..., tap:tap + l_out] = torch.einsum("nol,oc->ncl", grad_out, w[:, :, tap])  # BUG
        grad_w = torch.einsum("nol,nclk->ock", grad_out, x.unfold(2, k, 1))
        return grad_x, grad_w

    @staticmethod
    def example_inputs():
        return _conv_inputs(2)


def _row_inputs(seed):
    g = _gen(seed)
    return (torch.randn(4, 4, dtype=torch.float64, generator=g),
            torch.randn(4, dtype=torch.float64, generator=g))


class YonderRowScale(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, s):
        ctx.save_for_backward(x, s)
        return x * s[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        x, s = ctx.saved_tensors
        return grad_out * s[:, None], (grad_out * x).sum(1)

    @staticmethod
    def example_inputs():
        return _row_inputs(3)


class YonderRowScaleUnreduced(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "s",
           "note": "the per-row scale's gradient returned as the full (4, 4) product, not summed over each row"}

    @staticmethod
    def forward(ctx, x, s):
        ctx.save_for_backward(x, s)
        return x * s[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        x, s = ctx.saved_tensors
        grad_s = grad_out * x  # BUG
        return grad_out * s[:, None], grad_s

    @staticmethod
    def example_inputs():
        return _row_inputs(4)


def _ncl_inputs(seed):
    g = _gen(seed)
    return (torch.randn(2, 3, 5, dtype=torch.float64, generator=g),
            torch.randn(3, dtype=torch.float64, generator=g))


class YonderChannelScaleNCL(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, gamma):
        ctx.save_for_backward(x, gamma)
        return x * gamma[None, :, None]

    @staticmethod
    def backward(ctx, grad_out):
        x, gamma = ctx.saved_tensors
        return grad_out * gamma[None, :, None], (grad_out * x).sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        return _ncl_inputs(5)


class YonderChannelScaleNCLBatchOnly(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "gamma",
           "note": "the channel scale's gradient summed over the batch but not over length: (C, L) for a (C,) parameter"}

    @staticmethod
    def forward(ctx, x, gamma):
        ctx.save_for_backward(x, gamma)
        return x * gamma[None, :, None]

    @staticmethod
    def backward(ctx, grad_out):
        x, gamma = ctx.saved_tensors
        grad_gamma = (grad_out * x).sum(dim=0)  # BUG
        return grad_out * gamma[None, :, None], grad_gamma

    @staticmethod
    def example_inputs():
        return _ncl_inputs(6)


def _ht_inputs(seed):
    return (torch.randn(4, 5, dtype=torch.float64, generator=_gen(seed)) * 1.5,)


class YonderHardtanh(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(-1.0, 1.0)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out.masked_fill((x < -1.0) | (x > 1.0), 0.0)

    @staticmethod
    def example_inputs():
        return _ht_inputs(7)


class YonderHardtanhUpperOnly(torch.autograd.Function):
    bug = {"kind": "region", "input": "x",
           "note": "only the upper clip masked: x below -1 still passes the gradient"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(-1.0, 1.0)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out.masked_fill(x > 1.0, 0.0)  # BUG

    @staticmethod
    def example_inputs():
        return _ht_inputs(8)


def _gather_inputs(seed):
    src = torch.randn(5, 3, dtype=torch.float64, generator=_gen(seed))
    return src, torch.tensor([4, 0, 2, 0, 4, 4, 1])


class YonderGatherRows(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, src, index):
        idx = index[:, None].expand(-1, src.shape[1])
        ctx.save_for_backward(idx)
        ctx.rows = src.shape[0]
        return src.gather(0, idx)

    @staticmethod
    def backward(ctx, grad_out):
        (idx,) = ctx.saved_tensors
        grad = grad_out.new_zeros(ctx.rows, grad_out.shape[1])
        return grad.scatter_add_(0, idx, grad_out), None

    @staticmethod
    def example_inputs():
        return _gather_inputs(9)


class YonderGatherRowsScatter(torch.autograd.Function):
    bug = {"kind": "not_accumulated", "input": "src",
           "note": "scatter_ instead of scatter_add_: repeated indices keep one gradient instead of the sum"}

    @staticmethod
    def forward(ctx, src, index):
        idx = index[:, None].expand(-1, src.shape[1])
        ctx.save_for_backward(idx)
        ctx.rows = src.shape[0]
        return src.gather(0, idx)

    @staticmethod
    def backward(ctx, grad_out):
        (idx,) = ctx.saved_tensors
        grad = grad_out.new_zeros(ctx.rows, grad_out.shape[1])
        return grad.scatter_(0, idx, grad_out), None  # BUG

    @staticmethod
    def example_inputs():
        return _gather_inputs(10)


class YonderLogSigmoid(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return F.logsigmoid(x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * torch.sigmoid(-x)


class YonderLogSigmoidFlipped(torch.autograd.Function):
    bug = {"kind": "sign", "input": "x",
           "note": "d/dx log sigmoid(x) written sigmoid(x) - 1, the negative of 1 - sigmoid(x)"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return F.logsigmoid(x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * (torch.sigmoid(x) - 1.0)  # BUG


def _cl_inputs(seed):
    g = _gen(seed)
    return (torch.randn(2, 3, 4, dtype=torch.float64, generator=g),
            torch.randn(3, 5, dtype=torch.float64, generator=g))


class YonderChannelsLastProject(torch.autograd.Function):
    """x (N, C, L) moved to channels-last, flattened to rows and multiplied by w (C, O)."""
    bug = None

    @staticmethod
    def forward(ctx, x, w):
        n, c, l = x.shape
        rows = x.permute(0, 2, 1).reshape(n * l, c)
        ctx.save_for_backward(rows, w)
        ctx.shape = (n, c, l)
        return torch.matmul(rows, w).view(n, l, -1)

    @staticmethod
    def backward(ctx, grad_out):
        rows, w = ctx.saved_tensors
        n, c, l = ctx.shape
        g = grad_out.reshape(n * l, -1)
        grad_x = (g @ w.t()).view(n, l, c).permute(0, 2, 1)
        return grad_x, rows.t() @ g

    @staticmethod
    def example_inputs():
        return _cl_inputs(11)


class YonderChannelsLastProjectFlatBack(torch.autograd.Function):
    bug = {"kind": "missing_reshape", "input": "x",
           "note": "the row gradient (N*L, C) viewed straight as (N, C, L), skipping the (N, L, C) view and permute back"}

    @staticmethod
    def forward(ctx, x, w):
        n, c, l = x.shape
        rows = x.permute(0, 2, 1).reshape(n * l, c)
        ctx.save_for_backward(rows, w)
        ctx.shape = (n, c, l)
        return torch.matmul(rows, w).view(n, l, -1)

    @staticmethod
    def backward(ctx, grad_out):
        rows, w = ctx.saved_tensors
        n, c, l = ctx.shape
        g = grad_out.reshape(n * l, -1)
        grad_x = (g @ w.t()).reshape(n, c, l)  # BUG
        return grad_x, rows.t() @ g

    @staticmethod
    def example_inputs():
        return _cl_inputs(12)
