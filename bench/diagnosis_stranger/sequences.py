"""Sequences with lengths and time: a masked mean over time by lengths, a causal conv1d by left
padding (with bias), a temporal shift by roll and a masked max over time."""
import torch
import torch.nn.functional as F


def _lengths_mask(lengths, steps):
    return torch.arange(steps)[None, :] < lengths[:, None]  # (B, T)


def _mean_inputs():
    gen = torch.Generator().manual_seed(601)
    return torch.randn(3, 5, 2, dtype=torch.float64, generator=gen), torch.tensor([5, 2, 3])


class StrangerMaskedMeanOverTime(torch.autograd.Function):
    """(B, T, F) -> (B, F): the mean over the first lengths[b] steps."""

    bug = None

    @staticmethod
    def forward(ctx, x, lengths):
        mask = _lengths_mask(lengths, x.shape[1]).to(x.dtype)
        denom = lengths.to(x.dtype)[:, None]
        ctx.save_for_backward(mask, denom)
        return (x * mask[..., None]).sum(1) / denom

    @staticmethod
    def backward(ctx, grad_out):
        mask, denom = ctx.saved_tensors
        return (grad_out / denom)[:, None, :] * mask[..., None], None

    @staticmethod
    def example_inputs():
        return _mean_inputs()


class StrangerMaskedMeanOverTimeInclusiveMask(torch.autograd.Function):
    """Masked mean by lengths, backward rebuilding the mask step by step."""

    bug = {"kind": "region", "input": "x",
           "note": "the backward's mask is t <= length, one padded step too many per sequence"}

    @staticmethod
    def forward(ctx, x, lengths):
        valid = torch.arange(x.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)
        ctx.save_for_backward(lengths)
        ctx.steps = x.shape[1]
        return x.masked_fill(~valid.unsqueeze(-1), 0.0).sum(1) / lengths.unsqueeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        (lengths,) = ctx.saved_tensors
        per_step = grad_out / lengths.unsqueeze(1).to(grad_out.dtype)
        grad_x = per_step.unsqueeze(1).repeat(1, ctx.steps, 1)
        for b in range(grad_x.shape[0]):
            keep = int(lengths[b]) + 1  # BUG
            grad_x[b, keep:] = 0
        return grad_x, None

    @staticmethod
    def example_inputs():
        return _mean_inputs()


def _conv_inputs():
    gen = torch.Generator().manual_seed(602)
    return (torch.randn(1, 2, 6, dtype=torch.float64, generator=gen),
            torch.randn(2, 2, 3, dtype=torch.float64, generator=gen),
            torch.randn(2, dtype=torch.float64, generator=gen))


