"""Quadrature of sampled functions: trapezoid and Simpson rules with learned per-row spacing, and the
cumulative trapezoid integral (a running cumsum)."""
import torch


def _samples(seed, n=7):
    gen = torch.Generator().manual_seed(seed)
    f = torch.randn(3, n, dtype=torch.float64, generator=gen)
    h = torch.rand(3, dtype=torch.float64, generator=gen) * 0.5 + 0.2
    return f.requires_grad_(), h.requires_grad_()


def _trap_weights(n, like):
    w = torch.ones(n, dtype=like.dtype)
    w[0] = w[-1] = 0.5
    return w


class BeyondTrapezoid(torch.autograd.Function):
    """I_b = h_b * (f_0/2 + f_1 + ... + f_{N-2} + f_{N-1}/2), one integral per row."""
    bug = None

    @staticmethod
    def forward(ctx, f, h):
        w = _trap_weights(f.shape[1], f)
        ctx.save_for_backward(f, h, w)
        return h * (f * w).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        f, h, w = ctx.saved_tensors
        grad_f = (grad_out * h)[:, None] * w
        grad_h = grad_out * (f * w).sum(dim=1)
        return grad_f, grad_h

    @staticmethod
    def example_inputs():
        return _samples(31)


class BeyondTrapezoidEndWeights(torch.autograd.Function):
    bug = {"kind": "region", "input": "f",
           "note": "backward builds the weights as all ones, so the two end samples get h instead of h/2"}

    @staticmethod
    def forward(ctx, f, h):
        w = _trap_weights(f.shape[1], f)
        ctx.save_for_backward(f, h, w)
        return h * (f * w).sum(dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        f, h, w = ctx.saved_tensors
        grad_f = (grad_out * h)[:, None] * torch.ones_like(f)  # BUG
        grad_h = grad_out * (f * w).sum(dim=1)
        return grad_f, grad_h

    @staticmethod
    def example_inputs():
        return _samples(31)


# ------------------------------------------------------------------------------ Simpson
def _simpson_weights(n, like):
    w = torch.ones(n, dtype=like.dtype)
    w[1:-1:2] = 4.0
    w[2:-1:2] = 2.0
    return w


class BeyondSimpson(torch.autograd.Function):
    """Composite Simpson's rule (N odd): I_b = h_b / 3 * sum_i w_i f_bi, w = 1 4 2 4 ... 4 1."""
    bug = None

    @staticmethod
    def forward(ctx, f, h):
        w = _simpson_weights(f.shape[1], f)
        out = h / 3 * (f * w).sum(dim=1)
        ctx.save_for_backward(f, h, w, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        f, h, w, out = ctx.saved_tensors
        grad_f = (grad_out * h / 3)[:, None] * w
        grad_h = grad_out * out / h
        return grad_f, grad_h

    @staticmethod
    def example_inputs():
        return _samples(32)


class BeyondSimpsonNoThird(torch.autograd.Function):
    bug = {"kind": "scale", "input": "f",
           "note": "the sample gradient is h * w without Simpson's 1/3"}

    @staticmethod
    def forward(ctx, f, h):
        w = _simpson_weights(f.shape[1], f)
        out = h / 3 * (f * w).sum(dim=1)
        ctx.save_for_backward(f, h, w, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        f, h, w, out = ctx.saved_tensors
        grad_f = (grad_out * h)[:, None] * w  # BUG
        grad_h = grad_out * out / h
        return grad_f, grad_h

    @staticmethod
    def example_inputs():
        return _samples(32)


class BeyondSimpsonSpacingUsesOutput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "h",
           "note": "the spacing gradient multiplies by the saved integral itself where the integral divided by h (the weighted sum / 3) is needed"}

    @staticmethod
    def forward(ctx, f, h):
        w = _simpson_weights(f.shape[1], f)
        out = h / 3 * (f * w).sum(dim=1)
        ctx.save_for_backward(f, h, w, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        f, h, w, out = ctx.saved_tensors
        grad_f = (grad_out * h / 3)[:, None] * w
        grad_h = grad_out * out  # BUG
        return grad_f, grad_h

    @staticmethod
    def example_inputs():
        return _samples(32)


# ------------------------------------------------------------------------------ cumulative trapezoid
STEP = 0.25


def _cum_inputs():
    gen = torch.Generator().manual_seed(33)
    return (torch.randn(3, 6, dtype=torch.float64, generator=gen).requires_grad_(),)


class BeyondCumTrapezoid(torch.autograd.Function):
    """F_bj = STEP * sum_{i<=j} (f_bi + f_b,i+1) / 2: the running integral, (B, N-1)."""
    bug = None

    @staticmethod
    def forward(ctx, f):
        ctx.n = f.shape[1]
        return STEP * torch.cumsum(0.5 * (f[:, :-1] + f[:, 1:]), dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        acc = torch.flip(torch.cumsum(torch.flip(grad_out, [1]), dim=1), [1]) * (0.5 * STEP)
        grad_f = grad_out.new_zeros(grad_out.shape[0], ctx.n)
        grad_f[:, :-1] += acc
        grad_f[:, 1:] += acc
        return grad_f

    @staticmethod
    def example_inputs():
        return _cum_inputs()


class BeyondCumTrapezoidNoFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "f",
           "note": "the adjoint of the running sum is taken as a forward cumsum of grad_out instead of a reversed (suffix) cumsum"}

    @staticmethod
    def forward(ctx, f):
        ctx.n = f.shape[1]
        return STEP * torch.cumsum(0.5 * (f[:, :-1] + f[:, 1:]), dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        acc = torch.cumsum(grad_out, dim=1) * (0.5 * STEP)  # BUG
        grad_f = grad_out.new_zeros(grad_out.shape[0], ctx.n)
        grad_f[:, :-1] += acc
        grad_f[:, 1:] += acc
        return grad_f

    @staticmethod
    def example_inputs():
        return _cum_inputs()


class BeyondCumTrapezoidBatchAxis(torch.autograd.Function):
    bug = {"kind": "wrong_axis", "input": "f",
           "note": "the reversed cumsum of the adjoint runs over the batch dim 0 instead of the sample dim 1"}

    @staticmethod
    def forward(ctx, f):
        ctx.n = f.shape[1]
        return STEP * torch.cumsum(0.5 * (f[:, :-1] + f[:, 1:]), dim=1)

    @staticmethod
    def backward(ctx, grad_out):
        acc = torch.flip(torch.cumsum(torch.flip(grad_out, [0]), dim=0), [0]) * (0.5 * STEP)  # BUG
        grad_f = grad_out.new_zeros(grad_out.shape[0], ctx.n)
        grad_f[:, :-1] += acc
        grad_f[:, 1:] += acc
        return grad_f

    @staticmethod
    def example_inputs():
        return _cum_inputs()
