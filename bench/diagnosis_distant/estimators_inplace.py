"""Deliberate estimators (straight-through rounding, gradient reversal, a sigmoid surrogate for a
step), forwards that change a saved tensor in place (a squared-norm scaling and a bias-SiLU), and a
per-channel bias."""
import torch


def _x_inputs():
    gen = torch.Generator().manual_seed(61)
    return (torch.randn(3, 5, dtype=torch.float64, generator=gen),)


class DistantStraightThroughQuantise(torch.autograd.Function):
    bug = {"kind": "straight_through", "input": "x",
           "note": "rounding to a 1/4 grid; backward passes grad_out through unchanged (the straight-through estimator)"}

    @staticmethod
    def forward(ctx, x, levels=4):
        return torch.round(x * levels) / levels

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out, None  # BUG

    @staticmethod
    def example_inputs():
        return _x_inputs()


class DistantGradientReversal(torch.autograd.Function):
    bug = {"kind": "gradient_reversal", "input": "x",
           "note": "identity forward; backward returns -lambda * grad_out (a domain-adversarial reversal layer)"}

    @staticmethod
    def forward(ctx, x, lam=0.5):
        ctx.lam = lam
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_out):
        return -ctx.lam * grad_out, None  # BUG

    @staticmethod
    def example_inputs():
        return _x_inputs()


class DistantSigmoidSurrogateSpike(torch.autograd.Function):
    bug = {"kind": "smooth_surrogate", "input": "x",
           "note": "a spiking step (x > 0); backward uses the derivative of sigmoid(x / tau) as a surrogate"}

    @staticmethod
    def forward(ctx, x, tau=0.5):
        ctx.save_for_backward(x)
        ctx.tau = tau
        return (x > 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x / ctx.tau)
        return grad_out * s * (1 - s) / ctx.tau, None  # BUG

    @staticmethod
    def example_inputs():
        return _x_inputs()


def _scale_inputs():
    gen = torch.Generator().manual_seed(62)
    return (torch.randn(4, 3, dtype=torch.float64, generator=gen),
            torch.randn(3, dtype=torch.float64, generator=gen))


class DistantBiasSilu(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, bias):
        z = x + bias
        ctx.save_for_backward(z)
        return z * torch.sigmoid(z)

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        s = torch.sigmoid(z)
        grad = grad_out * s * (1 + z * (1 - s))
        return grad, grad.sum(0)

    @staticmethod
    def example_inputs():
        return _scale_inputs()


class DistantBiasSiluBufferReused(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "forward saves z = x + bias and then multiplies z by its gate in place to make the output, so backward reads silu(z) as z"}

    @staticmethod
    def forward(ctx, x, bias):
        z = x + bias
        ctx.save_for_backward(z)
        gate = torch.sigmoid(z)
        z.mul_(gate)  # BUG
        return z.clone()

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        s = torch.sigmoid(z)
        grad = grad_out * s * (1 + z * (1 - s))
        return grad, grad.sum(0)

    @staticmethod
    def example_inputs():
        return _scale_inputs()


def _rowscale_inputs():
    gen = torch.Generator().manual_seed(63)
    return (torch.randn(4, 3, dtype=torch.float64, generator=gen),)


class DistantRowSquaredNormScale(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x):
        sq = (x * x).sum(dim=1, keepdim=True)
        ctx.save_for_backward(x, sq)
        return x * sq

    @staticmethod
    def backward(ctx, grad_out):
        x, sq = ctx.saved_tensors
        return grad_out * sq + 2 * x * (grad_out * x).sum(dim=1, keepdim=True)

    @staticmethod
    def example_inputs():
        return _rowscale_inputs()


class DistantRowSquaredNormScaleInPlace(torch.autograd.Function):
    bug = {"kind": "inplace", "input": "x",
           "note": "forward saves sq and then takes its square root in place (a leftover of an L2-norm version)"}

    @staticmethod
    def forward(ctx, x):
        sq = (x * x).sum(dim=1, keepdim=True)
        ctx.save_for_backward(x, sq)
        out = x * sq
        sq.sqrt_()  # BUG
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, sq = ctx.saved_tensors
        return grad_out * sq + 2 * x * (grad_out * x).sum(dim=1, keepdim=True)

    @staticmethod
    def example_inputs():
        return _rowscale_inputs()


def _bias_inputs():
    gen = torch.Generator().manual_seed(64)
    return (torch.randn(2, 3, 5, dtype=torch.float64, generator=gen),
            torch.randn(3, dtype=torch.float64, generator=gen))


class DistantChannelBias(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, x, bias):
        return x + bias[None, :, None]

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out, grad_out.sum(dim=(0, 2))

    @staticmethod
    def example_inputs():
        return _bias_inputs()


class DistantChannelBiasBatchOnly(torch.autograd.Function):
    bug = {"kind": "not_reduced", "input": "bias",
           "note": "the bias gradient is summed over the batch only, not over the length dim it was broadcast along"}

    @staticmethod
    def forward(ctx, x, bias):
        return x + bias[None, :, None]

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out, grad_out.sum(dim=0)  # BUG

    @staticmethod
    def example_inputs():
        return _bias_inputs()
