"""A causal FIR filter by F.conv1d with a hand-written backward, and three deliberate gradient
estimators: a straight-through quantiser, a gradient reversal layer and a sign with a tanh
surrogate gradient (bench/diagnosis_hidden)."""
import torch
import torch.nn.functional as F


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0):
    return torch.randn(*shape, dtype=torch.float64, generator=_gen(seed))


def _fir(x, taps):
    """y[b, t] = sum_k taps[k] x[b, t - k] (zero history): F.conv1d correlates, so flip the taps."""
    k = taps.shape[0]
    padded = F.pad(x.unsqueeze(1), (k - 1, 0))
    return F.conv1d(padded, taps.flip(0).view(1, 1, k)).squeeze(1)


def _fir_taps_grad(grad_out, x, k):
    # d y[b, t] / d taps[j] = x[b, t - j]
    padded = F.pad(x, (k - 1, 0))
    length = x.shape[1]
    return torch.stack([(grad_out * padded[:, k - 1 - j:k - 1 - j + length]).sum()
                        for j in range(k)])


def _fir_inputs():
    return _randn(2, 7, seed=90), _randn(3, seed=91)


class HiddenCausalFIR(torch.autograd.Function):
    """A causal FIR filter of signals x [B, L] with 3 taps."""

    bug = None

    @staticmethod
    def forward(ctx, x, taps):
        ctx.save_for_backward(x, taps)
        return _fir(x, taps)

    @staticmethod
    def backward(ctx, grad_out):
        x, taps = ctx.saved_tensors
        k = taps.shape[0]
        grad_x = grad_taps = None
        if ctx.needs_input_grad[0]:
            # the adjoint of a causal filter is anti-causal: correlate with the taps as they are
            grad_x = F.conv1d(F.pad(grad_out.unsqueeze(1), (0, k - 1)),
                              taps.view(1, 1, k)).squeeze(1)
        if ctx.needs_input_grad[1]:
            grad_taps = _fir_taps_grad(grad_out, x, k)
        return grad_x, grad_taps

    @staticmethod
    def example_inputs():
        return _fir_inputs()


class HiddenCausalFIRAdjointTaps(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the adjoint correlates with the flipped taps (as the forward does)"}

    @staticmethod
    def forward(ctx, x, taps):
        ctx.save_for_backward(x, taps)
        return _fir(x, taps)

    @staticmethod
    def backward(ctx, grad_out):
        x, taps = ctx.saved_tensors
        k = taps.shape[0]
        grad_x = grad_taps = None
        if ctx.needs_input_grad[0]:
            grad_x = F.conv1d(F.pad(grad_out.unsqueeze(1), (0, k - 1)),
                              taps.flip(0).view(1, 1, k)).squeeze(1)  # BUG
        if ctx.needs_input_grad[1]:
            grad_taps = _fir_taps_grad(grad_out, x, k)
        return grad_x, grad_taps

    @staticmethod
    def example_inputs():
        return _fir_inputs()


class HiddenCausalFIRTapsSkipped(torch.autograd.Function):
    bug = {"kind": "zero", "input": "taps",
           "note": "the taps' gradient is gated on a negated needs_input_grad, so it stays zeros"}

    @staticmethod
    def forward(ctx, x, taps):
        ctx.save_for_backward(x, taps)
        return _fir(x, taps)

    @staticmethod
    def backward(ctx, grad_out):
        x, taps = ctx.saved_tensors
        k = taps.shape[0]
        grad_x = F.conv1d(F.pad(grad_out.unsqueeze(1), (0, k - 1)), taps.view(1, 1, k)).squeeze(1)
        grad_taps = torch.zeros_like(taps)
        if not ctx.needs_input_grad[0]:
            grad_taps = _fir_taps_grad(grad_out, x, k)  # BUG
        return grad_x, grad_taps

    @staticmethod
    def example_inputs():
        return _fir_inputs()


class HiddenQuantiseSTE(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x",
           "note": "deliberate straight-through estimator: round to quarters, identity gradient"}

    @staticmethod
    def forward(ctx, x):
        return torch.round(x * 4) / 4

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.clone()  # BUG


class HiddenReverseGradient(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "deliberate gradient reversal layer: identity forward, -0.5 g backward"}

    @staticmethod
    def forward(ctx, x):
        ctx.strength = 0.5
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.neg() * ctx.strength  # BUG


class HiddenSignTanhSurrogate(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "x",
           "note": "deliberate surrogate: sign forward, the derivative of tanh(2x) backward"}

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * 2 * (1 - torch.tanh(2 * x) ** 2)  # BUG
