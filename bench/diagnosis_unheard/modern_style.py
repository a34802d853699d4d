"""Functions in the newer torch style: ``forward(x, ...)`` without ctx plus ``setup_context``,
``ctx.set_materialize_grads(False)``, ``ctx.mark_non_differentiable`` for an index output, and
several outputs of which only one gets a gradient. Also a gradient reversal layer (old style)."""
import torch

DELTA = 0.5


def _softsign_inputs():
    g = torch.Generator().manual_seed(71)
    return (torch.randn(3, 4, dtype=torch.float64, generator=g),
            torch.rand(4, dtype=torch.float64, generator=g) + 0.5)


# ------------------------------------------------------------------------ scaled softsign
class UnheardScaledSoftsign(torch.autograd.Function):
    """a * x / (1 + |x|), one gain per column (setup_context style)."""

    bug = None

    @staticmethod
    def forward(x, gain):
        return gain * x / (1 + x.abs())

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, gain = inputs
        ctx.save_for_backward(x, gain)

    @staticmethod
    def backward(ctx, grad_out):
        x, gain = ctx.saved_tensors
        den = 1 + x.abs()
        return grad_out * gain / den ** 2, (grad_out * x / den).sum(0)

    example_inputs = staticmethod(_softsign_inputs)


class UnheardScaledSoftsignGainUnweighted(torch.autograd.Function):
    """Same activation; the gain gradient reduced over the batch."""

    bug = {"kind": "ignores_grad_output", "input": "gain",
           "note": "the gain gradient sums x / (1 + |x|) over the batch without weighting it "
                   "by the incoming gradient"}

    @staticmethod
    def forward(x, gain):
        return gain * torch.nn.functional.softsign(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, gain = inputs
        ctx.save_for_backward(x, gain)

    @staticmethod
    def backward(ctx, grad_out):
        x, gain = ctx.saved_tensors
        soft = torch.nn.functional.softsign(x)
        grad_x = grad_out * gain * (1 - soft.abs()) ** 2
        grad_gain = soft.sum(dim=0)  # BUG
        return grad_x, grad_gain

    example_inputs = staticmethod(_softsign_inputs)


# -------------------------------------------------------------- max value with its index
def _argmax_inputs():
    g = torch.Generator().manual_seed(72)
    return (torch.randn(3, 4, dtype=torch.float64, generator=g),
            torch.randn(3, 4, dtype=torch.float64, generator=g))


class UnheardWeightedMaxWithIndex(torch.autograd.Function):
    """(max_j x_ij w_ij, argmax_j) per row; the index output is marked non-differentiable."""

    bug = None

    @staticmethod
    def forward(x, w):
        value, index = (x * w).max(dim=-1)
        return value, index

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, w = inputs
        _, index = output
        ctx.mark_non_differentiable(index)
        ctx.save_for_backward(x, w, index)

    @staticmethod
    def backward(ctx, grad_value, grad_index):
        x, w, index = ctx.saved_tensors
        at = index.unsqueeze(-1)
        g = grad_value.unsqueeze(-1)
        grad_x = torch.zeros_like(x).scatter_(-1, at, g * w.gather(-1, at))
        grad_w = torch.zeros_like(w).scatter_(-1, at, g * x.gather(-1, at))
        return grad_x, grad_w

    example_inputs = staticmethod(_argmax_inputs)


class UnheardWeightedMaxWithIndexSelfWeight(torch.autograd.Function):
    """Same max; the winning entries' factors are looked up once per row."""

    bug = {"kind": "wrong_variable", "input": "w",
           "note": "d(x w)/dw at the winner is x there; the code gathers w itself"}

    @staticmethod
    def forward(x, w):
        return (x * w).max(dim=-1)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, w = inputs
        ctx.mark_non_differentiable(output[1])
        ctx.save_for_backward(x, w, output[1])

    @staticmethod
    def backward(ctx, grad_value, grad_index):
        x, w, index = ctx.saved_tensors
        rows = torch.arange(x.shape[0])
        grad_x = torch.zeros_like(x)
        grad_w = torch.zeros_like(w)
        grad_x[rows, index] = grad_value * w[rows, index]
        grad_w[rows, index] = grad_value * w[rows, index]  # BUG
        return grad_x, grad_w

    example_inputs = staticmethod(_argmax_inputs)


# ------------------------------------------------------- product and quotient, None grads
def _pq_inputs():
    g = torch.Generator().manual_seed(73)
    return (torch.randn(3, 4, dtype=torch.float64, generator=g),
            torch.rand(3, 4, dtype=torch.float64, generator=g) * 1.5 + 0.5)


class UnheardProductQuotient(torch.autograd.Function):
    """(x y, x / y); grads are not materialised, so either may arrive as None."""

    bug = None

    @staticmethod
    def forward(x, y):
        return x * y, x / y

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad_prod, grad_quot):
        x, y = ctx.saved_tensors
        grad_x = grad_y = None
        if grad_prod is not None:
            grad_x = grad_prod * y
            grad_y = grad_prod * x
        if grad_quot is not None:
            gx = grad_quot / y
            gy = -grad_quot * x / y ** 2
            grad_x = gx if grad_x is None else grad_x + gx
            grad_y = gy if grad_y is None else grad_y + gy
        return grad_x, grad_y

    example_inputs = staticmethod(_pq_inputs)


