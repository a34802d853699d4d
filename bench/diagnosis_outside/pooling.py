"""Pooling with hand-written backwards: overlapping max pool by argmax + scatter, windowed max pool
by argmax + gather, Lp pool, softmax-weighted (attention) pool, global average under a mask.

BLIND corpus bench/diagnosis_outside (see README.md): used only to score gradcli's diagnosis.
"""
import torch


def _seeded(*shape, seed, scale=1.0, shift=0.0, uniform=False):
    gen = torch.Generator().manual_seed(seed)
    make = torch.rand if uniform else torch.randn
    return make(*shape, generator=gen, dtype=torch.float64) * scale + shift


# ------------------------------------------------------------ overlapping max pool (stride 1)
class OutsideOverlappingMaxPool1d(torch.autograd.Function):
    """Max over windows of 3 with stride 1: one input is often the max of several windows."""

    bug = None
    KERNEL = 3

    @staticmethod
    def forward(ctx, x):
        windows = x.unfold(-1, OutsideOverlappingMaxPool1d.KERNEL, 1)  # (N, C, L_out, k)
        values, local = windows.max(dim=-1)
        starts = torch.arange(windows.shape[-2])
        ctx.save_for_backward(local + starts)
        ctx.length = x.shape[-1]
        return values

    @staticmethod
    def backward(ctx, grad_out):
        (positions,) = ctx.saved_tensors
        grad_x = grad_out.new_zeros(*grad_out.shape[:-1], ctx.length)
        grad_x.scatter_add_(-1, positions, grad_out)
        return grad_x

    @staticmethod
    def example_inputs():
        return (_seeded(2, 3, 6, seed=31),)


class OutsideOverlappingMaxPool1dScatter(torch.autograd.Function):
    """Max over windows of 3 with stride 1, routed back with scatter_."""

    bug = {"kind": "not_accumulated", "input": "x",
           "note": "scatter_ overwrites: an input that is the max of several windows keeps one window's gradient"}
    KERNEL = 3

    @staticmethod
    def forward(ctx, x):
        k = OutsideOverlappingMaxPool1dScatter.KERNEL
        windows = x.unfold(2, k, 1)
        values, local = windows.max(dim=3)
        offset = torch.arange(windows.shape[2]).view(1, 1, -1)
        ctx.positions = local + offset
        ctx.input_shape = x.shape
        return values

    @staticmethod
    def backward(ctx, grad_out):
        grad_x = torch.zeros(ctx.input_shape, dtype=grad_out.dtype)
        grad_x.scatter_(2, ctx.positions, grad_out)  # BUG
        return grad_x

    @staticmethod
    def example_inputs():
        return (_seeded(2, 3, 6, seed=31),)