class StrangerCausalConv1d(torch.autograd.Function):
    """y = conv1d(pad(x, (K-1, 0)), w, b): output t sees inputs t-K+1 .. t only."""

    bug = None

    @staticmethod
    def forward(ctx, x, weight, bias):
        k = weight.shape[-1]
        padded = F.pad(x, (k - 1, 0))
        ctx.save_for_backward(padded, weight)
        return F.conv1d(padded, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        padded, weight = ctx.saved_tensors
        k = weight.shape[-1]
        steps = grad_out.shape[-1]
        grad_padded = torch.zeros_like(padded)
        grad_w = torch.zeros_like(weight)
        for tap in range(k):
            window = padded[:, :, tap:tap + steps]
            grad_padded[:, :, tap:tap + steps] += torch.einsum("bot,oc->bct", grad_out, weight[:, :, tap])
            grad_w[:, :, tap] = torch.einsum("bot,bct->oc", grad_out, window)
        return grad_padded[:, :, k - 1:], grad_w, grad_out.sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        return _conv_inputs()


class StrangerCausalConv1dUnflippedCorrelation(torch.autograd.Function):
    """Causal conv1d whose gradients are themselves convolutions (F.conv1d)."""

    bug = {"kind": "missing_flip", "input": "x",
           "note": "the input gradient correlates grad_out with the kernel without flipping it "
                   "along time"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.k = weight.shape[-1]
        padded = F.pad(x, (ctx.k - 1, 0))
        ctx.save_for_backward(padded, weight)
        return F.conv1d(padded, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        padded, weight = ctx.saved_tensors
        k = ctx.k
        # grad_x[s] = sum_j W[:, :, K-1-j]^T grad_out[s + j]
        grad_x = F.conv1d(F.pad(grad_out, (0, k - 1)), weight.transpose(0, 1))  # BUG
        # grad_w[o, c, k] = sum_{b,t} grad_out[b, o, t] padded[b, c, t + k]
        grad_w = F.conv1d(padded.transpose(0, 1), grad_out.transpose(0, 1)).transpose(0, 1)
        grad_b = grad_out.sum(-1).sum(0)
        return grad_x, grad_w, grad_b

    @staticmethod
    def example_inputs():
        return _conv_inputs()


class StrangerCausalConv1dTapMajorWeight(torch.autograd.Function):
    """Causal conv1d as a matmul on unfolded windows flattened tap-major (K, C)."""

    bug = {"kind": "missing_reshape", "input": "weight",
           "note": "columns are flattened (K, C) and the weight as w.permute(0, 2, 1); the flat "
                   "weight gradient is viewed as (O, C, K) without the permute back"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        o, c, k = weight.shape
        windows = F.pad(x, (k - 1, 0)).unfold(-1, k, 1)  # (B, C, T, K)
        cols = windows.permute(0, 2, 3, 1).reshape(x.shape[0], x.shape[-1], k * c)
        w_flat = weight.permute(0, 2, 1).reshape(o, k * c)
        ctx.save_for_backward(cols, w_flat)
        ctx.shape = (x.shape, weight.shape)
        return (cols @ w_flat.T).transpose(1, 2) + bias[:, None]

    @staticmethod
    def backward(ctx, grad_out):
        cols, w_flat = ctx.saved_tensors
        x_shape, (o, c, k) = ctx.shape
        g = grad_out.transpose(1, 2)  # (B, T, O)
        grad_w = (g.reshape(-1, o).T @ cols.reshape(-1, k * c)).view(o, c, k)  # BUG
        grad_cols = (g @ w_flat).view(x_shape[0], x_shape[-1], k, c)
        grad_padded = torch.zeros(x_shape[0], c, x_shape[-1] + k - 1, dtype=g.dtype)
        for tap in range(k):
            grad_padded[:, :, tap:tap + x_shape[-1]] += grad_cols[:, :, tap, :].transpose(1, 2)
        return grad_padded[:, :, k - 1:], grad_w, g.sum((0, 1))

    @staticmethod
    def example_inputs():
        return _conv_inputs()


class StrangerCausalConv1dBiasPerStep(torch.autograd.Function):
    """Causal conv1d with conv_transpose1d for the input gradient."""

    bug = {"kind": "not_reduced", "input": "bias",
           "note": "the bias gradient is summed over the batch only, not over time: (O, T) for "
                   "a (O,) bias (torch refuses the shape)"}

    @staticmethod
    def forward(ctx, x, weight, bias):
        pad = weight.shape[-1] - 1
        padded = F.pad(x, (pad, 0))
        ctx.pad = pad
        ctx.save_for_backward(padded, weight)
        return F.conv1d(padded, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        padded, weight = ctx.saved_tensors
        grad_padded = F.conv_transpose1d(grad_out, weight)
        grad_x = grad_padded[..., ctx.pad:]
        grad_w = torch.einsum("bot,bctk->ock", grad_out, padded.unfold(-1, weight.shape[-1], 1))
        grad_b = grad_out.sum(0)  # BUG
        return grad_x, grad_w, grad_b

    @staticmethod
    def example_inputs():
        return _conv_inputs()


def _shift_inputs():
    gen = torch.Generator().manual_seed(603)
    return (torch.randn(2, 4, 8, dtype=torch.float64, generator=gen),)  # (B, T, C)


class StrangerTemporalShift(torch.autograd.Function):
    """TSM-style shift by roll: channels [0, 2) move forward one step in time, [2, 4) back one."""

    bug = None
    FOLD = 2

    @staticmethod
    def forward(ctx, x):
        f = StrangerTemporalShift.FOLD
        out = x.clone()
        out[:, :, :f] = torch.roll(x[:, :, :f], shifts=1, dims=1)
        out[:, :, f:2 * f] = torch.roll(x[:, :, f:2 * f], shifts=-1, dims=1)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        f = StrangerTemporalShift.FOLD
        grad = grad_out.clone()
        grad[:, :, :f] = torch.roll(grad_out[:, :, :f], shifts=-1, dims=1)
        grad[:, :, f:2 * f] = torch.roll(grad_out[:, :, f:2 * f], shifts=1, dims=1)
        return grad

    @staticmethod
    def example_inputs():
        return _shift_inputs()


class StrangerTemporalShiftSameDirection(torch.autograd.Function):
    """Temporal shift with one roll per group of channels in a table."""

    bug = {"kind": "missing_flip", "input": "x", "also": ["transposed"],
           "note": "backward rolls each group by the forward's own shift instead of undoing it"}
    SHIFTS = ((0, 2, 1), (2, 4, -1))

    @staticmethod
    def forward(ctx, x):
        parts = []
        for lo, hi, step in StrangerTemporalShiftSameDirection.SHIFTS:
            parts.append(x[..., lo:hi].roll(step, 1))
        parts.append(x[..., 4:])
        return torch.cat(parts, dim=-1)

    @staticmethod
    def backward(ctx, grad_out):
        parts = []
        for lo, hi, step in StrangerTemporalShiftSameDirection.SHIFTS:
            parts.append(grad_out[..., lo:hi].roll(step, 1))  # BUG
        parts.append(grad_out[..., 4:])
        return torch.cat(parts, dim=-1)

    @staticmethod
    def example_inputs():
        return _shift_inputs()


class StrangerTemporalShiftRollsChannels(torch.autograd.Function):
    """Temporal shift, the inverse roll written with negative dims."""

    bug = {"kind": "wrong_axis", "input": "x",
           "note": "the inverse roll runs over dim -1 (channels) instead of dim -2 (time)"}

    @staticmethod
    def forward(ctx, x):
        y = torch.empty_like(x)
        y[..., 0:2] = x[..., 0:2].roll(1, -2)
        y[..., 2:4] = x[..., 2:4].roll(-1, -2)
        y[..., 4:] = x[..., 4:]
        return y

    @staticmethod
    def backward(ctx, grad_out):
        grad = grad_out.clone()
        grad[..., 0:2] = grad_out[..., 0:2].roll(-1, -1)  # BUG
        grad[..., 2:4] = grad_out[..., 2:4].roll(1, -2)
        return grad

    @staticmethod
    def example_inputs():
        return _shift_inputs()


def _max_inputs():
    gen = torch.Generator().manual_seed(604)
    x = torch.randn(3, 4, 2, dtype=torch.float64, generator=gen)
    lengths = torch.tensor([4, 1, 3])
    padded = ~_lengths_mask(lengths, 4)
    x = torch.where(padded[..., None], x.abs() + 3.0, x)  # padding holds the largest values
    return x, lengths


class StrangerMaskedMaxOverTime(torch.autograd.Function):
    """(B, T, F) -> (B, F): the max over the first lengths[b] steps."""

    bug = None

    @staticmethod
    def forward(ctx, x, lengths):
        valid = _lengths_mask(lengths, x.shape[1])
        masked = x.masked_fill(~valid[..., None], float("-inf"))
        out, where = masked.max(dim=1)
        ctx.save_for_backward(where)
        ctx.in_shape = x.shape
        return out

    @staticmethod
    def backward(ctx, grad_out):
        (where,) = ctx.saved_tensors
        grad = grad_out.new_zeros(ctx.in_shape)
        grad.scatter_(1, where.unsqueeze(1), grad_out.unsqueeze(1))
        return grad, None

    @staticmethod
    def example_inputs():
        return _max_inputs()


class StrangerMaskedMaxOverTimeArgmaxUnmasked(torch.autograd.Function):
    """Masked max over time whose backward finds the winners again from the saved input."""

    bug = {"kind": "region", "input": "x",
           "note": "the backward's argmax runs over all steps, padding included, so the gradient "
                   "lands on padded steps"}

    @staticmethod
    def forward(ctx, x, lengths):
        valid = torch.arange(x.shape[1])[None, :, None] < lengths[:, None, None]
        ctx.save_for_backward(x)
        return torch.where(valid, x, torch.full_like(x, float("-inf"))).amax(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        winners = x.argmax(dim=1, keepdim=True)  # BUG
        onehot = torch.zeros_like(x).scatter_(1, winners, 1.0)
        return onehot * grad_out.unsqueeze(1), None

    @staticmethod
    def example_inputs():
        return _max_inputs()


class StrangerMaskedMaxOverTimeSoftWeights(torch.autograd.Function):
    """Masked max over time whose backward spreads the gradient over the valid steps."""

    bug = {"kind": "none", "input": "x",
           "note": "the gradient is spread by softmax weights over the valid steps, the "
                   "derivative of a logsumexp, not of a max"}

    @staticmethod
    def forward(ctx, x, lengths):
        valid = _lengths_mask(lengths, x.shape[1]).unsqueeze(-1)
        masked = x.masked_fill(~valid, float("-inf"))
        ctx.save_for_backward(masked)
        return masked.max(dim=1).values

    @staticmethod
    def backward(ctx, grad_out):
        (masked,) = ctx.saved_tensors
        weights = torch.softmax(masked, dim=1)  # BUG
        return weights * grad_out[:, None, :], None

    @staticmethod
    def example_inputs():
        return _max_inputs()