class UnheardProductQuotientAccumulate(torch.autograd.Function):
    """Same pair; contributions accumulated into zero buffers only for the grads that came."""

    bug = {"kind": "term_sign", "input": "y",
           "note": "d(x / y)/dy = -x / y^2; the quotient's contribution to y's gradient is "
                   "added with a plus"}

    @staticmethod
    def forward(x, y):
        return x * y, x / y

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, y = inputs
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x, y)

    @staticmethod
    def backward(ctx, grad_prod, grad_quot):
        x, y = ctx.saved_tensors
        grad_x = torch.zeros_like(x)
        grad_y = torch.zeros_like(y)
        if grad_prod is not None:
            grad_x += grad_prod * y
            grad_y += grad_prod * x
        if grad_quot is not None:
            inv_y = 1.0 / y
            grad_x += grad_quot * inv_y
            grad_y += grad_quot * x * inv_y * inv_y  # BUG
        return grad_x, grad_y

    example_inputs = staticmethod(_pq_inputs)


# ------------------------------------------------------- squash with an auxiliary output
def _squash_inputs():
    g = torch.Generator().manual_seed(74)
    return (torch.randn(4, 4, dtype=torch.float64, generator=g),
            torch.rand(4, dtype=torch.float64, generator=g) + 0.5)


class UnheardTanhSquashWithPeak(torch.autograd.Function):
    """(tanh(x s), max |x s| per row): the peak is a diagnostic, marked non-differentiable."""

    bug = None

    @staticmethod
    def forward(x, scale):
        z = x * scale
        return torch.tanh(z), z.abs().amax(-1)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, scale = inputs
        y, peak = output
        ctx.mark_non_differentiable(peak)
        ctx.save_for_backward(x, scale, y)

    @staticmethod
    def backward(ctx, grad_y, grad_peak):
        x, scale, y = ctx.saved_tensors
        grad_z = grad_y * (1 - y * y)
        return grad_z * scale, (grad_z * x).sum(0)

    example_inputs = staticmethod(_squash_inputs)


class UnheardTanhSquashWithPeakRowSum(torch.autograd.Function):
    """Same squash; the per-column scale gradient reduced with an explicit dim."""

    bug = {"kind": "wrong_axis", "input": "scale",
           "note": "scale multiplies columns, so its gradient sums over rows (dim 0); dim=1 "
                   "is used (the 4x4 input hides the shape error)"}

    @staticmethod
    def forward(x, scale):
        z = x * scale
        return torch.tanh(z), z.abs().amax(-1)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output[1])
        ctx.save_for_backward(inputs[0], inputs[1], output[0])

    @staticmethod
    def backward(ctx, grad_y, grad_peak):
        x, scale, y = ctx.saved_tensors
        sech2 = 1 - y.square()
        grad_x = grad_y * sech2 * scale
        grad_scale = torch.sum(grad_y * sech2 * x, dim=1)  # BUG
        return grad_x, grad_scale

    example_inputs = staticmethod(_squash_inputs)


# ---------------------------------------------------------------------------------- Huber
def _huber_inputs():
    g = torch.Generator().manual_seed(75)
    pred = torch.randn(3, 4, dtype=torch.float64, generator=g)
    target = pred + torch.tensor([[0.2, -0.3, 0.9, -1.1], [0.05, 0.7, -0.8, 0.3],
                                  [-0.1, 1.4, -0.25, 0.6]], dtype=torch.float64)
    return pred, target


class UnheardHuberElementwise(torch.autograd.Function):
    """Element-wise Huber loss of pred - target (setup_context style)."""

    bug = None

    @staticmethod
    def forward(pred, target):
        r = pred - target
        quad = r.abs() <= DELTA
        return torch.where(quad, 0.5 * r * r, DELTA * (r.abs() - 0.5 * DELTA))

    @staticmethod
    def setup_context(ctx, inputs, output):
        pred, target = inputs
        ctx.save_for_backward(pred - target)

    @staticmethod
    def backward(ctx, grad_loss):
        (r,) = ctx.saved_tensors
        slope = torch.where(r.abs() <= DELTA, r, DELTA * r.sign())
        return grad_loss * slope, -grad_loss * slope

    example_inputs = staticmethod(_huber_inputs)


class UnheardHuberElementwiseTargetClip(torch.autograd.Function):
    """Same loss; the target gradient written on its own, as a clipped residual."""

    bug = {"kind": "region", "input": "target",
           "note": "the quadratic zone is |r| <= delta; the target's test r < delta forgets the "
                   "absolute value, so residuals below -delta get the quadratic slope"}

    @staticmethod
    def forward(pred, target):
        r = pred - target
        return torch.where(r.abs() <= DELTA, 0.5 * r ** 2, DELTA * r.abs() - 0.5 * DELTA ** 2)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], inputs[1])

    @staticmethod
    def backward(ctx, grad_loss):
        pred, target = ctx.saved_tensors
        r = pred - target
        grad_pred = grad_loss * r.clamp(-DELTA, DELTA)
        clipped = torch.where(r < DELTA, r, DELTA * torch.sign(r))  # BUG
        return grad_pred, -grad_loss * clipped

    example_inputs = staticmethod(_huber_inputs)


# ------------------------------------------------------------------------ gradient reversal
class UnheardGradientReversal(torch.autograd.Function):
    """Identity forward; backward multiplies the gradient by -coeff (domain-adversarial)."""

    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "deliberate gradient reversal layer: the identity's gradient is negated and "
                   "scaled"}

    @staticmethod
    def forward(ctx, x, coeff):
        ctx.coeff = coeff
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.neg() * ctx.coeff, None  # BUG

    @staticmethod
    def example_inputs():
        g = torch.Generator().manual_seed(76)
        return torch.randn(3, 4, dtype=torch.float64, generator=g), 0.5
