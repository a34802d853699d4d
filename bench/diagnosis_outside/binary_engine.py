import gradcli as torch

# Binary elementwise ops on gradcli's engine (no PyTorch needed): atan2, hypot, logaddexp, and a
# clamp whose lower and upper bounds are learned per column.
#
# BLIND corpus bench/diagnosis_outside (see README.md): used only to score gradcli's diagnosis.


def _seeded(*shape, seed, scale=1.0, shift=0.0, uniform=False):
    gen = torch.Generator().manual_seed(seed)
    make = torch.rand if uniform else torch.randn
    return make(*shape, generator=gen, dtype=torch.float64) * scale + shift


# ------------------------------------------------------------------------------------ atan2
class OutsideAtan2(torch.autograd.Function):
    """atan2(y, x): d/dy = x / r^2, d/dx = -y / r^2."""

    bug = None

    @staticmethod
    def forward(ctx, y, x):
        ctx.save_for_backward(y, x)
        return torch.atan2(y, x)

    @staticmethod
    def backward(ctx, grad_out):
        y, x = ctx.saved_tensors
        r2 = x * x + y * y
        return grad_out * x / r2, -grad_out * y / r2


class OutsideAtan2XSign(torch.autograd.Function):
    """atan2(y, x), backward from d atan(y/x)."""

    bug = {"kind": "sign", "input": "x",
           "note": "d atan2/dx = -y / r^2 is written +y / r^2"}

    @staticmethod
    def forward(ctx, y, x):
        ctx.save_for_backward(y, x)
        return torch.atan2(y, x)

    @staticmethod
    def backward(ctx, grad_out):
        y, x = ctx.saved_tensors
        ratio = y / x
        common = grad_out / (1.0 + ratio * ratio)
        grad_y = common / x
        grad_x = common * y / (x * x)  # BUG
        return grad_y, grad_x


# ------------------------------------------------------------------------------------ hypot
class OutsideHypot(torch.autograd.Function):
    """sqrt(a^2 + b^2); the output is saved and reused."""

    bug = None

    @staticmethod
    def forward(ctx, a, b):
        out = torch.hypot(a, b)
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        a, b, out = ctx.saved_tensors
        scale = grad_out / out
        return scale * a, scale * b


class OutsideHypotCopyPaste(torch.autograd.Function):
    """hypot(a, b), each gradient written on its own line."""

    bug = {"kind": "wrong_variable", "input": "b",
           "note": "db = g a / h: the line for a was copied and a left where b belongs"}

    @staticmethod
    def forward(ctx, a, b):
        out = torch.sqrt(a * a + b * b)
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        a, b, out = ctx.saved_tensors
        grad_a = grad_out * a / out
        grad_b = grad_out * a / out  # BUG
        return grad_a, grad_b


# -------------------------------------------------------------------------------- logaddexp
class OutsideLogAddExp(torch.autograd.Function):
    """log(exp(a) + exp(b)); d/da = exp(a - out)."""

    bug = None

    @staticmethod
    def forward(ctx, a, b):
        out = torch.logaddexp(a, b)
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        a, b, out = ctx.saved_tensors
        return grad_out * torch.exp(a - out), grad_out * torch.exp(b - out)


class OutsideLogAddExpSoftmaxWeights(torch.autograd.Function):
    """logaddexp by the max trick; backward from the two softmax weights."""

    bug = {"kind": "ignores_grad_output", "input": "a",
           "note": "a's softmax weight is returned as its gradient without multiplying by grad_out"}

    @staticmethod
    def forward(ctx, a, b):
        m = torch.maximum(a, b)
        out = m + torch.log(torch.exp(a - m) + torch.exp(b - m))
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        a, b, out = ctx.saved_tensors
        weight_a = torch.exp(a - out)  # BUG
        weight_b = torch.exp(b - out)
        return weight_a, grad_out * weight_b


class OutsideLogAddExpNoNumerator(torch.autograd.Function):
    """logaddexp; backward through the log of the sum of exponentials."""

    bug = {"kind": "none", "input": "a",
           "note": "d log(e^a + e^b)/da taken as 1 / (e^a + e^b): the e^a of the chain rule is lost, "
                   "a different formula (sigmoid(a - b) * e^-a)"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.logaddexp(a, b)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        total = torch.exp(a) + torch.exp(b)
        grad_a = grad_out / total  # BUG
        grad_b = grad_out * torch.exp(b) / total
        return grad_a, grad_b


# ------------------------------------------------------------------- clamp with learned bounds
def _clamp_inputs():
    x = _seeded(3, 4, seed=91, scale=1.5)
    lo = _seeded(4, seed=92, scale=-0.3, shift=-0.6, uniform=True)
    hi = _seeded(4, seed=93, scale=0.3, shift=0.6, uniform=True)
    return x, lo, hi


class OutsideLearnedClamp(torch.autograd.Function):
    """min(max(x, lo), hi) with bounds lo < hi learned per column; the bounds get the clipped gradient."""

    bug = None

    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x, lo, hi)
        return torch.minimum(torch.maximum(x, lo), hi)

    @staticmethod
    def backward(ctx, grad_out):
        x, lo, hi = ctx.saved_tensors
        zero = torch.zeros_like(grad_out)
        below = x < lo
        above = x > hi
        inside = torch.logical_not(torch.logical_or(below, above))
        grad_x = torch.where(inside, grad_out, zero)
        grad_lo = torch.where(below, grad_out, zero).sum(0)
        grad_hi = torch.where(above, grad_out, zero).sum(0)
        return grad_x, grad_lo, grad_hi

    @staticmethod
    def example_inputs():
        return _clamp_inputs()


class OutsideLearnedClampLowerOnly(torch.autograd.Function):
    """Clamp with learned bounds; the pass-through mask of x checked against lo."""

    bug = {"kind": "region", "input": "x",
           "note": "x passes the gradient wherever x > lo, also above hi where the output is hi"}

    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x, lo, hi)
        return torch.minimum(torch.maximum(x, lo), hi)

    @staticmethod
    def backward(ctx, grad_out):
        x, lo, hi = ctx.saved_tensors
        zero = torch.zeros_like(grad_out)
        grad_x = torch.where(x > lo, grad_out, zero)  # BUG
        grad_lo = torch.where(x < lo, grad_out, zero).sum(dim=0)
        grad_hi = torch.where(x > hi, grad_out, zero).sum(dim=0)
        return grad_x, grad_lo, grad_hi

    @staticmethod
    def example_inputs():
        return _clamp_inputs()


class OutsideLearnedClampFixedCeiling(torch.autograd.Function):
    """Clamp with learned bounds; the upper bound's gradient is set to zero."""

    bug = {"kind": "zero", "input": "hi",
           "note": "the ceiling is treated as a fixed hyper-parameter: zero gradient though clipped entries use it"}

    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x, lo, hi)
        return torch.minimum(torch.maximum(x, lo), hi)

    @staticmethod
    def backward(ctx, grad_out):
        x, lo, hi = ctx.saved_tensors
        zero = torch.zeros_like(grad_out)
        between = torch.logical_and(x >= lo, x <= hi)
        grad_x = torch.where(between, grad_out, zero)
        grad_lo = torch.where(x < lo, grad_out, zero).sum(0)
        grad_hi = torch.zeros_like(hi)  # BUG
        return grad_x, grad_lo, grad_hi

    @staticmethod
    def example_inputs():
        return _clamp_inputs()
