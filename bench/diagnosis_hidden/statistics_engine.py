"""Statistics on gradcli's engine, with hand-written backwards: variance and standard deviation with
Bessel's correction, a weighted mean, logsumexp, an exponential moving average over time, the third
central moment and a mean-centering shift with a broadcast offset (bench/diagnosis_hidden)."""
import gradcli as torch


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0):
    return torch.randn(*shape, dtype=torch.float64, generator=_gen(seed))


class HiddenVarCorrected(torch.autograd.Function):
    """Unbiased variance of each row (correction 1)."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        centered = x - x.mean(1, keepdim=True)
        ctx.save_for_backward(centered)
        return (centered * centered).sum(1) / (x.shape[1] - 1)

    @staticmethod
    def backward(ctx, grad_out):
        (centered,) = ctx.saved_tensors
        return grad_out[:, None] * 2 * centered / (centered.shape[1] - 1)


class HiddenVarCorrectedDivisor(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the backward divides by n while the forward divides by n - 1"}

    @staticmethod
    def forward(ctx, x):
        centered = x - x.mean(1, keepdim=True)
        ctx.save_for_backward(centered)
        return (centered * centered).sum(1) / (x.shape[1] - 1)

    @staticmethod
    def backward(ctx, grad_out):
        (centered,) = ctx.saved_tensors
        return grad_out[:, None] * 2 * centered / centered.shape[1]  # BUG


def _std_forward(ctx, x):
    centered = x - x.mean(0, keepdim=True)
    var = (centered * centered).sum(0, keepdim=True) / (x.shape[0] - 1)
    std = var.sqrt()
    ctx.save_for_backward(centered, var, std)
    return std.squeeze(0)


class HiddenStdColumns(torch.autograd.Function):
    """Unbiased standard deviation of each column (reduced over dim 0)."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        return _std_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        centered, var, std = ctx.saved_tensors
        return grad_out[None, :] * centered / ((centered.shape[0] - 1) * std)


class HiddenStdColumnsVariance(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "x",
           "note": "divides by the saved variance where the standard deviation belongs"}

    @staticmethod
    def forward(ctx, x):
        return _std_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        centered, var, std = ctx.saved_tensors
        return grad_out[None, :] * centered / ((centered.shape[0] - 1) * var)  # BUG


class HiddenStdColumnsAbsDeviation(torch.autograd.Function):
    bug = {"kind": "none", "input": "x",
           "note": "the backward of the mean absolute deviation, sign(x - mean) / n, used for std"}

    @staticmethod
    def forward(ctx, x):
        return _std_forward(ctx, x)

    @staticmethod
    def backward(ctx, grad_out):
        centered, var, std = ctx.saved_tensors
        return grad_out[None, :] * centered.sign() / centered.shape[0]  # BUG


def _weighted_inputs():
    return _randn(3, 4, seed=110), torch.rand(4, dtype=torch.float64, generator=_gen(111)) + 0.5


class HiddenWeightedMean(torch.autograd.Function):
    """y_i = sum_j w_j x_ij / sum_j w_j with positive weights w [4]."""

    bug = None

    @staticmethod
    def forward(ctx, x, w):
        total = w.sum()
        y = (x * w).sum(1) / total
        ctx.save_for_backward(x, w, y, total)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, w, y, total = ctx.saved_tensors
        g = grad_out[:, None]
        return g * w / total, (g * (x - y[:, None])).sum(0) / total

    @staticmethod
    def example_inputs():
        return _weighted_inputs()


class HiddenWeightedMeanNormaliser(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "w",
           "note": "the weights' gradient forgets the quotient rule's -y term from sum(w)"}

    @staticmethod
    def forward(ctx, x, w):
        total = w.sum()
        y = (x * w).sum(1) / total
        ctx.save_for_backward(x, w, y, total)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, w, y, total = ctx.saved_tensors
        g = grad_out[:, None]
        grad_w = (g * x).sum(0) / total  # BUG
        return g * w / total, grad_w

    @staticmethod
    def example_inputs():
        return _weighted_inputs()