# ------------------------------------------------------- windowed max pool by argmax + gather
class OutsideWindowMaxPoolGather(torch.autograd.Function):
    """Non-overlapping windows of 2: argmax per window, turned into row positions, then gather."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        n, c, length = x.shape
        local = x.view(n, c, length // 2, 2).argmax(dim=-1)
        position = local + 2 * torch.arange(length // 2)
        ctx.save_for_backward(position)
        ctx.length = length
        return x.gather(-1, position)

    @staticmethod
    def backward(ctx, grad_out):
        (position,) = ctx.saved_tensors
        grad_x = grad_out.new_zeros(grad_out.shape[0], grad_out.shape[1], ctx.length)
        return grad_x.scatter(-1, position, grad_out)

    @staticmethod
    def example_inputs():
        return (_seeded(2, 2, 8, seed=32),)


class OutsideWindowMaxPoolLocalIndex(torch.autograd.Function):
    """Non-overlapping windows of 2; backward keeps both the window-local and the row position."""

    bug = {"kind": "wrong_variable", "input": "x",
           "note": "scatters with the window-local argmax (0 or 1) instead of the row position: every "
                   "gradient lands in the first window"}

    @staticmethod
    def forward(ctx, x):
        n, c, length = x.shape
        local = x.view(n, c, length // 2, 2).argmax(dim=-1)
        position = local + 2 * torch.arange(length // 2)
        ctx.save_for_backward(local, position)
        ctx.length = length
        return x.gather(-1, position)

    @staticmethod
    def backward(ctx, grad_out):
        local, position = ctx.saved_tensors
        grad_x = grad_out.new_zeros(grad_out.shape[0], grad_out.shape[1], ctx.length)
        grad_x.scatter_add_(-1, local, grad_out)  # BUG
        return grad_x

    @staticmethod
    def example_inputs():
        return (_seeded(2, 2, 8, seed=32),)


# -------------------------------------------------------------------------------- Lp pool
class OutsideLpPool1d(torch.autograd.Function):
    """(sum over a window of 2 of x^p)^(1/p), p = 3, on positive inputs."""

    bug = None
    P = 3.0

    @staticmethod
    def forward(ctx, x):
        p = OutsideLpPool1d.P
        n, c, length = x.shape
        out = x.pow(p).view(n, c, length // 2, 2).sum(-1).pow(1.0 / p)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, out = ctx.saved_tensors
        p = OutsideLpPool1d.P
        n, c, length = x.shape
        ratio = (x.view(n, c, length // 2, 2) / out.unsqueeze(-1)).pow(p - 1)
        return (grad_out.unsqueeze(-1) * ratio).reshape(n, c, length)

    @staticmethod
    def example_inputs():
        return (_seeded(2, 3, 6, seed=33, scale=1.5, shift=0.3, uniform=True),)


class OutsideLpPool1dPowerRule(torch.autograd.Function):
    """(sum over a window of 2 of x^p)^(1/p), p = 3, backward by the chain rule step by step."""

    bug = {"kind": "scale", "input": "x",
           "note": "d(s^(1/p)) = (1/p) s^(1/p-1) ds is kept but ds = p x^(p-1) dx loses its p: off by 1/p"}
    P = 3.0

    @staticmethod
    def forward(ctx, x):
        p = OutsideLpPool1dPowerRule.P
        n, c, length = x.shape
        s = x.pow(p).view(n, c, length // 2, 2).sum(-1)
        ctx.save_for_backward(x, s)
        return s.pow(1.0 / p)

    @staticmethod
    def backward(ctx, grad_out):
        x, s = ctx.saved_tensors
        p = OutsideLpPool1dPowerRule.P
        n, c, length = x.shape
        outer = (1.0 / p) * s.pow(1.0 / p - 1.0) * grad_out
        inner = x.pow(p - 1.0).view(n, c, length // 2, 2)  # BUG
        return (outer.unsqueeze(-1) * inner).view(n, c, length)

    @staticmethod
    def example_inputs():
        return (_seeded(2, 3, 6, seed=33, scale=1.5, shift=0.3, uniform=True),)


# ------------------------------------------------------------------ softmax-weighted pool
class OutsideAttentionPool(torch.autograd.Function):
    """out_b = sum_t a_bt x_bt with a_b = softmax(x_b q) over time, q a learned query."""

    bug = None

    @staticmethod
    def forward(ctx, x, q):
        weights = torch.softmax(x @ q, dim=1)  # (B, T)
        ctx.save_for_backward(x, q, weights)
        return (weights.unsqueeze(-1) * x).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        x, q, weights = ctx.saved_tensors
        grad_weights = torch.einsum("bd,btd->bt", grad_out, x)
        centred = grad_weights - (weights * grad_weights).sum(dim=1, keepdim=True)
        grad_scores = weights * centred
        grad_x = weights.unsqueeze(-1) * grad_out.unsqueeze(1) + grad_scores.unsqueeze(-1) * q
        grad_q = torch.einsum("bt,btd->d", grad_scores, x)
        return grad_x, grad_q

    @staticmethod
    def example_inputs():
        return _seeded(2, 4, 3, seed=34), _seeded(3, seed=35)


class OutsideAttentionPoolScoresOnly(torch.autograd.Function):
    """Attention pooling with a learned query, the gradient of x taken through the scores."""

    bug = {"kind": "missing_term", "input": "x",
           "note": "x enters twice (values and scores); the direct term a_t * grad_out of the values is lost"}

    @staticmethod
    def forward(ctx, x, q):
        scores = torch.matmul(x, q)
        weights = scores.softmax(dim=-1)
        ctx.save_for_backward(x, q, weights)
        return torch.einsum("bt,btd->bd", weights, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, q, weights = ctx.saved_tensors
        grad_weights = (x * grad_out.unsqueeze(1)).sum(-1)
        mean = (weights * grad_weights).sum(-1, keepdim=True)
        grad_scores = weights * (grad_weights - mean)
        grad_x = grad_scores.unsqueeze(-1) * q.view(1, 1, -1)  # BUG
        grad_q = (grad_scores.unsqueeze(-1) * x).sum(dim=(0, 1))
        return grad_x, grad_q

    @staticmethod
    def example_inputs():
        return _seeded(2, 4, 3, seed=34), _seeded(3, seed=35)


class OutsideAttentionPoolFrozenQuery(torch.autograd.Function):
    """Attention pooling with a learned query; backward gives the query nothing."""

    bug = {"kind": "zero", "input": "q",
           "note": "the query is treated as a constant and gets no gradient, though it moves the weights"}

    @staticmethod
    def forward(ctx, x, q):
        weights = torch.softmax(x @ q, dim=1)
        ctx.save_for_backward(x, q, weights)
        return (weights.unsqueeze(-1) * x).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        x, q, weights = ctx.saved_tensors
        grad_weights = torch.einsum("bd,btd->bt", grad_out, x)
        grad_scores = weights * (grad_weights - (weights * grad_weights).sum(1, keepdim=True))
        grad_x = weights[..., None] * grad_out[:, None, :] + grad_scores[..., None] * q
        grad_q = None  # BUG
        return grad_x, grad_q

    @staticmethod
    def example_inputs():
        return _seeded(2, 4, 3, seed=34), _seeded(3, seed=35)


# ------------------------------------------------------------ global average under a mask
def _mask():
    return torch.tensor([[True, False, True, True, False],
                         [False, True, False, False, False]])


class OutsideMaskedGlobalAverage(torch.autograd.Function):
    """Mean over the kept positions of each sequence (mask: bool, not differentiable)."""

    bug = None

    @staticmethod
    def forward(ctx, x, mask):
        keep = mask.to(x.dtype)
        count = keep.sum(-1, keepdim=True)  # (N, 1)
        ctx.save_for_backward(keep, count)
        return (x * keep[:, None, :]).sum(-1) / count

    @staticmethod
    def backward(ctx, grad_out):
        keep, count = ctx.saved_tensors
        share = (keep / count).unsqueeze(1)
        return grad_out.unsqueeze(-1) * share, None

    @staticmethod
    def example_inputs():
        return _seeded(2, 3, 5, seed=36), _mask()


class OutsideMaskedGlobalAverageSpread(torch.autograd.Function):
    """Mean over the kept positions; backward spreads grad_out / count along the sequence."""

    bug = {"kind": "region", "input": "x",
           "note": "the mask is not applied in backward: masked-out positions get grad_out / count too"}

    @staticmethod
    def forward(ctx, x, mask):
        keep = mask.to(x.dtype)
        ctx.count = keep.sum(dim=1, keepdim=True)
        ctx.length = x.shape[-1]
        return torch.einsum("ncl,nl->nc", x, keep) / ctx.count

    @staticmethod
    def backward(ctx, grad_out):
        per_position = grad_out / ctx.count
        grad_x = per_position.unsqueeze(-1).expand(-1, -1, ctx.length)  # BUG
        return grad_x.contiguous(), None

    @staticmethod
    def example_inputs():
        return _seeded(2, 3, 5, seed=36), _mask()
