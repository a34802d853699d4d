import gradcli as torch

# Centred moments over an axis and a linear recurrence over time by Python loops, on gradcli's
# engine (no PyTorch needed).
#
# BLIND corpus bench/diagnosis_outside (see README.md): used only to score gradcli's diagnosis.


def _seeded(*shape, seed, scale=1.0, shift=0.0, uniform=False):
    gen = torch.Generator().manual_seed(seed)
    make = torch.rand if uniform else torch.randn
    return make(*shape, generator=gen, dtype=torch.float64) * scale + shift


# -------------------------------------------------------------------------------- variance
class OutsideRowVariance(torch.autograd.Function):
    """Unbiased variance of each row: sum (x - mean)^2 / (n - 1)."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        centred = x - x.mean(dim=1, keepdim=True)
        ctx.save_for_backward(centred)
        return (centred * centred).sum(dim=1) / (x.shape[1] - 1)

    @staticmethod
    def backward(ctx, grad_out):
        (centred,) = ctx.saved_tensors
        n = centred.shape[1]
        return 2.0 * grad_out.unsqueeze(1) * centred / (n - 1)


class OutsideRowVarianceBiasedBackward(torch.autograd.Function):
    """Unbiased row variance; the backward copied from a biased (population) variance."""

    bug = {"kind": "scale", "input": "x",
           "note": "backward divides by n where forward divides by n - 1: off by (n - 1) / n"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.var(x, dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        n = x.shape[1]
        centred = x - x.mean(dim=1, keepdim=True)
        grad_x = 2.0 * grad_out[:, None] * centred / n  # BUG
        return grad_x


class OutsideRowVarianceColumnMean(torch.autograd.Function):
    """Unbiased row variance; backward re-centres the saved input itself."""

    bug = {"kind": "wrong_axis", "input": "x",
           "note": "backward re-centres x by the column means (dim 0) instead of each row's mean"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        mean = x.mean(dim=1, keepdim=True)
        return ((x - mean) ** 2).sum(dim=1) / (x.shape[1] - 1)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        mean = x.mean(dim=0, keepdim=True)  # BUG
        scale = 2.0 / (x.shape[1] - 1)
        return scale * grad_out.unsqueeze(1) * (x - mean)


# -------------------------------------------------------------------------------- skewness
def _skew_input():
    return (_seeded(3, 5, seed=111),)


class OutsideRowSkewness(torch.autograd.Function):
    """m3 / m2^1.5 per row with m_k = mean((x - mean)^k)."""

    bug = None

    @staticmethod
    def forward(ctx, x):
        d = x - x.mean(dim=1, keepdim=True)
        m2 = (d ** 2).mean(dim=1, keepdim=True)
        m3 = (d ** 3).mean(dim=1, keepdim=True)
        ctx.save_for_backward(d, m2, m3)
        return (m3 / m2 ** 1.5).squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        d, m2, m3 = ctx.saved_tensors
        n = d.shape[1]
        dm2 = 2.0 * d / n
        dm3 = (3.0 * d ** 2 - 3.0 * m2) / n
        dskew = dm3 / m2 ** 1.5 - 1.5 * m3 / m2 ** 2.5 * dm2
        return grad_out.unsqueeze(1) * dskew

    @staticmethod
    def example_inputs():
        return _skew_input()


class OutsideRowSkewnessFixedMean(torch.autograd.Function):
    """Row skewness, the third moment differentiated as if the mean were fixed."""

    bug = {"kind": "missing_term", "input": "x",
           "note": "dm3/dx = (3 d^2 - 3 m2)/n loses the -3 m2 / n that comes through the mean"}

    @staticmethod
    def forward(ctx, x):
        d = x - x.mean(dim=1, keepdim=True)
        m2 = (d * d).mean(dim=1, keepdim=True)
        m3 = (d * d * d).mean(dim=1, keepdim=True)
        ctx.save_for_backward(d, m2, m3)
        return (m3 / torch.sqrt(m2) ** 3).squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        d, m2, m3 = ctx.saved_tensors
        n = d.shape[1]
        dm3 = 3.0 * d * d / n  # BUG
        dm2 = 2.0 * d / n
        std3 = torch.sqrt(m2) ** 3
        dskew = dm3 / std3 - 1.5 * (m3 / (std3 * m2)) * dm2
        return grad_out[:, None] * dskew

    @staticmethod
    def example_inputs():
        return _skew_input()


class OutsideRowSkewnessKurtosisFormula(torch.autograd.Function):
    """Row skewness; the backward of a neighbouring moment function pasted in."""

    bug = {"kind": "none", "input": "x",
           "note": "4 d^3 / (n m2^2), a kurtosis-style derivative, in place of the skewness gradient"}

    @staticmethod
    def forward(ctx, x):
        d = x - x.mean(dim=1, keepdim=True)
        m2 = (d ** 2).mean(dim=1, keepdim=True)
        m3 = (d ** 3).mean(dim=1, keepdim=True)
        ctx.save_for_backward(d, m2)
        return (m3 / m2 ** 1.5).squeeze(1)

    @staticmethod
    def backward(ctx, grad_out):
        d, m2 = ctx.saved_tensors
        n = d.shape[1]
        dskew = 4.0 * d ** 3 / (n * m2 ** 2)  # BUG
        return grad_out.unsqueeze(1) * dskew

    @staticmethod
    def example_inputs():
        return _skew_input()


# ------------------------------------------------------------------- recurrence over time
def _recurrence_inputs():
    return _seeded(3, 5, seed=112), _seeded(3, seed=113, scale=0.6, shift=0.3, uniform=True)


def _scan(x, a):
    """h_t = a * h_{t-1} + x_t, h_{-1} = 0, over the time axis (dim 1) of x (B, T); a (B,)."""
    h = torch.zeros_like(x[:, 0])
    states = []
    for t in range(x.shape[1]):
        h = a * h + x[:, t]
        states.append(h)
    return torch.stack(states, dim=1)


class OutsideLinearRecurrence(torch.autograd.Function):
    """All states of h_t = a h_{t-1} + x_t with a per-sample decay a; backward by a reverse loop."""

    bug = None

    @staticmethod
    def forward(ctx, x, a):
        states = _scan(x, a)
        ctx.save_for_backward(a, states)
        return states

    @staticmethod
    def backward(ctx, grad_out):
        a, states = ctx.saved_tensors
        steps = states.shape[1]
        carry = torch.zeros_like(a)
        grad_cols = [None] * steps
        grad_a = torch.zeros_like(a)
        for t in reversed(range(steps)):
            carry = grad_out[:, t] + a * carry
            grad_cols[t] = carry
            if t > 0:
                grad_a = grad_a + carry * states[:, t - 1]
        return torch.stack(grad_cols, dim=1), grad_a

    @staticmethod
    def example_inputs():
        return _recurrence_inputs()


class OutsideLinearRecurrenceForwardLoop(torch.autograd.Function):
    """Linear recurrence; backward carries the adjoint with a loop over time."""

    bug = {"kind": "missing_flip", "input": "x",
           "note": "the adjoint is carried forward in time (t = 0..T-1) instead of from the last step back"}

    @staticmethod
    def forward(ctx, x, a):
        states = _scan(x, a)
        ctx.save_for_backward(a, states)
        return states

    @staticmethod
    def backward(ctx, grad_out):
        a, states = ctx.saved_tensors
        steps = states.shape[1]
        carry = torch.zeros_like(a)
        grad_cols = []
        for t in range(steps):  # BUG
            carry = grad_out[:, t] + a * carry
            grad_cols.append(carry)
        grad_x = torch.stack(grad_cols, dim=1)
        prev = torch.cat([torch.zeros_like(states[:, :1]), states[:, :-1]], dim=1)
        grad_a = (grad_x * prev).sum(dim=1)
        return grad_x, grad_a

    @staticmethod
    def example_inputs():
        return _recurrence_inputs()


class OutsideLinearRecurrenceDecayOverwrite(torch.autograd.Function):
    """Linear recurrence; the decay's gradient collected inside the reverse loop."""

    bug = {"kind": "not_accumulated", "input": "a",
           "note": "grad_a is assigned at each step instead of summed over time: only step 1's term survives"}

    @staticmethod
    def forward(ctx, x, a):
        states = _scan(x, a)
        ctx.save_for_backward(a, states)
        ctx.steps = x.shape[1]
        return states

    @staticmethod
    def backward(ctx, grad_out):
        a, states = ctx.saved_tensors
        adjoint = torch.zeros_like(a)
        grad_x_cols = []
        grad_a = torch.zeros_like(a)
        for t in range(ctx.steps - 1, -1, -1):
            adjoint = grad_out[:, t] + a * adjoint
            grad_x_cols.insert(0, adjoint)
            if t >= 1:
                grad_a = adjoint * states[:, t - 1]  # BUG
        return torch.stack(grad_x_cols, dim=1), grad_a

    @staticmethod
    def example_inputs():
        return _recurrence_inputs()