class HiddenLogSumExpRows(torch.autograd.Function):
    """Stable logsumexp of each row."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        peak = x.amax(1, keepdim=True)
        shifted = x - peak
        log_total = shifted.exp().sum(1, keepdim=True).log()
        ctx.save_for_backward(shifted, log_total)
        return (peak + log_total).squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        shifted, log_total = ctx.saved_tensors
        return grad_out[:, None] * (shifted - log_total).exp()


class HiddenLogSumExpRowsBuffer(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "exponentiates the saved shifted tensor in place to save memory"}

    @staticmethod
    def forward(ctx, x):
        peak = x.amax(1, keepdim=True)
        shifted = x - peak
        ctx.save_for_backward(shifted)
        weights = shifted.exp_()  # BUG
        log_total = weights.sum(1, keepdim=True).log()
        ctx.log_total = log_total
        return (peak + log_total).squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        (shifted,) = ctx.saved_tensors
        return grad_out[:, None] * (shifted - ctx.log_total).exp()


def _ema_inputs():
    return _randn(5, 3, seed=112), 0.7


class HiddenMovingAverage(torch.autograd.Function):
    """y_t = alpha y_{t-1} + (1 - alpha) x_t over time (dim 0), y_{-1} = 0; alpha a Python float."""

    bug = None

    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        rows = []
        y = torch.zeros_like(x[0])
        for t in range(x.shape[0]):
            y = alpha * y + (1 - alpha) * x[t]
            rows.append(y)
        return torch.stack(rows)

    @staticmethod
    def backward(ctx, grad_out):
        alpha = ctx.alpha
        grads = []
        carry = torch.zeros_like(grad_out[0])
        for t in range(grad_out.shape[0] - 1, -1, -1):
            carry = grad_out[t] + alpha * carry
            grads.append((1 - alpha) * carry)
        return torch.stack(grads[::-1]), None

    @staticmethod
    def example_inputs():
        return _ema_inputs()


class HiddenMovingAverageInputWeight(torch.autograd.Function):
    bug = {"kind": "scale", "input": "x",
           "note": "the input's gradient leaves out the constant (1 - alpha) weight"}

    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        rows = []
        y = torch.zeros_like(x[0])
        for t in range(x.shape[0]):
            y = alpha * y + (1 - alpha) * x[t]
            rows.append(y)
        return torch.stack(rows)

    @staticmethod
    def backward(ctx, grad_out):
        alpha = ctx.alpha
        grads = []
        carry = torch.zeros_like(grad_out[0])
        for t in range(grad_out.shape[0] - 1, -1, -1):
            carry = grad_out[t] + alpha * carry
            grads.append(carry)  # BUG
        return torch.stack(grads[::-1]), None

    @staticmethod
    def example_inputs():
        return _ema_inputs()


class HiddenThirdMoment(torch.autograd.Function):
    """The third central moment mean((x - mean)^3) of each row."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        centered = x - x.mean(1, keepdim=True)
        ctx.save_for_backward(centered)
        return (centered ** 3).mean(1)

    @staticmethod
    def backward(ctx, grad_out):
        (centered,) = ctx.saved_tensors
        sq = centered ** 2
        n = centered.shape[1]
        return grad_out[:, None] * 3 / n * (sq - sq.mean(1, keepdim=True))


class HiddenThirdMomentMeanPath(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "x",
           "note": "the term through the mean, -mean((x - m)^2), is added instead of subtracted"}

    @staticmethod
    def forward(ctx, x):
        centered = x - x.mean(1, keepdim=True)
        ctx.save_for_backward(centered)
        return (centered ** 3).mean(1)

    @staticmethod
    def backward(ctx, grad_out):
        (centered,) = ctx.saved_tensors
        sq = centered ** 2
        n = centered.shape[1]
        return grad_out[:, None] * 3 / n * (sq + sq.mean(1, keepdim=True))  # BUG


def _shift_inputs():
    return _randn(3, 4, seed=113), _randn(4, seed=114)


class HiddenCenterShift(torch.autograd.Function):
    """y = x - mean over dim 0 + offset, the offset [4] broadcast over rows."""

    bug = None

    @staticmethod
    def forward(ctx, x, offset):
        return x - x.mean(0, keepdim=True) + offset

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out - grad_out.mean(0, keepdim=True), grad_out.sum(0)

    @staticmethod
    def example_inputs():
        return _shift_inputs()


class HiddenCenterShiftOffsetConst(torch.autograd.Function):
    bug = {"kind": "zero", "input": "offset",
           "note": "treats the offset as a constant and returns zeros for it"}

    @staticmethod
    def forward(ctx, x, offset):
        return x - x.mean(0, keepdim=True) + offset

    @staticmethod
    def backward(ctx, grad_out):
        grad_offset = torch.zeros_like(grad_out[0])  # BUG
        return grad_out - grad_out.mean(0, keepdim=True), grad_offset

    @staticmethod
    def example_inputs():
        return _shift_inputs()
